"""Notebook 05's loaders with static shapes, the evaluation plan checked on the host before any training."""
from __future__ import annotations

from typing import Any, NamedTuple

from tpu_helpers.banking77.config import PADDINGS, TrainConfig

__all__ = ["Loaders", "make_loaders"]


class Loaders(NamedTuple):
    """What `make_loaders` returns (it unpacks as a 5-tuple too)."""
    train: Any  # DataLoader, before accelerator.prepare
    eval: Any
    train_collate: Any  # counts the tokens and batch shapes of each split, on the host
    eval_collate: Any
    eval_order: list[int] | None  # the dataset index of each gathered prediction (None: the dataset's order)

    @property
    def eval_rows(self) -> int:  # test rows: exactly one prediction each
        return len(self.eval.dataset)


def make_loaders(train_dataset, eval_dataset, config: TrainConfig, tokenizer=None, num_replicas: int = 1) -> Loaders:
    """Train/eval DataLoaders (unpadded datasets) padded to ``config.boundaries`` or ``config.max_length``."""
    from torch.utils.data import DataLoader

    from tpu_helpers.banking77.buckets import BucketBatchSampler, BucketCollator, BucketedDataset
    from tpu_helpers.shared.boundaries import validate_boundaries

    if config.padding not in PADDINGS:
        raise ValueError(f"padding={config.padding!r}: choose one of {', '.join(PADDINGS)}")
    if config.padding == "buckets":
        if tokenizer is None or not config.boundaries:
            raise ValueError("padding='buckets' needs the tokenizer (it pads each batch) and config.boundaries "
                             "(e.g. tpu_helpers.shared.boundaries.choose_boundaries(lengths, max_length))")
        bounds = validate_boundaries(config.boundaries, config.max_length)
        # a test query longer than every training query (rare) still fits: evaluation may also pad to max_length
        eval_bounds = tuple(sorted(set(bounds) | ({config.max_length} if config.max_length else set())))
        g = config.batch_size * num_replicas
        if len(train_dataset) < g:
            raise ValueError(f"the training set ({len(train_dataset)} rows) is smaller than one global batch "
                             f"({g}); lower BATCH_SIZE or use more data.")
        train_lengths = [len(x) for x in train_dataset["input_ids"]]
        eval_lengths = [len(x) for x in eval_dataset["input_ids"]]
        train_sampler = BucketBatchSampler(train_lengths, config.batch_size, bounds, num_replicas=num_replicas,
                                           shuffle=True, seed=config.seed)
        eval_sampler = BucketBatchSampler(eval_lengths, config.eval_batch_size, eval_bounds, num_replicas=num_replicas,
                                          shuffle=False)
        train_collate, eval_collate = BucketCollator(tokenizer), BucketCollator(tokenizer)
        train_dl = DataLoader(BucketedDataset(train_dataset), batch_sampler=train_sampler, collate_fn=train_collate)
        eval_dl = DataLoader(BucketedDataset(eval_dataset), batch_sampler=eval_sampler, collate_fn=eval_collate)
        order = [int(i) for b in eval_sampler.plan(0) for i in b.indices[:b.real_rows]]
        return _checked(Loaders(train_dl, eval_dl, train_collate, eval_collate, order), num_replicas)
    if len(train_dataset) < config.batch_size:
        raise ValueError(f"the training set ({len(train_dataset)} rows) is smaller than one batch "
                         f"({config.batch_size}); with drop_last=True there would be no step. Lower BATCH_SIZE "
                         "or use more data.")
    if tokenizer is None or not config.max_length:
        raise ValueError("padding='max_length' needs the tokenizer (it pads each batch) and config.max_length")
    train_collate = BucketCollator(tokenizer, fixed_length=config.max_length)
    eval_collate = BucketCollator(tokenizer, fixed_length=config.max_length)
    train_dl = DataLoader(train_dataset, batch_size=config.batch_size, shuffle=True, drop_last=True,
                          collate_fn=train_collate)
    eval_dl = DataLoader(eval_dataset, batch_size=config.eval_batch_size, shuffle=False, drop_last=False,
                         collate_fn=eval_collate)
    return _checked(Loaders(train_dl, eval_dl, train_collate, eval_collate, None), num_replicas)


def _checked(loaders: Loaders, num_replicas: int) -> Loaders:
    from tpu_helpers.banking77.evaluation import check_evaluation_plan

    check_evaluation_plan(loaders.eval, loaders.eval_rows, num_replicas, loaders.eval_order)
    return loaders
