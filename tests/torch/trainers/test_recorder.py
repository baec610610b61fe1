"""The slow-run detective as a Lightning Callback and as a Hugging Face TrainerCallback, on PyTorch/XLA's CPU
device: it names a planted pitfall and finds nothing in a healthy run."""
import pytest

pytest.importorskip("torch_xla")
L = pytest.importorskip("lightning.pytorch")


def fit(module, loader, callback, **kw):
    from tpu_helpers.trainers.xla_cpu import XLACPUAccelerator

    L.Trainer(accelerator=XLACPUAccelerator(), devices=1, callbacks=[callback], logger=False,
              enable_checkpointing=False, enable_model_summary=False, enable_progress_bar=False, **kw).fit(
        module, loader)


def loader(data, batch_size=16, padding="max_length"):
    from torch.utils.data import DataLoader
    from transformers import DataCollatorWithPadding

    tok, train = data
    collate = DataCollatorWithPadding(tok, padding=padding, max_length=32 if padding == "max_length" else None)
    return DataLoader(train, batch_size=batch_size, shuffle=True, drop_last=True, collate_fn=collate)


def test_healthy_run_has_nothing_to_report_and_epochs_are_counted(xla, data, bag_of_words):
    from tpu_helpers.xla_debug.trainer_callbacks import SlowRunDetective

    d = SlowRunDetective()
    fit(bag_of_words(len(data[0]), 77), loader(data), d, max_epochs=2, limit_train_batches=6)
    assert len(d.steps) == 12 and d.epoch_of_step == [1] * 6 + [2] * 6
    assert [e["epoch"] for e in d.epochs] == [1, 2]
    assert d.epochs[0]["shapes"] == [(16, 32)] and d.epochs[1]["compilations"] <= 1  # (graphs cached across tests)
    assert all(e["scalar_reads"] == 0 and not e["fallbacks"] for e in d.epochs)
    # the only late graph: Lightning's epoch-end reduction of the logged loss, traced into epoch 2's first step
    assert [s.index for s in d.steps[2:] if s.compilations] in ([], [6]), [s.compilations for s in d.steps]
    # inside epoch 2 (after its first step) the detective finds nothing
    from tpu_helpers.xla_debug.diagnose import diagnose_slow_run
    inside = [s for s in d.steps if d.epoch_of_step[s.index] == 2 and s.index != 6]  # as notebook 07's check cell
    assert [s.index for s in inside] == list(range(7, 12))
    assert diagnose_slow_run(inside, warmup_steps=0).problems == []


def test_logging_the_loss_is_what_compiles_at_an_epochs_first_step(xla, data, bag_of_words):
    """Notebook 07's claim: Lightning's epoch-end reduction of a logged loss is traced into the next epoch's first
    step (a graph per first-batch shape); a module that logs nothing compiles nothing after epoch 1. (The
    vocabulary sizes differ from the other tests' so that these graphs are new in this process.)"""
    from tpu_helpers.xla_debug.trainer_callbacks import SlowRunDetective

    class LogsNothing(bag_of_words):  # the notebook's module with Lightning's self.log switched off
        def log(self, *args, **kwargs):
            pass

    silent, logged = SlowRunDetective(), SlowRunDetective()
    fit(LogsNothing(len(data[0]) + 1, 77), loader(data), silent, max_epochs=3, limit_train_batches=4)
    fit(bag_of_words(len(data[0]) + 2, 77), loader(data), logged, max_epochs=3, limit_train_batches=4)
    assert [e["compilations"] for e in silent.epochs[1:]] == [0, 0]
    late = [s.index for s in logged.steps[4:] if s.compilations]
    assert late and set(late) <= {4, 8}, [s.compilations for s in logged.steps]


def test_item_every_step_is_named_a_host_sync(xla, data, bag_of_words):
    from tpu_helpers.xla_debug.trainer_callbacks import SlowRunDetective

    d = SlowRunDetective()
    fit(bag_of_words(len(data[0]), 77, read_loss_every_step=True), loader(data), d, max_steps=6)
    assert "host_sync" in d.report(warmup_steps=2)


def test_dynamic_padding_and_small_batches_are_named(xla, data, bag_of_words):
    from tpu_helpers.xla_debug.trainer_callbacks import SlowRunDetective

    d = SlowRunDetective()
    fit(bag_of_words(len(data[0]), 77), loader(data, padding="longest"), d, max_steps=8)
    assert "recompilation" in d.report(warmup_steps=2)
    small = SlowRunDetective()
    fit(bag_of_words(len(data[0]), 77), loader(data, batch_size=4), small, max_steps=5)
    # (a run this short is mostly its warm-up: the detective may add compile_time, about the run, not the loop)
    assert [k for k in small.report(warmup_steps=2).kinds if k != "compile_time"] == ["small_batch"]


def test_a_detective_that_recorded_nothing_says_so():
    from tpu_helpers.xla_debug.trainer_callbacks import SlowRunDetective

    report = SlowRunDetective().report(warmup_steps=2)
    assert report.problems == [] and "nothing recorded" in str(report)


def test_hf_step_detective_records_one_step_per_optimizer_step(xla, data, tmp_path):
    from transformers import DataCollatorWithPadding, Trainer, TrainingArguments

    from tpu_helpers.xla_debug.trainer_callbacks import HFStepDetective
    from tpu_helpers.xla_torch.lesson_cells import keep_attention_masks_on_device, tiny_bert

    tok, train = data
    keep_attention_masks_on_device()  # no host read of the padding mask (notebook 02)
    d = HFStepDetective()
    args = TrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=16, max_steps=10,
                             optim="adamw_torch", dataloader_drop_last=True, report_to="none", save_strategy="no")
    Trainer(model=tiny_bert(vocab_size=len(tok), num_labels=77), args=args, train_dataset=train, callbacks=[d],
            data_collator=DataCollatorWithPadding(tok, padding="max_length", max_length=32)).train()
    assert len(d.steps) == 10
    assert sum(s.compilations for s in d.steps[2:]) == 0
    # the Trainer reads its summed loss once, at the end; 10 steps are mostly the warm-up's compiling (compile_time)
    assert set(d.report(warmup_steps=2).kinds) <= {"compile_time"}
