"""Bucket boundaries (notebooks 01 and 05): the few lengths batches are padded to, chosen for the least padding."""
from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np

__all__ = ["BucketError", "validate_boundaries", "bucket_length", "tokens_per_real_token", "choose_boundaries"]


class BucketError(ValueError):
    """Bucket boundaries or batch settings that cannot work; the message says how to fix them."""


def validate_boundaries(boundaries: Sequence[int], max_length: int | None = None,
                        longest: int | None = None) -> tuple[int, ...]:
    """Sorted, distinct, positive lengths; the largest at most ``max_length`` and at least ``longest``."""
    try:
        bounds = tuple(sorted({int(b) for b in boundaries}))
    except (TypeError, ValueError):
        raise BucketError(f"bucket boundaries must be whole numbers of tokens, got {boundaries!r}") from None
    if not bounds:
        raise BucketError("give at least one bucket boundary (the largest holds the longest query)")
    if bounds[0] < 1:
        raise BucketError(f"bucket boundaries must be positive, got {bounds}")
    if max_length is not None and bounds[-1] > max_length:
        raise BucketError(f"the largest bucket boundary is {bounds[-1]}, but the queries are truncated at "
                          f"max_length={max_length}: a bucket beyond it only adds padding; end the boundaries at "
                          f"{max_length} or below")
    if longest is not None and bounds[-1] < longest:
        raise BucketError(f"the longest query has {longest} tokens, more than the largest bucket ({bounds[-1]}): it "
                          f"would not fit; make the largest boundary at least {longest}")
    return bounds


def bucket_length(length: int, boundaries: Sequence[int]) -> int:
    """The smallest boundary that holds ``length`` tokens (``boundaries`` sorted ascending)."""
    i = int(np.searchsorted(np.asarray(boundaries), int(length), side="left"))
    if i == len(boundaries):
        raise BucketError(f"a batch has a query of {length} tokens, longer than the largest bucket "
                          f"({boundaries[-1]}): truncate at tokenisation (max_length={boundaries[-1]})")
    return int(boundaries[i])


def tokens_per_real_token(lengths: Sequence[int], boundaries: Sequence[int]) -> float:
    """Tokens computed per real token if every query were padded to its own bucket (a lower bound for batches)."""
    lens = np.asarray(lengths, dtype=np.int64)
    bounds = np.asarray(sorted(boundaries))
    if lens.size == 0:
        raise BucketError("no lengths")
    if lens.max() > bounds[-1]:
        raise BucketError(f"queries of up to {lens.max()} tokens do not fit the largest bucket ({bounds[-1]})")
    padded = bounds[np.searchsorted(bounds, lens, side="left")]
    return float(padded.sum() / lens.sum())


def choose_boundaries(lengths: Sequence[int], max_length: int, *, max_buckets: int = 3, multiple: int = 8,
                      ) -> tuple[int, ...]:
    """At most ``max_buckets`` multiples of ``multiple`` with the least padding (an exhaustive search; ties: fewer)."""
    if max_buckets < 1:
        raise BucketError("max_buckets must be at least 1")
    if multiple < 1:
        raise BucketError("multiple must be at least 1")
    lens = np.minimum(np.asarray(lengths, dtype=np.int64), max_length)
    if lens.size == 0:
        raise BucketError("no lengths to choose boundaries for")
    top = min(max_length, -(-int(lens.max()) // multiple) * multiple)
    counts = np.bincount(lens, minlength=top + 1)
    # only the first multiple at or above some length is worth trying: any other pads the same queries further
    candidates = sorted({min(top, -(-int(n) // multiple) * multiple) for n in np.unique(lens)} - {top})
    best: tuple[int, tuple[int, ...]] | None = None
    for k in range(0, max_buckets):
        for inner in itertools.combinations(candidates, k):
            bounds = (*inner, top)
            padded = np.asarray(bounds)[np.searchsorted(bounds, np.arange(top + 1), side="left")]
            cost = int((counts * padded).sum())
            if best is None or cost < best[0]:
                best = (cost, bounds)
    assert best is not None
    return best[1]
