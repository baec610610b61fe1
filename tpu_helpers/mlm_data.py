"""Data for a masked language model trained from scratch: corpus, tokenizer, 128-token blocks, TFRecord shards
with a manifest, and a pure-TensorFlow ``tf.data`` input pipeline with MLM masking.

It follows the seed (HF blog "Training a language model with Transformers using TensorFlow and TPUs" and
``transformers/examples/tensorflow/language-modeling-tpu``: ``train_unigram.py``, ``prepare_tfrecord_shards.py``,
``run_mlm.py``) and fixes what they get wrong:

* **Special tokens vs the model config.** ``train_unigram.py`` trains ``[CLS] [SEP] <unk> <pad> [MASK]`` (ids 0-4)
  but ``run_mlm.py`` keeps roberta-base's ``pad_token_id=1``, which is ``[SEP]`` in that vocabulary (and
  ``eos_token_id=2`` is ``<unk>``): RoBERTa derives position ids from ``input_ids != pad_token_id``, so every
  ``[SEP]`` gets the padding position instead of its own. Here the tokenizer has
  RoBERTa's own ``<s> <pad> </s> <unk> <mask>`` and `roberta_config` copies every id (and sizes the position
  table: RoBERTa positions start at ``pad_token_id + 1``, so 128-token blocks need 130 positions);
  `check_config_matches_tokenizer` says what is wrong with a mismatched pair.
* **Chunking.** The seed groups texts per ``datasets.map`` batch of 1000 lines, so up to ``block_size - 1``
  tokens are dropped *per batch*, and empty WikiText lines become ``[CLS] [SEP]`` pairs. `BlockChunker` carries the remainder across
  batches (at most ``block_size - 1`` tokens are dropped in total, and counted) and `filter_lines` drops empty
  lines first; an empty corpus is a clear `EmptyCorpusError`.
* **Shards.** The seed recovers sample counts from file names only, writes shards in place (an interrupted run
  leaves a truncated file that looks complete), stores an all-ones ``attention_mask`` (twice the bytes), and
  tests ``"gs" in output_dir`` (true for ``logs/``). Here each shard is written to a local temporary file,
  copied to a ``.partial`` name and then renamed (``tf.io.gfile.rename``: ``rename(2)`` locally, a server-side
  copy plus delete on GCS, so the final object appears whole or not at all); a JSON manifest records counts and
  sha256 checksums; a re-run skips shards that verify.
* **Input pipeline.** The seed parses one record at a time and reads its shuffle buffer size from a global
  ``args``. Here records are batched first and parsed with ``tf.io.parse_example`` (one vectorised op per batch),
  the cardinality comes from the manifest, and masking is TF-native (no ``py_function``, so it runs where the
  data pipeline runs, a TPU Node's host included), draws random replacement tokens only from the regular
  vocabulary, and never masks special tokens.

Framework use: this module imports only numpy at import time (chunking is framework-free); TensorFlow,
``datasets``, ``tokenizers`` and ``transformers`` are imported inside the functions that need them, so call
``tpu_helpers.frameworks.use_framework("tf")`` first, as every TF notebook does.
"""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import os
import posixpath
import re
import struct
import sys
import tempfile
import time
import uuid
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

__all__ = [
    # errors
    "MLMDataError", "EmptyCorpusError", "CorpusUnavailableError", "ShardError", "ShardBlockSizeError",
    "ManifestError", "ShardVerificationError",
    # corpus
    "Corpus", "load_corpus", "load_wikitext", "load_offline_corpus", "offline_paragraphs", "filter_lines",
    # tokenizer + config
    "SPECIAL_TOKENS", "train_unigram_tokenizer", "roberta_config", "apply_tokenizer_ids",
    "check_config_matches_tokenizer", "ROBERTA_BASE",
    # chunking
    "ChunkStats", "BlockChunker", "chunk_token_lists", "tokenize_and_chunk",
    # shards
    "MANIFEST_NAME", "shard_name", "records_in_name", "ShardInfo", "Manifest", "ShardReport", "VerifyReport",
    "write_shards", "read_manifest", "verify_shards", "count_tfrecords", "inspect_shards", "ShardSet",
    # pipeline
    "MaskingSpec", "mask_tokens", "make_mlm_dataset", "to_tf_dataset_baseline", "measure_throughput",
    "show_masked_example",
    # comparisons and metric
    "per_record_baseline", "PipelineComparison", "compare_pipelines", "masked_accuracy", "masked_accuracy_metric",
    "fill_mask_pipeline", "step_log_callback",
]

BLOCK_SIZE = 128
SPECIAL_TOKENS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")  # ids 0-4, RoBERTa's order for 0-3
MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = "tpu-course/mlm-shards/v1"
FEATURE = "input_ids"
# roberta-base's config.json (https://huggingface.co/FacebookAI/roberta-base/blob/main/config.json); note that
# `RobertaConfig()`'s own defaults differ (512 positions, type_vocab_size=2, layer_norm_eps=1e-12).
ROBERTA_BASE: dict[str, Any] = dict(
    vocab_size=50265, hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
    hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, max_position_embeddings=514,
    type_vocab_size=1, initializer_range=0.02, layer_norm_eps=1e-5, bos_token_id=0, pad_token_id=1,
    eos_token_id=2)


# ============================================================================================== errors
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


# ============================================================================================== corpus
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


def offline_paragraphs(max_chars: int | None = 2_000_000, *, seed: int = 0) -> Iterator[str]:
    """English-like paragraphs generated by `tpu_helpers.synthetic_text`, until ``max_chars`` characters: the same
    text on every machine and every package version (the offline corpus used to be installed docstrings)."""
    from .synthetic_text import iter_paragraphs

    return iter_paragraphs(max_chars=max_chars if max_chars is not None else 2_000_000, seed=seed)


def load_offline_corpus(split: str = "train", *, max_chars: int | None = 2_000_000,
                        cache_dir: str | os.PathLike[str] | None = None, validation_every: int = 50) -> Corpus:
    """The offline corpus: English-like text generated here (`offline_paragraphs`), loaded with ``datasets``.

    The paragraphs are written once to ``{cache_dir}/offline-corpus-<key>/{train,validation}.txt`` (one paragraph
    per line, like WikiText) and read back with ``datasets.load_dataset("text", data_files=...)``, the same
    ``datasets`` code path as any text corpus. Every `validation_every`-th paragraph (by a hash of its text) goes
    to the validation split.
    """
    import datasets

    base = Path(cache_dir) if cache_dir else Path(os.environ.get("TPU_COURSE_CACHE", Path.home() / ".cache" / "tpu-course"))
    from .synthetic_text import VERSION

    key = hashlib.sha256(f"synthetic-v{VERSION}|{max_chars}|{validation_every}".encode()).hexdigest()[:10]
    folder = base / f"offline-corpus-{key}"
    files = {"train": folder / "train.txt", "validation": folder / "validation.txt"}
    if not all(p.exists() for p in files.values()):
        folder.mkdir(parents=True, exist_ok=True)
        tmp = {k: p.with_suffix(f".txt.partial-{os.getpid()}") for k, p in files.items()}
        with open(tmp["train"], "w", encoding="utf-8") as tr, open(tmp["validation"], "w", encoding="utf-8") as va:
            for text in offline_paragraphs(max_chars):
                (va if zlib.crc32(text.encode()) % validation_every == 0 else tr).write(text + "\n")
        for k in files:
            os.replace(tmp[k], files[k])
    if split not in files:
        raise ValueError(f"split must be 'train' or 'validation', not {split!r}")
    ds = datasets.load_dataset("text", data_files={k: str(v) for k, v in files.items()}, split=split,
                               cache_dir=str(folder / "hf-cache"))
    return Corpus(ds, f"offline synthetic text [{split}]", "offline",
                  "Offline corpus: English-like paragraphs generated by tpu_helpers.synthetic_text (up to "
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


# ============================================================================================== tokenizer
def _batches(texts: Any, batch_size: int) -> Iterator[list[str]]:
    if hasattr(texts, "column_names"):  # a datasets.Dataset
        for i in range(0, len(texts), batch_size):
            yield texts[i: i + batch_size]["text"]
    else:
        it = iter(texts)
        while chunk := list(itertools.islice(it, batch_size)):
            yield chunk


def train_unigram_tokenizer(texts: Any, vocab_size: int, *, batch_size: int = 1000, block_size: int = BLOCK_SIZE,
                            save_to: str | os.PathLike[str] | None = None, show_progress: bool = False):
    """Train a Unigram tokenizer (the seed's recipe) and wrap it as a ``PreTrainedTokenizerFast``.

    Normalizer: the seed's ``Replace("``", '"')``, ``Replace("''", '"')``, plus WikiText's detokenisation
    marks (``" @-@ "`` -> ``"-"``, ``" @,@ "`` -> ``","``, ``" @.@ "`` -> ``"."``). Pre-tokenizer and decoder:
    ``Metaspace``. Special tokens ``<s> <pad> </s> <unk> <mask>`` (ids 0-4), post-processor ``<s> $A </s>``
    like RoBERTa, ``<mask>`` absorbs the space before it (``lstrip``) so ``"Paris is the <mask> of France."``
    works in a fill-mask pipeline. `texts`: a ``datasets.Dataset`` with a ``text`` column or an iterable of
    strings. ``model_max_length`` is `block_size`. Saved with ``save_pretrained`` when `save_to` is given.
    """
    from tokenizers import AddedToken, Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import Unigram
    from tokenizers.trainers import UnigramTrainer
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(Unigram())
    tok.normalizer = normalizers.Sequence([
        normalizers.Replace("``", '"'), normalizers.Replace("''", '"'),
        normalizers.Replace(" @-@ ", "-"), normalizers.Replace(" @,@ ", ","), normalizers.Replace(" @.@ ", "."),
    ])
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = UnigramTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS), unk_token="<unk>",
                             show_progress=show_progress)
    length = (len(texts) + batch_size - 1) // batch_size if hasattr(texts, "__len__") else None
    tok.train_from_iterator(_batches(texts, batch_size), trainer=trainer, length=length)
    ids = {t: tok.token_to_id(t) for t in SPECIAL_TOKENS}
    if ids != {t: i for i, t in enumerate(SPECIAL_TOKENS)}:  # pragma: no cover - tokenizers' contract
        raise MLMDataError(f"unexpected special token ids after training: {ids}")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", ids["<s>"]), ("</s>", ids["</s>"])])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>",
        cls_token="<s>", sep_token="</s>", mask_token=AddedToken("<mask>", lstrip=True, rstrip=False, special=True),
        model_max_length=block_size)
    if save_to is not None:
        fast.save_pretrained(str(save_to))
    return fast


def apply_tokenizer_ids(config: Any, tokenizer: Any, *, block_size: int | None = BLOCK_SIZE) -> Any:
    """Copy vocabulary size and pad/bos/eos/mask ids from `tokenizer` into a (RoBERTa) `config`, in place.

    RoBERTa numbers positions from ``pad_token_id + 1``, so ``max_position_embeddings`` is raised to at least
    ``block_size + pad_token_id + 1`` (130 for 128-token blocks with pad id 1: roberta-base has 514 for 512).
    """
    config.vocab_size = len(tokenizer)
    config.pad_token_id = tokenizer.pad_token_id
    config.bos_token_id = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.cls_token_id
    config.eos_token_id = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else tokenizer.sep_token_id
    config.mask_token_id = tokenizer.mask_token_id  # not a RobertaConfig field; kept in config.json for reference
    if block_size is not None:
        needed = block_size + config.pad_token_id + 1
        config.max_position_embeddings = max(int(getattr(config, "max_position_embeddings", 0) or 0), needed)
    return config


def roberta_config(tokenizer: Any, *, block_size: int = BLOCK_SIZE, **sizes: Any):
    """A ``RobertaConfig`` with roberta-base's sizes (overridable: ``hidden_size=128, num_hidden_layers=2...``)
    and the tokenizer's vocabulary size and special-token ids. Works offline (no download)."""
    from transformers import RobertaConfig

    unknown = set(sizes) - set(RobertaConfig().to_dict())
    if unknown:
        raise TypeError(f"not RobertaConfig fields: {sorted(unknown)}")
    values = {**ROBERTA_BASE, **sizes}
    config = RobertaConfig(**values)
    if "max_position_embeddings" not in sizes:  # size the table for the blocks actually used
        config.max_position_embeddings = 0
    apply_tokenizer_ids(config, tokenizer, block_size=block_size)
    check_config_matches_tokenizer(config, tokenizer, block_size=block_size)
    return config


def check_config_matches_tokenizer(config: Any, tokenizer: Any, *, block_size: int | None = BLOCK_SIZE) -> None:
    """Raise `MLMDataError` listing every way `config` disagrees with `tokenizer` (the seed's pad-id collision)."""
    problems = []
    if config.vocab_size < len(tokenizer):
        problems.append(f"vocab_size={config.vocab_size} but the tokenizer has {len(tokenizer)} tokens: ids "
                        "beyond the embedding table crash on TPU/XLA (or silently read garbage)")
    for name in ("pad", "bos", "eos"):
        want = getattr(tokenizer, f"{name}_token_id")
        have = getattr(config, f"{name}_token_id", None)
        if want is not None and have != want:
            meaning = tokenizer.convert_ids_to_tokens(have) if isinstance(have, int) and 0 <= have < len(tokenizer) else None
            problems.append(f"{name}_token_id={have} in the config ({meaning!r} in this vocabulary) but "
                            f"{getattr(tokenizer, name + '_token')!r} is id {want}")
    if block_size is not None and config.pad_token_id is not None:
        needed = block_size + config.pad_token_id + 1
        if config.max_position_embeddings < needed:
            problems.append(f"max_position_embeddings={config.max_position_embeddings} is too small for "
                            f"{block_size}-token blocks: RoBERTa positions start at pad_token_id+1, so it needs "
                            f">= {needed}")
    if problems:
        raise MLMDataError("the model config does not match the tokenizer:\n  - " + "\n  - ".join(problems)
                           + "\nFix: apply_tokenizer_ids(config, tokenizer) (or build it with roberta_config).")


# ============================================================================================== chunking
@dataclass
class ChunkStats:
    """Token accounting of `BlockChunker`: ``tokens == blocks * block_size + dropped_tokens``."""

    block_size: int
    documents: int = 0
    tokens: int = 0
    blocks: int = 0
    dropped_tokens: int = 0

    @property
    def kept_tokens(self) -> int:
        return self.blocks * self.block_size

    def check(self) -> None:
        """Assert the totals add up and at most ``block_size - 1`` tokens were dropped."""
        if self.tokens != self.kept_tokens + self.dropped_tokens:
            raise AssertionError(f"token totals do not add up: {self.tokens} != {self.blocks} x {self.block_size} "
                                 f"+ {self.dropped_tokens}")
        if not 0 <= self.dropped_tokens < self.block_size:
            raise AssertionError(f"dropped {self.dropped_tokens} tokens; expected fewer than {self.block_size}")

    def __str__(self) -> str:
        return (f"{self.documents:,} documents -> {self.tokens:,} tokens -> {self.blocks:,} blocks of "
                f"{self.block_size} ({self.dropped_tokens} tokens of the final remainder dropped)")


class BlockChunker:
    """Concatenate token lists and cut them into fixed `block_size` blocks, carrying the remainder across calls.

    >>> c = BlockChunker(4)
    >>> c.add([[1, 2, 3], [4, 5]]).tolist()
    [[1, 2, 3, 4]]
    >>> c.add([[6, 7, 8, 9]]).tolist()
    [[5, 6, 7, 8]]
    >>> c.finish().dropped_tokens
    1
    """

    def __init__(self, block_size: int = BLOCK_SIZE, dtype: Any = np.int32):
        if block_size < 1:
            raise ValueError("block_size must be positive")
        self.block_size = block_size
        self.dtype = dtype
        self.stats = ChunkStats(block_size)
        self._carry = np.zeros(0, dtype=dtype)
        self._finished = False

    def add(self, token_lists: Iterable[Sequence[int]]) -> np.ndarray:
        """Add documents (lists of token ids); return the completed blocks, shape ``(n, block_size)``."""
        if self._finished:
            raise RuntimeError("finish() was called: make a new BlockChunker")
        lists = list(token_lists)
        n_tokens = sum(len(t) for t in lists)
        flat = np.fromiter(itertools.chain.from_iterable(lists), dtype=self.dtype, count=n_tokens)
        self.stats.documents += len(lists)
        self.stats.tokens += n_tokens
        data = np.concatenate([self._carry, flat]) if self._carry.size else flat
        full = (data.size // self.block_size) * self.block_size
        self._carry = data[full:].copy()
        blocks = data[:full].reshape(-1, self.block_size)
        self.stats.blocks += blocks.shape[0]
        return blocks

    def finish(self) -> ChunkStats:
        """Drop (and count) the final remainder; return the totals, already checked."""
        if not self._finished:
            self.stats.dropped_tokens = int(self._carry.size)
            self._carry = self._carry[:0]
            self._finished = True
        self.stats.check()
        return self.stats


def chunk_token_lists(token_lists: Iterable[Sequence[int]], block_size: int = BLOCK_SIZE) -> tuple[np.ndarray, ChunkStats]:
    """All blocks at once: ``(blocks[n, block_size] int32, stats)``."""
    chunker = BlockChunker(block_size)
    blocks = chunker.add(token_lists)
    return blocks, chunker.finish()


def tokenize_and_chunk(corpus: Any, tokenizer: Any, *, block_size: int = BLOCK_SIZE, batch_size: int = 1000,
                       num_proc: int | None = None, progress: bool = True) -> tuple[np.ndarray, ChunkStats]:
    """Tokenize every line (``<s> ... </s>``, no truncation), concatenate, cut into `block_size` blocks.

    `corpus`: a `Corpus` or a ``datasets.Dataset`` with a ``text`` column. Returns ``(blocks, stats)`` with
    ``blocks`` an ``int32`` array of shape ``(stats.blocks, block_size)``; raises `EmptyCorpusError` when the
    corpus has no line or yields no complete block.
    """
    ds = corpus.dataset if isinstance(corpus, Corpus) else corpus
    if len(ds) == 0:
        raise EmptyCorpusError("the corpus is empty: nothing to tokenize (did a filter remove every line?)")

    def encode(batch: Mapping[str, list]) -> dict:
        return {"input_ids": tokenizer(batch["text"], return_attention_mask=False, verbose=False)["input_ids"]}

    import datasets

    bars = datasets.is_progress_bar_enabled()
    if not progress:
        datasets.disable_progress_bars()
    try:
        tokenized = ds.map(encode, batched=True, batch_size=batch_size, num_proc=num_proc,
                           remove_columns=ds.column_names, desc="tokenizing")
    finally:
        if bars and not progress:
            datasets.enable_progress_bars()
    chunker = BlockChunker(block_size)
    parts = [chunker.add(batch["input_ids"]) for batch in tokenized.iter(batch_size=batch_size)]
    stats = chunker.finish()
    if stats.blocks == 0:
        raise EmptyCorpusError(f"the corpus has only {stats.tokens} tokens: not one {block_size}-token block. "
                               "Use more text (a larger max_chars / max_lines).")
    return np.concatenate(parts, axis=0), stats


# ============================================================================================== shards
_SHARD_RE = re.compile(r"^(?P<prefix>.+)-(?P<index>\d{5})-(?P<records>\d+)\.tfrecord$")


def shard_name(prefix: str, index: int, records: int) -> str:
    """``train-00003-1000.tfrecord``: index and record count in the name (the seed's ``-\\d+-(\\d+)`` pattern)."""
    if "/" in prefix or not prefix:
        raise ValueError(f"bad shard prefix {prefix!r}")
    return f"{prefix}-{index:05d}-{records}.tfrecord"


def records_in_name(name: str) -> int | None:
    """The record count written in a shard's name, or None if the name does not follow `shard_name`."""
    m = _SHARD_RE.match(posixpath.basename(name))
    return int(m.group("records")) if m else None


@dataclass
class ShardInfo:
    name: str
    records: int
    bytes: int
    sha256: str


@dataclass
class Manifest:
    """What a shard folder holds: the source of truth for counts and checksums (names are a convenience)."""

    block_size: int
    records_per_shard: int
    prefix: str
    shards: list[ShardInfo] = field(default_factory=list)
    complete: bool = False
    metadata: dict = field(default_factory=dict)
    format: str = MANIFEST_FORMAT
    feature: str = FEATURE
    dtype: str = "int64"

    @property
    def total_records(self) -> int:
        return sum(s.records for s in self.shards)

    @property
    def total_tokens(self) -> int:
        return self.total_records * self.block_size

    def to_json(self) -> str:
        d = dataclasses.asdict(self)
        d["total_records"], d["total_tokens"] = self.total_records, self.total_tokens
        return json.dumps(d, indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "Manifest":
        d = json.loads(text)
        if d.get("format") != MANIFEST_FORMAT:
            raise ManifestError(f"not a tpu-course shard manifest (format {d.get('format')!r})")
        d.pop("total_records", None)
        d.pop("total_tokens", None)
        d["shards"] = [ShardInfo(**s) for s in d["shards"]]
        return cls(**d)


@dataclass
class ShardReport:
    """What `write_shards` did."""

    out_dir: str
    manifest: Manifest
    written: list[str]
    skipped: list[str]
    removed: list[str]
    seconds: float

    def __str__(self) -> str:
        m = self.manifest
        return (f"{len(m.shards)} shards in {self.out_dir} ({m.total_records:,} records of {m.block_size} tokens = "
                f"{m.total_tokens:,} tokens): {len(self.written)} written, {len(self.skipped)} already verified, "
                f"{len(self.removed)} stale files removed, {self.seconds:.1f} s")


def _tf():
    import tensorflow as tf
    return tf


def _join(base: str, name: str) -> str:
    return posixpath.join(base, name) if base.startswith("gs://") else os.path.join(base, name)


def _write_text_atomic(path: str, text: str) -> None:
    tf = _tf()
    tmp = f"{path}.partial-{uuid.uuid4().hex[:8]}"
    with tf.io.gfile.GFile(tmp, "w") as f:
        f.write(text)
    tf.io.gfile.rename(tmp, path, overwrite=True)


def _iter_shard_blocks(blocks: np.ndarray | Iterable[np.ndarray], per_shard: int) -> Iterator[np.ndarray]:
    if isinstance(blocks, np.ndarray):
        blocks = [blocks]
    pending: list[np.ndarray] = []
    count = 0
    width = None
    for arr in blocks:
        arr = np.asarray(arr)
        if arr.ndim != 2:
            raise ShardBlockSizeError(f"blocks must be a 2-D array (records, block_size); got shape {arr.shape}")
        if width is not None and arr.shape[1] != width:
            raise ShardBlockSizeError(f"blocks of {arr.shape[1]} tokens after blocks of {width}: all records of "
                                      "one shard folder must have the same length")
        width = arr.shape[1]
        start = 0
        while start < arr.shape[0]:
            take = min(per_shard - count, arr.shape[0] - start)
            pending.append(arr[start: start + take])
            count += take
            start += take
            if count == per_shard:
                yield np.concatenate(pending)
                pending, count = [], 0
    if count:
        yield np.concatenate(pending)


def _serialize(rows: np.ndarray) -> Iterator[bytes]:
    tf = _tf()
    for row in rows:
        feature = tf.train.Feature(int64_list=tf.train.Int64List(value=row.tolist()))
        yield tf.train.Example(features=tf.train.Features(feature={FEATURE: feature})).SerializeToString()


def write_shards(blocks: np.ndarray | Iterable[np.ndarray], out_dir: str | os.PathLike[str], *,
                 prefix: str = "train", records_per_shard: int = 1000, metadata: Mapping[str, Any] | None = None,
                 progress: bool = True, manifest_every_s: float = 30.0,
                 _publish_hook: Callable[[str], None] | None = None) -> ShardReport:
    """Write blocks to TFRecord shards of `records_per_shard` records in `out_dir` (local or ``gs://``).

    Each shard is serialised to a local temporary file, hashed, copied to ``<name>.partial-<id>`` in `out_dir`
    and renamed to its final name, so a crash never leaves a truncated file under a final name (on GCS the
    rename is a server-side copy plus delete: the final object appears whole or not at all). The manifest
    (``manifest.json``, written the same way) is marked ``complete: false`` before any shard is touched,
    checkpointed every `manifest_every_s` seconds (0: after every shard) and finalised at the end, so readers
    refuse a folder whose writing run did not finish. On a re-run a shard is skipped when its manifest entry
    has the checksum of the bytes it would write now and its file has the recorded size; stale shards and
    ``.partial`` leftovers are removed at the end. `blocks`: one array ``(records, block_size)`` or an iterable
    of them (streamed). Returns a `ShardReport`.
    """
    tf = _tf()
    out_dir = str(out_dir).rstrip("/")
    if records_per_shard < 1:
        raise ValueError("records_per_shard must be positive")
    tf.io.gfile.makedirs(out_dir)
    manifest_path = _join(out_dir, MANIFEST_NAME)
    manifest = Manifest(block_size=0, records_per_shard=records_per_shard, prefix=prefix,
                        metadata=dict(metadata or {}))
    previous: dict[str, ShardInfo] = {}
    if tf.io.gfile.exists(manifest_path):
        try:
            old = Manifest.from_json(tf.io.gfile.GFile(manifest_path).read())
            previous = {s.name: s for s in old.shards}
        except (ManifestError, ValueError, KeyError, TypeError):
            previous = {}

    def checkpoint() -> None:  # new entries so far + old ones not yet superseded (a skip cache for a re-run)
        done = {s.name for s in manifest.shards}
        cache = dataclasses.replace(manifest, shards=manifest.shards + [s for n, s in previous.items()
                                                                         if n not in done], complete=False)
        _write_text_atomic(manifest_path, cache.to_json())

    checkpoint()  # from here on the folder is being (re)written: readers must refuse it until the end

    start = last_checkpoint = time.perf_counter()
    written, skipped = [], []
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(desc=f"shards -> {out_dir}", unit="shard")
    with tempfile.TemporaryDirectory(prefix="tpu-course-shard-") as tmpdir:
        for index, rows in enumerate(_iter_shard_blocks(blocks, records_per_shard)):
            manifest.block_size = manifest.block_size or int(rows.shape[1])
            name = shard_name(prefix, index, rows.shape[0])
            local = os.path.join(tmpdir, name)
            with tf.io.TFRecordWriter(local) as writer:
                for record in _serialize(rows):
                    writer.write(record)
            data = Path(local).read_bytes()
            info = ShardInfo(name, int(rows.shape[0]), len(data), hashlib.sha256(data).hexdigest())
            final = _join(out_dir, name)
            old = previous.get(name)
            if (old is not None and old.sha256 == info.sha256 and tf.io.gfile.exists(final)
                    and tf.io.gfile.stat(final).length == info.bytes):
                skipped.append(name)
            else:
                partial = f"{final}.partial-{uuid.uuid4().hex[:8]}"
                tf.io.gfile.copy(local, partial, overwrite=True)
                if _publish_hook is not None:  # tests: simulate a crash between upload and rename
                    _publish_hook(partial)
                tf.io.gfile.rename(partial, final, overwrite=True)
                written.append(name)
            os.remove(local)
            manifest.shards.append(info)
            if time.perf_counter() - last_checkpoint >= manifest_every_s:
                checkpoint()
                last_checkpoint = time.perf_counter()
            if bar is not None:
                bar.update(1)
                bar.set_postfix(records=manifest.total_records)
    if bar is not None:
        bar.close()
    if not manifest.shards:
        raise EmptyCorpusError("no blocks to write: the corpus produced no complete block")
    keep = {s.name for s in manifest.shards} | {MANIFEST_NAME}
    removed = []
    for path in tf.io.gfile.glob(_join(out_dir, "*")):
        base = posixpath.basename(path.rstrip("/"))
        if (base.endswith(".tfrecord") and base not in keep) or ".partial-" in base:
            tf.io.gfile.remove(path)
            removed.append(base)
    manifest.complete = True
    _write_text_atomic(manifest_path, manifest.to_json())
    return ShardReport(out_dir, manifest, written, skipped, removed, time.perf_counter() - start)


def read_manifest(shard_dir: str | os.PathLike[str]) -> Manifest:
    """The folder's manifest; `ManifestError` if it is missing or unreadable."""
    tf = _tf()
    path = _join(str(shard_dir).rstrip("/"), MANIFEST_NAME)
    if not tf.io.gfile.exists(path):
        raise ManifestError(f"no {MANIFEST_NAME} in {shard_dir}: write the shards with write_shards() (which "
                            "records counts and checksums), or pass manifest=False to trust the file names")
    try:
        return Manifest.from_json(tf.io.gfile.GFile(path).read())
    except (ValueError, KeyError, TypeError) as e:
        raise ManifestError(f"{path} is not a valid manifest ({e}); rerun write_shards() to rebuild it") from None


def count_tfrecords(data: bytes) -> int:
    """Count the records in TFRecord bytes by walking the framing; `ShardVerificationError` if truncated."""
    pos, count, n = 0, 0, len(data)
    while pos < n:
        if pos + 12 > n:
            raise ShardVerificationError(f"truncated record header at byte {pos} of {n}")
        (length,) = struct.unpack_from("<Q", data, pos)
        end = pos + 12 + length + 4
        if end > n:
            raise ShardVerificationError(f"record {count} needs {end} bytes, the file has {n}: truncated")
        pos, count = end, count + 1
    return count


@dataclass
class VerifyReport:
    shard_dir: str
    ok: list[str]
    problems: list[str]
    total_records: int

    @property
    def all_ok(self) -> bool:
        return not self.problems

    def raise_for_problems(self) -> None:
        if self.problems:
            raise ShardVerificationError(f"{len(self.problems)} problem(s) in {self.shard_dir}:\n  - "
                                         + "\n  - ".join(self.problems)
                                         + "\nFix: rerun write_shards() (it rewrites only what does not verify).")

    def __str__(self) -> str:
        state = "all verified" if self.all_ok else f"{len(self.problems)} problem(s)"
        return f"{len(self.ok)} shards, {self.total_records:,} records in {self.shard_dir}: {state}"


def verify_shards(shard_dir: str | os.PathLike[str], *, deep: bool = True) -> VerifyReport:
    """Check every shard against the manifest: present, same size, and (`deep`) same sha256 and record count.

    Also reports an incomplete manifest (an interrupted run), ``.tfrecord`` files the manifest does not list,
    and ``.partial`` leftovers.
    """
    tf = _tf()
    shard_dir = str(shard_dir).rstrip("/")
    manifest = read_manifest(shard_dir)
    ok, problems = [], []
    if not manifest.complete:
        problems.append("the manifest is incomplete: the run that wrote these shards did not finish")
    listed = {s.name for s in manifest.shards}
    present = {posixpath.basename(p) for p in tf.io.gfile.glob(_join(shard_dir, "*"))}
    for name in sorted(present - listed - {MANIFEST_NAME}):
        if name.endswith(".tfrecord"):
            problems.append(f"{name}: not in the manifest (stale or foreign shard; a glob would read it)")
        elif ".partial-" in name:
            problems.append(f"{name}: leftover of an interrupted write")
    for info in manifest.shards:
        path = _join(shard_dir, info.name)
        if info.name not in present:
            problems.append(f"{info.name}: missing")
            continue
        size = tf.io.gfile.stat(path).length
        if size != info.bytes:
            problems.append(f"{info.name}: {size} bytes, the manifest says {info.bytes} (truncated or replaced)")
            continue
        if deep:
            data = tf.io.gfile.GFile(path, "rb").read()
            if hashlib.sha256(data).hexdigest() != info.sha256:
                problems.append(f"{info.name}: sha256 differs from the manifest")
                continue
            try:
                n = count_tfrecords(data)
            except ShardVerificationError as e:
                problems.append(f"{info.name}: {e}")
                continue
            if n != info.records or records_in_name(info.name) not in (None, n):
                problems.append(f"{info.name}: {n} records, the manifest says {info.records}")
                continue
        ok.append(info.name)
    return VerifyReport(shard_dir, ok, problems, manifest.total_records)


@dataclass
class ShardSet:
    """The shards a pipeline will read, after the checks of `inspect_shards`."""

    files: list[str]
    total_records: int
    block_size: int
    manifest: Manifest | None
    pattern: str | list[str] = ""  # what `make_mlm_dataset` hands to tf.data.Dataset.list_files


def _first_record_length(path: str) -> int:
    tf = _tf()
    for raw in tf.data.TFRecordDataset(path).take(1):
        example = tf.train.Example.FromString(raw.numpy())
        if FEATURE not in example.features.feature:
            raise ShardBlockSizeError(f"{path}: its records have no {FEATURE!r} feature "
                                      f"(features: {sorted(example.features.feature)})")
        return len(example.features.feature[FEATURE].int64_list.value)
    return -1  # empty file


def inspect_shards(shards: str | Sequence[str], *, block_size: int = BLOCK_SIZE, manifest: bool = True,
                   peek: int = 8) -> ShardSet:
    """Glob the shards and check them before a pipeline reads them, with a clear error for each problem.

    `shards`: a folder (``gs://bucket/mlm/train`` or local; its ``*.tfrecord``), a glob pattern, or a list
    of files. With `manifest` the folder's manifest gives the counts and must list exactly the globbed files,
    be complete and have `block_size`. The first record of up to `peek` shards (spread over the list) is read
    to check its length, so shards of another block length are caught even without a manifest.
    """
    tf = _tf()
    if isinstance(shards, (str, os.PathLike)):
        pattern = str(shards)
        is_glob = any(c in pattern for c in "*?[")
        folder = posixpath.dirname(pattern) if is_glob else pattern.rstrip("/")
        if not is_glob:
            pattern = _join(folder, "*.tfrecord")
        files = sorted(tf.io.gfile.glob(pattern))
    else:
        files = sorted(str(f) for f in shards)
        folder = posixpath.dirname(files[0]) if files else ""
        pattern = files
    if not files:
        raise ShardError(f"no .tfrecord shards match {pattern} (wrong path or bucket? write them first with "
                         "write_shards())")
    dirs = {posixpath.dirname(f) for f in files}
    man = None
    if manifest:
        if len(dirs) > 1:
            raise ManifestError(f"the shards come from {len(dirs)} folders ({sorted(dirs)}); one manifest covers "
                                "one folder: pass one folder, or manifest=False")
        man = read_manifest(dirs.pop())
        if not man.complete:
            raise ManifestError(f"the manifest in {folder} is incomplete: the run writing these shards was "
                                "interrupted. Rerun write_shards() to finish them.")
        if man.block_size != block_size:
            raise ShardBlockSizeError(f"the shards in {folder} hold {man.block_size}-token blocks but the pipeline "
                                      f"expects {block_size}: rewrite them with block_size={block_size}, or use "
                                      f"block_size={man.block_size} here (and in the model).")
        listed = {s.name: s for s in man.shards}
        names = [posixpath.basename(f) for f in files]
        extra = [n for n in names if n not in listed]
        missing = [n for n in listed if n not in names]
        if extra or missing:
            raise ManifestError(f"the files in {folder} do not match its manifest: "
                                + (f"not listed: {extra[:5]} " if extra else "")
                                + (f"missing: {missing[:5]} " if missing else "")
                                + "(stale shards from another run?). Rerun write_shards() into a clean folder.")
        total = sum(listed[n].records for n in names)
    else:
        counts = [records_in_name(f) for f in files]
        if None in counts:
            bad = [f for f, c in zip(files, counts) if c is None][:3]
            raise ManifestError(f"without a manifest the record count must be in the name "
                                f"(<prefix>-<index>-<count>.tfrecord); these are not: {bad}")
        total = int(sum(counts))
    if peek:
        picks = sorted({round(i * (len(files) - 1) / max(1, min(peek, len(files)) - 1))
                        for i in range(min(peek, len(files)))})
        lengths = {files[i]: _first_record_length(files[i]) for i in picks}
        wrong = {posixpath.basename(f): n for f, n in lengths.items() if n != block_size}
        if wrong:
            seen = sorted(set(lengths.values()))
            raise ShardBlockSizeError(f"shards with blocks of {seen} tokens where {block_size} is expected: {wrong}. "
                                      "All shards of one pipeline need the same block length: rewrite the odd "
                                      "ones or point the pipeline at one folder.")
    return ShardSet(files, total, block_size, man, pattern)


# ============================================================================================== pipeline
@dataclass(frozen=True)
class MaskingSpec:
    """What MLM masking needs from the tokenizer (plain ints, so it is cheap to pass into ``tf.data``)."""

    mask_token_id: int
    vocab_size: int
    special_ids: tuple[int, ...]
    pad_token_id: int

    @classmethod
    def from_tokenizer(cls, tokenizer: Any) -> "MaskingSpec":
        specials = tuple(sorted(set(int(i) for i in tokenizer.all_special_ids)))
        return cls(int(tokenizer.mask_token_id), len(tokenizer), specials, int(tokenizer.pad_token_id))

    @property
    def regular_ids(self) -> np.ndarray:
        ids = np.arange(self.vocab_size, dtype=np.int32)
        return ids[~np.isin(ids, self.special_ids)]


def mask_tokens(input_ids: Any, spec: MaskingSpec, *, mlm_probability: float = 0.15, seed: Any = None):
    """BERT/RoBERTa MLM masking in pure TensorFlow: returns ``(masked_input_ids, labels)``.

    Each non-special token is selected with probability `mlm_probability`; a selected token becomes ``<mask>``
    80 % of the time, a random *regular* token 10 %, and stays unchanged 10 %. ``labels`` hold the original id
    at selected positions and -100 elsewhere (ignored by the loss). Special tokens are never selected.
    `seed`: an int32/int64 tensor of shape ``[2]`` for stateless (reproducible) randomness, or None.
    Works on any shape; traceable by ``tf.function``/XLA and inside ``tf.data``; with a seed, the same masks
    with or without ``jit_compile`` (Philox generator pinned).
    """
    tf = _tf()
    ids = tf.convert_to_tensor(input_ids)
    shape = tf.shape(ids)
    specials = tf.constant(spec.special_ids, dtype=ids.dtype)
    regular = tf.constant(spec.regular_ids, dtype=ids.dtype)
    if seed is None:
        u_select = tf.random.uniform(shape)
        u_action = tf.random.uniform(shape)
        pick = tf.random.uniform(shape, maxval=tf.size(regular), dtype=tf.int32)
    else:
        # alg="philox" pinned: "auto_select" picks different generators with and without XLA.
        seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), num=3, alg="philox")
        u_select = tf.random.stateless_uniform(shape, seed=seeds[0], alg="philox")
        u_action = tf.random.stateless_uniform(shape, seed=seeds[1], alg="philox")
        pick = tf.random.stateless_uniform(shape, seed=seeds[2], maxval=tf.size(regular), dtype=tf.int32,
                                           alg="philox")
    is_special = tf.reduce_any(tf.equal(ids[..., tf.newaxis], specials), axis=-1)
    selected = (u_select < mlm_probability) & ~is_special
    labels = tf.where(selected, ids, tf.constant(-100, ids.dtype))
    to_mask = selected & (u_action < 0.8)
    to_random = selected & (u_action >= 0.8) & (u_action < 0.9)
    out = tf.where(to_mask, tf.constant(spec.mask_token_id, ids.dtype), ids)
    out = tf.where(to_random, tf.gather(regular, pick), out)
    return out, labels


def make_mlm_dataset(shards: str | Sequence[str], spec: MaskingSpec, *, batch_size: int,
                     block_size: int = BLOCK_SIZE, shuffle: bool = True, seed: int | None = None,
                     shuffle_buffer: int = 10_000, mlm_probability: float = 0.15, labels: str = "dict",
                     repeat: bool = False, manifest: bool = True, cycle_length: int = 8, peek: int = 8,
                     drop_remainder: bool = True):
    """The MLM input pipeline, all ``tf.data``/TF ops (no Python in the loop).

    glob the shards (`inspect_shards`: gs:// or local, checked against the manifest) -> shuffle the file list ->
    interleave ``TFRecordDataset`` readers -> ``assert_cardinality`` (manifest total) -> shuffle records ->
    ``batch(drop_remainder=True)`` of *serialized* records -> ``tf.io.parse_example`` (one op per batch, fixed
    shape ``[batch, block_size]``) -> TF-native masking (`mask_tokens`) -> ``prefetch``.

    labels: ``"dict"`` yields ``{"input_ids", "attention_mask", "labels"}`` (a Transformers TF model computes
    its own MLM loss from ``labels`` in the inputs); ``"tuple"`` yields ``({"input_ids", "attention_mask"},
    labels)`` for a Keras loss/metric. seed: with an int the file order, record order and masks are
    reproducible; training re-draws masks every epoch, evaluation (``shuffle=False``) keeps the same masks.
    The dataset's cardinality is ``total_records // batch_size`` (``repeat=True``: infinite).
    """
    tf = _tf()
    if labels not in ("dict", "tuple"):
        raise ValueError("labels must be 'dict' or 'tuple'")
    if batch_size < 1:
        raise ValueError("batch_size must be positive")
    info = inspect_shards(shards, block_size=block_size, manifest=manifest, peek=peek)
    if drop_remainder and info.total_records < batch_size:
        raise MLMDataError(f"{info.total_records} records cannot fill one batch of {batch_size} with "
                           "drop_remainder=True: write more data or use a smaller batch")
    autotune = tf.data.AUTOTUNE
    # list_files (one glob, the same one inspect_shards checked) marks the names as files in the dataset graph,
    # so tools that inspect a pipeline (tpu_helpers.pipeline_purity, SavedModel asset tracking) see them.
    files = tf.data.Dataset.list_files(info.pattern, shuffle=shuffle, seed=seed)
    records = files.interleave(lambda f: tf.data.TFRecordDataset(f), cycle_length=min(cycle_length, len(info.files)),
                               num_parallel_calls=autotune, deterministic=seed is not None or not shuffle)
    records = records.apply(tf.data.experimental.assert_cardinality(info.total_records))
    if shuffle:
        records = records.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    if repeat:
        records = records.repeat()
    batches = records.batch(batch_size, drop_remainder=drop_remainder)
    features = {FEATURE: tf.io.FixedLenFeature([block_size], tf.int64)}

    def parse(serialized):
        ids = tf.cast(tf.io.parse_example(serialized, features)[FEATURE], tf.int32)
        return ids

    batches = batches.map(parse, num_parallel_calls=autotune)

    def finish(ids, mask_seed=None):
        masked, y = mask_tokens(ids, spec, mlm_probability=mlm_probability, seed=mask_seed)
        inputs = {"input_ids": masked, "attention_mask": tf.ones_like(masked)}
        if labels == "tuple":
            return inputs, y
        inputs["labels"] = y
        return inputs

    if seed is None:
        batches = batches.map(finish, num_parallel_calls=autotune)
    else:
        seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=shuffle).batch(2)
        batches = tf.data.Dataset.zip(batches, seeds).map(finish, num_parallel_calls=autotune)
    return batches.prefetch(autotune)


def to_tf_dataset_baseline(blocks: np.ndarray, tokenizer: Any, *, batch_size: int, mlm_probability: float = 0.15,
                           shuffle: bool = True):
    """The comparison pipeline: the same blocks through ``Dataset.to_tf_dataset`` with
    ``DataCollatorForLanguageModeling`` (Python/numpy masking via ``tf.numpy_function``, the seed's
    in-memory alternative; it cannot run on a TPU Node's host)."""
    import datasets
    from transformers import DataCollatorForLanguageModeling

    ds = datasets.Dataset.from_dict({"input_ids": np.asarray(blocks)})
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=mlm_probability, return_tensors="np")
    return ds.to_tf_dataset(columns=["input_ids", "attention_mask"], label_cols="labels", batch_size=batch_size,
                            shuffle=shuffle, collate_fn=collator, drop_remainder=True)


def show_masked_example(batch: Mapping[str, Any] | tuple, tokenizer: Any, *, row: int = 0,
                        max_tokens: int = 48) -> str:
    """One row of a masked batch as text: ``[<mask>→the]`` where the model must guess ``the``, ``[~of→the]`` for
    a random replacement and ``[=the]`` for a selected token left unchanged; other tokens plain."""
    inputs, labels = (batch[0], batch[1]) if isinstance(batch, tuple) else (batch, batch["labels"])
    ids = np.asarray(inputs["input_ids"])[row][:max_tokens]
    lab = np.asarray(labels)[row][:max_tokens]
    words = []
    for i, y in zip(ids.tolist(), lab.tolist()):
        shown = tokenizer.convert_ids_to_tokens(int(i))
        if y == -100:
            words.append(shown)
        else:
            orig = tokenizer.convert_ids_to_tokens(int(y))
            words.append(f"[{shown}→{orig}]" if i == tokenizer.mask_token_id else
                         f"[={orig}]" if i == y else f"[~{shown}→{orig}]")
    return " ".join(words).replace("▁", "")


def measure_throughput(dataset: Any, *, batches: int = 50, warmup: int = 3) -> dict[str, float]:
    """Iterate `dataset` and return ``{"samples_per_s", "batches", "samples", "seconds"}`` (after `warmup`)."""
    it = iter(dataset)
    for _ in range(warmup):
        next(it)
    samples = 0
    start = time.perf_counter()
    done = 0
    for _ in range(batches):
        try:
            batch = next(it)
        except StopIteration:
            break
        x = batch[0] if isinstance(batch, tuple) else batch
        samples += int(x["input_ids"].shape[0])
        done += 1
    seconds = time.perf_counter() - start
    return {"samples_per_s": samples / seconds if seconds > 0 else float("nan"), "batches": done,
            "samples": samples, "seconds": seconds}


# ============================================================================================== comparisons
def per_record_baseline(shards: str | Sequence[str], spec: MaskingSpec, *, batch_size: int,
                        block_size: int = BLOCK_SIZE, shuffle: bool = True, shuffle_buffer: int = 10_000,
                        mlm_probability: float = 0.15, repeat: bool = False, manifest: bool = True):
    """The comparison pipeline of the seed's script: parse one record at a time, then batch.

    ``prepare_dataset`` in transformers' ``examples/tensorflow/language-modeling-tpu/run_mlm.py``: file list ->
    shuffle -> ``TFRecordDataset(num_parallel_reads=AUTOTUNE)`` -> ``assert_cardinality`` -> ``map(decode_fn)``
    with ``tf.io.parse_single_example`` (one call per record) -> shuffle -> ``batch(drop_remainder=True)`` ->
    ``map(mask)`` -> ``prefetch``. The masking is `mask_tokens`, the same as `make_mlm_dataset`'s (the seed's
    ``DataCollatorForLanguageModeling.tf_mask_tokens`` costs about the same), so a comparison of the two
    pipelines measures where the parsing happens: per record here, per batch there. Output: the ``"dict"``
    form of `make_mlm_dataset`.
    """
    tf = _tf()
    info = inspect_shards(shards, block_size=block_size, manifest=manifest)
    autotune = tf.data.AUTOTUNE
    files = tf.data.Dataset.from_tensor_slices(info.files)
    if shuffle:
        files = files.shuffle(len(info.files))
    records = tf.data.TFRecordDataset(files, num_parallel_reads=autotune)
    records = records.apply(tf.data.experimental.assert_cardinality(info.total_records))
    features = {FEATURE: tf.io.FixedLenFeature([block_size], tf.int64)}
    rows = records.map(lambda r: tf.cast(tf.io.parse_single_example(r, features)[FEATURE], tf.int32),
                       num_parallel_calls=autotune)
    if shuffle:
        rows = rows.shuffle(shuffle_buffer)
    if repeat:
        rows = rows.repeat()

    def finish(ids):
        masked, y = mask_tokens(ids, spec, mlm_probability=mlm_probability)
        return {"input_ids": masked, "attention_mask": tf.ones_like(masked), "labels": y}

    return rows.batch(batch_size, drop_remainder=True).map(finish, num_parallel_calls=autotune).prefetch(autotune)


@dataclass
class PipelineComparison:
    """Samples/s of several input pipelines measured side by side (`compare_pipelines`)."""

    values: dict[str, list[float]]  # name -> samples/s, one value per round
    batch_size: int
    seconds: float  # measured per candidate and round

    @property
    def medians(self) -> dict[str, float]:
        import statistics
        return {k: statistics.median(v) for k, v in self.values.items()}

    def ratio(self, name: str, baseline: str) -> float:
        """How many times the samples/s of `name` the median of `baseline` is (> 1: faster)."""
        med = self.medians
        return med[name] / med[baseline] if med[baseline] > 0 else float("nan")

    def table(self, baseline: str | None = None) -> str:
        med = self.medians
        baseline = baseline or min(med, key=med.get)
        width = max(len(k) for k in med)
        lines = [f"{'pipeline'.ljust(width)}  samples/s (median; min-max over {len(next(iter(self.values.values())))} "
                 f"rounds)  x vs {baseline}"]
        for k, v in self.values.items():
            lines.append(f"{k.ljust(width)}  {med[k]:>9,.0f} ({min(v):,.0f}-{max(v):,.0f})"
                         f"{'':>14}{self.ratio(k, baseline):6.1f}x")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def compare_pipelines(pipelines: Mapping[str, Callable[[], Any]], *, rounds: int = 3, seconds: float = 1.0,
                      warmup: int = 3, progress: bool = False) -> PipelineComparison:
    """Measure the samples/s of several ``tf.data`` pipelines in one run, interleaved so that a slow moment of a
    shared machine hits every candidate alike.

    `pipelines`: name -> a function that builds the dataset (it must not run out: use ``repeat``). Each is built
    once, its first `warmup` batches (shuffle buffers filling, functions tracing) are not timed, then every
    round iterates each pipeline for about `seconds` and records samples/s. Elements are dicts with
    ``input_ids`` or ``(inputs, labels)`` tuples.
    """
    iterators: dict[str, Any] = {}
    batch = 0
    for name, make in pipelines.items():
        it = iter(make())
        for _ in range(warmup):
            first = next(it)
        x = first[0] if isinstance(first, tuple) else first
        batch = int(x["input_ids"].shape[0])
        iterators[name] = it
    values: dict[str, list[float]] = {name: [] for name in pipelines}
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=rounds * len(pipelines), desc="measuring pipelines", unit="run")
    for _ in range(rounds):
        for name, it in iterators.items():
            samples = 0
            start = time.perf_counter()
            while True:
                x = next(it)
                x = x[0] if isinstance(x, tuple) else x
                samples += int(x["input_ids"].shape[0])
                elapsed = time.perf_counter() - start
                if elapsed >= seconds:
                    break
            values[name].append(samples / elapsed)
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    return PipelineComparison(values, batch, seconds)


# ============================================================================================== metric
def masked_accuracy(labels: Any, logits: Any, *, ignore_index: int = -100):
    """``(correct, counted)``: how many labelled positions the argmax of `logits` gets right, and how many
    positions are labelled (label != `ignore_index`). Static shapes (no boolean mask): XLA-friendly."""
    tf = _tf()
    labels = tf.convert_to_tensor(labels)
    mask = tf.cast(tf.not_equal(labels, ignore_index), tf.float32)
    predicted = tf.cast(tf.argmax(logits, axis=-1), labels.dtype)
    correct = tf.reduce_sum(tf.cast(tf.equal(predicted, labels), tf.float32) * mask)
    return correct, tf.reduce_sum(mask)


def masked_accuracy_metric(name: str = "masked_accuracy", ignore_index: int = -100):
    """A Keras (tf-keras) metric: accuracy over the positions whose label is not `ignore_index`.

    The seed compiles with ``metrics=["accuracy"]``, which Keras resolves to sparse categorical accuracy over
    *every* position: the ~85 % labelled -100 count as wrong, so it reads about 0.15 x the real accuracy.
    """
    import tf_keras as keras

    class MaskedAccuracy(keras.metrics.Metric):
        def __init__(self, **kwargs):
            super().__init__(name=kwargs.pop("name", name), **kwargs)
            self.correct = self.add_weight(name="correct", initializer="zeros")
            self.counted = self.add_weight(name="counted", initializer="zeros")

        def update_state(self, y_true, y_pred, sample_weight=None):
            correct, counted = masked_accuracy(y_true, y_pred, ignore_index=ignore_index)
            self.correct.assign_add(correct)
            self.counted.assign_add(counted)

        def result(self):
            return _tf().math.divide_no_nan(self.correct, self.counted)

        def reset_state(self):
            self.correct.assign(0.0)
            self.counted.assign(0.0)

    return MaskedAccuracy()


# ============================================================================================== inference
def fill_mask_pipeline(model: Any, tokenizer: Any, *, top_k: int = 5):
    """transformers' ``fill-mask`` pipeline for a TensorFlow model, usable in a TensorFlow kernel.

    With the course's stack (transformers 4.57.6 and torch, torch_xla and accelerate installed beside
    TensorFlow), ``from transformers import pipeline`` in a TensorFlow process fails, checked on this stack:
    ``transformers/training_args.py`` (imported by ``pipelines/base.py`` through ``modelcard.py``) runs
    ``import torch_xla`` when the package is installed, which aborts a process that has TensorFlow loaded
    (``LLVM ERROR: ... registered more than once``); with ``USE_TORCH_XLA=0`` it imports accelerate instead and
    stops with ``NameError: name 'LRScheduler' is not defined`` (``USE_TF`` hides torch from transformers, not
    from accelerate). Neither package is needed by a TensorFlow pipeline, so in a TensorFlow process this hides
    both from transformers (its ``_torch_xla_available`` / ``_accelerate_available`` flags) before importing
    the pipelines, and passes ``dtype=None`` (``pipeline()``'s default ``"auto"`` looks the name up on ``torch``).
    """
    import transformers.utils.import_utils as import_utils

    if "tensorflow" in sys.modules and "torch_xla" not in sys.modules:
        import_utils._torch_xla_available = False
        import_utils._accelerate_available = False
    from transformers import pipeline

    return pipeline("fill-mask", model=model, tokenizer=tokenizer, framework="tf", top_k=top_k, dtype=None)


# ============================================================================================== training log
def step_log_callback(tokens_per_step: int, *, progress: bool = True, description: str = "training"):
    """A Keras (tf-keras) callback that records every training step and shows a tqdm bar.

    After ``model.fit(..., callbacks=[log])``: ``log.losses`` (the loss Keras reports after each step: the running
    mean of the epoch so far), ``log.seconds`` (wall time of each step, from the end of the previous one, input
    pipeline included), ``log.first_steps`` (indices of the first step of each ``fit`` call: tracing and XLA
    compilation happen there), ``log.epochs`` (the logs Keras reports at each epoch end, with ``epoch``), and
    ``log.tokens_per_second()``: tokens of the steady-state steps (first steps excluded) per second. One object
    can follow several ``fit`` calls (a resumed run).
    """
    import tf_keras as keras

    class StepLog(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.tokens_per_step = int(tokens_per_step)
            self.losses: list[float] = []
            self.seconds: list[float] = []
            self.first_steps: list[int] = []
            self.epochs: list[dict] = []
            self._last = 0.0
            self._bar = None

        def on_train_begin(self, logs=None):
            self.first_steps.append(len(self.losses))
            self._last = time.perf_counter()

        def on_epoch_begin(self, epoch, logs=None):
            if progress:
                from tqdm.auto import tqdm
                total = self.params.get("steps") if self.params else None
                self._bar = tqdm(total=total, desc=f"{description}, epoch {epoch + 1}", unit="step", leave=True)

        def on_train_batch_end(self, batch, logs=None):
            now = time.perf_counter()
            self.seconds.append(now - self._last)
            self._last = now
            loss = float((logs or {}).get("loss", float("nan")))
            self.losses.append(loss)
            if self._bar is not None:
                self._bar.update(1)
                self._bar.set_postfix(loss=f"{loss:.3f}")

        def on_epoch_end(self, epoch, logs=None):
            if self._bar is not None:
                self._bar.close()
                self._bar = None
            self.epochs.append({"epoch": epoch + 1, **{k: float(v) for k, v in (logs or {}).items()}})

        def steady_seconds(self) -> list[float]:
            first = set(self.first_steps)
            return [s for i, s in enumerate(self.seconds) if i not in first]

        def tokens_per_second(self) -> float:
            steady = self.steady_seconds()
            return len(steady) * self.tokens_per_step / sum(steady) if steady and sum(steady) > 0 else float("nan")

    return StepLog()
