"""Checks of notebook 00's exercises: reading an accelerator type, and a first XLA function with its HLO."""
from __future__ import annotations

from typing import Callable

from tpu_helpers.core.exercises import CheckResult, NotAttempted, answer_for, call_answer, run_check, short
from tpu_helpers.core.tpu_slices import parse_accelerator_type

answer = answer_for(__package__)  # the notebook's answers, or this package's solutions.py when solutions are on

# Names as Google writes them (gcloud --accelerator-type, TPU_ACCELERATOR_TYPE): one host and pod slices.
ACCELERATOR_TYPES = ("v2-8", "v3-8", "v3-32", "v4-8", "v4-32", "v5litepod-1", "v5litepod-8", "v5litepod-16",
                     "v5p-8", "v6e-8")


def _accelerator_problem(name: str, got: object) -> str | None:
    generation, chips, cores = parse_accelerator_type(name)  # core.tpu_slices owns the TensorCores-per-chip rule
    got = tuple(got) if isinstance(got, (tuple, list)) else got
    if got == (generation, chips):
        return None
    if isinstance(got, tuple) and len(got) == 2 and got[0] != generation and name.startswith("v5lite"):
        return f"{name!r} is Google's name for a v5e slice (\"v5 lite\"): the generation is 'v5e', not {short(got[0])}"
    if got == (generation, cores):
        return (f"{name!r}: you returned {cores} chips, but for {generation} the number in the name counts "
                f"TensorCores, {cores // chips} per chip: {name!r} has {chips} chips")
    return f"read_accelerator_type({name!r}) returned {short(got)}, expected ({generation!r}, {chips})"


def check_read_accelerator_type(read_accelerator_type: Callable[[str], tuple]) -> CheckResult:
    """``read_accelerator_type(name)`` must return (generation, chips) for every name in `ACCELERATOR_TYPES`."""

    def body() -> str:
        problems = [p for p in (_accelerator_problem(name, call_answer(read_accelerator_type, name,
                                                                       what=f"read_accelerator_type({name!r})"))
                                for name in ACCELERATOR_TYPES) if p]
        assert not problems, (f"{len(ACCELERATOR_TYPES) - len(problems)} of {len(ACCELERATOR_TYPES)} accelerator "
                              "types read right. " + "; ".join(problems[:3]))
        examples = ", ".join(f"{n!r} -> {parse_accelerator_type(n)[:2]}" for n in ("v3-8", "v4-32", "v5litepod-8"))
        return f"all {len(ACCELERATOR_TYPES)} accelerator types read right, e.g. {examples}"

    return run_check(body)


def check_first_xla_function(sum_of_squares: Callable, hlo_of: Callable) -> CheckResult:
    """``sum_of_squares``: ``sum(x * x)`` compiled by XLA; ``hlo_of(fn, x)``: XLA's HLO text for ``fn`` on ``x``."""

    def body() -> str:
        import numpy as np
        import tensorflow as tf

        inputs = [np.array([1.0, 2.0, 3.0], np.float32), np.arange(6, dtype=np.float32).reshape(2, 3)]
        values = [float((x.astype(np.float64) ** 2).sum()) for x in inputs]
        for x, want in zip(inputs, values):
            got = np.asarray(call_answer(sum_of_squares, tf.constant(x), what=f"sum_of_squares(<a {x.shape} tensor>)"))
            assert got.shape == () and np.isclose(got, want, rtol=1e-6), (
                f"sum_of_squares({x.tolist()}) returned {short(got.tolist())}, expected {want:g}: one number, the sum "
                "of every element squared (tf.reduce_sum)")
        try:
            sum_of_squares.experimental_get_compiler_ir(tf.constant(inputs[0]))(stage="hlo")
        except AttributeError:  # a tf.function, or counters.jit, has it
            raise AssertionError(
                "sum_of_squares gives the right numbers, but it is a plain Python function: TensorFlow runs it op by "
                "op (eagerly), XLA never sees it. Put @tf.function(jit_compile=True) above the def.") from None
        except ValueError as e:
            if "jit_compile" not in str(e):
                raise
            raise AssertionError("sum_of_squares is a tf.function, but without jit_compile=True: XLA does not compile "
                                 "it as a whole. Use @tf.function(jit_compile=True).") from None
        for x in inputs:
            shape = "f32[" + ",".join(str(d) for d in x.shape) + "]"
            try:
                hlo = call_answer(hlo_of, sum_of_squares, tf.constant(x), what=f"hlo_of(sum_of_squares, <{shape}>)")
            except NotImplementedError:
                raise NotAttempted("sum_of_squares is right and XLA compiles it; now write hlo_of(function, x) "
                                   "(replace its `raise NotImplementedError`)") from None
            header = hlo.lstrip().split("\n", 1)[0] if isinstance(hlo, str) else ""
            assert header.startswith("HloModule") and f"({shape}" in header, (
                f"hlo_of returned {short(hlo, 90)}: not XLA's program for this input (HLO text, 'HloModule ...', one "
                f"program per input shape: {shape} here). function.experimental_get_compiler_ir(x)(stage=\"hlo\")")
        return (f"XLA compiled sum_of_squares ({values[0]:g} and {values[1]:g} are right), and hlo_of shows its "
                f"program: {header.split(',')[0]} for {shape}, one program per input shape")

    return run_check(body)
