"""The slow-run detective names each planted problem in a tiny real PyTorch/XLA training loop, and nothing in a
healthy one. torch / torch_xla are imported inside fixtures (pytest may also import TensorFlow test modules)."""

import pytest


@pytest.fixture(scope="module")
def loop():
    torch = pytest.importorskip("torch")
    torch_xla = pytest.importorskip("torch_xla")
    from tpu_helpers.xla_debug.diagnose import StepRecorder

    dev = torch_xla.device()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(50, 16), torch.nn.Linear(16, 4)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(0)

    def batch(size=16, length=12):
        return {"input_ids": torch.randint(0, 50, (size, length), generator=g), "labels": torch.randint(0, 4, (size,), generator=g)}

    def train_step(b, *, item=False, printed=False, fallback=False):
        ids, labels = b["input_ids"].to(dev), b["labels"].to(dev)
        logits = model(ids).mean(dim=1)
        loss = torch.nn.functional.cross_entropy(logits, labels)
        if fallback:
            loss = loss + 0.0 * logits.median()  # aten::median has no XLA lowering: runs on the CPU
        loss.backward()
        opt.step()
        opt.zero_grad()
        torch_xla.sync()
        if item:
            loss.item()
        if printed:
            print(loss)

    def run(steps=6, warm=2, size=16, lengths=None, **kw):
        for _ in range(warm):  # warm up outside the recording, as a benchmark should
            train_step(batch(size, (lengths or [12])[0]), **kw)
        with StepRecorder() as rec:
            for i in range(steps):
                b = batch(size, lengths[i % len(lengths)] if lengths else 12)
                rec.step(b)
                train_step(b, **kw)
        return rec

    return run


def test_healthy_loop_gets_a_clean_report(loop):
    from tpu_helpers.xla_debug.lesson_cells import diagnose_slow_run

    rec = loop()
    report = diagnose_slow_run(rec)
    assert report.kinds == [], str(report)
    assert "No problem found" in str(report)
    assert len(rec.steps) == 6 and all(s.shapes["input_ids"] == (16, 12) for s in rec.steps)
    assert sum(s.cache_hits for s in rec.steps) >= 6 and sum(s.compilations for s in rec.steps) == 0


def test_item_every_step_is_a_host_sync(loop):
    from tpu_helpers.xla_debug.lesson_cells import diagnose_slow_run

    report = diagnose_slow_run(loop(item=True))
    assert report.kinds == ["host_sync"], str(report)
    assert "6 of 6 steps" in report.problems[0].title


def test_printing_a_tensor_is_a_host_sync(loop, capsys):
    from tpu_helpers.xla_debug.lesson_cells import diagnose_slow_run

    report = diagnose_slow_run(loop(printed=True))
    assert "host_sync" in report, str(report)


def test_changing_shapes_are_recompilations_and_the_report_names_them(loop):
    from tpu_helpers.xla_debug.lesson_cells import diagnose_slow_run

    rec = loop(steps=6, lengths=[9, 13, 17, 21, 25, 29])
    report = diagnose_slow_run(rec)
    assert report.kinds[0] == "recompilation", str(report)
    text = str(report.problems[0])
    assert "input_ids took 6 shapes" in text and "(16, 13)" in text
    assert "labels" not in text.split("input shapes changed")[1]  # labels kept their shape: not blamed


def test_cpu_fallback_op_is_named(loop):
    from tpu_helpers.xla_debug.lesson_cells import diagnose_slow_run

    report = diagnose_slow_run(loop(fallback=True))
    assert report.kinds[0] == "cpu_fallback", str(report)
    assert "aten::median" in report.problems[0].evidence
    assert "host_sync" not in report  # the fallback's own transfers are not blamed on the user


def test_cold_short_run_is_dominated_by_compilation(loop):
    from tpu_helpers.xla_debug.lesson_cells import diagnose_slow_run

    report = diagnose_slow_run(loop(steps=2, warm=0, size=24, lengths=[31]))  # a shape never compiled before
    assert report.kinds == ["compile_time"], str(report)


def test_small_batch_is_reported(loop):
    from tpu_helpers.xla_debug.lesson_cells import diagnose_slow_run

    report = diagnose_slow_run(loop(size=2))
    assert report.kinds == ["small_batch"], str(report)
    assert "2 samples per device" in report.problems[0].title


def test_thresholds_and_ranking_on_recorded_numbers():
    """The rules themselves, on hand-made step records (no device needed)."""
    from tpu_helpers.xla_debug.diagnose import StepStats
    from tpu_helpers.xla_debug.lesson_cells import diagnose_slow_run
    from tpu_helpers.xla_torch.counters import XlaSnapshot, between

    nothing = between(XlaSnapshot({}, {}), XlaSnapshot({}, {}))  # every count zero

    def steps(n=10):
        return [StepStats(index=i, shapes={"x": (32, 8)}, wall_seconds=0.1, **{**nothing, "fallbacks": {}})
                for i in range(n)]

    assert diagnose_slow_run(steps()).kinds == []
    logged = steps()
    logged[4].scalar_reads = logged[4].syncs = 1  # one log line in 10 steps: fine
    assert diagnose_slow_run(logged).kinds == []
    warm = steps()
    warm[0].compilations, warm[1].compilations = 1, 1  # AdamW: two warm-up graphs are expected
    assert "recompilation" not in diagnose_slow_run(warm)
    everything = steps()
    everything[5].compilations = 1
    everything[5].shapes = {"x": (32, 9)}
    everything[3].fallbacks = {"aten::nonzero": 1}
    everything[0].compile_seconds = 5.0
    for s in everything:
        s.scalar_reads = 1
    assert diagnose_slow_run(everything).kinds == ["cpu_fallback", "recompilation", "host_sync", "compile_time"]
    assert diagnose_slow_run([]).kinds == []


def test_shape_signature_reads_dicts():
    torch = pytest.importorskip("torch")
    from tpu_helpers.xla_debug.diagnose import shape_signature

    assert shape_signature({"a": torch.zeros(2, 3), "n": 5}) == {"a": (2, 3)}
    assert shape_signature(torch.zeros(1, 2)) == {}
    assert shape_signature(None) == {}
