"""Chunking into fixed blocks, shard names and the manifest."""
from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
from course_support.mlm import records_in_name

from tpu_helpers.mlm.lesson_cells import Manifest, ShardInfo, shard_name, tokenize_and_chunk


def chunk_token_lists(docs, block_size, batch_size=1000):
    """`tokenize_and_chunk` on documents given as their token ids: line i of the corpus tokenizes to ``docs[i]``."""
    corpus = SimpleNamespace(dataset={"text": [str(i) for i in range(len(docs))]})

    def token_ids(lines, **_):
        return {"input_ids": [docs[int(line)] for line in lines]}

    return tokenize_and_chunk(corpus, token_ids, block_size=block_size, batch_size=batch_size, progress=False)


def _docs(rng: np.random.Generator, n: int, max_len: int = 400) -> list[list[int]]:
    return [rng.integers(5, 1000, size=int(rng.integers(1, max_len))).tolist() for _ in range(n)]


def test_blocks_are_the_concatenation_cut_into_fixed_lengths():
    docs = _docs(np.random.default_rng(0), 200)
    blocks, stats = chunk_token_lists(docs, 128)
    flat = np.concatenate([np.asarray(d) for d in docs])
    assert blocks.shape == (len(flat) // 128, 128) and blocks.dtype == np.int32
    assert np.array_equal(blocks.reshape(-1), flat[: blocks.size])
    assert stats.documents == 200 and stats.tokens == len(flat)
    assert stats.tokens == stats.blocks * 128 + stats.dropped_tokens
    assert stats.dropped_tokens == len(flat) % 128


def test_remainder_is_carried_across_batches_not_dropped_per_batch():
    docs = _docs(np.random.default_rng(1), 300)
    whole, whole_stats = chunk_token_lists(docs, 128)
    parts, stats = chunk_token_lists(docs, 128, batch_size=7)  # 43 small batches
    assert np.array_equal(parts, whole)
    assert stats.dropped_tokens == whole_stats.dropped_tokens < 128
    # The seed's per-batch grouping would drop each batch's remainder: far more than one block's worth.
    per_batch_drop = sum(sum(len(d) for d in docs[i: i + 7]) % 128 for i in range(0, len(docs), 7))
    assert per_batch_drop > 128 > stats.dropped_tokens


def test_exact_multiple_long_documents_and_empty_input():
    blocks, stats = chunk_token_lists([list(range(5, 5 + 3 * 64))], 64)
    assert blocks.shape == (3, 64) and stats.dropped_tokens == 0
    assert blocks[2, -1] == 5 + 3 * 64 - 1
    blocks, stats = chunk_token_lists([], 128)
    assert blocks.shape == (0, 128) and stats.tokens == stats.blocks == stats.dropped_tokens == 0
    blocks, stats = chunk_token_lists([[1, 2, 3]], 128)
    assert blocks.shape == (0, 128) and stats.dropped_tokens == 3


def test_chunking_counts_the_dropped_remainder_and_refuses_a_zero_block():
    assert chunk_token_lists([[1, 2, 3, 4, 5]], 4)[1].dropped_tokens == 1
    with pytest.raises(ValueError, match="block_size must be positive"):
        chunk_token_lists([[1, 2]], 0)


def test_shard_names_carry_the_record_count():
    name = shard_name("train", 3, 1000)
    assert name == "train-00003-1000.tfrecord"
    assert records_in_name(f"gs://bucket/mlm/train/{name}") == 1000
    assert records_in_name("dataset-0-512.tfrecord") is None  # the seed's names have no 5-digit index
    assert records_in_name("notes.txt") is None
    with pytest.raises(ValueError):
        shard_name("a/b", 0, 1)


def test_manifest_round_trip():
    m = Manifest(block_size=128, records_per_shard=2, prefix="train",
                 shards=[ShardInfo("train-00000-2.tfrecord", 2, 100, "ab"), ShardInfo("train-00001-1.tfrecord", 1, 50, "cd")],
                 complete=True, metadata={"corpus": "x"})
    d = json.loads(m.to_json())
    assert d["total_records"] == 3
    assert Manifest.from_json(m.to_json()) == m
    with pytest.raises(RuntimeError):
        Manifest.from_json(json.dumps({**d, "format": "something-else"}))


@pytest.mark.parametrize("texts", [[], ["", "   ", "\n"]])
def test_a_tokenizer_of_nothing_is_refused(texts):
    from tpu_helpers.mlm.lesson_cells import train_unigram_tokenizer

    with pytest.raises(ValueError, match="no text"):
        train_unigram_tokenizer(texts, 100)
