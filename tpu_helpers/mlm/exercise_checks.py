"""Self-checks for notebook 04's exercises: each runs the learner's function and names the slip it finds."""
from __future__ import annotations

from typing import Callable

import numpy as np

from tpu_helpers.core.exercises import CheckResult, answer_for, call_answer, run_check, short
from tpu_helpers.core.frameworks import import_tensorflow
from tpu_helpers.mlm.lesson_cells import Manifest, MaskingSpec, ShardInfo, shard_name
from tpu_helpers.xla_tf import compiler, counters
from tpu_helpers.xla_tf.placement import on_xla_device

answer = answer_for(__package__)  # the notebook's answers, or this package's solutions.py when solutions are on

IGNORE_INDEX = -100
# a small vocabulary, so that a replacement drawn from the whole vocabulary hits a special token in every run
CHECK_SPEC = MaskingSpec(mask_token_id=4, vocab_size=60, special_ids=(0, 1, 2, 3, 4), pad_token_id=1)


def _check_ids(spec: MaskingSpec, rows: int = 512, length: int = 128) -> np.ndarray:
    """A batch of blocks: regular ids with <s> ... </s>, a run of <pad> and other specials inside."""
    rng = np.random.default_rng(404)
    ids = spec.regular_ids[rng.integers(0, len(spec.regular_ids), size=(rows, length))].astype(np.int32)
    ids[:, 0], ids[:, -1], ids[:, 64] = 0, 2, 2
    ids[::3, 60:70], ids[::5, 10], ids[::7, 20] = spec.pad_token_id, 3, spec.mask_token_id
    return ids


def masking_statistics(ids: np.ndarray, masked: np.ndarray, labels: np.ndarray,
                       spec: MaskingSpec) -> dict[str, float]:
    """Shares on one masked batch: selected (of non-special), to_mask/to_random/unchanged (of selected); counts."""
    special, selected = np.isin(ids, spec.special_ids), labels != IGNORE_INDEX
    n = max(int(selected.sum()), 1)
    to_mask, unchanged = selected & (masked == spec.mask_token_id), selected & (masked == ids)
    to_random = selected & ~to_mask & ~unchanged
    return {"selected": float(selected.sum() / max(int((~special).sum()), 1)), "to_mask": float(to_mask.sum() / n),
            "to_random": float(to_random.sum() / n), "unchanged": float(unchanged.sum() / n),
            "special_selected": int((selected & special).sum()),
            "special_changed": int((special & (masked != ids)).sum()),
            "random_special": int(np.isin(masked[to_random], spec.special_ids).sum())}


def check_mask_batch(mask_batch: Callable, spec: MaskingSpec = CHECK_SPEC) -> CheckResult:
    """``mask_batch(input_ids, spec) -> (masked_ids, labels)``: BERT/RoBERTa masking, compiled by XLA."""

    def body() -> str:
        tf = import_tensorflow()
        ids = _check_ids(spec)
        call_answer(mask_batch, tf.constant(ids[:4]), spec, what="mask_batch(input_ids, spec)")  # eagerly first
        compiled = tf.function(lambda x: mask_batch(x, spec), jit_compile=True)
        try:
            concrete = compiled.get_concrete_function(tf.TensorSpec(ids.shape, tf.int32))
            with on_xla_device():
                (masked, labels), (_, labels2) = [[np.asarray(t) for t in compiled(tf.constant(ids))]
                                                  for _ in range(2)]
        except Exception as e:  # noqa: BLE001 (NotImplementedError here: NumPy on a symbolic tensor)
            numpy = "numpy" in str(e).lower() or type(e).__name__ in ("NotImplementedError", "AttributeError")
            raise AssertionError(
                ("mask_batch uses NumPy or .numpy(), which has no value while TensorFlow traces: use TF ops only "
                 "(tf.random.uniform, tf.where, tf.gather)" if numpy else "XLA could not compile mask_batch")
                + f": {type(e).__name__}: {compiler._why(e)}") from None
        shapes = [o.shape for o in tf.nest.flatten(concrete.structured_outputs)]
        if any(not s.is_fully_defined() or tuple(s) != ids.shape for s in shapes):
            raise AssertionError(
                f"for a {ids.shape} batch mask_batch's outputs have the shapes {[str(s) for s in shapes]} under XLA: "
                "they must have the input's static shape. Keep every position and choose values with "
                "tf.where(cond, a, b), not tf.boolean_mask.")
        stats = masking_statistics(ids, masked, labels, spec)
        share, shares = stats["selected"], (stats["to_mask"], stats["to_random"], stats["unchanged"])
        touched = stats["special_selected"] + stats["special_changed"]
        bad_labels, same = int(((labels != IGNORE_INDEX) & (labels != ids)).sum()), np.array_equal(labels, labels2)
        if (abs(share - 0.15) > 0.01 or max(abs(a - b) for a, b in zip(shares, (0.8, 0.1, 0.1))) > 0.02 or touched
                or stats["random_special"] or bad_labels or same):
            raise AssertionError(
                f"{share:.1%} of the non-special tokens selected, of those {shares[0]:.1%} <mask>, {shares[1]:.1%} "
                f"random, {shares[2]:.1%} unchanged; {touched} special tokens touched, {stats['random_special']} "
                f"drawn as random tokens; {bad_labels} labels neither -100 nor the original; the same positions on a "
                f"second call: {same}. BERT's recipe: 15% of the regular tokens, then 80% / 10% / 10%; labels -100 where not "
                "selected, the ORIGINAL id where selected; never touch spec.special_ids; random tokens from "
                "spec.regular_ids; fresh random numbers on every call (tf.random.uniform)")
        return (f"on {ids.shape[0]} x {ids.shape[1]} tokens under jit_compile=True: {share:.1%} selected, "
                f"{shares[0]:.0%} / {shares[1]:.0%} / {shares[2]:.0%} masked / random / unchanged, no special token "
                "touched, static shapes, new masks each call")

    return run_check(body)


def _manifest(counts: list[int], records_per_shard: int) -> Manifest:
    shards = [ShardInfo(shard_name("train", i, n), n, n * 404, f"{i:064x}") for i, n in enumerate(counts)]
    return Manifest(block_size=128, records_per_shard=records_per_shard, prefix="train", shards=shards, complete=True)


def check_epoch_plan(epoch_plan: Callable, manifest: Manifest | None = None,
                     global_batch: int | None = None) -> CheckResult:
    """``epoch_plan(manifest, global_batch) -> (total_records, steps_per_epoch)`` with ``drop_remainder=True``."""

    def body() -> str:
        cases = [(_manifest([1000, 1000, 1000, 437], 1000), 128), (_manifest([50], 5000), 16)]
        if manifest is not None and global_batch:
            cases.append((manifest, int(global_batch)))
        for man, batch in cases:
            out = call_answer(epoch_plan, man, batch, what="epoch_plan(manifest, global_batch)")
            total = sum(s.records for s in man.shards)
            if out == (len(man.shards) * man.records_per_shard, len(man.shards) * man.records_per_shard // batch):
                raise AssertionError("shards x records_per_shard assumes every shard is full, but the last one holds "
                                     f"fewer: add up the records of each shard in manifest.shards (here {total})")
            if out == (total, -(-total // batch)):
                raise AssertionError(f"{out[1]} steps: the pipeline batches with drop_remainder=True, so the last "
                                     f"partial batch is dropped: {total // batch} steps (floor division)")
            if tuple(out) != (total, total // batch) if isinstance(out, (tuple, list)) else True:
                raise AssertionError(f"epoch_plan returned {short(out)} for {total} records and a global batch of "
                                     f"{batch}: expected ({total}, {total // batch})")
        return f"right totals and steps per epoch for {len(cases)} manifests, short last shards included"

    return run_check(body)


def check_masked_accuracy(masked_accuracy: Callable) -> CheckResult:
    """``masked_accuracy(labels, logits)``: accuracy over the labelled positions, 0.0 if none, static shapes."""

    def body() -> str:
        tf = import_tensorflow()
        rng = np.random.default_rng(4004)
        cases = []
        for fraction in (0.15, 1.0, 0.0):
            logits = rng.normal(size=(8, 128, 50)).astype(np.float32)
            labels = np.where(rng.random((8, 128)) < 0.6, logits.argmax(-1), rng.integers(0, 50, (8, 128)))
            labels[rng.random((8, 128)) >= fraction] = IGNORE_INDEX
            cases.append((labels.astype(np.int32), logits))
        call_answer(masked_accuracy, tf.constant(cases[0][0]), tf.constant(cases[0][1]),
                    what="masked_accuracy(labels, logits)")
        compiled = counters.jit(masked_accuracy)
        try:
            ir = compiler.compiled_ir_stats(compiled, tf.constant(cases[0][0]), tf.constant(cases[0][1]))
        except Exception as e:  # noqa: BLE001
            raise AssertionError(f"XLA could not compile masked_accuracy: {type(e).__name__}: "
                                 f"{compiler._why(e)}") from None
        if ir.dynamic_shapes:
            raise AssertionError(
                "your metric selects the labelled positions (tf.boolean_mask or similar), so XLA compiled "
                f"data-dependent shapes ({', '.join(ir.dynamic_shapes)}). Count correct predictions with a 0/1 mask "
                "and divide by the sum of the mask.")
        for labels, logits in cases:
            got = float(np.asarray(compiled(tf.constant(labels), tf.constant(logits)), dtype=np.float64))
            keep, hits = labels != IGNORE_INDEX, logits.argmax(-1) == labels
            want = float(hits[keep].mean()) if keep.any() else 0.0
            if np.isclose(got, want, atol=1e-6):
                continue
            if keep.any() and np.isclose(got, hits.mean(), atol=1e-6):
                raise AssertionError(f"your metric is {got:.3f}, the accuracy over the labelled positions {want:.3f}: "
                                     "you count every position, also those labelled -100 (as the seed's "
                                     "metrics=['accuracy'] does). Weight each position by (labels != -100).")
            raise AssertionError(f"your metric is {got:.4f} on a batch with {keep.sum()} labelled positions; the accuracy "
                                 f"over them is {want:.4f} (0.0 when there is none: tf.math.divide_no_nan)")
        return f"right on {len(cases)} batches (15%, 100% and 0% of the positions labelled), static shapes under XLA"

    return run_check(body)
