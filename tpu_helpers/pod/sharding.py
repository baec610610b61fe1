"""Which shards each host reads: the rule of notebook 08's workers (framework-free, so tests and checks share it)."""
from __future__ import annotations

from typing import Sequence, TypeVar

__all__ = ["ShardingError", "shards_for_pipeline"]

T = TypeVar("T")


class ShardingError(ValueError):
    """The shards cannot be split over the input pipelines as asked; the message says what to change."""


def shards_for_pipeline(shards: Sequence[T], pipeline_id: int, num_pipelines: int) -> list[T]:
    """The shards input pipeline `pipeline_id` of `num_pipelines` reads: every `num_pipelines`-th one, starting at
    its own index, of the list in sorted order (what ``tf.data.Dataset.shard`` does to a file list).

    Every host lists the same folder and sorts it, so the pipelines' shares are disjoint, cover every shard, and
    differ in size by at most one. Fewer shards than pipelines would leave a host with nothing to read (it would
    wait, then fail): a clear `ShardingError` instead.
    """
    if num_pipelines < 1 or not 0 <= pipeline_id < num_pipelines:
        raise ShardingError(f"pipeline {pipeline_id} of {num_pipelines}: the id must be in 0..{num_pipelines - 1}")
    if len(shards) < num_pipelines:
        raise ShardingError(f"{len(shards)} shards for {num_pipelines} input pipelines (one per host): every host "
                            f"needs at least one shard; write the data in at least {num_pipelines} shards (a "
                            "multiple of the host count keeps the hosts' shares equal)")
    return list(sorted(shards))[pipeline_id::num_pipelines]
