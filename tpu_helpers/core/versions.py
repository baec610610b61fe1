"""Installed versions versus the course's pins (requirements.txt, as the installed wheel recorded them).

The checkout's requirements file itself is read by ``tools/install_plan.py`` (it runs before anything is installed).
"""
from __future__ import annotations

import re
from importlib import metadata

__all__ = ["course_pins", "installed_versions", "pin_mismatches", "KEY_PACKAGES"]

KEY_PACKAGES = ("tensorflow", "tf-keras", "torch", "torch-xla", "transformers", "tokenizers", "datasets",
                "accelerate", "scikit-learn")


def course_pins(distribution: str = "tpu-course") -> dict[str, str]:
    """The course's pins as the installed ``tpu-course`` wheel recorded them: its ``[course]`` extra, which
    pyproject.toml fills from requirements.txt at build time. Works wherever the package is installed (Colab,
    Kaggle, a TPU VM), with no repository file."""
    pins = {}
    for req in metadata.requires(distribution) or []:
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*==\s*([^\s;]+)\s*;\s*extra\s*==\s*['\"]course['\"]", req)
        if m:
            pins[m.group(1).lower().replace("_", "-")] = m.group(3)
    return pins


def installed_versions(names=KEY_PACKAGES) -> dict[str, str | None]:
    """Version of each distribution, or None when it is not installed (no import happens)."""
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    if out.get("tensorflow") is None and "tensorflow" in names:  # a TPU runtime: the TPU build stands for it
        try:
            out["tensorflow"] = metadata.version("tensorflow-tpu")
        except metadata.PackageNotFoundError:
            pass
    return out


def pin_mismatches(pins: dict[str, str], installed: dict[str, str | None]) -> dict[str, tuple[str, str | None]]:
    """{name: (pinned, installed)} for every pinned package installed at another version.

    A package that is not installed is left out (a TensorFlow runtime on Colab has no torch_xla), and on a TPU
    ``tensorflow-tpu`` stands for ``tensorflow``: pass its version as ``installed["tensorflow"]``."""
    return {n: (v, installed.get(n)) for n, v in pins.items() if installed.get(n) is not None and installed[n] != v}
