"""The tokenizer and the model config of notebook 04: a Unigram tokenizer with RoBERTa's special tokens, a
RobertaConfig that copies every id from it (and says what is wrong with a mismatched pair), and the chunking of
token lists into 128-token blocks (the remainder carried across batches, counted)."""
from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np

from tpu_helpers.mlm.errors import CorpusTooSmallError, EmptyCorpusError, MLMDataError
from tpu_helpers.mlm.sources import Corpus

BLOCK_SIZE = 128
SPECIAL_TOKENS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")  # ids 0-4, RoBERTa's order for 0-3
# roberta-base's config.json (https://huggingface.co/FacebookAI/roberta-base/blob/main/config.json); note that
# `RobertaConfig()`'s own defaults differ (512 positions, type_vocab_size=2, layer_norm_eps=1e-12).
ROBERTA_BASE: dict[str, Any] = dict(
    vocab_size=50265, hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
    hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, max_position_embeddings=514,
    type_vocab_size=1, initializer_range=0.02, layer_norm_eps=1e-5, bos_token_id=0, pad_token_id=1,
    eos_token_id=2)


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
    from tokenizers import (
        AddedToken,
        Tokenizer,
        decoders,
        normalizers,
        pre_tokenizers,
        processors,
    )
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
    seen = {"texts": 0}

    def counted():
        for batch in _batches(texts, batch_size):
            seen["texts"] += sum(1 for t in batch if t and t.strip())
            yield batch

    tok.train_from_iterator(counted(), trainer=trainer, length=length)
    if not seen["texts"]:
        raise EmptyCorpusError("train_unigram_tokenizer got no text (or only empty lines): a tokenizer trained on "
                               "nothing would hold only the 5 special tokens. Check the corpus and its filter.")
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


def check_enough_blocks(stats: ChunkStats, global_batch: int, *, characters: int | None = None) -> None:
    """`CorpusTooSmallError` when the blocks do not fill one global batch (training drops the last partial
    batch, so it would have no step at all), saying how much more text is needed."""
    if stats.blocks >= global_batch:
        return
    need_tokens = global_batch * stats.block_size
    more = ""
    if characters and stats.tokens:
        per_token = characters / stats.tokens
        more = f" (about {int(need_tokens * per_token):,} characters of text at this corpus's {per_token:.1f} per token)"
    raise CorpusTooSmallError(
        f"the corpus gives {stats.blocks:,} blocks of {stats.block_size} tokens ({stats.tokens:,} tokens), but one "
        f"global batch needs {global_batch:,} blocks: at least {need_tokens:,} tokens{more}. Add text, or lower "
        "PER_REPLICA_BATCH (the global batch is that times the number of replicas).")
