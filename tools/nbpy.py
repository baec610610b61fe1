"""Edit notebooks as plain text: convert between .ipynb and a "percent" script.

    python tools/nbpy.py export notebooks/01_x.ipynb > /tmp/01.py   # edit the script...
    python tools/nbpy.py import /tmp/01.py notebooks/01_x.ipynb     # ...and write the notebook back

Cells are separated by ``# %%`` lines; ``# %% [markdown]`` starts a markdown cell (each line prefixed with
``# ``), and ``# %% tags=["parameters"]`` carries cell tags. The notebook is written clean (no outputs,
stable metadata) by `tools.notebook_conventions.normalise`.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tools.notebook_conventions import normalise  # noqa: E402

_HEADER = re.compile(r"^# %%(?: \[(markdown)\])?(?: tags=(\[.*\]))?\s*$")


def export(path: str) -> str:
    nb = nbformat.read(path, as_version=4)
    parts = []
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        head = "# %%" + (" [markdown]" if cell.cell_type == "markdown" else "")
        if tags:
            head += " tags=" + json.dumps(tags)
        body = cell.source
        if cell.cell_type == "markdown":
            body = "\n".join(("# " + line) if line else "#" for line in body.split("\n"))
        parts.append(head + "\n" + body)
    return "\n\n".join(parts) + "\n"


def parse(text: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    current = None
    lines: list[str] = []

    def flush():
        if current is None:
            return
        kind, tags = current
        body = "\n".join(lines).strip("\n")
        if kind == "markdown":
            body = "\n".join(re.sub(r"^# ?", "", line) for line in body.split("\n"))
            cell = nbformat.v4.new_markdown_cell(body)
        else:
            cell = nbformat.v4.new_code_cell(body)
        if tags:
            cell.metadata["tags"] = tags
        nb.cells.append(cell)

    for line in text.split("\n"):
        m = _HEADER.match(line)
        if m:
            flush()
            current = (m.group(1) or "code", json.loads(m.group(2)) if m.group(2) else [])
            lines = []
        elif current is not None:
            lines.append(line)
    flush()
    return nb


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "export":
        sys.stdout.write(export(argv[1]))
        return 0
    if len(argv) == 3 and argv[0] == "import":
        nb = parse(Path(argv[1]).read_text())
        old = Path(argv[2])
        if old.exists():
            nb.metadata.update(nbformat.read(old, as_version=4).metadata)
        nbformat.write(normalise(nb), argv[2])
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
