"""The exercise machinery: verdicts, strict mode, solutions switch."""
import pytest

from tpu_helpers import exercises
from tpu_helpers.exercises import CheckResult, ExerciseFailed, NotAttempted, answer, report, run_check


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


def test_report_raises_only_in_strict_mode(monkeypatch, capsys):
    monkeypatch.delenv(exercises.SOLUTIONS_ENV, raising=False)
    monkeypatch.delenv(exercises.STRICT_ENV, raising=False)
    report(CheckResult(False, "wrong shape"))
    assert "❌ Not yet: wrong shape" in capsys.readouterr().out
    with pytest.raises(ExerciseFailed, match="wrong shape"):
        report(CheckResult(False, "wrong shape"), solutions=True)
    monkeypatch.setenv(exercises.STRICT_ENV, "1")
    with pytest.raises(ExerciseFailed):
        report(CheckResult(False, "not attempted yet", attempted=False))
    assert report(CheckResult(True, "ok")).passed


def test_answer_switches_to_solutions(monkeypatch):
    monkeypatch.delenv(exercises.SOLUTIONS_ENV, raising=False)
    mine = object()
    assert answer("01.anything", mine) is mine
    monkeypatch.setenv(exercises.SOLUTIONS_ENV, "1")
    with pytest.raises(ModuleNotFoundError):
        answer("99.nothing", mine)
    assert answer("99.nothing", mine, solutions=False) is mine
