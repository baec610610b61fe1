"""Several replicas, one training: compare their plans before the first step, name a late one, gather what each did."""
from __future__ import annotations

import sys
from datetime import timedelta
from typing import Any, Iterable, Sequence

from tpu_helpers.core import digests


class ReplicaMismatchError(ValueError):
    """The replicas do not plan (or did not do) the same training; the message names the replicas."""


def batch_plan(batches: Iterable[Sequence[Any]]) -> list[tuple[int, int]]:
    """``(rows, padded_length)`` of each batch of a batch sampler (length 0 for plain indices, which carry none)."""
    out = []
    for b in batches:
        lengths = {int(it[1]) for it in b if isinstance(it, (tuple, list))}
        if len(lengths) > 1:
            raise ReplicaMismatchError(f"one batch asks for several padded lengths {sorted(lengths)}")
        out.append((len(b), lengths.pop() if lengths else 0))
    return out


def plan_problems(plans: Sequence[Sequence[tuple[int, int]]]) -> list[str]:
    """What differs from replica 0's plan (``(rows, padded_length)`` per step), naming the replica; empty if nothing."""
    problems = []
    ref = [tuple(s) for s in plans[0]]
    for r, plan in enumerate(plans[1:], start=1):
        plan = [tuple(s) for s in plan]
        diff = [k for k, (a, b) in enumerate(zip(ref, plan)) if a != b]
        if len(plan) != len(ref):
            problems.append(f"replica {r} plans {len(plan)} steps, replica 0 plans {len(ref)}: replica "
                            f"{r if len(plan) > len(ref) else 0} would wait forever in the all-reduce of a step the "
                            "other does not take")
        elif diff:
            problems.append(f"replica {r} has another batch shape than replica 0 at {len(diff)} step(s), first at "
                            f"step {diff[0]}: {plan[diff[0]]} vs {ref[diff[0]]} (rows, padded length)")
    return problems


def gather_plans(mine: Sequence[Sequence[int]], all_gather, width: int = 2) -> list[list[tuple[int, ...]]]:
    """Every replica's rows of ``width`` ints (a plan: ``(rows, padded_length)`` per step), on every replica."""
    import torch  # all_gather: Lightning's ``strategy.all_gather`` or ``accelerator.gather``

    counts = [int(c) for c in all_gather(torch.tensor([len(mine)], dtype=torch.long)).reshape(-1)]
    table = torch.full((max(counts), width), -1, dtype=torch.long)
    if mine:
        table[:len(mine)] = torch.tensor([list(s) for s in mine], dtype=torch.long)
    every = all_gather(table).reshape(len(counts), max(counts), width)
    return [[tuple(int(x) for x in row) for row in every[r, :n].tolist()] for r, n in enumerate(counts)]


def planned_steps(batch_sampler: Any, epochs: int, steps_per_epoch: int) -> list[tuple[int, int]]:
    """`batch_plan` of every epoch of the unsharded batch sampler (only the step count without ``set_epoch``)."""
    if not hasattr(batch_sampler, "set_epoch"):
        return [(0, 0)] * (epochs * steps_per_epoch)
    plan = []
    for epoch in range(epochs):
        batch_sampler.set_epoch(epoch)
        plan += batch_plan(batch_sampler)
    batch_sampler.set_epoch(0)
    return plan


def check_plans_agree(accelerator: Any, plan: Sequence[tuple[int, int]], timeout_s: float) -> None:
    """Raise `ReplicaMismatchError` on every replica if their plans differ (on gloo: or one is late)."""
    wait_for_all(accelerator, "the start of training", timeout_s)
    plans = gather_plans(plan, lambda t: accelerator.gather(t.to(accelerator.device)).cpu())
    if problems := plan_problems(plans):
        raise ReplicaMismatchError(
            f"replica {accelerator.process_index}: the replicas do not plan the same training: " + "; ".join(problems)
            + ". Every process must build the same sampler (same data, seed and bucket boundaries) and take its "
            "share; on a TPU a replica with one step more, or another batch shape, waits forever in an all-reduce.")


def wait_for_all(accelerator: Any, where: str, timeout_s: float) -> None:
    """On gloo only: a ``monitored_barrier``; replica 0 raises `ReplicaMismatchError` naming the late replicas."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized() and dist.get_backend() == "gloo"):
        return
    try:
        dist.monitored_barrier(timeout=timedelta(seconds=timeout_s), wait_all_ranks=True)
    except RuntimeError as error:  # replica 0 names the missing ranks
        mismatch = ReplicaMismatchError(
            f"replica {accelerator.process_index}: not every replica reached {where} within {timeout_s:g} s "
            f"({str(error).splitlines()[0]}). A replica that takes a step the others do not (one batch more) "
            "waits in its all-reduce for partners that never come: on a TPU the whole run would hang.")
        # printed too: the launcher may report the partner's "Connection closed by peer" first
        print(f"ReplicaMismatchError: {mismatch}", file=sys.stderr, flush=True)
        raise mismatch from None


def torch_weights_digest(model: Any) -> int:
    """`core.digests.weights_digest` of a torch model's named parameters (read to the host: call it after training)."""
    return digests.weights_digest((name, p.detach().float().cpu().contiguous().numpy())
                                  for name, p in model.named_parameters())
