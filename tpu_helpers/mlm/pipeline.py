"""Notebook 04's input pipeline, defined in its cells (``lesson_cells``: `MaskingSpec`, `mask_tokens`,
`make_mlm_dataset`), and `show_masked_example`, which prints one masked row."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from tpu_helpers.mlm.lesson_cells import MaskingSpec, make_mlm_dataset, mask_tokens, shard_files  # noqa: F401


def show_masked_example(batch: Mapping[str, Any] | tuple, tokenizer: Any, *, row: int = 0,
                        max_tokens: int = 48) -> str:
    """One row of a masked batch as text: ``[<mask>→the]`` where the model must guess ``the``, ``[~of→the]`` for
    a random replacement and ``[=the]`` for a selected token left unchanged; other tokens plain."""
    inputs, labels = (batch[0], batch[1]) if isinstance(batch, tuple) else (batch, batch["labels"])
    ids = np.asarray(inputs["input_ids"])[row][:max_tokens]
    lab = np.asarray(labels)[row][:max_tokens]
    words = []
    for i, y in zip(ids.tolist(), lab.tolist()):
        shown = tokenizer.convert_ids_to_tokens(int(i))
        if y == -100:
            words.append(shown)
        else:
            orig = tokenizer.convert_ids_to_tokens(int(y))
            words.append(f"[{shown}→{orig}]" if i == tokenizer.mask_token_id else
                         f"[={orig}]" if i == y else f"[~{shown}→{orig}]")
    return " ".join(words).replace("▁", "")
