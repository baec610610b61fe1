"""Notebook 06's training loop (its cells tagged save): one graph compiled in the warm-up, then cache hits only."""
from types import SimpleNamespace


def test_the_lessons_train_loop_compiles_in_the_warm_up_then_hits_the_cache(xla):
    torch, torch_xla, device = xla
    from tpu_helpers.xla_debug.diagnose import StepRecorder, diagnose_slow_run
    from tpu_helpers.xla_debug.lesson_cells import LABELS, VOCAB, make_batch, train

    class Tiny(torch.nn.Module):  # transformers' calling convention, compiled in a fraction of a second
        def __init__(self):
            super().__init__()
            self.embed, self.head = torch.nn.Embedding(VOCAB, 8), torch.nn.Linear(8, LABELS)

        def forward(self, input_ids, attention_mask, labels):
            logits = self.head((self.embed(input_ids) * attention_mask[..., None]).mean(1))
            return SimpleNamespace(logits=logits, loss=torch.nn.functional.cross_entropy(logits, labels))

    torch.manual_seed(0)
    model = Tiny().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    before = model.head.weight.detach().cpu().clone()
    g = torch.Generator().manual_seed(0)
    with StepRecorder() as run:
        loss = train(model, optimizer, (make_batch(8, 11, g) for _ in range(5)), run)
    assert [s.shapes["input_ids"] for s in run.steps] == [(8, 11)] * 5
    assert sum(s.compilations for s in run.steps[2:]) == 0 and all(s.cache_hits for s in run.steps[2:])
    report = diagnose_slow_run(run)
    assert "recompilation" not in report and "host_sync" not in report and "cpu_fallback" not in report, str(report)
    assert torch.isfinite(loss.cpu()) and not torch.equal(before, model.head.weight.detach().cpu())
