"""Notebook 04's measurements: what its masked LM must beat to read the context (docs/benchmarks.md), and the
input pipelines timed side by side."""
from __future__ import annotations

import time
from typing import Any, Callable, Sequence

import numpy as np

from tpu_helpers.core.timing import Benchmark, Candidate

# from this many training blocks (steps x global batch) up every measured run read the context (docs/benchmarks.md)
CONTEXT_BLOCKS_MEASURED = 96_000


def unigram_entropy(blocks: np.ndarray, special_ids: Sequence[int]) -> float:
    """Entropy (nats) of the regular tokens' frequencies in `blocks`: the frequency-only loss."""
    ids, counts = np.unique(np.asarray(blocks), return_counts=True)
    keep = ~np.isin(ids, np.asarray(list(special_ids)))
    p = counts[keep] / counts[keep].sum()
    return float(-(p * np.log(p)).sum())


def frequency_only_note(total_steps: int, global_batch: int, block_size: int, *,
                        generated_text: bool = False) -> str | None:
    """A note for a run that will not leave the frequency plateau (docs/benchmarks.md), or None."""
    blocks = total_steps * global_batch
    if generated_text:
        return ("this run trains on the course's generated text (CORPUS='offline'), where the model learns the token "
                "frequencies (and to copy the tokens the masking leaves unchanged) for more than 2,500 steps of this "
                "notebook's cpu profile before it reads the context (measured: docs/benchmarks.md). The "
                "context claims are asserted on real text: CORPUS='python-docs' (offline), WikiText or your own.")
    if blocks >= CONTEXT_BLOCKS_MEASURED:
        return None
    steps = -(-CONTEXT_BLOCKS_MEASURED // global_batch)
    return (f"this run trains on {blocks:,} blocks of {block_size} tokens: at this size the model learns the token "
            f"frequencies (and to copy the tokens the masking leaves unchanged), not the context. Measured on 1.1 MB "
            f"of English text with the cpu profile's model and 32-token blocks (docs/benchmarks.md): every run read "
            f"the context from {CONTEXT_BLOCKS_MEASURED:,} blocks up, and runs of 32,000 blocks of 128 tokens did not. "
            f"A real result needs MAX_STEPS of at least {steps:,} at this global batch (and EPOCHS high enough), with "
            "short blocks (BLOCK_SIZE 32) on a CPU.")


# the most logits `masked_loss` computes on the host at once: 2**28 float32 values, 1 GiB
MAX_LOGITS = 2**28


def masked_loss(model: Any, batch: dict, only_input: int | None = None) -> float:
    """Mean cross-entropy (nats) at the labelled positions (or those whose input is `only_input`)."""
    labels = np.asarray(batch["labels"])
    rows, length = labels.shape
    vocab = int(getattr(getattr(model, "config", None), "vocab_size", 0) or 0)
    if vocab and rows * length * vocab > MAX_LOGITS:
        fit = max(1, MAX_LOGITS // (length * vocab))
        raise ValueError(
            f"masked_loss would compute {rows:,} x {length} x {vocab:,} = {rows * length * vocab:,} logits on the host "
            f"at once (more than {MAX_LOGITS:,}): a global batch is too large for a check outside strategy.run. "
            f"Pass at most {fit:,} rows of it: {{k: v[:{fit}] for k, v in batch.items()}}.")
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    logits = np.asarray(model(inputs, training=False).logits)
    at = labels != -100
    if only_input is not None:
        at &= np.asarray(batch["input_ids"]) == only_input
    z = logits[at].astype(np.float64)  # the measured positions only, in float64
    z = z - z.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    return float(-logp[np.arange(len(z)), labels[at]].mean())


def scramble_context(batch: dict, special_ids: Sequence[int], seed: int = 0) -> dict:
    """The batch with each row's unlabelled regular tokens shuffled: the context destroyed."""
    rng = np.random.default_rng(seed)
    ids = np.array(batch["input_ids"])
    labels = np.asarray(batch["labels"])
    movable = (labels == -100) & ~np.isin(ids, np.asarray(list(special_ids)))
    for row in range(ids.shape[0]):
        cols = np.flatnonzero(movable[row])
        ids[row, cols] = ids[row, rng.permutation(cols)]
    return {**batch, "input_ids": ids}


def compare_pipelines(pipelines: dict[str, Callable[[], Any]], *, rounds: int = 3, seconds: float = 1.0,
                      warmup_steps: int = 3, progress: bool = False) -> Benchmark:
    """samples/s of each `tf.data` pipeline, timed in interleaved rounds; the baseline is the slowest."""
    from tqdm.auto import tqdm

    def rows(batch: Any) -> int:  # a dict of features, or a (features, labels) pair
        return int((batch[0] if isinstance(batch, tuple) else batch)["input_ids"].shape[0])

    iterators = {name: iter(make()) for name, make in pipelines.items()}
    batches = sorted({rows(next(it)) for it in iterators.values()})  # each pipeline's batch size, from its first batch
    for it in iterators.values():
        for _ in range(warmup_steps):
            next(it)
    values: dict[str, list[float]] = {name: [] for name in pipelines}
    with tqdm(total=rounds * len(pipelines), desc="measuring pipelines", unit="run", disable=not progress) as bar:
        for _ in range(rounds):
            for name, it in iterators.items():  # each round times every pipeline: a busy moment hits them alike
                samples, start = 0, time.perf_counter()
                while (elapsed := time.perf_counter() - start) < seconds:
                    samples += rows(next(it))
                values[name].append(samples / elapsed)
                bar.update(1)
    bench = Benchmark("pipelines", f"input pipelines, batch {'/'.join(map(str, batches))}, {rounds} rounds of "
                                   f"{seconds:g} s each",
                      [Candidate(name, v, "samples/s") for name, v in values.items()], baseline="")
    bench.baseline = min(bench.medians, key=bench.medians.get)
    return bench
