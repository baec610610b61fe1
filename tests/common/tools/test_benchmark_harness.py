"""The benchmark suite's arithmetic on tiny inputs (CI never times anything)."""
import math

from benchmarks.harness import (
    Benchmark,
    Candidate,
    benchmarks_from_json,
    benchmarks_to_json,
    render_markdown,
    summarize,
    time_calls,
)


def make():
    return Benchmark("b", "B", [Candidate("slow", [2.0, 4.0, 3.0], "samples/s"),
                                Candidate("fast", [30.0, 10.0, 20.0], "samples/s", extra={"compilations": 1})],
                     baseline="slow")


def test_median_spread_and_ratio_higher_is_better():
    b = make()
    assert b.candidates[0].median == 3.0 and b.candidates[1].spread == (10.0, 30.0)
    assert b.ratios() == {"slow": 1.0, "fast": 20.0 / 3.0}


def test_ratio_lower_is_better():
    b = Benchmark("t", "T", [Candidate("eager", [0.5], "s/step", False), Candidate("xla", [0.1], "s/step", False)],
                  baseline="eager")
    assert math.isclose(b.ratios()["xla"], 5.0)


def test_json_round_trip_and_markdown():
    b = make()
    (again,) = benchmarks_from_json(benchmarks_to_json(b))
    assert again.ratios() == b.ratios()
    md = render_markdown(b)
    assert "| fast | 20 (10–30, n=3) | samples/s | 6.67 | 1 |" in md
    assert summarize([1.0, 2.0, 3.0]) == "2 (1–3, n=3)"


def test_time_calls_counts_repeats_and_warmup():
    calls = []
    out = time_calls(lambda: calls.append(1), repeats=3, warmup_steps=2)
    assert len(out) == 3 and len(calls) == 5 and all(t >= 0 for t in out)


def test_benchmarks_that_repeat_a_step_or_a_pass_time_it_with_time_calls():
    """core/timing.py's loop, not a copy by hand (one owner for the timing loop)."""
    import inspect

    from benchmarks import bench_buckets_bert, bench_padding, bench_xla_vs_eager
    for module in (bench_padding, bench_xla_vs_eager, bench_buckets_bert):
        assert "time_calls(" in inspect.getsource(module), module.__name__
    assert "perf_counter" not in inspect.getsource(bench_padding)


def test_write_doc_replaces_only_the_benchmarks_that_ran(tmp_path, monkeypatch):
    import benchmarks.__main__ as suite
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\nhand-written intro\n\n<!-- suite:begin -->\n<!-- suite:end -->\n\nhand-written tail\n")
    monkeypatch.setattr(suite, "DOC", doc)
    suite.write_doc({"a": "### A\nold a\n", "b": "### B\nold b\n"}, "header\n")
    suite.write_doc({"a": "### A\nnew a\n"}, "header\n")
    text = doc.read_text()
    assert "new a" in text and "old a" not in text and "old b" in text
    assert text.startswith("# Benchmarks\n\nhand-written intro") and text.endswith("hand-written tail\n")
    assert text.count("header") == 1


def test_benchmark_ratios_and_table_against_any_baseline():
    from tpu_helpers.core.timing import Benchmark, Candidate

    b = Benchmark("x", "pipelines", [Candidate("slow", [1000.0, 3000.0, 2000.0], "samples/s"),
                                     Candidate("fast", [30000.0, 10000.0, 20000.0], "samples/s"),
                                     Candidate("step", [0.5, 0.5], "s/step", higher_is_better=False)], "slow")
    assert b.medians["fast"] == 20000.0 and b.candidates[0].values == [1000.0, 3000.0, 2000.0]
    assert b.ratio("fast") == 10.0 and b.ratio("slow", "fast") == 0.1 and b.ratio("step", "step") == 1.0
    table = b.table()
    assert table.startswith("pipelines") and "x vs slow" in table and "10.0x" in table and "20,000" in table
