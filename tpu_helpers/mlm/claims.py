"""What notebook 04's masked LM must beat to have learned more than word frequencies, and whether a run is big
enough to get there.

A masked LM that ignores the context can still lower its loss from ``ln(vocab)`` to the **unigram entropy** of the
tokens it predicts: it guesses each token's frequency, whatever the sentence. That plateau comes first; a model that
uses the context goes below it, and its fill-mask guesses change with the prompt.

Measured (issue 27) on 1.05 MB of English prose (the plain-text manuals under ``/usr/share/doc`` and the licence
texts of ``/usr/share/common-licenses`` of a Debian machine, 4,644 lines), notebook 04's cpu model (hidden 128,
2 layers, 16 blocks of 128 tokens per step), on a loaded 2-core CPU:

* vocabulary 4,000, learning rate 2e-3, 160 steps (0.33 M tokens): loss 6.54 for a unigram entropy of 6.535 nats,
  the same top guess ('the') for every prompt;
* vocabulary 4,000, learning rate 1e-3, 480 steps (0.98 M tokens): loss 6.35, still 'the' for every prompt;
* vocabulary 2,000, learning rate 1e-3, 1,500 steps (3.1 M tokens): loss 5.65 for a unigram entropy of 6.17 nats,
  top guesses that differ from prompt to prompt.

The ci profile's synthetic text stays on its plateau too at its size (72 steps: loss 4.78, entropy 4.75).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

# tokens a run must train on before it leaves the unigram plateau, from the measurements above (3.1 M did)
CONTEXT_TOKENS_MEASURED = 3_000_000
MEASURED_ON = "1.05 MB of English text, hidden 128, 2 layers, vocabulary 2,000, learning rate 1e-3 (tpu_helpers/mlm/claims.py)"


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
    """A note for a run too small to leave the unigram plateau (by the measurements above), or None."""
    tokens = total_steps * global_batch * block_size
    if tokens >= CONTEXT_TOKENS_MEASURED:
        return None
    steps = -(-CONTEXT_TOKENS_MEASURED // (global_batch * block_size))
    return (f"this run trains on {tokens / 1e6:.2f} M tokens: at this size the model learns the token frequencies "
            f"only (the same guesses for every prompt). Measured on {MEASURED_ON}, the model left that plateau "
            f"after about {CONTEXT_TOKENS_MEASURED / 1e6:.0f} M tokens: MAX_STEPS={steps} at this batch "
            "(and EPOCHS high enough), on a TPU or with time to spare.")


def distinct_top_guesses(results: Sequence[Sequence[dict[str, Any]]]) -> int:
    """How many different top-1 tokens a fill-mask pipeline gave for a list of prompts."""
    return len({top[0]["token_str"] for top in results})
