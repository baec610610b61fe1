"""Exercise self-checks: the learner's `answer` (or the reference, with solutions on), `run_check` and `report`."""
import functools
import importlib
import os
from dataclasses import dataclass
from typing import Any, Callable

SOLUTIONS_ENV = "TPU_COURSE_SOLUTIONS"


@dataclass(frozen=True)
class CheckResult:
    """A check's verdict and its message for the learner."""

    passed: bool
    message: str
    attempted: bool = True

    def __bool__(self) -> bool:
        return self.passed


class NotAttempted(Exception):
    """Raised by a check when the answer is still the skeleton."""


def _env_on(name: str) -> bool:
    return os.environ.get(name, "") in ("1", "true", "yes")


def answer(learner_answer: Any, solutions: bool | None = None, *, lesson: str, name: str | None = None) -> Any:
    """The learner's answer, or ``<lesson>.solutions.<name>`` when solutions are on (``SOLUTIONS`` or the env)."""
    if not (bool(solutions) if solutions is not None else _env_on(SOLUTIONS_ENV)):
        return learner_answer
    name = name or learner_answer.__name__  # a value (no __name__) needs name=
    reference = getattr(importlib.import_module(f"{lesson}.solutions"), name)
    print(f"(solutions are on: using the reference answer for exercise {name})")
    return reference


def answer_for(lesson: str) -> Callable[..., Any]:
    """`answer` bound to one lesson package (``answer = answer_for(__package__)``)."""
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


def report(result: CheckResult) -> CheckResult:
    """Print the verdict; with solutions on (CI) a failure raises AssertionError."""
    print(("✅ Right: " if result.passed else "❌ Not yet: " if result.attempted else "⏳ ") + result.message)
    if not result.passed and _env_on(SOLUTIONS_ENV):
        raise AssertionError(result.message)
    return result


def short(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters, for messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def call_answer(fn: Callable, *args: Any, what: str, **kwargs: Any) -> Any:
    """Call the learner's ``fn`` (``what``: the call, for messages); its error becomes a one-line AssertionError."""
    try:
        return fn(*args, **kwargs)
    except NotImplementedError:
        raise  # the skeleton: "not attempted"
    except Exception as e:  # noqa: BLE001 (the learner's error, reported in one line)
        why = ([ln.strip() for ln in str(e).splitlines() if ln.strip()] or [""])[-1]  # its last line
        raise AssertionError(f"{what} raised {type(e).__name__}: {why[:300]}") from None
