"""What a learner sees in red: the stderr lines under a notebook's cells, each explained in `known_stderr` or reported.

A learner reads a red box under a cell as "something went wrong", so every stderr line the notebooks print is either
fixed at its cause or listed in ``tools/known_stderr.py`` with why it is harmless and what the learner should make of
it. Two places apply the list:

* ``./course test``: nbval runs the notebooks with the pytest plugin ``nbval_stderr`` (``pytest_command``); a cell
  whose stderr holds an unexplained line fails, naming the notebook, the cell and the line.
* ``./course run``: the executed notebooks in build/ are read (`unexplained_in_notebook`) and the unexplained lines
  are listed after the closing table.

A stderr text is split into messages: one per line (``\\r`` counts as a line end, as tqdm's redraws use it), an
indented line belonging to the message above it (the source line Python prints under a warning, a log record's
continuation). A message is explained when an entry's regex is found in its first line (`re.search`).
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from known_stderr import KNOWN, Known

TOOLS = Path(__file__).resolve().parent
_WHERE = re.compile(r"^\S*\.py:\d+: ")  # the file:line a Python warning starts with
__all__ = ["messages", "explanation", "unexplained", "cell_stderr", "unexplained_in_notebook", "failure_message",
           "pytest_command", "stderr_summary", "Finding"]


def messages(text: str) -> list[str]:
    """The messages of a stderr text: one per line, an indented line joined to the one above it; blank lines dropped."""
    out: list[str] = []
    for line in re.split(r"\r\n|\r|\n", text):
        line = line.rstrip()
        if not line.strip():
            continue
        if out and line[:1].isspace():
            out[-1] += "\n" + line
        else:
            out.append(line)
    return out


def explanation(message: str, known: tuple[Known, ...] = KNOWN) -> Known | None:
    """The entry of the list that explains a message (its regex found in the message's first line), or None."""
    first = message.split("\n", 1)[0]
    return next((k for k in known if re.search(k.pattern, first)), None)


def unexplained(texts: list[str], known: tuple[Known, ...] = KNOWN) -> list[str]:
    """The first lines of the messages in `texts` (one cell's stderr outputs) that no entry explains."""
    return [m.split("\n", 1)[0] for t in texts for m in messages(t) if explanation(m, known) is None]


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def cell_stderr(nb: dict) -> list[tuple[int, list[str]]]:
    """Each code cell's stderr stream texts, numbered as nbval numbers its tests (``Cell N``: code cells from 0)."""
    cells = [c for c in nb.get("cells", []) if c.get("cell_type") == "code"]
    out = []
    for n, cell in enumerate(cells):
        texts = [_text(o.get("text")) for o in cell.get("outputs", [])
                 if o.get("output_type") == "stream" and o.get("name") == "stderr"]
        if texts:
            out.append((n, texts))
    return out


@dataclass(frozen=True)
class Finding:
    notebook: str
    cell: int  # nbval's numbering: the code cells from 0
    line: str  # the first line of an unexplained message


def unexplained_in_notebook(path: Path, known: tuple[Known, ...] = KNOWN) -> list[Finding]:
    """The unexplained stderr lines of an executed notebook (./course run's copies in build/)."""
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    return [Finding(Path(path).name, n, line) for n, texts in cell_stderr(nb) for line in unexplained(texts, known)]


def failure_message(notebook: str, cell: int, lines: list[str]) -> str:
    """What a failed cell says: where, the first unexplained line, and the two ways to resolve it."""
    more = f" (and {len(lines) - 1} more unexplained line{'s' if len(lines) > 2 else ''})" if len(lines) > 1 else ""
    return (f"{notebook}, Cell {cell}: red output a learner cannot explain (stderr){more}:\n    {lines[0]}\n"
            "Fix it at its cause, or add it to tools/known_stderr.py with why it is harmless and what the learner "
            "should make of it.")


def pytest_command(python: str = sys.executable) -> list[str]:
    """pytest with the ``nbval_stderr`` plugin loaded: tools/ is put on the path of this pytest process only (not in
    the environment, so the notebooks' kernels still cannot import anything of the checkout)."""
    boot = f"import sys; sys.path.append({str(TOOLS)!r}); import pytest; sys.exit(pytest.main())"
    return [python, "-P", "-c", boot, "-p", "nbval_stderr"]


def stderr_summary(records: list[dict], known: tuple[Known, ...] = KNOWN) -> str:
    """Lines after the notebooks' tests: how many stderr messages, how many unexplained, and which listed lines that
    are expected to go (``until``) still appeared. `records` is the plugin's ``--stderr-report``."""
    found = [m for r in records for m in r["messages"]]
    bad = [(r["notebook"], r["cell"]) for r in records for m in r["messages"] if m["explained_by"] is None]
    seen = {m["explained_by"] for m in found}
    lines = [f"stderr (red output): {len(found)} messages in {len({r['notebook'] for r in records})} notebooks, "
             f"{len(bad)} unexplained" + (f" (failed cells: {', '.join(f'{n} Cell {c}' for n, c in dict.fromkeys(bad))})"
                                          if bad else "")]
    pending = [k for k in known if k.until and k.pattern in seen]
    if pending:
        lines.append("  listed lines still seen that are expected to go (tools/known_stderr.py):")
        lines += [f"    {_WHERE.sub('', k.example)[:70]!r}: {k.until}" for k in pending]
    return "\n".join(lines)
