"""Every exercise check of the PyTorch/XLA notebooks (02, 06) passes on the reference solution and fails, naming
the problem, on a typical wrong answer. torch / torch_xla are imported inside the tests (pytest may also import
TensorFlow test modules)."""
import os

import pytest

os.environ.setdefault("PJRT_DEVICE", "CPU")


@pytest.fixture(scope="module")
def xla():
    torch = pytest.importorskip("torch")
    torch_xla = pytest.importorskip("torch_xla")
    return torch, torch_xla, torch_xla.device()


# ------------------------------------------------------------------------------------ notebook 02, rule 1
def test_clip_by_norm_passes_on_the_solution(xla):
    from tpu_helpers.checks import nb02
    from tpu_helpers.solutions import nb02 as solution

    result = nb02.check_clip_by_norm(solution.clip_by_norm)
    assert result.passed, result.message
    assert "no host reads" in result.message


def test_clip_by_norm_with_a_python_if_is_a_host_sync(xla):
    from tpu_helpers.checks import nb02

    result = nb02.check_clip_by_norm(nb02.clip_by_norm_with_if)
    assert not result.passed and result.attempted
    assert "still reads a value on the host: 5 scalar read(s)" in result.message
    assert "torch.where" in result.message


def test_clip_by_norm_blending_with_an_indicator_gives_nan_on_a_zero_update(xla):
    from tpu_helpers.checks import nb02

    def blended(update, max_norm=1.0):
        norm = update.norm()
        big = (norm > max_norm).to(update.dtype)
        return big * (update * (max_norm / norm)) + (1 - big) * update

    result = nb02.check_clip_by_norm(blended)
    assert not result.passed
    assert "all-zero update" in result.message and "NaN" in result.message


def test_a_skeleton_is_not_attempted(xla):
    from tpu_helpers.checks import nb02

    def skeleton(update, max_norm=1.0):
        raise NotImplementedError  # YOUR ANSWER

    result = nb02.check_clip_by_norm(skeleton)
    assert not result.passed and not result.attempted


# ------------------------------------------------------------------------------------ notebook 02, rule 2
def test_token_accuracy_passes_on_the_solution(xla):
    from tpu_helpers.checks import nb02
    from tpu_helpers.solutions import nb02 as solution

    result = nb02.check_token_accuracy(solution.token_accuracy)
    assert result.passed, result.message
    assert "one graph for 4 batches" in result.message


def test_token_accuracy_with_boolean_indexing_falls_back_and_recompiles(xla):
    from tpu_helpers.checks import nb02

    def boolean_indexing(logits, labels):
        keep = labels != -100
        return (logits.argmax(-1)[keep] == labels[keep]).float().mean()

    result = nb02.check_token_accuracy(boolean_indexing)
    assert not result.passed
    assert "still uses boolean indexing" in result.message and "aten::nonzero" in result.message
    assert "for 4 batches of the same shape" in result.message


def test_token_accuracy_over_all_positions_counts_the_padding(xla):
    from tpu_helpers.checks import nb02

    def everywhere(logits, labels):
        return (logits.argmax(-1) == labels).float().mean()

    result = nb02.check_token_accuracy(everywhere)
    assert not result.passed
    assert "padding included" in result.message


# ------------------------------------------------------------------------------------ notebook 02, rule 3
# batches of 4 whose longest lengths are 17, 20, 23, 30, 45: within 2 graphs, 24 pads less than 16, 32, 48 or 64
LENGTHS = [17, 13, 15, 10, 20, 19, 18, 16, 23, 22, 20, 19, 30, 25, 28, 27, 45, 40, 33, 38]


@pytest.fixture(scope="module")
def forward(xla):
    torch, torch_xla, device = xla
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(16, 8), torch.nn.Linear(8, 2)).to(device)

    @torch.no_grad()
    def run(batch):
        ids, mask = batch["input_ids"].to(device), batch["attention_mask"].to(device)
        out = (model(ids) * mask[..., None]).sum(1)
        torch_xla.sync()
        return out

    return run


def test_pad_multiple_passes_on_the_solution(forward):
    from tpu_helpers.checks import nb02
    from tpu_helpers.solutions import nb02 as solution

    assert solution.pick_pad_multiple(LENGTHS, 4, 2) == 24  # 16 fits 2 graphs too, but pads more
    result = nb02.check_pad_multiple(solution.pick_pad_multiple, LENGTHS, 4, 2, forward)
    assert result.passed, result.message
    assert "pad_to_multiple_of=24: 2 padded length(s) [24, 48]" in result.message


def test_pad_multiple_too_small_is_over_the_graph_budget(forward):
    from tpu_helpers.checks import nb02

    result = nb02.check_pad_multiple(lambda lengths, batch_size, max_graphs: 8, LENGTHS, 4, 2, forward)
    assert not result.passed
    assert "3 different padded lengths [24, 32, 48]" in result.message and "budget of 2" in result.message


def test_pad_multiple_that_fits_but_pads_more_names_the_better_one(forward):
    from tpu_helpers.checks import nb02

    for wrong in (16, 32, 48, 64):
        result = nb02.check_pad_multiple(lambda lengths, batch_size, max_graphs: wrong, LENGTHS, 4, 2, forward)
        assert not result.passed
        assert "pad_to_multiple_of=24 does too" in result.message and "less padding" in result.message


def test_pad_multiple_must_be_a_multiple_of_8(forward):
    from tpu_helpers.checks import nb02

    result = nb02.check_pad_multiple(lambda lengths, batch_size, max_graphs: 20, LENGTHS, 4, 2, forward)
    assert not result.passed and "not a positive multiple of 8" in result.message


# ------------------------------------------------------------------------------------ notebook 06
SIZES06 = dict(batch_size=8, vocab_size=100, num_labels=3)


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
    from tpu_helpers.solutions import nb06 as solution

    loss = solution.train_step(model, optimizer, batch)
    print(f"loss {loss.item():.3f}")
    return loss


def test_fast_loop_passes_on_the_solution(make_model):
    from tpu_helpers.checks import nb06
    from tpu_helpers.solutions import nb06 as solution

    result = nb06.check_fast_loop(solution.collate, solution.train_step, *trainable(make_model), max_length=16,
                                  **SIZES06)
    assert result.passed, result.message
    assert "the detective finds nothing" in result.message and "(8, 16)" in result.message


def test_fast_loop_names_the_loss_read_every_step(make_model):
    from tpu_helpers.checks import nb06
    from tpu_helpers.solutions import nb06 as solution

    result = nb06.check_fast_loop(solution.collate, slow_train_step, *trainable(make_model), max_length=16,
                                  **SIZES06)
    assert not result.passed
    assert "1 problem(s)" in result.message and "still reads values on the host: 6 scalar read(s)" in result.message
    assert "in 6 of 6 steps" in result.message


def test_fast_loop_names_the_changing_shapes(make_model):
    from tpu_helpers.checks import nb06
    from tpu_helpers.solutions import nb06 as solution

    result = nb06.check_fast_loop(slow_collate, solution.train_step, *trainable(make_model), max_length=16,
                                  **SIZES06)
    assert not result.passed
    assert "your batches still change shape: input_ids took 4 shapes" in result.message
    assert "Pad every batch to max_length=16" in result.message


def test_fast_loop_collate_that_truncates_loses_tokens(make_model):
    from tpu_helpers.checks import nb06

    def truncating(seqs, labels, max_length):
        return slow_collate([s[:8] for s in seqs], labels, max_length)

    result = nb06.check_fast_loop(truncating, slow_train_step, *trainable(make_model), max_length=16, **SIZES06)
    assert not result.passed and "tokens" in result.message


def test_resume_passes_on_the_solution(make_model):
    from tpu_helpers.checks import nb06
    from tpu_helpers.solutions import nb06 as solution

    result = nb06.check_resume(solution.save_checkpoint, solution.load_checkpoint, make_model, seq_len=16, **SIZES06)
    assert result.passed, result.message
    assert "restored step 2" in result.message


def test_resume_without_the_optimizer_state_diverges(make_model):
    import torch
    import torch_xla.core.xla_model as xm

    from tpu_helpers.checks import nb06

    def save_model_only(path, model, optimizer, step):
        xm.save({"model": model.state_dict(), "step": step}, path)

    def load_model_only(path, model, optimizer):
        state = torch.load(path, weights_only=True)
        model.load_state_dict(state["model"])
        return state["step"]

    result = nb06.check_resume(save_model_only, load_model_only, make_model, seq_len=16, **SIZES06)
    assert not result.passed
    assert "the optimizer's state was not restored" in result.message


def test_resume_with_torch_save_of_xla_tensors_needs_torch_xla_to_load(make_model):
    import torch

    from tpu_helpers.checks import nb06
    from tpu_helpers.solutions import nb06 as solution

    def torch_save(path, model, optimizer, step):
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, path)

    result = nb06.check_resume(torch_save, solution.load_checkpoint, make_model, seq_len=16, **SIZES06)
    assert not result.passed
    assert "come back on the XLA device" in result.message and "xm.save" in result.message


def test_fast_loop_without_a_sync_never_runs_the_step(make_model):
    import torch.nn.functional as F

    from tpu_helpers.checks import nb06
    from tpu_helpers.solutions import nb06 as solution

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


def test_an_answer_that_raises_is_reported_in_one_line(xla):
    from tpu_helpers.checks import nb02

    result = nb02.check_token_accuracy(lambda logits, labels: logits.argmax(-1) == labels.float().mean(dim=5))
    assert not result.passed and result.attempted
    assert result.message.startswith("token_accuracy(logits, labels) raised RuntimeError: Value out of range")
