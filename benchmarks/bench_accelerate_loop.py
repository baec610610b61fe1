"""The course's Accelerate training function against a plain torch_xla loop: same data, model, batches, steps.

Both train the same tiny BERT (hidden 64, 2 layers, as notebook 05's cpu/ci profiles) on the same synthetic
BANKING77 split, with the same bucketed batches (notebook 05's `lesson_cells`: sampler, collator, seed), AdamW and the
same linear warmup/decay schedule, on one XLA:CPU device:

* **course**: notebook 05's own ``training_function`` (its cell, generated into
  `tpu_helpers.banking77.lesson_cells`), launched like notebook 05 on a CPU (``notebook_launcher(num_processes=1)``
  through its launch cell, `course_support.banking77.run_as_notebook`), Accelerate's prepared loader (``MpDeviceLoader`` underneath), its
  evaluation each epoch excluded from the time;
* **plain torch_xla**: ``MpDeviceLoader`` over the same DataLoader, ``loss.backward()``, ``optimizer.step()``,
  the scheduler, the loss summed on the device and read once per epoch, and nothing else.

The two run in alternating rounds; each candidate's values are the training samples/s of every epoch but the first
of each run (the first epoch of the first round compiles). The course's function must stay within 10% of the plain loop (reported here, not asserted: CI times
nothing).
"""
from __future__ import annotations

import os
import time

os.environ.setdefault("PJRT_DEVICE", "CPU")
os.environ.setdefault("CPU_NUM_DEVICES", "1")
os.environ["USE_TF"] = "0"

from benchmarks.harness import Benchmark, Candidate, cli  # noqa: E402

MAX_LENGTH = 32
BATCH = 32
LR = 2e-3


def plain_loop(model, train_ds, tokenizer, boundaries, epochs: int, seed: int) -> list[float]:
    """samples/s of each epoch of a plain PyTorch/XLA loop over the course's bucketed batches."""
    import torch
    import torch_xla
    import torch_xla.distributed.parallel_loader as pl
    from torch.utils.data import DataLoader
    from transformers import get_linear_schedule_with_warmup

    from tpu_helpers.banking77.lesson_cells import (
        BucketBatchSampler,
        BucketCollator,
        BucketedDataset,
    )

    device = torch_xla.device()
    torch.manual_seed(seed)
    lengths = [len(x) for x in train_ds["input_ids"]]
    sampler = BucketBatchSampler(lengths, BATCH, boundaries, seed=seed)
    loader = DataLoader(BucketedDataset(train_ds), batch_sampler=sampler, collate_fn=BucketCollator(tokenizer))
    model = model.to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    total = epochs * len(loader)
    sched = get_linear_schedule_with_warmup(opt, int(0.1 * total), total)
    device_loader = pl.MpDeviceLoader(loader, device)
    out, loss_total = [], None
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        start = time.perf_counter()
        steps = 0
        for batch in device_loader:
            loss = model(**batch).loss
            loss.backward()
            opt.step()
            sched.step()
            opt.zero_grad()
            loss_total = loss.detach() if loss_total is None else loss_total + loss.detach()
            steps += 1
        float(loss_total.item())  # one read per epoch, as the course's function
        out.append(steps * BATCH / (time.perf_counter() - start))
    return out


def run(quick: bool) -> Benchmark:
    from course_support.banking77 import run_as_notebook
    from course_support.train_config import TrainConfig

    from tpu_helpers.banking77 import dataset, launch, lesson_cells
    from tpu_helpers.banking77.lesson_cells import training_function  # notebook 05's cell
    from tpu_helpers.core.runtime import Runtime
    from tpu_helpers.shared.boundaries import choose_boundaries

    per_label = 16 if quick else 32
    epochs = 3 if quick else 4  # per run; the first epoch of the first round compiles
    rounds = 2 if quick else 3
    data = dataset.load_banking77("synthetic", n_train_per_label=per_label, n_test_per_label=2)
    tok = dataset.load_tokenizer("tiny", data.dataset["train"]["text"])
    enc = lesson_cells.tokenize(data.dataset, tok, MAX_LENGTH)
    bounds = choose_boundaries([len(x) for x in enc["train"]["input_ids"]], MAX_LENGTH)
    plan = launch.plan_launch(Runtime("cpu", "local"), env={}, ipython=None)

    # Rounds alternate the two (plain, course, plain, course, ...) so that a machine that slows down or speeds up
    # during the run does not favour one; the first round also compiles the shared graphs (the plain loop first).
    plain, course, first = [], [], {}
    compilations = None
    for _ in range(rounds):
        model = dataset.make_model("tiny", data, vocab_size=len(tok), max_length=MAX_LENGTH)
        p = plain_loop(model, enc["train"], tok, bounds, epochs, seed=42)
        model = dataset.make_model("tiny", data, vocab_size=len(tok), max_length=MAX_LENGTH)
        config = TrainConfig(epochs=epochs, batch_size=BATCH, eval_batch_size=2 * BATCH, learning_rate=LR,
                             progress=False, padding="buckets", boundaries=tuple(bounds), max_length=MAX_LENGTH,
                             seed=42)
        report = run_as_notebook(training_function, (model, enc["train"], enc["test"], config, tok), plan)
        c = [e.samples_per_second for e in report.epochs]
        first.setdefault("plain", p[0])
        first.setdefault("course", c[0])
        compilations = report.compilations if compilations is None else compilations
        plain += p[1:]
        course += c[1:]

    return Benchmark(
        "accelerate_loop",
        f"Notebook 05's Accelerate training function vs a plain torch_xla loop: tiny BERT, synthetic BANKING77 "
        f"({len(enc['train']):,} train), bucketed batches of {BATCH}, XLA:CPU, {rounds} alternating runs of "
        f"{epochs} epochs",
        [Candidate("plain torch_xla loop", plain, "samples/s",
                   extra={"epoch 1 of run 1 (compiling)": round(first["plain"], 1)}),
         Candidate("course: notebook 05's training_function", course, "samples/s",
                   extra={"epoch 1 of run 1 (compiling)": round(first["course"], 1),
                          "compilations (first course run)": compilations})],
        baseline="plain torch_xla loop",
        notes=("The course's ratio should stay at or above 0.90 (within 10% of the plain loop); the time of each "
               "epoch covers training only (the course's evaluation is timed apart). Same samples, batches and "
               "shapes in both: the difference is Accelerate's wrappers (prepared model, optimizer, scheduler and "
               "loader) and the course's bookkeeping (host-side token counts)."))


if __name__ == "__main__":
    cli(run)
