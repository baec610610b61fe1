"""Padding strategies and what they cost: XLA compilations (distinct padded shapes) against padded-token waste."""
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from tpu_helpers.core.tables import format_table

DEFAULT_STRATEGIES = ("longest", "multiple_of_8", "multiple_of_32", "multiple_of_64", "buckets", "max_length")
_MULTIPLE_RE = re.compile(r"multiple_of_([1-9]\d*)$")


def round_up(n: int, multiple: int) -> int:
    """``n`` rounded up to a multiple of ``multiple`` (what ``pad_to_multiple_of`` does)."""
    return -(-int(n) // multiple) * multiple


def default_boundaries(max_length: int) -> list[int]:
    """Bucket upper bounds: 8, 16, 32, ... below ``max_length``, then ``max_length``."""
    return [8 << k for k in range(64) if 8 << k < max_length] + [max_length]


@dataclass(frozen=True)
class PaddedBatch:
    """One batch: which samples (``indices`` into the length list) and the length they are padded to."""
    indices: np.ndarray
    padded_length: int
    strategy: str
    max_length: int

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self.indices), self.padded_length)

    @property
    def tokenizer_kwargs(self) -> dict[str, Any]:
        """What makes a Hugging Face tokenizer pad this batch to exactly ``padded_length``, with its own options."""
        m = _MULTIPLE_RE.match(self.strategy)
        if self.strategy == "longest" or m:
            return {"padding": "longest", "truncation": True, "max_length": self.max_length,
                    **({"pad_to_multiple_of": int(m.group(1))} if m else {})}
        return {"padding": "max_length", "truncation": True, "max_length": self.padded_length}  # a fixed length


def padded_batches(lengths: Sequence[int], batch_size: int, strategy: str, *, max_length: int,
                   boundaries: Sequence[int] | None = None, seed: int | None = None) -> list[PaddedBatch]:
    """Batches of samples (in order, or shuffled with ``seed``; ``lengths`` before truncation), padded the ``strategy`` way."""
    m = _MULTIPLE_RE.match(strategy)
    if not (m or strategy in ("longest", "buckets", "max_length")):
        raise ValueError(f"unknown padding strategy {strategy!r}: use 'longest', 'multiple_of_N' (e.g. "
                         "'multiple_of_32'), 'buckets' or 'max_length'")
    if m and max_length % int(m.group(1)):
        raise ValueError(f"max_length={max_length} is not a multiple of {m.group(1)}: transformers' tokenizers "
                         f"refuse to truncate to it and pad to a multiple of {m.group(1)}; choose a max_length "
                         f"that is (e.g. {round_up(max_length, int(m.group(1)))}) or leave '{strategy}' out")
    lens = np.minimum(np.asarray(lengths, dtype=np.int64), max_length)
    order = np.arange(len(lens)) if seed is None else np.random.default_rng(seed).permutation(len(lens))
    out: list[PaddedBatch] = []
    if strategy == "buckets":
        bounds = sorted(set(int(b) for b in (boundaries or default_boundaries(max_length))))
        if bounds[-1] < max_length:
            bounds.append(max_length)
        pending: dict[int, list[int]] = {b: [] for b in bounds}
        for i in order:
            bound = bounds[int(np.searchsorted(bounds, lens[i]))]  # first bound >= length
            pending[bound].append(int(i))
            if len(pending[bound]) == batch_size:
                out.append(PaddedBatch(np.array(pending[bound]), bound, strategy, max_length))
                pending[bound] = []
        return out  # partial batches are dropped, as drop_remainder=True does
    for idx in (order[end - batch_size:end] for end in range(batch_size, len(order) + 1, batch_size)):
        longest = int(lens[idx].max())
        padded = (longest if strategy == "longest" else max_length if strategy == "max_length"
                  else round_up(longest, int(m.group(1))))
        out.append(PaddedBatch(idx, padded, strategy, max_length))
    return out


@dataclass(frozen=True)
class StrategyResult:
    """What one strategy costs on a length distribution."""
    strategy: str
    compilations: int  # distinct batch shapes = XLA programs to compile
    shapes: tuple[tuple[int, int], ...]  # the distinct (rows, padded length) shapes, sorted
    real_tokens: int  # tokens of the samples (after truncation) in the batches
    computed_tokens: int  # rows x padded length, summed over batches

    @property
    def padded_fraction(self) -> float:
        return 1.0 - self.real_tokens / self.computed_tokens if self.computed_tokens else 0.0

    @property
    def tokens_per_real_token(self) -> float:
        return self.computed_tokens / self.real_tokens if self.real_tokens else float("nan")


def evaluate_strategy(lengths: Sequence[int], batch_size: int, strategy: str, *, max_length: int,
                      boundaries: Sequence[int] | None = None, seed: int | None = None) -> StrategyResult:
    """Compilations and padded-token waste of one strategy (see `padded_batches` for the arguments)."""
    lens = np.minimum(np.asarray(lengths, dtype=np.int64), max_length)
    batches = padded_batches(lengths, batch_size, strategy, max_length=max_length, boundaries=boundaries, seed=seed)
    shapes = tuple(sorted({b.shape for b in batches}))
    real = int(sum(int(lens[b.indices].sum()) for b in batches))
    computed = int(sum(b.shape[0] * b.shape[1] for b in batches))
    return StrategyResult(strategy, len(shapes), shapes, real, computed)


@dataclass
class PaddingReport:
    """`StrategyResult` per strategy for one length distribution (``report["longest"].compilations``)."""
    results: dict[str, StrategyResult]
    batch_size: int
    max_length: int
    samples: int
    truncated_fraction: float  # share of all tokens cut off by truncation at max_length

    def __getitem__(self, strategy: str) -> StrategyResult:
        return self.results[strategy]

    def __iter__(self):
        return iter(self.results.values())

    def table(self) -> str:
        return format_table(
            ({"strategy": r.strategy, "compilations": r.compilations, "padded %": f"{r.padded_fraction:.1%}",
              "computed/real": f"{r.tokens_per_real_token:.2f}"} for r in self.results.values()),
            title=f"{self.samples} samples, batch {self.batch_size}, max_length {self.max_length} "
                  f"({self.truncated_fraction:.1%} of tokens truncated)")


def padding_report(lengths: Sequence[int], batch_size: int, *, max_length: int,
                   strategies: Iterable[str] = DEFAULT_STRATEGIES, boundaries: Sequence[int] | None = None,
                   seed: int | None = 0) -> PaddingReport:
    """Several padding strategies on one distribution of token lengths, all in the order ``seed`` shuffles once."""
    lens = np.asarray(lengths, dtype=np.int64)
    if lens.size < batch_size:
        raise ValueError(f"{lens.size} samples are fewer than one batch of {batch_size}: nothing to compare")
    results = {s: evaluate_strategy(lens, batch_size, s, max_length=max_length, boundaries=boundaries, seed=seed)
               for s in strategies}
    cut, total = int(np.maximum(lens - max_length, 0).sum()), int(lens.sum())
    return PaddingReport(results, batch_size, max_length, int(lens.size), cut / total if total else 0.0)


def plot_padding_reports(reports: Mapping[str, PaddingReport]):
    """A figure of compilations (log x) against padded % for ``{"dataset name": report}``."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for k, (name, rep) in enumerate(reports.items()):
        label = f"{name} (batch {rep.batch_size}, max_length {rep.max_length})"
        pts = ax.scatter([r.compilations for r in rep], [100 * r.padded_fraction for r in rep], marker="os^Dv<>"[k % 7],
                         s=55, label=label, zorder=3)
        # the "pad to a length" family (longest ... max_length) as one faint line; buckets stand alone
        family = [r for r in rep if r.strategy != "buckets"]
        ax.plot([r.compilations for r in family], [100 * r.padded_fraction for r in family], linestyle=":",
                color=pts.get_facecolor()[0], alpha=0.6, zorder=2)
        for r in rep:
            ax.annotate(r.strategy.replace("multiple_of_", "×"), (r.compilations, 100 * r.padded_fraction),
                        textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("XLA compilations (distinct padded shapes, log scale)")
    ax.set_ylabel("padding: % of computed tokens")
    ax.set_title("Padding strategies: compilations vs wasted tokens")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
