"""What notebook 04's masked LM must beat to have learned more than word frequencies, and whether a run is big
enough to get there.

A masked LM that ignores the context can still lower its loss from ``ln(vocab)`` to the **unigram entropy** of the
tokens it predicts: it guesses each token's frequency, whatever the sentence. That plateau comes first; a model that
uses the context goes below it, and its fill-mask guesses change with the prompt.

Why the loss Keras reports cannot tell: BERT's masking leaves 10 % of the labelled tokens unchanged, and a model
copies those without any context, which takes the mean loss some 0.3-0.5 nats below the unigram entropy on its own.
At the ``<mask>`` tokens only the context can beat the entropy (`masked_loss` with ``only_input``), and shuffling
the words around the masks (`scramble_context`) must then make the loss worse.

Measured (issue 27, 2026-11-26, a 2-core CPU) with notebook 04's cpu model (hidden 128, 2 layers, 2 heads, learning
rate 2e-3), 2,048 tokens a step, on 1.1 MB of real English (the licence texts of ``/usr/share/common-licenses`` and
Python's release notes from ``/usr/share/doc/python3.11``, one paragraph a line), the loss at the masks of held-out
masking of the training blocks, with the context and shuffled:

* **128-token blocks, 16 a step** (the seed's block length; the cpu profile until then), vocabulary 4,000 or 1,000,
  with or without dropout, learning rate 1e-3 to 5e-3: after 1,500-2,000 steps (up to 32 k blocks, 4.1 M tokens)
  no run read the context (shuffling it changed the loss by < 0.015 nats); 64-token blocks, 32 a step: the same at
  1,500 steps;
* **32-token blocks, 64 a step**, vocabulary 1,000, learning rate 2e-3: every run left the plateau between steps
  750 and 1,250 (seeds 0-3, with and without dropout) and at 1,500 steps (96 k blocks) every one was at least 0.57
  nats below the unigram entropy at the masks, and shuffling the context cost at least 0.26 nats; at 2,000 steps
  0.92-1.12 and 0.83-1.21. Vocabulary 4,000 or 2,000 left it later (step 1,250-1,500); learning rate 3e-3 not by
  1,500.

On 330 KB of other real English (the Python Language Reference's prose, notebook 04's ``CORPUS = "python-docs"``),
the same settings left the plateau at step 1,250-1,500 and were 0.89 nats below the entropy at step 2,000, shuffling
costing 1.06. On the course's **generated** text (``CORPUS = "offline"``, 1 MB), whose tokens are as predictable from
the previous one as real English's (about 2.2 nats below the unigram entropy, counted on the blocks), the plateau
lasted more than twice as long: still on it at step 2,500, off it from step 3,000-3,500, and at step 4,000 only 0.23
nats below the entropy (one seed). That is beyond a CPU's notebook budget, so on generated text the claims are
printed, never asserted.

So at this size the block length decides, not the number of tokens (with 16-token blocks the generated text's
plateau ended by step 500): the cpu profile trains 2,000 steps of 64 blocks of 32 tokens with a 1,000-token
vocabulary, and the notebook asserts the context claims on real text from 96 k blocks up
(``CONTEXT_BLOCKS_MEASURED``). Every run, and the script that measures one: docs/benchmarks.md,
``benchmarks/mlm_context_curve.py``.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

# from this many training blocks (steps x global batch) up every measured run read the context (above)
CONTEXT_BLOCKS_MEASURED = 96_000
MEASURED_ON = ("1.1 MB of English text with the cpu profile's model and 32-token blocks "
               "(tpu_helpers/mlm/claims.py)")


def unigram_entropy(blocks: np.ndarray, special_ids: Sequence[int]) -> float:
    """Entropy (nats) of the token frequencies in `blocks`, special tokens left out (they are never masked): the
    loss of a model that predicts every masked token from its frequency alone."""
    ids, counts = np.unique(np.asarray(blocks), return_counts=True)
    keep = ~np.isin(ids, np.asarray(list(special_ids)))
    if not keep.any():
        raise ValueError("no regular token in the blocks")
    p = counts[keep] / counts[keep].sum()
    return float(-(p * np.log(p)).sum())


def frequency_only_note(total_steps: int, global_batch: int, block_size: int, *,
                        generated_text: bool = False) -> str | None:
    """A note for a run that will not leave the frequency plateau (by the measurements above), or None: a run
    smaller than `CONTEXT_BLOCKS_MEASURED`, or one on the course's generated text (`generated_text`)."""
    blocks = total_steps * global_batch
    if generated_text:
        return ("this run trains on the course's generated text (CORPUS='offline'), where the model learns the token "
                "frequencies (and to copy the tokens the masking leaves unchanged) for more than 2,500 steps of this "
                "notebook's cpu profile before it reads the context (measured: tpu_helpers/mlm/claims.py). The "
                "context claims are asserted on real text: CORPUS='python-docs' (offline), WikiText or your own.")
    if blocks >= CONTEXT_BLOCKS_MEASURED:
        return None
    steps = -(-CONTEXT_BLOCKS_MEASURED // global_batch)
    return (f"this run trains on {blocks:,} blocks of {block_size} tokens: at this size the model learns the token "
            f"frequencies (and to copy the tokens the masking leaves unchanged), not the context. Measured on "
            f"{MEASURED_ON}: every run read the context from {CONTEXT_BLOCKS_MEASURED:,} blocks up, and runs of "
            f"32,000 blocks of 128 tokens did not. A real result needs MAX_STEPS of at least {steps:,} at this "
            f"global batch (and EPOCHS high enough), with short blocks (BLOCK_SIZE 32) on a CPU.")


def distinct_top_guesses(results: Sequence[Sequence[dict[str, Any]]]) -> int:
    """How many different top-1 tokens a fill-mask pipeline gave for a list of prompts."""
    return len({top[0]["token_str"] for top in results})


# The most logits (rows x block x vocabulary) `masked_loss` computes in one call: 2**28 float32 values, 1 GiB of host
# memory. A v5e-8's global batch at the tpu profile is 512 x 128 x 25,000 = 1.6 G values (6.6 GB, as float64 13 GB).
MAX_LOGITS = 2**28


def masked_loss(model: Any, batch: dict, only_input: int | None = None, *, max_logits: int = MAX_LOGITS) -> float:
    """Mean cross-entropy (nats) of `model` at the labelled positions of an MLM batch (labels -100 elsewhere); with
    `only_input` (the ``<mask>`` id), only at the labelled positions whose input is that token. It runs the model
    eagerly, outside ``strategy.run``: a batch whose logits exceed `max_logits` values raises
    `ValueError` (pass a few rows, ``{k: v[:rows] for k, v in batch.items()}``)."""
    labels = np.asarray(batch["labels"])
    rows, length = labels.shape
    vocab = int(getattr(getattr(model, "config", None), "vocab_size", 0) or 0)
    if vocab and rows * length * vocab > max_logits:
        fit = max(1, max_logits // (length * vocab))
        raise ValueError(
            f"masked_loss would compute {rows:,} x {length} x {vocab:,} = {rows * length * vocab:,} logits on the host "
            f"at once (more than {max_logits:,}): a global batch is too large for a check outside strategy.run. "
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
