"""Which shards each host reads: the rule of notebook 08's workers (framework-free, so tests and checks share it)."""
from __future__ import annotations

from typing import Sequence, TypeVar

T = TypeVar("T")


def shards_for_pipeline(shards: Sequence[T], pipeline_id: int, num_pipelines: int) -> list[T]:
    """Every `num_pipelines`-th shard of the sorted list from `pipeline_id` on; a ValueError if one gets none."""
    if len(shards) < num_pipelines:
        raise ValueError(f"{len(shards)} shards for {num_pipelines} input pipelines (one per host): every host "
                         f"needs at least one shard; write the data in at least {num_pipelines} shards (a "
                         "multiple of the host count keeps the hosts' shares equal)")
    return list(sorted(shards))[pipeline_id::num_pipelines]
