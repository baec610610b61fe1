"""TensorFlow and XLA, measured: compilations, what fails to compile, an XLA-friendly loss, and the jit rule.

    step = jit(train_step)                 # tf.function(train_step, jit_compile=True) that counts
    with CompilationCounter(step) as c:
        for batch in batches:
            step(batch)
    print(c)                               # compilations=3 cache_hits=97 traces=3 calls=100
    assert c.compilations == 3

What is counted, and why it is right:

* ``traces``: how many times TensorFlow traced the Python function into a graph. It comes from TensorFlow
  (``tf.function.experimental_get_tracing_count()``) and, for a `jit` function, from a Python counter inside
  the traced function (Python code runs only while tracing); the two must agree.
* ``compilations``: XLA programs built, **as XLA itself records them**. `tpu_helpers.core.frameworks.use_framework`
  ("tf") turns on XLA's own record of every module it compiles for a course function
  (``XLA_FLAGS=--xla_dump_to=<folder> --xla_dump_hlo_module_re=.*tpucourse.*``); a `jit` function gives its
  traced graph a unique ``tpucourse<pid>x<N>_<name>`` name, and its compilations are the modules XLA wrote under
  that name when a call ran it (``XlaMustCompile_true`` in the module name; the IR a notebook asks for with
  ``experimental_get_compiler_ir`` is compiled too, but under another name, and not counted).
* ``expected_compilations``: what Python expects: XLA compiles one program per traced graph *and concrete
  input shape*, so a `jit` function expects one per distinct input signature it was called with (with
  ``reduce_retracing=True`` TensorFlow traces once for many shapes, and XLA still compiles each shape). A
  notebook asserts the compiler's count against this expectation, not the expectation against itself.
* ``cache_hits``: calls that reused a compiled program.

`check_xla` tells whether a function compiles under ``jit_compile=True`` and, if not, which error and why;
`masked_sparse_categorical_crossentropy` is the masked-mean loss (no ``tf.boolean_mask``: static shapes);
`jit_compile_for` applies the Hugging Face advice "``jit_compile=True`` on CPU/GPU, take it out on TPU"
(https://huggingface.co/docs/transformers/v4.49.0/en/perf_train_tpu_tf), given a runtime or a strategy.

TensorFlow is imported inside the functions, so importing this module is cheap and framework-neutral.
"""
from __future__ import annotations

import functools
import itertools
import os
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from tpu_helpers._compat import tf_function_flags
from tpu_helpers.core.runtime import Runtime, detect_runtime
from tpu_helpers.core.timing import time_calls

__all__ = ["JitFunction", "jit", "CompilationCounter", "XlaRecordsOffError", "xla_dump_dir", "xla_compiled_modules", "XlaCheck", "check_xla", "IrStats", "compiled_ir_stats",
           "masked_sparse_categorical_crossentropy", "boolean_mask_sparse_categorical_crossentropy",
           "JitDecision", "jit_compile_for", "seconds_per_call"]


MODULE_TAG = "tpucourse"  # the XLA module-name filter `frameworks.use_framework("tf")` puts in XLA_FLAGS
_IDS = itertools.count(1)


class XlaRecordsOffError(RuntimeError):
    """XLA wrote no record of a compilation it must have made: its dump flags were set too late."""


def xla_dump_dir(flags: str | None = None) -> Path | None:
    """The folder of ``--xla_dump_to`` in ``XLA_FLAGS`` (None when XLA keeps no record)."""
    m = re.search(r"--xla_dump_to=(\S+)", os.environ.get("XLA_FLAGS", "") if flags is None else flags)
    return Path(m.group(1)) if m else None


def xla_compiled_modules(tag: str, folder: Path | None = None) -> int:
    """How many HLO modules XLA compiled to *run* the tf.function traced under the name ``tag`` (its dump files
    ``module_NNNN.*_inference_<tag>_<id>__XlaMustCompile_true...before_optimizations.txt``)."""
    folder = xla_dump_dir() if folder is None else folder
    if folder is None or not folder.is_dir():
        return 0
    pattern = re.compile(rf"^module_\d+\.\w*?_inference_{re.escape(tag)}_\d+__XlaMustCompile_true.*"
                         r"\.before_optimizations\.txt$")
    return sum(1 for p in folder.iterdir() if pattern.match(p.name))


def _signature(args: tuple, kwargs: dict) -> tuple:
    """What XLA's compilation cache keys on, as far as the caller can see: the shape and dtype of every
    tensor argument, and the value of every other (Python) argument (a new value retraces)."""
    import numpy as np
    import tensorflow as tf

    key = []
    for leaf in tf.nest.flatten((args, kwargs), expand_composites=True):
        if isinstance(leaf, (tf.Tensor, tf.Variable, np.ndarray)):
            key.append(("tensor", tuple(leaf.shape), tf.as_dtype(leaf.dtype).name))  # NumPy or TF: same key
        else:
            key.append(("python", repr(leaf)))
    return tuple(key)


class JitFunction:
    """``tf.function(fn, jit_compile=True)`` that counts its traces, XLA compilations, calls and cache hits.

    Call it like the function. Extra keyword arguments go to ``tf.function`` (``autograph``,
    ``reduce_retracing``, ``input_signature``). ``function`` is the underlying ``tf.function``.
    """

    def __init__(self, fn: Callable, **tf_function_kwargs: Any):
        import tensorflow as tf

        self.python_function = fn
        name = re.sub(r"\W", "_", getattr(fn, "__name__", "fn"))
        # the name XLA's records of this function carry; the pid keeps two processes' records apart in one folder
        self.tag = f"{MODULE_TAG}{os.getpid()}x{next(_IDS)}_{name}"
        self.traces = 0  # incremented by Python code that only runs while TensorFlow traces
        self.calls = 0
        self.signatures: dict[tuple, int] = {}  # input signature -> calls with it

        def traced(*args, **kwargs):
            self.traces += 1
            return fn(*args, **kwargs)

        # name and docstring of fn, but not its signature: tf.function binds (*args, **kwargs) and fn applies
        # its own defaults (experimental_get_compiler_ir mishandles defaults seen through __wrapped__)
        functools.update_wrapper(traced, fn, updated=())
        del traced.__wrapped__
        traced.__name__ = traced.__qualname__ = self.tag

        tf_function_kwargs.setdefault("jit_compile", True)
        if not tf_function_kwargs["jit_compile"]:
            raise ValueError("JitFunction counts XLA compilations: it needs jit_compile=True")
        self.function = tf.function(traced, **tf_function_kwargs)

    def __call__(self, *args, **kwargs):
        key = _signature(args, kwargs)
        new = key not in self.signatures
        self.signatures[key] = self.signatures.get(key, 0) + 1
        try:
            out = self.function(*args, **kwargs)
        except Exception:
            self.signatures[key] -= 1
            if new:
                del self.signatures[key]
            raise
        self.calls += 1
        return out

    @property
    def expected_compilations(self) -> int:
        """What Python expects XLA to have compiled: one program per distinct input signature it ran with."""
        return len(self.signatures)

    @property
    def compilations(self) -> int:
        """XLA programs compiled so far to run this function, counted from XLA's own records (its dump)."""
        n = xla_compiled_modules(self.tag)
        if n == 0 and self.signatures:
            raise XlaRecordsOffError(
                f"XLA kept no record of compiling {self.tag}, which has run: its records must be switched on before "
                "TensorFlow compiles anything. Call tpu_helpers.core.frameworks.use_framework('tf') first thing "
                f"(restart the kernel); XLA_FLAGS is now {os.environ.get('XLA_FLAGS', '(unset)')!r}")
        return n

    @property
    def cache_hits(self) -> int:
        return self.calls - self.compilations

    def experimental_get_tracing_count(self) -> int:
        """TensorFlow's own trace count (must equal ``traces``)."""
        return self.function.experimental_get_tracing_count()

    def experimental_get_compiler_ir(self, *args, **kwargs):
        """XLA's IR for these arguments (``(stage="hlo")``, ``(stage="optimized_hlo")``); may trace."""
        return self.function.experimental_get_compiler_ir(*args, **kwargs)

    def __repr__(self) -> str:
        return (f"<JitFunction {getattr(self.python_function, '__name__', '?')}: compilations={self.compilations} "
                f"(expected {self.expected_compilations}) traces={self.traces} calls={self.calls}>")


def jit(fn: Callable | None = None, **tf_function_kwargs: Any):
    """Decorator form of `JitFunction`: ``@jit`` or ``@jit(reduce_retracing=True)``."""
    if fn is None:
        return lambda f: JitFunction(f, **tf_function_kwargs)
    return JitFunction(fn, **tf_function_kwargs)


def _relaxed_shapes(function) -> bool:
    """Does this tf.function trace once for several input shapes?"""
    if tf_function_flags(function)[1]:
        return True
    for spec in getattr(function, "input_signature", None) or ():
        shape = getattr(spec, "shape", None)
        if shape is not None and (shape.rank is None or None in shape.as_list()):
            return True
    return False


def _plain_traces(function) -> int:
    """Traces of a plain ``tf.function(jit_compile=True)`` with static shapes (one trace = one compilation)."""
    if not tf_function_flags(function)[0]:
        raise TypeError(f"{function} was not created with jit_compile=True, so XLA does not compile it as a "
                        "whole: use tf.function(..., jit_compile=True) or tpu_helpers.xla_tf.xla.jit(...)")
    if _relaxed_shapes(function):
        raise TypeError(f"{function} traces once for many input shapes (reduce_retracing or None dimensions), "
                        "but XLA compiles each shape: wrap the Python function with tpu_helpers.xla_tf.xla.jit(...) "
                        "to count its compilations")
    return function.experimental_get_tracing_count()


class CompilationCounter:
    """Context manager: what some XLA functions did between enter and exit.

    Watches `JitFunction` objects and plain ``tf.function(..., jit_compile=True)`` objects with static input
    shapes (for those one trace is one compilation, and calls are not seen: ``calls`` and ``cache_hits``
    count only `JitFunction` s). Attributes: ``compilations``, ``cache_hits``, ``traces``, ``calls``, and
    ``per_function`` (the same per watched function).
    """

    def __init__(self, *functions):
        if not functions:
            raise ValueError("CompilationCounter(step, ...) needs the functions to watch")
        self.functions = functions
        self.compilations = self.traces = self.calls = self.cache_hits = 0
        self.per_function: dict[str, dict[str, int]] = {}
        self._start = [self._read(f) for f in functions]  # also checks them now, with a clear error

    @staticmethod
    def _read(f) -> tuple[int, int, int]:
        if isinstance(f, JitFunction):
            return f.traces, f.compilations, f.calls
        traces = _plain_traces(f)
        return traces, traces, 0

    def __enter__(self) -> "CompilationCounter":
        self._start = [self._read(f) for f in self.functions]
        return self

    def __exit__(self, *exc) -> None:
        self.update()

    def update(self) -> "CompilationCounter":
        """Refresh the differences now (also usable inside the ``with`` block)."""
        self.per_function = {}
        totals = [0, 0, 0]
        for f, start in zip(self.functions, self._start):
            now = self._read(f)
            d = [a - b for a, b in zip(now, start)]
            name = getattr(getattr(f, "python_function", None), "__name__", None) or getattr(f, "__name__", repr(f))
            if name in self.per_function:  # two lambdas, say: keep both
                name = f"{name}#{len(self.per_function) + 1}"
            self.per_function[name] = {"traces": d[0], "compilations": d[1], "calls": d[2]}
            totals = [t + x for t, x in zip(totals, d)]
        self.traces, self.compilations, self.calls = totals
        self.cache_hits = max(self.calls - self.compilations, 0)
        return self

    def as_dict(self) -> dict[str, int]:
        return {"compilations": self.compilations, "cache_hits": self.cache_hits, "traces": self.traces,
                "calls": self.calls}

    def __str__(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.as_dict().items())


@dataclass(frozen=True)
class XlaCheck:
    """The answer of `check_xla`: did the function compile with XLA and run, and if not, why."""

    compiles: bool
    error_type: str | None = None  # e.g. "OperatorNotAllowedInGraphError", "InvalidArgumentError"
    message: str | None = None  # the line of the error that says why
    value: Any = None  # the function's result when it compiled

    def __bool__(self) -> bool:
        return self.compiles

    def __str__(self) -> str:
        if self.compiles:
            return "compiles with XLA"
        return f"does not compile with XLA: {self.error_type}: {self.message}"


def _why(error: BaseException) -> str:
    """The informative line of a TensorFlow error (its messages bury it among source lines and node names)."""
    text = str(error).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if "in user code:" in text and lines:
        last = lines[-1]  # AutoGraph: "ValueError: 'y' must also be initialized in the else branch"
        prefix = type(error).__name__ + ": "
        return last[len(prefix):] if last.startswith(prefix) else last
    first = lines[0] if lines else type(error).__name__
    m = re.search(r"Detected unsupported operations when trying to compile graph .*? on (\S+): (\w+) \(", first)
    if m:
        return f"unsupported operation {m.group(2)} for {m.group(1)} (no XLA kernel for it)"
    if len(first) > 160 and ". " in first:
        first = first[:first.index(". ") + 1]  # the first sentence; the rest is generic advice
    return first if len(first) <= 300 else first[:297] + "..."


def check_xla(fn: Callable, *args, autograph: bool = True, **kwargs) -> XlaCheck:
    """Compile ``fn`` with ``tf.function(jit_compile=True, autograph=autograph)`` and run it on the arguments.

    Returns an `XlaCheck`: ``compiles`` and the result, or the error class and the line that says why
    (for example ``OperatorNotAllowedInGraphError`` for a Python ``if`` on a tensor without AutoGraph).
    """
    import tensorflow as tf

    compiled = tf.function(fn, jit_compile=True, autograph=autograph)
    try:
        value = compiled(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 (reporting the failure is the point)
        return XlaCheck(False, type(e).__name__, _why(e))
    return XlaCheck(True, value=value)


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
        return {"hlo_instructions": self.hlo_instructions, "optimized_instructions": self.optimized_instructions,
                "dynamic_shapes": list(self.dynamic_shapes),
                "optimized_dynamic_shapes": list(self.optimized_dynamic_shapes), "opcodes": len(self.opcodes)}


_INSTR_RE = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*.+?\s([a-z][\w\-]*)\(", re.MULTILINE)
_DYNAMIC_RE = re.compile(r"\b[a-z]+\d*\[[^\]]*<=[^\]]*\]")
_SHAPE_RE = re.compile(r"\b(?:pred|[suf]\d+|bf16|c64|c128)\[[\d,<=]*\]")


def compiled_ir_stats(function, *args, **kwargs) -> IrStats:
    """Inspect the XLA program of a ``jit_compile`` function (or `JitFunction`) for these arguments.

    Uses ``experimental_get_compiler_ir``: HLO before and after optimisation. A dimension written ``<=N``
    is a bounded dynamic shape; XLA's dynamic padder rewrites it to its static bound N before code
    generation, so the optimised program computes on all N elements.
    """
    ir = function.experimental_get_compiler_ir(*args, **kwargs)
    hlo, opt = ir(stage="hlo"), ir(stage="optimized_hlo")
    return IrStats(len(_INSTR_RE.findall(hlo)), len(_INSTR_RE.findall(opt)),
                   tuple(sorted(set(_DYNAMIC_RE.findall(hlo)))), tuple(sorted(set(_DYNAMIC_RE.findall(opt)))),
                   tuple(sorted(set(_SHAPE_RE.findall(opt)))), tuple(sorted(set(_INSTR_RE.findall(opt)))))


def masked_sparse_categorical_crossentropy(labels, logits, ignore_index: int = -100):
    """Mean cross-entropy over the positions whose label is not ``ignore_index``, with static shapes.

    The XLA-friendly form of "select the labelled positions, then average": compute the loss everywhere,
    zero the ignored positions with a 0/1 mask, divide by the number of labelled positions (0 if there are
    none). The same rewrite as transformers' ``TFCausalLanguageModelingLoss.hf_compute_loss``.
    """
    import tensorflow as tf

    labels = tf.convert_to_tensor(labels)
    logits = tf.cast(tf.convert_to_tensor(logits), tf.float32)
    mask = tf.not_equal(labels, ignore_index)
    safe_labels = tf.where(mask, labels, tf.zeros_like(labels))  # any valid class; masked out below
    per_position = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=safe_labels, logits=logits)
    weights = tf.cast(mask, per_position.dtype)
    return tf.math.divide_no_nan(tf.reduce_sum(per_position * weights), tf.reduce_sum(weights))


def boolean_mask_sparse_categorical_crossentropy(labels, logits, ignore_index: int = -100):
    """The seeds' "before" version: select labelled positions with ``tf.boolean_mask`` (a data-dependent
    shape), then average. Kept for comparison with `masked_sparse_categorical_crossentropy`."""
    import tensorflow as tf

    labels = tf.convert_to_tensor(labels)
    logits = tf.cast(tf.convert_to_tensor(logits), tf.float32)
    mask = tf.not_equal(labels, ignore_index)
    kept_labels = tf.boolean_mask(labels, mask)
    kept_logits = tf.boolean_mask(logits, mask)
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=kept_labels, logits=kept_logits))


@dataclass(frozen=True)
class JitDecision:
    """Whether to pass ``jit_compile=True`` (to ``model.compile`` or ``tf.function``) here, and why.

    Truthy when it should be on: ``model.compile(..., jit_compile=bool(decision))``.
    """

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
    """What a ``tf.distribute`` strategy runs on: "tpu" (a TPUStrategy, or any strategy on TPU devices), "gpu",
    "cpu-replicas" (several replicas, every one a CPU device: a MirroredStrategy over logical CPUs) or "cpu"."""
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
    """The "``jit_compile=True`` on CPU/GPU, off on TPU" rule for a `tpu_helpers.core.runtime.Runtime`, a
    ``tf.distribute.Strategy`` (``TPUStrategy`` or one on TPU devices means TPU), or ``None`` (detect the
    runtime now): ``model.compile(..., jit_compile=bool(jit_compile_for(strategy)))``.

    It applies the advice of Hugging Face's "Training on TPU with TensorFlow" (compile with ``jit_compile=True`` on
    CPU/GPU to prove the model is XLA-compatible; take it out on a TPU, where XLA compiles everything anyway and
    the flag "can actually cause a lot of problems"), plus one exception measured on this stack (TF 2.20 +
    tf-keras 2.20): a MirroredStrategy over several logical CPU devices fails with ``jit_compile=True``
    (``InvalidArgumentError: Trying to access resource dense/kernel/replica_1/... located in device CPU:1 from
    device CPU:0``: an XLA cluster runs on exactly one device and cannot touch variables on another,
    https://www.tensorflow.org/xla/known_issues), so simulated replicas train without it. On several GPUs the
    rule says on; that is not verified here (no GPU), and tensorflow/tensorflow#45940 reports the same error for
    a custom multi-GPU loop: if you meet it, compile with ``jit_compile=False`` there too.
    """
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


def seconds_per_call(fn: Callable, *args, repeat: int = 20, warmup: int = 2, **kwargs) -> float:
    """Median wall time of ``fn(*args, **kwargs)``, waiting for the results (``.numpy()``) each time.

    The first ``warmup`` calls (tracing, compilation) are not timed.
    """
    import tensorflow as tf

    def run():
        out = fn(*args, **kwargs)
        for leaf in tf.nest.flatten(out):
            if hasattr(leaf, "numpy"):
                leaf.numpy()

    return statistics.median(time_calls(run, repeat, warmup))
