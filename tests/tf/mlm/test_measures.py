"""Notebook 04's measuring code (its own cells): the unigram entropy it compares with, the context shuffle, the size
note, the loss at the masks."""
import math

import numpy as np
import pytest
from course_support.mlm import notebook_04_checks

measures = notebook_04_checks()
CONTEXT_BLOCKS_MEASURED, frequency_only_note = measures.CONTEXT_BLOCKS_MEASURED, measures.frequency_only_note
scramble_context, unigram_entropy = measures.scramble_context, measures.unigram_entropy


def test_unigram_entropy_counts_regular_tokens_only():
    blocks = np.array([[0, 5, 5, 6, 7, 2], [0, 5, 6, 6, 7, 2]])  # 0 and 2 are special: 5, 6, 7 with 3, 3, 2 of 8
    p = np.array([3, 3, 2]) / 8
    assert unigram_entropy(blocks, [0, 1, 2]) == pytest.approx(float(-(p * np.log(p)).sum()))
    assert unigram_entropy(np.full((2, 4), 9), [0]) == 0.0  # one token: nothing to guess


def test_scramble_context_moves_only_unlabelled_regular_tokens():
    rng = np.random.default_rng(1)
    ids = rng.integers(5, 500, size=(4, 64))
    ids[:, 0], ids[:, -1] = 0, 2  # <s> ... </s>
    labels = np.full_like(ids, -100)
    labels[:, 10:64:9] = ids[:, 10:64:9]
    ids[:, 10:64:9] = 4  # <mask>
    batch = {"input_ids": ids, "attention_mask": np.ones_like(ids), "labels": labels}
    out = scramble_context(batch, special_ids=[0, 1, 2, 3, 4], seed=0)
    fixed = (labels != -100) | np.isin(ids, [0, 2, 4])
    assert np.array_equal(out["input_ids"][fixed], ids[fixed])  # masks, labels' places, specials stay
    assert out["labels"] is labels and not np.array_equal(out["input_ids"], ids)
    for a, b in zip(out["input_ids"], ids):  # each row keeps its own tokens, in another order
        assert sorted(a) == sorted(b)
    assert np.array_equal(batch["input_ids"], ids)  # the batch itself is left alone


def test_frequency_only_note_below_the_measured_size_only():
    note = frequency_only_note(72, 64, 32)  # notebook 04's ci profile
    assert note and "4,608 blocks of 32 tokens" in note
    assert f"MAX_STEPS of at least {math.ceil(CONTEXT_BLOCKS_MEASURED / 64):,} at this global batch" in note
    assert frequency_only_note(2_000, 64, 32) is None  # the cpu profile
    assert frequency_only_note(12_000, 64, 128) is None  # the tpu profile (64 blocks per replica, one replica)
    assert frequency_only_note(2_000, 16, 128) is not None  # 32 k blocks of 128 tokens: measured on the plateau
    generated = frequency_only_note(2_000, 64, 32, generated_text=True)  # the cpu profile on CORPUS='offline'
    assert generated and "generated text" in generated and "python-docs" in generated


def test_masked_loss_measures_the_labelled_positions_and_refuses_a_batch_too_large_for_the_host(tf, monkeypatch):
    """Notebook 04 runs it eagerly outside strategy.run: a v5e-8's global batch (512 x 128 x 25,000 logits) must be
    refused with what to pass instead, not computed on the host."""
    from transformers import RobertaConfig, TFRobertaForMaskedLM

    masked_loss = measures.masked_loss

    config = RobertaConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                           intermediate_size=32, max_position_embeddings=20)
    model = TFRobertaForMaskedLM(config)
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 50, size=(6, 16)).astype(np.int32)
    labels = np.where(rng.random(ids.shape) < 0.3, ids, -100).astype(np.int32)
    ids = np.where(labels != -100, 4, ids)  # <mask> where labelled
    batch = {"input_ids": ids, "attention_mask": np.ones_like(ids), "labels": labels}
    logits = model({"input_ids": ids, "attention_mask": batch["attention_mask"]}, training=False).logits
    per_token = tf.keras.losses.sparse_categorical_crossentropy(np.maximum(labels, 0), logits, from_logits=True)
    want = float(np.asarray(per_token)[labels != -100].mean())
    assert masked_loss(model, batch) == pytest.approx(want, rel=1e-5)
    assert masked_loss(model, batch, only_input=4) == pytest.approx(want, rel=1e-5)  # every label is a <mask> here
    monkeypatch.setattr(measures, "MAX_LOGITS", 2 * 16 * 50)
    with pytest.raises(ValueError, match=r"6 x 16 x 50 = 4,800 logits.*at most 2 rows"):
        masked_loss(model, batch)
    assert masked_loss(model, {k: v[:2] for k, v in batch.items()}) > 0
