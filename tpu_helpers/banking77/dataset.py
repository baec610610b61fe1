"""BANKING77 (the Hub, a CSV folder, or a synthetic stand-in: *not* BANKING77) as train/test, a tokenizer, a model."""
from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from tpu_helpers.core.hub import hub_access, pinned_revision
from tpu_helpers.shared.banking_queries import BANKING77_LABELS, banking_query

HUB_REPO = "PolyAI/banking77"
HUB_REVISION = "refs/convert/parquet"  # script-free: datasets>=4 refuses the loading script (datasets#8012)
SYNTHETIC_NOTE = ("SYNTHETIC stand-in for BANKING77 generated offline by tpu_helpers.banking77.dataset: the 77 real "
                  "intent names and schema, template text; not real customer queries.")


class Banking77Error(ValueError):
    """A data source that cannot be used as asked; the message says how to fix it."""


_OFFLINE_MODEL = "Offline? Use MODEL='tiny' (a small BERT built here, no download)."
_OFFLINE_DATA = ("Offline? Use DATA_SOURCE='synthetic' (generated here, no download) or DATA_SOURCE='csv' with "
                 "CSV_DIR pointing at a folder holding BANKING77's train.csv and test.csv.")


@dataclass
class Banking77Data:
    """The dataset (``train``/``test``, columns ``text`` and ``label``) and where it came from."""

    dataset: Any  # datasets.DatasetDict
    source: str  # "hub", "csv" or "synthetic"
    origin: str  # repo@revision, folder, or the generator's settings

    def __post_init__(self):
        self.label_names = list(self.dataset["train"].features["label"].names)
        self.num_labels = len(self.label_names)
        self.id2label = dict(enumerate(self.label_names))
        self.label2id = {name: i for i, name in self.id2label.items()}

    def describe(self) -> str:
        sizes = ", ".join(f"{split} {len(ds):,}" for split, ds in self.dataset.items())
        what = SYNTHETIC_NOTE if self.source == "synthetic" else f"BANKING77 from {self.origin}"
        return f"{what} [{self.source}] {sizes} rows, {self.num_labels} intents"


def _features(label_names: Sequence[str]):
    import datasets

    return datasets.Features({"text": datasets.Value("string"), "label": datasets.ClassLabel(names=list(label_names))})


def load_hub():
    """BANKING77 from the Hub's parquet export."""
    import datasets

    with hub_access(f"{HUB_REPO}@{HUB_REVISION}", _OFFLINE_DATA, error=Banking77Error):
        return datasets.load_dataset(HUB_REPO, revision=HUB_REVISION)


def load_csv_dir(folder: str | os.PathLike[str]):
    """``train.csv``/``test.csv`` (``text,category``); label ids in the Hub's order when all are BANKING77's."""
    import datasets

    folder = Path(folder)
    files = {split: folder / f"{split}.csv" for split in ("train", "test")}
    if missing := [str(p) for p in files.values() if not p.is_file()]:
        raise Banking77Error(f"missing {', '.join(missing)}: CSV_DIR must hold BANKING77's train.csv and test.csv "
                             "(columns text,category), e.g. from github.com/PolyAI-LDN/task-specific-datasets "
                             "(banking_data/).")
    # datasets' own CSV reader (pandas); keep_default_na=False keeps a query such as "NA" as text
    raw = datasets.load_dataset("csv", data_files={k: str(v) for k, v in files.items()}, keep_default_na=False)
    for split, path in files.items():
        header = raw[split].column_names
        if "text" not in header or "category" not in header:
            raise Banking77Error(f"{path} has columns {header}; expected 'text' and 'category' (the original "
                                 "BANKING77 CSV header is: text,category).")
    raw = raw.map(lambda r: {"category": str(r["category"]).strip(), "text": str(r["text"])})
    train_cats = set(raw["train"]["category"])
    if unknown := set(raw["test"]["category"]) - train_cats:
        raise Banking77Error(f"test.csv has categories that train.csv never uses: {sorted(unknown)[:5]}...; the "
                             "model cannot learn a label it never sees. Check the files.")
    names = list(BANKING77_LABELS) if train_cats <= set(BANKING77_LABELS) else sorted(train_cats)
    ids = {name: i for i, name in enumerate(names)}
    return (raw.select_columns(["text", "category"])
            .map(lambda r: {"label": ids[r["category"]]}, remove_columns=["category"]).cast(_features(names)))


def make_synthetic(n_train_per_label: int = 8, n_test_per_label: int = 3, *, seed: int = 0):
    """A labelled SYNTHETIC stand-in for BANKING77 (same schema, the 77 intent names), generated offline."""
    import datasets

    rng, features, splits = random.Random(seed), _features(BANKING77_LABELS), {}
    info = datasets.DatasetInfo(description=SYNTHETIC_NOTE, features=features)
    for split, n in (("train", n_train_per_label), ("test", n_test_per_label)):
        ids = [i for i in range(len(BANKING77_LABELS)) for _ in range(n)]
        rng.shuffle(ids)
        texts = [banking_query(BANKING77_LABELS[i], rng) for i in ids]
        splits[split] = datasets.Dataset.from_dict({"text": texts, "label": ids}, features=features, info=info)
    return datasets.DatasetDict(splits)


def load_banking77(source: str = "synthetic", *, csv_dir: str | os.PathLike[str] | None = None,
                   n_train_per_label: int = 8, n_test_per_label: int = 3, seed: int = 0) -> Banking77Data:
    """Load BANKING77 from ``source`` ("hub", "csv" or "synthetic")."""
    if source == "hub":
        return Banking77Data(load_hub(), "hub", f"{HUB_REPO}@{HUB_REVISION}")
    if source == "csv":
        if not csv_dir:
            raise Banking77Error("DATA_SOURCE='csv' needs CSV_DIR: a folder holding train.csv and test.csv.")
        return Banking77Data(load_csv_dir(csv_dir), "csv", str(csv_dir))
    if source == "synthetic":
        origin = f"make_synthetic({n_train_per_label}/{n_test_per_label} per label, seed={seed})"
        return Banking77Data(make_synthetic(n_train_per_label, n_test_per_label, seed=seed), "synthetic", origin)
    raise Banking77Error(f"unknown data source {source!r}; choose one of hub, csv, synthetic.")


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
    """A classifier labelled from ``data``: ``"tiny"`` (a small BERT) or a Hub model; attention masks kept on device."""
    import torch
    from transformers import AutoModelForSequenceClassification, BertConfig, BertForSequenceClassification

    from tpu_helpers.xla_torch.lesson_cells import keep_attention_masks_on_device

    keep_attention_masks_on_device()  # as notebook 05's section 4 does: else padding_mask.all() is read on the host
    torch.manual_seed(seed)
    labels = dict(num_labels=data.num_labels, id2label=data.id2label, label2id=data.label2id,
                  attn_implementation="eager")
    if model_name == "tiny":
        config = BertConfig(vocab_size=vocab_size, hidden_size=hidden_size, num_hidden_layers=layers,
                            num_attention_heads=heads, intermediate_size=4 * hidden_size,
                            max_position_embeddings=max(max_length, 64), **labels)
        return BertForSequenceClassification(config)
    with hub_access(repr(model_name), _OFFLINE_MODEL, error=Banking77Error) as local_only:
        return AutoModelForSequenceClassification.from_pretrained(
            model_name, revision=pinned_revision(model_name), local_files_only=local_only, **labels)


def token_lengths(texts: Sequence[str], tokenizer) -> list[int]:
    """How many tokens each text really has ([CLS] and [SEP] included), before any padding or truncation."""
    return [len(ids) for ids in tokenizer(list(texts), truncation=False)["input_ids"]]


def length_summary(lengths: Sequence[int], max_length: int) -> dict[str, float]:
    """What one fixed length costs: share of texts truncated and share of the padded tokens that are padding."""
    n, ordered = len(lengths), sorted(lengths)
    return {"texts": n, "max_length": max_length, "longest": ordered[-1], "median": ordered[n // 2],
            "p99": ordered[min(n - 1, int(0.99 * n))], "truncated_share": sum(x > max_length for x in lengths) / n,
            "padding_share": 1 - sum(min(x, max_length) for x in lengths) / (n * max_length)}


def tokenize(dataset, tokenizer, max_length: int, *, padding: str = "max_length"):
    """Tokenized splits with ``labels``: padded to ``max_length`` (torch format) or ``padding="none"`` (lists)."""
    out = dataset.map(lambda batch: tokenizer(batch["text"], truncation=True, max_length=max_length,
                                              padding="max_length" if padding == "max_length" else False),
                      batched=True, remove_columns=["text"]).rename_column("label", "labels")
    columns = [c for c in ("input_ids", "token_type_ids", "attention_mask", "labels") if c in out["train"].column_names]
    if padding == "max_length":
        out.set_format("torch", columns=columns)
        return out
    return out.select_columns(columns)
