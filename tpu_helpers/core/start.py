"""The first lines of every notebook, in one place: the framework, the runtime, the profile, and the TPU build check."""
from __future__ import annotations

import os

from tpu_helpers.core import frameworks, profiles, runtime, summary

__all__ = ["start"]


def start(framework: str, profile: str | None = None, *, xla_cpu: bool = True,
          check_build: bool = True) -> tuple[runtime.Runtime, profiles.Profile]:
    """Declare ``framework`` ("tf"/"torch"), find the runtime and the size profile (the ``PROFILE`` parameter), print both.

    PyTorch off a TPU: XLA's CPU backend (``PJRT_DEVICE=CPU``, before torch_xla is imported) unless ``xla_cpu`` is
    False (a launcher that decides itself). On a TPU, ``check_build`` stops unless this kernel has the framework's
    TPU build (`frameworks.check_tpu_build`); notebooks that report instead of stopping pass False.
    """
    frameworks.use_framework(framework)
    rt = runtime.detect_runtime()
    if framework == "torch" and xla_cpu and not rt.is_tpu:
        os.environ.setdefault("PJRT_DEVICE", "CPU")
    print(rt.describe())
    if check_build:
        print(frameworks.check_tpu_build(rt, framework))
    chosen = profiles.choose_profile(profile, runtime=rt)
    print(chosen)
    summary.record("runtime", rt.kind, quiet=True)
    summary.record("profile", chosen.name, quiet=True)
    return rt, chosen
