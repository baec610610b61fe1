"""Exercise self-checks: `answer` (the learner's, or the reference when solutions are on), `run_check` and `report`
(a wrong answer raises only in strict mode: solutions on, or ``TPU_COURSE_STRICT_EXERCISES=1``)."""
from __future__ import annotations

import functools
import importlib
import os
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["CheckResult", "ExerciseFailed", "NotAttempted", "answer", "report", "solutions_enabled",
           "run_check", "call_answer", "short", "SOLUTIONS_ENV", "STRICT_ENV"]

SOLUTIONS_ENV = "TPU_COURSE_SOLUTIONS"
STRICT_ENV = "TPU_COURSE_STRICT_EXERCISES"


@dataclass(frozen=True)
class CheckResult:
    passed: bool
    message: str
    attempted: bool = True

    def __bool__(self) -> bool:
        return self.passed


class ExerciseFailed(AssertionError):
    """A check failed in strict mode (CI): the message says what is wrong."""


class NotAttempted(Exception):
    """Raised by a check helper when the answer is still the skeleton."""


def solutions_enabled(flag: bool | None = None) -> bool:
    """The notebook's ``SOLUTIONS`` parameter if set (True/False), else ``TPU_COURSE_SOLUTIONS=1``."""
    return bool(flag) if flag is not None else os.environ.get(SOLUTIONS_ENV, "") in ("1", "true", "yes")


def _strict(flag: bool | None = None) -> bool:
    return solutions_enabled(flag) or os.environ.get(STRICT_ENV, "") in ("1", "true", "yes")


def answer(learner_answer: Any, solutions: bool | None = None, *, lesson: str, name: str | None = None) -> Any:
    """The learner's answer, or ``<lesson>.solutions.<name>`` (default: the answer's ``__name__``) when solutions are on."""
    if not solutions_enabled(solutions):
        return learner_answer
    name = name or getattr(learner_answer, "__name__", None)
    if not name:
        raise TypeError("answer(...) needs name='...' for an answer that is a value, not a function")
    module = importlib.import_module(f"{lesson}.solutions")
    if not hasattr(module, name):
        raise AttributeError(f"{lesson}.solutions has no reference answer called {name!r}")
    print(f"(solutions are on: using the reference answer for exercise {name})")
    return getattr(module, name)


def answer_for(lesson: str) -> Callable[..., Any]:
    """`answer` bound to one lesson package (``answer = answer_for(__package__)`` in its ``exercise_checks.py``)."""
    return functools.partial(answer, lesson=lesson)


def run_check(check: Callable[[], str]) -> CheckResult:
    """Run a check body: it returns a success message, raises AssertionError(what is wrong) or NotAttempted."""
    try:
        return CheckResult(True, check())
    except NotAttempted as e:
        return CheckResult(False, str(e) or "not attempted yet", attempted=False)
    except NotImplementedError:
        return CheckResult(False, "not attempted yet: replace the `raise NotImplementedError` with your answer",
                           attempted=False)
    except AssertionError as e:
        return CheckResult(False, str(e))


def report(result: CheckResult, solutions: bool | None = None) -> CheckResult:
    """Print the verdict; in strict mode (CI) a failure raises `ExerciseFailed`."""
    print(("✅ Right: " if result.passed else "❌ Not yet: " if result.attempted else "⏳ ") + result.message)
    if not result.passed and _strict(solutions):
        raise ExerciseFailed(result.message)
    return result


def short(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters, for messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def call_answer(fn: Callable, *args: Any, what: str, **kwargs: Any) -> Any:
    """Call the learner's ``fn`` (``what``: e.g. "masked_mean(loss, labels)"); any error but the skeleton's
    ``NotImplementedError`` becomes a one-line AssertionError."""
    if not callable(fn):
        raise AssertionError(f"{what.split('(')[0]} must be a function, but it is {short(fn)}")
    try:
        return fn(*args, **kwargs)
    except NotImplementedError:
        raise
    except AssertionError as e:
        raise AssertionError(f"{what} failed an assert of its own: {e}") from None
    except Exception as e:  # noqa: BLE001 (the learner's error, reported in one line)
        why = ([ln.strip() for ln in str(e).splitlines() if ln.strip()] or [""])[-1]  # its last line
        raise AssertionError(f"{what} raised {type(e).__name__}: {why[:300]}") from None
