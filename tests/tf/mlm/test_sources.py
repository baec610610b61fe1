"""Notebook 04 on the learner's own text: a local .txt file or folder, gs:// text files through the real
local GCS emulator, a Hugging Face dataset by name (a local parquet dataset the test writes; offline, never a
download), the corpus summary, and a clear error for every kind of unreadable or too small corpus."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tpu_helpers.mlm.corpus import course_corpus, load_course_corpus
from tpu_helpers.mlm.lesson_cells import (
    Corpus,
    MaskingSpec,
    StepLog,
    TrainingPlan,
    check_enough_blocks,
    filter_lines,
    load_corpus,
    make_mlm_dataset,
    masked_sentences,
    read_manifest,
    summarize_corpus,
    tokenize_and_chunk,
    train_unigram_tokenizer,
    write_shards,
)
from tpu_helpers.shared import synthetic_text

BLOCK = 32


def paragraphs(n: int, seed: int = 0) -> list[str]:
    return list(synthetic_text.iter_paragraphs(n=n, seed=seed))


@pytest.fixture(scope="module")
def text_folder(tmp_path_factory):
    """A folder of the learner's text: two files (one in a subfolder, one with CRLF and a BOM), an empty line,
    and a non-text file that must be ignored."""
    root = tmp_path_factory.mktemp("my-text")
    lines = paragraphs(120)
    (root / "a.txt").write_text("\n".join(lines[:60]) + "\n\n", encoding="utf-8")
    (root / "more").mkdir()
    (root / "more" / "b.txt").write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines[60:]).encode("utf-8"))
    (root / "README.md").write_text("not part of the corpus")
    return root, lines


# ------------------------------------------------------------------------------------------ CORPUS values
@pytest.mark.parametrize("value, location, kind", [
    (" WikiText ", "hf:Salesforce/wikitext:wikitext-103-raw-v1:text", "wikitext"),
    ("gs://my-bucket/texts/", "gs://my-bucket/texts/", "yours"),
    ("hf:someone/tickets::body", "hf:someone/tickets::body", "yours"),
])
def test_corpus_values_name_what_load_corpus_reads(value, location, kind):
    where = course_corpus(value)
    assert (where.location, where.kind) == (location, kind)


def test_the_offline_built_ins_are_text_files_and_a_missing_path_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("TPU_COURSE_CACHE", str(tmp_path / "cache"))
    where = course_corpus("offline", offline_max_chars=20_000)
    assert where.kind == "offline" and where.location.endswith(".txt")
    assert load_corpus(where.location).lines > 10 and course_corpus("offline", offline_max_chars=20_000) == where
    monkeypatch.chdir(tmp_path)
    for bad in ("my_tickets.txt", "not a name: at all", "imdb"):
        with pytest.raises(ValueError, match="no such file or folder"):
            load_corpus(course_corpus(bad).location)
    with pytest.raises(ValueError, match="write it as gs://bucket"):
        course_corpus("gs:/bucket/texts")


# ------------------------------------------------------------------------------------------ local text
def test_a_local_folder_is_every_txt_file_line_by_line(text_folder):
    root, lines = text_folder
    corpus = load_corpus(str(root))
    assert corpus.source == "local" and corpus.name == str(root)
    texts = corpus.dataset["text"]
    assert texts == lines[:60] + ["", ""][:1] + lines[60:]  # BOM and CRLF stripped; the empty line kept for the filter
    filtered = filter_lines(corpus)
    assert filtered.dataset["text"] == lines
    assert load_corpus(str(root / "a.txt")).dataset["text"][:60] == lines[:60]
    assert load_corpus(str(root), max_lines=70).lines == 70


def test_own_text_goes_through_the_same_tokenizer_blocks_shards_and_pipeline(tf, text_folder, tmp_path):
    root, lines = text_folder
    corpus = filter_lines(load_corpus(str(root)))
    tokenizer = train_unigram_tokenizer(corpus.dataset, 400)
    blocks, stats = tokenize_and_chunk(corpus, tokenizer, block_size=BLOCK, progress=False)
    check_enough_blocks(stats, 16, characters=corpus.characters())
    write_shards(blocks, tmp_path / "shards", records_per_shard=100, progress=False)
    assert read_manifest(tmp_path / "shards").total_records == stats.blocks
    ds = make_mlm_dataset(str(tmp_path / "shards"), MaskingSpec.from_tokenizer(tokenizer), batch_size=16,
                          block_size=BLOCK, seed=0)
    assert int(ds.cardinality()) == stats.blocks // 16


def test_corpus_summary_counts_characters_not_words():
    import datasets

    english = Corpus(datasets.Dataset.from_dict({"text": ["ab cd", "efghij", "k"]}), "en", "local")
    s = summarize_corpus(english)
    assert "3 lines, 12 characters (12 bytes as UTF-8), 12 distinct characters" in s
    assert "min 1, p10 1, median 5, p90 5, max 6" in s and "spaces 8.3% of characters, non-ASCII 0.0%" in s
    japanese = Corpus(datasets.Dataset.from_dict({"text": ["東京は日本の首都です。", "猫が好きです。"]}), "ja", "local")
    s = summarize_corpus(japanese)
    assert "18 characters (54 bytes as UTF-8)" in s and "non-ASCII 100.0%" in s
    assert "few spaces" in s and "characters per line" in s and "few spaces" not in summarize_corpus(english)


# ------------------------------------------------------------------------------------------ bad text
@pytest.mark.parametrize("content, message", [
    (b"", r"empty\.txt is empty"),
    (b"\n  \n\n", r"empty\.txt is empty"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", r"empty\.txt, line 1, byte 1: not UTF-8 .*binary file"),
    (b"caf\xc3\xa9 is UTF-8\ncaf\xe9 is Latin-1\n", r"empty\.txt, line 2, byte 4: not UTF-8 .*iconv"),
])
def test_unreadable_files_name_the_file_and_line(tmp_path, content, message):
    (tmp_path / "good.txt").write_text("some text\n")
    (tmp_path / "empty.txt").write_bytes(content)
    with pytest.raises(ValueError, match=message):
        load_corpus(str(tmp_path))


def test_a_folder_without_text_files_says_so(tmp_path):
    (tmp_path / "data.csv").write_text("a,b\n")
    with pytest.raises(ValueError, match=r"no \.txt file in .*UTF-8 files named \*\.txt"):
        load_corpus(str(tmp_path))


def test_a_corpus_too_small_for_one_global_batch_says_how_much_more_is_needed(tf, text_folder, tmp_path):
    root, lines = text_folder
    corpus = filter_lines(load_corpus(str(root)))
    tokenizer = train_unigram_tokenizer(corpus.dataset, 400)
    (tmp_path / "few.txt").write_text("\n".join(lines[:3]))
    few = filter_lines(load_corpus(str(tmp_path / "few.txt")))
    _, stats = tokenize_and_chunk(few, tokenizer, block_size=BLOCK, progress=False)
    assert 0 < stats.blocks < 64
    with pytest.raises(ValueError, match=rf"gives {stats.blocks} blocks .* needs 64 blocks: at least "
                                                  rf"{64 * BLOCK:,} tokens \(about [\d,]+ characters.*PER_REPLICA_BATCH"):
        check_enough_blocks(stats, 64, characters=few.characters())
    check_enough_blocks(stats, stats.blocks)  # exactly one batch is enough


# ------------------------------------------------------------------------------------------ gs://
def test_text_in_gs_is_read_through_tf_gfile_from_the_emulator(tf, local_gcs, text_folder):
    root, lines = text_folder
    bucket = local_gcs.create_bucket("my-text-corpus")
    for path in (root / "a.txt", root / "more" / "b.txt", root / "README.md"):
        tf.io.gfile.makedirs(f"{bucket}/texts/{path.parent.relative_to(root)}")
        tf.io.gfile.GFile(f"{bucket}/texts/{path.relative_to(root)}", "wb").write(path.read_bytes())
    local = load_corpus(str(root))
    remote = load_corpus(f"{bucket}/texts")
    assert remote.source == "gcs" and remote.dataset["text"] == local.dataset["text"]
    assert load_corpus(f"{bucket}/texts/a.txt/").dataset["text"][:60] == lines[:60]
    tf.io.gfile.GFile(f"{bucket}/bad/x.txt", "wb").write(b"ok\nnot \xff utf-8\n")
    with pytest.raises(ValueError, match=rf"{bucket}/bad/x\.txt, line 2, byte 5: not UTF-8"):
        load_corpus(f"{bucket}/bad")
    with pytest.raises(ValueError, match="no such file or folder"):
        load_corpus(f"{bucket}/nothing-here")


# ------------------------------------------------------------------------------------------ Hub datasets
@pytest.fixture
def offline(monkeypatch):
    for key in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setenv(key, "1")


def test_a_dataset_by_name_loads_its_text_column_like_wikitext(offline, tmp_path):
    import datasets

    folder = tmp_path / "tickets"
    folder.mkdir()
    bodies = paragraphs(30, seed=3)
    datasets.Dataset.from_dict({"id": list(range(30)), "body": bodies}).to_parquet(str(folder / "train.parquet"))
    corpus = load_corpus(f"hf:{folder}::body")
    assert corpus.source == "hub" and corpus.dataset.column_names == ["text"]
    assert corpus.dataset["text"] == bodies
    assert load_corpus(f"hf:{folder}::body", max_lines=5).lines == 5
    with pytest.raises(ValueError, match=r"no text column 'text'; its columns: \['id', 'body'\]"):
        load_corpus(f"hf:{folder}")
    with pytest.raises(ValueError, match="no text column 'id'"):
        load_corpus(f"hf:{folder}::id")


def test_a_dataset_name_offline_and_not_cached_is_a_clear_error_not_a_download(offline):
    with pytest.raises(RuntimeError, match=r"'tpu-course-test/no-such-tickets'.*HF_HUB_OFFLINE.*text files"):
        load_course_corpus("hf:tpu-course-test/no-such-tickets:default:body")


# ------------------------------------------------------------------------------------------ the plan
def test_the_plan_is_timed_from_the_measured_steps_with_steps_per_execution(tf):
    import tf_keras as keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.1), "mse", steps_per_execution=3)
    x, y = np.ones((36, 3), np.float32), np.zeros((36, 1), np.float32)
    log = StepLog()
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[log])
    assert log.steps == [3, 3, 3] and log.first_calls == [0] and len(log.losses) == 3
    plan = TrainingPlan(total_steps=90, global_batch=4, block_size=BLOCK, steps_per_epoch=9, steps_per_execution=3)
    assert plan.tokens == 90 * 4 * BLOCK and plan.epochs == 10 and math.isnan(plan.remaining_seconds)
    measured = plan.measured(log)
    per_step = (log.seconds[1] + log.seconds[2]) / 6
    assert measured.measured_steps == 9 and measured.compile_seconds == log.seconds[0]
    assert measured.seconds_per_step == pytest.approx(per_step)
    assert measured.remaining_seconds == pytest.approx(81 * per_step)
    assert "measured on this run" in str(measured) and "estimated time for the other 81 steps" in str(measured)
    assert log.seconds_per_step() == pytest.approx(per_step)
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[log])
    with pytest.raises(ValueError, match="one fit call"):
        plan.measured(log)


def test_masked_sentences_come_from_the_corpus_in_any_script():
    lines = paragraphs(20)
    out = masked_sentences(lines, count=3, seed=1)
    assert len(out) == 3 and all(s.count("<mask>") == 1 for s in out)
    assert out == masked_sentences(lines, count=3, seed=1)
    assert any(s.replace("<mask>", "").split()[0] in line for s in out for line in lines)
    cjk = masked_sentences(["東京は日本の首都で、大きな町です。" * 2] * 3, count=2)
    assert all("<mask>" in s and " " not in s for s in cjk)
    with pytest.raises(ValueError, match="found only"):
        masked_sentences(["short"], count=1)


def test_masked_sentences_fit_the_models_block_when_given_a_tokenizer():
    import datasets

    lines = paragraphs(40)
    tokenizer = train_unigram_tokenizer(datasets.Dataset.from_dict({"text": lines}), 300)
    free = masked_sentences(lines, count=6, seed=2, max_chars=200)
    assert max(len(tokenizer(s)["input_ids"]) for s in free) > 16  # the probes are longer than this block
    short = masked_sentences(lines, count=6, seed=2, max_chars=200, tokenizer=tokenizer, max_tokens=16)
    assert all(len(tokenizer(s)["input_ids"]) <= 16 and s.count("<mask>") == 1 for s in short)
    assert all(any(s.split("<mask>")[0].strip() in line for line in lines) for s in short)  # cut from the corpus


def test_an_unreachable_hub_is_asked_once_then_a_clear_error(monkeypatch):
    """No network and no offline variable: one probe (faked unreachable here, so no test ever goes online), then
    the load runs offline and says why, instead of datasets' retries."""
    import os

    from huggingface_hub import constants

    from tpu_helpers.core import hub

    for key in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=5.0: False)
    with pytest.raises(RuntimeError, match=r"'tpu-course-test/no-such-tickets'.*did not answer.*text files"):
        load_course_corpus("hf:tpu-course-test/no-such-tickets::body")
    assert "HF_HUB_OFFLINE" not in os.environ  # restored
