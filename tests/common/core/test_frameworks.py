"""The framework guard: environment variables, and the clash turned into a clear error (in subprocesses)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tpu_helpers.core.frameworks import FrameworkClashError, import_tensorflow, loaded_frameworks, use_framework


def test_sets_transformers_backend_variables():
    env = {}
    assert use_framework("tensorflow", environ=env, modules={}) == "tf"
    assert (env["USE_TF"], env["USE_TORCH"], env["USE_TORCH_XLA"]) == ("1", "0", "0")
    env = {}
    assert use_framework("torch", environ=env, modules={}) == "torch"
    assert (env["USE_TF"], env["USE_TORCH"]) == ("0", "1")


def test_refuses_the_other_stack():
    with pytest.raises(FrameworkClashError, match="Restart the kernel"):
        use_framework("tf", environ={}, modules={"torch_xla": object()})
    with pytest.raises(FrameworkClashError, match="TensorFlow is already imported"):
        use_framework("torch", environ={}, modules={"tensorflow": object()})


def test_import_tensorflow_refuses_beside_torch_xla_before_importing_it():
    with pytest.raises(FrameworkClashError, match="torch_xla is already imported"):
        import_tensorflow(modules={"torch_xla": object()})
    assert "tensorflow" not in sys.modules


def test_the_lesson_modules_share_one_tensorflow_import():
    """One home for the lazy ``import tensorflow``: no module defines its own ``_tf()`` helper."""
    root = Path(__file__).resolve().parents[3] / "tpu_helpers"
    own = sorted(str(p.relative_to(root)) for p in root.rglob("*.py") if "def _tf(" in p.read_text(encoding="utf-8"))
    assert own == [], f"use tpu_helpers.core.frameworks.import_tensorflow() instead of a private _tf() in {own}"


def test_refuses_when_transformers_was_imported_with_the_other_backend():
    env = {"USE_TF": "0", "USE_TORCH": "1"}
    with pytest.raises(FrameworkClashError, match="before use_framework"):
        use_framework("tf", environ=env, modules={"transformers": object()})


def test_unknown_name():
    with pytest.raises(ValueError, match="'tf' or 'torch'"):
        use_framework("jax", environ={}, modules={})


def test_loaded_frameworks():
    assert loaded_frameworks({"tensorflow": 1, "torch_xla": 1}) == ["tf", "torch"]


def _run(code: str, framework: str) -> subprocess.CompletedProcess:
    """``code`` in a child of that framework's environment (./course: each has its own), the installed tpu_helpers."""
    from tpu_helpers.core.frameworks import framework_python

    env = dict(os.environ, PJRT_DEVICE="CPU", TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.run([framework_python(framework), "-c", code], capture_output=True, text=True, env=env,
                          timeout=300)


def test_real_clash_gives_a_clear_error_not_an_abort():
    # Importing TensorFlow after torch_xla aborts the process; use_framework must stop it first.
    proc = _run("import torch_xla\n"
                "from tpu_helpers.core.frameworks import use_framework, FrameworkClashError\n"
                "try:\n    use_framework('tf')\n"
                "except FrameworkClashError as e:\n    print('CLEAR:', e); raise SystemExit(3)\n"
                "import tensorflow\n", "torch")
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert "CLEAR: PyTorch/XLA is already imported" in proc.stdout and "Restart the kernel" in proc.stdout


def test_tf_process_refuses_torch():
    proc = _run("import tensorflow\n"
                "from tpu_helpers.core.frameworks import use_framework\n"
                "use_framework('torch')\n", "tf")
    assert proc.returncode == 1
    assert "FrameworkClashError: TensorFlow is already imported" in proc.stderr
    assert proc.stderr.count("\n") < 15, "a short traceback, not a crash dump"


# ---------------------------------------------------------------------------- the TPU build in this kernel
class _Rt:
    def __init__(self, tpu):
        self.is_tpu = tpu


def _dists(**versions):
    names = {k.replace("_", "-"): v for k, v in versions.items()}
    return lambda name: names.get(name)


def test_tpu_build_check_is_silent_off_a_tpu():
    from tpu_helpers.core.frameworks import check_tpu_build

    assert "not on a TPU" in check_tpu_build(_Rt(False), "tf", installed=_dists())


def test_tpu_build_check_stops_a_tf_kernel_with_the_cpu_build():
    from tpu_helpers.core.frameworks import WrongBuildError, check_tpu_build

    both = _dists(tensorflow="2.20.0", tensorflow_tpu="2.20.0", libtpu="0.0.14")  # tf-keras pulled tensorflow in
    with pytest.raises(WrongBuildError, match=r"CPU build of TensorFlow.*tensorflow==2\.20\.0.*restart the runtime"):
        check_tpu_build(_Rt(True), "tf", installed=both, tpu_devices=lambda: ["TPU:0"])
    with pytest.raises(WrongBuildError, match="CPU build"):
        check_tpu_build(_Rt(True), "tf", installed=_dists(tensorflow="2.20.0"), tpu_devices=lambda: [])
    good = _dists(tensorflow_tpu="2.20.0", libtpu="0.0.14")
    with pytest.raises(WrongBuildError, match="lists no TPU device"):
        check_tpu_build(_Rt(True), "tf", installed=good, tpu_devices=lambda: [])
    assert "8 TPU devices" in check_tpu_build(_Rt(True), "tf", installed=good, tpu_devices=lambda: ["d"] * 8)


def test_tpu_build_check_stops_a_torch_kernel_without_libtpu():
    from tpu_helpers.core.frameworks import WrongBuildError, check_tpu_build

    with pytest.raises(WrongBuildError, match=r"torch_xla\[tpu\]"):
        check_tpu_build(_Rt(True), "torch", installed=_dists(torch_xla="2.9.0"), tpu_devices=lambda: ["TPU"])
    with pytest.raises(WrongBuildError, match="does not pick the TPU"):
        check_tpu_build(_Rt(True), "torch", installed=_dists(torch_xla="2.9.0", libtpu="0.0.21"), tpu_devices=list)
    assert "PJRT device TPU" in check_tpu_build(_Rt(True), "torch", installed=_dists(torch_xla="2.9.0", libtpu="0.0.21"),
                                                tpu_devices=lambda: ["TPU"])


def test_tf_turns_on_xlas_records_of_the_course_functions_only():
    from tpu_helpers.core.frameworks import record_xla_compilations

    env = {}
    use_framework("tf", environ=env, modules={})
    assert "--xla_dump_to=" in env["XLA_FLAGS"] and "--xla_dump_hlo_module_re=.*tpucourse.*" in env["XLA_FLAGS"]
    mine = {"XLA_FLAGS": "--xla_dump_to=/my/dumps"}
    assert record_xla_compilations(mine) == "--xla_dump_to=/my/dumps"  # a learner's own dump folder is kept
    env = {}
    use_framework("torch", environ=env, modules={})
    assert "XLA_FLAGS" not in env


def test_tf_with_only_the_tpu_build_is_forced_available_to_transformers():
    """transformers 4.57 does not know the `tensorflow-tpu` distribution by name: FORCE_TF_AVAILABLE makes its TF
    model classes build (they raise "requires the TensorFlow library" otherwise)."""
    from tpu_helpers.core.frameworks import use_framework

    env = {}
    use_framework("tf", environ=env, modules={}, installed=_dists(tensorflow_tpu="2.20.0", libtpu="0.0.14"))
    assert env["FORCE_TF_AVAILABLE"] == "1" and env["USE_TF"] == "1" and env["USE_TORCH"] == "0"
    env = {}
    use_framework("tf", environ=env, modules={}, installed=_dists(tensorflow="2.20.0"))
    assert "FORCE_TF_AVAILABLE" not in env  # the CPU build: transformers finds it itself
    env = {}
    use_framework("torch", environ=env, modules={}, installed=_dists(tensorflow_tpu="2.20.0"))
    assert "FORCE_TF_AVAILABLE" not in env


def test_tf_tpu_build_that_finds_no_tpu_platform_says_what_is_known():
    from tpu_helpers.core.frameworks import WrongBuildError, check_tpu_build

    def no_platform():
        raise RuntimeError("No TPU platform found.")

    good = _dists(tensorflow_tpu="2.20.0", libtpu="0.0.14")
    with pytest.raises(WrongBuildError, match=r"No TPU platform found.*Kaggle.*PyTorch/XLA notebooks"):
        check_tpu_build(_Rt(True), "tf", installed=good, tpu_devices=no_platform)


def test_tpu_build_check_can_leave_the_chips_alone():
    """Notebook 00 checks the builds first and lets each framework take the TPU in turn."""
    from tpu_helpers.core.frameworks import check_tpu_build

    def touched():
        raise AssertionError("the devices were probed")

    good = _dists(tensorflow_tpu="2.20.0", libtpu="0.0.14")
    assert "is installed" in check_tpu_build(_Rt(True), "tf", installed=good, tpu_devices=touched, probe_devices=False)
    torch = _dists(torch_xla="2.9.0", libtpu="0.0.21")
    assert "is installed" in check_tpu_build(_Rt(True), "torch", installed=torch, tpu_devices=touched,
                                             probe_devices=False)


# ---------------------------------------------------------------------------- TensorFlow's TPU build on PJRT TPUs
def _tpu_vm(accelerator_type):
    from tpu_helpers.core.runtime import Runtime, parse_accelerator_type

    generation, chips, _ = parse_accelerator_type(accelerator_type)
    return Runtime("cloud-tpu-vm", "local", accelerator_type, generation, min(chips, 8 if generation == "v5e" else 4))


def test_tf_tpu_build_gets_the_pjrt_plugin_variables_on_one_tpu_host_only(monkeypatch):
    """Google's TF-on-TPU configs (ml-auto-solutions, export_env_variables): one host loads libtpu as TensorFlow's
    PJRT plugin; a slice of several hosts sets TPU_LOAD_LIBRARY=0; nothing of it off a TPU VM."""
    from tpu_helpers.core.runtime import Runtime

    tpu_build = _dists(tensorflow_tpu="2.20.0", libtpu="0.0.14")
    monkeypatch.setattr("tpu_helpers.core.frameworks._libtpu_path", lambda: "/site-packages/libtpu/libtpu.so")
    for accelerator in ("v5litepod-1", "v5litepod-8", "v6e-1", "v3-8"):
        env = {}
        use_framework("tf", environ=env, modules={}, installed=tpu_build, runtime=_tpu_vm(accelerator))
        assert env["NEXT_PLUGGABLE_DEVICE_USE_C_API"] == "true", accelerator
        assert env["TF_PLUGGABLE_DEVICE_LIBRARY_PATH"] == "/site-packages/libtpu/libtpu.so", accelerator
        assert "TPU_LOAD_LIBRARY" not in env
    for accelerator in ("v5litepod-16", "v4-32", "v3-32"):
        env = {}
        use_framework("tf", environ=env, modules={}, installed=tpu_build, runtime=_tpu_vm(accelerator))
        assert env["TPU_LOAD_LIBRARY"] == "0", accelerator
        assert "TF_PLUGGABLE_DEVICE_LIBRARY_PATH" not in env and "NEXT_PLUGGABLE_DEVICE_USE_C_API" not in env
    tpu_keys = {"NEXT_PLUGGABLE_DEVICE_USE_C_API", "TF_PLUGGABLE_DEVICE_LIBRARY_PATH", "TPU_LOAD_LIBRARY"}
    for rt in (Runtime("cpu", "local"), Runtime("gpu", "colab", gpus=1),
               Runtime("tpu-node", "colab", devices=8, tpu_address="grpc://10.0.0.2:8470")):
        env = {}
        use_framework("tf", environ=env, modules={}, installed=tpu_build, runtime=rt)
        assert not tpu_keys & set(env), rt.kind  # never on a CPU (the hosted images rehearsed here), a GPU, a Node
    env = {}  # the CPU build on a TPU VM: check_tpu_build stops it; nothing to set for it
    use_framework("tf", environ=env, modules={}, installed=_dists(tensorflow="2.20.0"), runtime=_tpu_vm("v5litepod-8"))
    assert not tpu_keys & set(env)
    env = {}
    use_framework("torch", environ=env, modules={}, installed=tpu_build, runtime=_tpu_vm("v5litepod-8"))
    assert not tpu_keys & set(env)


def test_a_learners_own_tpu_variables_are_kept():
    from tpu_helpers.core.frameworks import tf_tpu_environment

    env = {"TF_PLUGGABLE_DEVICE_LIBRARY_PATH": "/lib/libtpu.so"}
    use_framework("tf", environ=env, modules={}, installed=_dists(tensorflow_tpu="2.20.0", libtpu="0.0.14"),
                  runtime=_tpu_vm("v5litepod-1"))
    assert env["TF_PLUGGABLE_DEVICE_LIBRARY_PATH"] == "/lib/libtpu.so"
    assert tf_tpu_environment(_tpu_vm("v5litepod-8"), None) == {}  # no libtpu wheel: no plugin to name
    assert tf_tpu_environment(_tpu_vm("v5litepod-8"), "/x/libtpu.so") == {
        "NEXT_PLUGGABLE_DEVICE_USE_C_API": "true", "TF_PLUGGABLE_DEVICE_LIBRARY_PATH": "/x/libtpu.so"}


def test_a_preset_tpu_load_library_0_on_one_host_stops_before_tensorflow_aborts(monkeypatch):
    """tensorflow-tpu 2.20 with the PJRT plugin variables and TPU_LOAD_LIBRARY=0 aborts at import (measured on a
    CPU with the TPU build: "RegisterPluggableDevicePlugin ... TPU_LOAD_LIBRARY=0, not loading libtpu")."""
    from tpu_helpers.core.frameworks import WrongBuildError

    monkeypatch.setattr("tpu_helpers.core.frameworks._libtpu_path", lambda: "/site-packages/libtpu/libtpu.so")
    env = {"TPU_LOAD_LIBRARY": "0"}
    with pytest.raises(WrongBuildError, match="Unset it"):
        use_framework("tf", environ=env, modules={}, installed=_dists(tensorflow_tpu="2.20.0", libtpu="0.0.14"),
                      runtime=_tpu_vm("v5litepod-8"))
    env = {"TPU_LOAD_LIBRARY": "0"}  # a slice: what it is for
    use_framework("tf", environ=env, modules={}, installed=_dists(tensorflow_tpu="2.20.0", libtpu="0.0.14"),
                  runtime=_tpu_vm("v5litepod-16"))
    assert "TF_PLUGGABLE_DEVICE_LIBRARY_PATH" not in env
