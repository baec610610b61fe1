"""BANKING77 (the Hub's parquet export, a CSV folder, or a synthetic stand-in: *not* BANKING77) as train/test splits,
with no ML framework: notebooks 05 (PyTorch/XLA) and 09 (JAX) read their data from here."""
from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from tpu_helpers.core.hub import hub_access
from tpu_helpers.shared.banking_queries import BANKING77_LABELS, banking_query

HUB_REPO = "PolyAI/banking77"
HUB_REVISION = "refs/convert/parquet"  # script-free: datasets>=4 refuses the loading script (datasets#8012)
SYNTHETIC_NOTE = ("SYNTHETIC stand-in for BANKING77 generated offline by tpu_helpers.shared.banking77_data: the 77 real "
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
