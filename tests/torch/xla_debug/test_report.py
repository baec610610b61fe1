"""parse_metrics_report reads torch_xla's real report text, and what it reads agrees with torch_xla's own API."""
from tpu_helpers.xla_debug.report import parse_metrics_report

SAMPLE = """Metric: CompileTime
  TotalSamples: 2
  Accumulator: 01s002ms
  Percentiles: 1%=1ms; 50%=2ms
Counter: CachedCompile
  Value: 5
Counter: aten::nonzero
  Value: 3
Counter: aten::_local_scalar_dense
  Value: 4
Counter: xla::add
  Value: 7
"""


def test_sample_text():
    r = parse_metrics_report(SAMPLE)
    assert r.samples("CompileTime") == 2 and r.metrics["CompileTime"]["Accumulator"] == "01s002ms"
    assert r.counter("CachedCompile") == 5 and r.counter("UncachedCompile") == 0
    assert r.fallbacks == {"aten::nonzero": 3}  # scalar reads are host reads, not fallbacks
    assert r.counter("aten::_local_scalar_dense") == 4
    assert r.samples("ExecuteTime") == 0
    assert parse_metrics_report("").counters == {}


def test_real_report_agrees_with_the_metrics_api(xla):
    torch, torch_xla, dev = xla
    import torch_xla.debug.metrics as met

    x = torch.arange(12.0).reshape(3, 4).to(dev)
    y = (x @ x.T).sum()
    assert y.item() == float((torch.arange(12.0).reshape(3, 4) @ torch.arange(12.0).reshape(3, 4).T).sum())
    torch.median(x.cpu())  # a CPU op: no counter
    x[x > 3].sum().item()  # boolean indexing: aten::nonzero falls back to the CPU
    r = parse_metrics_report(met.metrics_report())
    for name in met.counter_names():
        assert r.counter(name) == met.counter_value(name), name
    for name in met.metric_names():
        assert r.samples(name) == met.metric_data(name)[0], name
    assert r.samples("CompileTime") >= 1 and r.samples("TransferFromDeviceTime") >= 1
    assert "aten::nonzero" in r.fallbacks and "aten::_local_scalar_dense" not in r.fallbacks
