"""Checks of notebook 08's exercises: `check_shards_for_host`, `check_slice_layout` (against `core.tpu_slices`)."""
from __future__ import annotations

import random
from typing import Callable

from tpu_helpers.core.exercises import CheckResult, answer_for, call_answer, run_check, short
from tpu_helpers.core.tpu_slices import SOURCES, tpu_slice

answer = answer_for(__package__)  # the notebook's answers, or this package's solutions.py when solutions are on

LAYOUT_CASES = ("v5litepod-8", "v5litepod-16", "v5litepod-32", "v5e-16", "v4-8", "v4-16", "v4-32", "v3-8", "v3-32")


def _names(count: int) -> list[str]:
    return [f"gs://bucket/mlm/train-{i:05d}-100.tfrecord" for i in range(count)]


def _refuses(fn: Callable, arg, what: str, otherwise: str) -> None:
    """``fn(*arg)`` must raise ValueError; `otherwise` (with ``{got}``) says why when it returns."""
    try:
        got = fn(*arg)
    except ValueError:
        return
    except Exception as e:  # noqa: BLE001 (reported in plain words)
        raise AssertionError(f"{what} should raise ValueError, it raised {type(e).__name__}") from None
    raise AssertionError(otherwise.format(got=short(got)))


def check_shards_for_host(shards_for_host: Callable) -> CheckResult:
    """Each shard read by one host, balanced, in any listing order; too few shards refused."""
    def body() -> str:
        rng = random.Random(8)
        for count, hosts in ((8, 2), (7, 2), (16, 4), (5, 4), (4, 4), (3, 1)):
            names, what = _names(count), f"{count} shards over {hosts} hosts"
            shares = [list(call_answer(shards_for_host, rng.sample(names, count), host, hosts,  # its own order
                                       what=f"shards_for_host(<{count}>, {host}, {hosts})")) for host in range(hosts)]
            flat, sizes = [s for share in shares for s in share], [len(s) for s in shares]
            assert len(flat) == len(set(flat)), (f"{what} (each listing the bucket in its own order): a shard read by "
                                                 "two hosts (sort the list first: every host must agree on the order)")
            assert set(flat) == set(names) and max(sizes) - min(sizes) <= 1, (
                f"{what}: {sorted(set(names) - set(flat))} read by no host, shares of {sizes} shards; every shard must "
                "be read, and the shares differ by at most one, or one host's input runs dry first")
        _refuses(shards_for_host, (_names(3), 3, 4), "3 shards for 4 hosts", "3 shards for 4 hosts: host 3 got {got} "
                 "and would wait for data forever; raise ValueError saying that every host needs at least one shard")
        return "every shard read by exactly one host, balanced, whatever the listing order; too few shards refused"

    return run_check(body)


def check_slice_layout(slice_layout: Callable) -> CheckResult:
    """``slice_layout(accelerator_type) -> (chips, workers, replicas)`` for `LAYOUT_CASES`; a ValueError otherwise."""
    hint = {"chips": "does the name count chips or TensorCores for this generation?",
            "replicas": "a v3 chip is 2 replicas (2 TensorCores), a v4 chip 1 (megacore), a v5e chip 1"}

    def body() -> str:
        for name in LAYOUT_CASES:
            got = call_answer(slice_layout, name, what=f"slice_layout({name!r})")
            ref = tpu_slice(name)
            want = (ref.chips, ref.hosts, ref.replicas)
            assert isinstance(got, (tuple, list)) and len(got) == 3, (
                f"slice_layout({name!r}) must return (chips, workers, replicas), got {short(got)}")
            wrong = [f for f, a, b in zip(("chips", "workers", "replicas"), got, want) if int(a) != b]
            assert not wrong, (f"slice_layout({name!r}) = {tuple(got)}, expected {want} (chips, workers, replicas; "
                               f"{SOURCES[ref.generation]}). {hint.get(wrong[0], '') if wrong else ''}")
        for bad in ("v4-15", "v9-8", "tpu-16"):
            _refuses(slice_layout, (bad,), f"slice_layout({bad!r})",
                     f"slice_layout({bad!r}) returned {{got}}: it is not a slice, raise ValueError")
        return (f"{len(LAYOUT_CASES)} slices right (e.g. v5litepod-16: 16 chips, 4 workers, 16 replicas; v3-32: 16 "
                "chips, 4 workers, 32 replicas), and names that are not slices refused")

    return run_check(body)
