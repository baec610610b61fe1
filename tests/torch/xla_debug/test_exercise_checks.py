"""Every exercise check of notebook 06 (PyTorch/XLA under the hood) passes on the reference solution and fails,
naming the problem, on a typical wrong answer. Runs on PyTorch/XLA's CPU device."""

import pytest

# ------------------------------------------------------------------------------------ notebook 06
SIZES06 = dict(batch_size=8, vocab_size=1000, num_labels=4)  # the notebook's VOCAB and LABELS (its make_batch)


@pytest.fixture(scope="module")
def make_model(xla):
    """A tiny classifier with transformers' calling convention (input_ids, attention_mask, labels -> .logits,
    .loss): it compiles in a fraction of a second, where even a 1-layer BERT training graph takes seconds."""
    torch = xla[0]
    from types import SimpleNamespace

    class TinyClassifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(SIZES06["vocab_size"], 16)
            self.dropout = torch.nn.Dropout(0.1)
            self.head = torch.nn.Linear(16, SIZES06["num_labels"])

        def forward(self, input_ids, attention_mask, labels=None):
            mask = attention_mask[..., None].float()
            pooled = (self.embed(input_ids) * mask).sum(1) / mask.sum(1).clamp(min=1)
            logits = self.head(self.dropout(pooled))
            loss = None if labels is None else torch.nn.functional.cross_entropy(logits, labels)
            return SimpleNamespace(logits=logits, loss=loss)

    return TinyClassifier


def trainable(make_model):
    import torch
    import torch_xla

    model = make_model().to(torch_xla.device())
    return model, torch.optim.AdamW(model.parameters(), lr=1e-3)


def slow_collate(seqs, labels, max_length):  # the notebook's skeleton: pads to the longest sequence of the batch
    torch = pytest.importorskip("torch")
    input_ids = torch.nn.utils.rnn.pad_sequence(seqs, batch_first=True)
    return {"input_ids": input_ids, "attention_mask": (input_ids != 0).long(), "labels": labels}


def slow_train_step(model, optimizer, batch):  # the notebook's skeleton: reads the loss every step
    from tpu_helpers.xla_debug import solutions as solution

    loss = solution.train_step(model, optimizer, batch)
    print(f"loss {loss.item():.3f}")
    return loss


def test_fast_loop_passes_on_the_solution(make_model):
    from tpu_helpers.xla_debug import exercise_checks as nb06
    from tpu_helpers.xla_debug import solutions as solution

    result = nb06.check_fast_loop(solution.collate, solution.train_step, *trainable(make_model), max_length=16,
                                  **SIZES06)
    assert result.passed, result.message
    assert "the detective finds nothing" in result.message and "(8, 16)" in result.message


def test_fast_loop_names_the_loss_read_every_step(make_model):
    from tpu_helpers.xla_debug import exercise_checks as nb06
    from tpu_helpers.xla_debug import solutions as solution

    result = nb06.check_fast_loop(solution.collate, slow_train_step, *trainable(make_model), max_length=16,
                                  **SIZES06)
    assert not result.passed
    assert "still reads values on the host: 6 scalar read(s)" in result.message
    assert "in 6 of 6 steps" in result.message


def test_fast_loop_names_the_changing_shapes(make_model):
    from tpu_helpers.xla_debug import exercise_checks as nb06
    from tpu_helpers.xla_debug import solutions as solution

    result = nb06.check_fast_loop(slow_collate, solution.train_step, *trainable(make_model), max_length=16,
                                  **SIZES06)
    assert not result.passed
    assert "your batches still change shape: input_ids took 4 shapes" in result.message
    assert "Pad every batch to max_length=16" in result.message


def test_fast_loop_collate_that_truncates_loses_tokens(make_model):
    from tpu_helpers.xla_debug import exercise_checks as nb06

    def truncating(seqs, labels, max_length):
        return slow_collate([s[:8] for s in seqs], labels, max_length)

    result = nb06.check_fast_loop(truncating, slow_train_step, *trainable(make_model), max_length=16, **SIZES06)
    assert not result.passed and "tokens" in result.message


def test_resume_passes_on_the_solution(make_model):
    from tpu_helpers.xla_debug import exercise_checks as nb06
    from tpu_helpers.xla_debug import solutions as solution

    result = nb06.check_resume(solution.save_checkpoint, solution.load_checkpoint, make_model, seq_len=16, batch_size=8)
    assert result.passed, result.message
    assert "restored step 2" in result.message


def test_resume_without_the_optimizer_state_diverges(make_model):
    import torch
    import torch_xla.core.xla_model as xm

    from tpu_helpers.xla_debug import exercise_checks as nb06

    def save_model_only(path, model, optimizer, step):
        xm.save({"model": model.state_dict(), "step": step}, path)

    def load_model_only(path, model, optimizer):
        state = torch.load(path, weights_only=True)
        model.load_state_dict(state["model"])
        return state["step"]

    result = nb06.check_resume(save_model_only, load_model_only, make_model, seq_len=16, batch_size=8)
    assert not result.passed
    assert "the optimizer's state was not restored" in result.message


def test_resume_with_torch_save_of_xla_tensors_needs_torch_xla_to_load(make_model):
    import torch

    from tpu_helpers.xla_debug import exercise_checks as nb06
    from tpu_helpers.xla_debug import solutions as solution

    def torch_save(path, model, optimizer, step):
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, path)

    result = nb06.check_resume(torch_save, solution.load_checkpoint, make_model, seq_len=16, batch_size=8)
    assert not result.passed
    assert "come back on the XLA device" in result.message and "xm.save" in result.message


def test_fast_loop_without_a_sync_never_runs_the_step(make_model):
    import torch.nn.functional as F

    from tpu_helpers.xla_debug import exercise_checks as nb06
    from tpu_helpers.xla_debug import solutions as solution

    def lazy_step(model, optimizer, batch):  # no torch_xla.sync(): the steps pile up in one lazy graph
        out = model(input_ids=batch["input_ids"].to(next(model.parameters()).device),
                    attention_mask=batch["attention_mask"].to(next(model.parameters()).device))
        loss = F.cross_entropy(out.logits, batch["labels"].to(out.logits.device))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    result = nb06.check_fast_loop(solution.collate, lazy_step, *trainable(make_model), max_length=16, **SIZES06)
    assert not result.passed and "torch_xla.sync()" in result.message
