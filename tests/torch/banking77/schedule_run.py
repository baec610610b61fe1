"""Notebook 05's training function on a schedule whose last steps make AdamW's ``1 - lr * wd`` exactly 1.0 in float32
(a v5e-8's shape: 3 epochs of 38 steps, 10 % warm-up, weight decay 0.01), on XLA:CPU in a process of its own (the
switches some options use are global to a process). Prints one JSON line: per epoch the compilations, the training
steps' uploads (torch_xla's ``TensorToData`` and ``TransferToDeviceTime`` sample counts) and seconds, and the steps
whose factor is 1.0 in float32 under the plain schedule.

    python schedule_run.py OPTION [MODEL]   # OPTION: c (the notebook's function), a, b or d; MODEL: "tiny" or a folder

The options of issue 49 (``docs/benchmarks.md``, "AdamW's scalars"), built from the notebook's own cell by editing
its source (`variant`), so each differs from the notebook in the named lines only:
* a: every scalar a graph input (the special scalars and torch_xla's device-data cache off, process-wide: the course
  before issue 49), a float learning rate, AdamW's per-tensor path;
* b: ``XLA_NO_SPECIAL_SCALARS=1`` alone (the cache kept) and a schedule whose learning rate keeps ``lr * wd > 2**-25``;
* c: the notebook: AdamW ``capturable`` on XLA with the learning rate a device tensor the scheduler fills (a linear
  schedule that never reaches 0);
* d: nothing: a float learning rate, transformers' schedule, the cache kept (one more graph where the factor is 1.0).
"""
from __future__ import annotations

import inspect
import json
import os
import sys
import textwrap
import time

LR, EPOCHS, PER_LABEL, BATCH, MAX_LENGTH = 1e-4, 3, 4, 8, 16  # 308 rows / 8 = 38 steps per epoch
FLOAT_LR = {"optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay,"
            "\n                                  capturable=on_xla)":
            "optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay)",
            "if on_xla:  # the learning rate a device tensor": "if False:  # the learning rate a device tensor",
            "scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(\n"
            "        (step + 1) / (warmup + 1), (total_steps + 1 - step) / (total_steps + 1 - warmup)))":
            "scheduler = get_linear_schedule_with_warmup(optimizer, warmup, total_steps)"}
EDITS = {"a": {**FLOAT_LR, "set_seed(config.seed)": "_scalars_as_graph_inputs(accelerator.device)\n    set_seed(config.seed)"},
         "b": {**FLOAT_LR, "get_linear_schedule_with_warmup(": "_floored_schedule("},  # applied after FLOAT_LR
         "c": {}, "d": FLOAT_LR}


def _scalars_as_graph_inputs(device) -> None:
    """Option a (the course before issue 49): no special scalars, no scalar cache, in the whole process."""
    if device.type == "xla":
        import torch_xla

        torch_xla._XLAC._set_xla_handle_special_scalars(False)
        torch_xla._XLAC._set_xla_enable_device_data_cache(False)


def _floored_schedule(optimizer, warmup: int, total: int):
    """Option b: transformers' linear warm-up and decay, the learning rate never below 2**-25 / wd (after step 0)."""
    from torch.optim.lr_scheduler import LambdaLR

    group = optimizer.param_groups[0]
    floor = 1.01 * 2 ** -25 / (group["lr"] * group["weight_decay"])  # the factor 1 - lr*wd stays below 1.0

    def factor(step: int) -> float:
        linear = step / max(1, warmup) if step < warmup else (total - step) / max(1, total - warmup)
        return max(linear, floor) if step else 0.0

    return LambdaLR(optimizer, factor)


def variant(option: str):
    """Notebook 05's ``training_function`` with option ``option``'s edits (each must match the cell exactly once)."""
    from tpu_helpers.banking77 import lesson_cells

    source = textwrap.dedent(inspect.getsource(lesson_cells.training_function))
    for old, new in EDITS[option].items():
        if source.count(old) != 1:
            raise SystemExit(f"option {option}: {old!r} is not in notebook 05's training function once: update EDITS")
        source = source.replace(old, new)
    from transformers import get_linear_schedule_with_warmup

    namespace = dict(vars(lesson_cells), _scalars_as_graph_inputs=_scalars_as_graph_inputs,
                     _floored_schedule=_floored_schedule, get_linear_schedule_with_warmup=get_linear_schedule_with_warmup)
    exec(compile(source, f"<notebook 05's training_function, option {option}>", "exec"), namespace)
    return namespace["training_function"]


class Probe:
    """The training function's ``log``: per epoch the compilations, uploads and seconds of its training steps."""

    def __init__(self, accelerator, config, train_dl, eval_dl):
        from tpu_helpers.xla_torch.counters import snapshot

        self.snapshot, self.steps, self.epochs, self.loss_total = snapshot, len(train_dl), [], 0.0
        self._start()

    def _start(self):
        self.before, self.t0 = self.snapshot(), time.perf_counter()

    def end_training(self, loss_sum) -> None:
        total = float(loss_sum)  # the notebook's one host read per epoch (the sum runs over the epochs so far)
        loss, self.loss_total = (total - self.loss_total) / self.steps, total
        after, seconds = self.snapshot(), time.perf_counter() - self.t0
        a, b = self.before, after
        self.epochs.append({"train": b.counter("UncachedCompile") - a.counter("UncachedCompile"),
                            "uploads": b.metric("TensorToData")[0] - a.metric("TensorToData")[0],
                            "transfers": b.metric("TransferToDeviceTime")[0] - a.metric("TransferToDeviceTime")[0],
                            "seconds": round(seconds, 3), "steps": self.steps, "loss": loss})
        self.before = after

    def end_epoch(self, predictions, labels) -> None:
        after = self.snapshot()
        self.epochs[-1]["eval"] = after.counter("UncachedCompile") - self.before.counter("UncachedCompile")
        self._start()

    def report(self, model):
        return self.epochs


def main(option: str, model_name: str = "tiny") -> None:
    os.environ.setdefault("PJRT_DEVICE", "CPU")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from tpu_helpers.core.frameworks import use_framework

    use_framework("torch")  # XLA_NO_SPECIAL_SCALARS=1, before torch_xla is imported
    import numpy as np
    import torch
    import torch_xla

    from tpu_helpers.banking77 import dataset, launch, lesson_cells
    from tpu_helpers.banking77.lesson_cells import TrainConfig
    from tpu_helpers.core.runtime import Runtime

    launch.prepare_environment(launch.plan_launch(Runtime("cpu", "local"), env={}, ipython=None))
    data = dataset.load_banking77("synthetic", n_train_per_label=PER_LABEL, n_test_per_label=1, seed=0)
    tokenizer = dataset.load_tokenizer(model_name, data.dataset["train"]["text"])
    enc = lesson_cells.tokenize(data.dataset, tokenizer, MAX_LENGTH)
    tiny = dict(hidden_size=16, layers=1, heads=1) if model_name == "tiny" else {}
    model = dataset.make_model(model_name, data, vocab_size=len(tokenizer), max_length=MAX_LENGTH, seed=0, **tiny)
    config = TrainConfig(epochs=EPOCHS, batch_size=BATCH, eval_batch_size=2 * BATCH, learning_rate=LR,
                         padding="max_length", max_length=MAX_LENGTH, seed=0)
    try:
        epochs = variant(option)(model, enc["train"], enc["test"], config, tokenizer, Probe)
    finally:
        launch.reset_accelerate_state()
    # the plain schedule (transformers' linear warm-up and decay over the run): where 1 - lr*wd is 1.0 in float32
    total = EPOCHS * epochs[0]["steps"]
    warmup = int(config.warmup_ratio * total)
    step = np.arange(total, dtype=np.float64)
    lrs = LR * np.where(step < warmup, step / max(1, warmup), (total - step) / (total - warmup))
    ones = np.flatnonzero((np.float32(1) - (lrs * config.weight_decay).astype(np.float32)) == np.float32(1))
    uploads = lambda: (torch_xla.debug.metrics.metric_data("TensorToData") or [0])[0]  # noqa: E731
    before, probe = uploads(), torch.ones(1, device=torch_xla.device())
    (probe * 0.375 + probe * 0.375).sum().item()  # after the run: one upload of 0.375 with the cache on, two without
    cache_on = uploads() - before <= 2  # (the ones tensor is one upload too)
    print(json.dumps({"option": option, "model": model_name, "steps_per_epoch": epochs[0]["steps"],
                      "weight_tensors": sum(1 for _ in model.parameters()), "torch": torch.__version__,
                      "factor_one_steps": ones.tolist(), "cache_on_after": cache_on, "epochs": epochs}))


if __name__ == "__main__":
    main(*sys.argv[1:])
