"""The learner's own text as notebook 04's corpus (.txt files, local or gs://, or a Hub dataset), and `Corpus`."""
from __future__ import annotations

import codecs
import dataclasses
import os
import posixpath
from pathlib import Path
from typing import Any

from tpu_helpers.core.frameworks import import_tensorflow
from tpu_helpers.core.hub import hub_access, pinned_revision
from tpu_helpers.mlm.gcs import split_gcs_path

BUILTIN = ("auto", "wikitext", "python-docs", "offline")


@dataclasses.dataclass
class Corpus:
    """A ``datasets.Dataset`` with one ``text`` column; `source`: wikitext, python-docs, offline, local, gcs or hub."""

    dataset: Any
    name: str
    source: str
    description: str

    @property
    def lines(self) -> int:
        return len(self.dataset)

    def characters(self) -> int:
        return int(sum(len(t) for t in self.dataset["text"]))

    def __str__(self) -> str:
        return f"corpus: {self.name} ({self.source}): {self.lines:,} lines. {self.description}"


def parse_corpus_source(value: str | os.PathLike[str]) -> tuple[str, str, str | None, str]:
    """A ``CORPUS`` value as (kind: builtin, local, gcs or hub; location; Hub config; column); else a clear error."""
    text = str(value).strip()
    if text.lower() in BUILTIN:
        return "builtin", text.lower(), None, "text"
    if text[:3].lower() == "gs:":
        split_gcs_path(text)  # ValueError for gs:/x, GS://x or a bad bucket name
        return "gcs", text.rstrip("/"), None, "text"
    hub = text.lower().startswith("hf:")
    if not hub and Path(text).expanduser().exists():
        return "local", str(Path(text).expanduser()), None, "text"
    parts = text[3:].split(":")
    if not hub or len(parts) > 3 or not parts[0]:
        raise ValueError(
            f"CORPUS={text!r}: no such file or folder, and not 'hf:NAME:CONFIG:COLUMN'. Use a .txt file or a folder "
            "of them (local or gs://BUCKET/path), 'hf:NAME:CONFIG:COLUMN' for a Hub dataset (e.g. "
            "'hf:Salesforce/wikitext:wikitext-2-raw-v1:text'), or 'auto', 'wikitext', 'python-docs', 'offline'.")
    name, config, column = (parts + ["", ""])[:3]  # a Hub id, or a local dataset folder (hf:./data::body)
    return "hub", name, config or None, column or "text"


def read_text_lines(name: str, *, max_lines: int | None = None) -> list[str]:
    """The lines of one UTF-8 text file (local or ``gs://``); a ValueError naming the line and byte of bad text."""
    with (import_tensorflow().io.gfile.GFile(name, "rb") if name.startswith("gs://") else open(name, "rb")) as f:
        data = f.read().removeprefix(codecs.BOM_UTF8)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line, byte = data.count(b"\n", 0, e.start) + 1, e.start - data.rfind(b"\n", 0, e.start)
        raise ValueError(
            f"{name}, line {line}, byte {byte}: not UTF-8 ({data[e.start:e.start + 4]!r}; a binary file?). Point "
            f"CORPUS at UTF-8 .txt files, or convert it, e.g. `iconv -f LATIN1 -t UTF-8 {name} > fixed.txt` (use its "
            "real encoding).") from None
    lines = text.splitlines()[:max_lines]
    if not any(line.strip() for line in lines):
        raise ValueError(f"{name} is empty: remove it from the folder or put text in it.")
    return lines


def load_text_files(location: str, *, max_lines: int | None = None, progress: bool = True) -> Corpus:
    """A corpus from a ``.txt`` file or a folder's (recursively), local or ``gs://``, one document a line."""
    import datasets
    from tqdm.auto import tqdm

    gfile = import_tensorflow().io.gfile if location.startswith("gs://") else None
    if not (gfile.exists(location) if gfile else Path(location).exists()):
        raise ValueError(f"{location} does not exist: check the path (for gs://, tf.io.gfile.glob lists what is there)")
    files = [location]
    if gfile.isdir(location) if gfile else Path(location).is_dir():
        walk = gfile.walk(location) if gfile else os.walk(location)
        files = sorted(posixpath.join(root, f) for root, _, names in walk for f in names if f.lower().endswith(".txt"))
        if not files:
            raise ValueError(f"no .txt file in {location}: CORPUS reads UTF-8 text files named *.txt, one paragraph "
                             "or document per line.")
    lines: list[str] = []
    for name in tqdm(files, desc="reading text files", unit="file", disable=not progress or len(files) < 2):
        if max_lines is not None and len(lines) >= max_lines:
            break
        lines += read_text_lines(name, max_lines=None if max_lines is None else max_lines - len(lines))
    shown = location if len(files) == 1 else f"{location} ({len(files)} .txt files)"
    return Corpus(datasets.Dataset.from_dict({"text": lines}), shown, "gcs" if location.startswith("gs://") else
                  "local", "Your text: read line by line (UTF-8), one training document per line.")


def load_hub_dataset(name: str, config: str | None = None, column: str = "text", *,
                     max_lines: int | None = None) -> Corpus:
    """A Hugging Face dataset's text column (its train split) as a corpus (a local dataset folder works too)."""
    import datasets

    if Path(name).exists():  # a local dataset folder: no Hub involved
        ds = datasets.load_dataset(name, config, split="train")
    else:  # one 5 s probe; offline, the cache only (a cached copy still loads); one clear error (core.hub)
        with hub_access(f"the dataset {name!r} (config {config or 'default'}, split 'train')",
                        "Check the name on huggingface.co/datasets, run once with network access so that datasets "
                        "caches it, or use text files (CORPUS='path/to/folder' or 'gs://BUCKET/path')."):
            ds = datasets.load_dataset(name, config, split="train", revision=pinned_revision(name))
    if getattr(ds.features.get(column), "dtype", None) not in ("string", "large_string"):
        raise ValueError(f"the dataset {name!r} has no text column {column!r}; its columns: {ds.column_names}. Name "
                         f"the text column: CORPUS='hf:{name}:{config or ''}:COLUMN'.")
    ds = ds.select_columns([column]).rename_column(column, "text") if column != "text" else ds.select_columns([column])
    if max_lines is not None:
        ds = ds.select(range(min(max_lines, len(ds))))
    ds = ds.filter(lambda batch: [t is not None for t in batch["text"]], batched=True, desc="dropping empty rows")
    return Corpus(ds, f"{name}{':' + config if config else ''} [train] column {column!r}", "hub",
                  "A Hugging Face dataset, loaded with datasets.load_dataset.")
