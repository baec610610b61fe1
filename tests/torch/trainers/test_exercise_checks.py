"""Notebook 07's exercise checks pass on the reference answers and fail, naming the problem, on typical wrong ones.
They train on PyTorch/XLA's CPU device."""
import pytest

pytest.importorskip("torch_xla")
pytest.importorskip("lightning")


def check_step(step, data, bag_of_words):
    from transformers import DataCollatorWithPadding

    from tpu_helpers.trainers import exercise_checks
    from tpu_helpers.trainers.xla_cpu import XLACPUAccelerator

    tok, train = data
    return exercise_checks.check_training_step(step, bag_of_words, train,
                                      DataCollatorWithPadding(tok, padding="max_length", max_length=32),
                                      vocab_size=len(tok), num_labels=77, accelerator=XLACPUAccelerator(), steps=5)


def _loss(self, batch):
    import torch.nn.functional as F

    mask = batch["attention_mask"].unsqueeze(-1).float()
    return F.cross_entropy(self.head((self.embed(batch["input_ids"]) * mask).sum(1) / mask.sum(1)), batch["labels"])


def test_training_step_passes_on_the_solution(xla, data, bag_of_words):
    from tpu_helpers.trainers import solutions

    result = check_step(solutions.training_step, data, bag_of_words)
    assert result.passed, result.message


def test_training_step_reading_the_loss_is_named(xla, data, bag_of_words):
    def step(self, batch, batch_idx):
        loss = _loss(self, batch)
        self.log("train_loss", loss.item(), on_step=False, on_epoch=True)
        return loss

    result = check_step(step, data, bag_of_words)
    assert not result.passed and "reads a value on the host" in result.message


def test_training_step_logging_only_the_last_step_is_named(xla, data, bag_of_words):
    def step(self, batch, batch_idx):
        loss = _loss(self, batch)
        self.log("train_loss", loss, on_step=True, on_epoch=False)
        return loss

    result = check_step(step, data, bag_of_words)
    assert not result.passed and "on_epoch=True" in result.message


def test_training_step_skeleton_is_not_attempted(xla, data, bag_of_words):
    def step(self, batch, batch_idx):
        raise NotImplementedError

    result = check_step(step, data, bag_of_words)
    assert not result.passed and not result.attempted


# ------------------------------------------------------------------------------- exercise 2
def check_setup(setup, data):
    from tpu_helpers.trainers import exercise_checks

    tok, train = data
    return exercise_checks.check_static_trainer_setup(setup, tok, train, max_length=32, batch_size=24, num_labels=77, steps=4)


def test_static_setup_passes_on_the_solution(xla, data):
    from tpu_helpers.trainers import solutions

    result = check_setup(solutions.static_trainer_setup, data)
    assert result.passed, result.message


def _args(out, batch_size, **kw):
    from transformers import TrainingArguments

    return TrainingArguments(output_dir=out, per_device_train_batch_size=batch_size, report_to="none",
                             save_strategy="no", **kw)


def test_dynamic_padding_is_named(xla, data):
    from transformers import DataCollatorWithPadding

    def setup(tok, max_length, batch_size, out):
        return (_args(out, batch_size, train_sampling_strategy="group_by_length", dataloader_drop_last=True, optim="adamw_torch"),
                DataCollatorWithPadding(tok))

    result = check_setup(setup, data)
    assert not result.passed and "padding='max_length'" in result.message


def test_a_short_last_batch_is_named(xla, data):
    from transformers import DataCollatorWithPadding

    def setup(tok, max_length, batch_size, out):  # 308 rows in batches of 24: the last one has 20
        return (_args(out, batch_size, optim="adamw_torch"),
                DataCollatorWithPadding(tok, padding="max_length", max_length=max_length))

    result = check_setup(setup, data)
    assert not result.passed and "dataloader_drop_last=True" in result.message


def test_the_fused_default_optimizer_is_named(xla, data):
    from transformers import DataCollatorWithPadding

    def setup(tok, max_length, batch_size, out):
        return (_args(out, batch_size, dataloader_drop_last=True),
                DataCollatorWithPadding(tok, padding="max_length", max_length=max_length))

    result = check_setup(setup, data)
    assert not result.passed and "adamw_torch" in result.message
