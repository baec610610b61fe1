"""Read `torch_xla.debug.metrics.metrics_report()` the way notebook 06 reads it with the learner.

The report is text: one block per metric (``Metric: CompileTime`` then ``TotalSamples``, ``Accumulator``,
``ValueRate``, ``Rate``, ``Percentiles`` lines) and one per counter (``Counter: CachedCompile`` then ``Value``).
`parse_metrics_report` turns it into a `MetricsReport`, so a notebook cell can assert on what the printed report
says, and check it against torch_xla's own API (``met.counter_value``, ``met.metric_data``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from tpu_helpers.xla_torch.counters import is_fallback

__all__ = ["MetricsReport", "parse_metrics_report"]

_HEADER = re.compile(r"^(Metric|Counter): (\S+)\s*$")
_FIELD = re.compile(r"^\s+(\w+): (.*?)\s*$")


@dataclass
class MetricsReport:
    """The parsed report: metrics' fields as written (``{"TotalSamples": "6", "Accumulator": "01s..."}``), counters' values."""

    metrics: dict[str, dict[str, str]] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)

    def samples(self, name: str) -> int:
        """A metric's TotalSamples (0 when the report has no such metric)."""
        return int(self.metrics.get(name, {}).get("TotalSamples", 0))

    def counter(self, name: str) -> int:
        """A counter's Value (0 when the report has no such counter)."""
        return self.counters.get(name, 0)

    @property
    def fallbacks(self) -> dict[str, int]:
        """The ``aten::`` counters of ops that ran on the CPU instead of XLA, with how many times (not the
        scalar-read counter: `tpu_helpers.xla_torch.counters.is_fallback`, the course's one rule)."""
        return {k: v for k, v in self.counters.items() if is_fallback(k)}


def parse_metrics_report(text: str) -> MetricsReport:
    """Parse the text of ``metrics_report()``; lines of any other shape are ignored."""
    report, current = MetricsReport(), None
    for line in text.splitlines():
        if m := _HEADER.match(line):
            kind, name = m.groups()
            current = (kind, name)
            if kind == "Metric":
                report.metrics[name] = {}
        elif current and (m := _FIELD.match(line)):
            key, value = m.groups()
            if current[0] == "Metric":
                report.metrics[current[1]][key] = value
            elif key == "Value":
                report.counters[current[1]] = int(value)
    return report
