"""The framework guard: environment variables, and the clash turned into a clear error (in subprocesses)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tpu_helpers.core import frameworks, runtime
from tpu_helpers.core.frameworks import FrameworkClashError, import_tensorflow, use_framework


@pytest.fixture
def env(monkeypatch):
    """An empty os.environ, and neither stack nor transformers imported, for this test."""
    environ = {}
    monkeypatch.setattr(os, "environ", environ)
    for module in ("tensorflow", "torch_xla", "transformers"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    monkeypatch.setattr(runtime, "detect_runtime", lambda *a: runtime.Runtime("cpu", "local"))
    return environ


def _installed(monkeypatch, **versions):
    names = {k.replace("_", "-"): v for k, v in versions.items()}
    monkeypatch.setattr(frameworks, "installed_version", names.get)


def test_sets_transformers_backend_variables(env):
    use_framework("tf")
    assert (env["USE_TF"], env["USE_TORCH"], env["USE_TORCH_XLA"]) == ("1", "0", "0")
    env.clear()
    use_framework("torch")
    assert (env["USE_TF"], env["USE_TORCH"]) == ("0", "1")


def test_refuses_the_other_stack(env, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch_xla", object())
    with pytest.raises(FrameworkClashError, match="Restart the kernel"):
        use_framework("tf")
    monkeypatch.delitem(sys.modules, "torch_xla")
    monkeypatch.setitem(sys.modules, "tensorflow", object())
    with pytest.raises(FrameworkClashError, match="TensorFlow is already imported"):
        use_framework("torch")


def test_import_tensorflow_refuses_beside_torch_xla_before_importing_it(env, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch_xla", object())
    with pytest.raises(FrameworkClashError, match="PyTorch/XLA is already imported"):
        import_tensorflow()
    assert "tensorflow" not in sys.modules


def test_the_lesson_modules_share_one_tensorflow_import():
    """One home for the lazy ``import tensorflow``: no module defines its own ``_tf()`` helper."""
    root = Path(__file__).resolve().parents[3] / "tpu_helpers"
    own = sorted(str(p.relative_to(root)) for p in root.rglob("*.py") if "def _tf(" in p.read_text(encoding="utf-8"))
    assert own == [], f"use tpu_helpers.core.frameworks.import_tensorflow() instead of a private _tf() in {own}"


def test_refuses_when_transformers_was_imported_with_the_other_backend(env, monkeypatch):
    env.update(USE_TF="0", USE_TORCH="1")
    monkeypatch.setitem(sys.modules, "transformers", object())
    with pytest.raises(FrameworkClashError, match="before use_framework"):
        use_framework("tf")


def test_unknown_name(env):
    with pytest.raises(KeyError, match="mxnet"):
        use_framework("mxnet")


def test_jax_declares_nothing_and_refuses_torch_xla(env, monkeypatch):
    use_framework("jax")  # notebook 09: no transformers, so no USE_* variables to set
    assert not {k for k in ("USE_TF", "USE_TORCH", "USE_TORCH_XLA") if k in os.environ}
    monkeypatch.setitem(sys.modules, "torch_xla", object())
    with pytest.raises(FrameworkClashError, match="PyTorch/XLA is already imported"):
        use_framework("jax")


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


def _devices(monkeypatch, found):
    monkeypatch.setattr(frameworks, "_tpu_devices", lambda key: found() if callable(found) else found)


def test_tpu_build_check_is_silent_off_a_tpu(monkeypatch):
    _installed(monkeypatch)
    assert "not on a TPU" in frameworks.check_tpu_build(_Rt(False), "tf")


def test_tpu_build_check_stops_a_tf_kernel_with_the_cpu_build(monkeypatch):
    from tpu_helpers.core.frameworks import WrongBuildError, check_tpu_build

    _installed(monkeypatch, tensorflow="2.20.0", tensorflow_tpu="2.20.0", libtpu="0.0.14")  # tf-keras pulled TF in
    _devices(monkeypatch, ["TPU:0"])
    with pytest.raises(WrongBuildError, match=r"CPU build of TensorFlow.*tensorflow==2\.20\.0.*restart the runtime"):
        check_tpu_build(_Rt(True), "tf")
    _installed(monkeypatch, tensorflow="2.20.0")
    _devices(monkeypatch, [])
    with pytest.raises(WrongBuildError, match="CPU build"):
        check_tpu_build(_Rt(True), "tf")
    _installed(monkeypatch, tensorflow_tpu="2.20.0", libtpu="0.0.14")
    with pytest.raises(WrongBuildError, match="lists no TPU device"):
        check_tpu_build(_Rt(True), "tf")
    _devices(monkeypatch, ["d"] * 8)
    assert "8 TPU devices" in check_tpu_build(_Rt(True), "tf")


def test_tpu_build_check_stops_a_torch_kernel_without_libtpu(monkeypatch):
    from tpu_helpers.core.frameworks import WrongBuildError, check_tpu_build

    _installed(monkeypatch, torch_xla="2.9.0")
    _devices(monkeypatch, ["TPU"])
    with pytest.raises(WrongBuildError, match=r"torch_xla\[tpu\]"):
        check_tpu_build(_Rt(True), "torch")
    _installed(monkeypatch, torch_xla="2.9.0", libtpu="0.0.21")
    assert "PJRT device TPU" in check_tpu_build(_Rt(True), "torch")
    _devices(monkeypatch, [])
    with pytest.raises(WrongBuildError, match="does not pick the TPU"):
        check_tpu_build(_Rt(True), "torch")


def test_tf_turns_on_xlas_records_of_the_course_functions_only(env):
    use_framework("tf")
    assert "--xla_dump_to=" in env["XLA_FLAGS"] and "--xla_dump_hlo_module_re=.*tpucourse.*" in env["XLA_FLAGS"]
    env["XLA_FLAGS"] = "--xla_dump_to=/my/dumps"
    frameworks.record_xla_compilations()
    assert env["XLA_FLAGS"] == "--xla_dump_to=/my/dumps"  # a learner's own dump folder is kept
    env.clear()
    use_framework("torch")
    assert "XLA_FLAGS" not in env


def test_tf_with_only_the_tpu_build_is_forced_available_to_transformers(env, monkeypatch):
    """transformers 4.57 does not know the `tensorflow-tpu` distribution by name: FORCE_TF_AVAILABLE makes its TF
    model classes build (they raise "requires the TensorFlow library" otherwise)."""
    _installed(monkeypatch, tensorflow_tpu="2.20.0", libtpu="0.0.14")
    use_framework("tf")
    assert env["FORCE_TF_AVAILABLE"] == "1" and env["USE_TF"] == "1" and env["USE_TORCH"] == "0"
    env.clear()
    use_framework("torch")
    assert "FORCE_TF_AVAILABLE" not in env
    _installed(monkeypatch, tensorflow="2.20.0")
    use_framework("tf")
    assert "FORCE_TF_AVAILABLE" not in env  # the CPU build: transformers finds it itself


def test_tf_tpu_build_that_finds_no_tpu_platform_says_what_is_known(monkeypatch):
    from tpu_helpers.core.frameworks import WrongBuildError, check_tpu_build

    def no_platform():
        raise RuntimeError("No TPU platform found.")

    _installed(monkeypatch, tensorflow_tpu="2.20.0", libtpu="0.0.14")
    _devices(monkeypatch, no_platform)
    with pytest.raises(WrongBuildError, match=r"No TPU platform found.*Kaggle.*PyTorch/XLA notebooks"):
        check_tpu_build(_Rt(True), "tf")


def test_tpu_build_check_can_leave_the_chips_alone(monkeypatch):
    """Notebook 00 checks the builds first and lets each framework take the TPU in turn."""
    from tpu_helpers.core.frameworks import check_tpu_build

    def touched():
        raise AssertionError("the devices were probed")

    _devices(monkeypatch, touched)
    _installed(monkeypatch, tensorflow_tpu="2.20.0", libtpu="0.0.14")
    assert "is installed" in check_tpu_build(_Rt(True), "tf", probe_devices=False)
    _installed(monkeypatch, torch_xla="2.9.0", libtpu="0.0.21")
    assert "is installed" in check_tpu_build(_Rt(True), "torch", probe_devices=False)


# ---------------------------------------------------------------------------- TensorFlow's TPU build on PJRT TPUs
def _tpu_vm(accelerator_type):
    generation, chips, _ = runtime.parse_accelerator_type(accelerator_type)
    return runtime.Runtime("cloud-tpu-vm", "local", accelerator_type, generation,
                           min(chips, 8 if generation == "v5e" else 4))


def _on(monkeypatch, rt):
    monkeypatch.setattr(runtime, "detect_runtime", lambda *a: rt)


@pytest.fixture
def tpu_build(env, monkeypatch):
    _installed(monkeypatch, tensorflow_tpu="2.20.0", libtpu="0.0.14")
    monkeypatch.setattr(frameworks, "_libtpu_path", lambda: "/site-packages/libtpu/libtpu.so")
    return env


def test_tf_tpu_build_gets_the_pjrt_plugin_variables_on_one_tpu_host_only(tpu_build, monkeypatch):
    """Google's TF-on-TPU configs (ml-auto-solutions, export_env_variables): one host loads libtpu as TensorFlow's
    PJRT plugin; a slice of several hosts sets TPU_LOAD_LIBRARY=0; nothing of it off a TPU VM."""
    env = tpu_build
    for accelerator in ("v5litepod-1", "v5litepod-8", "v6e-1", "v3-8"):
        env.clear()
        _on(monkeypatch, _tpu_vm(accelerator))
        use_framework("tf")
        assert env["NEXT_PLUGGABLE_DEVICE_USE_C_API"] == "true", accelerator
        assert env["TF_PLUGGABLE_DEVICE_LIBRARY_PATH"] == "/site-packages/libtpu/libtpu.so", accelerator
        assert "TPU_LOAD_LIBRARY" not in env
    for accelerator in ("v5litepod-16", "v4-32", "v3-32"):
        env.clear()
        _on(monkeypatch, _tpu_vm(accelerator))
        use_framework("tf")
        assert env["TPU_LOAD_LIBRARY"] == "0", accelerator
        assert "TF_PLUGGABLE_DEVICE_LIBRARY_PATH" not in env and "NEXT_PLUGGABLE_DEVICE_USE_C_API" not in env
    tpu_keys = {"NEXT_PLUGGABLE_DEVICE_USE_C_API", "TF_PLUGGABLE_DEVICE_LIBRARY_PATH", "TPU_LOAD_LIBRARY"}
    for rt in (runtime.Runtime("cpu", "local"), runtime.Runtime("gpu", "colab", gpus=1),
               runtime.Runtime("tpu-node", "colab", devices=8, tpu_address="grpc://10.0.0.2:8470")):
        env.clear()
        _on(monkeypatch, rt)
        use_framework("tf")
        assert not tpu_keys & set(env), rt.kind  # never on a CPU (the hosted images rehearsed here), a GPU, a Node
    _on(monkeypatch, _tpu_vm("v5litepod-8"))
    env.clear()
    use_framework("torch")
    assert not tpu_keys & set(env)
    env.clear()  # the CPU build on a TPU VM: check_tpu_build stops it; nothing to set for it
    _installed(monkeypatch, tensorflow="2.20.0")
    use_framework("tf")
    assert not tpu_keys & set(env)


def test_a_learners_own_tpu_variables_are_kept(tpu_build, monkeypatch):
    from tpu_helpers.core.frameworks import tf_tpu_environment

    tpu_build["TF_PLUGGABLE_DEVICE_LIBRARY_PATH"] = "/lib/libtpu.so"
    _on(monkeypatch, _tpu_vm("v5litepod-1"))
    use_framework("tf")
    assert tpu_build["TF_PLUGGABLE_DEVICE_LIBRARY_PATH"] == "/lib/libtpu.so"
    assert tf_tpu_environment(_tpu_vm("v5litepod-8"), None) == {}  # no libtpu wheel: no plugin to name
    assert tf_tpu_environment(_tpu_vm("v5litepod-8"), "/x/libtpu.so") == {
        "NEXT_PLUGGABLE_DEVICE_USE_C_API": "true", "TF_PLUGGABLE_DEVICE_LIBRARY_PATH": "/x/libtpu.so"}


def test_a_preset_tpu_load_library_0_on_one_host_stops_before_tensorflow_aborts(tpu_build, monkeypatch):
    """tensorflow-tpu 2.20 with the PJRT plugin variables and TPU_LOAD_LIBRARY=0 aborts at import (measured on a
    CPU with the TPU build: "RegisterPluggableDevicePlugin ... TPU_LOAD_LIBRARY=0, not loading libtpu")."""
    from tpu_helpers.core.frameworks import WrongBuildError

    tpu_build["TPU_LOAD_LIBRARY"] = "0"
    _on(monkeypatch, _tpu_vm("v5litepod-8"))
    with pytest.raises(WrongBuildError, match="Unset it"):
        use_framework("tf")
    _on(monkeypatch, _tpu_vm("v5litepod-16"))  # a slice: what it is for
    use_framework("tf")
    assert "TF_PLUGGABLE_DEVICE_LIBRARY_PATH" not in tpu_build
