"""Test-only helpers for notebook 04's package (tpu_helpers.mlm): never imported by a notebook."""
from __future__ import annotations

import functools


def crash_at_record(monkeypatch, n: int) -> None:
    """Make `write_shards` die while it serialises record `n` (counted from 0): a crash in the middle of a shard."""
    from tpu_helpers.mlm import lesson_cells

    calls, serialize = [], lesson_cells.serialize

    def crashing(row):
        calls.append(1)
        if len(calls) > n:
            raise KeyboardInterrupt("simulated crash")
        return serialize(row)

    monkeypatch.setattr(lesson_cells, "serialize", crashing)


def records_in_name(name: str) -> int | None:
    """The record count written in a shard's name, or None."""
    import posixpath

    from tpu_helpers.mlm.lesson_cells import SHARD_NAME

    m = SHARD_NAME.match(posixpath.basename(name))
    return int(m.group("records")) if m else None


@functools.cache
def notebook_04_checks():
    """The functions notebook 04 defines in its own check, measure and Why? cells (their one home: the notebook), as a
    module over its `lesson_cells`, for tests and benchmarks: each cell's imports, literal constants and definitions."""
    import ast
    import json
    import types
    from pathlib import Path

    from tpu_helpers.mlm import lesson_cells

    notebook = Path(__file__).resolve().parents[2] / "notebooks" / "04_mlm_from_scratch_tensorflow.ipynb"
    module = types.ModuleType("notebook_04_checks")
    module.__dict__.update({k: v for k, v in vars(lesson_cells).items() if not k.startswith("__")})
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code" or "save" in cell["metadata"].get("tags", []):
            continue
        for node in ast.parse("".join(cell["source"])).body:
            literal = isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets) and not any(
                isinstance(n, (ast.Name, ast.Call, ast.Attribute)) for n in ast.walk(node.value))
            if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)) or literal:
                try:
                    exec(compile(ast.Module([node], []), str(notebook), "exec"), module.__dict__)
                except ImportError:  # a hosted runtime's module (google.colab ...)
                    pass
    return module
