"""Padding strategies: the report's arithmetic on tiny inputs, and agreement with real tokenizers' padding.

No TensorFlow or torch here (this module is imported beside other test groups); tokenizers only.
"""
import sys

import numpy as np
import pytest

from tpu_helpers.shared import padding
from tpu_helpers.shared.banking_queries import banking_queries

# batch 1 (in order): lengths 3, 5, 9, 17 (truncated to 16); batch 2: 2, 2, 2, 2
LENGTHS = [3, 5, 9, 17, 2, 2, 2, 2]


def test_round_up_and_default_boundaries():
    assert [padding.round_up(n, 8) for n in (1, 8, 9, 16, 17)] == [8, 8, 16, 16, 24]
    assert padding.round_up(5, 1) == 5
    assert padding.default_boundaries(128) == [8, 16, 32, 64, 128]
    assert padding.default_boundaries(100) == [8, 16, 32, 64, 100] and padding.default_boundaries(4) == [4]


def test_longest_multiple_and_max_length_arithmetic():
    def ev(strategy):
        return padding.evaluate_strategy(LENGTHS, 4, strategy, max_length=16)

    longest, m8, fixed = ev("longest"), ev("multiple_of_8"), ev("max_length")
    real = 3 + 5 + 9 + 16 + 4 * 2
    assert longest.real_tokens == m8.real_tokens == fixed.real_tokens == real
    assert longest.shapes == ((4, 2), (4, 16)) and longest.compilations == 2
    assert longest.computed_tokens == 4 * 16 + 4 * 2
    assert m8.shapes == ((4, 8), (4, 16)) and m8.computed_tokens == 4 * 16 + 4 * 8
    assert fixed.shapes == ((4, 16),) and fixed.compilations == 1 and fixed.computed_tokens == 8 * 16
    assert longest.padded_fraction == pytest.approx(1 - real / 72)
    assert fixed.tokens_per_real_token == pytest.approx(128 / real)
    with pytest.raises(ValueError, match="not a multiple of 32"):  # transformers refuses this combination
        ev("multiple_of_32")


def test_buckets_group_by_length_and_drops_partial_buckets():
    # default bounds for max_length 16: [8, 16]. Bucket 8 fills with 3, 5, 2, 2; then 2, 2 stay pending;
    # bucket 16 holds 9 and 17 (truncated to 16): both partial, dropped (every batch is full, as drop_remainder=True makes it).
    batches = padding.padded_batches(LENGTHS, 4, "buckets", max_length=16)
    assert [(b.indices.tolist(), b.padded_length) for b in batches] == [([0, 1, 4, 5], 8)]
    r = padding.evaluate_strategy(LENGTHS, 4, "buckets", max_length=16)
    assert r.compilations == 1 and r.real_tokens == 3 + 5 + 2 + 2 and r.computed_tokens == 4 * 8
    custom = padding.evaluate_strategy(LENGTHS, 2, "buckets", max_length=16, boundaries=[4, 16])
    assert custom.shapes == ((2, 4), (2, 16))


def test_seed_shuffles_the_same_way_for_every_strategy():
    a = padding.padded_batches(range(1, 65), 8, "longest", max_length=64, seed=3)
    b = padding.padded_batches(range(1, 65), 8, "max_length", max_length=64, seed=3)
    assert [x.indices.tolist() for x in a] == [x.indices.tolist() for x in b]
    assert sorted(np.concatenate([x.indices for x in a]).tolist()) == list(range(64))
    assert [x.indices.tolist() for x in a] != [list(range(i, i + 8)) for i in range(0, 64, 8)]


def test_report_table_truncation_and_errors():
    report = padding.padding_report(LENGTHS, 4, max_length=64, seed=None)
    assert list(report.results) == list(padding.DEFAULT_STRATEGIES)
    assert report.truncated_fraction == 0 and report["max_length"].compilations == 1
    assert report["multiple_of_32"].shapes == ((4, 32),) and report["multiple_of_64"].computed_tokens == 8 * 64
    text = report.table()
    assert "multiple_of_32" in text and "8 samples, batch 4, max_length 64" in text
    assert [r.strategy for r in report][0] == "longest"
    short = padding.padding_report(LENGTHS, 4, max_length=16, strategies=("longest", "max_length"), seed=None)
    assert short.truncated_fraction == pytest.approx(1 / sum(LENGTHS))
    with pytest.raises(ValueError, match="unknown padding strategy"):
        padding.padded_batches(LENGTHS, 4, "shortest", max_length=16)
    with pytest.raises(ValueError, match="fewer than one batch"):
        padding.padding_report([3, 4], 4, max_length=16)


def test_plot_has_one_point_per_strategy_and_dataset():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    reports = {"a": padding.padding_report(LENGTHS, 4, max_length=64),
               "b": padding.padding_report(LENGTHS * 3, 4, max_length=128)}
    fig = padding.plot_padding_reports(reports)
    ax = fig.axes[0]
    assert len(ax.collections) == 2 and all(len(c.get_offsets()) == 6 for c in ax.collections)
    assert ax.get_xscale() == "log" and "compilations" in ax.get_xlabel()
    import matplotlib.pyplot as plt
    plt.close(fig)


@pytest.fixture(scope="module")
def wordpiece():
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, normalizers, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    texts = banking_queries(300, seed=1)
    tok.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=500, show_progress=False,
                                                             special_tokens=["[PAD]", "[UNK]"]))
    return tok, texts


def test_predicted_lengths_equal_what_tokenizers_pads_to(wordpiece):
    """`tokenizers`' own padding (pad_to_multiple_of / fixed length) gives the predicted shapes."""
    tok, texts = wordpiece
    tok.no_padding()
    tok.no_truncation()
    lengths = [len(e.ids) for e in tok.encode_batch(texts)]
    assert max(lengths) > 24  # truncation is exercised with "longest" below
    for strategy in padding.DEFAULT_STRATEGIES:
        max_length = 24 if strategy == "longest" else 64  # multiples of N need max_length % N == 0
        for b in padding.padded_batches(lengths, 16, strategy, max_length=max_length, seed=0):
            kw = b.tokenizer_kwargs
            tok.enable_truncation(kw["max_length"])
            if kw["padding"] == "longest":
                tok.enable_padding(pad_id=0, pad_token="[PAD]", pad_to_multiple_of=kw.get("pad_to_multiple_of"))
            else:
                tok.enable_padding(pad_id=0, pad_token="[PAD]", length=kw["max_length"])
            encoded = tok.encode_batch([texts[i] for i in b.indices])
            assert {len(e.ids) for e in encoded} == {b.padded_length}, (strategy, b.padded_length)
    tok.no_padding()
    tok.no_truncation()


def test_tokenizer_kwargs_work_with_a_transformers_tokenizer(wordpiece, monkeypatch):
    monkeypatch.setenv("USE_TF", "0")
    monkeypatch.setenv("USE_TORCH", "0")
    frameworks_before = {"tensorflow", "torch_xla"} & set(sys.modules)
    transformers = pytest.importorskip("transformers")
    tok, texts = wordpiece
    tok.no_padding()
    tok.no_truncation()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]")
    lengths = [len(ids) for ids in fast(texts)["input_ids"]]
    for strategy in padding.DEFAULT_STRATEGIES:
        report = padding.evaluate_strategy(lengths, 16, strategy, max_length=64, seed=0)
        shapes = set()
        for b in padding.padded_batches(lengths, 16, strategy, max_length=64, seed=0):
            ids = fast([texts[i] for i in b.indices], **b.tokenizer_kwargs)["input_ids"]
            assert {len(x) for x in ids} == {b.padded_length}, (strategy, b.tokenizer_kwargs)
            shapes.add((len(ids), len(ids[0])))
        assert len(shapes) == report.compilations
    assert {"tensorflow", "torch_xla"} & set(sys.modules) == frameworks_before, "tokenizers only, no framework"


def test_offline_length_distributions():
    q = banking_queries(500, seed=0)
    assert q == banking_queries(500, seed=0) and q != banking_queries(500, seed=1)
    words = np.array([len(t.split()) for t in q])
    assert 5 <= np.median(words) <= 20 and words.max() > 2 * np.median(words)  # short, with a long tail


def test_report_identities_hold_for_any_lengths():
    """What notebook 02 used to assert on its own run (arithmetic of the report, so it is tested here): max_length
    is one shape with the most padding, rounding up pads at least as much as `longest`, and a multiple of M gives
    at most max_length / M shapes."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        lengths = rng.integers(2, 128, int(rng.integers(64, 400))).tolist()
        rep = padding.padding_report(lengths, 16, max_length=128, seed=int(rng.integers(1000)))
        assert rep["max_length"].compilations == 1
        assert rep["max_length"].padded_fraction >= rep["multiple_of_32"].padded_fraction >= rep["longest"].padded_fraction
        assert rep["multiple_of_32"].compilations <= 128 // 32
    with pytest.raises(ValueError, match="unknown padding strategy"):  # not a hang
        padding.padding_report([3, 5, 9], 2, max_length=16, strategies=("multiple_of_0",))
