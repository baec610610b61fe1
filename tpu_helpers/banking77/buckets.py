"""Length-bucketed batches for PyTorch/XLA: few shapes, little padding, the same shape on every replica.

    bounds = choose_boundaries(lengths, max_length=128, max_buckets=3)       # tpu_helpers.shared.boundaries
    sampler = BucketBatchSampler(lengths, batch_size=32, boundaries=bounds, num_replicas=8, seed=42)
    loader = DataLoader(BucketedDataset(tokenized_train), batch_sampler=sampler,
                        collate_fn=BucketCollator(tokenizer))
    # accelerator.prepare(loader) gives replica r the r-th batch of every group of 8 (accelerate's
    # BatchSamplerShard): all 8 batches of a step have the same padded length.
    sampler.set_epoch(epoch)   # before each epoch, as for torch's DistributedSampler

XLA compiles one program per input shape. Padding every query to ``max_length`` gives one shape but computes mostly
padding (short queries such as BANKING77's: most of the tokens computed are padding); padding each batch to its own
longest query computes little padding but gives dozens of shapes. `tpu_helpers.shared.padding` measures both on the data at
hand. Buckets sit in between: batches of queries of similar length, each padded to the smallest of a few fixed
lengths (the bucket *boundaries*) that holds its longest query.

How the batches are made (`BucketBatchSampler`), with a well-kept building block wherever one fits:

1. **Bucket each query**: the smallest boundary that holds it (`tpu_helpers.shared.boundaries.choose_boundaries` picks at most 3 boundaries,
   multiples of 8, with the least padding for the data). The boundaries are fixed, so the run has at most
   ``len(boundaries)`` batch shapes whatever the data.
2. **Shuffle inside each bucket** with a seeded ``torch.Generator`` (``seed + epoch``: new batches every epoch,
   and the same plan in every process without any message), and cut each bucket into *global* batches
   (``batch_size x num_replicas``). A bucket's leftover queries move up into the next bucket, where they fit, so
   evaluation keeps every query exactly once and training skips fewer than one global batch per epoch.
3. **Shuffle the order of the batches** (same generator), so lengths do not come in runs.
4. **Split across replicas**: each global batch is yielded as ``num_replicas`` consecutive per-replica batches.
   Accelerate's ``BatchSamplerShard`` (what ``accelerator.prepare`` wraps a batch sampler in, with the default
   ``split_batches=False``) hands batch ``k`` to replica ``k % num_replicas``, so the replicas of one step get the
   pieces of one global batch.
5. **The padded length travels with the indices**: the sampler yields ``(index, padded_length)`` pairs, because a
   replica cannot see the rest of its global batch: padding its piece to *its* longest query could give replica 0
   length 32 and replica 1 length 16 at the same step. `BucketedDataset` turns a pair into ``(row, length)`` and
   `BucketCollator` pads with ``DataCollatorWithPadding(tokenizer, padding="max_length", max_length=length)``, the
   tokenizer's own padding.

Why not transformers' ``LengthGroupedSampler`` (``get_length_grouped_indices``, behind the Trainer's
``group_by_length``)? It orders single indices for one process (randomly permuted, sorted by length inside
mega-batches) and leaves the padding to the collator, which pads each batch to its own longest query: a new
shape for almost every batch, and different shapes on different replicas. Fixed lengths chosen per global batch
are the part it lacks; with them, padding every query to its own bucket is also the least padding they allow.

Evaluation (``shuffle=False, drop_last=False``) keeps every query exactly once; the last, incomplete global
batch is topped up with repeats of its own rows so that it keeps the batch shape (no extra graph). Gather with
``accelerator.gather``, count the rows and cut the last batch on the host: on XLA, ``gather_for_metrics`` decides
what to cut from a flag that the loader's prefetch thread sets early (notebook 05's "Why gather?" section; its
training function's evaluation loop, ending in `tpu_helpers.banking77.evaluation.rows_on_host`).

The comparisons of paddings (benchmarks/bench_padding.py, bench_buckets_bert.py) build one epoch for any strategy,
the buckets or one of `tpu_helpers.shared.padding`'s, with `epoch_batches`, and its tensors with `padded_tensors`.

Sources: transformers ``trainer_pt_utils.get_length_grouped_indices`` and ``DataCollatorWithPadding`` (v4.57);
accelerate ``data_loader.BatchSamplerShard`` and ``Accelerator.gather_for_metrics`` (v1.15):
https://github.com/huggingface/accelerate/blob/v1.15.0/src/accelerate/data_loader.py
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np

from tpu_helpers.shared import padding
from tpu_helpers.shared.boundaries import BucketError, choose_boundaries, validate_boundaries

__all__ = ["GlobalBatch", "PlanStats", "BucketBatchSampler", "BucketedDataset", "BucketCollator", "epoch_batches",
           "padded_tensors"]


@dataclass(frozen=True, eq=False)  # compared by identity: the indices are an array
class GlobalBatch:
    """One step's samples on all replicas together, and the length they are padded to."""

    indices: np.ndarray  # batch_size * num_replicas sample indices (repeats only in a topped-up last eval batch)
    padded_length: int
    real_rows: int  # rows that are not repeats (< len(indices) only for the topped-up last eval batch)


@dataclass(frozen=True)
class PlanStats:
    """What one epoch of a `BucketBatchSampler` computes."""

    batches: int  # global batches (steps)
    samples: int  # distinct samples covered
    real_tokens: int  # tokens of those samples
    computed_tokens: int  # rows x padded length, summed (repeated rows included)
    shapes: dict[tuple[int, int], int] = field(default_factory=dict)  # (rows per replica, length) -> steps

    @property
    def tokens_per_real_token(self) -> float:
        return self.computed_tokens / self.real_tokens if self.real_tokens else float("nan")


class BucketBatchSampler:
    """Yields per-replica batches of ``(index, padded_length)`` pairs; see the module docstring.

    ``batch_size`` is per replica (accelerate's ``BatchSamplerShard`` reads it), the global batch is
    ``batch_size * num_replicas``. ``lengths`` are token counts after truncation (at most the largest boundary).
    The plan of an epoch depends only on ``lengths``, ``seed`` and the epoch number, so every process builds the
    same one. Call ``set_epoch(epoch)`` before each pass, as with torch's ``DistributedSampler`` (Accelerate's data
    loader does it on one process; behind ``BatchSamplerShard`` it cannot see the sampler): ``iter()`` never moves
    the epoch on by itself, because on XLA a prepared loader may be iterated by more than one thread.
    """

    def __init__(self, lengths: Sequence[int], batch_size: int, boundaries: Sequence[int], *, num_replicas: int = 1,
                 shuffle: bool = True, drop_last: bool | None = None, seed: int = 0,
                 mega_batch_mult: int | None = None):
        if batch_size < 1 or num_replicas < 1:
            raise BucketError(f"batch_size ({batch_size}) and num_replicas ({num_replicas}) must be at least 1")
        self.lengths = [int(x) for x in lengths]
        self.boundaries = validate_boundaries(boundaries)
        longest = max(self.lengths, default=0)
        if longest > self.boundaries[-1]:
            raise BucketError(f"a query has {longest} tokens, more than the largest bucket ({self.boundaries[-1]}): "
                              "tokenize with truncation=True, max_length=<largest boundary>")
        self.batch_size = int(batch_size)
        self.num_replicas = int(num_replicas)  # not `num_processes`: accelerate would multiply the batch size by it
        self.shuffle = shuffle
        self.drop_last = shuffle if drop_last is None else bool(drop_last)
        self.seed = int(seed)
        self.mega_batch_mult = mega_batch_mult
        self.epoch = 0
        if self.drop_last and len(self.lengths) < self.global_batch_size:
            raise BucketError(f"{len(self.lengths)} samples are fewer than one global batch ({self.batch_size} x "
                              f"{self.num_replicas} replicas): with drop_last there would be no step")

    @property
    def global_batch_size(self) -> int:
        return self.batch_size * self.num_replicas

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def plan(self, epoch: int | None = None) -> list[GlobalBatch]:
        """The global batches of ``epoch`` (default: the current one), in the order they are yielded."""
        import torch

        epoch = self.epoch if epoch is None else int(epoch)
        g = torch.Generator().manual_seed(self.seed + epoch) if self.shuffle else None
        lens = np.asarray(self.lengths, dtype=np.int64)
        bounds = np.asarray(self.boundaries)
        bucket_of = np.searchsorted(bounds, lens, side="left")
        G = self.global_batch_size
        batches: list[GlobalBatch] = []
        carry = np.zeros(0, dtype=np.int64)
        for k, bound in enumerate(self.boundaries):
            members = np.flatnonzero(bucket_of == k)
            if g is not None:
                members = members[torch.randperm(len(members), generator=g).numpy()]
            pool = np.concatenate([carry, members])  # the last bucket's leftovers first: they are padded up here
            n_full = len(pool) // G
            batches += [GlobalBatch(pool[i * G:(i + 1) * G], int(bound), G) for i in range(n_full)]
            carry = pool[n_full * G:]
        if len(carry) and not self.drop_last:
            # top up with repeats of its own rows: same shape, same padded length (the repeats are dropped later)
            batches.append(GlobalBatch(np.resize(carry, G), int(self.boundaries[-1]), len(carry)))
        if g is not None:
            batches = [batches[i] for i in torch.randperm(len(batches), generator=g).tolist()]
        return batches

    def stats(self, epoch: int | None = None) -> PlanStats:
        """Tokens computed vs real tokens and the batch shapes of one epoch's plan."""
        lens = np.asarray(self.lengths, dtype=np.int64)
        plan = self.plan(epoch)
        seen = np.concatenate([b.indices[:b.real_rows] for b in plan]) if plan else np.zeros(0, dtype=np.int64)
        shapes = Counter((self.batch_size, b.padded_length) for b in plan)
        return PlanStats(len(plan), len(seen), int(lens[seen].sum()),
                         int(sum(len(b.indices) * b.padded_length for b in plan)), dict(sorted(shapes.items())))

    def __iter__(self) -> Iterator[list[tuple[int, int]]]:
        plan = self.plan(self.epoch)
        b = self.batch_size
        for batch in plan:
            for r in range(self.num_replicas):
                yield [(int(i), batch.padded_length) for i in batch.indices[r * b:(r + 1) * b]]

    def __len__(self) -> int:
        n = len(self.lengths) // self.global_batch_size if self.drop_last else \
            -(-len(self.lengths) // self.global_batch_size)
        return n * self.num_replicas


class BucketedDataset:
    """A map-style dataset indexed by the sampler's ``(index, padded_length)`` pairs: returns ``(row, length)``.

    ``len()`` is the wrapped dataset's (what Accelerate's data loader reports as the dataset's length).
    Rows are fetched in one batched read per batch (``__getitems__``, which torch's DataLoader uses).
    """

    def __init__(self, dataset: Any, columns: Sequence[str] | None = None):
        self.dataset = dataset
        names = list(getattr(dataset, "column_names", []) or [])
        wanted = columns or [c for c in ("input_ids", "token_type_ids", "attention_mask", "labels") if c in names]
        self.columns = list(wanted)

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, key: tuple[int, int]) -> tuple[dict[str, Any], int]:
        i, length = key
        row = self.dataset[int(i)]
        return {c: row[c] for c in self.columns}, int(length)

    def __getitems__(self, keys: Sequence[tuple[int, int]]) -> list[tuple[dict[str, Any], int]]:
        if not hasattr(self.dataset, "select"):
            return [self[k] for k in keys]
        cols = self.dataset[[int(i) for i, _ in keys]]  # a datasets.Dataset: one batched read, dict of lists
        return [({c: cols[c][j] for c in self.columns}, int(length)) for j, (_, length) in enumerate(keys)]


class BucketCollator:
    """Pads a batch with the tokenizer's own padding (``DataCollatorWithPadding``) to the length it was given.

    Items are ``(row, padded_length)`` pairs from `BucketedDataset`, or plain rows when ``fixed_length`` is set
    (the ``max_length`` baseline). It also counts what it produced: real tokens, computed tokens and batch shapes
    (``stats()``, ``reset()``), on the host, so the training loop never asks the device.
    """

    def __init__(self, tokenizer: Any, fixed_length: int | None = None):
        self.tokenizer = tokenizer
        self.fixed_length = fixed_length
        self._collators: dict[int, Any] = {}
        self.reset()

    def reset(self) -> None:
        self.real_tokens = 0
        self.computed_tokens = 0
        self.shapes: Counter = Counter()
        self.sequence: list[tuple[int, int]] = []  # (rows, padded length) of each batch since reset(), in order

    def stats(self) -> dict[str, Any]:
        return {"real_tokens": self.real_tokens, "computed_tokens": self.computed_tokens,
                "shapes": {f"{r}x{L}": n for (r, L), n in sorted(self.shapes.items())}}

    def _collator(self, length: int):
        if length not in self._collators:
            from transformers import DataCollatorWithPadding

            self._collators[length] = DataCollatorWithPadding(self.tokenizer, padding="max_length",
                                                              max_length=length, return_tensors="pt")
        return self._collators[length]

    def __call__(self, items: Sequence[Any]) -> dict[str, Any]:
        if self.fixed_length is not None:
            rows, length = [it[0] if isinstance(it, tuple) else it for it in items], self.fixed_length
        else:
            if not all(isinstance(it, tuple) and len(it) == 2 for it in items):
                raise BucketError("BucketCollator without fixed_length needs (row, padded_length) items: use it with "
                                  "BucketedDataset and BucketBatchSampler")
            lengths = {int(it[1]) for it in items}
            if len(lengths) != 1:
                raise BucketError(f"one batch asks for several padded lengths {sorted(lengths)}")
            rows, length = [it[0] for it in items], lengths.pop()
        real = [len(r["input_ids"]) for r in rows]
        if max(real) > length:
            raise BucketError(f"a row has {max(real)} tokens, more than the padded length {length}: tokenize with "
                              f"truncation=True and max_length <= {length}")
        batch = self._collator(length)(list(rows))
        self.real_tokens += sum(real)
        self.computed_tokens += len(rows) * length
        self.shapes[(len(rows), length)] += 1
        self.sequence.append((len(rows), length))
        return batch


def epoch_batches(lengths: Sequence[int], strategy: str, *, batch_size: int, max_length: int, max_buckets: int = 3,
                  seed: int = 0) -> tuple[list[tuple[list[int], int]], list[int] | None]:
    """One training epoch of batches as ``[(indices, padded_length)]`` for a padding `strategy`, and the bucket
    boundaries (None but for ``"buckets"``): what the benchmarks compare. ``"buckets"`` is the course's
    (`tpu_helpers.shared.boundaries.choose_boundaries` with at most `max_buckets`, then epoch 0 of
    `BucketBatchSampler` with `seed`); any other name is a `tpu_helpers.shared.padding` strategy (``padded_batches``
    shuffled with `seed`, the last incomplete batch dropped). `lengths` are token counts after truncation."""
    if strategy == "buckets":
        bounds = choose_boundaries(lengths, max_length, max_buckets=max_buckets)
        plan = BucketBatchSampler(lengths, batch_size, bounds, seed=seed).plan(0)
        return [([int(i) for i in b.indices], b.padded_length) for b in plan], list(bounds)
    return [([int(i) for i in b.indices], b.padded_length)
            for b in padding.padded_batches(lengths, batch_size, strategy, max_length=max_length, seed=seed)], None


def padded_tensors(token_ids: Sequence[Sequence[int]], indices: Sequence[int], padded_length: int, *,
                   pad_token_id: int = 0) -> dict[str, Any]:
    """``input_ids`` and ``attention_mask`` (torch tensors on the CPU, ``len(indices) x padded_length``) of the rows
    `indices` of `token_ids`, each padded on the right with `pad_token_id` (BERT's ``[PAD]`` is 0)."""
    import torch

    x = torch.full((len(indices), padded_length), pad_token_id, dtype=torch.long)
    mask = torch.zeros(len(indices), padded_length, dtype=torch.long)
    for row, i in enumerate(indices):
        if len(token_ids[i]) > padded_length:
            raise BucketError(f"row {i} has {len(token_ids[i])} tokens, more than the padded length {padded_length}")
        x[row, :len(token_ids[i])] = torch.tensor(token_ids[i])
        mask[row, :len(token_ids[i])] = 1
    return {"input_ids": x, "attention_mask": mask}
