"""Read `torch_xla.debug.metrics.metrics_report()` the way notebook 06 reads it with the learner.

The report is text: one block per metric (``Metric: CompileTime`` then ``TotalSamples``, ``Accumulator``,
``ValueRate``, ``Rate``, ``Percentiles`` lines) and one per counter (``Counter: CachedCompile`` then ``Value``).
`parse_metrics_report` turns it into a `MetricsReport`, so a notebook cell can assert on what the printed report
says, and check it against torch_xla's own API (``met.counter_value``, ``met.metric_data``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["MetricsReport", "parse_metrics_report", "LESSON_ENTRIES"]

# What notebook 06 reads in the report, and what each one says
LESSON_ENTRIES = {
    "CompileTime": "metric: one sample per XLA compilation, the time it took",
    "ExecuteTime": "metric: one sample per graph run on the device",
    "UncachedCompile": "counter: graphs XLA had to compile (new graph or new shapes)",
    "CachedCompile": "counter: graphs found in the compile cache (no compilation)",
    "TransferFromDeviceTime": "metric: device-to-host copies (.item(), print(tensor), if tensor:)",
    "aten::*": "counters: ops with no XLA lowering that ran on the CPU (fallbacks)",
}
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
        """The ``aten::`` counters: ops that ran on the CPU instead of XLA, with how many times."""
        return {k: v for k, v in self.counters.items() if k.startswith("aten::")}


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
