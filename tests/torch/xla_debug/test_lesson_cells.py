"""Notebook 06's training loop (its cells tagged save): one graph compiled in the warm-up, then cache hits only."""
from types import SimpleNamespace


def test_the_lessons_train_loop_compiles_in_the_warm_up_then_hits_the_cache(xla):
    torch, torch_xla, device = xla
    from tpu_helpers.xla_debug.diagnose import StepRecorder
    from tpu_helpers.xla_debug.lesson_cells import LABELS, VOCAB, diagnose_slow_run, make_batch, train

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


def tiny_classifier(torch, vocab, labels):
    """A bag of embeddings with transformers' calling convention (logits, and the loss when labels are given)."""

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.head = torch.nn.Embedding(vocab, 8), torch.nn.Linear(8, labels)

        def forward(self, input_ids, attention_mask, labels=None):
            logits = self.head((self.embed(input_ids) * attention_mask[..., None]).mean(1))
            loss = None if labels is None else torch.nn.functional.cross_entropy(logits, labels)
            return SimpleNamespace(logits=logits, loss=loss)

    return Tiny()


def test_train_reads_the_loss_every_n_steps_only_and_takes_a_loss_function(xla, capsys):
    torch, torch_xla, device = xla
    from tpu_helpers.xla_debug.lesson_cells import LABELS, VOCAB, make_batch, train

    model = tiny_classifier(torch, VOCAB, LABELS).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    g, shapes = torch.Generator().manual_seed(1), []

    def loss_fn(logits, labels):
        shapes.append((tuple(logits.shape), tuple(labels.shape)))
        return torch.nn.functional.cross_entropy(logits, labels)

    train(model, optimizer, [make_batch(4, 6, g) for _ in range(5)], log_every=2, loss_fn=loss_fn)
    assert shapes == [((4, LABELS), (4,))] * 5
    assert [line.split(":")[0] for line in capsys.readouterr().out.splitlines()] == ["step 0", "step 2", "step 4"]


def test_an_epoch_through_mp_device_loader_then_the_weights_load_on_the_cpu(xla, tmp_path):
    torch, torch_xla, device = xla
    from tpu_helpers.xla_debug.lesson_cells import (
        LABELS,
        VOCAB,
        load_on_cpu,
        make_batch,
        make_loader,
        save_for_cpu,
        train_epoch,
    )

    torch.manual_seed(0)
    model = tiny_classifier(torch, VOCAB, LABELS).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(0)
    loader = make_loader([make_batch(4, 7, g) for _ in range(3)], batch_size=5)  # 12 rows: 2 full batches, 2 dropped
    seen = []

    class Where:
        def step(self, batch):
            seen.append((batch["input_ids"].device.type, tuple(batch["input_ids"].shape)))

    before = model.head.weight.detach().cpu().clone()
    loss = train_epoch(model, optimizer, loader, Where())
    assert seen == [("xla", (5, 7))] * 2 and torch.isfinite(loss.cpu())
    save_for_cpu(model, tmp_path / "model.pt")
    cpu_model = load_on_cpu(tiny_classifier(torch, VOCAB, LABELS), tmp_path / "model.pt")
    trained = {k: v.cpu() for k, v in model.state_dict().items()}
    assert not torch.equal(before, trained["head.weight"])
    assert all(torch.equal(v, trained[k]) for k, v in cpu_model.state_dict().items())


def test_recorded_run_records_only_the_steps_after_the_warm_up(xla):
    torch, torch_xla, device = xla
    from tpu_helpers.xla_debug.diagnose import StepRecorder
    from tpu_helpers.xla_debug.lesson_cells import LABELS, VOCAB, diagnose_slow_run, make_batch, recorded_run

    model = tiny_classifier(torch, VOCAB, LABELS).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(0)
    run = recorded_run(StepRecorder(), model, optimizer, [make_batch(8, 13, g) for _ in range(5)])
    assert [s.index for s in run.steps] == [0, 1, 2] and sum(s.compilations for s in run.steps) == 0
    assert diagnose_slow_run(run, warmup_steps=0).kinds == []
    cold = recorded_run(StepRecorder(), model, optimizer, [make_batch(8, 13, g) for _ in range(2)], warmup_steps=0)
    assert [s.index for s in cold.steps] == [0, 1]
