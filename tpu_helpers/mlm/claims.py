"""What notebook 04's masked LM must beat to have learned more than word frequencies (docs/benchmarks.md)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

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
