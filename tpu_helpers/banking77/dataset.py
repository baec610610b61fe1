"""BANKING77 for notebook 05: the data (`tpu_helpers.shared.banking77_data`, shared with notebook 09), a tokenizer, a
model."""
from __future__ import annotations

from typing import Iterable, Sequence

from tpu_helpers.core.hub import hub_access, pinned_revision
from tpu_helpers.shared.banking77_data import (  # noqa: F401  (notebooks 02, 05, 07 and the tests read them here)
    _OFFLINE_MODEL,
    Banking77Data,
    Banking77Error,
    load_banking77,
    load_csv_dir,
    make_synthetic,
)


def train_wordpiece_tokenizer(texts: Iterable[str], vocab_size: int = 2000):
    """A BERT WordPiece tokenizer trained on ``texts`` (transformers 5: from a ``vocab`` dict, notebook 05)."""
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertTokenizer

    wp = BertWordPieceTokenizer(lowercase=True)
    wp.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=1, show_progress=False,
                           special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    return BertTokenizer(vocab=wp.get_vocab(), do_lower_case=True)


def load_tokenizer(model_name: str, train_texts: Iterable[str] = (), vocab_size: int = 2000):
    """``model_name="tiny"``: a WordPiece tokenizer trained on ``train_texts``; otherwise the Hub tokenizer."""
    if model_name == "tiny":
        return train_wordpiece_tokenizer(train_texts, vocab_size)
    from transformers import AutoTokenizer

    with hub_access(f"the tokenizer of {model_name!r}", _OFFLINE_MODEL, error=Banking77Error) as local_only:
        return AutoTokenizer.from_pretrained(model_name, revision=pinned_revision(model_name),
                                             local_files_only=local_only)


def make_model(model_name: str, data: Banking77Data, *, vocab_size: int | None = None, max_length: int = 128,
               hidden_size: int = 64, layers: int = 2, heads: int = 2, seed: int = 0):
    """Notebook 05's `make_model` labelled from ``data``: ``"tiny"`` (a small BERT) or a Hub model, its pinned revision."""
    from tpu_helpers.banking77.lesson_cells import make_model as lesson_model

    if model_name == "tiny":
        return lesson_model("tiny", data.label_names, seed, vocab_size=vocab_size, hidden_size=hidden_size,
                            num_hidden_layers=layers, num_attention_heads=heads, intermediate_size=4 * hidden_size,
                            max_position_embeddings=max(max_length, 64))
    with hub_access(repr(model_name), _OFFLINE_MODEL, error=Banking77Error) as local_only:
        return lesson_model(model_name, data.label_names, seed, revision=pinned_revision(model_name),
                            local_files_only=local_only)


def token_lengths(texts: Sequence[str], tokenizer) -> list[int]:
    """How many tokens each text really has ([CLS] and [SEP] included), before any padding or truncation."""
    return [len(ids) for ids in tokenizer(list(texts), truncation=False)["input_ids"]]


def length_summary(lengths: Sequence[int], max_length: int) -> dict[str, float]:
    """What one fixed length costs: share of texts truncated and share of the padded tokens that are padding."""
    n, ordered = len(lengths), sorted(lengths)
    return {"texts": n, "max_length": max_length, "longest": ordered[-1], "median": ordered[n // 2],
            "p99": ordered[min(n - 1, int(0.99 * n))], "truncated_share": sum(x > max_length for x in lengths) / n,
            "padding_share": 1 - sum(min(x, max_length) for x in lengths) / (n * max_length)}
