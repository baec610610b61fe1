"""Notebook 07's IntentClassifier (its cell tagged ``save``) on a v5e-8's schedule (learning rate 1e-4, so that the
last steps make ``1 - lr * wd`` 1.0 in float32; 3 epochs of 38 steps, 10 % warm-up, torch's AdamW weight decay 0.01)
with a tiny BERT on XLA:CPU, one device,
the slow-run detective watching, in a process of its own (the switches it tests are global to a process). Prints
one JSON line: the steps that compiled after epoch 1, each epoch's first step, and the steps whose ``1 - lr * wd``
is 1.0 in float32.

    python schedule_run.py course          # the module as the notebook has it (AdamW capturable, lr on the device)
    python schedule_run.py float-lr        # the control: AdamW with a float learning rate (torch's default)
"""
from __future__ import annotations

import json
import os
import sys

LR, EPOCHS, PER_LABEL, BATCH, MAX_LENGTH = 1e-4, 3, 4, 8, 16  # 308 rows / 8 = 38 steps per epoch


def float_lr_optimizers(self):
    """The control: the notebook's optimizer and schedule with torch's defaults (a float learning rate)."""
    import torch
    from transformers import get_linear_schedule_with_warmup

    optimizer = torch.optim.AdamW(self.parameters(), lr=self.learning_rate)
    total = self.trainer.estimated_stepping_batches
    schedule = get_linear_schedule_with_warmup(optimizer, int(0.1 * total), total)
    return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}


def main(mode: str) -> None:
    os.environ.setdefault("PJRT_DEVICE", "CPU")
    from tpu_helpers.core.frameworks import use_framework

    use_framework("torch")
    import lightning.pytorch as L
    import numpy as np
    from torch.utils.data import DataLoader
    from transformers import DataCollatorWithPadding

    from tpu_helpers.banking77 import dataset
    from tpu_helpers.banking77.lesson_cells import tokenize
    from tpu_helpers.trainers import lesson_cells
    from tpu_helpers.trainers.xla_cpu import XLACPUAccelerator, quiet_lightning
    from tpu_helpers.xla_debug.trainer_callbacks import SlowRunDetective

    quiet_lightning()
    if mode == "float-lr":
        lesson_cells.IntentClassifier.configure_optimizers = float_lr_optimizers
    elif mode != "course":
        raise SystemExit(f"mode {mode!r}: 'course' or 'float-lr'")
    data = dataset.load_banking77("synthetic", n_train_per_label=PER_LABEL, n_test_per_label=1, seed=0)
    tokenizer = dataset.load_tokenizer("tiny", data.dataset["train"]["text"])
    enc = tokenize(data.dataset, tokenizer, MAX_LENGTH)
    train = enc["train"].select_columns(["input_ids", "attention_mask", "labels"])
    collate = DataCollatorWithPadding(tokenizer, padding="max_length", max_length=MAX_LENGTH)
    loader = DataLoader(train, batch_size=BATCH, shuffle=True, drop_last=True, collate_fn=collate)
    model = dataset.make_model("tiny", data, vocab_size=len(tokenizer), max_length=MAX_LENGTH, hidden_size=16,
                               layers=1, heads=1, seed=0)
    L.seed_everything(0, verbose=False)
    module = lesson_cells.IntentClassifier(model, LR)
    module.on_train_epoch_start = lambda: None  # a plain loader: no bucket sampler to advance
    detective = SlowRunDetective()
    L.Trainer(accelerator=XLACPUAccelerator(), devices=1, max_epochs=EPOCHS, callbacks=[detective], logger=False,
              enable_checkpointing=False, enable_model_summary=False, enable_progress_bar=False).fit(module, loader)
    steps = len(detective.steps)
    warmup = int(0.1 * steps)
    i = np.arange(steps, dtype=np.float64)
    lrs = LR * np.where(i < warmup, i / max(1, warmup), (steps - i) / (steps - warmup))
    ones = np.flatnonzero((np.float32(1) - (lrs * 0.01).astype(np.float32)) == np.float32(1))
    firsts = sorted(detective.epoch_of_step.index(e) for e in set(detective.epoch_of_step))
    late = [s.index for s, e in zip(detective.steps, detective.epoch_of_step) if e > 1 and s.compilations]
    print(json.dumps({"mode": mode, "steps": steps, "epoch_first_steps": firsts, "compiled_after_epoch_1": late,
                      "factor_one_steps": ones.tolist()}))


if __name__ == "__main__":
    main(sys.argv[1])
