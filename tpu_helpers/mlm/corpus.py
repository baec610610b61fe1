"""The corpus of notebook 04: WikiText from the Hub; offline, the Python docs' prose or generated text; or the
learner's own text (`tpu_helpers.mlm.sources`, which also holds the `Corpus` type); its summary and the filter. Framework-free
at import."""
from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from tpu_helpers.core.hub import HubUnavailableError, hub_access, hub_offline, hub_reachable, pinned_revision
from tpu_helpers.mlm import sources
from tpu_helpers.mlm.sources import Corpus
from tpu_helpers.shared import synthetic_text


def load_wikitext(split: str = "train", *, config: str = "wikitext-103-raw-v1", max_lines: int | None = None,
                  repo: str = "Salesforce/wikitext") -> Corpus:
    """WikiText-103 raw (the seed's corpus) through ``datasets.load_dataset``; needs the Hub or its cache.

    ``Salesforce/wikitext`` is the Hub's script-free (parquet) home of the seed's ``wikitext`` dataset.
    Offline and not cached: `RuntimeError` with what to do, not a traceback.
    """
    import datasets

    # one 5 s probe; offline, the cache only; any failure: one RuntimeError (tpu_helpers.core.hub)
    with hub_access(f"{repo} ({config}, split {split!r})", "Use an offline corpus (CORPUS='python-docs', real "
                    "English, or 'offline', generated), or run once with network access so that datasets caches it."):
        ds = datasets.load_dataset(repo, config, split=split, revision=pinned_revision(repo))
    if max_lines is not None:
        ds = ds.select(range(min(max_lines, len(ds))))
    return Corpus(ds, f"{repo} {config} [{split}]", "wikitext",
                  "WikiText-103: Wikipedia Good and Featured articles, raw text (the seed's corpus).")


INTERPRETER_PROMPT = ">" * 3  # how the reference's interactive examples start (spelt so: no doctest here)


def python_docs_paragraphs() -> list[str]:
    """Real English that every CPython carries: the prose of the Python Language Reference (``pydoc_data.topics``,
    what ``help("for")`` prints; about 330 KB on Python 3.11), one paragraph a line. Paragraphs under 8 words, those
    under 85 % letters and spaces (code, grammar rules, tables) and interactive examples (the prompt) are left out."""
    from pydoc_data import topics

    out = []
    for text in topics.topics.values():
        for paragraph in re.split(r"\n\s*\n", text):
            line = " ".join(paragraph.split())
            prose = sum(c.isalpha() or c == " " for c in line) >= 0.85 * len(line)
            if prose and len(line.split()) >= 8 and not line.startswith(INTERPRETER_PROMPT):
                out.append(line)
    return out


def _cached_text_corpus(folder: Path, paragraphs: Iterable[str], split: str, validation_every: int) -> Any:
    """Write `paragraphs` once to ``folder/{train,validation}.txt`` (one a line; every `validation_every`-th, by a
    hash of its text, to validation), atomically, and read `split` back with ``datasets.load_dataset("text")``:
    the same ``datasets`` code path as any text corpus."""
    import datasets

    files = {"train": folder / "train.txt", "validation": folder / "validation.txt"}
    if split not in files:
        raise ValueError(f"split must be 'train' or 'validation', not {split!r}")
    if not all(p.exists() for p in files.values()):
        folder.mkdir(parents=True, exist_ok=True)
        tmp = {k: p.with_suffix(f".txt.partial-{os.getpid()}") for k, p in files.items()}
        with open(tmp["train"], "w", encoding="utf-8") as tr, open(tmp["validation"], "w", encoding="utf-8") as va:
            for text in paragraphs:
                (va if zlib.crc32(text.encode()) % validation_every == 0 else tr).write(text + "\n")
        for k in files:
            os.replace(tmp[k], files[k])
    return datasets.load_dataset("text", data_files={k: str(v) for k, v in files.items()}, split=split,
                                 cache_dir=str(folder / "hf-cache"))


def _cache_base(cache_dir: str | os.PathLike[str] | None) -> Path:
    if cache_dir:
        return Path(cache_dir)
    return Path(os.environ.get("TPU_COURSE_CACHE", Path.home() / ".cache" / "tpu-course"))


def load_offline_corpus(split: str = "train", *, max_chars: int | None = 2_000_000,
                        cache_dir: str | os.PathLike[str] | None = None, validation_every: int = 50) -> Corpus:
    """The generated corpus: English-like text made here (`tpu_helpers.shared.synthetic_text.iter_paragraphs`), the
    same on every machine, written once to ``{cache_dir}/offline-corpus-<key>/`` and loaded with ``datasets``."""
    recipe = f"synthetic-v{synthetic_text.VERSION}|{max_chars}|{validation_every}"
    key = hashlib.sha256(recipe.encode()).hexdigest()[:10]
    paragraphs = synthetic_text.iter_paragraphs(max_chars=2_000_000 if max_chars is None else max_chars)
    ds = _cached_text_corpus(_cache_base(cache_dir) / f"offline-corpus-{key}", paragraphs, split, validation_every)
    return Corpus(ds, f"offline synthetic text [{split}]", "offline",
                  "Offline corpus: English-like paragraphs generated by tpu_helpers.shared.synthetic_text (up to "
                  f"{max_chars:,} characters), the same on every machine; no download.")


def load_python_docs_corpus(split: str = "train", *, cache_dir: str | os.PathLike[str] | None = None,
                            validation_every: int = 50) -> Corpus:
    """Real English offline (`python_docs_paragraphs`), written once to ``{cache_dir}/python-docs-<key>/`` and
    loaded with ``datasets``. It changes with the Python version, unlike the generated corpus."""
    paragraphs = python_docs_paragraphs()
    key = hashlib.sha256("\n".join(paragraphs).encode() + f"|{validation_every}".encode()).hexdigest()[:10]
    ds = _cached_text_corpus(_cache_base(cache_dir) / f"python-docs-{key}", paragraphs, split, validation_every)
    version = "%d.%d" % sys.version_info[:2]
    return Corpus(ds, f"Python {version} Language Reference prose [{split}]", "python-docs",
                  "Real English offline: the prose of the Python Language Reference that ships with Python "
                  "(pydoc_data.topics, what help('for') prints), one paragraph a line; no download.")


def load_corpus(kind: str = "auto", split: str = "train", *, max_lines: int | None = None,
                offline_max_chars: int | None = 2_000_000, cache_dir: str | os.PathLike[str] | None = None,
                verbose: bool = True) -> Corpus:
    """Notebook 04's ``CORPUS``: ``"wikitext"`` (WikiText-103 raw via the Hub), ``"python-docs"`` (real English
    that ships with Python, `load_python_docs_corpus`), ``"offline"`` (generated English-like text), ``"auto"``
    (WikiText unless the Hub is unreachable or ``HF_HUB_OFFLINE`` is set, then python-docs, saying why), or your
    own text: a ``.txt`` file or folder, local or ``gs://``, or
    ``"hf:NAME:CONFIG:COLUMN"`` for a Hugging Face dataset (`tpu_helpers.mlm.sources.parse_corpus_source`)."""
    source = sources.parse_corpus_source(kind)
    if source.kind in ("local", "gcs"):
        if split != "train":
            raise ValueError(f"text files have one split, 'train' (not {split!r}): hold out files of your own")
        corpus = sources.load_text_files(source.location, max_lines=max_lines, progress=verbose)
    elif source.kind == "hub":
        corpus = sources.load_hub_dataset(source.location, source.config, source.column, split, max_lines=max_lines)
    else:
        corpus = _load_builtin(source.location, split, max_lines=max_lines, offline_max_chars=offline_max_chars,
                               cache_dir=cache_dir, verbose=verbose)
    if verbose:
        print(corpus)
    return corpus


def _load_builtin(kind: str, split: str, *, max_lines: int | None, offline_max_chars: int | None,
                  cache_dir: str | os.PathLike[str] | None, verbose: bool) -> Corpus:
    corpus = None
    if kind == "auto" and not hub_offline() and not hub_reachable():
        if verbose:
            print("The Hugging Face Hub is unreachable (no network?): using the Python docs' prose (real English, "
                  "offline).")
        kind = "python-docs"
    if kind == "wikitext" or (kind == "auto" and not hub_offline()):
        try:
            corpus = load_wikitext(split, max_lines=max_lines)
        except HubUnavailableError as e:
            if kind == "wikitext":
                raise
            if verbose:
                print(f"WikiText-103 unavailable, using the Python docs' prose instead ({e})")
    elif kind == "auto" and verbose:
        print("Hub offline mode is set (HF_HUB_OFFLINE/HF_DATASETS_OFFLINE): using the Python docs' prose.")
    if corpus is None:
        if kind == "offline":
            corpus = load_offline_corpus(split, max_chars=offline_max_chars, cache_dir=cache_dir)
        else:
            corpus = load_python_docs_corpus(split, cache_dir=cache_dir)
        if max_lines is not None:
            corpus.dataset = corpus.dataset.select(range(min(max_lines, len(corpus.dataset))))
    return corpus


@dataclass(frozen=True)
class CorpusSummary:
    """Language-agnostic statistics of a corpus: counts of lines and characters (not words, which some scripts
    do not separate), line lengths in characters, distinct characters, and the shares of spaces and non-ASCII."""

    name: str
    lines: int
    characters: int
    utf8_bytes: int
    line_chars: dict[str, int]  # min, p10, median, p90, max
    distinct_characters: int
    space_share: float
    non_ascii_share: float

    def __str__(self) -> str:
        q = self.line_chars
        text = (f"{self.name}\n  {self.lines:,} lines, {self.characters:,} characters ({self.utf8_bytes:,} bytes "
                f"as UTF-8), {self.distinct_characters:,} distinct characters\n"
                f"  characters per line: min {q['min']:,}, p10 {q['p10']:,}, median {q['median']:,}, "
                f"p90 {q['p90']:,}, max {q['max']:,}\n"
                f"  spaces {self.space_share:.1%} of characters, non-ASCII {self.non_ascii_share:.1%}")
        if self.space_share < 0.05:
            text += ("\n  note: few spaces (a language written without them?): the Metaspace pre-tokenizer splits "
                     "on spaces, so tokens will span words; a long line is one long 'word' to the tokenizer")
        return text


def summarize_corpus(corpus: Corpus) -> CorpusSummary:
    """`CorpusSummary` of `corpus` (one pass over its text)."""
    import numpy as np

    texts = corpus.dataset["text"]
    if not texts:
        raise ValueError(f"{corpus.name} has no line")
    lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    chars = int(lengths.sum())
    joined = "".join(texts)
    utf8 = len(joined.encode("utf-8"))
    spaces = joined.count(" ")  # str methods run in C: a 100 M-character corpus takes seconds
    non_ascii = chars - len(joined.encode("ascii", "ignore"))
    p10, median, p90 = (int(v) for v in np.percentile(lengths, [10, 50, 90]))
    return CorpusSummary(f"{corpus.name} ({corpus.source})", len(texts), chars, utf8,
                         {"min": int(lengths.min()), "p10": p10, "median": median, "p90": p90,
                          "max": int(lengths.max())},
                         len(set(joined)), spaces / max(chars, 1), non_ascii / max(chars, 1))


def filter_lines(corpus: Corpus, *, min_chars: int = 1, num_proc: int | None = None) -> Corpus:
    """Drop lines shorter than `min_chars` after stripping (WikiText's empty lines); never returns empty."""
    before = len(corpus.dataset)
    ds = corpus.dataset.filter(lambda batch: [len(t.strip()) >= min_chars for t in batch["text"]], batched=True,
                               num_proc=num_proc, desc="filtering lines")
    if len(ds) == 0:
        raise ValueError(
            f"no text left in {corpus.name}: all {before:,} lines are shorter than {min_chars} characters after "
            "stripping. Lower min_chars, or check the corpus (a wrong split, or max_lines too small?).")
    return dataclasses.replace(corpus, dataset=ds)
