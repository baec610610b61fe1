"""First XLA computations: TensorFlow in this process, PyTorch/XLA and JAX in children (they cannot share one)."""
from __future__ import annotations

import inspect
import json
import os
import subprocess
import textwrap
from typing import Callable

from tpu_helpers.core.frameworks import framework_python
from tpu_helpers.core.runtime import Runtime
from tpu_helpers.ready.lesson_cells import tf_first_computation

_VERSIONS_SCRIPT = textwrap.dedent("""
    import json, sys
    from importlib import metadata
    from tpu_helpers.core import versions
    names = sys.argv[1:]
    requires = metadata.requires("torch-xla") if versions.installed_version("torch-xla") else None
    print(json.dumps({"installed": versions.installed_versions(names), "pins": versions.course_pins("torch"),
                      "torch_xla_requires": requires}))
""")


def torch_environment(timeout: float = 120) -> tuple[dict[str, str | None], dict[str, str], list[str]]:
    """(installed versions, the course's pins, torch_xla's requirements) of the PyTorch/XLA environment (a child)."""
    from tpu_helpers.core import versions

    names = [*versions.PLAN_PACKAGES["torch"], "torchvision", "libtpu"]
    proc = subprocess.run([framework_python("torch"), "-c", _VERSIONS_SCRIPT, *names], capture_output=True,
                          text=True, timeout=timeout)
    if proc.returncode != 0:
        raise ProbeFailed(proc.returncode, proc.stdout + proc.stderr)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return out["installed"], out["pins"], out["torch_xla_requires"] or []


class ProbeFailed(RuntimeError):
    """A framework's child failed: ``returncode`` (None: it timed out) and ``output``, all it printed."""

    def __init__(self, returncode: int | None, output: str, name: str = "PyTorch/XLA"):
        tail = "\n".join(output.strip().splitlines()[-5:])
        super().__init__(f"the {name} check failed (exit {returncode}). Last lines:\n{tail}")
        self.returncode, self.output = returncode, output


def torch_xla_first_xla(runtime: Runtime, computation: Callable[[], dict], timeout: float = 300, *,
                        libtpu_path: str | None = None) -> dict:
    """`computation` (notebook 00's cell) in a PyTorch/XLA child, on a TPU with `libtpu_path`; `ProbeFailed`."""
    env = {k: v for k, v in os.environ.items() if k != "TPU_COURSE_FIGURES"}
    if runtime.is_tpu_vm:
        env["TF_CPP_MIN_LOG_LEVEL"] = "0"  # XLA logs the plugin's PJRT API version at INFO
        if libtpu_path:
            env["TPU_LIBRARY_PATH"] = libtpu_path
    else:
        env["PJRT_DEVICE"] = "CPU"
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return _child("torch", computation, env, timeout)


def jax_first_xla(runtime: Runtime, computation: Callable[[], dict], timeout: float = 300) -> dict:
    """`computation` (notebook 00's cell) in a JAX child: on a TPU VM its default backend, else the CPU; `ProbeFailed`."""
    env = {k: v for k, v in os.environ.items() if k != "TPU_COURSE_FIGURES"}
    if not runtime.is_tpu_vm:
        env["JAX_PLATFORMS"] = "cpu"
    return _child("jax", computation, env, timeout)


def _child(framework: str, computation: Callable[[], dict], env: dict[str, str], timeout: float) -> dict:
    """`computation`'s source, called by `framework`'s interpreter: the dict it returns and ``output``; `ProbeFailed`."""
    name = {"torch": "PyTorch/XLA", "jax": "JAX"}[framework]
    script = (textwrap.dedent(inspect.getsource(computation))
              + f"\n\nimport json\nprint(json.dumps({computation.__name__}()))\n")
    try:
        proc = subprocess.run([framework_python(framework), "-c", script], env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired as e:
        parts = [p.decode(errors="replace") if isinstance(p, bytes) else p for p in (e.stdout, e.stderr) if p]
        raise ProbeFailed(None, "\n".join(parts), name) from None
    output = f"{proc.stdout}\n{proc.stderr}"
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise ProbeFailed(proc.returncode, output, name)
    return {**json.loads(lines[-1]), "output": output}


HOST_XLA_MISSING = "could not find registered transfer manager for platform Host"


def tf_host_xla_missing() -> str | None:
    """None when TensorFlow's XLA compiles for this CPU; else its error (the TPU build links no XLA:CPU backend)."""
    import tensorflow as tf

    try:
        with tf.device("/CPU:0"):
            tf.function(lambda x: x + 1, jit_compile=True)(tf.zeros(1))
    except tf.errors.NotFoundError as e:
        if HOST_XLA_MISSING in str(e):
            return str(e).strip().splitlines()[0]
        raise
    return None


def require_host_xla(why: str) -> None:
    """Stop with what to do when TensorFlow (its TPU build) cannot compile for this CPU; `why`: what needs it."""
    missing = tf_host_xla_missing()
    if missing:
        raise RuntimeError(f"{why}, and TensorFlow's TPU build has no XLA backend for this CPU ({missing}). Run it on "
                           "a CPU runtime (Colab: Runtime > Change runtime type > CPU) or with ./course; notebooks 03 "
                           "and 04 use the TPU.")


def tf_first_xla(runtime: Runtime, computation: Callable[[str], dict] = tf_first_computation, *,
                 tpu: bool = True) -> dict:
    """`computation` (notebook 00's cell) on a TPU VM's first core (if `tpu`), else the CPU: its result and HLO."""
    import numpy as np
    import tensorflow as tf

    xn = np.arange(6, dtype=np.float32).reshape(2, 3)
    tpus = []
    if runtime.is_tpu_vm and tpu:
        tpus = tf.config.list_logical_devices("TPU")
        if not tpus:  # connect once: initialize_tpu_system wipes the TPU's memory
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="local")
            tf.config.experimental_connect_to_cluster(resolver)
            tf.tpu.experimental.initialize_tpu_system(resolver)
            tpus = tf.config.list_logical_devices("TPU")
    device = tpus[0].name if tpus else "/CPU:0"
    out = {"expected": float((xn @ xn.T).sum()), "tensorflow": tf.__version__, "device": device,
           "devices": [d.name for d in tf.config.list_logical_devices()]}
    missing = None if tpus else tf_host_xla_missing()
    if missing:
        return {**out, "xla": False, "why": missing}

    return {**out, "xla": True, **computation(device)}
