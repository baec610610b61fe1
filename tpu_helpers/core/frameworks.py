"""Keep one framework per process: TensorFlow *or* PyTorch/XLA.

TensorFlow and torch_xla each bundle their own LLVM/XLA; importing both in one process aborts it (a hard
crash, not an exception). `use_framework()` is called at the top of every notebook, before transformers is
imported: it tells transformers which backend to load (``USE_TF`` / ``USE_TORCH``) and refuses, with a clear
message, when the other stack is already loaded in this kernel.
"""
from __future__ import annotations

import os
import sys
from typing import MutableMapping

from tpu_helpers.core.tpu_lock import TPUHeldError, check_tpu_free
from tpu_helpers.core.versions import installed_version as _installed

__all__ = ["FrameworkClashError", "WrongBuildError", "TPUHeldError", "use_framework", "loaded_frameworks", "check_tpu_build",
           "record_xla_compilations", "import_tensorflow", "tf_tpu_environment", "framework_python"]

_OTHER = {"tf": ("torch_xla", "PyTorch/XLA"), "torch": ("tensorflow", "TensorFlow")}
_NAMES = {"tf": "TensorFlow", "torch": "PyTorch/XLA"}


class FrameworkClashError(RuntimeError):
    """The other framework is already imported: only a kernel restart fixes it."""


class WrongBuildError(RuntimeError):
    """On a TPU, this kernel has a framework build that cannot reach the TPU; the message says what to do."""


def loaded_frameworks(modules: dict | None = None) -> list[str]:
    """Which of the two stacks are imported in this process ("tf", "torch")."""
    modules = sys.modules if modules is None else modules
    found = []
    if "tensorflow" in modules:
        found.append("tf")
    if "torch_xla" in modules:
        found.append("torch")
    return found


def framework_python(name: str) -> str:
    """The interpreter for `name`'s code ("tf" or "torch"): ``TPU_COURSE_PYTHON_TF`` / ``TPU_COURSE_PYTHON_TORCH``
    where each framework has its own environment (``./course`` sets both), else this kernel's own interpreter."""
    if name not in _NAMES:
        raise ValueError(f"framework must be 'tf' or 'torch', not {name!r}")
    return os.environ.get(f"TPU_COURSE_PYTHON_{name.upper()}") or sys.executable


def import_tensorflow(*, modules: dict | None = None):
    """The ``tensorflow`` module, imported on first call: the TensorFlow lessons' modules (``mlm``, ``xla_tf``) call
    it inside their functions, so that importing them loads no framework. Raises `FrameworkClashError` instead of
    importing TensorFlow beside torch_xla (the two abort the process together). ``modules`` is injectable for
    tests."""
    modules = sys.modules if modules is None else modules
    if "torch_xla" in modules:
        raise FrameworkClashError(
            "torch_xla is already imported in this process, and TensorFlow cannot be loaded beside it (the two abort "
            "the process together): restart the kernel and run only TensorFlow notebooks' code in it.")
    import tensorflow

    return tensorflow


def use_framework(name: str, *, environ: MutableMapping[str, str] | None = None,
                  modules: dict | None = None, installed=None, runtime=None) -> str:
    """Declare this notebook's framework ("tf" or "torch") before importing transformers.

    Sets ``USE_TF``/``USE_TORCH`` so transformers imports only that backend (and ``FORCE_TF_AVAILABLE`` where
    TensorFlow is the ``tensorflow-tpu`` distribution, which transformers does not recognise by name; on a TPU VM the
    variables `tf_tpu_environment` names; for PyTorch/XLA ``XLA_NO_SPECIAL_SCALARS=1``: no 0/1 graph
    constants), and raises `FrameworkClashError` if the other one is already loaded
    (restart the kernel to fix it). ``installed`` (distribution -> version or None) and ``runtime`` (a
    `tpu_helpers.core.runtime.Runtime`; default: this machine's) are injectable for tests.
    """
    installed = _installed if installed is None else installed
    key = name.strip().lower()
    key = {"tensorflow": "tf", "pytorch": "torch", "torch_xla": "torch", "pt": "torch"}.get(key, key)
    if key not in _OTHER:
        raise ValueError(f"use_framework() takes 'tf' or 'torch', not {name!r}")
    environ = os.environ if environ is None else environ
    modules = sys.modules if modules is None else modules
    other_module, other_name = _OTHER[key]
    if other_module in modules:
        raise FrameworkClashError(
            f"{other_name} is already imported in this kernel, and {_NAMES[key]} cannot be loaded beside it "
            f"(the two abort the process together). Restart the kernel (Runtime > Restart session on Colab, "
            f"Run > Restart & clear cell outputs on Kaggle) and run this notebook from the top; keep each "
            f"notebook to one framework.")
    want = {"USE_TF": "1" if key == "tf" else "0", "USE_TORCH": "0" if key == "tf" else "1"}
    if key == "tf":
        # transformers' pipelines/training_args and accelerate import torch_xla when it is installed, which
        # aborts a TensorFlow process; USE_TORCH_XLA=0 makes them leave it alone.
        want["USE_TORCH_XLA"] = "0"
        if installed("tensorflow-tpu"):
            # transformers 4.57 looks TensorFlow up under a fixed list of distribution names without
            # `tensorflow-tpu` (utils/import_utils.py): with only the TPU build installed its TF model classes
            # raise "requires the TensorFlow library". FORCE_TF_AVAILABLE (transformers PR #18650) overrides it.
            want["FORCE_TF_AVAILABLE"] = "1"
    if "transformers" in modules:
        stale = {k: v for k, v in want.items() if environ.get(k, "") not in (v, "")}
        if stale:
            raise FrameworkClashError(
                "transformers was imported before use_framework() with "
                + ", ".join(f"{k}={environ.get(k)}" for k in stale)
                + f"; it will not load {_NAMES[key]} models now. Restart the kernel and call "
                  f"use_framework({key!r}) before importing transformers.")
    environ.update(want)
    if key == "tf" and "FORCE_TF_AVAILABLE" in want and environ is os.environ:
        _datasets_sees_tensorflow_tpu(installed("tensorflow-tpu"))
    if key == "tf":
        environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TF's C++ start-up chatter out of the notebook
        if installed("tensorflow-tpu"):
            if runtime is None:
                from tpu_helpers.core.runtime import detect_runtime

                runtime = detect_runtime(environ)
            wanted = tf_tpu_environment(runtime, _libtpu_path() if installed("libtpu") else None)
            if "TF_PLUGGABLE_DEVICE_LIBRARY_PATH" in wanted and environ.get("TPU_LOAD_LIBRARY") == "0":
                # measured with tensorflow-tpu 2.20: the plugin with TPU_LOAD_LIBRARY=0 aborts the process at import
                # (c_api_experimental.cc: "RegisterPluggableDevicePlugin ... TPU_LOAD_LIBRARY=0, not loading libtpu")
                raise WrongBuildError(
                    "TPU_LOAD_LIBRARY=0 is set on this one-host TPU VM: TensorFlow's TPU build would abort the kernel "
                    "when it loads libtpu as its PJRT plugin. Unset it (it is for slices of several hosts), restart "
                    "the runtime and run from the top.")
            for k, v in wanted.items():
                environ.setdefault(k, v)  # a learner's own setting wins
        record_xla_compilations(environ)
    else:
        # torch_xla makes the scalars 0 and 1 graph constants unless told not to (read once, at `import torch_xla`;
        # children inherit it). Alone it does not keep AdamW's `1 - lr*wd` = 1.0 from adding a graph (torch_xla also
        # merges equal scalar inputs): the training code calls tpu_helpers.xla_torch.scalars.scalars_as_graph_inputs.
        environ.setdefault("XLA_NO_SPECIAL_SCALARS", "1")
    return key


def tf_tpu_environment(runtime, libtpu_path: str | None) -> dict[str, str]:
    """What TensorFlow's TPU build (``tensorflow-tpu`` 2.20 with the ``libtpu`` wheel) must find in the environment
    when it is imported on this TPU VM; nothing off a TPU VM (never on a CPU or GPU, nor a legacy TPU Node).

    As Google's own TF-on-TPU test configurations set them (GoogleCloudPlatform/ml-auto-solutions,
    ``dags/solutions_team/configs/tensorflow/common.py``, ``export_env_variables``) and Keras-RS's TensorFlow TPU
    example: on one host (a v5e-1, a v5e-8) libtpu as TensorFlow's PJRT plugin, ``TF_PLUGGABLE_DEVICE_LIBRARY_PATH``
    (``tensorflow/__init__.py`` loads it as a pluggable device at import) with ``NEXT_PLUGGABLE_DEVICE_USE_C_API=true``
    (a flag libtpu reads); on a slice of several hosts ``TPU_LOAD_LIBRARY=0`` (TensorFlow's own loader leaves libtpu
    to the slice's TPU runtime); never both (measured on a CPU: the plugin with ``TPU_LOAD_LIBRARY=0`` aborts the
    process at import). Not verified on a TPU by the course (notebook 03 says what to do if it fails)."""
    if not getattr(runtime, "is_tpu_vm", False):
        return {}
    from tpu_helpers.core.runtime import parse_accelerator_type, slice_hosts

    accelerator = getattr(runtime, "accelerator_type", None)
    if accelerator:
        generation, chips, _ = parse_accelerator_type(accelerator)
        if slice_hosts(generation, chips) > 1:
            return {"TPU_LOAD_LIBRARY": "0"}
    if not libtpu_path:
        return {}
    return {"NEXT_PLUGGABLE_DEVICE_USE_C_API": "true", "TF_PLUGGABLE_DEVICE_LIBRARY_PATH": libtpu_path}


def _libtpu_path() -> str | None:
    """``libtpu.so`` of the installed ``libtpu`` wheel (what ``libtpu.get_library_path()`` returns), found without
    importing the package (its import sets ``TPU_LIBRARY_PATH``)."""
    from importlib.util import find_spec

    spec = find_spec("libtpu")
    if spec is None or not spec.origin:
        return None
    path = os.path.join(os.path.dirname(spec.origin), "libtpu.so")
    return path if os.path.exists(path) else None


def _datasets_sees_tensorflow_tpu(version: str) -> None:
    """datasets, like transformers, looks TensorFlow up under distribution names without ``tensorflow-tpu``
    (``datasets/config.py``) and has no override: ``Dataset.to_tf_dataset`` then raises "Tensorflow is not
    installed". Its functions read ``datasets.config.TF_AVAILABLE`` when called, so tell the config."""
    try:
        import datasets.config as config
        from packaging.version import Version
    except ImportError:
        return
    if not config.TF_AVAILABLE:
        config.TF_AVAILABLE, config.TF_VERSION = True, Version(version)


XLA_MODULE_RE = ".*tpucourse.*"  # the names tpu_helpers.xla_tf.counters.jit gives the functions it counts


def record_xla_compilations(environ: MutableMapping[str, str] | None = None) -> str:
    """Have XLA write a record (an HLO dump) of every module it compiles for a course-counted function, so that
    `tpu_helpers.xla_tf` counts compilations from XLA itself. Must run before TensorFlow compiles anything (XLA
    reads its flags once). Only the course's functions are dumped (``--xla_dump_hlo_module_re``), into a folder of
    this process (`tpu_helpers.core.tempdirs`: removed at exit, or by the next course process if this one is
    killed). An ``--xla_dump_to`` already in ``XLA_FLAGS`` is kept. Returns the flags."""
    from tpu_helpers.core.tempdirs import course_temp_dir

    environ = os.environ if environ is None else environ
    flags = environ.get("XLA_FLAGS", "")
    if "--xla_dump_to" not in flags:
        folder = course_temp_dir("xla-records")
        flags = f"{flags} --xla_dump_to={folder} --xla_dump_hlo_module_re={XLA_MODULE_RE}".strip()
        environ["XLA_FLAGS"] = flags
    return flags


def check_tpu_build(runtime, framework: str, *, installed=_installed, tpu_devices=None, probe_devices: bool = True,
                    lock_holder=None) -> str:
    """On a TPU runtime, stop unless this kernel has the framework's TPU build and it sees the TPU; else say so.

    TensorFlow: the ``tensorflow-tpu`` distribution with ``libtpu``, and no ``tensorflow``/``tensorflow-cpu``
    beside it (both install the same ``tensorflow/`` folder; with the CPU build's files TensorFlow reports
    "Registered devices: [CPU]"), then ``tf.config.list_physical_devices("TPU")`` non-empty. PyTorch/XLA:
    ``torch_xla`` with ``libtpu`` (its ``[tpu]`` extra), then ``torch_xla.runtime.device_type() == "TPU"``
    (importing torch_xla picks PJRT's TPU device when it finds the chips; nothing runs on them yet, so a launcher
    may still fork replicas). Before either, on a TPU VM, another process holding libtpu's lock (another
    notebook's kernel) stops it with `TPUHeldError` naming that process. ``probe_devices=False`` checks the
    installed builds only and leaves the chips alone (notebook 00 probes PyTorch/XLA in a child process first).
    ``installed``, ``tpu_devices`` and ``lock_holder`` are injectable for tests. Off a TPU: nothing to check, the
    CPU build is the right one.
    """
    key = {"tensorflow": "tf", "pytorch": "torch"}.get(framework, framework)
    if key not in _NAMES:
        raise ValueError(f"check_tpu_build() takes 'tf' or 'torch', not {framework!r}")
    if not getattr(runtime, "is_tpu", False):
        return f"not on a TPU: the {_NAMES[key]} build installed here is the right one"
    restart = ("run this notebook's install cell, then restart the runtime (Colab: Runtime > Restart session; "
               "Kaggle: Run > Restart & clear cell outputs) and run from the top; on a Cloud TPU VM pick the "
               f"kernel 'tpu-course-{key}' that ./course setup --tpu registered")
    if getattr(runtime, "is_tpu_vm", False):
        check_tpu_free(lock_holder)
    if key == "tf":
        tpu, cpu = installed("tensorflow-tpu"), [d for d in ("tensorflow", "tensorflow-cpu") if installed(d)]
        if not tpu or cpu or not installed("libtpu"):
            found = ", ".join(f"{d}=={installed(d)}" for d in ("tensorflow", "tensorflow-cpu", "tensorflow-tpu",
                                                               "libtpu") if installed(d)) or "no TensorFlow"
            raise WrongBuildError(f"this kernel has the CPU build of TensorFlow, not the TPU build ({found}): it "
                                  f"cannot reach the TPU. Uninstall tensorflow/tensorflow-cpu, {restart}.")
        if not probe_devices:
            return f"TensorFlow's TPU build is installed (tensorflow-tpu {tpu}, libtpu {installed('libtpu')})"
        if tpu_devices is None:
            import tensorflow as tf

            tpu_devices = lambda: tf.config.list_physical_devices("TPU")  # noqa: E731
        try:
            devices = list(tpu_devices())
        except Exception as e:  # noqa: BLE001  (TensorFlow raises several types for "No TPU platform found")
            devices, why = [], f" ({type(e).__name__}: {str(e).strip().splitlines()[0][:200] if str(e).strip() else ''})"
        else:
            why = ""
        if not devices:
            raise WrongBuildError(
                f"tensorflow-tpu {tpu} with libtpu {installed('libtpu')} lists no TPU device{why}. TensorFlow's last "
                f"TPU build (2.20) has not been shown to find a v5e/v6e TPU with this libtpu: Kaggle's TPU image "
                f"disabled tensorflow-tpu for 'No TPU platform found'. The PyTorch/XLA notebooks (02, 05-07) use "
                f"this TPU; for the TensorFlow ones use the 'cpu' profile here (PROFILE = \"cpu\"), or a Cloud TPU VM "
                f"with a v2-v4 TPU. If you installed it yourself: {restart}.")
        return f"TensorFlow's TPU build (tensorflow-tpu {tpu}, libtpu {installed('libtpu')}): {len(devices)} TPU devices"
    if not installed("torch-xla") or not installed("libtpu"):
        raise WrongBuildError(f"this kernel has torch_xla {installed('torch-xla') or '(none)'} without libtpu: the "
                              f"CPU build of PyTorch/XLA cannot reach the TPU. Install torch_xla[tpu], then {restart}.")
    if not probe_devices:
        return f"PyTorch/XLA's TPU build is installed (torch_xla {installed('torch-xla')}, libtpu {installed('libtpu')})"
    if tpu_devices is None:
        import torch_xla.runtime as xr

        tpu_devices = lambda: ["TPU"] if xr.device_type() == "TPU" else []  # noqa: E731
    if not list(tpu_devices()):
        raise WrongBuildError(f"torch_xla {installed('torch-xla')} with libtpu {installed('libtpu')} does not pick "
                              f"the TPU (PJRT_DEVICE={os.environ.get('PJRT_DEVICE')}): unset PJRT_DEVICE, or {restart}.")
    return f"PyTorch/XLA's TPU build (torch_xla {installed('torch-xla')}, libtpu {installed('libtpu')}): PJRT device TPU"
