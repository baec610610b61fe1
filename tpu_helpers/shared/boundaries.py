"""Bucket boundaries (notebooks 01 and 05): the few lengths batches are padded to, chosen for the least padding."""
import itertools
from typing import Sequence

import numpy as np


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


def choose_boundaries(lengths: Sequence[int], max_length: int, *, max_buckets: int = 3, multiple: int = 8,
                      ) -> tuple[int, ...]:
    """At most ``max_buckets`` multiples of ``multiple`` with the least padding (an exhaustive search; ties: fewer)."""
    lens = np.minimum(np.asarray(lengths, dtype=np.int64), max_length)
    top = min(max_length, -(-int(lens.max()) // multiple) * multiple)
    counts = np.bincount(lens, minlength=top + 1)
    # only the first multiple at or above some length is worth trying: any other pads the same queries further
    candidates = sorted({min(top, -(-int(n) // multiple) * multiple) for n in np.unique(lens)} - {top})
    best = (int(counts.sum()) * top, (top,))
    for k in range(1, max_buckets):
        for inner in itertools.combinations(candidates, k):
            bounds = (*inner, top)
            padded = np.asarray(bounds)[np.searchsorted(bounds, np.arange(top + 1), side="left")]
            cost = int((counts * padded).sum())
            if cost < best[0]:
                best = (cost, bounds)
    return best[1]
