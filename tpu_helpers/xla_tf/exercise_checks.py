"""Checks of notebook 01's exercises: each compiles the answer, reads XLA's program back and names the usual slips."""
from __future__ import annotations

import numbers
from typing import Callable, Sequence

import numpy as np

from tpu_helpers.core.exercises import CheckResult, answer_for, call_answer, run_check, short
from tpu_helpers.core.frameworks import import_tensorflow
from tpu_helpers.shared import padding
from tpu_helpers.xla_tf import compiler, counters

answer = answer_for(__package__)  # the notebook's answers, or this package's solutions.py when solutions are on

IGNORE_INDEX = -100  # the label of a position the loss ignores (transformers' convention)
MAX_COMPILATIONS = 4  # rule 3's budget: distinct batch shapes ...
MAX_PADDED_FRACTION = 0.25  # ... and share of computed tokens that are padding

# (gradient, max_norm): above and below the threshold, a matrix, exactly on it, the all-zero gradient
_CLIP_CASES = [([3.0, 4.0], 1.0), ([0.3, 0.4], 1.0), ([[1.0, -2.0], [2.0, -4.0]], 1.0), ([1.0, 0.0, 0.0], 1.0),
               ([0.0, 0.0, 0.0], 1.0), ([30.0, 40.0], 10.0)]


def check_clip_without_if(clip_without_if: Callable) -> CheckResult:
    """``clip_without_if(gradient, max_norm)``: branch-free under XLA (autograph off), equal to the `if` version."""

    def body() -> str:
        tf = import_tensorflow()
        cases = [(np.asarray(g, np.float32), m) for g, m in _CLIP_CASES]
        call_answer(clip_without_if, tf.constant(cases[0][0]), cases[0][1],
                    what="clip_without_if(gradient, max_norm)")  # eagerly first: the skeleton says "not attempted"
        compiled = counters.jit(clip_without_if, autograph=False)
        for g, max_norm in cases:
            norm = float(np.linalg.norm(g))
            what = f"a gradient of norm {norm:g} and max_norm={max_norm:g}"
            try:
                got = np.asarray(call_answer(compiled, tf.constant(g), max_norm, what=f"clip_without_if on {what}"))
            except AssertionError as e:
                if "OperatorNotAllowedInGraphError" not in str(e):
                    raise
                raise AssertionError("your function still has a Python `if` (or `while`, `and`, `or`) on a tensor: "
                                     "without AutoGraph XLA cannot compile it (OperatorNotAllowedInGraphError). Turn "
                                     "it into a number for arithmetic: tf.cast(norm > max_norm, tf.float32)") from None
            assert not np.isnan(got).any(), (
                f"for {what} your function returns NaN: without a branch every term is computed, also the division "
                "by a norm of 0 (0 * inf is NaN). Keep it safe: max_norm / tf.maximum(norm, max_norm).")
            want = g * (max_norm / norm) if norm > max_norm else g
            assert got.shape == want.shape and np.allclose(got, want, rtol=1e-6, atol=1e-6), (
                f"for {what} you return {np.round(got.astype(float), 4).tolist()}, the `if` version returns "
                f"{np.round(want.astype(float), 4).tolist()}: above max_norm scale by max_norm / norm, else keep it")
        ops = compiler.compiled_ir_stats(compiled, tf.constant(cases[0][0]), cases[0][1]).opcodes
        assert "conditional" not in ops and "while" not in ops, (
            "your numbers are right, but the compiled program still branches: XLA's HLO contains a `conditional` "
            "(tf.cond). Cast the condition to 0.0/1.0 and use it in arithmetic (or tf.where).")
        return (f"compiles with autograph=False into a branch-free XLA program and equals the `if` version on "
                f"{len(cases)} gradients, both sides of the threshold and the all-zero one")

    return run_check(body)


def check_masked_mean(masked_mean: Callable) -> CheckResult:
    """``masked_mean(per_token_loss, labels)``: static shapes, the mean over labels != -100 (0.0 if none)."""

    def body() -> str:
        tf = import_tensorflow()
        rng = np.random.default_rng(1201)
        loss = rng.exponential(size=(8, 128)).astype(np.float32)
        batches = [np.where(rng.random(loss.shape) < fraction, rng.integers(0, 1000, size=loss.shape),
                            IGNORE_INDEX).astype(np.int32) for fraction in (0.15, 0.05, 0.5, 1.0, 0.0)]
        total, loss_t = loss.size, tf.constant(loss)
        call_answer(masked_mean, loss_t, tf.constant(batches[0]), what="masked_mean(per_token_loss, labels)")
        compiled = counters.jit(masked_mean)
        ir = call_answer(compiler.compiled_ir_stats, compiled, loss_t, tf.constant(batches[0]),
                         what="masked_mean compiled by XLA")
        if ir.dynamic_shapes:
            raise AssertionError(
                "your loss still selects the labelled positions (tf.boolean_mask, x[mask], tf.where(mask) + gather): "
                f"XLA compiled data-dependent shapes ({', '.join(ir.dynamic_shapes)}), padded to all {total} positions "
                "anyway. Keep every position: multiply by a 0/1 mask, divide by the number of labelled positions.")
        with counters.CompilationCounter(compiled) as counter:
            outs = [compiled(loss_t, tf.constant(labels)) for labels in batches]
        counts = []
        for labels, out in zip(batches, outs):
            got, keep = np.asarray(out, dtype=np.float64), labels != IGNORE_INDEX
            counts.append(int(keep.sum()))
            if not counts[-1]:
                assert got.shape == () and got == 0.0, (
                    f"for a batch with no labelled position (a chunk of padding) your loss is {short(got)}, not 0.0 "
                    "(0 / 0 is NaN): tf.math.divide_no_nan(total, count)")
                continue
            want = float(loss.astype(np.float64)[keep].mean())
            assert got.shape == () and np.isclose(got, want, rtol=1e-5), (
                f"for a batch with {counts[-1]} of {total} positions labelled your loss is {short(got)}, the mean "
                f"over the labelled positions is {want:.6f}: sum the losses times a 0/1 mask, divide by the mask's sum")
        compiled_n = ("XLA's compilations not measured on this runtime" if counter.compilations is None
                      else f"{counter.compilations} XLA compilation")
        return (f"the right mean for {len(batches)} batches with {', '.join(map(str, counts))} labelled positions "
                f"(0.0 for the empty one), with static shapes only: {compiled_n} for all {counter.calls} batches")

    return run_check(body)


def check_bucket_boundaries(choose_boundaries: Callable[[np.ndarray], Sequence[int]], lengths: Sequence[int], *,
                            batch_size: int = 32, max_length: int = 128, seed: int | None = 0) -> CheckResult:
    """Buckets with the answer's bounds: at most `MAX_COMPILATIONS` shapes, `MAX_PADDED_FRACTION` padding."""

    def body() -> str:
        lens = np.minimum(np.asarray(lengths, dtype=np.int64), max_length)  # what the buckets see: truncated
        answer = call_answer(choose_boundaries, lens.copy(), what="choose_boundaries(lengths)")
        assert isinstance(answer, (list, tuple, np.ndarray)) and len(answer) and all(
            isinstance(b, numbers.Real) and not isinstance(b, bool) and float(b).is_integer() and 1 <= b <= max_length
            for b in answer), (f"choose_boundaries returned {short(answer)}: return a list of bucket upper bounds, "
                               f"whole numbers of tokens from 1 to max_length={max_length}, e.g. [16, 32]")
        bounds = sorted({int(b) for b in answer})
        mine = padding.evaluate_strategy(lengths, batch_size, "buckets", max_length=max_length,
                                         boundaries=bounds, seed=seed)
        over = int((lens > bounds[-1]).sum())
        note = (f" Note: {over} samples are longer than your last bound {bounds[-1]}, so they went to a bucket of "
                f"max_length={max_length} tokens: end with a bound >= the longest ({lens.max()}).") if over else ""
        assert mine.compilations <= MAX_COMPILATIONS, (
            f"buckets {bounds} makes batches of {mine.compilations} lengths, so XLA compiles {mine.compilations} "
            f"programs: over the budget of {MAX_COMPILATIONS}. Use fewer buckets." + note)
        p10, p50, p90 = (int(v) for v in np.percentile(lens, [10, 50, 90]))
        assert mine.padded_fraction <= MAX_PADDED_FRACTION, (
            f"buckets {bounds} pads {mine.padded_fraction:.1%} of the computed tokens: over the budget of "
            f"{MAX_PADDED_FRACTION:.0%}. A bucket pads "
            f"every sample up to its bound: put the bounds where the samples are (10% / 50% / 90% of them are at "
            f"most {p10} / {p50} / {p90} tokens), and let the last bound be the longest sample." + note)
        return (f"buckets {bounds}: {mine.compilations} compilations (budget {MAX_COMPILATIONS}), "
                f"{mine.padded_fraction:.1%} of computed tokens are padding (budget {MAX_PADDED_FRACTION:.0%})")

    return run_check(body)
