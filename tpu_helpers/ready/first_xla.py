"""First XLA computations: TensorFlow in this process, PyTorch/XLA and JAX in children (they cannot share one)."""
from __future__ import annotations

import json
import os
import subprocess
import textwrap

from tpu_helpers.core.frameworks import framework_python
from tpu_helpers.core.runtime import Runtime

_TORCH_SCRIPT = textwrap.dedent("""
    import json
    import torch, torch_xla
    import torch_xla.runtime as xr
    import torch_xla.debug.metrics as met
    dev = torch_xla.device()
    x = torch.arange(6, dtype=torch.float32, device=dev).reshape(2, 3)
    y = (x @ x.T).sum()          # recorded lazily, nothing has run yet
    torch_xla.sync()             # compile + execute the recorded graph
    compile_data = met.metric_data("CompileTime")
    print(json.dumps({"device": str(dev), "device_type": xr.device_type(), "devices": xr.global_runtime_device_count(),
                      "value": y.item(), "compilations": compile_data[0] if compile_data else 0,
                      "torch_xla": torch_xla.__version__}))
""")

_JAX_SCRIPT = textwrap.dedent("""
    import json
    import jax, numpy as np
    compiled = []  # JAX's own compile events for gram_sum
    jax.monitoring.register_event_duration_secs_listener(lambda event, secs, fun_name="", **kw: compiled.append(
        fun_name) if event == "/jax/core/compile/backend_compile_duration" and fun_name == "jit(gram_sum)" else 0)
    def gram_sum(x):
        return (x @ x.T).sum()
    y = jax.jit(gram_sum)(np.arange(6, dtype=np.float32).reshape(2, 3))
    print(json.dumps({"device": str(next(iter(y.devices()))), "device_type": jax.default_backend().upper(),
                      "devices": len(jax.devices()), "value": float(y), "compilations": len(compiled),
                      "jax": jax.__version__}))
""")


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


def torch_xla_first_xla(runtime: Runtime, timeout: float = 300, *, libtpu_path: str | None = None) -> dict:
    """A tiny PyTorch/XLA computation in a child, on a TPU with `libtpu_path` and XLA's INFO log; `ProbeFailed`."""
    env = {k: v for k, v in os.environ.items() if k != "TPU_COURSE_FIGURES"}
    if runtime.is_tpu_vm:
        env["TF_CPP_MIN_LOG_LEVEL"] = "0"  # XLA logs the plugin's PJRT API version at INFO
        if libtpu_path:
            env["TPU_LIBRARY_PATH"] = libtpu_path
    else:
        env["PJRT_DEVICE"] = "CPU"
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return _child("torch", _TORCH_SCRIPT, env, timeout)


def jax_first_xla(runtime: Runtime, timeout: float = 300) -> dict:
    """A tiny jitted JAX computation in a child (`framework_python("jax")`): on a TPU VM its default backend, else
    the CPU; `ProbeFailed`."""
    env = {k: v for k, v in os.environ.items() if k != "TPU_COURSE_FIGURES"}
    if not runtime.is_tpu_vm:
        env["JAX_PLATFORMS"] = "cpu"
    return _child("jax", _JAX_SCRIPT, env, timeout)


def _child(framework: str, script: str, env: dict[str, str], timeout: float) -> dict:
    """Run `script` with `framework`'s interpreter: its last JSON line and ``output``; `ProbeFailed`."""
    name = {"torch": "PyTorch/XLA", "jax": "JAX"}[framework]
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


def tf_first_xla(runtime: Runtime, *, tpu: bool = True) -> dict:
    """A tiny ``jit_compile=True`` function's result and HLO on a TPU VM's first core (if `tpu`), else the CPU."""
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

    @tf.function(jit_compile=True)
    def gram_sum(x):
        return tf.reduce_sum(tf.matmul(x, x, transpose_b=True))

    with tf.device(device):
        x = tf.reshape(tf.range(6, dtype=tf.float32), (2, 3))
        value = float(gram_sum(x))
        hlo = gram_sum.experimental_get_compiler_ir(x)(stage="hlo")
    return {**out, "xla": True, "value": value, "hlo": hlo, "traces": gram_sum.experimental_get_tracing_count()}
