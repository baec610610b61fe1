"""Notebook 09's exercise checks: they run the learner's code and test what it does, never its text."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from tpu_helpers.core.exercises import CheckResult, answer_for, call_answer, run_check, short

answer = answer_for(__package__)


def check_attention_mask(attention_mask: Callable, rows: Sequence[dict]) -> CheckResult:
    """The learner's mask equals the block-diagonal one on packed rows and on a hand-made row with padding."""
    from tpu_helpers.banking77_jax.solutions import attention_mask as reference

    segments = [np.stack([r["segment_ids"] for r in rows]), np.array([[1, 1, 2, 2, 2, 0, 0]], np.int32)]

    def body() -> str:
        for seg in segments:
            got = np.asarray(call_answer(attention_mask, seg, what="my_attention_mask(segment_ids)"))
            want = np.asarray(reference(seg))
            assert got.shape == want.shape, (f"segment_ids of shape {seg.shape} need a mask of shape {want.shape} "
                                             f"(rows, tokens, tokens); yours is {got.shape}")
            assert got.dtype == bool, f"the mask must be boolean (True: may attend); yours is {got.dtype}"
            wrong = np.argwhere(got != want)
            if len(wrong):
                r, i, j = wrong[0]
                why = ("the key is padding (segment 0): nothing attends to it" if seg[r, j] == 0 else
                       "they are different queries: a token must not see its neighbours" if seg[r, i] != seg[r, j]
                       else "they are the same query: a token sees its own query")
                raise AssertionError(f"row {r}, token {i} -> token {j} (segments {seg[r, i]}, {seg[r, j]}): yours "
                                     f"says {bool(got[r, i, j])}, but {why}. Segments: {short(seg[r].tolist())}")
        return (f"block-diagonal on {len(rows)} packed rows and on a row with padding: each token sees its own "
                "query only")

    return run_check(body)


def check_place_batch(place_batch: Callable, batch: dict, mesh: Any) -> CheckResult:
    """Every array of the batch comes back sharded by rows over the mesh: each device holds its slice only."""

    def body() -> str:
        out = call_answer(place_batch, batch, mesh, what="my_place_batch(batch, mesh)")
        assert isinstance(out, dict) and set(out) == set(batch), (
            f"return a dict with the batch's keys {sorted(batch)}; yours returned {short(out)}")
        n = mesh.devices.size
        for key, value in out.items():
            assert hasattr(value, "sharding"), f"{key!r} is a {type(value).__name__}, not a jax.Array on the mesh"
            rows = batch[key].shape[0]
            shard = value.sharding.shard_shape(value.shape)
            assert shard[0] == rows // n and shard[1:] == value.shape[1:], (
                f"{key!r} {value.shape} is split as {shard} per device; each of the {n} devices should hold "
                f"{rows // n} whole rows: shard the first axis over 'data' (PartitionSpec('data'))")
            assert np.array_equal(np.asarray(value), batch[key]), f"{key!r} changed on the way to the devices"
        return f"{len(out)} arrays, each split by rows over {n} devices ({rows // n} rows per device)"

    return run_check(body)
