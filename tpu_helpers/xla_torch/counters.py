"""What PyTorch/XLA did between two points (graphs compiled, cache hits, host reads, CPU fallbacks): its counters."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SCALAR_READ = "aten::_local_scalar_dense"  # .item(), float(t), bool(t): a host read, not an op on the CPU


@dataclass(frozen=True)
class XlaSnapshot:
    """torch_xla's counters and metrics (name -> (samples, accumulated total)) at one moment."""

    counters: dict[str, int]
    metrics: dict[str, tuple[int, float]]

    def counter(self, name: str) -> int:
        return self.counters.get(name, 0)

    def metric(self, name: str) -> tuple[int, float]:
        return self.metrics.get(name, (0, 0.0))


def snapshot(wait: bool = True) -> XlaSnapshot:
    """All of torch_xla's counters and metrics now; ``wait`` first waits for the graphs already launched."""
    import torch_xla.debug.metrics as met

    if wait:  # PJRT runs graphs asynchronously: their counters move when they finish
        import torch_xla.core.xla_model as xm

        xm.wait_device_ops()
    counters = {name: int(met.counter_value(name) or 0) for name in met.counter_names()}
    metrics = {name: (int(d[0]), float(d[1])) for name in met.metric_names() if (d := met.metric_data(name))}
    return XlaSnapshot(counters, metrics)


def between(a: XlaSnapshot, b: XlaSnapshot) -> dict[str, Any]:
    """What happened from snapshot ``a`` to ``b``: the attributes of `XlaCounters`."""
    return {"compilations": b.counter("UncachedCompile") - a.counter("UncachedCompile"),
            "cache_hits": b.counter("CachedCompile") - a.counter("CachedCompile"),
            "executions": b.counter("ExecuteComputation") - a.counter("ExecuteComputation"),
            "syncs": b.metric("TransferFromDeviceTime")[0] - a.metric("TransferFromDeviceTime")[0],
            "scalar_reads": b.counter(SCALAR_READ) - a.counter(SCALAR_READ),
            "fallbacks": {k: v - a.counter(k) for k, v in b.counters.items()  # aten:: ops that ran on the CPU
                          if k.startswith("aten::") and k != SCALAR_READ and v > a.counter(k)},
            "compile_seconds": (b.metric("CompileTime")[1] - a.metric("CompileTime")[1]) / 1e9}  # nanoseconds


class XlaCounters:
    """Context manager: `between` enter and exit as attributes (compilations, syncs, scalar_reads, fallbacks...)."""

    def __enter__(self) -> "XlaCounters":
        self._start = snapshot()
        self.__dict__.update(between(self._start, self._start))
        return self

    def __exit__(self, *exc) -> None:
        self.update()

    def update(self) -> "XlaCounters":
        """Refresh the differences now (also inside the ``with`` block)."""
        self.__dict__.update(between(self._start, snapshot()))
        return self

    def as_dict(self) -> dict[str, Any]:
        return {k: round(v, 3) if isinstance(v, float) else v for k, v in vars(self).items() if k != "_start"}

    def __str__(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.as_dict().items())
