"""Run notebook 05's training function in N CPU processes (the `cpu-processes` launch plan), optionally with a
replica-divergent bug planted in replica 1. Used by test_replicas.py in a process of its own: accelerate must be
imported with USE_TORCH_XLA=0, which the torch test process (XLA already found) cannot undo.

    python replicas_run.py N PLANT REPORT_PATH [TIMEOUT_S]

PLANT: "none"; "extra_batch" (replica 1's sampler yields one global batch more); "other_shape" (replica 1 pads
every batch to max_length); "extra_batch_unchecked" (one global batch more on replica 1, with the plan check
before training switched off: the end-of-epoch barrier must catch it).
"""
from __future__ import annotations

import dataclasses
import sys


class _OneMoreGlobalBatch:
    """A batch sampler yielding its sampler's batches, then the first global batch once more."""

    def __init__(self, sampler):
        self.sampler, self.batch_size = sampler, sampler.batch_size

    def set_epoch(self, epoch):
        self.sampler.set_epoch(epoch)

    def __iter__(self):
        batches = list(self.sampler)
        yield from batches + batches[:self.sampler.num_replicas]

    def __len__(self):
        return len(self.sampler) + self.sampler.num_replicas


def main(n: int, plant: str, report_path: str, timeout_s: float) -> None:
    from tpu_helpers.banking77 import dataset, launch
    from tpu_helpers.core.runtime import Runtime

    plan = launch.plan_launch(Runtime("cpu", "local"), env={}, ipython=None, num_processes=n)
    launch.prepare_environment(plan)  # USE_TORCH_XLA=0, one OpenMP thread: before accelerate is imported

    from course_support.banking77 import run_as_notebook
    from course_support.train_config import TrainConfig

    from tpu_helpers.banking77 import lesson_cells
    from tpu_helpers.shared.boundaries import choose_boundaries

    fn = lesson_cells.training_function  # notebook 05's cell, generated into the package
    real_make_loaders = fn.__globals__["make_loaders"]

    def planted_make_loaders(train_ds, eval_ds, config, tokenizer=None, num_replicas=1):
        import torch.distributed as dist

        on_replica_1 = dist.get_rank() == 1  # debug_launcher sets up the process group before the function
        if on_replica_1 and plant == "other_shape":
            config = dataclasses.replace(config, boundaries=(config.max_length,))
        train, evaluation = real_make_loaders(train_ds, eval_ds, config, tokenizer, num_replicas)
        if on_replica_1 and plant.startswith("extra_batch"):
            from torch.utils.data import DataLoader

            train = DataLoader(train.dataset, batch_sampler=_OneMoreGlobalBatch(train.batch_sampler),
                               collate_fn=train.collate_fn)
        return train, evaluation

    fn.__globals__["make_loaders"] = planted_make_loaders
    if plant == "extra_batch_unchecked":
        from tpu_helpers.banking77 import replicas

        replicas.check_plans_agree = lambda accelerator, plan, timeout_s: None
    data = dataset.load_banking77("synthetic", n_train_per_label=4, n_test_per_label=1, seed=5)
    tok = dataset.load_tokenizer("tiny", data.dataset["train"]["text"], vocab_size=300)
    enc = lesson_cells.tokenize(data.dataset, tok, 32)
    bounds = choose_boundaries([len(x) for x in enc["train"]["input_ids"]], 32)
    model = dataset.make_model("tiny", data, vocab_size=len(tok), max_length=32, hidden_size=32)
    config = TrainConfig(epochs=2, batch_size=8, eval_batch_size=16, learning_rate=2e-3, progress=False,
                         report_path=report_path, padding="buckets", boundaries=bounds, max_length=32,
                         replica_timeout_s=timeout_s, seed=5)
    run_as_notebook(fn, (model, enc["train"], enc["test"], config, tok), plan)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4]) if len(sys.argv) > 4 else 120.0)
