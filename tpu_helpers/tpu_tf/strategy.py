"""Around notebook 03's `make_strategy`: the TPU to connect to, every known failure explained, the replicas checked."""
from __future__ import annotations

import os
import re
from typing import Any, Mapping

from tpu_helpers.core.runtime import Runtime
from tpu_helpers.core.tpu_lock import held_message, libtpu_lock_holder
from tpu_helpers.core.tpu_slices import RESTART_MENUS

# The TPU build, installed the way the notebooks' install cell does it (tools/install_plan.py owns the plan).
TF_TPU_INSTALL = ("pip uninstall -y tensorflow tensorflow-cpu && pip install tensorflow-tpu==2.20.0 libtpu==0.0.14 "
                  "&& pip install --no-deps tf-keras==2.20.1")
_RESTART = (f"restart the kernel ({RESTART_MENUS}) and run the notebook from the top: the cell that makes the "
            "strategy must run before anything else uses TensorFlow.")


def _error(problem: str, fix: str) -> RuntimeError:
    return RuntimeError(f"{problem}\nFix: {fix}")


def tpu_to_connect(runtime: Runtime, tpu: str | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """``tpu=`` for ``TPUClusterResolver``: `tpu`, 'local' on a TPU VM, a Node's address, ``TPU_NAME``, or None."""
    if tpu or runtime.is_tpu_vm:
        return tpu or "local"
    if runtime.is_tpu_node and runtime.tpu_address:
        return runtime.tpu_address
    name = (os.environ if env is None else env).get("TPU_NAME", "").strip()
    return name if name and not name.startswith("grpc://") else None


def explain_tpu_error(exc: BaseException, tpu: str | None, runtime: Runtime, zone: str | None = None,
                      project: str | None = None) -> BaseException:
    """A RuntimeError saying what went wrong and the fix, for a known failure to connect to `tpu`; else `exc`."""
    msg, name = str(exc), type(exc).__name__
    how = "vm" if tpu == "local" else ("node" if (tpu or "").startswith("grpc://") else "named")
    if any(s in msg for s in ("already in use by process with pid", "libtpu_lockfile", "multi-process lockfile")):
        m = re.search(r"pid (\d+)", msg)
        return _error(*held_message(int(m.group(1)) if m else libtpu_lock_holder()))
    if "Please provide a TPU Name" in msg:
        return _error("No TPU name: TPUClusterResolver() needs tpu='local' on a TPU VM, a grpc:// address for a TPU "
                      "Node, or a Cloud TPU name (also read from the TPU_NAME variable), and none was found.",
                      "on a Colab/Kaggle/Cloud TPU VM use tpu='local'; for a Cloud TPU you created, pass its name, "
                      "zone and project (TPU_NAME, TPU_ZONE, TPU_PROJECT).")
    if "Could not lookup TPU metadata" in msg:
        return _error(f"The Cloud TPU API does not know the TPU {tpu!r}{f' in zone {zone!r}' if zone else ''}"
                      f"{f' of project {project!r}' if project else ''}.",
                      "check the name, zone and project with `gcloud compute tpus tpu-vm list --zone=ZONE`; on the "
                      "TPU VM itself, use tpu='local' instead of its name.")
    if how == "named" and ("metadata.google.internal" in msg or name in ("URLError", "gaierror")
                           or "Name or service not known" in msg):
        return _error(f"Could not ask the GCE metadata server for the zone/project of TPU {tpu!r}: this machine is "
                      "not a Google Compute Engine VM.", "pass the TPU's zone and project (TPU_ZONE, TPU_PROJECT).")
    # off a TPU, TensorFlow's TPU build fails tpu='local' with an InternalError (its TPU init op), the CPU build with
    # NotFoundError: both mean no TPU here (seen in the hosted rehearsals of Colab's and Kaggle's TPU images)
    if name == "NotFoundError" or "TPUs not found in the cluster" in msg or \
            (name == "InternalError" and how == "vm" and not runtime.is_tpu):
        holder = libtpu_lock_holder() if how == "vm" else None
        if holder:
            return _error(*held_message(holder))
        return _error(f"TensorFlow found no TPU through TPUClusterResolver(tpu={tpu!r}) ({runtime.describe()})",
                      "choose a TPU runtime (Colab: Runtime > Change runtime type > TPU; Kaggle: Accelerator > TPU "
                      f"VM), make sure the TPU build is installed (`{TF_TPU_INSTALL}`), and restart the kernel; or "
                      "run without a TPU: PROFILE='cpu'.")
    if how == "node" and name in ("UnavailableError", "DeadlineExceededError", "InternalError", "AbortedError",
                                  "CancelledError", "UnimplementedError"):
        return _error(f"Could not reach the TPU Node at {tpu}: {msg.splitlines()[0] if msg else name}",
                      "check the Node is READY (`gcloud compute tpus describe NAME --zone=ZONE`), on this VM's "
                      "network, with this notebook's TensorFlow version; TPU Nodes are legacy: a TPU VM avoids this.")
    if "Virtual devices cannot be modified" in msg:
        return _error("TensorFlow already set up its devices in this kernel, so the CPU cannot be split into "
                      "replicas now.", _RESTART)
    return exc


def check_replicas(strategy: Any, requested: int | None) -> int:
    """``num_replicas_in_sync``; on a CPU it must equal `requested` (REPLICAS), elsewhere the hardware decides."""
    n = int(strategy.num_replicas_in_sync)
    if requested is None or n == requested:
        return n
    from tpu_helpers.xla_tf.lesson_cells import strategy_kind

    if (kind := strategy_kind(strategy)) in ("cpu", "cpu-replicas"):
        raise _error(f"REPLICAS = {requested} asked for {requested} simulated replicas, but the strategy runs {n}",
                     _RESTART)
    print(f"REPLICAS = {requested} is ignored: this {kind.upper()} has {n} replica{'s' if n != 1 else ''}, "
          "and the hardware decides (REPLICAS splits only a CPU).")
    return n
