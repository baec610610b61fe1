"""Installed versions versus the course's pins (requirements.txt)."""
from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

__all__ = ["read_pins", "installed_versions", "pin_mismatches", "KEY_PACKAGES"]

KEY_PACKAGES = ("tensorflow", "tf-keras", "torch", "torch-xla", "transformers", "tokenizers", "datasets",
                "accelerate", "evaluate")


def read_pins(path: str | Path) -> dict[str, str]:
    """``name==version`` lines of a requirements file, names normalised (``tf_keras`` -> ``tf-keras``)."""
    pins = {}
    for line in Path(path).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==([^\s;]+)", line)
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
    return out


def pin_mismatches(pins: dict[str, str], installed: dict[str, str | None]) -> dict[str, tuple[str, str | None]]:
    """{name: (pinned, installed)} for every pinned package installed at another version or missing."""
    return {n: (v, installed.get(n)) for n, v in pins.items() if n in installed and installed[n] != v}
