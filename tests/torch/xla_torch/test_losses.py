"""Notebook 02's XLA-friendly masked loss (its cells tagged save): same value as the boolean-mask loss, one graph, no CPU fallback.

torch / torch_xla are imported inside the tests (pytest may import TensorFlow test modules in the same run).
"""


def _batches(torch, counts, seq=12, classes=5):
    """Logits/labels batches whose number of labelled positions is exactly each of `counts`."""
    g = torch.Generator().manual_seed(0)
    out = []
    for n in counts:
        logits = torch.randn(2, seq, classes, generator=g)
        labels = torch.full((2 * seq,), -100, dtype=torch.long)
        labels[torch.randperm(2 * seq, generator=g)[:n]] = torch.randint(0, classes, (n,), generator=g)
        out.append((logits, labels.reshape(2, seq)))
    return out


def test_masked_cross_entropy_equals_boolean_mask_and_ignore_index_on_cpu(xla):
    torch, _, _ = xla
    import torch.nn.functional as F

    from tpu_helpers.xla_torch.lesson_cells import boolean_mask_cross_entropy, masked_cross_entropy

    for logits, labels in _batches(torch, [3, 9, 24]):
        ours = masked_cross_entropy(logits, labels)
        assert torch.allclose(ours, boolean_mask_cross_entropy(logits, labels), atol=1e-6)
        assert torch.allclose(ours, F.cross_entropy(logits.reshape(-1, 5), labels.reshape(-1), ignore_index=-100),
                              atol=1e-6)


def test_no_labelled_position_gives_zero_not_nan(xla):
    torch, _, _ = xla
    from tpu_helpers.xla_torch.lesson_cells import masked_cross_entropy, masked_mean

    logits = torch.randn(2, 4, 3)
    labels = torch.full((2, 4), -100)
    assert masked_cross_entropy(logits, labels).item() == 0.0
    assert masked_mean(torch.ones(3), torch.zeros(3, dtype=torch.bool)).item() == 0.0
    assert masked_mean(torch.tensor([1.0, 2.0, 6.0]), torch.tensor([True, False, True])).item() == 3.5


def test_on_xla_boolean_mask_falls_back_and_recompiles_masked_mean_compiles_once(xla):
    torch, torch_xla, _ = xla
    from tpu_helpers.xla_torch.counters import XlaCounters
    from tpu_helpers.xla_torch.lesson_cells import boolean_mask_cross_entropy, masked_cross_entropy

    dev = torch_xla.device()
    counts = [4, 7, 11, 16]  # four distinct numbers of labelled positions, same batch shape
    batches = [(lg.to(dev), lb.to(dev)) for lg, lb in _batches(torch, counts, seq=13, classes=7)]
    torch_xla.sync()

    with XlaCounters() as masked:
        masked_losses = []
        for logits, labels in batches:
            masked_losses.append(masked_cross_entropy(logits, labels))
            torch_xla.sync()
    assert masked.compilations == 1, masked
    assert masked.fallbacks == {} and masked.syncs == 0 and masked.scalar_reads == 0, masked

    with XlaCounters() as boolean:
        boolean_losses = []
        for logits, labels in batches:
            boolean_losses.append(boolean_mask_cross_entropy(logits, labels))
            torch_xla.sync()
    assert boolean.fallbacks.get("aten::nonzero", 0) >= len(counts), boolean
    assert boolean.compilations >= len(counts), boolean  # one new graph per distinct count, at least
    assert boolean.syncs >= len(counts), boolean  # the mask travels to the host for nonzero
    for a, b in zip(masked_losses, boolean_losses):
        assert torch.allclose(a.cpu(), b.cpu(), atol=1e-5)
