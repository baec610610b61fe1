"""The course's one plain-text table printer: rows in, aligned text out."""
from typing import Any, Iterable, Mapping


def format_table(rows: Iterable[Mapping[str, Any] | Any], *, title: str | None = None) -> str:
    """Rows (dicts, or objects with a ``row()`` dict; the first row's keys are the columns) as aligned text."""
    dicts = [dict(r.row()) if hasattr(r, "row") else dict(r) for r in rows]
    if not dicts:
        return "(empty)" if title is None else f"{title}\n(empty)"
    cols = list(dicts[0])
    cells = [[str(d.get(c, "")) for c in cols] for d in dicts]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]

    def line(values: list[str]) -> str:
        return "  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths)))

    lines = [line(cols), "  ".join("-" * w for w in widths), *(line(row) for row in cells)]
    return "\n".join(([title] if title else []) + lines)
