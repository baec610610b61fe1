"""Benchmarks whose candidates run in processes of their own (run_isolated), and notes written from the figures."""
import dataclasses
import json
import textwrap

import pytest

from benchmarks import bench_buckets_bert, bench_xla_vs_eager
from benchmarks.harness import (
    Benchmark,
    Candidate,
    benchmarks_from_json,
    benchmarks_to_json,
    load_warning,
    run_isolated,
)


def test_json_carries_one_benchmark_or_several():
    a = Benchmark("a", "A", [Candidate("x", [1.0, 2.0], "s/step", False)], "x")
    b = Benchmark("b", "B", [Candidate("y", [3.0], "samples/s")], "y", notes="n")
    assert [x.name for x in benchmarks_from_json(benchmarks_to_json([a, b]))] == ["a", "b"]
    (only,) = benchmarks_from_json(benchmarks_to_json(a))
    assert only.candidates[0].values == [1.0, 2.0] and not only.candidates[0].higher_is_better
    (legacy,) = benchmarks_from_json(json.dumps(dataclasses.asdict(a)))  # a module that returns one Benchmark, written the old way
    assert legacy.title == "A"


def test_load_warning_only_on_a_busy_machine():
    assert load_warning([0.2, 1.4]) == "" and load_warning([]) == ""
    text = load_warning([0.5, 3.25])
    assert "load average up to 3.2" in text and "re-run on an idle machine" in text


def test_run_isolated_returns_the_worker_result_from_a_fresh_process(tmp_path, monkeypatch):
    (tmp_path / "fake_bench.py").write_text(textwrap.dedent("""
        import os, sys
        from benchmarks.harness import cli

        def worker(spec):
            if spec.get("fail"):
                raise ValueError("bad spec " + spec["fail"])
            return {"pid": os.getpid(), "doubled": spec["x"] * 2, "torch loaded": "torch" in sys.modules}

        if __name__ == "__main__":
            cli(lambda quick: [], worker)
    """))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    import os

    res = run_isolated("fake_bench", {"x": 21})
    assert res["doubled"] == 42 and res["pid"] != os.getpid() and res["torch loaded"] is False
    with pytest.raises(RuntimeError, match="failed \\(exit 1\\)(.|\\n)*ValueError: bad spec nope"):
        run_isolated("fake_bench", {"fail": "nope"})


def eager_vs_xla(eager, mixed, xla, load=0.3):
    names = bench_xla_vs_eager.MODES
    extra = {"load at start": load}
    return Benchmark("t", "T", [Candidate(names["eager_plain"], eager, "s/step", False, dict(extra)),
                                Candidate(names["eager_with_xla"], mixed, "s/step", False, dict(extra)),
                                Candidate(names["xla"], xla, "s/step", False, dict(extra))], names["eager_plain"])


def test_xla_vs_eager_notes_follow_the_measurement():
    slower = bench_xla_vs_eager._notes(eager_vs_xla([0.1, 0.12], [0.15], [0.25]), 2)
    assert "XLA:CPU ran at 0.44× eager's speed: slower" in slower and "not speed" in slower
    assert "0.73× the plain process's speed" in slower and "busy machine" not in slower
    faster = bench_xla_vs_eager._notes(eager_vs_xla([0.5], [0.5], [0.25], load=4.0), 1)
    assert "2.00× eager's speed on this model" in faster and "slower" not in faster and "not speed" not in faster
    assert "busy machine" in faster


def bucket_candidates(xla_m, xla_b, eager_m, eager_b):
    names = bench_buckets_bert.NAMES
    xla_extra = {"tokens per real token": 4.2, "ExecuteTime s/step": 0.8, "to sync s/step": 0.3, "load at start": 0.5,
                 "compilations (warm-up)": 2, "shapes (timed)": 1, "shapes (epoch)": 1}
    out = {}
    for (backend, strategy), values in {("xla", "max_length"): xla_m, ("xla", "buckets"): xla_b,
                                        ("eager", "max_length"): eager_m, ("eager", "buckets"): eager_b}.items():
        extra = dict(xla_extra, **({"tokens per real token": 1.4, "ExecuteTime s/step": 0.2, "to sync s/step": 0.25,
                                    "compilations (warm-up)": 4, "shapes (timed)": 3, "shapes (epoch)": 3}
                                   if strategy == "buckets" else {}))
        out[backend, strategy] = Candidate(names[backend, strategy], values, "samples/s", extra=extra)
    return out


def test_bucket_notes_say_whether_the_2x_goal_is_met_from_the_figures():
    check = {"rows": 308, "same predictions": 308, "max logit difference": 2e-6, "logit spread": 0.4,
             "classes predicted": 12}
    cands = bucket_candidates([10.0], [15.0], [20.0], [50.0])
    bench = Benchmark("b", "B", list(cands.values()), bench_buckets_bert.NAMES["xla", "max_length"])
    split = {"parameters (M)": 22.7, "embedding parameters (M)": 11.7, "forward+backward s (width 64)": 1.0,
             "optimizer s (width 64)": 3.0, "forward+backward s (width 16)": 0.4, "optimizer s (width 16)": 3.1}
    text = bench_buckets_bert.notes(bench, cands, check, split)
    assert "Buckets compute 3.00x fewer tokens" in text and "1.50x the samples/s of max_length (misses" in text
    assert "(ExecuteTime) is 4.00x shorter" in text and "from 0.300 to 0.250 s a step (1.20x)" in text
    assert "Eager PyTorch, which traces nothing, gets 2.50x" in text
    assert ("forward+backward took 1.000 s at width 64 and 0.400 s at width 16 (2.50x for 4.0x the tokens), the "
            "AdamW step 3.000 s and 3.100 s (22.7M parameters, 11.7M of them the word embeddings): 75% of a "
            "max_length step's execution is the optimizer's, and a straight line through the two forward+backward times "
            "leaves 0.200 s at zero tokens (80% of the step with the optimizer, an estimate)") in text
    assert "differ by at most 2.0e-06" in text and "308 of 308 predictions equal, 12 classes predicted" in text
    assert "Compilations: 4 for buckets (3 shapes in the timed steps, 3 in an epoch) against 2 for max_length" in text
    cands = bucket_candidates([10.0], [25.0], [20.0], [50.0])
    bench = Benchmark("b", "B", list(cands.values()), bench_buckets_bert.NAMES["xla", "max_length"])
    assert "2.50x the samples/s of max_length (meets" in bench_buckets_bert.notes(bench, cands, check, split)
    assert "none in the timed passes" in text and "F1 does not depend on it" in text
    cands["xla", "buckets"].extra["compilations (timed)"] = 2  # a compile in the timed passes is said, not hidden
    differ = {**check, "same predictions": 300, "max logit difference": 0.3}
    text = bench_buckets_bert.notes(bench, cands, differ, split)
    assert "but 2 in the timed passes" in text and "padding changed this model's predictions" in text
