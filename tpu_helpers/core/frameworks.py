"""One framework per process: TensorFlow and torch_xla each bundle their own XLA and abort a process together; JAX
(notebook 09) has an environment of its own and keeps torch_xla out of its process (both would claim the TPU)."""
import os
import sys

from tpu_helpers.core import runtime as runtime_module
from tpu_helpers.core.tempdirs import course_temp_dir
from tpu_helpers.core.tpu_lock import TPUHeldError, held_problem
from tpu_helpers.core.tpu_slices import RESTART_MENUS, parse_accelerator_type, slice_hosts
from tpu_helpers.core.versions import installed_version

_OTHER = {"tf": ("torch_xla", "PyTorch/XLA"), "torch": ("tensorflow", "TensorFlow"), "jax": ("torch_xla", "PyTorch/XLA")}
_NAMES = {"tf": "TensorFlow", "torch": "PyTorch/XLA", "jax": "JAX"}
XLA_MODULE_RE = ".*tpucourse.*"  # the names tpu_helpers.xla_tf.counters.jit gives the functions it counts


class FrameworkClashError(RuntimeError):
    """The other framework is already imported: only a kernel restart fixes it."""


class WrongBuildError(RuntimeError):
    """On a TPU, this kernel has a framework build that cannot reach the TPU; the message says what to do."""


def _refuse_beside(key: str) -> None:
    other_module, other_name = _OTHER[key]
    if other_module in sys.modules:
        raise FrameworkClashError(
            f"{other_name} is already imported in this kernel, and {_NAMES[key]} cannot be loaded beside it "
            f"(the two abort the process together). Restart the kernel ({RESTART_MENUS}) and run this notebook "
            f"from the top; keep each notebook to one framework.")


def framework_python(name: str) -> str:
    """The interpreter for `name`'s code: ``TPU_COURSE_PYTHON_TF``/``_TORCH``/``_JAX`` (set by ./course), else this one."""
    return os.environ.get(f"TPU_COURSE_PYTHON_{name.upper()}") or sys.executable


def import_tensorflow():
    """The ``tensorflow`` module, imported on first call; `FrameworkClashError` beside torch_xla."""
    _refuse_beside("tf")
    import tensorflow

    return tensorflow


def use_framework(framework: str) -> None:
    """Declare this notebook's framework ("tf", "torch" or "jax") in the environment, before transformers is imported."""
    _refuse_beside(framework)
    if framework == "jax":  # no transformers in a JAX notebook; nothing to declare
        return
    want = {"USE_TF": "1" if framework == "tf" else "0", "USE_TORCH": "0" if framework == "tf" else "1"}
    tpu_build = framework == "tf" and installed_version("tensorflow-tpu")
    if framework == "tf":
        want["USE_TORCH_XLA"] = "0"  # else transformers and accelerate import torch_xla (installed) and abort TF
        if tpu_build:
            # transformers 4.57 does not know `tensorflow-tpu` by name (utils/import_utils.py): PR #18650's override
            want["FORCE_TF_AVAILABLE"] = "1"
    if "transformers" in sys.modules:
        stale = [k for k, v in want.items() if os.environ.get(k, "") not in (v, "")]
        if stale:
            raise FrameworkClashError(
                "transformers was imported before use_framework() with "
                + ", ".join(f"{k}={os.environ.get(k)}" for k in stale)
                + f"; it will not load {_NAMES[framework]} models now. Restart the kernel and call "
                  f"use_framework({framework!r}) before importing transformers.")
    os.environ.update(want)
    if framework == "torch":
        # torch_xla makes the scalars 0 and 1 graph constants unless told not to (read at `import torch_xla`)
        os.environ.setdefault("XLA_NO_SPECIAL_SCALARS", "1")
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TF's C++ start-up chatter out of the notebook
    if tpu_build:
        # datasets/config.py does not know `tensorflow-tpu` either, and reads TF_AVAILABLE when called
        import datasets.config
        from packaging.version import Version

        if not datasets.config.TF_AVAILABLE:
            datasets.config.TF_AVAILABLE, datasets.config.TF_VERSION = True, Version(tpu_build)
        wanted = tf_tpu_environment(runtime_module.detect_runtime(),
                                    _libtpu_path() if installed_version("libtpu") else None)
        if "TF_PLUGGABLE_DEVICE_LIBRARY_PATH" in wanted and os.environ.get("TPU_LOAD_LIBRARY") == "0":
            # measured with tensorflow-tpu 2.20: c_api_experimental.cc aborts ("TPU_LOAD_LIBRARY=0, not loading libtpu")
            raise WrongBuildError(
                "TPU_LOAD_LIBRARY=0 is set on this one-host TPU VM: TensorFlow's TPU build would abort the kernel "
                "when it loads libtpu as its PJRT plugin. Unset it (it is for slices of several hosts), restart "
                "the runtime and run from the top.")
        for k, v in wanted.items():
            os.environ.setdefault(k, v)  # a learner's own setting wins
    record_xla_compilations()


def tf_tpu_environment(runtime, libtpu_path: str | None) -> dict[str, str]:
    """The variables TensorFlow's TPU build needs on this TPU VM (none elsewhere); unverified on a TPU."""
    # GoogleCloudPlatform/ml-auto-solutions dags/solutions_team/configs/tensorflow/common.py (export_env_variables)
    if not getattr(runtime, "is_tpu_vm", False):
        return {}
    accelerator = getattr(runtime, "accelerator_type", None)
    if accelerator:
        generation, chips, _ = parse_accelerator_type(accelerator)
        if slice_hosts(generation, chips) > 1:
            return {"TPU_LOAD_LIBRARY": "0"}
    if not libtpu_path:
        return {}
    return {"NEXT_PLUGGABLE_DEVICE_USE_C_API": "true", "TF_PLUGGABLE_DEVICE_LIBRARY_PATH": libtpu_path}


def _libtpu_path() -> str | None:
    """The ``libtpu.so`` of the ``libtpu`` wheel, found without importing it (its import sets variables)."""
    from importlib.util import find_spec

    spec = find_spec("libtpu")
    if spec is None or not spec.origin:
        return None
    path = os.path.join(os.path.dirname(spec.origin), "libtpu.so")
    return path if os.path.exists(path) else None


def record_xla_compilations() -> None:
    """Have XLA dump every module it compiles for a course-counted function (before TF compiles)."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "--xla_dump_to" not in flags:  # a learner's own dump folder is kept
        folder = course_temp_dir("xla-records")
        os.environ["XLA_FLAGS"] = f"{flags} --xla_dump_to={folder} --xla_dump_hlo_module_re={XLA_MODULE_RE}".strip()


def _tpu_devices(key: str) -> list:
    """The TPU devices the framework sees (importing it picks the TPU; nothing runs on it yet)."""
    if key == "tf":
        import tensorflow as tf

        return tf.config.list_physical_devices("TPU")
    if key == "jax":
        import jax

        return [d for d in jax.devices() if d.platform == "tpu"]
    import torch_xla.runtime as xr

    return ["TPU"] if xr.device_type() == "TPU" else []


def check_tpu_build(runtime, framework: str, *, probe_devices: bool = True) -> str:
    """On a TPU, stop unless the TPU is free and this kernel's build of `framework` sees it; else say so."""
    if not getattr(runtime, "is_tpu", False):
        return f"not on a TPU: the {_NAMES[framework]} build installed here is the right one"
    restart = (f"run this notebook's install cell, then restart the runtime ({RESTART_MENUS}) and run from the top; "
               f"on a Cloud TPU VM pick the kernel 'tpu-course-{framework}' that ./course setup --tpu registered")
    problem = held_problem() if getattr(runtime, "is_tpu_vm", False) else None
    if problem:
        raise TPUHeldError(problem)
    have = {d: installed_version(d) for d in ("tensorflow", "tensorflow-cpu", "tensorflow-tpu", "torch-xla", "libtpu",
                                              "jax")}
    if framework == "tf":
        build = f"tensorflow-tpu {have['tensorflow-tpu']}, libtpu {have['libtpu']}"
        if not have["tensorflow-tpu"] or have["tensorflow"] or have["tensorflow-cpu"] or not have["libtpu"]:
            found = ", ".join(f"{d}=={v}" for d, v in have.items() if v and d != "torch-xla") or "no TensorFlow"
            raise WrongBuildError(f"this kernel has the CPU build of TensorFlow, not the TPU build ({found}): it "
                                  f"cannot reach the TPU. Uninstall tensorflow/tensorflow-cpu, {restart}.")
    elif framework == "jax":
        build = f"jax {have['jax'] or '(none)'}, libtpu {have['libtpu'] or '(none)'}"
        if not have["jax"] or not have["libtpu"]:
            raise WrongBuildError(f"this kernel has {build}: without libtpu JAX cannot reach the TPU. Install "
                                  f"jax[tpu], then {restart}.")
    else:
        build = f"torch_xla {have['torch-xla'] or '(none)'}, libtpu {have['libtpu'] or '(none)'}"
        if not have["torch-xla"] or not have["libtpu"]:
            raise WrongBuildError(f"this kernel has {build}: without libtpu the CPU build of PyTorch/XLA cannot reach "
                                  f"the TPU. Install torch_xla[tpu], then {restart}.")
    if not probe_devices:
        return f"{_NAMES[framework]}'s TPU build is installed ({build})"
    try:
        devices, why = list(_tpu_devices(framework)), ""
    except Exception as e:  # noqa: BLE001  (TensorFlow raises several types for "No TPU platform found")
        devices, why = [], f" ({type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:200]})"
    if devices:
        found = f"{len(devices)} TPU devices" if framework != "torch" else "PJRT device TPU"
        return f"{_NAMES[framework]}'s TPU build ({build}): {found}"
    if framework == "jax":
        raise WrongBuildError(f"{build} lists no TPU device{why} (JAX_PLATFORMS={os.environ.get('JAX_PLATFORMS')}): "
                              f"unset JAX_PLATFORMS, or {restart}.")
    if framework == "torch":
        raise WrongBuildError(f"{build} does not pick the TPU{why} (PJRT_DEVICE={os.environ.get('PJRT_DEVICE')}): "
                              f"unset PJRT_DEVICE, or {restart}.")
    raise WrongBuildError(
        f"{build} lists no TPU device{why}. TensorFlow's last TPU build (2.20) has not been shown to find a v5e/v6e "
        "TPU with this libtpu: Kaggle's TPU image disabled tensorflow-tpu for 'No TPU platform found'. The PyTorch/XLA "
        "notebooks (02, 05-07) use this TPU; for the TensorFlow ones use the 'cpu' profile here (PROFILE = \"cpu\"), "
        f"or a Cloud TPU VM with a v2-v4 TPU. If you installed it yourself: {restart}.")
