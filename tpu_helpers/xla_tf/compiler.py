"""What XLA makes of a TensorFlow function: does it compile, and why not (`check_xla`); its program (`compiled_ir_stats`)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from tpu_helpers.xla_tf.placement import on_xla_device


@dataclass(frozen=True)
class XlaCheck:
    """The answer of `check_xla`: did the function compile with XLA and run, and if not, why."""

    compiles: bool
    error_type: str | None = None  # e.g. "OperatorNotAllowedInGraphError", "InvalidArgumentError"
    message: str | None = None  # the line of the error that says why

    def __str__(self) -> str:
        return "compiles with XLA" if self.compiles else f"does not compile with XLA: {self.error_type}: {self.message}"


def _why(error: BaseException) -> str:
    """The informative line of a TensorFlow error (its messages bury it among source lines and node names)."""
    text = str(error).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if "in user code:" in text and lines:  # AutoGraph: "ValueError: 'y' must also be initialized in the else branch"
        return lines[-1].removeprefix(type(error).__name__ + ": ")
    first = lines[0] if lines else type(error).__name__
    m = re.search(r"Detected unsupported operations when trying to compile graph .*? on (\S+): (\w+) \(", first)
    if m:
        return f"unsupported operation {m.group(2)} for {m.group(1)} (no XLA kernel for it)"
    return first[:first.index(". ") + 1] if len(first) > 160 and ". " in first else first[:300]  # the first sentence


def check_xla(fn: Callable, *args, autograph: bool = True, **kwargs) -> XlaCheck:
    """Compile ``fn`` with ``tf.function(jit_compile=True)`` and run it (`on_xla_device`): an `XlaCheck`."""
    import tensorflow as tf

    compiled = tf.function(fn, jit_compile=True, autograph=autograph)
    try:
        with on_xla_device():  # a TPU where TensorFlow is connected to one (its TPU build has no XLA for the host)
            compiled(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 (reporting the failure is the point)
        return XlaCheck(False, type(e).__name__, _why(e))
    return XlaCheck(True)


@dataclass(frozen=True)
class IrStats:
    """Size and content of the XLA program built for one call."""

    hlo_instructions: int  # before XLA's optimisations
    optimized_instructions: int  # after them (what runs)
    dynamic_shapes: tuple[str, ...]  # bounded dynamic shapes before optimisation, e.g. "f32[<=1024,1000]"
    optimized_dynamic_shapes: tuple[str, ...]  # the same after optimisation (the dynamic padder pads them)
    optimized_shapes: tuple[str, ...]  # distinct array shapes in the optimised program, e.g. "f32[1024,1000]"
    opcodes: tuple[str, ...]  # distinct HLO opcodes after optimisation

    def as_dict(self) -> dict[str, Any]:
        keys = ("hlo_instructions", "optimized_instructions", "dynamic_shapes", "optimized_dynamic_shapes")
        return {**{k: getattr(self, k) for k in keys}, "opcodes": len(self.opcodes)}


_INSTR_RE = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*.+?\s([a-z][\w\-]*)\(", re.MULTILINE)
_DYNAMIC_RE = re.compile(r"\b[a-z]+\d*\[[^\]]*<=[^\]]*\]")
_SHAPE_RE = re.compile(r"\b(?:pred|[suf]\d+|bf16|c64|c128)\[[\d,<=]*\]")


def compiled_ir_stats(function, *args, **kwargs) -> IrStats:
    """`IrStats` of a ``jit_compile`` function's HLO for these arguments (``<=N``: a bounded dynamic shape)."""
    with on_xla_device():  # the program XLA builds for the device the calls run on
        ir = function.experimental_get_compiler_ir(*args, **kwargs)
        hlo, opt = ir(stage="hlo"), ir(stage="optimized_hlo")
    return IrStats(len(_INSTR_RE.findall(hlo)), len(_INSTR_RE.findall(opt)),
                   tuple(sorted(set(_DYNAMIC_RE.findall(hlo)))), tuple(sorted(set(_DYNAMIC_RE.findall(opt)))),
                   tuple(sorted(set(_SHAPE_RE.findall(opt)))), tuple(sorted(set(_INSTR_RE.findall(opt)))))
