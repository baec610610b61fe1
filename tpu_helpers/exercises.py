"""Exercises with self-checks: the learner writes an answer, a check tests its *behaviour* and says what is wrong.

The pattern in a notebook (three cells):

    # exercise cell (tagged "exercise"): the learner fills it in
    def masked_mean_loss(per_token_loss, labels):
        ...  # YOUR ANSWER
        raise NotImplementedError

    # check cell
    masked_mean_loss = exercises.answer("01.masked_mean_loss", masked_mean_loss, SOLUTIONS)
    exercises.report(checks_tf.check_masked_mean_loss(masked_mean_loss))

`answer()` returns the learner's answer, or the reference solution from `tpu_helpers.solutions` when
solutions are switched on (the ``SOLUTIONS`` parameter, or ``TPU_COURSE_SOLUTIONS=1``, which ``./course test``
and ``./course run`` set so CI proves every check passes on a right answer). Solutions live in
`tpu_helpers/solutions/`, where a learner opens them on purpose.

`report()` prints a plain-words verdict. An unattempted exercise (``NotImplementedError``) is reported as
"not attempted yet" and does not stop "Run all"; a wrong answer is reported with what is wrong, and raises
`ExerciseFailed` only in strict mode (solutions on, or ``TPU_COURSE_STRICT_EXERCISES=1``), so a broken check or
solution fails CI while a learner's notebook keeps running.
"""
from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["CheckResult", "ExerciseFailed", "NotAttempted", "answer", "report", "solutions_enabled",
           "run_check", "SOLUTIONS_ENV", "STRICT_ENV"]

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
    if flag is not None:
        return bool(flag)
    return os.environ.get(SOLUTIONS_ENV, "") in ("1", "true", "yes")


def _strict(flag: bool | None = None) -> bool:
    return solutions_enabled(flag) or os.environ.get(STRICT_ENV, "") in ("1", "true", "yes")


def answer(key: str, learner_answer: Any, solutions: bool | None = None) -> Any:
    """The learner's answer, or the reference solution ``tpu_helpers.solutions.<nbNN>.<name>`` when enabled.

    `key` is "NN.name", e.g. "01.masked_mean_loss".
    """
    if not solutions_enabled(solutions):
        return learner_answer
    number, name = key.split(".", 1)
    module = importlib.import_module(f"tpu_helpers.solutions.nb{number}")
    print(f"(solutions are on: using the reference answer for exercise {key})")
    return getattr(module, name)


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
    if result.passed:
        print(f"✅ Right: {result.message}")
    elif not result.attempted:
        print(f"⏳ {result.message}")
    else:
        print(f"❌ Not yet: {result.message}")
    if not result.passed and _strict(solutions):
        raise ExerciseFailed(result.message)
    return result
