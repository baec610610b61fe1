"""The exercise machinery: verdicts, strict mode, solutions switch."""
import pytest

from tpu_helpers.core import exercises
from tpu_helpers.core.exercises import CheckResult, NotAttempted, answer, report, run_check


def test_run_check_verdicts():
    assert run_check(lambda: "fine") == CheckResult(True, "fine")

    def wrong():
        raise AssertionError("3 recompilations for 3 batches")
    assert run_check(wrong) == CheckResult(False, "3 recompilations for 3 batches")

    def skeleton():
        raise NotImplementedError
    r = run_check(skeleton)
    assert not r.passed and not r.attempted and "not attempted" in r.message

    def not_yet():
        raise NotAttempted("define `f` first")
    assert run_check(not_yet) == CheckResult(False, "define `f` first", attempted=False)


def test_report_raises_only_with_solutions_on(monkeypatch, capsys):
    monkeypatch.delenv(exercises.SOLUTIONS_ENV, raising=False)
    report(CheckResult(False, "wrong shape"))
    assert "❌ Not yet: wrong shape" in capsys.readouterr().out
    monkeypatch.setenv(exercises.SOLUTIONS_ENV, "1")
    with pytest.raises(AssertionError, match="wrong shape"):
        report(CheckResult(False, "wrong shape"))
    with pytest.raises(AssertionError):  # CI runs the solutions: a skeleton left in place fails too
        report(CheckResult(False, "not attempted yet", attempted=False))
    assert report(CheckResult(True, "ok")).passed


def test_answer_switches_to_solutions_of_its_lesson(monkeypatch, tmp_path):
    lesson = tmp_path / "some_lesson"  # a lesson package: its solutions.py holds the reference answers
    lesson.mkdir()
    (lesson / "__init__.py").write_text("")
    (lesson / "solutions.py").write_text("def masked_mean(x):\n    return 'reference'\nTABLE = {'v3-8': 8}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv(exercises.SOLUTIONS_ENV, raising=False)

    def masked_mean(x):
        raise NotImplementedError

    assert answer(masked_mean, lesson="some_lesson") is masked_mean  # solutions off: the learner's own
    monkeypatch.setenv(exercises.SOLUTIONS_ENV, "1")
    assert answer(masked_mean, lesson="some_lesson")(0) == "reference"
    bound = exercises.answer_for("some_lesson")  # what each lesson's exercise_checks.py does with its __package__
    assert bound({}, name="TABLE") == {"v3-8": 8}
    assert bound(masked_mean, solutions=False) is masked_mean
    with pytest.raises(AttributeError, match="__name__"):
        bound({})  # a value has no __name__
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        bound(masked_mean, name="nope")
    with pytest.raises(ModuleNotFoundError):
        answer(masked_mean, lesson="no_such_lesson")
