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

__all__ = ["FrameworkClashError", "use_framework", "loaded_frameworks"]

_OTHER = {"tf": ("torch_xla", "PyTorch/XLA"), "torch": ("tensorflow", "TensorFlow")}
_NAMES = {"tf": "TensorFlow", "torch": "PyTorch/XLA"}


class FrameworkClashError(RuntimeError):
    """The other framework is already imported: only a kernel restart fixes it."""


def loaded_frameworks(modules: dict | None = None) -> list[str]:
    """Which of the two stacks are imported in this process ("tf", "torch")."""
    modules = sys.modules if modules is None else modules
    found = []
    if "tensorflow" in modules:
        found.append("tf")
    if "torch_xla" in modules:
        found.append("torch")
    return found


def use_framework(name: str, *, environ: MutableMapping[str, str] | None = None,
                  modules: dict | None = None) -> str:
    """Declare this notebook's framework ("tf" or "torch") before importing transformers.

    Sets ``USE_TF``/``USE_TORCH`` so transformers imports only that backend, and raises
    `FrameworkClashError` if the other one is already loaded (restart the kernel to fix it).
    """
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
    if "transformers" in modules:
        stale = {k: v for k, v in want.items() if environ.get(k, "") not in (v, "")}
        if stale:
            raise FrameworkClashError(
                "transformers was imported before use_framework() with "
                + ", ".join(f"{k}={environ.get(k)}" for k in stale)
                + f"; it will not load {_NAMES[key]} models now. Restart the kernel and call "
                  f"use_framework({key!r}) before importing transformers.")
    environ.update(want)
    if key == "tf":
        environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TF's C++ start-up chatter out of the notebook
    return key
