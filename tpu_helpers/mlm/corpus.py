"""The corpus of notebook 04: WikiText from the Hub (or offline, seeded synthetic text), filtered, and the
errors of the whole MLM data path. Framework-free at import."""
from __future__ import annotations

import dataclasses
import hashlib
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tpu_helpers.shared import synthetic_text


class MLMDataError(RuntimeError):
    """Base class: something is wrong with the MLM data; the message says how to fix it."""


class EmptyCorpusError(MLMDataError, ValueError):
    """No text left after filtering (or nothing to chunk)."""


class CorpusUnavailableError(MLMDataError):
    """The online corpus cannot be loaded (offline, no cache)."""


class ShardError(MLMDataError):
    """Base class for problems with TFRecord shards."""


class ShardBlockSizeError(ShardError, ValueError):
    """Shards hold blocks of a different length than the pipeline expects (or of several lengths)."""


class ManifestError(ShardError):
    """The manifest is missing, unreadable, incomplete or disagrees with the files."""


class ShardVerificationError(ShardError):
    """A shard is missing, truncated or has the wrong checksum."""


@dataclass
class Corpus:
    """A text corpus as a ``datasets.Dataset`` with one ``text`` column, and where it came from."""

    dataset: Any
    name: str
    source: str  # "wikitext" or "offline"
    description: str

    @property
    def lines(self) -> int:
        return len(self.dataset)

    def characters(self) -> int:
        return int(sum(len(t) for t in self.dataset["text"]))

    def __str__(self) -> str:
        return f"corpus: {self.name} ({self.source}): {self.lines:,} lines. {self.description}"


def _hub_offline() -> bool:
    for key in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(key, "").strip().lower() in ("1", "true", "yes", "on"):
            return True
    try:
        from huggingface_hub import constants
        return bool(constants.HF_HUB_OFFLINE)
    except Exception:  # pragma: no cover
        return False


def _hub_reachable(timeout: float = 5.0) -> bool:
    """One HEAD request to the Hub (through any configured proxy): fail fast instead of ~20 s of retries."""
    import urllib.error
    import urllib.request

    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    try:
        urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=timeout).close()
        return True
    except urllib.error.HTTPError:
        return True  # it answered
    except (OSError, ValueError):
        return False


class _OfflineIfAsked:
    """Honour HF_HUB_OFFLINE set after ``datasets`` was imported (it reads the variable once, at import)."""

    def __enter__(self) -> None:
        import datasets
        from huggingface_hub import constants

        self._saved = (datasets.config.HF_HUB_OFFLINE, constants.HF_HUB_OFFLINE)
        if _hub_offline():
            datasets.config.HF_HUB_OFFLINE = constants.HF_HUB_OFFLINE = True

    def __exit__(self, *exc: object) -> None:
        import datasets
        from huggingface_hub import constants

        datasets.config.HF_HUB_OFFLINE, constants.HF_HUB_OFFLINE = self._saved


def load_wikitext(split: str = "train", *, config: str = "wikitext-103-raw-v1", max_lines: int | None = None,
                  repo: str = "Salesforce/wikitext") -> Corpus:
    """WikiText-103 raw (the seed's corpus) through ``datasets.load_dataset``; needs the Hub or its cache.

    ``Salesforce/wikitext`` is the Hub's script-free (parquet) home of the seed's ``wikitext`` dataset.
    Offline and not cached: `CorpusUnavailableError` with what to do, not a traceback.
    """
    import datasets

    try:
        with _OfflineIfAsked():
            ds = datasets.load_dataset(repo, config, split=split)
    except Exception as e:  # offline, no cache, network errors: one clear message instead of a traceback
        hint = ("HF_HUB_OFFLINE/HF_DATASETS_OFFLINE is set and the dataset is not in the local cache"
                if _hub_offline() else f"{type(e).__name__}: {str(e).splitlines()[0][:200]}")
        raise CorpusUnavailableError(
            f"cannot load {repo} ({config}, split {split!r}): {hint}. Use the offline corpus "
            "(load_corpus('offline') / CORPUS='offline'), or run once with network access so that "
            "datasets caches it.") from None
    if max_lines is not None:
        ds = ds.select(range(min(max_lines, len(ds))))
    return Corpus(ds, f"{repo} {config} [{split}]", "wikitext",
                  "WikiText-103: Wikipedia Good and Featured articles, raw text (the seed's corpus).")


def load_offline_corpus(split: str = "train", *, max_chars: int | None = 2_000_000,
                        cache_dir: str | os.PathLike[str] | None = None, validation_every: int = 50) -> Corpus:
    """The offline corpus: English-like text generated here (`tpu_helpers.shared.synthetic_text.iter_paragraphs`), loaded with ``datasets``.

    The paragraphs are written once to ``{cache_dir}/offline-corpus-<key>/{train,validation}.txt`` (one paragraph
    per line, like WikiText) and read back with ``datasets.load_dataset("text", data_files=...)``, the same
    ``datasets`` code path as any text corpus. Every `validation_every`-th paragraph (by a hash of its text) goes
    to the validation split.
    """
    import datasets

    base = Path(cache_dir) if cache_dir else Path(os.environ.get("TPU_COURSE_CACHE", Path.home() / ".cache" / "tpu-course"))
    key = hashlib.sha256(f"synthetic-v{synthetic_text.VERSION}|{max_chars}|{validation_every}".encode()).hexdigest()[:10]
    folder = base / f"offline-corpus-{key}"
    files = {"train": folder / "train.txt", "validation": folder / "validation.txt"}
    if not all(p.exists() for p in files.values()):
        folder.mkdir(parents=True, exist_ok=True)
        tmp = {k: p.with_suffix(f".txt.partial-{os.getpid()}") for k, p in files.items()}
        with open(tmp["train"], "w", encoding="utf-8") as tr, open(tmp["validation"], "w", encoding="utf-8") as va:
            for text in synthetic_text.iter_paragraphs(max_chars=2_000_000 if max_chars is None else max_chars):
                (va if zlib.crc32(text.encode()) % validation_every == 0 else tr).write(text + "\n")
        for k in files:
            os.replace(tmp[k], files[k])
    if split not in files:
        raise ValueError(f"split must be 'train' or 'validation', not {split!r}")
    ds = datasets.load_dataset("text", data_files={k: str(v) for k, v in files.items()}, split=split,
                               cache_dir=str(folder / "hf-cache"))
    return Corpus(ds, f"offline synthetic text [{split}]", "offline",
                  "Offline corpus: English-like paragraphs generated by tpu_helpers.shared.synthetic_text (up to "
                  f"{max_chars:,} characters), the same on every machine; no download.")


def load_corpus(kind: str = "auto", split: str = "train", *, max_lines: int | None = None,
                offline_max_chars: int | None = 2_000_000, cache_dir: str | os.PathLike[str] | None = None,
                verbose: bool = True) -> Corpus:
    """``"wikitext"`` (WikiText-103 raw via the Hub), ``"offline"`` (generated English-like text), or ``"auto"``: WikiText unless
    the Hub is unreachable or ``HF_HUB_OFFLINE``/``HF_DATASETS_OFFLINE`` is set, then offline, saying why."""
    kind = kind.strip().lower()
    if kind not in ("auto", "wikitext", "offline"):
        raise ValueError(f"corpus kind must be 'auto', 'wikitext' or 'offline', not {kind!r}")
    corpus = None
    if kind == "auto" and not _hub_offline() and not _hub_reachable():
        if verbose:
            print("The Hugging Face Hub is unreachable (no network?): using the offline corpus.")
        kind = "offline"
    if kind == "wikitext" or (kind == "auto" and not _hub_offline()):
        try:
            corpus = load_wikitext(split, max_lines=max_lines)
        except CorpusUnavailableError as e:
            if kind == "wikitext":
                raise
            if verbose:
                print(f"WikiText-103 unavailable, using the offline corpus instead ({e})")
    elif kind == "auto" and verbose:
        print("Hub offline mode is set (HF_HUB_OFFLINE/HF_DATASETS_OFFLINE): using the offline corpus.")
    if corpus is None:
        corpus = load_offline_corpus(split, max_chars=offline_max_chars, cache_dir=cache_dir)
        if max_lines is not None:
            corpus.dataset = corpus.dataset.select(range(min(max_lines, len(corpus.dataset))))
    if verbose:
        print(corpus)
    return corpus


def filter_lines(corpus: Corpus, *, min_chars: int = 1, num_proc: int | None = None) -> Corpus:
    """Drop lines shorter than `min_chars` after stripping (WikiText's empty lines); never returns empty."""
    before = len(corpus.dataset)
    ds = corpus.dataset.filter(lambda batch: [len(t.strip()) >= min_chars for t in batch["text"]], batched=True,
                               num_proc=num_proc, desc="filtering lines")
    if len(ds) == 0:
        raise EmptyCorpusError(
            f"no text left in {corpus.name}: all {before:,} lines are shorter than {min_chars} characters after "
            "stripping. Lower min_chars, or check the corpus (a wrong split, or max_lines too small?).")
    return dataclasses.replace(corpus, dataset=ds)
