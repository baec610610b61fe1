"""Checks of notebook 02's exercises: the answer on the XLA device under `XlaCounters`, against plain PyTorch."""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from tpu_helpers.core.exercises import CheckResult, answer_for, call_answer, run_check
from tpu_helpers.xla_torch.counters import XlaCounters

answer = answer_for(__package__)  # the notebook's answers, or this package's solutions.py when solutions are on


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
    """No host read and one graph for 5 updates, the `if` version's numbers (slips: the `if`, NaN at norm 0)."""

    def body() -> str:
        import torch

        g = torch.Generator().manual_seed(1202)
        inputs = [torch.randn(32, generator=g) * s for s in (3.0, 0.01, 0.0, 5.0, 0.1)]
        c, outs = _on_device(clip_by_norm, [(x,) for x in inputs], "clip_by_norm(update)")
        assert c.scalar_reads == 0 and c.syncs == 0 and c.compilations <= 1 and not c.fallbacks, (
            f"your function still reads a value on the host: {c.scalar_reads} scalar read(s) in {len(inputs)} calls "
            f"({c.compilations} graphs). A Python `if` on a tensor copies it to the host and cuts the graph; choose "
            "on the device: torch.where(norm > max_norm, clipped, update).")
        for x, got in zip(inputs, outs):
            norm = float(x.norm())
            assert not (norm == 0 and torch.isnan(got).any()), (
                "for the all-zero update your function returns NaN: the branch not taken divides by the zero norm, "
                "and blending with a 0/1 indicator keeps it (0 * NaN = NaN). torch.where *selects* instead.")
            want = x * (1.0 / norm) if norm > 1.0 else x
            assert torch.allclose(got, want, atol=1e-6), (
                f"for an update of norm {norm:.2f} you differ from the `if` version by "
                f"{float((got - want).abs().max()):.3g}: above max_norm scale to max_norm, else return it unchanged")
        return (f"no host reads in {len(inputs)} calls, one graph ({c.compilations} compiled, {c.cache_hits} cache "
                "hits), and the `if` version's numbers, the all-zero update included")

    return run_check(body)


def check_token_accuracy(token_accuracy: Callable) -> CheckResult:
    """One graph, no fallback or read for 4 batches; boolean indexing's values (slips: `x[mask]`, padding counted)."""

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
        for (logits, labels), got in zip(batches, outs):
            keep = labels != -100
            want = float((logits.argmax(-1)[keep] == labels[keep]).float().mean())
            everywhere = float((logits.argmax(-1) == labels).float().mean())
            got = float(torch.as_tensor(got).reshape(()))
            padded = " (the accuracy over all positions, padding included)" if abs(got - everywhere) < 1e-5 else ""
            assert abs(got - want) < 1e-5 and c.scalar_reads == 0 and c.syncs == 0 and c.compilations <= 1, (
                f"you return {got:.4f}{padded} with {c.scalar_reads} host read(s) and {c.compilations} graph(s) for "
                f"4 batches; over the labelled tokens it is {want:.4f}: weight by the mask and divide by its sum, "
                "and keep the count a tensor")
        return (f"one graph for 4 batches with 3, 8, 13 and 20 labelled tokens ({c.compilations} compiled), no CPU "
                "fallback, no host read, and boolean indexing's values")

    return run_check(body)


def _padded(lengths: Sequence[int], batch_size: int, multiple: int) -> list[int]:
    """Each batch's padded length with padding="longest" and ``pad_to_multiple_of=multiple``."""
    return [math.ceil(max(lengths[i:i + batch_size]) / multiple) * multiple
            for i in range(0, len(lengths), batch_size)]


def check_pad_multiple(pick_pad_multiple: Callable, lengths: Sequence[int], batch_size: int, max_graphs: int,
                       forward: Callable[[dict], Any]) -> CheckResult:
    """The multiple of 8 with the least padding within ``max_graphs`` padded lengths (full batches only)."""
    lengths = [int(n) for n in lengths[: len(lengths) // batch_size * batch_size]]

    def body() -> str:
        import torch
        import torch_xla

        from tpu_helpers.xla_torch.solutions import pick_pad_multiple as reference

        multiple = call_answer(pick_pad_multiple, list(lengths), batch_size, max_graphs,
                               what="pick_pad_multiple(lengths, batch_size, max_graphs)")
        assert isinstance(multiple, int) and multiple > 0 and multiple % 8 == 0, (
            f"pick_pad_multiple returned {multiple!r}: return a positive multiple of 8 (a TPU computes in 8 x 128 "
            "tiles)")
        mine = sorted(set(_padded(lengths, batch_size, multiple)))
        torch_xla.sync()
        with XlaCounters() as c:
            for p in _padded(lengths, batch_size, multiple):
                ids = torch.full((batch_size, p), 7)
                forward({"input_ids": ids, "attention_mask": torch.ones_like(ids)})
        assert len(mine) <= max_graphs and c.compilations <= max_graphs, (
            f"pad_to_multiple_of={multiple} leaves {len(mine)} different padded lengths {mine}: one graph each, over "
            f"your budget of {max_graphs} ({c.compilations} compiled here). A larger multiple merges lengths.")

        def share(m: int) -> float:  # the padding's share of all the tokens
            return 1 - sum(lengths) / (batch_size * sum(_padded(lengths, batch_size, m)))

        best = reference(lengths, batch_size, max_graphs)
        assert share(multiple) <= share(best) + 1e-9, (
            f"pad_to_multiple_of={multiple} stays within {max_graphs} graph(s), but pad_to_multiple_of={best} does "
            f"too with less padding ({share(best):.0%} of the tokens instead of {share(multiple):.0%}): try every "
            "multiple of 8 up to the longest length and keep the least padding.")
        return (f"pad_to_multiple_of={multiple}: {len(mine)} padded length(s) {mine}, within {max_graphs} graphs "
                f"({c.compilations} compiled here), {share(multiple):.0%} padding, the least of any multiple of 8")

    return run_check(body)
