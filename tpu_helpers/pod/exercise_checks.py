"""Self-checks for notebook 08's exercises, by what the learner's function does: `check_shards_for_host` (every
shard read by exactly one host, balanced, whatever the listing order, a ValueError for fewer shards than hosts, and
the rehearsal's observed split) and `check_slice_layout` (chips, workers, replicas against `slices`)."""
from __future__ import annotations

import random
from typing import Callable, Mapping, Sequence

from tpu_helpers.core.exercises import CheckResult, answer_for, call_answer, run_check, short
from tpu_helpers.pod.slices import slice_layout as reference_layout

__all__ = ["check_shards_for_host", "check_slice_layout", "LAYOUT_CASES"]

answer = answer_for(__package__)  # the notebook's answers, or this package's solutions.py when solutions are on

LAYOUT_CASES = ("v5litepod-8", "v5litepod-16", "v5litepod-32", "v5e-16", "v4-8", "v4-16", "v4-32", "v3-8", "v3-32")


def _names(count: int) -> list[str]:
    return [f"gs://bucket/mlm/train-{i:05d}-100.tfrecord" for i in range(count)]


def check_shards_for_host(shards_for_host: Callable, observed: Mapping[int, Sequence[str]] | None = None,
                          shards: Sequence[str] | None = None) -> CheckResult:
    """``shards_for_host(shards, host, hosts) -> list``: see the module docstring."""
    def body() -> str:
        rng = random.Random(8)
        for count, hosts in ((8, 2), (7, 2), (16, 4), (5, 4), (4, 4), (3, 1)):
            names = _names(count)
            shares = []
            for host in range(hosts):
                listed = names[:]
                rng.shuffle(listed)  # each host lists the bucket in its own order
                got = call_answer(shards_for_host, listed, host, hosts, what=f"shards_for_host(<{count} shards>, "
                                  f"{host}, {hosts})")
                if not isinstance(got, (list, tuple)):
                    raise AssertionError(f"shards_for_host must return a list of shard names, got {short(got)}")
                shares.append(list(got))
            flat = [s for share in shares for s in share]
            missing = sorted(set(names) - set(flat))
            twice = sorted({s for s in flat if flat.count(s) > 1})
            if twice:
                raise AssertionError(f"{count} shards over {hosts} hosts (each host listed the bucket in its own "
                                     f"order): {len(twice)} shard(s) read by two hosts, e.g. {twice[0].rsplit('/', 1)[1]}"
                                     " (sort the list first: every host must agree on the order)")
            if missing or set(flat) - set(names):
                raise AssertionError(f"{count} shards over {hosts} hosts: {len(missing)} shard(s) read by no host, "
                                     f"e.g. {missing[0].rsplit('/', 1)[1] if missing else '?'}")
            sizes = [len(s) for s in shares]
            if max(sizes) - min(sizes) > 1:
                raise AssertionError(f"{count} shards over {hosts} hosts: shares of {sizes} shards; they should differ "
                                     "by at most one, or one host's input pipeline runs dry first")
        try:
            got = shards_for_host(_names(3), 3, 4)
        except NotImplementedError:
            raise
        except ValueError:
            pass
        except Exception as e:  # noqa: BLE001 (reported in plain words)
            raise AssertionError(f"3 shards for 4 hosts should raise ValueError, it raised {type(e).__name__}") from None
        else:
            raise AssertionError(f"3 shards for 4 hosts: host 3 got {short(got)} and would wait for data forever; "
                                 "raise ValueError saying that every host needs at least one shard")
        extra = ""
        if observed:
            hosts = len(observed)
            names = sorted(shards or [s for share in observed.values() for s in share])
            for host, seen in sorted(observed.items()):
                expected = sorted(s.rsplit("/", 1)[-1] for s in shards_for_host(names, host, hosts))
                if sorted(seen) != expected:
                    raise AssertionError(f"in the rehearsal, host {host}'s batches came from {sorted(seen)}; your "
                                         f"answer gives it {expected}")
            extra = f"; and it gives each rehearsal host exactly the shards its batches came from ({hosts} hosts)"
        return "every shard read by exactly one host, balanced, whatever the listing order" + extra

    return run_check(body)


def check_slice_layout(slice_layout: Callable) -> CheckResult:
    """``slice_layout(accelerator_type) -> (chips, workers, replicas)``: see the module docstring."""
    def body() -> str:
        for name in LAYOUT_CASES:
            got = call_answer(slice_layout, name, what=f"slice_layout({name!r})")
            ref = reference_layout(name)
            want = (ref.chips, ref.workers, ref.replicas)
            if not isinstance(got, (tuple, list)) or len(got) != 3:
                raise AssertionError(f"slice_layout({name!r}) must return (chips, workers, replicas), got {short(got)}")
            if tuple(int(x) for x in got) != want:
                fields = [f for f, a, b in zip(("chips", "workers", "replicas"), got, want) if int(a) != b]
                hint = {"chips": "does the name count chips or TensorCores for this generation?",
                        "workers": "a slice larger than one TPU VM is made of 4-chip workers",
                        "replicas": "a v3 chip is 2 replicas (2 TensorCores), a v4 chip 1 (megacore), a v5e chip 1"}
                raise AssertionError(f"slice_layout({name!r}) = {tuple(got)}, expected {want} (chips, workers, "
                                     f"replicas; {ref.source}): {hint[fields[0]]}")
        for bad in ("v4-15", "v9-8", "tpu-16"):
            try:
                got = slice_layout(bad)
            except NotImplementedError:
                raise
            except ValueError:
                continue
            except Exception as e:  # noqa: BLE001
                raise AssertionError(f"slice_layout({bad!r}) should raise ValueError, it raised {type(e).__name__}"
                                     ) from None
            raise AssertionError(f"slice_layout({bad!r}) returned {short(got)}: it is not a slice, raise ValueError")
        return (f"{len(LAYOUT_CASES)} slices right (e.g. v5litepod-16: 16 chips, 4 workers, 16 replicas; v3-32: 16 "
                "chips, 4 workers, 32 replicas), and names that are not slices refused")

    return run_check(body)
