"""Self-checks for notebook 02's exercises (the three XLA rules in PyTorch/XLA).

Each check runs the learner's function on the XLA device, reads torch_xla's counters around it
(`tpu_helpers.xla_torch.counters.XlaCounters`) and compares its values with plain PyTorch on the CPU. It never reads the
answer's source: a right answer is one that *behaves* right.

* `check_clip_by_norm` (rule 1): no host read, one graph for every input, the numbers of the `if` version.
* `check_token_accuracy` (rule 2): no ``aten::nonzero`` on the CPU, one graph for batches with different numbers
  of labelled tokens, the accuracy over labelled tokens only.
* `check_pad_multiple` (rule 3): a ``pad_to_multiple_of`` that keeps the graphs within a budget with the least
  padding; the learner's batches really run through the model and the compilations are counted.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from tpu_helpers.core.exercises import CheckResult, answer_for, call_answer, run_check
from tpu_helpers.xla_torch.counters import XlaCounters

__all__ = ["clip_by_norm_with_if", "check_clip_by_norm", "check_token_accuracy", "check_pad_multiple",
           "padded_lengths", "padding_share"]

answer = answer_for(__package__)  # the notebook's answers, or this package's solutions.py when solutions are on


def clip_by_norm_with_if(update, max_norm: float = 1.0):
    """The exercise's starting point: gradient-style clipping with a Python ``if`` on a tensor (a host sync)."""
    norm = update.norm()
    if norm > max_norm:
        return update * (max_norm / norm)
    return update


def _xla():
    import torch
    import torch_xla

    return torch, torch_xla, torch_xla.device()


# --------------------------------------------------------------------------------------------- rule 1
def _clip_inputs():
    import torch

    g = torch.Generator().manual_seed(1202)
    scales = [3.0, 0.01, 0.0, 5.0, 0.1]  # norms ~17, ~0.06, exactly 0, ~28, ~0.6: both branches and a zero update
    return [torch.randn(32, generator=g) * s for s in scales]


def _describe_clip_input(x) -> str:
    norm = float(x.norm())
    if norm == 0:
        return "the all-zero update (norm 0)"
    return f"an update of norm {norm:.2f} ({'clipped' if norm > 1.0 else 'left as it is'} by the `if` version)"


def check_clip_by_norm(clip_by_norm: Callable) -> CheckResult:
    """Run ``clip_by_norm(update)`` on 5 updates on the XLA device: it must never read a value on the host, trace
    one graph for all of them, and return what `clip_by_norm_with_if` returns on the CPU (the zero update too)."""

    def body() -> str:
        torch, torch_xla, device = _xla()
        inputs = _clip_inputs()
        on_device = [x.to(device) for x in inputs]
        torch_xla.sync()
        outs = []
        with XlaCounters() as c:
            for x in on_device:
                outs.append(call_answer(clip_by_norm, x, what="clip_by_norm(update)"))
                torch_xla.sync()  # end of a "step"
        n = len(inputs)
        bad = [type(o).__name__ for o in outs if not isinstance(o, torch.Tensor)]
        assert not bad, (f"clip_by_norm returned a {bad[0]}, not a tensor: return the clipped update as a tensor "
                         "(a Python number would have to come from the device, which is a host sync)")
        assert c.scalar_reads == 0 and c.syncs == 0, (
            f"your function still reads a value on the host: {c.scalar_reads} scalar read(s) "
            f"(aten::_local_scalar_dense) and {c.syncs} device-to-host transfer(s) for {n} calls. A Python `if` on a "
            "tensor (or float(t), .item()) stops the graph, copies the value to the host and starts a new graph for "
            "the branch taken. Compute both branches and choose on the device: "
            "torch.where(norm > max_norm, clipped, update).")
        assert not c.fallbacks, f"ops ran on the CPU instead of XLA: {c.fallbacks}; use plain tensor arithmetic"
        assert c.compilations <= 1, (
            f"XLA compiled {c.compilations} graphs for {n} calls on inputs of one shape: the graph your function "
            "traces depends on the data. It should be the same graph every call.")
        results = [o.cpu() for o in outs]
        for x, got in zip(inputs, results):
            want = clip_by_norm_with_if(x)
            what = _describe_clip_input(x)
            assert got.shape == want.shape, (f"for {what} you return shape {tuple(got.shape)}, the update has shape "
                                             f"{tuple(want.shape)}: clip the whole vector, keep its shape")
            if torch.isnan(got).any() and not torch.isnan(want).any():
                raise AssertionError(
                    f"for {what} your function returns NaN. Both branches are computed now, also the one not "
                    "taken: dividing by the zero norm gives NaN there (0 / 0, or 0 * inf), and blending with a 0/1 "
                    "indicator keeps it "
                    "(0 * NaN = NaN). torch.where *selects* the branch instead of multiplying, so the NaN of the "
                    "unused branch never reaches the result (or clamp the norm before dividing).")
            assert torch.allclose(got, want, atol=1e-6), (
                f"for {what} your result differs from the `if` version by up to "
                f"{float((got - want).abs().max()):.3g}: above max_norm=1.0 scale the update to norm 1.0 "
                "(update * max_norm / norm), otherwise return it unchanged")
        return (f"no host reads (0 scalar reads, 0 transfers) in {n} calls, one graph for all of them "
                f"({c.compilations} compiled, {c.cache_hits} cache hits), and the same numbers as the `if` version, "
                "the all-zero update included")

    return run_check(body)


# --------------------------------------------------------------------------------------------- rule 2
def _accuracy_batches():
    import torch

    g = torch.Generator().manual_seed(1203)
    batches = []
    seq, classes = 16, 8
    for n_labelled in (3, 8, 13, 20):  # one shape, four different numbers of labelled tokens
        labels = torch.full((2 * seq,), -100, dtype=torch.long)
        where = torch.randperm(2 * seq, generator=g)[:n_labelled]
        labels[where] = torch.randint(0, classes, (n_labelled,), generator=g)
        logits = torch.randn(2 * seq, classes, generator=g)
        hint = torch.nn.functional.one_hot(labels.clamp(min=0), classes).float() * 1.5 * (labels >= 0).float()[:, None]
        batches.append(((logits + hint).reshape(2, seq, classes), labels.reshape(2, seq)))
    return batches


def _accuracy_eager(logits, labels):
    keep = labels != -100
    return (logits.argmax(-1)[keep] == labels[keep]).float().mean()


def check_token_accuracy(token_accuracy: Callable) -> CheckResult:
    """Run ``token_accuracy(logits, labels)`` on 4 batches of one shape with 3, 8, 13 and 20 labelled tokens:
    no CPU fallback, no host read, one compiled graph, and the accuracy over the labelled tokens only."""

    def body() -> str:
        torch, torch_xla, device = _xla()
        batches = _accuracy_batches()
        on_device = [(lg.to(device), lb.to(device)) for lg, lb in batches]
        torch_xla.sync()
        outs = []
        with XlaCounters() as c:
            for lg, lb in on_device:
                outs.append(call_answer(token_accuracy, lg, lb, what="token_accuracy(logits, labels)"))
                torch_xla.sync()
        n = len(batches)
        counts = [int((lb != -100).sum()) for _, lb in batches]
        bad = [type(o).__name__ for o in outs if not isinstance(o, torch.Tensor)]
        assert not bad, (f"token_accuracy returned a {bad[0]}, not a tensor: keep the accuracy on the device "
                         "(a 0-dimensional tensor); reading it as a Python number is a host sync")
        nonzero = c.fallbacks.get("aten::nonzero", 0)
        if c.fallbacks:
            what = ("still uses boolean indexing (`x[mask]`)" if nonzero else
                    f"uses ops with no XLA lowering ({', '.join(c.fallbacks)})")
            raise AssertionError(
                f"your accuracy {what}: {', '.join(f'{k} x{v}' for k, v in c.fallbacks.items())} ran on the CPU, and "
                f"XLA compiled {c.compilations} new graph(s) for {n} batches of the same shape (they have "
                f"{', '.join(map(str, counts))} labelled tokens). `x[mask]` has as many elements as the mask has "
                "True values, a number only the data knows. Keep every position: compare predictions with labels "
                "everywhere, multiply by the 0/1 mask (labels != -100) and divide by the mask's sum.")
        assert c.scalar_reads == 0 and c.syncs == 0, (
            f"your accuracy reads values on the host: {c.scalar_reads} scalar read(s), {c.syncs} transfer(s) in "
            f"{n} calls (`.item()`, `float(t)`, `int(mask.sum())`, an `if` on a tensor). Keep the count a tensor.")
        assert c.compilations <= 1, (
            f"XLA compiled {c.compilations} graphs for {n} batches of one shape: the "
            "graph depends on the number of labelled tokens. Make every tensor's shape depend only on the batch "
            "shape.")
        for (lg, lb), out, k in zip(batches, outs, counts):
            got = out.detach().cpu()
            assert got.numel() == 1, f"token_accuracy returned shape {tuple(got.shape)}: return one number per batch"
            got = float(got.reshape(()))
            want = float(_accuracy_eager(lg, lb))
            everywhere = float((lg.argmax(-1) == lb).float().mean())
            if abs(got - want) > 1e-5:
                if abs(got - everywhere) < 1e-5:
                    raise AssertionError(
                        f"for the batch with {k} labelled tokens of {lb.numel()} you return {got:.4f}, the accuracy "
                        f"over all positions, padding included; the accuracy over the labelled tokens is {want:.4f}. "
                        "Count only positions whose label is not -100: weight by the mask and divide by its sum.")
                raise AssertionError(f"for the batch with {k} labelled tokens you return {got:.4f}; the accuracy over "
                                     f"the labelled tokens is {want:.4f}")
        return (f"one graph for {n} batches with {', '.join(map(str, counts))} labelled tokens ({c.compilations} "
                f"compiled, {c.cache_hits} cache hits), no CPU fallback, no host read, and the same accuracy as "
                "boolean indexing on the CPU")

    return run_check(body)


# --------------------------------------------------------------------------------------------- rule 3
def padded_lengths(lengths: Sequence[int], batch_size: int, multiple: int) -> list[int]:
    """The padded length of each batch (consecutive groups of ``batch_size``) with padding="longest" and
    ``pad_to_multiple_of=multiple`` (1 means no rounding)."""
    return [math.ceil(max(lengths[i:i + batch_size]) / multiple) * multiple
            for i in range(0, len(lengths), batch_size)]


def padding_share(lengths: Sequence[int], batch_size: int, multiple: int) -> float:
    """The share of padding tokens in all the batches' tokens."""
    total = sum(p * len(lengths[i * batch_size:(i + 1) * batch_size])
                for i, p in enumerate(padded_lengths(lengths, batch_size, multiple)))
    return 1 - sum(lengths) / total


def _batches(lengths: Sequence[int], batch_size: int, multiple: int) -> list[dict]:
    import torch

    out = []
    for i, padded in enumerate(padded_lengths(lengths, batch_size, multiple)):
        rows = lengths[i * batch_size:(i + 1) * batch_size]
        mask = torch.zeros(len(rows), padded, dtype=torch.long)
        for r, n in enumerate(rows):
            mask[r, :n] = 1
        out.append({"input_ids": mask * 7, "attention_mask": mask})  # token 7 for real tokens, 0 for padding
    return out


def check_pad_multiple(pick_pad_multiple: Callable, lengths: Sequence[int], batch_size: int, max_graphs: int,
                       forward: Callable[[dict], Any]) -> CheckResult:
    """``pick_pad_multiple(lengths, batch_size, max_graphs)`` must return the multiple of 8 whose padded batches
    have at most ``max_graphs`` distinct lengths with the least padding. The batches it gives are run through
    ``forward(batch)`` (a dict of CPU ``input_ids`` / ``attention_mask``) under the XLA counters.

    Only full batches count: ``lengths`` is cut to a multiple of ``batch_size`` first (as ``drop_last=True``).
    """
    lengths = [int(n) for n in lengths[: len(lengths) // batch_size * batch_size]]
    if not lengths:
        raise ValueError(f"need at least one full batch of {batch_size} lengths")

    def body() -> str:
        import numbers

        multiple = call_answer(pick_pad_multiple, list(lengths), batch_size, max_graphs,
                               what="pick_pad_multiple(lengths, batch_size, max_graphs)")
        assert isinstance(multiple, numbers.Integral) and not isinstance(multiple, bool), (
            f"pick_pad_multiple returned {multiple!r}: return an int, the value for pad_to_multiple_of")
        multiple = int(multiple)
        assert multiple > 0 and multiple % 8 == 0, (
            f"pad_to_multiple_of={multiple} is not a positive multiple of 8: a TPU computes in 8 x 128 tiles, so "
            "padded lengths should be multiples of 8 (try 8, 16, 24, ...)")
        candidates = range(8, math.ceil(max(lengths) / 8) * 8 + 1, 8)  # beyond the longest: 1 shape, more padding
        within = [m for m in candidates if len(set(padded_lengths(lengths, batch_size, m))) <= max_graphs]
        best = min(within, key=lambda m: (padding_share(lengths, batch_size, m), m))
        mine = sorted(set(padded_lengths(lengths, batch_size, multiple)))
        share, best_share = padding_share(lengths, batch_size, multiple), padding_share(lengths, batch_size, best)
        if len(mine) <= max_graphs and share > best_share + 1e-9:
            raise AssertionError(
                f"pad_to_multiple_of={multiple} stays within {max_graphs} graph(s) ({len(mine)} padded lengths "
                f"{mine}), but pad_to_multiple_of={best} does too "
                f"({len(set(padded_lengths(lengths, batch_size, best)))} lengths) with less padding: {best_share:.0%} of the tokens instead of {share:.0%}. Padding does not "
                "change steadily with the multiple: try every multiple of 8 up to the longest length and keep, of "
                "those within the budget, the one with the least padding.")
        import torch_xla

        torch_xla.sync()
        with XlaCounters() as c:
            for batch in _batches(lengths, batch_size, multiple):
                forward(batch)
        longest = len(set(padded_lengths(lengths, batch_size, 1)))
        assert len(mine) <= max_graphs, (
            f"pad_to_multiple_of={multiple} leaves {len(mine)} different padded lengths {mine}: XLA compiles one "
            f"graph per input shape, so that is {len(mine)} graphs, over your budget of {max_graphs} (this run "
            f"compiled {c.compilations} that were not in the cache yet). A larger multiple merges lengths.")
        assert c.compilations <= max_graphs, (
            f"XLA compiled {c.compilations} graphs for {len(mine)} padded lengths: the forward pass is not static")
        return (f"pad_to_multiple_of={multiple}: {len(mine)} padded length(s) {mine} for {len(lengths) // batch_size} "
                f"batches, within the budget of {max_graphs} graphs (XLA compiled {c.compilations} new graph(s) here, "
                f"{c.cache_hits} cache hits; padding='longest' alone would make {longest}), and {share:.0%} of the "
                "tokens are padding, the least of any multiple of 8 within the budget")

    return run_check(body)
