"""The comparison pipelines and the masked-accuracy metric of tpu_helpers.mlm (notebook 04, benchmark
mlm_pipeline): the per-record pipeline of the seed's script, side-by-side measurement, and accuracy over the
labelled positions only. Runs in the TensorFlow test process; times nothing it asserts on."""
from __future__ import annotations

import numpy as np
import pytest
from course_support.mlm import notebook_04_checks

from tpu_helpers.mlm.corpus import load_course_corpus
from tpu_helpers.mlm.lesson_cells import (
    MaskedAccuracy,
    MaskingSpec,
    StepLog,
    fill_mask_pipeline,
    filter_lines,
    make_mlm_dataset,
    roberta_config,
    train_unigram_tokenizer,
    write_shards,
)

per_record_baseline = notebook_04_checks().per_record_baseline  # notebook 04's Why? D measure cell
compare_pipelines = notebook_04_checks().compare_pipelines
BLOCK = 128
SPEC = MaskingSpec(mask_token_id=4, vocab_size=500, special_ids=(0, 1, 2, 3, 4), pad_token_id=1)


@pytest.fixture(scope="module")
def shards(tf, tmp_path_factory):
    rng = np.random.default_rng(9)
    blocks = rng.integers(5, SPEC.vocab_size, size=(300, BLOCK)).astype(np.int32)
    blocks[:, 0], blocks[:, -1] = 0, 2
    out = tmp_path_factory.mktemp("extra") / "train"
    write_shards(blocks, out, records_per_shard=128, progress=False)
    return str(out), blocks


def test_per_record_baseline_matches_the_course_pipeline_contract(tf, shards):
    out, blocks = shards
    ds = per_record_baseline(out, SPEC, batch_size=32)
    ours = make_mlm_dataset(out, SPEC, batch_size=32)
    assert ds.element_spec == ours.element_spec  # same dict of [32, 128] int32 tensors
    assert int(ds.cardinality()) == 300 // 32 == int(ours.cardinality())
    originals = {tuple(r) for r in blocks.tolist()}
    selected = non_special = 0
    for b in ds.as_numpy_iterator():
        restored = np.where(b["labels"] != -100, b["labels"], b["input_ids"])
        assert all(tuple(r) in originals for r in restored.tolist())
        special = np.isin(restored, SPEC.special_ids)
        assert not (special & (b["labels"] != -100)).any()
        selected += int((b["labels"] != -100).sum())
        non_special += int((~special).sum())
    assert abs(selected / non_special - 0.15) < 0.02
    assert sum(1 for _ in per_record_baseline(out, SPEC, batch_size=32, repeat=True).take(20)) == 20


def test_per_record_baseline_is_pure_but_parses_one_record_per_call(tf, shards):
    purity = pytest.importorskip("tpu_helpers.tpu_tf.purity")
    out, _ = shards
    per_record = purity.inspect_pipeline(per_record_baseline(out, SPEC, batch_size=32))
    batched = purity.inspect_pipeline(make_mlm_dataset(out, SPEC, batch_size=32))
    assert per_record.is_pure and batched.is_pure
    assert per_record.op_counts["ParseExampleV2"] == 1 and batched.op_counts["ParseExampleV2"] == 1
    # where the parse sits: before the batch (per record) or after it (per batch)
    assert per_record.op_counts["BatchDatasetV2"] == batched.op_counts["BatchDatasetV2"] == 1


def test_compare_pipelines_measures_every_candidate_each_round(tf, shards):
    out, _ = shards
    result = compare_pipelines({
        "per record": lambda: per_record_baseline(out, SPEC, batch_size=16, repeat=True),
        "batched": lambda: make_mlm_dataset(out, SPEC, batch_size=16, repeat=True),
    }, rounds=2, seconds=0.05, warmup_steps=1)
    values = {c.name: c.values for c in result.candidates}
    assert set(values) == {"per record", "batched"} and all(len(v) == 2 for v in values.values())
    assert "batch 16" in result.title and all(x > 0 for v in values.values() for x in v)
    assert result.baseline == min(result.medians, key=result.medians.get)  # the slowest
    assert "per record" in result.table() and "x vs per record" in result.table("per record")


def test_compare_pipelines_without_warmup_labels_its_batch(tf, shards):
    """warmup_steps=0 once raised NameError: the title's batch size came from the warm-up loop's last batch."""
    out, _ = shards
    result = compare_pipelines({"batched": lambda: make_mlm_dataset(out, SPEC, batch_size=8, repeat=True)},
                               rounds=1, seconds=0.05, warmup_steps=0)
    assert "batch 8," in result.title and len(result.candidates[0].values) == 1


def test_masked_accuracy_metric_pools_batches_and_differs_from_plain_accuracy(tf):
    import tf_keras as keras

    metric = MaskedAccuracy()
    plain = keras.metrics.SparseCategoricalAccuracy()
    rng = np.random.default_rng(1)
    hits = total = 0
    for labelled in (0.15, 0.5):
        logits = rng.normal(size=(2, BLOCK, 30)).astype(np.float32)
        labels = np.where(rng.random((2, BLOCK)) < 0.7, logits.argmax(-1), rng.integers(0, 30, (2, BLOCK)))
        labels[rng.random((2, BLOCK)) >= labelled] = -100
        keep = labels != -100
        hits += int((logits.argmax(-1) == labels)[keep].sum())
        total += int(keep.sum())
        metric.update_state(tf.constant(labels), tf.constant(logits))
        plain.update_state(tf.constant(labels), tf.constant(logits))
    assert metric.name == "masked_accuracy"
    assert abs(float(metric.result()) - hits / total) < 1e-6  # pooled over positions, not a mean of batch means
    assert float(plain.result()) < 0.5 * float(metric.result())  # the -100 positions count as wrong there
    metric.reset_state()
    assert float(metric.result()) == 0.0


def test_step_log_counts_steps_across_fit_calls(tf):
    import tf_keras as keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.1), "mse")
    x, y = np.ones((12, 3), np.float32), np.zeros((12, 1), np.float32)
    log = StepLog()
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[log])
    model.fit(x, y, batch_size=4, epochs=3, initial_epoch=1, verbose=0, callbacks=[log])  # a resumed run
    assert len(log.losses) == len(log.seconds) == len(log.steps) == 9 and log.first_calls == [0, 3]
    assert len(log.epochs) == 3 and all("loss" in e for e in log.epochs)
    steady = [s for i, s in enumerate(log.seconds) if i not in (0, 3)]
    assert log.seconds_per_step() == pytest.approx(sum(steady) / 7)


def test_fill_mask_pipeline_runs_in_a_tensorflow_process(tf, tmp_path):
    import sys

    from transformers import TFAutoModelForMaskedLM

    corpus = filter_lines(load_course_corpus("offline", offline_max_chars=60_000))
    tokenizer = train_unigram_tokenizer(corpus.dataset, 300)
    config = roberta_config(tokenizer, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                               intermediate_size=32)
    model = TFAutoModelForMaskedLM.from_config(config)
    model(model.dummy_inputs, training=False)
    out = fill_mask_pipeline(model, tokenizer, top_k=3)("The value of the <mask> is returned.")
    assert len(out) == 3 and all(0 < p["score"] < 1 and "sequence" in p for p in out)
    assert "torch_xla" not in sys.modules  # importing the pipelines did not pull in the other XLA
