"""The suite's runner cannot go green on a crash: a killed pytest process or a missing report is a failure."""
import os
import textwrap

import pytest
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
    """Each folder and each notebook runs in its framework's environment (tests/common in TensorFlow's)."""
    unit = {name: (paths, select, env) for name, paths, select, env in run_tests.groups()}
    rehearsals = [(paths, select, env) for _, paths, select, env in run_tests.groups(rehearsals=True)]
    assert [unit[run_tests.FOLDERS[f]] for f in ("common", "tf", "torch", "jax")] == [
        (["tests/common"], run_tests.UNIT, "tf"), (["tests/tf"], run_tests.UNIT, "tf"),
        (["tests/torch"], run_tests.UNIT, "torch"), (["tests/jax"], run_tests.UNIT, "jax")]
    assert rehearsals == [(["tests/common"], run_tests.REHEARSAL, "tf"), (["tests/tf"], run_tests.REHEARSAL, "tf"),
                          (["tests/torch"], run_tests.REHEARSAL, "torch"), (["tests/jax"], run_tests.REHEARSAL, "jax"),
                          (["tests/hosted"], [], "tf")]
    tf_nbs, torch_nbs = unit[run_tests.NOTEBOOKS["tf"]], unit[run_tests.NOTEBOOKS["torch"]]
    jax_nbs = unit[run_tests.NOTEBOOKS["jax"]]
    assert tf_nbs[2] == "tf" and torch_nbs[2] == "torch" and jax_nbs[2] == "jax"
    assert "notebooks/00_is_my_runtime_ready.ipynb" in tf_nbs[0]
    assert "notebooks/05_banking77_accelerate.ipynb" in torch_nbs[0]
    assert jax_nbs[0] == ["notebooks/09_banking77_jax_flax.ipynb"]
    assert len(tf_nbs[0]) + len(torch_nbs[0]) + len(jax_nbs[0]) == len(list((run_tests.ROOT / "notebooks").glob("*.ipynb")))
    assert run_tests.framework_of("tests/tf/mlm/test_exercise_checks.py::test_x") == "tf"
    assert run_tests.framework_of("tests/course_testing.py") == ""
    assert run_tests.main(["--paths", "tests/tf/tpu_tf/test_strategy.py", "tests/torch/banking77/test_buckets.py"]) == 2
    assert os.environ.get("PYTHONSAFEPATH") == "1"
    folders = {p.name for p in (run_tests.ROOT / "tests").iterdir()
               if p.is_dir() and p.name not in ("__pycache__", "course_support")}  # course_support: no tests
    assert folders == set(run_tests.FOLDERS), "every test folder is a framework group of the runner"
    assert not list((run_tests.ROOT / "tests").glob("test_*.py")), "tests live in tests/common, tests/tf, tests/torch"


def test_a_test_importing_the_other_framework_fails_with_a_message(tmp_path):
    """The folder's conftest is the rule: a misplaced import is a clear failure, not an abort of the process."""
    from course_testing import ROOT

    probe = ROOT / "tests" / "torch" / "test_zz_probe_misplaced.py"
    probe.write_text("def test_misplaced():\n    import tensorflow  # noqa: F401\n")
    try:
        import subprocess
        import sys
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(probe)],
                              cwd=ROOT, capture_output=True, text=True, timeout=300)
    finally:
        probe.unlink()
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "tensorflow cannot be imported by a test in tests/torch" in proc.stdout and "move the test to tests/tf" in proc.stdout


def test_time_line_adds_up_the_groups_and_flags_a_whole_run_over_budget():
    groups = [("lint", 4.2), ("framework-free unit tests", 30.0), ("notebooks, each alone in an empty folder (nbval)", 700.0)]
    line = run_tests.time_line(groups, run_tests.TOTAL_BUDGET_S)
    assert line == ("time: lint 4 s, framework-free unit tests 30 s, notebooks 700 s; total 734 s "
                    "(budget 720 s: OVER +14 s)")
    assert run_tests.time_line(groups[:2], 720.0).endswith("total 34 s (budget 720 s: ok)")
    assert run_tests.time_line(groups[:1], None) == "time: lint 4 s; total 4 s"  # some paths only: no budget


def test_groups_side_by_side_keep_their_output_whole_and_their_order(tmp_path, capsys):
    """Two pytest processes at once: each group's lines come out in one piece, results in plan order, and the
    closing line gives the wall-clock time."""
    for name, pause in (("slow", 1.0), ("quick", 0.0)):
        (tmp_path / f"test_{name}.py").write_text(f"import time\ndef test_{name}():\n    time.sleep({pause})\n"
                                                  f"    print('{name} ran')\n")
    plan = [(name, [str(tmp_path / f"test_{name}.py")], ["-s", "-p", "no:cacheprovider", "--rootdir", str(tmp_path)],
             "tf") for name in ("slow", "quick")]
    results = run_tests.run_plan(plan, [], tmp_path, jobs=2)
    assert [(name, rc, totals["tests"]) for name, rc, totals, _ in results] == [("slow", 0, 1), ("quick", 0, 1)]
    out = capsys.readouterr().out
    assert out.index("=== quick: test_quick.py") < out.index("quick ran") < out.index("=== quick: exit 0")
    assert out.index("=== slow: test_slow.py") < out.index("slow ran") < out.index("=== slow: exit 0")
    assert run_tests.time_line([("a", 5.0), ("b", 6.0)], 720.0, wall=7.0, jobs=2) == (
        "time: a 5 s, b 6 s; total 7 s (wall clock, 2 groups at a time) (budget 720 s: ok)")


def test_the_number_of_groups_at_a_time_is_checked():
    assert run_tests.parallel_jobs({"TPU_COURSE_TEST_JOBS": "1"}) == 1
    assert 1 <= run_tests.parallel_jobs({}) <= 2
    with pytest.raises(SystemExit, match="TPU_COURSE_TEST_JOBS='two'"):
        run_tests.parallel_jobs({"TPU_COURSE_TEST_JOBS": "two"})


def test_a_notebook_cell_with_unexplained_red_output_fails_and_names_the_line(tmp_path, capfd):
    """nbval runs with the nbval_stderr plugin: explained stderr passes, an unexplained line fails its cell."""
    import json

    import known_stderr
    import nbformat

    explained = next(k for k in known_stderr.KNOWN if not k.until).example
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("print('fine')"),
        nbformat.v4.new_markdown_cell("the next code cell is nbval's Cell 1"),
        nbformat.v4.new_code_cell(f"import sys\nprint({explained!r}, file=sys.stderr)"),
        nbformat.v4.new_code_cell("import warnings\nwarnings.warn('a warning nobody explained')"),
    ])
    nbformat.write(nb, tmp_path / "01_probe.ipynb")
    rc, totals = run_tests.run_group("probe", [str(tmp_path / "01_probe.ipynb")], [], tmp_path / "run", 0)
    out = capfd.readouterr().out
    assert rc == 1 and totals == {"tests": 3, "failures": 1, "errors": 0, "skipped": 0}, out[-3000:]
    assert "01_probe.ipynb, Cell 2: red output a learner cannot explain" in out
    assert "UserWarning: a warning nobody explained" in out
    records = json.loads((tmp_path / "run" / "group0-stderr.json").read_text())
    assert [(r["cell"], [m["explained_by"] is None for m in r["messages"]]) for r in records] == [
        (0, []), (1, [False]), (2, [True])]
    assert "stderr (red output): 2 messages in 1 notebooks, 1 unexplained (failed cells: 01_probe.ipynb Cell 2)" in out


def test_every_listed_rehearsal_exists_and_is_left_out_of_the_unit_run():
    """A renamed rehearsal module would silently join `./course test`; the list and the files must agree."""
    import ast
    import subprocess
    import sys

    # the list's owner is tests/conftest.py (read as text: tests/ on sys.path serves course_testing only)
    tree = ast.parse((run_tests.ROOT / "tests" / "conftest.py").read_text())
    rehearsals = next(ast.literal_eval(node.value) for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                      and "REHEARSALS" in ast.unparse(node.targets[0] if isinstance(node, ast.Assign) else node.target))
    assert rehearsals, "tests/conftest.py lists no rehearsals"
    for prefix in rehearsals:
        path, _, name = prefix.partition("::")
        assert (run_tests.ROOT / path).exists(), f"REHEARSALS names {path}, which does not exist"
        if name:
            assert f"def {name}(" in (run_tests.ROOT / path).read_text(), f"{path} has no test {name}"
    probe = "tests/common/tools/test_rerun_notebooks.py"
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          *run_tests.UNIT, probe], cwd=run_tests.ROOT, capture_output=True, text=True)
    assert "deselected" in out.stdout and "::test_" not in out.stdout, out.stdout[-1500:] + out.stderr[-1500:]
