"""What notebook 04's masked LM must beat to have learned more than word frequencies, and whether a run is big
enough to get there.

A masked LM that ignores the context can still lower its loss from ``ln(vocab)`` to the **unigram entropy** of the
tokens it predicts: it guesses each token's frequency, whatever the sentence. That plateau comes first; a model that
uses the context goes below it, and its fill-mask guesses change with the prompt.

Why the loss Keras reports cannot tell: BERT's masking leaves 10 % of the labelled tokens unchanged, and a model
copies those without any context, which takes the mean loss some 0.3-0.5 nats below the unigram entropy on its own.
At the ``<mask>`` tokens only the context can beat the entropy (`masked_loss` with ``only_input``), and shuffling
the words around the masks (`scramble_context`) must then make the loss worse.

Measured (issue 27) on 1.05 MB of English prose (the plain-text manuals under ``/usr/share/doc`` and the licence
texts of ``/usr/share/common-licenses`` of a Debian machine, 4,644 lines) with notebook 04's cpu model (hidden 128,
2 layers, 16 blocks of 128 tokens per step), on a loaded 2-core CPU:

* the cpu profile (vocabulary 4,000, learning rate 2e-3, 160 steps, 0.33 M tokens): loss 6.54 for a unigram
  entropy of 6.535 nats, the same top guess ('the') for every prompt; at the ``<mask>`` tokens 6.491, and 6.491
  again with the context shuffled;
* learning rate 1e-3, 480 steps (0.98 M tokens): loss 6.35, still 'the' for every prompt;
* vocabulary 2,000, learning rate 2e-3, no dropout, Adam's beta2 0.98, 600 steps (1.2 M tokens): loss 5.76 for
  6.17 nats; on the synthetic corpus at the same size the loss at the masks did not move when the context was
  shuffled (4.213 both ways): frequencies and copying only;
* vocabulary 2,000, learning rate 1e-3, 1,500 steps (3.1 M tokens): loss 5.65 for 6.17 nats, the first top
  guesses that change from prompt to prompt.

The fill-mask path does not lose the context (the training loss, computed without it, sat where frequencies and
copying put it, and the pipeline's probabilities still moved a little from prompt to prompt): those runs were small.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

# below this many training tokens no measured run (above) left the frequency plateau
CONTEXT_TOKENS_MEASURED = 3_000_000
MEASURED_ON = "1.05 MB of English text with the cpu profile's model (tpu_helpers/mlm/claims.py)"


def unigram_entropy(blocks: np.ndarray, special_ids: Sequence[int]) -> float:
    """Entropy (nats) of the token frequencies in `blocks`, special tokens left out (they are never masked): the
    loss of a model that predicts every masked token from its frequency alone."""
    ids, counts = np.unique(np.asarray(blocks), return_counts=True)
    keep = ~np.isin(ids, np.asarray(list(special_ids)))
    if not keep.any():
        raise ValueError("no regular token in the blocks")
    p = counts[keep] / counts[keep].sum()
    return float(-(p * np.log(p)).sum())


def frequency_only_note(total_steps: int, global_batch: int, block_size: int) -> str | None:
    """A note for a run too small to leave the frequency plateau (by the measurements above), or None."""
    tokens = total_steps * global_batch * block_size
    if tokens >= CONTEXT_TOKENS_MEASURED:
        return None
    steps = -(-CONTEXT_TOKENS_MEASURED // (global_batch * block_size))
    return (f"this run trains on {tokens / 1e6:.2f} M tokens: at this size the model learns the token frequencies "
            f"(and to copy the tokens the masking leaves unchanged), not the context. Measured on {MEASURED_ON}: "
            f"runs up to 1.2 M tokens stayed there, and at 3.1 M tokens the first guesses began to change with the "
            f"prompt. A real result needs more than {CONTEXT_TOKENS_MEASURED / 1e6:.0f} M tokens: MAX_STEPS above "
            f"{steps} at this batch (and EPOCHS high enough), on a TPU or with time to spare.")


def distinct_top_guesses(results: Sequence[Sequence[dict[str, Any]]]) -> int:
    """How many different top-1 tokens a fill-mask pipeline gave for a list of prompts."""
    return len({top[0]["token_str"] for top in results})


def masked_loss(model: Any, batch: dict, only_input: int | None = None) -> float:
    """Mean cross-entropy (nats) of `model` at the labelled positions of an MLM batch (labels -100 elsewhere); with
    `only_input` (the ``<mask>`` id), only at the labelled positions whose input is that token."""
    labels = np.asarray(batch["labels"])
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    logits = np.asarray(model(inputs, training=False).logits, dtype=np.float64)
    at = labels != -100
    if only_input is not None:
        at &= np.asarray(batch["input_ids"]) == only_input
    z = logits[at]
    z = z - z.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    return float(-logp[np.arange(len(z)), labels[at]].mean())


def scramble_context(batch: dict, special_ids: Sequence[int], seed: int = 0) -> dict:
    """The same batch with the context destroyed: in each row the unlabelled regular tokens are shuffled among
    themselves; masked positions, their labels and special tokens stay where they are. A model that predicts from
    frequencies alone scores the same on both; one that reads the context does worse here."""
    rng = np.random.default_rng(seed)
    ids = np.array(batch["input_ids"])
    labels = np.asarray(batch["labels"])
    movable = (labels == -100) & ~np.isin(ids, np.asarray(list(special_ids)))
    for row in range(ids.shape[0]):
        cols = np.flatnonzero(movable[row])
        ids[row, cols] = ids[row, rng.permutation(cols)]
    return {**batch, "input_ids": ids}
