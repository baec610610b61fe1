"""Reference answers for notebook 09's exercises (BANKING77 on JAX and Flax NNX). Try first, then read."""
from __future__ import annotations

from typing import Any


def attention_mask(segment_ids: Any) -> Any:
    """Same segment, and the key is not padding (segment 0): a block-diagonal mask per row."""
    same_query = segment_ids[:, :, None] == segment_ids[:, None, :]
    return same_query & (segment_ids[:, None, :] > 0)


def place_batch(batch: dict, mesh: Any) -> dict:
    """Every array's first axis (the rows) split over the mesh's ``data`` axis."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    return jax.device_put(batch, NamedSharding(mesh, PartitionSpec("data")))
