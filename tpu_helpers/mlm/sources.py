"""The learner's own text as notebook 04's corpus (.txt files, local or gs://, or a Hub dataset), and `Corpus`."""
from __future__ import annotations

import codecs
import os
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from tpu_helpers.core.frameworks import import_tensorflow
from tpu_helpers.core.hub import hub_access, pinned_revision
from tpu_helpers.mlm.gcs import split_gcs_path

TEXT_SUFFIXES = (".txt",)
BUILTIN = ("auto", "wikitext", "python-docs", "offline")
# NAME, NAME:CONFIG, NAME:CONFIG:COLUMN or NAME::COLUMN; NAME may be owner/name (a Hub repo id)
_HUB_SPEC = re.compile(r"^(?P<name>[\w.-]+(?:/[\w.-]+)?)(?::(?P<config>[\w.-]*))?(?::(?P<column>[\w.-]+))?$")


@dataclass
class Corpus:
    """A text corpus as a ``datasets.Dataset`` with one ``text`` column, and where it came from."""

    dataset: Any
    name: str
    source: str  # "wikitext", "python-docs", "offline", or the learner's: "local", "gcs", "hub"
    description: str

    @property
    def lines(self) -> int:
        return len(self.dataset)

    def characters(self) -> int:
        return int(sum(len(t) for t in self.dataset["text"]))

    def __str__(self) -> str:
        return f"corpus: {self.name} ({self.source}): {self.lines:,} lines. {self.description}"


@dataclass(frozen=True)
class CorpusSource:
    """What a ``CORPUS`` value means: ``kind`` is ``"builtin"``, ``"local"``, ``"gcs"`` or ``"hub"``."""

    kind: str
    location: str
    config: str | None = None
    column: str = "text"

    def __str__(self) -> str:
        if self.kind == "hub":
            return f"Hub dataset {self.location} (config {self.config or 'default'}, column {self.column!r})"
        return {"builtin": f"built-in corpus {self.location!r}", "local": f"local text {self.location}",
                "gcs": f"text in {self.location}"}[self.kind]


def parse_corpus_source(value: str | os.PathLike[str]) -> CorpusSource:
    """Read a ``CORPUS`` value (a built-in name, text files, ``hf:NAME:CONFIG:COLUMN``); else a clear error."""
    text = str(value).strip()
    if text.lower() in BUILTIN:
        return CorpusSource("builtin", text.lower())
    if text[:3].lower() == "gs:":
        split_gcs_path(text)  # ValueError for gs:/x, GS://x or a bad bucket name
        return CorpusSource("gcs", text.rstrip("/"))
    explicit_hub = text.lower().startswith("hf:")
    if not explicit_hub and Path(text).expanduser().exists():
        return CorpusSource("local", str(Path(text).expanduser()))
    parts = text[3:].split(":")
    if explicit_hub and len(parts) <= 3 and parts[0]:
        name, config, column = (parts + ["", ""])[:3]  # a Hub id, or a local dataset folder (hf:./data::body)
        return CorpusSource("hub", name, config or None, column or "text")
    match = _HUB_SPEC.match(text)
    if explicit_hub or match is None or text.lower().endswith(TEXT_SUFFIXES):
        raise ValueError(
            f"CORPUS={text!r}: no such file or folder, and not a Hugging Face dataset name. Use a .txt file or a "
            "folder of them (local or gs://BUCKET/path), 'hf:NAME:CONFIG:COLUMN' for a Hub dataset (e.g. "
            "'hf:Salesforce/wikitext:wikitext-2-raw-v1:text'), or 'auto', 'wikitext', 'python-docs', 'offline'.")
    return CorpusSource("hub", match["name"], match["config"] or None, match["column"] or "text")


def _tf_gfile():
    return import_tensorflow().io.gfile


def list_text_files(location: str) -> list[str]:
    """The ``.txt`` files of a file or folder (local or ``gs://``; a folder is read recursively), sorted."""
    gcs = location.startswith("gs://")
    if gcs:
        gfile = _tf_gfile()
        if not gfile.exists(location):
            raise ValueError(f"{location} does not exist: check the bucket and path (tf.io.gfile.glob lists what "
                                "is there)")
        if not gfile.isdir(location):
            return [location]
        files = [posixpath.join(root, f) for root, _, names in gfile.walk(location) for f in names]
    else:
        path = Path(location)
        if not path.exists():
            raise ValueError(f"{location} does not exist")
        if path.is_file():
            return [str(path)]
        files = [str(p) for p in path.rglob("*") if p.is_file()]
    texts = sorted(f for f in files if f.lower().endswith(TEXT_SUFFIXES))
    if not texts:
        others = sorted(posixpath.basename(f) for f in files)[:5]
        raise ValueError(f"no .txt file in {location}" + (f" (found {others})" if others else " (it is empty)")
                            + ": CORPUS reads UTF-8 text files named *.txt, one paragraph or document per line.")
    return texts


def _open_binary(name: str):
    return _tf_gfile().GFile(name, "rb") if name.startswith("gs://") else open(name, "rb")


def _binary_error(name: str, number: int, byte: int) -> ValueError:
    return ValueError(f"{name}, line {number}: a NUL byte at byte {byte}: this looks like a binary file (a zip, "
                         "PDF, image or model?), not text. Point CORPUS at UTF-8 .txt files only (extract the text "
                         "first).")


def _check_head(name: str, head: bytes) -> None:
    """The first bytes of a file: UTF-16 (a byte order mark) or binary (a NUL byte) before any line is decoded."""
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise ValueError(f"{name}: UTF-16 text (it starts with a UTF-16 byte order mark). Save it as UTF-8, "
                            f"e.g. `iconv -f UTF-16 -t UTF-8 {name} > fixed.txt`.")
    if b"\x00" in head:
        at = head.index(b"\x00")
        start = head.rfind(b"\n", 0, at) + 1
        raise _binary_error(name, head.count(b"\n", 0, at) + 1, at - start + 1)


def _checked_lines(name: str, raw_lines: Iterable[bytes]) -> Iterator[str]:
    """Decode each line as UTF-8; a `ValueError` with the file, line and byte for binary or other encodings."""
    for number, raw in enumerate(raw_lines, 1):
        if number == 1:
            raw = raw.removeprefix(codecs.BOM_UTF8)
        if b"\x00" in raw:
            raise _binary_error(name, number, raw.index(b"\x00") + 1)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(
                f"{name}, line {number}, byte {e.start + 1}: not UTF-8 ({raw[e.start:e.start + 4]!r}). Convert the "
                f"file, e.g. `iconv -f LATIN1 -t UTF-8 {name} > fixed.txt` (use its real encoding), or save it "
                "as UTF-8 in your editor.") from None
        yield text.rstrip("\r\n")


def read_text_lines(name: str, *, max_lines: int | None = None) -> list[str]:
    """The lines of one text file (local or ``gs://``), checked; `ValueError` when it has no text at all."""
    lines: list[str] = []
    with _open_binary(name) as f:
        _check_head(name, f.read(8192))
        f.seek(0)
        for line in _checked_lines(name, iter(f.readline, b"")):
            lines.append(line)
            if max_lines is not None and len(lines) >= max_lines:
                break
    if not any(line.strip() for line in lines):
        raise ValueError(f"{name} is empty" + (f" ({len(lines)} blank lines)" if lines else "")
                            + ": remove it from the folder or put text in it.")
    return lines


def load_text_files(location: str, *, max_lines: int | None = None, progress: bool = True) -> Corpus:
    """A corpus from ``.txt`` files (one document or paragraph per line), local or ``gs://``, every file checked."""
    import datasets

    files = list_text_files(location)
    lines: list[str] = []
    if progress and len(files) > 1:
        from tqdm.auto import tqdm

        files = tqdm(files, desc="reading text files", unit="file")
    for name in files:
        left = None if max_lines is None else max_lines - len(lines)
        if left is not None and left <= 0:
            break
        lines.extend(read_text_lines(name, max_lines=left))
    kind = "gcs" if location.startswith("gs://") else "local"
    shown = location if len(files) == 1 else f"{location} ({len(files)} .txt files)"
    return Corpus(datasets.Dataset.from_dict({"text": lines}), shown, kind,
                  "Your text: read line by line (UTF-8), one training document per line.")


def load_hub_dataset(name: str, config: str | None = None, column: str = "text", split: str = "train", *,
                     max_lines: int | None = None) -> Corpus:
    """A Hugging Face dataset's text column as a corpus (a local dataset folder works too)."""
    import datasets

    if Path(name).exists():  # a local dataset folder: no Hub involved
        try:
            ds = datasets.load_dataset(name, config, split=split)
        except Exception as e:
            raise RuntimeError(f"cannot load the dataset folder {name!r} (config {config or 'default'}, "
                                         f"split {split!r}): {type(e).__name__}: "
                                         f"{(str(e).splitlines() or [''])[0][:200]}") from None
    else:  # one 5 s probe; offline, the cache only (a cached copy still loads); one clear error (core.hub)
        with hub_access(f"the dataset {name!r} (config {config or 'default'}, split {split!r})",
                        "Check the name on huggingface.co/datasets, run once with network access so that datasets "
                        "caches it, or use text files (CORPUS='path/to/folder' or 'gs://BUCKET/path')."):
            ds = datasets.load_dataset(name, config, split=split, revision=pinned_revision(name))
    if column not in ds.column_names:
        raise ValueError(f"the dataset {name!r} has no column {column!r}; its columns: {ds.column_names}. Name "
                            f"the text column: CORPUS='hf:{name}:{config or ''}:COLUMN'.")
    feature = ds.features[column]
    if getattr(feature, "dtype", None) not in ("string", "large_string"):
        raise ValueError(f"the column {column!r} of {name!r} holds {feature}, not text: name a text column "
                            f"(columns: {ds.column_names}).")
    ds = ds.select_columns([column])
    if column != "text":
        ds = ds.rename_column(column, "text")
    if max_lines is not None:
        ds = ds.select(range(min(max_lines, len(ds))))
    ds = ds.filter(lambda batch: [t is not None for t in batch["text"]], batched=True, desc="dropping empty rows")
    return Corpus(ds,
                  f"{name}{':' + config if config else ''} [{split}] column {column!r}", "hub",
                  "A Hugging Face dataset, loaded with datasets.load_dataset.")
