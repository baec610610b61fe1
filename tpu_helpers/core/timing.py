"""The course's one timing loop (`time_calls`) and result model (`Candidate`, `Benchmark`: ratios to a baseline)."""
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable

from tpu_helpers.core.tables import format_table


@dataclass
class Candidate:
    name: str
    values: list[float]  # one value per repeat (or round)
    unit: str  # e.g. "samples/s", "s/step", "tokens per real token"
    higher_is_better: bool = True
    extra: dict = field(default_factory=dict)  # fixed figures (compilations, ...) that do not vary per repeat

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def spread(self) -> tuple[float, float]:
        return (min(self.values), max(self.values))


@dataclass
class Benchmark:
    name: str
    title: str
    candidates: list[Candidate]
    baseline: str  # candidate name the ratios are relative to
    notes: str = ""

    @property
    def medians(self) -> dict[str, float]:
        return {c.name: c.median for c in self.candidates}

    def ratio(self, name: str, baseline: str | None = None) -> float:
        """How many times better than `baseline` (default: the benchmark's) `name` is, by medians (> 1: better)."""
        by_name = {c.name: c for c in self.candidates}
        c, base = by_name[name], by_name[baseline or self.baseline]
        if c.median == 0 or base.median == 0:
            return float("nan")
        return c.median / base.median if c.higher_is_better else base.median / c.median

    def ratios(self, baseline: str | None = None) -> dict[str, float]:
        return {c.name: self.ratio(c.name, baseline) for c in self.candidates}

    def table(self, baseline: str | None = None) -> str:
        """One line per candidate: median, min-max, and the ratio against `baseline`."""
        baseline = baseline or self.baseline
        return format_table(
            ({"candidate": c.name, f"{c.unit} (median)": f"{c.median:,.4g}" if c.median < 1000 else f"{c.median:,.0f}",
              f"min-max of {len(c.values)}": "-".join(f"{v:,.4g}" if v < 1000 else f"{v:,.0f}" for v in c.spread),
              f"x vs {baseline}": f"{self.ratio(c.name, baseline):.1f}x"} for c in self.candidates),
            title=self.title)


def time_calls(fn: Callable[[], object], repeats: int, warmup_steps: int = 1) -> list[float]:
    """Seconds per call of `fn`, `repeats` times, after `warmup_steps` untimed calls (where compilation happens)."""
    for _ in range(warmup_steps):
        fn()
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out
