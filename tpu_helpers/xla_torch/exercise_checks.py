"""Checks of notebook 02's exercises: the answer on the XLA device under `XlaCounters`, against plain PyTorch."""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from tpu_helpers.core.exercises import CheckResult, answer_for, call_answer, run_check
from tpu_helpers.xla_torch.counters import XlaCounters

__all__ = ["clip_by_norm_with_if", "check_clip_by_norm", "check_token_accuracy", "check_pad_multiple",
           "padded_lengths", "padding_share"]

answer = answer_for(__package__)  # the notebook's answers, or this package's solutions.py when solutions are on


def clip_by_norm_with_if(update, max_norm: float = 1.0):
    """The exercise's starting point: clipping with a Python ``if`` on a tensor (a host sync)."""
    norm = update.norm()
    if norm > max_norm:
        return update * (max_norm / norm)
    return update


def _on_device(fn, args_list, what):
    """``fn(*args)`` for each args on the XLA device, one ``torch_xla.sync()`` each, under the counters."""
    import torch_xla

    device = torch_xla.device()
    moved = [[a.to(device) for a in args] for args in args_list]
    torch_xla.sync()
    outs = []
    with XlaCounters() as c:
        for args in moved:
            outs.append(call_answer(fn, *args, what=what))
            torch_xla.sync()
    return c, [o.detach().cpu() if hasattr(o, "cpu") else o for o in outs]


def check_clip_by_norm(clip_by_norm: Callable) -> CheckResult:

    def body() -> str:
        import torch

        g = torch.Generator().manual_seed(1202)
        inputs = [torch.randn(32, generator=g) * s for s in (3.0, 0.01, 0.0, 5.0, 0.1)]
        c, outs = _on_device(clip_by_norm, [(x,) for x in inputs], "clip_by_norm(update)")
        assert c.scalar_reads == 0 and c.syncs == 0, (
            f"your function still reads a value on the host: {c.scalar_reads} scalar read(s) in {len(inputs)} calls. "
            "A Python `if` on a tensor copies it to the host and cuts the graph; choose on the device: "
            "torch.where(norm > max_norm, clipped, update).")
        assert c.compilations <= 1 and not c.fallbacks, (
            f"{c.compilations} graphs compiled, CPU fallbacks {c.fallbacks}: the graph should not depend on the data")
        for x, got in zip(inputs, outs):
            want = clip_by_norm_with_if(x)
            assert not (torch.isnan(got).any() and float(x.norm()) == 0), (
                "for the all-zero update your function returns NaN: the branch not taken divides by the zero norm, "
                "and blending with a 0/1 indicator keeps it (0 * NaN = NaN). torch.where *selects* instead.")
            assert torch.allclose(got, want, atol=1e-6), (
                f"for an update of norm {float(x.norm()):.2f} you differ from the `if` version by "
                f"{float((got - want).abs().max()):.3g}: above max_norm scale to max_norm, else return it unchanged")
        return (f"no host reads in {len(inputs)} calls, one graph ({c.compilations} compiled, {c.cache_hits} cache "
                "hits), and the `if` version's numbers, the all-zero update included")

    return run_check(body)


def check_token_accuracy(token_accuracy: Callable) -> CheckResult:

    def body() -> str:
        import torch

        g = torch.Generator().manual_seed(1203)
        batches = []
        for n in (3, 8, 13, 20):
            labels = torch.full((32,), -100, dtype=torch.long)
            labels[torch.randperm(32, generator=g)[:n]] = torch.randint(0, 8, (n,), generator=g)
            hint = torch.nn.functional.one_hot(labels.clamp(min=0), 8) * 1.5 * (labels >= 0)[:, None]
            batches.append(((torch.randn(32, 8, generator=g) + hint).reshape(2, 16, 8), labels.reshape(2, 16)))
        c, outs = _on_device(token_accuracy, batches, "token_accuracy(logits, labels)")
        assert not c.fallbacks, (
            f"{', '.join(f'{k} x{v}' for k, v in c.fallbacks.items())} ran on the CPU and XLA compiled "
            f"{c.compilations} graph(s) for 4 batches of the same shape: your accuracy still uses boolean indexing "
            "(`x[mask]`), whose length only the data knows. Compare everywhere, multiply by the 0/1 mask "
            "(labels != -100) and divide by its sum.")
        assert c.scalar_reads == 0 and c.syncs == 0 and c.compilations <= 1, (
            f"{c.scalar_reads} host read(s) and {c.compilations} graphs for 4 batches: keep the count a tensor")
        for (logits, labels), got in zip(batches, outs):
            keep = labels != -100
            want = float((logits.argmax(-1)[keep] == labels[keep]).float().mean())
            everywhere = float((logits.argmax(-1) == labels).float().mean())
            got = float(torch.as_tensor(got).reshape(()))
            padded = " (the accuracy over all positions, padding included)" if abs(got - everywhere) < 1e-5 else ""
            assert abs(got - want) < 1e-5, (f"you return {got:.4f}{padded}; over the labelled tokens it is {want:.4f}: "
                                            "weight by the mask and divide by its sum")
        return (f"one graph for 4 batches with 3, 8, 13 and 20 labelled tokens ({c.compilations} compiled), no CPU "
                "fallback, no host read, and boolean indexing's values")

    return run_check(body)


def padded_lengths(lengths: Sequence[int], batch_size: int, multiple: int) -> list[int]:
    """Each batch's padded length with padding="longest" and ``pad_to_multiple_of=multiple``."""
    return [math.ceil(max(lengths[i:i + batch_size]) / multiple) * multiple
            for i in range(0, len(lengths), batch_size)]


def padding_share(lengths: Sequence[int], batch_size: int, multiple: int) -> float:
    """The share of padding in all the batches' tokens."""
    padded = padded_lengths(lengths, batch_size, multiple)
    return 1 - sum(lengths) / sum(p * len(lengths[i * batch_size:(i + 1) * batch_size]) for i, p in enumerate(padded))


def check_pad_multiple(pick_pad_multiple: Callable, lengths: Sequence[int], batch_size: int, max_graphs: int,
                       forward: Callable[[dict], Any]) -> CheckResult:
    """The multiple of 8 with the least padding within ``max_graphs`` padded lengths (full batches only)."""
    lengths = [int(n) for n in lengths[: len(lengths) // batch_size * batch_size]]
    if not lengths:
        raise ValueError(f"need at least one full batch of {batch_size} lengths")

    def body() -> str:
        import torch
        import torch_xla

        multiple = call_answer(pick_pad_multiple, list(lengths), batch_size, max_graphs,
                               what="pick_pad_multiple(lengths, batch_size, max_graphs)")
        assert isinstance(multiple, int) and multiple > 0 and multiple % 8 == 0, (
            f"pick_pad_multiple returned {multiple!r}: return a positive multiple of 8 (a TPU computes in 8 x 128 "
            "tiles)")
        mine = sorted(set(padded_lengths(lengths, batch_size, multiple)))
        torch_xla.sync()
        with XlaCounters() as c:
            for p in padded_lengths(lengths, batch_size, multiple):
                forward({"input_ids": torch.full((batch_size, p), 7), "attention_mask": torch.ones(batch_size, p,
                                                                                                   dtype=torch.long)})
        assert len(mine) <= max_graphs and c.compilations <= max_graphs, (
            f"pad_to_multiple_of={multiple} leaves {len(mine)} different padded lengths {mine}: one graph each, over "
            f"your budget of {max_graphs} ({c.compilations} compiled here). A larger multiple merges lengths.")
        within = [m for m in range(8, math.ceil(max(lengths) / 8) * 8 + 1, 8)
                  if len(set(padded_lengths(lengths, batch_size, m))) <= max_graphs]
        best = min(within, key=lambda m: (padding_share(lengths, batch_size, m), m))
        share, best_share = padding_share(lengths, batch_size, multiple), padding_share(lengths, batch_size, best)
        assert share <= best_share + 1e-9, (
            f"pad_to_multiple_of={multiple} stays within {max_graphs} graph(s), but pad_to_multiple_of={best} does "
            f"too with less padding ({best_share:.0%} of the tokens instead of {share:.0%}): try every multiple of 8 "
            "up to the longest length and keep the least padding.")
        return (f"pad_to_multiple_of={multiple}: {len(mine)} padded length(s) {mine}, within {max_graphs} graphs "
                f"({c.compilations} compiled here), {share:.0%} padding, the least of any multiple of 8 within it")

    return run_check(body)
