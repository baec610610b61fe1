"""HF's ``jit_compile`` rule, on CPU/GPU, off on TPU (huggingface.co/docs/transformers/v4.49.0/en/perf_train_tpu_tf)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tpu_helpers.core.runtime import Runtime, detect_runtime


@dataclass(frozen=True)
class JitDecision:
    """Whether to pass ``jit_compile=True`` here, and why; truthy when on: ``jit_compile=bool(decision)``."""

    enabled: bool
    reason: str

    def __bool__(self) -> bool:
        return self.enabled

    def __str__(self) -> str:
        return f"jit_compile={self.enabled}: {self.reason}"


_ON = ("XLA is opt-in on {where}: compiling with jit_compile=True proves the model obeys the XLA rules before "
       "it meets a TPU, and is often faster")
_OFF = ("on a TPU every step is compiled by XLA anyway (TPUStrategy compiles the whole replicated step); "
        "Hugging Face's TPU guide says to take jit_compile=True out again there, as leaving it in can cause "
        "problems")


_CPU_REPLICAS = ("simulated replicas on one CPU fail with jit_compile=True on TF 2.20 + tf-keras 2.20 "
                 "(InvalidArgumentError: the XLA cluster cannot reach replica_1's variables); check XLA "
                 "compatibility under the default strategy instead")


def strategy_kind(strategy: Any) -> str:
    """What a ``tf.distribute`` strategy runs on: "tpu", "gpu", "cpu-replicas" (several logical CPUs) or "cpu"."""
    if any(c.__name__.startswith("TPUStrategy") for c in type(strategy).__mro__):
        return "tpu"
    try:
        devices = [str(d).upper() for d in strategy.extended.worker_devices or ()]
    except (AttributeError, RuntimeError):  # the default strategy has no worker_devices
        devices = []
    if any(":TPU:" in d for d in devices):
        return "tpu"
    if any("GPU" in d for d in devices):
        return "gpu"
    if len(devices) > 1 and all(":CPU:" in d for d in devices):
        return "cpu-replicas"
    return "cpu"


def jit_compile_for(target: Runtime | Any | None = None) -> JitDecision:
    """The rule for a `Runtime`, a ``tf.distribute.Strategy`` or None (this runtime); CPU replicas: off (`_CPU_REPLICAS`)."""
    if target is None:
        target = detect_runtime()
    if isinstance(target, Runtime):
        if target.is_tpu:
            return JitDecision(False, f"{target.kind}: " + _OFF)
        where = "a GPU" if target.kind == "gpu" else "the CPU"
        return JitDecision(True, f"{target.kind}: " + _ON.format(where=where))
    if hasattr(target, "extended") and hasattr(target, "scope"):  # a tf.distribute.Strategy
        name, kind = type(target).__name__, strategy_kind(target)
        if kind == "tpu":
            return JitDecision(False, f"{name}: " + _OFF)
        if kind == "cpu-replicas":
            n = len(target.extended.worker_devices)
            return JitDecision(False, f"{name} over {n} CPU devices: " + _CPU_REPLICAS)
        return JitDecision(True, f"{name}: " + _ON.format(where="CPU and GPU devices"))
    raise TypeError(f"jit_compile_for() takes a tpu_helpers.core.runtime.Runtime, a tf.distribute.Strategy or None, "
                    f"not {type(target).__name__}")
