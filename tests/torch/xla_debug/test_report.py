"""Notebook 06's report_entry / report_fallbacks read torch_xla's real report text as torch_xla's own API does."""
from tpu_helpers.xla_debug.lesson_cells import report_entry, report_fallbacks

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
    assert report_entry(SAMPLE, "Metric", "CompileTime", "TotalSamples") == 2
    assert report_entry(SAMPLE, "Counter", "CachedCompile") == 5 and report_entry(SAMPLE, "Counter", "UncachedCompile") == 0
    assert report_fallbacks(SAMPLE) == {"aten::nonzero": 3}  # scalar reads are host reads, not fallbacks
    assert report_entry(SAMPLE, "Counter", "aten::_local_scalar_dense") == 4
    assert report_entry(SAMPLE, "Metric", "ExecuteTime", "TotalSamples") == 0
    assert report_entry(SAMPLE, "Counter", "CompileTime", "TotalSamples") == 0  # another kind's entry: not read
    assert report_fallbacks("") == {}


def test_real_report_agrees_with_the_metrics_api(xla):
    torch, torch_xla, dev = xla
    import torch_xla.debug.metrics as met

    x = torch.arange(12.0).reshape(3, 4).to(dev)
    y = (x @ x.T).sum()
    assert y.item() == float((torch.arange(12.0).reshape(3, 4) @ torch.arange(12.0).reshape(3, 4).T).sum())
    x[x > 3].sum().item()  # boolean indexing: aten::nonzero falls back to the CPU
    text = met.metrics_report()
    for name in met.counter_names():
        assert report_entry(text, "Counter", name) == met.counter_value(name), name
    for name in met.metric_names():
        assert report_entry(text, "Metric", name, "TotalSamples") == met.metric_data(name)[0], name
    assert report_entry(text, "Metric", "CompileTime", "TotalSamples") >= 1
    assert "aten::nonzero" in report_fallbacks(text) and "aten::_local_scalar_dense" not in report_fallbacks(text)
