"""How to launch notebook 05's training function here (its "Why two launchers?"; accelerate 1.15 launchers.py)."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any, Mapping

from tpu_helpers._compat import (
    accelerate_found_torch_xla,
    accelerate_state_exists,
    reset_accelerate_state,
    xla_runtime_is_initialized,
)
from tpu_helpers.core.runtime import Runtime, detect_runtime
from tpu_helpers.core.tpu_lock import held_problem, libtpu_lock_holder
from tpu_helpers.core.tpu_slices import RESTART_MENUS


class LaunchError(RuntimeError):
    """This launch cannot work here as things stand; the message says how to fix it."""


@dataclass(frozen=True)
class LaunchPlan:
    kind: str  # hosted-tpu, tpu-vm, xla-cpu or cpu-processes
    launcher: str  # "accelerate.notebook_launcher" or "torch_xla.launch"
    num_processes: int  # processes on this host: one per TPU chip (PJRT), else 1 (or REPLICAS CPU processes)
    env: dict[str, str] = field(default_factory=dict)  # set before importing accelerate / transformers
    mixed_precision: str = "no"  # MIXED_PRECISION's default: "bf16" on a TPU (autocast in the training function)
    in_process: bool = True  # the training function runs in the notebook's process (else in forked children)
    reason: str = ""
    threads_per_process: int = 1  # replicas in each process: a TPU chip's devices (2 on v2/v3), else 1

    @property
    def replicas(self) -> int:  # devices training in data parallel on this host
        return self.num_processes * self.threads_per_process

    def describe(self) -> str:
        env = " ".join(f"{k}={v}" for k, v in self.env.items())
        where = "in this process" if self.in_process else (
            f"in {self.num_processes} forked process(es) x {self.threads_per_process} thread(s)")
        return (f"launch plan '{self.kind}': {self.launcher}, {self.replicas} replica(s) {where}, "
                f"mixed precision {self.mixed_precision}, env {env or '(none)'}; {self.reason}")


def plan_launch(runtime: Runtime | None = None, *, env: Mapping[str, str] | None = None, ipython: Any = "auto",
                num_processes: int | None = None) -> LaunchPlan:
    """Choose how to launch on this runtime. ``num_processes`` (optional) asks for a number of replicas."""
    env = dict(os.environ if env is None else env)
    runtime = runtime or detect_runtime(env)
    if ipython == "auto":  # IPython's shell, if this is a notebook
        ipython = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()

    if runtime.is_tpu_node:
        raise LaunchError(
            f"this is a legacy TPU Node ({runtime.tpu_address}): PyTorch/XLA 2.x talks to TPUs through PJRT, "
            "which needs the chips attached to this machine (a TPU VM). Create a TPU VM (README: 'A Cloud TPU VM "
            "with Jupyter over SSH') or use a Colab/Kaggle TPU runtime.")

    if runtime.is_tpu_vm:
        devices = runtime.devices or 1
        chips = runtime.chips or devices
        threads = max(1, devices // chips)  # PJRT: one process per chip, one thread per device in it
        tpu_env = {"PJRT_DEVICE": "TPU"}
        layout = f"{chips} process(es), one per chip, x {threads} thread(s), one per device: {devices} replicas"
        where = runtime.describe()
        # notebook_launcher's own test (accelerate 1.15 launchers.py), PJRT_DEVICE=TPU being set by this plan
        if any(key.startswith("KAGGLE") for key in env) or "google.colab" in str(ipython):
            return LaunchPlan("hosted-tpu", "accelerate.notebook_launcher", chips, tpu_env, "bf16", False, f"{where} "
                              f"notebook_launcher's xmp.spawn starts {layout} (it ignores num_processes).", threads)
        return LaunchPlan("tpu-vm", "torch_xla.launch", chips, tpu_env, "bf16", False, f"{where} outside Colab/Kaggle "
                          f"notebook_launcher has no TPU branch: torch_xla.launch starts {layout}.", threads)

    # a GPU runtime too: PyPI's torch_xla has no CUDA build (since 2.8), so the course installs CPU torch there
    if num_processes is not None and num_processes > 1:
        return LaunchPlan("cpu-processes", "accelerate.debug_launcher", num_processes,
                          {"USE_TORCH_XLA": "0", "OMP_NUM_THREADS": "1"}, "no", False,
                          f"{runtime.describe()} {num_processes} TPU replicas rehearsed as CPU processes over gloo, "
                          "without XLA (several XLA:CPU processes stop in their first all-reduce).")
    return LaunchPlan("xla-cpu", "accelerate.notebook_launcher", 1, {"PJRT_DEVICE": "CPU", "CPU_NUM_DEVICES": "1"},
                      "no", True, f"{runtime.describe()} one XLA:CPU device; notebook_launcher(num_processes=1) "
                      "runs the function in this process.")


def prepare_environment(plan: LaunchPlan) -> None:
    """Set the plan's environment variables. Call it before importing accelerate or transformers."""
    if plan.env.get("USE_TORCH_XLA") == "0" and "accelerate" in sys.modules:
        imports = sys.modules.get("accelerate.utils.imports")
        if imports is not None and accelerate_found_torch_xla(imports):
            raise LaunchError("accelerate was imported before USE_TORCH_XLA=0 was set, so it will train on "
                              "PyTorch/XLA instead of plain CPU processes. Restart the kernel and call "
                              "launch.prepare_environment(plan) before importing accelerate or transformers.")
    os.environ.update(plan.env)
    if plan.kind == "cpu-processes" and "torch" in sys.modules:
        # forked children inherit an OpenMP pool without its threads and hang at its barrier: one thread each
        sys.modules["torch"].set_num_threads(1)


def kernel_problems(plan: LaunchPlan) -> list[str]:
    """What in this kernel would break the launch (empty when it is clean)."""
    modules, tpu = sys.modules, plan.kind in ("hosted-tpu", "tpu-vm")  # the TPU plans fork
    problems = [held] if tpu and (held := held_problem(libtpu_lock_holder)) else []
    if modules.get("accelerate.state") is not None and accelerate_state_exists(modules["accelerate.state"]):
        problems.append(
            "an Accelerator (or accelerate PartialState) already exists in this kernel. The training function "
            "must create the only one, in each replica, after the launcher has set the replica up; settings of an "
            "earlier one (mixed precision, device) would win silently or clash.")
    xla = modules.get("torch_xla")
    if tpu and xla is not None and xla_runtime_is_initialized(xla):
        problems.append(
            "the XLA device was already used in this kernel (the PyTorch/XLA runtime is initialised), and only one "
            "process can hold a TPU: the forked replicas could not open it. Don't create tensors on the XLA device "
            "(torch_xla.device(), xm.xla_device(), model.to(...)) before launching.")
    return problems


def check_kernel(plan: LaunchPlan) -> None:
    """Raise `LaunchError` with the fix when `kernel_problems` finds anything."""
    if problems := kernel_problems(plan):
        raise LaunchError("cannot launch the training from this kernel: " + " Also: ".join(problems)
                          + f" Restart the kernel ({RESTART_MENUS}) and run the notebook from the top.")


def launch_checked(training_function, args, plan: LaunchPlan, launch_training=None) -> None:
    """Notebook 05's `launch_training` with the course's guards: the kernel checked first, Accelerate reset after."""
    if launch_training is None:
        from tpu_helpers.banking77.lesson_cells import launch_training  # imports accelerate: after the environment
    check_kernel(plan)  # no Accelerator yet, and where the launch forks, the TPU untouched in this kernel
    try:
        launch_training(training_function, args, plan.launcher, plan.num_processes)
    finally:  # an in-process run leaves its Accelerator behind, even a failed one: the next launch makes its own
        reset_accelerate_state()
