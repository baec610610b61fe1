"""First XLA computations, to prove a runtime is ready: TensorFlow in this process, PyTorch/XLA in a child.

PyTorch/XLA is checked in a subprocess because TensorFlow and torch_xla cannot share a process
(see `tpu_helpers.core.frameworks`). On a TPU VM only one process can hold the chips at a time, so run the
PyTorch/XLA check *before* TensorFlow touches the TPU.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from tpu_helpers.core.runtime import Runtime, detect_runtime

__all__ = ["tf_first_xla", "torch_xla_first_xla"]

_TORCH_SCRIPT = textwrap.dedent("""
    import json, time
    try:
        import torch, torch_xla
        import torch_xla.runtime as xr
        import torch_xla.debug.metrics as met
    except ImportError as e:
        print(json.dumps({"installed": False, "error": str(e)})); raise SystemExit(0)
    dev = torch_xla.device()
    x = torch.arange(6, dtype=torch.float32, device=dev).reshape(2, 3)
    y = (x @ x.T).sum()          # recorded lazily, nothing has run yet
    t = time.perf_counter()
    torch_xla.sync()             # compile + execute the recorded graph
    value = y.item()
    compile_data = met.metric_data("CompileTime")
    print(json.dumps({"installed": True, "device": str(dev), "device_type": xr.device_type(),
                      "devices": xr.global_runtime_device_count(), "value": value,
                      "compilations": compile_data[0] if compile_data else 0,
                      "seconds": time.perf_counter() - t, "torch_xla": torch_xla.__version__}))
""")


def torch_xla_first_xla(runtime: Runtime | None = None, timeout: float = 300) -> dict:
    """Run a tiny computation on the PyTorch/XLA device in a child process and return what it saw.

    Off-TPU the child uses ``PJRT_DEVICE=CPU`` (XLA's CPU backend); on a TPU it lets torch_xla pick the TPU.
    Returns ``{"installed": False}`` when torch_xla is not installed in this environment.
    """
    runtime = runtime or detect_runtime()
    env = dict(os.environ)
    env.pop("TPU_COURSE_FIGURES", None)
    if not runtime.is_tpu_vm:
        env["PJRT_DEVICE"] = "CPU"
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    proc = subprocess.run([sys.executable, "-c", _TORCH_SCRIPT], env=env, capture_output=True, text=True,
                          timeout=timeout)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
        raise RuntimeError(f"the PyTorch/XLA check failed (exit {proc.returncode}). Last lines:\n{tail}\n"
                           "On a TPU this usually means another process holds the TPU: stop other kernels "
                           "using it (see /tmp/libtpu_lockfile) and retry.")
    return json.loads(lines[-1])


def tf_first_xla() -> dict:
    """Compile and run a tiny function with ``jit_compile=True``; return its result and XLA's HLO text."""
    import numpy as np
    import tensorflow as tf

    @tf.function(jit_compile=True)
    def gram_sum(x):
        return tf.reduce_sum(tf.matmul(x, x, transpose_b=True))

    x = tf.reshape(tf.range(6, dtype=tf.float32), (2, 3))
    value = float(gram_sum(x))
    hlo = gram_sum.experimental_get_compiler_ir(x)(stage="hlo")
    xn = np.arange(6, dtype=np.float32).reshape(2, 3)
    return {"value": value, "expected": float((xn @ xn.T).sum()), "hlo": hlo,
            "traces": gram_sum.experimental_get_tracing_count(), "tensorflow": tf.__version__,
            "devices": [d.name for d in tf.config.list_logical_devices()]}
