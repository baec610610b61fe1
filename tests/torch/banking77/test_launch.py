"""The launch helper's branch choice and kernel checks, from faked runtimes, environments and sys.modules entries.

Framework-free: no torch, torch_xla or accelerate is imported here (this module shares a pytest process with
the notebooks and the TensorFlow-free unit tests). The in-process launch itself is tested on XLA:CPU in
tests/torch/banking77/test_run_log.py. The last tests read accelerate's installed launchers.py as text to check
that the conditions the helper mirrors are still the ones accelerate uses.
"""
import importlib.util
import sys
import types
from pathlib import Path

import pytest

from tpu_helpers.banking77 import launch
from tpu_helpers.banking77.launch import LaunchError, LaunchPlan, plan_launch
from tpu_helpers.core.runtime import Runtime

COLAB_TPU = Runtime("colab-tpu-vm", "colab", "v5litepod-1", "v5e", 1, 1)
KAGGLE_TPU = Runtime("kaggle-tpu-vm", "kaggle", "v5litepod-8", "v5e", 8, 8)
CLOUD_TPU = Runtime("cloud-tpu-vm", "local", "v3-8", "v3", 4, 8)
NODE = Runtime("tpu-node", "local", "v3-8", "v3", 4, 8, "grpc://10.0.0.2:8470")
GPU1 = Runtime("gpu", "local", gpus=1)
GPU4 = Runtime("gpu", "local", gpus=4)
CPU = Runtime("cpu", "local")


class FakeColabShell:
    def __str__(self):
        return "<google.colab._shell.Shell object at 0x7f>"


def test_colab_tpu_takes_notebook_launchers_tpu_branch():
    plan = plan_launch(COLAB_TPU, env={"COLAB_RELEASE_TAG": "release"}, ipython=FakeColabShell())
    assert (plan.kind, plan.launcher, plan.num_processes) == ("hosted-tpu", "accelerate.notebook_launcher", 1)
    assert plan.env == {"PJRT_DEVICE": "TPU"} and plan.mixed_precision == "bf16"
    assert not plan.in_process


def test_kaggle_tpu_is_recognised_by_any_kaggle_variable():
    plan = plan_launch(KAGGLE_TPU, env={"KAGGLE_KERNEL_RUN_TYPE": "Interactive"}, ipython=None)
    assert (plan.kind, plan.num_processes) == ("hosted-tpu", 8)
    assert plan_launch(KAGGLE_TPU, env={"KAGGLE_URL_BASE": "x"}, ipython=None).kind == "hosted-tpu"
    assert plan_launch(KAGGLE_TPU, env={"PJRT_DEVICE": "TPU"}, ipython=None).kind == "tpu-vm"  # not Kaggle or Colab


def test_colab_detected_without_the_ipython_shell_falls_back_to_torch_xla_launch():
    # Our runtime says Colab (COLAB_RELEASE_TAG), but notebook_launcher looks at get_ipython(): a script run
    # on Colab would miss its TPU branch, so the helper launches through torch_xla instead.
    plan = plan_launch(COLAB_TPU, env={"COLAB_RELEASE_TAG": "release"}, ipython=None)
    assert (plan.kind, plan.launcher) == ("tpu-vm", "torch_xla.launch")


def test_plain_cloud_tpu_vm_uses_torch_xla_launch_without_faking_kaggle():
    plan = plan_launch(CLOUD_TPU, env={"TPU_ACCELERATOR_TYPE": "v3-8"}, ipython=None)
    assert (plan.kind, plan.launcher, plan.replicas) == ("tpu-vm", "torch_xla.launch", 8)
    assert plan.env == {"PJRT_DEVICE": "TPU"}  # no KAGGLE_TPU / TPU_NAME hack
    assert plan.mixed_precision == "bf16" and not plan.in_process


# (accelerator type, chips on the host, devices): PJRT starts one process per chip and one thread per device in it
# (torch_xla/_internal/tpu.py num_local_processes, _internal/pjrt.py _run_thread_per_device)
TOPOLOGIES = {
    "v2-8": ("v2", 4, 8, 4, 2), "v3-8": ("v3", 4, 8, 4, 2), "v4-8": ("v4", 4, 4, 4, 1),
    "v5litepod-1": ("v5e", 1, 1, 1, 1), "v5litepod-8": ("v5e", 8, 8, 8, 1), "v6e-8": ("v6e", 8, 8, 8, 1),
}


@pytest.mark.parametrize("accelerator_type", sorted(TOPOLOGIES))
@pytest.mark.parametrize("hosted", [False, True])
def test_tpu_plans_run_a_process_per_chip_and_a_thread_per_device(accelerator_type, hosted):
    generation, chips, devices, processes, threads = TOPOLOGIES[accelerator_type]
    rt = Runtime("kaggle-tpu-vm" if hosted else "cloud-tpu-vm", "kaggle" if hosted else "local", accelerator_type,
                 generation, chips, devices)
    env = {"KAGGLE_KERNEL_RUN_TYPE": "Interactive"} if hosted else {}
    plan = plan_launch(rt, env=env, ipython=None)
    assert plan.kind == ("hosted-tpu" if hosted else "tpu-vm")
    assert (plan.num_processes, plan.threads_per_process, plan.replicas) == (processes, threads, devices)
    text = plan.describe()
    assert f"{devices} replica(s) in {processes} forked process(es) x {threads} thread(s)" in text, text
    if hosted:  # notebook_launcher's TPU branch: xmp.spawn(..., start_method="fork"), no nprocs
        assert "ignores num_processes" in text


def test_tpu_node_is_refused_with_the_fix():
    with pytest.raises(LaunchError, match="TPU VM"):
        plan_launch(NODE, env={}, ipython=None)


def test_a_gpu_runtime_plans_like_a_cpu():  # the course installs CPU torch there: torch_xla has no CUDA build
    for n in (None, 2):
        gpu, cpu = (plan_launch(rt, env={}, ipython=None, num_processes=n) for rt in (GPU4, CPU))
        assert (gpu.kind, gpu.num_processes, gpu.env, gpu.mixed_precision) == (
            cpu.kind, cpu.num_processes, cpu.env, cpu.mixed_precision), (gpu, cpu)


def test_cpu_is_one_xla_cpu_device_in_this_process():
    plan = plan_launch(CPU, env={}, ipython=None)
    assert (plan.kind, plan.launcher, plan.num_processes) == ("xla-cpu", "accelerate.notebook_launcher", 1)
    assert plan.env == {"PJRT_DEVICE": "CPU", "CPU_NUM_DEVICES": "1"} and plan.in_process
    assert plan.mixed_precision == "no"
    # Kaggle/Colab CPU sessions too: no TPU, so no TPU branch
    assert plan_launch(Runtime("cpu", "kaggle"), env={"KAGGLE_URL_BASE": "x"}, ipython=None).kind == "xla-cpu"


@pytest.mark.parametrize("n", [2, 4, 8])
def test_several_replicas_on_a_cpu_are_forked_cpu_processes_without_xla(n):
    plan = plan_launch(CPU, env={}, ipython=None, num_processes=n)
    assert (plan.kind, plan.launcher, plan.num_processes, plan.replicas) == (
        "cpu-processes", "accelerate.debug_launcher", n, n)
    assert plan.env == {"USE_TORCH_XLA": "0", "OMP_NUM_THREADS": "1"} and not plan.in_process
    assert plan.mixed_precision == "no" and "gloo" in plan.describe() and "without XLA" in plan.describe()


def test_a_detected_kaggle_tpu_runtime_plans_the_hosted_tpu_branch(tmp_path, monkeypatch):
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "accel0").touch()
    env = {"KAGGLE_KERNEL_RUN_TYPE": "Interactive", "TPU_ACCELERATOR_TYPE": "v3-8"}
    monkeypatch.setattr("tpu_helpers.core.runtime.ROOT", tmp_path)
    rt = launch.detect_runtime(env)
    assert plan_launch(rt, env=env, ipython=None).kind == "hosted-tpu"


def test_describe_says_where_it_runs():
    text = plan_launch(CPU, env={}, ipython=None).describe()
    assert "xla-cpu" in text and "in this process" in text and "PJRT_DEVICE=CPU" in text
    assert "forked" in plan_launch(CLOUD_TPU, env={}, ipython=None).describe()


# ----------------------------------------------------------------------------------- kernel checks (faked)

@pytest.fixture
def fake_modules(monkeypatch):
    """Replace what the kernel checks read in sys.modules (restored after the test)."""
    for name in ("torch_xla", "accelerate", "accelerate.state", "accelerate.utils.imports", "torch"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setattr(launch, "libtpu_lock_holder", lambda: None)

    def fake(*, xla_started=None, accelerator=False, partial=False):
        if xla_started is not None:
            xlac = types.SimpleNamespace(_xla_runtime_is_initialized=lambda: xla_started)
            monkeypatch.setitem(sys.modules, "torch_xla", types.SimpleNamespace(_XLAC=xlac))
        if accelerator or partial:
            state = types.SimpleNamespace(
                AcceleratorState=types.SimpleNamespace(_shared_state={"x": 1} if accelerator else {}),
                PartialState=types.SimpleNamespace(_shared_state={"x": 1} if partial else {}))
            monkeypatch.setitem(sys.modules, "accelerate.state", state)

    return fake


def test_clean_kernel_has_no_problems(fake_modules):
    for plan in (plan_launch(CPU, env={}, ipython=None), plan_launch(CLOUD_TPU, env={}, ipython=None)):
        assert launch.kernel_problems(plan) == []
        launch.check_kernel(plan)
        fake_modules(xla_started=False)
        assert launch.kernel_problems(plan) == []


def test_touched_xla_device_blocks_tpu_forks_but_not_one_cpu_process(fake_modules):
    fake_modules(xla_started=True)
    tpu = plan_launch(CLOUD_TPU, env={}, ipython=None)
    problems = launch.kernel_problems(tpu)
    assert len(problems) == 1 and "XLA device was already used" in problems[0]
    with pytest.raises(LaunchError, match="Restart the kernel"):
        launch.check_kernel(tpu)
    hosted = plan_launch(KAGGLE_TPU, env={"KAGGLE_URL_BASE": "x"}, ipython=None)
    assert launch.kernel_problems(hosted)
    assert launch.kernel_problems(plan_launch(CPU, env={}, ipython=None)) == []


@pytest.mark.parametrize("which", ["accelerator", "partial"])
def test_existing_accelerator_blocks_every_launch(fake_modules, which):
    fake_modules(**{which: True})
    for rt in (CPU, GPU1, CLOUD_TPU):
        problems = launch.kernel_problems(plan_launch(rt, env={}, ipython=None))
        assert any("Accelerator" in p for p in problems), (rt.kind, problems)


def test_prepare_environment_sets_the_plan_and_catches_a_late_use_torch_xla(fake_modules, monkeypatch):
    import os

    for key in ("PJRT_DEVICE", "CPU_NUM_DEVICES", "USE_TORCH_XLA", "OMP_NUM_THREADS"):
        monkeypatch.setenv(key, "")  # registers the undo: an absent key is absent again after the test
        monkeypatch.delenv(key)
    launch.prepare_environment(plan_launch(CPU, env={}, ipython=None))
    assert (os.environ["PJRT_DEVICE"], os.environ["CPU_NUM_DEVICES"]) == ("CPU", "1")
    processes = plan_launch(CPU, env={}, ipython=None, num_processes=2)
    launch.prepare_environment(processes)
    assert os.environ["USE_TORCH_XLA"] == "0"
    monkeypatch.setitem(sys.modules, "accelerate", object())
    monkeypatch.setitem(sys.modules, "accelerate.utils.imports", types.SimpleNamespace(_torch_xla_available=True))
    with pytest.raises(LaunchError, match="before importing accelerate"):
        launch.prepare_environment(processes)


def test_plan_is_a_value():
    plan = LaunchPlan("xla-cpu", "accelerate.notebook_launcher", 1)
    assert plan.in_process and plan.env == {} and plan.mixed_precision == "no"


# ------------------------------------------------ accelerate's source still says what the helper relies on

def accelerate_file(name: str) -> str:
    spec = importlib.util.find_spec("accelerate")  # locates the package without importing it (no torch_xla)
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("accelerate is not installed")
    return (Path(list(spec.submodule_search_locations)[0]) / name).read_text()


def test_notebook_launcher_tpu_branch_conditions_are_the_mirrored_ones():
    loaded_before = "torch_xla" in sys.modules
    src = accelerate_file("launchers.py")
    assert 'key.startswith("KAGGLE") for key in os.environ.keys()' in src
    assert '"google.colab" in str(sys.modules["IPython"].get_ipython())' in src
    assert 'os.environ.get("TPU_NAME", None) is not None' in src
    assert 'os.environ.get("PJRT_DEVICE", "") == "TPU"' in src
    assert 'xmp.spawn(launcher, args=args, start_method="fork")' in src
    assert ("torch_xla" in sys.modules) == loaded_before  # reading the source imported nothing


def test_notebook_launchers_mixed_precision_never_reaches_the_accelerator():
    # The argument only lands in patch_environment(..., mixed_precision=...), which upper-cases the key to
    # MIXED_PRECISION, while AcceleratorState reads ACCELERATE_MIXED_PRECISION: pass it to Accelerator(...).
    src = accelerate_file("launchers.py")
    assert "mixed_precision=mixed_precision," in src and "ACCELERATE_MIXED_PRECISION" not in src
    assert "key = key.upper()" in accelerate_file("utils/environment.py")
    assert 'parse_choice_from_env("ACCELERATE_MIXED_PRECISION"' in accelerate_file("state.py")


def test_reset_accelerate_state_forgets_every_accelerator():
    calls = []

    class State:
        @staticmethod
        def _reset_state(reset_partial_state=False):
            calls.append(("accelerator", reset_partial_state))

    class Gradient:
        @staticmethod
        def _reset_state():
            calls.append(("gradient",))

    fake = types.SimpleNamespace(AcceleratorState=State, GradientState=Gradient)
    saved = sys.modules.get("accelerate.state")
    sys.modules["accelerate.state"] = fake
    try:
        launch.reset_accelerate_state()
    finally:
        if saved is None:
            del sys.modules["accelerate.state"]
        else:
            sys.modules["accelerate.state"] = saved
    assert calls == [("accelerator", True), ("gradient",)]
    launch.reset_accelerate_state()  # accelerate never imported: nothing to do


def test_a_tpu_launch_names_the_process_that_holds_the_tpu(tmp_path, fake_modules, monkeypatch):
    """On a TPU VM only one process can hold the chips: the launch says which one does (a real lockf lock taken by
    another process stands in for libtpu's) instead of failing inside the forked replicas."""
    from course_testing import held_libtpu_lock

    from tpu_helpers.core.tpu_lock import libtpu_lock_holder

    tpu = plan_launch(CLOUD_TPU, env={}, ipython=None)
    with held_libtpu_lock(tmp_path / "lock", "-m", "ipykernel_launcher") as pid:
        monkeypatch.setattr(launch, "libtpu_lock_holder", lambda: libtpu_lock_holder(tmp_path / "lock"))
        with pytest.raises(LaunchError, match=f"in use by process {pid}.*shut that kernel down"):
            launch.check_kernel(tpu)
        assert launch.kernel_problems(plan_launch(CPU, env={}, ipython=None)) == []
