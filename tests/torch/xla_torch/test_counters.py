"""The PyTorch/XLA counters count what really happened (XLA:CPU through PJRT_DEVICE=CPU)."""

import pytest

torch = pytest.importorskip("torch")
torch_xla = pytest.importorskip("torch_xla")

from tpu_helpers.xla_torch.counters import XlaCounters  # noqa: E402


def test_three_shapes_three_compilations_then_cache_hits():
    dev = torch_xla.device()
    with XlaCounters() as c:
        for n in (13, 14, 15):
            y = (torch.ones(n, device=dev) * 3).sum()  # noqa: F841 (a live tensor is what gets computed)
            torch_xla.sync()
    assert c.compilations == 3 and c.executions == 3
    with XlaCounters() as again:
        for n in (13, 14, 15):
            y = (torch.ones(n, device=dev) * 3).sum()  # noqa: F841 (a live tensor is what gets computed)
            torch_xla.sync()
    assert again.compilations == 0 and again.cache_hits == 3


def test_python_if_on_a_tensor_is_a_sync():
    dev = torch_xla.device()
    x = torch.arange(7.0, device=dev)
    torch_xla.sync()
    with XlaCounters() as c:
        if x.sum() > 3:  # bool(tensor): the value must come to the host
            x = x * 2
        torch_xla.sync()
    assert c.scalar_reads == 1 and c.syncs >= 1
    with XlaCounters() as rewritten:
        x = torch.where(x.sum() > 3, x * 2, x)
        torch_xla.sync()
    assert rewritten.scalar_reads == 0 and rewritten.syncs == 0


def test_boolean_mask_falls_back_to_cpu_nonzero():
    dev = torch_xla.device()
    x = torch.arange(11.0, device=dev)
    torch_xla.sync()
    with XlaCounters() as c:
        y = x[x > 4]
        torch_xla.sync()
    assert "aten::nonzero" in c.fallbacks, c
    assert y.shape[0] == 6


def test_update_inside_the_block_and_as_dict():
    """What banking77's RunLog reads: ``update().as_dict()`` while the block is open."""
    dev = torch_xla.device()
    with XlaCounters() as c:
        y = (torch.ones(17, device=dev) * 2).sum()  # noqa: F841 (a live tensor is what gets computed)
        torch_xla.sync()
        d = c.update().as_dict()
    assert d["executions"] == 1 and d["compilations"] + d["cache_hits"] == 1 and "_start" not in d
    assert str(c).startswith("compilations=") and "fallbacks={}" in str(c)
