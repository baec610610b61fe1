"""Checks of notebook 08's exercises: `check_shards_for_host`, `check_slice_layout` (against `slices`)."""
from __future__ import annotations

import random
from typing import Callable, Mapping, Sequence

from tpu_helpers.core.exercises import CheckResult, answer_for, call_answer, run_check, short
from tpu_helpers.pod.slices import slice_layout as reference_layout

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
    except NotImplementedError:
        raise
    except Exception as e:  # noqa: BLE001 (reported in plain words)
        raise AssertionError(f"{what} should raise ValueError, it raised {type(e).__name__}") from None
    raise AssertionError(otherwise.format(got=short(got)))


def check_shards_for_host(shards_for_host: Callable, observed: Mapping[int, Sequence[str]] | None = None,
                          shards: Sequence[str] | None = None) -> CheckResult:
    """Each shard read by one host, balanced, in any listing order; too few shards refused; `observed` agrees."""
    def body() -> str:
        rng = random.Random(8)
        for count, hosts in ((8, 2), (7, 2), (16, 4), (5, 4), (4, 4), (3, 1)):
            names, shares = _names(count), []
            for host in range(hosts):
                listed = rng.sample(names, count)  # each host lists the bucket in its own order
                got = call_answer(shards_for_host, listed, host, hosts, what=f"shards_for_host(<{count}>, {host}, {hosts})")
                assert isinstance(got, (list, tuple)), f"return a list of shard names, got {short(got)}"
                shares.append(list(got))
            flat = [s for share in shares for s in share]
            assert len(flat) == len(set(flat)), (
                f"{count} shards over {hosts} hosts (each listing the bucket in its own order): a shard read by two "
                "hosts (sort the list first: every host must agree on the order)")
            assert set(flat) == set(names), f"{count} shards over {hosts} hosts: {sorted(set(names) - set(flat))} read by no host"
            sizes = [len(s) for s in shares]
            assert max(sizes) - min(sizes) <= 1, (f"{count} shards over {hosts} hosts: shares of {sizes} shards; they "
                                                  "should differ by at most one, or one host's input runs dry first")
        _refuses(shards_for_host, (_names(3), 3, 4), "3 shards for 4 hosts", "3 shards for 4 hosts: host 3 got {got} "
                 "and would wait for data forever; raise ValueError saying that every host needs at least one shard")
        if not observed:
            return "every shard read by exactly one host, balanced, whatever the listing order"
        names = sorted(shards or [s for share in observed.values() for s in share])
        for host, seen in sorted(observed.items()):
            expected = sorted(s.rsplit("/", 1)[-1] for s in shards_for_host(names, host, len(observed)))
            assert sorted(seen) == expected, (f"in the rehearsal, host {host}'s batches came from {sorted(seen)}; "
                                              f"your answer gives it {expected}")
        return ("every shard read by exactly one host, balanced, whatever the listing order; and it gives each "
                f"rehearsal host exactly the shards its batches came from ({len(observed)} hosts)")

    return run_check(body)


def check_slice_layout(slice_layout: Callable) -> CheckResult:
    """``slice_layout(accelerator_type) -> (chips, workers, replicas)`` for `LAYOUT_CASES`; a ValueError otherwise."""
    hint = {"chips": "does the name count chips or TensorCores for this generation?",
            "workers": "a slice larger than one TPU VM is made of 4-chip workers",
            "replicas": "a v3 chip is 2 replicas (2 TensorCores), a v4 chip 1 (megacore), a v5e chip 1"}

    def body() -> str:
        for name in LAYOUT_CASES:
            got = call_answer(slice_layout, name, what=f"slice_layout({name!r})")
            ref = reference_layout(name)
            want = (ref.chips, ref.workers, ref.replicas)
            assert isinstance(got, (tuple, list)) and len(got) == 3, (
                f"slice_layout({name!r}) must return (chips, workers, replicas), got {short(got)}")
            wrong = [f for f, a, b in zip(hint, got, want) if int(a) != b]
            assert not wrong, (f"slice_layout({name!r}) = {tuple(got)}, expected {want} (chips, workers, replicas; "
                               f"{ref.source}): {hint[wrong[0]] if wrong else ''}")
        for bad in ("v4-15", "v9-8", "tpu-16"):
            _refuses(slice_layout, (bad,), f"slice_layout({bad!r})",
                     f"slice_layout({bad!r}) returned {{got}}: it is not a slice, raise ValueError")
        return (f"{len(LAYOUT_CASES)} slices right (e.g. v5litepod-16: 16 chips, 4 workers, 16 replicas; v3-32: 16 "
                "chips, 4 workers, 32 replicas), and names that are not slices refused")

    return run_check(body)
