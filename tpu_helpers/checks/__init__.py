"""Self-checks for the notebooks' exercises, one module per notebook (``nb00.py`` for notebook 00, ...).

Each ``check_*`` function takes the learner's answer (a function, usually), tests what it *does* (values,
shapes, compilations counted by XLA, the compiled program), never its source text, and returns a
`tpu_helpers.exercises.CheckResult` whose message says in plain words what is right or what is wrong. The
notebooks print it with `tpu_helpers.exercises.report`. The reference answers live in
`tpu_helpers.solutions`; the unit tests run every check on the reference answer (it must pass) and on a
typical wrong answer (it must fail and name the problem).

Framework imports happen inside the check functions, so importing a check module is cheap and
framework-neutral.
"""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["call_answer", "short"]


def short(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters, for messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def call_answer(fn: Callable, *args: Any, what: str, **kwargs: Any) -> Any:
    """Call the learner's ``fn``; turn any error into a plain-words failure (AssertionError).

    ``NotImplementedError`` (the exercise skeleton) passes through, so `tpu_helpers.exercises.run_check`
    reports "not attempted yet". ``what`` names the call in the message, e.g. "masked_mean(loss, labels)".
    """
    if not callable(fn):
        raise AssertionError(f"{what.split('(')[0]} must be a function, but it is {short(fn)}")
    try:
        return fn(*args, **kwargs)
    except NotImplementedError:
        raise
    except AssertionError as e:
        raise AssertionError(f"{what} failed an assert of its own: {e}") from None
    except Exception as e:  # noqa: BLE001 (the learner's error, reported in one line)
        lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
        why = lines[-1] if lines else ""
        raise AssertionError(f"{what} raised {type(e).__name__}: {why[:300]}") from None
