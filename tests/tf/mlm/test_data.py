"""MLM data: offline corpus, Unigram tokenizer, RoBERTa config ids, shards + manifest (interrupted writes
included), the tf.data pipeline and the statistics of TF-native masking. Runs in the TensorFlow test process."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from course_support.mlm import crash_at_record, notebook_04_checks, records_in_name

from tpu_helpers.mlm.corpus import load_course_corpus
from tpu_helpers.mlm.lesson_cells import (
    ROBERTA_BASE,
    SPECIAL_TOKENS,
    MaskingSpec,
    check_config_matches_tokenizer,
    check_enough_blocks,
    filter_lines,
    make_mlm_dataset,
    mask_tokens,
    read_manifest,
    roberta_config,
    shard_files,
    shard_name,
    show_masked_example,
    tokenize_and_chunk,
    train_unigram_tokenizer,
    write_shards,
)

BLOCK = 128
verify_shards = notebook_04_checks().verify_shards  # notebook 04's Why? B cell
to_tf_dataset_baseline = notebook_04_checks().to_tf_dataset_baseline  # its Why? D measure cell


@pytest.fixture(scope="module")
def corpus():
    return filter_lines(load_course_corpus("offline", offline_max_chars=150_000))


@pytest.fixture(scope="module")
def tokenizer(tf, corpus, tmp_path_factory):
    return train_unigram_tokenizer(corpus.dataset, 800, save_to=tmp_path_factory.mktemp("tok"))


@pytest.fixture(scope="module")
def chunked(corpus, tokenizer):
    return tokenize_and_chunk(corpus, tokenizer, block_size=BLOCK, progress=False)


@pytest.fixture(scope="module")
def spec(tokenizer):
    return MaskingSpec.from_tokenizer(tokenizer)


# ------------------------------------------------------------------------------------------ corpus
def test_offline_corpus_is_generated_text_loaded_with_datasets(corpus, tmp_path):
    assert corpus.source == "offline" and "offline" in str(corpus)
    assert type(corpus.dataset).__name__ == "Dataset" and corpus.dataset.column_names == ["text"]
    assert corpus.lines > 300 and corpus.characters() > 100_000
    words = " ".join(corpus.dataset["text"][:200]).split()
    assert sum(w.lower() in ("the", "a", "an", "in", "on") for w in words) / len(words) > 0.08  # English-like


def test_offline_mode_gives_a_clear_answer(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(RuntimeError, match="offline corpus"):
        load_course_corpus("wikitext", max_lines=10)
    c = load_course_corpus("auto", offline_max_chars=20_000)
    assert c.source == "python-docs"  # real English, offline: the claims of notebook 04 hold on it


def test_python_docs_corpus_is_the_python_reference_prose_loaded_with_datasets(tmp_path):
    train = load_course_corpus("python-docs")
    assert train.source == "python-docs" and "python-docs" in train.name
    assert train.dataset.column_names == ["text"] and 200_000 < train.characters() < 600_000
    texts = train.dataset["text"]
    assert any("statement" in t and "executed" in t for t in texts)  # what help("for") says, in words
    assert not any(t.startswith(">>>") for t in texts)  # the interactive examples are left out
    assert load_course_corpus("python-docs").dataset["text"] == texts  # cached, same


def test_empty_corpus_after_filtering_is_a_clear_error(corpus, tokenizer):
    import dataclasses

    blank = dataclasses.replace(corpus, dataset=corpus.dataset.select(range(3)).map(lambda ex: {"text": "  "}))
    with pytest.raises(ValueError, match="no text left"):
        filter_lines(blank)
    tiny = corpus.dataset.select(range(1))
    blocks, stats = tokenize_and_chunk(dataclasses.replace(corpus, dataset=tiny.map(lambda ex: {"text": "Hi."})),
                                       tokenizer, progress=False)
    assert blocks.shape == (0, 128) and stats.dropped_tokens == stats.tokens > 0
    with pytest.raises(ValueError, match="one global batch needs 1 blocks"):
        check_enough_blocks(stats, 1)
    blocks, stats = tokenize_and_chunk(dataclasses.replace(corpus, dataset=corpus.dataset.select([])), tokenizer,
                                       progress=False)
    with pytest.raises(ValueError, match="0 blocks"):
        check_enough_blocks(stats, 1)


# ------------------------------------------------------------------------------------------ tokenizer/config
def test_tokenizer_has_robertas_special_tokens_and_round_trips(tokenizer, tmp_path):
    assert [tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    assert (tokenizer.bos_token_id, tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.mask_token_id) == (0, 1, 2, 4)
    ids = tokenizer("Return the number of bytes.")["input_ids"]
    assert ids[0] == 0 and ids[-1] == 2 and 3 not in ids  # <s> ... </s>, no <unk> for plain English
    assert tokenizer.decode(ids, skip_special_tokens=True) == "Return the number of bytes."
    assert tokenizer.mask_token_id in tokenizer("The value is <mask>.")["input_ids"]
    assert tokenizer("a `` quoted '' word")["input_ids"] == tokenizer('a " quoted " word')["input_ids"]  # seed's normalizer
    tokenizer.save_pretrained(tmp_path)
    from transformers import AutoTokenizer
    again = AutoTokenizer.from_pretrained(tmp_path)
    assert again("Return the number of bytes.")["input_ids"] == ids and again.mask_token == "<mask>"


def test_roberta_config_takes_the_tokenizers_ids(tokenizer):
    cfg = roberta_config(tokenizer, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=128)
    assert cfg.vocab_size == len(tokenizer) and cfg.pad_token_id == tokenizer.pad_token_id
    assert (cfg.bos_token_id, cfg.eos_token_id, cfg.mask_token_id) == (0, 2, 4)
    assert cfg.max_position_embeddings == BLOCK + cfg.pad_token_id + 1 == 130
    assert cfg.type_vocab_size == 1 and cfg.layer_norm_eps == 1e-5  # roberta-base's, not RobertaConfig()'s
    from transformers import RobertaConfig
    seed_like = RobertaConfig(**{**ROBERTA_BASE, "vocab_size": 300, "pad_token_id": 3, "max_position_embeddings": 128})
    with pytest.raises(ValueError) as err:
        check_config_matches_tokenizer(seed_like, tokenizer)
    text = str(err.value)
    assert "vocab_size=300" in text and "pad_token_id=3" in text and "'<unk>'" in text and ">= 132" in text  # pad 3: 128 + 3 + 1
    assert "roberta_config(tokenizer)" in text  # the fix


# ------------------------------------------------------------------------------------------ chunking
def test_tokenize_and_chunk_totals_add_up(corpus, tokenizer, chunked):
    blocks, stats = chunked
    lengths = [len(x) for x in tokenizer(list(corpus.dataset["text"]), return_attention_mask=False, verbose=False)["input_ids"]]
    assert stats.documents == corpus.lines and stats.tokens == sum(lengths)
    assert blocks.shape == (stats.blocks, BLOCK) and blocks.dtype == np.int32
    assert stats.tokens == blocks.size + stats.dropped_tokens and 0 <= stats.dropped_tokens < BLOCK
    first = tokenizer(list(corpus.dataset["text"][:3]), return_attention_mask=False, verbose=False)["input_ids"]
    flat = [t for ids in first for t in ids]
    assert blocks.reshape(-1)[: len(flat)].tolist() == flat  # lines concatenated in order, <s>/</s> kept


# ------------------------------------------------------------------------------------------ shards
def _write(blocks, out, **kw):
    return write_shards(blocks, out, records_per_shard=kw.pop("records_per_shard", 64), progress=False, **kw)


def test_shards_manifest_verify_and_rerun(chunked, tmp_path):
    blocks = chunked[0][:300]
    out = tmp_path / "train"
    rep = _write(blocks, out, metadata={"corpus": "test"})
    names = sorted(p.name for p in out.glob("*.tfrecord"))
    assert names == [shard_name("train", i, n) for i, n in enumerate([64, 64, 64, 64, 44])]
    assert rep.written == names and rep.manifest.complete and rep.manifest.total_records == 300
    assert sum(records_in_name(n) for n in names) == 300
    ok, problems = verify_shards(out)
    assert not problems and ok == names
    again = _write(blocks, out)
    assert again.written == [] and again.skipped == names  # verified shards are not rewritten
    changed = blocks.copy()
    changed[100, 5] += 1  # record 100 lives in shard 1
    third = _write(changed, out)
    assert third.written == [names[1]] and len(third.skipped) == 4
    fewer = _write(blocks[:100], out)
    assert fewer.written == ["train-00001-36.tfrecord"] and fewer.skipped == names[:1]
    assert not any((out / name).exists() for name in names[1:]) and not verify_shards(out)[1]  # replaced: removed


def test_interrupted_write_leaves_no_shard_that_looks_complete(tf, chunked, tmp_path, monkeypatch):
    blocks = chunked[0][:200]
    out = tmp_path / "train"
    with monkeypatch.context() as m, pytest.raises(KeyboardInterrupt):
        crash_at_record(m, 100)  # in the second shard
        _write(blocks, out)
    assert [p.name for p in out.glob("*.tfrecord")] == ["train-00000-64.tfrecord"]  # shard 1 never got its name
    _, problems = verify_shards(out)
    assert "incomplete" in problems[0]
    with pytest.raises(RuntimeError, match="interrupted"):
        shard_files(out, BLOCK)
    done = _write(blocks, out)  # the interrupted run vouched for nothing: every shard is written again
    assert done.written == ["train-00000-64.tfrecord", "train-00001-64.tfrecord", "train-00002-64.tfrecord",
                            "train-00003-8.tfrecord"] and not verify_shards(out)[1]
    # Re-writing a complete folder with other data: it is marked incomplete before the first shard changes,
    # so a crash (here before any manifest checkpoint) never leaves old entries vouching for new files.
    other = blocks[::-1].copy()
    with monkeypatch.context() as m, pytest.raises(KeyboardInterrupt):
        crash_at_record(m, 100)
        _write(other, out)
    assert read_manifest(out).complete is False
    with pytest.raises(RuntimeError, match="interrupted"):
        make_mlm_dataset(str(out), MaskingSpec(4, 800, (0, 1, 2, 3, 4), 1), batch_size=8)
    assert verify_shards(out)[1]  # shard 0 now differs from the checksum its entry still has
    assert _write(other, out).skipped == [] and not verify_shards(out)[1]


def test_crash_between_upload_and_rename(tf, chunked, tmp_path, monkeypatch):
    blocks = chunked[0][:128]
    out = tmp_path / "train"
    rename = tf.io.gfile.rename

    def die(partial, final, overwrite=False):  # the second shard's upload finished, the process dies before the rename
        if "train-00001" in final:
            assert Path(partial).stat().st_size > 0
            raise SystemExit("killed after the upload, before the rename")
        rename(partial, final, overwrite=overwrite)

    with monkeypatch.context() as m, pytest.raises(SystemExit):
        m.setattr(tf.io.gfile, "rename", die)
        _write(blocks, out)
    assert [p.name for p in out.glob("*.tfrecord")] == ["train-00000-64.tfrecord"]
    assert len(list(out.glob("*.partial-*"))) == 1
    assert any("leftover" in p for p in verify_shards(out)[1])
    _write(blocks, out)
    assert list(out.glob("*.partial-*")) == [] and not verify_shards(out)[1]


def test_truncated_shard_fails_verification_and_is_rewritten(chunked, tmp_path):
    out = tmp_path / "train"
    _write(chunked[0][:128], out)
    shard = out / "train-00001-64.tfrecord"
    data = shard.read_bytes()
    shard.write_bytes(data[: len(data) // 2])  # what the seed's in-place writer leaves when killed
    ok, problems = verify_shards(out)
    assert ok == ["train-00000-64.tfrecord"] and "truncated" in problems[0]
    rep = _write(chunked[0][:128], out)
    assert rep.written == ["train-00001-64.tfrecord"] and not verify_shards(out)[1]


def test_shards_with_another_block_length_are_refused(tf, spec, chunked, tmp_path):
    blocks = chunked[0]
    _write(blocks[:, :64], tmp_path / "b64")
    with pytest.raises(ValueError, match="64-token blocks"):
        make_mlm_dataset(str(tmp_path / "b64"), spec, batch_size=8)
    mixed = tmp_path / "mixed"
    _write(blocks[:128], mixed)
    (mixed / "old-00000-64.tfrecord").write_bytes((tmp_path / "b64" / "train-00000-64.tfrecord").read_bytes())
    with pytest.raises(RuntimeError, match="not listed"):
        make_mlm_dataset(str(mixed), spec, batch_size=8)
    with pytest.raises(ValueError, match="2-D"):
        _write(blocks[0], tmp_path / "bad")


# ------------------------------------------------------------------------------------------ pipeline
def test_pipeline_shapes_cardinality_and_labels(tf, spec, tokenizer, chunked, tmp_path):
    blocks = chunked[0][:300]
    out = tmp_path / "train"
    _write(blocks, out)
    ds = make_mlm_dataset(str(out), spec, batch_size=32, seed=0)
    assert int(ds.cardinality()) == 300 // 32
    assert ds.element_spec["input_ids"].shape == (32, BLOCK) and ds.element_spec["labels"].shape == (32, BLOCK)
    batches = list(ds.as_numpy_iterator())
    assert len(batches) == 9
    originals = {tuple(r) for r in blocks.tolist()}
    for b in batches:
        assert (b["attention_mask"] == 1).all()
        restored = np.where(b["labels"] != -100, b["labels"], b["input_ids"])
        assert all(tuple(r) in originals for r in restored.tolist())  # labels + inputs give back real blocks
    first = next(iter(make_mlm_dataset(str(out), spec, batch_size=32, shuffle=False)))
    assert set(first) == {"input_ids", "attention_mask", "labels"} and first["labels"].shape == (32, BLOCK)
    text = show_masked_example(first, tokenizer, max_tokens=BLOCK)
    assert "[<mask>→" in text and "▁" not in text


def test_pipeline_seed_reproducibility(tf, spec, chunked, tmp_path):
    out = tmp_path / "train"
    _write(chunked[0][:256], out)
    a = make_mlm_dataset(str(out), spec, batch_size=32, seed=7)
    b = make_mlm_dataset(str(out), spec, batch_size=32, seed=7)
    first_a, first_b = next(iter(a)), next(iter(b))
    assert np.array_equal(first_a["input_ids"], first_b["input_ids"])
    epoch1, epoch2 = [x["labels"].numpy() for x in a], [x["labels"].numpy() for x in a]
    assert not all(np.array_equal(p, q) for p, q in zip(epoch1, epoch2))  # training: new masks each epoch
    ev = make_mlm_dataset(str(out), spec, batch_size=32, seed=7, shuffle=False)
    assert all(np.array_equal(p["labels"], q["labels"]) for p, q in zip(ev, ev))  # evaluation: fixed masks


def test_masking_statistics(tf, spec):
    rng = np.random.default_rng(0)
    ids = rng.integers(len(SPECIAL_TOKENS), spec.vocab_size, size=(512, BLOCK)).astype(np.int32)
    ids[:, 0], ids[:, -1] = 0, 2  # <s> ... </s>
    ids[::3, 60:70] = 1  # <pad>
    ids[::5, 10] = 3  # <unk>
    ids[::7, 20] = 4  # <mask> already in the text
    special = np.isin(ids, spec.special_ids)
    masked, labels = (t.numpy() for t in mask_tokens(tf.constant(ids), spec, seed=tf.constant([1, 2])))
    selected = labels != -100
    assert not (selected & special).any() and np.array_equal(masked[special], ids[special])
    assert np.array_equal(labels[selected], ids[selected]) and np.array_equal(masked[~selected], ids[~selected])
    rate = selected.sum() / (~special).sum()
    assert abs(rate - 0.15) < 0.01, rate
    n = selected.sum()
    to_mask = (masked == spec.mask_token_id) & selected
    unchanged = (masked == ids) & selected
    to_random = selected & ~to_mask & ~unchanged
    assert abs(to_mask.sum() / n - 0.8) < 0.02 and abs(to_random.sum() / n - 0.1) < 0.02
    assert abs(unchanged.sum() / n - 0.1) < 0.02  # (a random draw equal to the original counts here: ~1/800)
    assert not np.isin(masked[to_random], spec.special_ids).any()  # random replacements are regular tokens
    again, _ = mask_tokens(tf.constant(ids), spec, seed=tf.constant([1, 2]))
    assert np.array_equal(again.numpy(), masked)  # stateless: same seed, same masks
    jit = tf.function(lambda x: mask_tokens(x, spec, seed=tf.constant([1, 2])), jit_compile=True)
    assert np.array_equal(jit(tf.constant(ids))[1].numpy(), labels)  # XLA-compilable, same result


def test_pipeline_reads_shards_from_gs_through_the_emulator(tf, local_gcs, spec, chunked):
    bucket = local_gcs.create_bucket("mlm-data-test")
    out = f"{bucket}/mlm/train"
    rep = _write(chunked[0][:200], out)
    assert rep.manifest.complete and len(rep.written) == 4
    assert sorted(tf.io.gfile.glob(f"{out}/*.tfrecord")) == [f"{out}/{n}" for n in rep.written]
    assert not verify_shards(out)[1]
    assert _write(chunked[0][:200], out).skipped == rep.written
    ds = make_mlm_dataset(out, spec, batch_size=16, seed=1)
    assert sum(1 for _ in ds) == 200 // 16 == int(ds.cardinality())


def test_to_tf_dataset_baseline_and_throughput(tf, tokenizer, spec, chunked, tmp_path):
    blocks = chunked[0][:256]
    _write(blocks, tmp_path / "train")
    ours = make_mlm_dataset(str(tmp_path / "train"), spec, batch_size=32, repeat=True)
    base = to_tf_dataset_baseline(blocks, tokenizer, batch_size=32)
    for ds, batches in ((ours, 10), (base, 5)):  # both give batches of 32 masked blocks, the same keys
        got = [b[0] if isinstance(b, tuple) else b for b in ds.take(batches)]  # (inputs, labels) or one dict
        assert len(got) == batches and all(int(b["input_ids"].shape[0]) == 32 for b in got)


def test_pipeline_is_pure_tf_data_and_node_ready_on_gs(tf, local_gcs, spec, tokenizer, chunked, tmp_path):
    purity = pytest.importorskip("tpu_helpers.tpu_tf.purity")
    bucket = local_gcs.create_bucket("mlm-purity-test")
    _write(chunked[0][:128], f"{bucket}/train")
    _write(chunked[0][:128], tmp_path / "train")
    on_gcs = purity.inspect_pipeline(make_mlm_dataset(f"{bucket}/train", spec, batch_size=16))
    assert on_gcs.is_pure and on_gcs.node_ready and len(on_gcs.files) == 2  # list_files marks the shards as files
    local = purity.inspect_pipeline(make_mlm_dataset(str(tmp_path / "train"), spec, batch_size=16))
    assert local.is_pure and not local.node_ready  # pure, but a TPU Node cannot read this machine's disk
    baseline = purity.inspect_pipeline(to_tf_dataset_baseline(chunked[0][:128], tokenizer, batch_size=16))
    assert not baseline.is_pure
