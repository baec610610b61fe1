"""XLA's compilations of a `jit` function, counted from the HLO modules XLA dumps (``use_framework("tf")``)."""
from __future__ import annotations

import functools
import itertools
import os
import re
import statistics
from pathlib import Path
from typing import Any, Callable

from tpu_helpers.core.frameworks import XLA_MODULE_RE, import_tensorflow
from tpu_helpers.core.timing import time_calls
from tpu_helpers.xla_tf.placement import on_xla_device

MODULE_TAG = "tpucourse"  # the XLA module-name filter `frameworks.use_framework("tf")` puts in XLA_FLAGS
_IDS = itertools.count(1)


def xla_compiled_modules(tag: str) -> int:
    """How many HLO modules XLA compiled to run the tf.function traced as ``tag`` (files in ``--xla_dump_to``)."""
    m = re.search(r"--xla_dump_to=(\S+)", os.environ.get("XLA_FLAGS", ""))
    if not (m and Path(m.group(1)).is_dir()):
        return 0
    pattern = re.compile(rf"^module_\d+\.\w*?_inference_{re.escape(tag)}_\d+__XlaMustCompile_true.*"
                         r"\.before_optimizations\.txt$")
    return sum(1 for p in Path(m.group(1)).iterdir() if pattern.match(p.name))


def _signature(args: tuple, kwargs: dict) -> tuple:
    """XLA's cache key as seen here: every tensor argument's shape and dtype, every other one's value."""
    import numpy as np
    import tensorflow as tf

    return tuple(("tensor", tuple(x.shape), tf.as_dtype(x.dtype).name)  # NumPy or TF: the same key
                 if isinstance(x, (tf.Tensor, tf.Variable, np.ndarray)) else ("python", repr(x))
                 for x in tf.nest.flatten((args, kwargs), expand_composites=True))


class JitFunction:
    """``tf.function(fn, jit_compile=True, **kwargs)`` counting traces, XLA compilations and calls (`on_xla_device`)."""

    def __init__(self, fn: Callable, **tf_function_kwargs: Any):
        import tensorflow as tf

        self.python_function = fn
        name = re.sub(r"\W", "_", getattr(fn, "__name__", "fn"))
        # the name XLA's records of this function carry; the pid keeps two processes' records apart in one folder
        self.tag = f"{MODULE_TAG}{os.getpid()}x{next(_IDS)}_{name}"
        self.traces = 0  # incremented by Python code that only runs while TensorFlow traces
        self.calls = 0
        self.signatures: set[tuple] = set()  # the input signatures it ran with

        def traced(*args, **kwargs):
            self.traces += 1
            return fn(*args, **kwargs)

        # name and docstring of fn, but not its signature: tf.function binds (*args, **kwargs) and fn applies
        # its own defaults (experimental_get_compiler_ir mishandles defaults seen through __wrapped__)
        functools.update_wrapper(traced, fn, updated=())
        del traced.__wrapped__
        traced.__name__ = traced.__qualname__ = self.tag
        tf_function_kwargs["jit_compile"] = True  # its calls run on_xla_device(), in __call__
        self.function = tf.function(traced, **tf_function_kwargs)

    def __call__(self, *args, **kwargs):
        with on_xla_device():  # a TPU's first core where TensorFlow is connected to one: no XLA for its host
            out = self.function(*args, **kwargs)
        self.signatures.add(_signature(args, kwargs))
        self.calls += 1
        return out

    @property
    def expected_compilations(self) -> int:
        """What Python expects XLA to have compiled: one program per distinct input signature it ran with."""
        return len(self.signatures)

    @property
    def compilations(self) -> int | None:
        """XLA programs compiled so far to run this function, from XLA's own records; None where it keeps none here."""
        n = xla_compiled_modules(self.tag)
        if n == 0 and self.signatures and not self.unmeasured:
            raise RuntimeError(
                f"XLA kept no record of compiling {self.tag}, which has run: its records must be switched on before "
                "TensorFlow compiles anything. Call tpu_helpers.core.frameworks.use_framework('tf') first thing "
                f"(restart the kernel); XLA_FLAGS is now {os.environ.get('XLA_FLAGS', '(unset)')!r}")
        return None if n == 0 and self.signatures else n

    @property
    def unmeasured(self) -> str | None:
        """Why this runtime has no record of this function's compilations (it ran); None where it has one or none is due."""
        if not self.signatures or xla_compiled_modules(self.tag):
            return None
        flags = os.environ.get("XLA_FLAGS", "")
        folder = re.search(r"--xla_dump_to=(\S+)", flags)
        if not folder:
            return None  # the course's records were never switched on: `compilations` says what to do
        if _compiles_on_tpu():
            # unverified: under PJRT, libtpu compiles; whether it honours --xla_dump_to, with these names, no TPU showed
            return (f"TensorFlow compiled it on the TPU, and XLA wrote no record of it to {folder.group(1)}: "
                    "TensorFlow's TPU build compiles inside libtpu, which may not write XLA's dump files")
        if f"--xla_dump_hlo_module_re={XLA_MODULE_RE}" not in flags:
            return (f"your XLA_FLAGS send XLA's records to {folder.group(1)}, and XLA wrote none for this function "
                    "there (another dump flag of yours filters them out); unset XLA_FLAGS and restart to count them")
        return None  # the course's own records, on this host: missing is an error (`compilations` raises)

    def experimental_get_compiler_ir(self, *args, **kwargs):  # (stage="hlo") or (stage="optimized_hlo"); may trace
        return self.function.experimental_get_compiler_ir(*args, **kwargs)

    def __repr__(self) -> str:
        return (f"<JitFunction {getattr(self.python_function, '__name__', '?')}: compilations={self.compilations} "
                f"(expected {self.expected_compilations}) traces={self.traces} calls={self.calls}>")


jit = JitFunction  # @jit, or jit(fn, reduce_retracing=True)


def _compiles_on_tpu() -> bool:
    """Whether `on_xla_device` sends the course's XLA calls to a TPU core (TensorFlow is connected to one)."""
    return bool(import_tensorflow().config.list_logical_devices("TPU"))


def recorded(*counted: "JitFunction | CompilationCounter") -> bool:
    """True where XLA kept records of these functions' compilations; else prints why they are not measured here."""
    functions = [f for c in counted for f in (c.functions if isinstance(c, CompilationCounter) else (c,))]
    why = next((w for f in functions if (w := f.unmeasured)), None)
    if why:
        names = ", ".join(dict.fromkeys(getattr(f.python_function, "__name__", "?") for f in functions))
        print(f"n/a   XLA compilations of {names}: not measured on this runtime ({why})")
    return why is None


class CompilationCounter:
    """What some `jit` functions did between enter and exit (``compilations``, ``cache_hits``, ...; ``per_function``)."""

    def __init__(self, *functions: JitFunction):
        self.functions = functions
        self.__enter__().update()

    def __enter__(self) -> "CompilationCounter":
        self._start = [(f.traces, f.compilations, f.calls) for f in self.functions]
        return self

    def __exit__(self, *exc) -> None:
        self.update()

    def update(self) -> "CompilationCounter":
        """Refresh the differences now (also usable inside the ``with`` block)."""
        self.per_function: dict[str, dict[str, int]] = {}
        for f, start in zip(self.functions, self._start):
            now = f.compilations  # None where this runtime keeps no record (`recorded`)
            d = dict(zip(("traces", "compilations", "calls"), (
                f.traces - start[0], None if now is None or start[1] is None else now - start[1], f.calls - start[2])))
            name = getattr(f.python_function, "__name__", repr(f))
            self.per_function[name if name not in self.per_function else f"{name}#{len(self.per_function) + 1}"] = d
        counts = self.per_function.values()
        self.traces, self.calls = sum(d["traces"] for d in counts), sum(d["calls"] for d in counts)
        self.compilations = None if any(d["compilations"] is None for d in counts) else sum(
            d["compilations"] for d in counts)
        self.cache_hits = None if self.compilations is None else max(self.calls - self.compilations, 0)
        return self

    def __str__(self) -> str:
        compilations = "n/a" if self.compilations is None else self.compilations
        return f"compilations={compilations} cache_hits={self.cache_hits} traces={self.traces} calls={self.calls}"


def seconds_per_call(fn: Callable, *args, repeat: int = 20, warmup_steps: int = 2, **kwargs) -> float:
    """Median wall time of ``fn(*args, **kwargs)`` with its results fetched, after ``warmup_steps`` untimed calls."""
    import tensorflow as tf

    def run():  # the results fetched: the time includes the work, not only its dispatch
        return [leaf.numpy() for leaf in tf.nest.flatten(fn(*args, **kwargs)) if hasattr(leaf, "numpy")]

    return statistics.median(time_calls(run, repeat, warmup_steps))
