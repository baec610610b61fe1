"""The suite's runner cannot go green on a crash: a killed pytest process or a missing report is a failure."""
import os
import textwrap

import run_tests


def test_a_crashing_test_process_fails_the_run(tmp_path, capsys):
    crash = tmp_path / "test_crash.py"
    crash.write_text(textwrap.dedent("""
        import os
        def test_fine():
            pass
        def test_abort():
            os.abort()   # what the TensorFlow/torch_xla clash, an OOM kill or a segfault look like
    """))
    rc, totals = run_tests.run_group("crash", [str(crash)], ["-p", "no:cacheprovider", "--rootdir", str(tmp_path)],
                                     tmp_path, 0)
    assert rc < 0 and totals is None  # killed by SIGABRT before writing its junit report
    code, line = run_tests.verdict([("fine group", 0, {"tests": 10, "failures": 0, "errors": 0, "skipped": 0}),
                                    ("crash", rc, totals)])
    assert code != 0 and "10 passed, 1 failed" in line and "crashed" in line


def test_verdict_counts_and_exit_codes():
    ok = {"tests": 3, "failures": 0, "errors": 0, "skipped": 1}
    assert run_tests.verdict([("a", 0, ok)]) == (0, "2 passed, 0 failed, 1 skipped")
    assert run_tests.verdict([("a", 1, {**ok, "failures": 1})])[0] == 1
    assert run_tests.verdict([("a", -9, ok)])[0] != 0  # a signal after the report was written
    assert run_tests.verdict([("a", 5, {"tests": 0, "failures": 0, "errors": 0, "skipped": 0})])[0] == 5


def test_tensorflow_and_torch_tests_never_share_a_process():
    for name, paths in run_tests.groups():
        kinds = {run_tests.framework_of(p) for p in paths if p.endswith(".py")}
        assert len(kinds) <= 1, (name, kinds)
    assert run_tests.main(["--paths", "tests/test_tf_strategy.py", "tests/test_torch_buckets.py"]) == 2
    assert os.environ.get("PYTHONSAFEPATH") == "1"
