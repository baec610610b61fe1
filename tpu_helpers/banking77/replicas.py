"""Several replicas, one training: the checks `RunLog` runs where the training function runs more than once.

Every replica builds the same global plan (the same sampler from the same data, seed and boundaries) and takes its
share. A replica that plans one step more, or pads a step to another length, does not fail by itself: on a TPU it
waits in the next all-reduce for partners that never come (a hang), and on gloo its gradients are averaged with
batches of another shape (a silent divergence). So before the first step the replicas compare their plans, and at
the end they compare what they actually did:

* `plan_fingerprint`: a CRC of this replica's view of the global plan (every epoch's batches: indices and padded
  lengths) and its steps per epoch; `check_plans_agree` all-gathers it and raises `ReplicaMismatchError` naming the
  replicas that differ.
* `wait_for_all`: on gloo (the CPU rehearsal) a ``monitored_barrier`` at the start of training and at the end of
  every epoch's training waits at most ``timeout_s`` and names the replicas that did not arrive, instead of hanging.
* `weights_digest`: 63 bits of a SHA-256 of every parameter, to show the replicas' weights are identical.
* `gather_rows`: equal-length integer records of each replica (its batch shapes per step), gathered to every
  replica as one list per replica.

Written here, not taken from a library: accelerate and torch.distributed gather tensors, but none compares the
replicas' plans or names the one that differs.
"""
from __future__ import annotations

import hashlib
import zlib
from datetime import timedelta
from typing import Any, Sequence

from tpu_helpers.banking77.errors import TrainingError

__all__ = ["ReplicaMismatchError", "plan_fingerprint", "check_plans_agree", "wait_for_all", "weights_digest",
           "gather_rows", "describe_mismatch"]


class ReplicaMismatchError(TrainingError):
    """The replicas do not plan (or did not do) the same training; the message names the replicas."""


def plan_fingerprint(batch_sampler: Any, epochs: int, steps_per_epoch: int) -> tuple[int, int]:
    """(steps per epoch, CRC-32 of the global plan of every epoch) as this replica sees them.

    ``batch_sampler`` is the unsharded one (`make_loaders`' ``loaders.train.batch_sampler``): every replica must
    build the same. Items are ``(index, padded_length)`` pairs (the bucket sampler, whose plan depends only on its
    data, seed and epoch); a sampler without ``set_epoch`` (a shuffled DataLoader) gives its step count only.
    """
    set_epoch = getattr(batch_sampler, "set_epoch", None)
    if set_epoch is None:  # a shuffled DataLoader: iterating it would draw from the random state; steps only
        return int(steps_per_epoch), 0
    crc = 0
    for epoch in range(epochs):
        set_epoch(epoch)
        for batch in batch_sampler:
            flat = [int(x) for item in batch for x in (item if isinstance(item, tuple) else (item,))]
            crc = zlib.crc32(repr((len(batch), flat)).encode(), crc)
    set_epoch(0)
    return int(steps_per_epoch), int(crc)


def describe_mismatch(fingerprints: Sequence[tuple[int, int]]) -> str | None:
    """None when every replica's (steps, crc) is replica 0's; else which replicas differ and how."""
    first = tuple(fingerprints[0])
    odd = [(r, tuple(f)) for r, f in enumerate(fingerprints) if tuple(f) != first]
    if not odd:
        return None
    parts = []
    for r, (steps, crc) in odd:
        if steps != first[0]:
            parts.append(f"replica {r} plans {steps} steps per epoch, replica 0 plans {first[0]}")
        else:
            parts.append(f"replica {r} plans other batches (other rows or padded lengths; plan CRC {crc:08x}, "
                         f"replica 0's {first[1]:08x})")
    return ("the replicas do not plan the same training: " + "; ".join(parts) + ". Every process must build the "
            "same sampler (same data, seed and bucket boundaries) and take its share; on a TPU a replica with one "
            "step more, or another batch shape, waits forever in the next all-reduce.")


def _on_gloo() -> bool:
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized() and dist.get_backend() == "gloo"


def check_plans_agree(accelerator: Any, fingerprint: tuple[int, int], timeout_s: float) -> list[tuple[int, int]]:
    """All-gather every replica's `plan_fingerprint`; raise `ReplicaMismatchError` (on every replica) if they
    differ. On gloo a monitored barrier first names the replicas that did not arrive within ``timeout_s``."""
    import torch

    if accelerator.num_processes == 1:
        return [tuple(fingerprint)]
    wait_for_all(accelerator, "the start of training", timeout_s)
    local = torch.tensor(list(fingerprint), dtype=torch.int64, device=accelerator.device)
    gathered = accelerator.gather(local).cpu().view(-1, 2).tolist()
    problem = describe_mismatch(gathered)
    if problem:
        raise ReplicaMismatchError(f"replica {accelerator.process_index}: {problem}")
    return [tuple(f) for f in gathered]


def wait_for_all(accelerator: Any, where: str, timeout_s: float) -> None:
    """On gloo (the CPU rehearsal): a ``monitored_barrier`` that raises `ReplicaMismatchError` on replica 0, naming
    the replicas that did not reach ``where`` within ``timeout_s``. A replica busy with a step the others do not
    take (one batch more) waits in that step's all-reduce; the others arrive here. Elsewhere: nothing (XLA has no
    monitored barrier; there the plan check before training is the guard)."""
    if accelerator.num_processes == 1 or not _on_gloo():
        return
    import torch.distributed as dist

    try:
        dist.monitored_barrier(timeout=timedelta(seconds=timeout_s), wait_all_ranks=True)
    except RuntimeError as error:  # replica 0 names the missing ranks
        raise ReplicaMismatchError(
            f"replica {accelerator.process_index}: not every replica reached {where} within {timeout_s:g} s "
            f"({str(error).splitlines()[0]}). A replica that takes a step the others do not (one batch more) "
            "waits in its all-reduce for partners that never come: on a TPU the whole run would hang.") from None


def weights_digest(model: Any) -> int:
    """A 63-bit digest of every parameter's values (SHA-256 of their bytes, in the model's order): equal digests,
    equal weights. Reads the weights to the host: call it after training."""
    h = hashlib.sha256()
    for name, p in model.named_parameters():
        h.update(name.encode())
        h.update(p.detach().float().cpu().contiguous().numpy().tobytes())
    return int.from_bytes(h.digest()[:8], "big") >> 1


def gather_rows(accelerator: Any, rows: Sequence[Sequence[int]]) -> list[list[list[int]]]:
    """Gather each replica's integer records (the same number of equal-length rows on every replica): one list per
    replica, in replica order."""
    import torch

    local = torch.tensor([list(r) for r in rows], dtype=torch.int64)
    if accelerator.num_processes == 1:
        return [local.tolist()]
    gathered = accelerator.gather(local.to(accelerator.device)).cpu()
    return gathered.view(accelerator.num_processes, *local.shape).tolist()
