"""Notebook 02's `keep_attention_masks_on_device` (a cell tagged save): transformers 5 reads one scalar per BERT
forward pass to decide whether to skip the mask; once registered, none, with the same logits, padded or not."""


def _forwards(torch, torch_xla, device, impl, padded):
    from tpu_helpers.xla_torch.counters import XlaCounters
    from tpu_helpers.xla_torch.lesson_cells import tiny_bert

    model = tiny_bert(impl, vocab_size=100).to(device)
    mask = torch.ones(2, 12, dtype=torch.long)
    if padded:
        mask[:, 8:] = 0
    batch = {"input_ids": torch.randint(5, 100, (2, 12), generator=torch.Generator().manual_seed(0)).to(device),
             "attention_mask": mask.to(device)}
    torch_xla.sync()
    with XlaCounters() as c, torch.no_grad():
        for _ in range(2):
            logits = model(**batch).logits
            torch_xla.sync()
    return c.scalar_reads, logits.cpu()


def test_registered_masks_read_nothing_on_the_host_and_change_no_logit(xla):
    torch, torch_xla, device = xla
    from transformers import AttentionMaskInterface
    from transformers.masking_utils import eager_mask, sdpa_mask

    from tpu_helpers.xla_torch.lesson_cells import keep_attention_masks_on_device

    AttentionMaskInterface.register("sdpa", sdpa_mask)  # transformers' own, whatever ran before in this process
    AttentionMaskInterface.register("eager", eager_mask)
    cases = [(impl, padded) for impl in ("sdpa", "eager") for padded in (False, True)]
    before = {case: _forwards(torch, torch_xla, device, *case) for case in cases}
    keep_attention_masks_on_device()
    after = {case: _forwards(torch, torch_xla, device, *case) for case in cases}
    assert [before[c][0] for c in cases] == [2, 2, 2, 2], "transformers no longer reads the mask: update notebook 02"
    assert [after[c][0] for c in cases] == [0, 0, 0, 0]
    for case in cases:
        assert torch.allclose(before[case][1], after[case][1], atol=1e-5), case
