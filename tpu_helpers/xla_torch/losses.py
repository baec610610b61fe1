"""XLA-friendly masked losses for PyTorch: static shapes, no host sync, one compiled graph.

The seeds' rule 2 ("no data-dependent shapes") in PyTorch terms. The tempting way to ignore padded or
unlabelled positions selects them with a boolean mask::

    active = labels >= 0
    loss = F.cross_entropy(logits[active], labels[active])     # boolean_mask_cross_entropy()

``logits[active]`` has as many rows as the mask has ``True`` values, a number only the data knows. On an XLA
device that indexing becomes ``aten::nonzero``, which has no static-shape lowering: PyTorch/XLA copies the mask
to the host, runs ``nonzero`` on the CPU (an ``aten::nonzero`` counter in the metrics report), and the next graph
has a new input shape for every distinct count, so XLA compiles it again
(https://docs.pytorch.org/xla/release/r2.8/learn/dynamic_shape.html: bounded dynamic shapes are experimental
and behind ``XLA_EXPERIMENTAL=nonzero:masked_select``).

The rewrite keeps every position and multiplies by a 0/1 mask instead (`masked_mean`, `masked_cross_entropy`):
the shapes depend only on the batch shape, so one graph serves every batch, and the value is the same.
``F.cross_entropy(..., ignore_index=-100)`` (what Hugging Face models use for their ``loss``) is static too;
`masked_cross_entropy` differs from it only on a batch with no labelled position, where it returns 0 rather
than NaN.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["IGNORE_INDEX", "LossInputError", "masked_mean", "masked_cross_entropy", "boolean_mask_cross_entropy"]

IGNORE_INDEX = -100  # the label value Hugging Face and PyTorch use for "no loss here"


class LossInputError(ValueError):
    """Logits and labels that cannot go together; the message says how to fix them."""


def _check(logits: torch.Tensor, labels: torch.Tensor) -> None:
    if logits.dim() < 2:
        raise LossInputError(f"logits need a class dimension last, e.g. (batch, classes) or (batch, seq, classes); "
                             f"got shape {tuple(logits.shape)}")
    if tuple(labels.shape) != tuple(logits.shape[:-1]):
        raise LossInputError(
            f"labels shape {tuple(labels.shape)} must equal logits shape without its last (class) dimension, "
            f"{tuple(logits.shape[:-1])}. For token classification pass logits (batch, seq, classes) and labels "
            f"(batch, seq); for sequence classification logits (batch, classes) and labels (batch,).")
    if labels.dtype.is_floating_point:
        raise LossInputError(f"labels must be integer class ids (torch.long), not {labels.dtype}: use labels.long()")


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``values`` where ``mask`` is true (or weighted by a 0/1 mask), with static shapes.

    Returns 0 (not NaN) when the mask selects nothing. Shapes must broadcast together.
    """
    weights = mask.to(values.dtype)
    total = (values * weights).sum()
    count = weights.sum()
    return total / torch.clamp(count, min=1.0)


def masked_cross_entropy(logits: torch.Tensor, labels: torch.Tensor,
                         ignore_index: int = IGNORE_INDEX) -> torch.Tensor:
    """Cross-entropy averaged over positions whose label is not ``ignore_index``, without boolean indexing.

    Same value as ``boolean_mask_cross_entropy`` (and as ``F.cross_entropy(..., ignore_index=...)``), but every
    tensor keeps the batch's shape: no ``aten::nonzero``, no host sync, one compilation for all batches of a shape.
    """
    _check(logits, labels)
    active = labels != ignore_index
    safe_labels = torch.where(active, labels, torch.zeros_like(labels))  # any valid class id; weighted out below
    per_position = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), safe_labels.reshape(-1), reduction="none")
    return masked_mean(per_position, active.reshape(-1))


def boolean_mask_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The pattern to avoid on XLA, kept for comparison: ``outputs[labels >= 0]`` (data-dependent shape).

    Correct on any device, but on an XLA device it runs ``aten::nonzero`` on the CPU and recompiles for every
    distinct number of labelled positions. Use `masked_cross_entropy` instead.
    """
    _check(logits, labels)
    active = labels >= 0
    return F.cross_entropy(logits[active], labels[active])
