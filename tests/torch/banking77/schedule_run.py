"""Notebook 05's training function on the `tpu` profile's schedule (a v5e-8: learning rate 3e-4, 3 epochs of about
39 steps, 10 % warm-up, AdamW's weight decay 0.01) with a tiny BERT on XLA:CPU, in a process of its own: the
switches it tests are global to a process. Prints one JSON line: the compilations of each epoch and the steps
whose decay factor ``1 - lr * wd`` is 1.0 in float32.

    python schedule_run.py course        # the training function as the notebook has it
    python schedule_run.py variable-only  # XLA_NO_SPECIAL_SCALARS=1 (use_framework) but scalars_as_graph_inputs off
"""
from __future__ import annotations

import json
import os
import sys

LR, EPOCHS, PER_LABEL, BATCH, MAX_LENGTH = 3e-4, 3, 4, 8, 16  # 308 rows / 8 = 38 steps per epoch


def main(mode: str) -> None:
    os.environ.setdefault("PJRT_DEVICE", "CPU")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from tpu_helpers.core.frameworks import use_framework

    use_framework("torch")  # XLA_NO_SPECIAL_SCALARS=1, before torch_xla is imported
    import numpy as np
    import torch
    from course_support.banking77 import run_as_notebook

    from tpu_helpers.banking77 import dataset, launch, lesson_cells
    from tpu_helpers.banking77.config import TrainConfig
    from tpu_helpers.core.runtime import Runtime

    if mode == "variable-only":
        lesson_cells.training_function.__globals__["scalars_as_graph_inputs"] = lambda device: False
    elif mode != "course":
        raise SystemExit(f"mode {mode!r}: 'course' or 'variable-only'")
    data = dataset.load_banking77("synthetic", n_train_per_label=PER_LABEL, n_test_per_label=1, seed=0)
    tokenizer = dataset.load_tokenizer("tiny", data.dataset["train"]["text"])
    enc = dataset.tokenize(data.dataset, tokenizer, MAX_LENGTH, padding="none")
    model = dataset.make_model("tiny", data, vocab_size=len(tokenizer), max_length=MAX_LENGTH, hidden_size=16,
                               layers=1, heads=1, seed=0)
    config = TrainConfig(epochs=EPOCHS, batch_size=BATCH, eval_batch_size=2 * BATCH, learning_rate=LR,
                         padding="max_length", max_length=MAX_LENGTH, progress=False, seed=0)
    plan = launch.plan_launch(Runtime("cpu", "local"), env={}, ipython=None)
    report = run_as_notebook(lesson_cells.training_function, (model, enc["train"], enc["test"], config, tokenizer),
                             plan)
    # the schedule the training function's scheduler followed: transformers' linear warm-up and decay
    total = EPOCHS * report.steps_per_epoch
    warmup = int(config.warmup_ratio * total)
    step = np.arange(total, dtype=np.float64)
    lrs = LR * np.where(step < warmup, step / max(1, warmup), (total - step) / (total - warmup))
    ones = np.flatnonzero((np.float32(1) - (lrs * config.weight_decay).astype(np.float32)) == np.float32(1))
    print(json.dumps({"mode": mode, "steps_per_epoch": report.steps_per_epoch, "torch": torch.__version__,
                      "factor_one_steps": ones.tolist(), "epochs": [
                          {"train": e.train_xla["compilations"], "eval": e.eval_xla["compilations"]}
                          for e in report.epochs]}))


if __name__ == "__main__":
    main(sys.argv[1])
