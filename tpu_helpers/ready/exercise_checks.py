"""Checks of notebook 00's exercises: reading an accelerator type, and a first XLA function with its HLO."""
from __future__ import annotations

import numbers
from typing import Callable

from tpu_helpers.core.exercises import (
    CheckResult,
    NotAttempted,
    answer_for,
    call_answer,
    run_check,
    short,
)
from tpu_helpers.core.runtime import parse_accelerator_type

__all__ = ["ACCELERATOR_TYPES", "check_read_accelerator_type", "check_first_xla_function"]

answer = answer_for(__package__)  # the notebook's answers, or this package's solutions.py when solutions are on

# Names as Google writes them (gcloud --accelerator-type, TPU_ACCELERATOR_TYPE): one host and pod slices.
ACCELERATOR_TYPES = ("v2-8", "v3-8", "v3-32", "v4-8", "v4-32", "v5litepod-1", "v5litepod-8", "v5litepod-16",
                     "v5p-8", "v6e-8")


def _accelerator_problem(name: str, got: object) -> str | None:
    generation, chips, cores = parse_accelerator_type(name)  # the name's number counts TensorCores (core.runtime)
    number, per_chip = int(name.rsplit("-", 1)[1]), cores // chips
    if not (isinstance(got, (tuple, list)) and len(got) == 2):
        return (f"read_accelerator_type({name!r}) returned {short(got)}: return a pair (generation, chips), "
                f"e.g. ({generation!r}, {chips})")
    gen, n = got
    if gen != generation:
        if name.startswith("v5lite"):
            return (f"{name!r} is Google's name for a v5e slice (\"v5 lite\"): the generation is 'v5e', "
                    f"not {short(gen)}")
        return f"{name!r} is generation {generation!r}, not {short(gen)}"
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        return f"read_accelerator_type({name!r}) gave chips={short(n)}: the number of chips is a whole number (int)"
    n = int(n)
    if n == chips:
        return None
    return (f"{name!r}: you returned {n} chips, but for {generation} the number in the name counts TensorCores, "
            f"{per_chip} per chip: {name!r} has {chips} chips") if per_chip > 1 and n == number else (
        f"{name!r} has {chips} chips, you returned {n}")


def check_read_accelerator_type(read_accelerator_type: Callable[[str], tuple]) -> CheckResult:
    """``read_accelerator_type(name)`` must return (generation, chips) for every name in `ACCELERATOR_TYPES`."""

    def body() -> str:
        problems = [p for p in (_accelerator_problem(name, call_answer(read_accelerator_type, name,
                                                                       what=f"read_accelerator_type({name!r})"))
                                for name in ACCELERATOR_TYPES) if p]
        right = len(ACCELERATOR_TYPES) - len(problems)
        more = f"; and {len(problems) - 3} more" if len(problems) > 3 else ""
        assert not problems, (f"{right} of {len(ACCELERATOR_TYPES)} accelerator types read right. "
                              + "; ".join(problems[:3]) + more)
        examples = ", ".join(f"{n!r} -> {parse_accelerator_type(n)[:2]}" for n in ("v3-8", "v4-32", "v5litepod-8"))
        return f"all {len(ACCELERATOR_TYPES)} accelerator types read right, e.g. {examples}"

    return run_check(body)


def check_first_xla_function(sum_of_squares: Callable, hlo_of: Callable) -> CheckResult:
    """``sum_of_squares``: ``sum(x * x)`` compiled by XLA; ``hlo_of(fn, x)``: XLA's HLO text for ``fn`` on ``x``."""

    def body() -> str:
        import numpy as np
        import tensorflow as tf

        inputs = [np.array([1.0, 2.0, 3.0], np.float32), np.arange(6, dtype=np.float32).reshape(2, 3)]
        values = []
        for x in inputs:
            what = f"sum_of_squares(<a {x.shape} tensor>)"
            value = np.asarray(call_answer(sum_of_squares, tf.constant(x), what=what), dtype=np.float64)
            assert value.shape == (), (f"{what} returned shape {value.shape}: it must return one number, the sum "
                                       "of all the squares (tf.reduce_sum)")
            expected = float((x.astype(np.float64) ** 2).sum())
            assert np.isclose(value, expected, rtol=1e-6), (
                f"sum_of_squares({x.tolist()}) returned {float(value):g}, expected {expected:g} "
                f"(the sum of every element squared)")
            values.append(expected)
        if not hasattr(sum_of_squares, "experimental_get_compiler_ir"):  # a tf.function, or counters.jit
            raise AssertionError(
                "sum_of_squares gives the right numbers, but it is a plain Python function: TensorFlow runs it op "
                "by op (eagerly) and XLA never sees it. Wrap it: put @tf.function(jit_compile=True) above the def.")
        try:
            sum_of_squares.experimental_get_compiler_ir(tf.constant(inputs[0]))(stage="hlo")
        except ValueError as e:
            if "jit_compile" in str(e):
                raise AssertionError(
                    "sum_of_squares is a tf.function, but without jit_compile=True: TensorFlow runs its graph op by "
                    "op and XLA does not compile it as a whole (TensorFlow even refuses to show XLA's program for "
                    "it). Use @tf.function(jit_compile=True).") from None
            raise
        hlos = []
        for x in inputs:
            shape = "f32[" + ",".join(str(d) for d in x.shape) + "]"
            try:
                hlo = call_answer(hlo_of, sum_of_squares, tf.constant(x),
                                  what=f"hlo_of(sum_of_squares, <a {shape} input>)")
            except NotImplementedError:
                raise NotAttempted("sum_of_squares is right and XLA compiles it; now write hlo_of(function, x) "
                                   "(replace its `raise NotImplementedError`)") from None
            text = hlo if isinstance(hlo, str) else ""
            assert text.lstrip().startswith("HloModule"), (
                f"hlo_of returned {short(hlo, 60)}, not XLA's program (HLO text starts with 'HloModule'; TensorFlow's "
                "graph is not it): function.experimental_get_compiler_ir(x)(stage=\"hlo\")")
            header = text.lstrip().splitlines()[0]
            entry = next((ln for ln in text.splitlines() if ln.startswith("ENTRY")), "")
            assert f"({shape}" in header or f": {shape}" in entry, (
                f"hlo_of returned an HLO module, but not the one for this input: XLA compiles one program per input "
                f"shape, and for a {shape} input its parameter is {shape}; the module you returned starts "
                f"{header[:90]!r}. Pass x on to experimental_get_compiler_ir.")
            hlos.append(header.split(",")[0])
        return (f"XLA compiled sum_of_squares ({values[0]:g} and {values[1]:g} are right), and hlo_of shows its "
                f"program: {hlos[0]} for f32[3], and a second one for f32[2,3] (one program per input shape)")

    return run_check(body)
