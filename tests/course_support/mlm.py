"""Test-only helpers for notebook 04's package (tpu_helpers.mlm): never imported by a notebook."""
from __future__ import annotations


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
