"""Notebook 05's exercise checks: they run the learner's code and test what it does, never its text."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from tpu_helpers.core.exercises import CheckResult, answer_for, call_answer, run_check, short

answer = answer_for(__package__)


def check_collate(make_collate: Callable, dataset: Any, tokenizer: Any, boundaries: Sequence[int], *,
                  batch_size: int = 16, steps: int = 12) -> CheckResult:
    """Batches of shape (rows, the bucket's length), right-padded, tokens and labels intact: one shape per bucket."""
    from tpu_helpers.banking77.lesson_cells import BucketBatchSampler, BucketedDataset

    plan = BucketBatchSampler([len(x) for x in dataset["input_ids"]], batch_size, boundaries, seed=11).plan(0)
    firsts = {b.padded_length: b for b in plan}  # one batch of every bucket first, then the rest of the epoch
    order = sorted(plan, key=lambda b: b is not firsts[b.padded_length])
    wrapped = BucketedDataset(dataset)
    batches = [[(int(i), b.padded_length) for i in b.indices] for b in order[:steps]]

    def body() -> str:
        import torch

        collate = call_answer(make_collate, tokenizer, what="make_collate(tokenizer)")
        shapes = set()
        for keys in batches:
            items = wrapped.__getitems__(keys)
            out = call_answer(collate, items, what="collate(items)")
            assert "labels" in out, ("your batch has no labels: keep every column of the rows (the model computes "
                                     "the loss from them)")
            want, shape = keys[0][1], tuple(out["input_ids"].shape)
            assert shape[1:] != (max(len(row["input_ids"]) for row, _ in items),) or shape[1] == want, (
                f"a batch the sampler put in the {want}-token bucket came out {shape[1]} tokens wide, its longest "
                "query: that is padding='longest', one new shape (one new graph) for almost every batch. Pad to the "
                "length that comes with the rows: padding='max_length', max_length=<that length>.")
            ref = tokenizer.pad([row for row, _ in items], padding="max_length", max_length=want, return_tensors="pt")
            assert all(k in out and torch.as_tensor(out[k]).tolist() == ref[k].tolist()
                       for k in ("input_ids", "attention_mask", "labels")), (
                f"a batch of {len(keys)} rows for the {want}-token bucket must be ({len(keys)}, {want}): the rows' "
                "tokens first, unchanged (right padding), attention_mask 1 on them and 0 on the padding, the rows' "
                f"labels in order (yours: input_ids of shape {shape})")
            shapes.add(shape)
        widths = sorted({w for _, w in shapes})
        return (f"{len(batches)} batches padded to the sampler's lengths {widths}, tokens and labels intact: "
                f"{len(widths)} shapes to compile for {len(firsts)} buckets, one per bucket")

    return run_check(body)


def check_gather_step(gather_step: Callable, dataset: Any, tokenizer: Any, boundaries: Sequence[int], *,
                      batch_size: int = 32, batches: int = 7) -> CheckResult:
    """Over a topped-up last batch: exactly one prediction per row, in order, as host lists, and no new graph."""
    from tpu_helpers.banking77.launch import reset_accelerate_state
    from tpu_helpers.banking77.lesson_cells import BucketBatchSampler, BucketCollator, BucketedDataset
    from tpu_helpers.banking77.solutions import gather_step as reference

    dataset = dataset.select(range(min(len(dataset), batches * batch_size - 5)))
    if len(dataset) % batch_size == 0:  # a last batch to top up, whatever the dataset's size: the cut is tested
        dataset = dataset.select(range(len(dataset) - 1))
    n_rows = len(dataset)

    def body() -> str:
        import gc

        from accelerate import Accelerator
        from torch.utils.data import DataLoader

        from tpu_helpers.xla_torch.counters import XlaCounters

        def run_loop(step, accelerator, loader):
            preds, labels, seen = [], [], 0
            for batch in loader:
                gc.collect()  # the same live tensors at every sync, in both loops: the same graphs
                logits = batch["input_ids"].sum(dim=-1) % 77  # computed on the device, as a model's argmax
                got = call_answer(step, accelerator, logits, batch["labels"], seen, n_rows,
                                  what="gather_step(accelerator, preds, labels, seen, n_rows)")
                assert isinstance(got, (tuple, list)) and len(got) == 2, (
                    f"gather_step returned {short(got)}: return two lists, (predictions, labels)")
                p, r = (np.asarray(x).reshape(-1).tolist() for x in got)
                preds, labels, seen = preds + p, labels + r, seen + len(p)
                del logits, got
            gc.collect()
            return preds, labels

        sampler = BucketBatchSampler([len(x) for x in dataset["input_ids"]], batch_size, boundaries, shuffle=False)
        repeats = sampler.global_batch_size * len(sampler.plan(0)) - n_rows
        reset_accelerate_state()
        try:
            accelerator = Accelerator()
            loader = DataLoader(BucketedDataset(dataset), batch_sampler=sampler, collate_fn=BucketCollator(tokenizer))
            loader = accelerator.prepare(loader)
            ref = run_loop(reference, accelerator, loader)  # compiles the loop's graphs
            with XlaCounters() as c:
                preds, labels = run_loop(gather_step, accelerator, loader)
        finally:
            reset_accelerate_state()
        if len(preds) > n_rows:
            raise AssertionError(
                f"the loop got {len(preds)} predictions for {n_rows} test rows: the {repeats} repeated rows that top "
                "up the last batch are still in. Keep only the rows still due: min(len(batch), n_rows - seen); on XLA "
                "gather_for_metrics does not drop them reliably (Why gather? at the end of the notebook).")
        assert c.compilations == 0, (
            f"your gather step compiled {c.compilations} new graph(s) that the reference loop did not need: "
            "slicing or concatenating on the XLA device adds ops to the graph (a new graph for the cut batch). "
            "Copy the gathered tensors to the host first (.cpu()), then cut them there.")
        assert ([int(x) for x in preds], [int(x) for x in labels]) == tuple([int(x) for x in r] for r in ref), (
            f"the loop got {len(preds)} predictions for {n_rows} test rows: return every gathered row in the "
            "loader's order (accelerator.gather, not gather_for_metrics), the model's argmax as it is, and cut only "
            "the rows beyond n_rows")
        return (f"{len(preds)} predictions for {n_rows} test rows ({repeats} repeated rows of the topped-up last "
                f"batch dropped), labels in the loader's order, and no new graph compiled "
                f"({c.cache_hits} cache hits)")

    return run_check(body)
