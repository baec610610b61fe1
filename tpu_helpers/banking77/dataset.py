"""BANKING77 (the Hub, a CSV folder, or a synthetic stand-in: *not* BANKING77) as train/test, a tokenizer, a model."""
from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from tpu_helpers.core.hub import hub_access, pinned_revision
from tpu_helpers.shared.banking_queries import BANKING77_LABELS, banking_query

__all__ = [
    "BANKING77_LABELS", "HUB_REPO", "HUB_REVISION", "SOURCES", "Banking77Error", "Banking77Data",
    "load_banking77", "load_hub", "load_csv_dir", "make_synthetic",
    "train_wordpiece_tokenizer", "load_tokenizer", "make_model", "token_lengths", "length_summary", "tokenize",
]

HUB_REPO = "PolyAI/banking77"
HUB_REVISION = "refs/convert/parquet"  # script-free: datasets>=4 refuses the loading script (datasets#8012)
SOURCES = ("hub", "csv", "synthetic")
SYNTHETIC_NOTE = ("SYNTHETIC stand-in for BANKING77 generated offline by tpu_helpers.banking77.dataset: the 77 real intent "
                  "names and schema, template text; not real customer queries.")


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

    @property
    def label_names(self) -> list[str]:
        return list(self.dataset["train"].features["label"].names)

    @property
    def num_labels(self) -> int:
        return len(self.label_names)

    @property
    def label2id(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.label_names)}

    @property
    def id2label(self) -> dict[int, str]:
        return dict(enumerate(self.label_names))

    @property
    def synthetic(self) -> bool:
        return self.source == "synthetic"

    def describe(self) -> str:
        sizes = ", ".join(f"{split} {len(ds):,}" for split, ds in self.dataset.items())
        what = SYNTHETIC_NOTE if self.synthetic else f"BANKING77 from {self.origin}"
        return f"{what} [{self.source}] {sizes} rows, {self.num_labels} intents"


def _features(label_names: Sequence[str]):
    import datasets

    return datasets.Features({"text": datasets.Value("string"),
                              "label": datasets.ClassLabel(names=list(label_names))})


def _check(dataset, where: str):
    """Both splits, a text column, and a ClassLabel label column."""
    import datasets

    missing = [s for s in ("train", "test") if s not in dataset]
    if missing:
        raise Banking77Error(f"{where} has no {' / '.join(missing)} split (found {list(dataset)}); BANKING77 needs "
                             "'train' and 'test'.")
    for split in ("train", "test"):
        cols = dataset[split].column_names
        if "text" not in cols or "label" not in cols:
            raise Banking77Error(f"{where}: the {split} split has columns {cols}; expected 'text' and 'label'.")
    if not isinstance(dataset["train"].features["label"], datasets.ClassLabel):
        raise Banking77Error(f"{where}: 'label' is {dataset['train'].features['label']}, not a ClassLabel with the "
                             "intent names; id2label cannot be built from it.")
    return dataset


def load_hub(repo: str = HUB_REPO, revision: str = HUB_REVISION):
    """BANKING77 from the Hub's parquet export (or a local folder laid out like it)."""
    import datasets

    local = os.path.isdir(repo)
    if local:
        return _check(datasets.load_dataset(repo), repo)
    try:
        with hub_access(f"{repo}@{revision}", _OFFLINE_DATA, error=Banking77Error):
            ds = datasets.load_dataset(repo, revision=revision)
    except Banking77Error as e:
        if "scripts are no longer supported" in str(e):
            raise Banking77Error(
                f"{repo}@{revision} is a loading-script dataset, which datasets>=4 refuses to run. Load the Hub's "
                f"parquet export instead: revision='{HUB_REVISION}' (the default here).") from None
        raise
    return _check(ds, f"{repo}@{revision}")


def _is_utf8(path: Path) -> bool:
    try:
        path.read_bytes().decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def load_csv_dir(folder: str | os.PathLike[str]):
    """``train.csv``/``test.csv`` (``text,category``); label ids in the Hub's order when all are BANKING77's."""
    import datasets

    folder = Path(folder)
    files = {split: folder / f"{split}.csv" for split in ("train", "test")}
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        raise Banking77Error(f"missing {', '.join(missing)}: CSV_DIR must hold BANKING77's train.csv and test.csv "
                             "(columns text,category), e.g. from github.com/PolyAI-LDN/task-specific-datasets "
                             "(banking_data/).")
    for path in files.values():  # datasets refuses an empty split with a message about "instructions"
        with open(path, encoding="utf-8", errors="replace") as f:
            if sum(1 for line in f if line.strip()) < 2:
                raise Banking77Error(f"{path} has a header but no rows.")
    try:  # datasets' own CSV reader (pandas); keep_default_na=False keeps a query such as "NA" as text
        raw = datasets.load_dataset("csv", data_files={k: str(v) for k, v in files.items()}, keep_default_na=False)
    except (ValueError, datasets.exceptions.DatasetGenerationError) as e:
        cause = e.__cause__ or e.__context__
        if isinstance(cause, UnicodeDecodeError) or "codec can't decode" in str(e):
            bad = next((str(p) for p in files.values() if not _is_utf8(p)), str(folder))
            raise Banking77Error(f"{bad} is not UTF-8 text (saved as latin-1 or another encoding?): save it as "
                                 "UTF-8 (Excel: CSV UTF-8) and load it again.") from None
        raise Banking77Error(f"{folder}: the CSV files cannot be read as a table ({type(e).__name__}: "
                             f"{str(e).splitlines()[0][:200]}); expected BANKING77's header text,category.") from None
    for split, path in files.items():
        header = raw[split].column_names
        if "text" not in header or "category" not in header:
            raise Banking77Error(f"{path} has columns {header}; expected 'text' and 'category' (the original "
                                 "BANKING77 CSV header is: text,category).")
    raw = raw.map(lambda r: {"category": str(r["category"]).strip(), "text": str(r["text"])})
    for split, path in files.items():
        empty = [i + 2 for i, c in enumerate(raw[split]["category"]) if not c]  # +2: 1-based, after the header
        if empty:
            raise Banking77Error(f"{path}: line(s) {empty[:5]} have no category; every query needs its intent "
                                 "(text,category). Fix or remove those lines.")
    train_cats = set(raw["train"]["category"])
    unknown = set(raw["test"]["category"]) - train_cats
    if unknown:
        raise Banking77Error(f"test.csv has categories that train.csv never uses: {sorted(unknown)[:5]}...; the "
                             "model cannot learn a label it never sees. Check the files.")
    names = list(BANKING77_LABELS) if train_cats <= set(BANKING77_LABELS) else sorted(train_cats)
    ids = {name: i for i, name in enumerate(names)}
    ds = (raw.select_columns(["text", "category"])
          .map(lambda r: {"label": ids[r["category"]]}, remove_columns=["category"]).cast(_features(names)))
    return _check(ds, str(folder))


def make_synthetic(n_train_per_label: int = 8, n_test_per_label: int = 3, *, seed: int = 0,
                   labels: Sequence[str] = BANKING77_LABELS):
    """A labelled SYNTHETIC stand-in for BANKING77 (same schema, the 77 intent names), generated offline."""
    import datasets

    if n_train_per_label < 1 or n_test_per_label < 1:
        raise Banking77Error("make_synthetic needs at least one train and one test example per label.")
    rng = random.Random(seed)
    features = _features(labels)
    splits = {}
    for split, n in (("train", n_train_per_label), ("test", n_test_per_label)):
        ids = [i for i in range(len(labels)) for _ in range(n)]
        rng.shuffle(ids)
        texts = [banking_query(labels[i], rng) for i in ids]
        info = datasets.DatasetInfo(description=SYNTHETIC_NOTE, features=features)
        splits[split] = datasets.Dataset.from_dict({"text": texts, "label": ids}, features=features, info=info)
    return datasets.DatasetDict(splits)


def load_banking77(source: str = "synthetic", *, csv_dir: str | os.PathLike[str] | None = None,
                   repo: str = HUB_REPO, revision: str = HUB_REVISION, n_train_per_label: int = 8,
                   n_test_per_label: int = 3, seed: int = 0) -> Banking77Data:
    """Load BANKING77 from ``source`` ("hub", "csv" or "synthetic"); see the module docstring."""
    key = (source or "").strip().lower()
    if key == "hub":
        origin = repo if os.path.isdir(repo) else f"{repo}@{revision}"
        return Banking77Data(load_hub(repo, revision), "hub", origin)
    if key == "csv":
        if not csv_dir:
            raise Banking77Error("DATA_SOURCE='csv' needs CSV_DIR: a folder holding train.csv and test.csv.")
        return Banking77Data(load_csv_dir(csv_dir), "csv", str(csv_dir))
    if key == "synthetic":
        ds = make_synthetic(n_train_per_label, n_test_per_label, seed=seed)
        return Banking77Data(ds, "synthetic", f"make_synthetic({n_train_per_label}/{n_test_per_label} per label, "
                                               f"seed={seed})")
    raise Banking77Error(f"unknown data source {source!r}; choose one of {', '.join(SOURCES)}.")


SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def train_wordpiece_tokenizer(texts: Iterable[str], vocab_size: int = 2000):
    """A BERT WordPiece tokenizer trained on ``texts`` (transformers 5: from a ``vocab`` dict, notebook 05)."""
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertTokenizer

    texts = [t for t in texts if t and str(t).strip()]
    if not texts:
        raise Banking77Error("no texts to train the tokenizer on (a tokenizer of nothing would hold only its special "
                             "tokens): pass the training queries, e.g. load_tokenizer('tiny', data['train']['text'])")
    wp = BertWordPieceTokenizer(lowercase=True)
    wp.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=1, special_tokens=list(SPECIAL_TOKENS),
                           show_progress=False)
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
               hidden_size: int = 64, layers: int = 2, heads: int = 2, seed: int = 0,
               attn_implementation: str = "eager"):
    """A classifier labelled from ``data``: ``"tiny"`` (a small BERT, no download) or a Hub model.

    Its attention masks are built on the device (notebook 02: transformers 5 reads ``padding_mask.all()`` first)."""
    import torch
    from transformers import AutoModelForSequenceClassification, BertConfig, BertForSequenceClassification

    from tpu_helpers.xla_torch.lesson_cells import keep_attention_masks_on_device

    keep_attention_masks_on_device()
    torch.manual_seed(seed)
    labels = dict(num_labels=data.num_labels, id2label=data.id2label, label2id=data.label2id,
                  attn_implementation=attn_implementation)
    if model_name == "tiny":
        if not vocab_size:
            raise Banking77Error("make_model('tiny') needs vocab_size=len(tokenizer).")
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
    n = len(lengths)
    if n == 0:
        raise Banking77Error("no texts to measure")
    if max_length < 1:
        raise Banking77Error(f"max_length={max_length}: a query needs at least 1 token (BERT's [CLS] and [SEP] are 2)")
    kept = [min(x, max_length) for x in lengths]
    ordered = sorted(lengths)
    return {
        "texts": n, "max_length": max_length, "longest": ordered[-1], "median": ordered[n // 2],
        "p99": ordered[min(n - 1, int(0.99 * n))],
        "truncated_share": sum(x > max_length for x in lengths) / n,
        "padding_share": 1 - sum(kept) / (n * max_length),
    }


def tokenize(dataset, tokenizer, max_length: int, *, padding: str = "max_length"):
    """``text`` -> ``input_ids``, ``attention_mask`` (+ ``token_type_ids``), ``labels``: padded to ``max_length``
    (one shape, torch format) or ``padding="none"`` (lists, padded per batch later)."""
    if padding not in ("max_length", "none"):
        raise Banking77Error(f"padding={padding!r}: use 'max_length' (pad here) or 'none' (pad per batch later)")
    if not isinstance(max_length, int) or max_length < 2:
        raise Banking77Error(f"max_length={max_length!r}: give a whole number of tokens, at least 2 ([CLS] and [SEP])")

    def encode(batch):
        return tokenizer(batch["text"], truncation=True, max_length=max_length,
                         padding="max_length" if padding == "max_length" else False)

    out = dataset.map(encode, batched=True, remove_columns=["text"], desc=None)
    out = out.rename_column("label", "labels")
    columns = [c for c in ("input_ids", "token_type_ids", "attention_mask", "labels")
               if c in out["train"].column_names]
    if padding == "max_length":
        out.set_format("torch", columns=columns)
    else:
        out = out.select_columns(columns)
    return out
