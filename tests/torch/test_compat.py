"""tpu_helpers._compat against the pinned accelerate and torch_xla: each test fails when an upgrade moves or
changes the private name the course relies on."""

import pytest

from tpu_helpers import _compat


def test_accelerate_caches_whether_it_found_torch_xla():
    pytest.importorskip("torch_xla")
    imports = pytest.importorskip("accelerate.utils.imports")
    assert hasattr(imports, "_torch_xla_available")
    assert _compat.accelerate_found_torch_xla(imports) == bool(imports._torch_xla_available)


def test_accelerator_state_is_seen_and_reset():
    state = pytest.importorskip("accelerate.state")
    from accelerate import Accelerator

    _compat.reset_accelerate_state()
    assert not _compat.accelerate_state_exists(state)
    Accelerator(cpu=True)
    assert _compat.accelerate_state_exists(state)
    _compat.reset_accelerate_state()
    assert not _compat.accelerate_state_exists(state)


def test_xla_runtime_is_initialized_once_a_tensor_is_on_the_device():
    torch_xla = pytest.importorskip("torch_xla")
    import torch

    torch.ones(2, device=torch_xla.device()).sum().item()
    assert _compat.xla_runtime_is_initialized(torch_xla) is True
    assert _compat.xla_runtime_is_initialized(object()) is False  # no _XLAC: never started
