"""Self-checks for notebook 04's exercises: each runs the learner's function on inputs it builds and tests what the
function does (`check_epoch_plan`, `check_mask_batch` under ``jit_compile=True``, `check_masked_accuracy` compiled by
XLA), naming the slip it finds."""
from __future__ import annotations

from typing import Callable

import numpy as np

from tpu_helpers.core.exercises import (
    CheckResult,
    answer_for,
    call_answer,
    run_check,
    short,
)
from tpu_helpers.core.frameworks import import_tensorflow
from tpu_helpers.mlm.lesson_cells import Manifest, MaskingSpec, ShardInfo, shard_name
from tpu_helpers.xla_tf import compiler, counters
from tpu_helpers.xla_tf.placement import on_xla_device

__all__ = ["IGNORE_INDEX", "CHECK_SPEC", "check_mask_batch", "check_epoch_plan", "check_masked_accuracy",
           "masking_statistics"]

answer = answer_for(__package__)  # the notebook's answers, or this package's solutions.py when solutions are on

IGNORE_INDEX = -100
# A small vocabulary, so that a replacement drawn from the whole vocabulary hits a special token often
# (5 of 60 ids): the check sees it in every run instead of once in a while.
CHECK_SPEC = MaskingSpec(mask_token_id=4, vocab_size=60, special_ids=(0, 1, 2, 3, 4), pad_token_id=1)


# --------------------------------------------------------------------------------------------- masking
def _check_ids(spec: MaskingSpec, rows: int = 512, length: int = 128, seed: int = 404) -> np.ndarray:
    """Token ids like a batch of 128-token blocks: regular ids with <s> ... </s> and some specials inside."""
    rng = np.random.default_rng(seed)
    regular = spec.regular_ids
    ids = regular[rng.integers(0, len(regular), size=(rows, length))].astype(np.int32)
    ids[:, 0], ids[:, -1] = 0, 2  # <s> ... </s>
    ids[::3, 60:70] = spec.pad_token_id  # a run of <pad>
    ids[::5, 10] = 3  # <unk>
    ids[::7, 20] = spec.mask_token_id  # "<mask>" already in the text
    ids[:, 64] = 2  # a document boundary (</s>) inside every block
    return ids


def masking_statistics(ids: np.ndarray, masked: np.ndarray, labels: np.ndarray,
                       spec: MaskingSpec) -> dict[str, float]:
    """Shares measured on one masked batch: ``selected`` (of the non-special tokens), then, of the selected,
    ``to_mask`` / ``to_random`` / ``unchanged``; ``special_selected`` and ``special_changed`` (counts) and
    ``random_special`` (random replacements that are special tokens, count)."""
    special = np.isin(ids, spec.special_ids)
    selected = labels != IGNORE_INDEX
    n = max(int(selected.sum()), 1)
    to_mask = selected & (masked == spec.mask_token_id)
    unchanged = selected & (masked == ids)
    to_random = selected & ~to_mask & ~unchanged
    return {"selected": float(selected.sum() / max(int((~special).sum()), 1)),
            "to_mask": float(to_mask.sum() / n), "to_random": float(to_random.sum() / n),
            "unchanged": float(unchanged.sum() / n),
            "special_selected": int((selected & special).sum()),
            "special_changed": int((special & (masked != ids)).sum()),
            "random_special": int(np.isin(masked[to_random], spec.special_ids).sum())}


def check_mask_batch(mask_batch: Callable, spec: MaskingSpec = CHECK_SPEC) -> CheckResult:
    """``mask_batch(input_ids, spec) -> (masked_ids, labels)``: BERT/RoBERTa masking with TF ops (see the module
    docstring for everything it checks)."""

    def body() -> str:
        tf = import_tensorflow()
        ids = _check_ids(spec)
        small = tf.constant(ids[:4])
        out = call_answer(mask_batch, small, spec, what="mask_batch(input_ids, spec)")  # eagerly first
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise AssertionError(f"mask_batch returned {short(out)}: return two tensors, (masked_ids, labels)")
        # static shapes under XLA: trace for a fixed batch shape and look at what comes out
        compiled = tf.function(lambda x: mask_batch(x, spec), jit_compile=True)
        try:
            concrete = compiled.get_concrete_function(tf.TensorSpec(ids.shape, tf.int32))
            with on_xla_device():  # a TPU runtime's TPU (its TensorFlow has no XLA for the host), else the CPU
                results = [compiled(tf.constant(ids)) for _ in range(2)]
        except Exception as e:  # noqa: BLE001 (NotImplementedError here: NumPy on a symbolic tensor)
            kind = type(e).__name__
            if "numpy" in str(e).lower() or kind in ("NotImplementedError", "AttributeError"):
                raise AssertionError(
                    "mask_batch does not run inside a compiled TensorFlow function: it uses NumPy or .numpy(), "
                    "which has no value while TensorFlow traces. Use TF ops only (tf.random.uniform, tf.where, "
                    f"tf.gather): {kind}: {compiler._why(e)}") from None
            raise AssertionError(f"XLA could not compile mask_batch on a {ids.shape[0]} x {ids.shape[1]} batch: "
                                 f"{kind}: {compiler._why(e)}") from None
        shapes = [o.shape for o in tf.nest.flatten(concrete.structured_outputs)]
        if any(not s.is_fully_defined() or tuple(s) != ids.shape for s in shapes):
            raise AssertionError(
                f"for a {ids.shape} batch mask_batch's outputs have the shapes {[str(s) for s in shapes]} while "
                "TensorFlow compiles it: they must have the input's static shape. Selecting positions "
                "(tf.boolean_mask, tf.where(cond) with one argument, gather of the selected) gives a data-dependent "
                "shape; keep every position and choose values with tf.where(cond, a, b).")
        (masked, labels), (_, labels2) = [(np.asarray(a), np.asarray(b)) for a, b in results]
        if not np.issubdtype(labels.dtype, np.integer) or not np.issubdtype(masked.dtype, np.integer):
            raise AssertionError(f"mask_batch returned {masked.dtype} ids and {labels.dtype} labels: both must be "
                                 "integer ids, like the input")
        selected = labels != IGNORE_INDEX
        if not selected.any():
            raise AssertionError("every label is -100: no position was selected for the model to predict. Select "
                                 "each non-special token with probability 0.15 (tf.random.uniform(shape) < 0.15)")
        wrong_labels = selected & (labels != ids)
        if wrong_labels.any():
            values = sorted(set(labels[wrong_labels].tolist()))[:5]
            raise AssertionError(
                f"{int(wrong_labels.sum())} labels are neither -100 nor the original token (e.g. {values}): "
                "where a position is not selected the label must be -100 (the loss ignores it), where it is "
                "selected it must be the ORIGINAL id (the answer), not the <mask> id")
        stats = masking_statistics(ids, masked, labels, spec)
        if stats["special_selected"] or stats["special_changed"]:
            raise AssertionError(
                f"special tokens were masked: {stats['special_selected']} selected, {stats['special_changed']} "
                "changed (<s>, </s>, <pad>, <unk>, <mask> must never be selected: the model would learn to "
                f"predict structure, not language). Exclude the ids in spec.special_ids: {list(spec.special_ids)}")
        changed_unselected = (~selected) & (masked != ids)
        if changed_unselected.any():
            raise AssertionError(f"{int(changed_unselected.sum())} positions were changed although their label is "
                                 "-100: only selected positions may change")
        if abs(stats["selected"] - 0.15) > 0.01:
            raise AssertionError(f"{stats['selected']:.1%} of the non-special tokens were selected: it must be "
                                 "about 15% (tf.random.uniform(shape) < 0.15, specials excluded)")
        shares = (stats["to_mask"], stats["to_random"], stats["unchanged"])
        if abs(shares[0] - 0.8) > 0.02 or abs(shares[1] - 0.1) > 0.02 or abs(shares[2] - 0.1) > 0.02:
            raise AssertionError(
                f"of the selected tokens {shares[0]:.1%} became <mask>, {shares[1]:.1%} a random token and "
                f"{shares[2]:.1%} stayed: BERT's recipe is 80% / 10% / 10% (one more uniform draw u: u < 0.8 -> "
                "<mask>, 0.8 <= u < 0.9 -> random token, else unchanged)")
        if stats["random_special"]:
            raise AssertionError(
                f"{stats['random_special']} random replacements are special tokens: draw replacements from the "
                "regular vocabulary only (tf.gather(spec.regular_ids, tf.random.uniform(shape, maxval=len(...), "
                "dtype=tf.int32))). The seed's collator draws from the whole vocabulary.")
        if np.array_equal(labels, labels2):
            raise AssertionError(
                "two calls on the same batch selected exactly the same positions: the model would see the same "
                "masks every epoch. Draw fresh random numbers on every call (tf.random.uniform), not from a "
                "fixed seed")
        return (f"on {ids.shape[0]} x {ids.shape[1]} tokens under jit_compile=True: {stats['selected']:.1%} of the "
                f"non-special tokens selected, {shares[0]:.0%} / {shares[1]:.0%} / {shares[2]:.0%} masked / random / "
                "unchanged, no special token touched, labels -100 elsewhere, static shapes, new masks each call")

    return run_check(body)


# --------------------------------------------------------------------------------------------- epoch plan
def _manifest(counts: list[int], records_per_shard: int, block_size: int = 128) -> Manifest:
    shards = [ShardInfo(shard_name("train", i, n), n, n * (block_size * 3 + 20), f"{i:064x}")
              for i, n in enumerate(counts)]
    return Manifest(block_size=block_size, records_per_shard=records_per_shard, prefix="train", shards=shards,
                    complete=True)


def check_epoch_plan(epoch_plan: Callable, manifest: Manifest | None = None,
                     global_batch: int | None = None) -> CheckResult:
    """``epoch_plan(manifest, global_batch) -> (total_records, steps_per_epoch)`` with ``drop_remainder=True``:
    on three made-up manifests (short last shard, a single shard, many shards) and the notebook's own."""

    def body() -> str:
        cases = [(_manifest([1000, 1000, 1000, 437], 1000), 128, "4 shards of 1000, 1000, 1000 and 437 records"),
                 (_manifest([50], 5000), 16, "one shard of 50 records"),
                 (_manifest([256] * 9 + [100], 256), 64, "10 shards, the last one of 100 records")]
        if manifest is not None and global_batch:
            counts = ", ".join(str(s.records) for s in manifest.shards)
            cases.append((manifest, int(global_batch), f"the notebook's manifest ({counts} records)"))
        for man, batch, what in cases:
            out = call_answer(epoch_plan, man, batch, what="epoch_plan(manifest, global_batch)")
            if not isinstance(out, (tuple, list)) or len(out) != 2:
                raise AssertionError(f"epoch_plan returned {short(out)}: return two numbers, "
                                     "(total_records, steps_per_epoch)")
            total, steps = out
            want_total = sum(s.records for s in man.shards)
            want_steps = want_total // batch
            if total != want_total:
                if total == len(man.shards) * man.records_per_shard:
                    raise AssertionError(
                        f"for {what} you count {total} records: shards x records_per_shard assumes every shard is "
                        f"full, but the last one holds fewer. Add up the records of each shard in "
                        f"manifest.shards (here {want_total})")
                raise AssertionError(f"for {what} you count {short(total)} records; the shards hold {want_total}")
            if steps != want_steps:
                if steps == -(-want_total // batch):
                    raise AssertionError(
                        f"for {what} and a global batch of {batch} you count {steps} steps: the pipeline batches "
                        f"with drop_remainder=True (static shapes for XLA), so the last partial batch of "
                        f"{want_total % batch} records is dropped: {want_steps} steps (floor division)")
                raise AssertionError(f"for {what} and a global batch of {batch}: {short(steps)} steps, expected "
                                     f"{want_steps} ({want_total} // {batch})")
        return (f"right totals and steps per epoch for {len(cases)} manifests, short last shards and dropped "
                "remainders included")

    return run_check(body)


# --------------------------------------------------------------------------------------------- metric
def _accuracy_cases(vocab: int = 50, rows: int = 8, length: int = 128) -> list[tuple[np.ndarray, np.ndarray, str]]:
    rng = np.random.default_rng(4004)
    cases = []
    for fraction, hit, what in ((0.15, 0.6, "15% labelled"), (0.5, 0.3, "half labelled"),
                                (1.0, 0.9, "all labelled"), (0.0, 0.5, "nothing labelled")):
        logits = rng.normal(size=(rows, length, vocab)).astype(np.float32)
        labels = rng.integers(0, vocab, size=(rows, length))
        right = rng.random((rows, length)) < hit  # make the model right on about `hit` of the positions
        best = logits.argmax(-1)
        labels = np.where(right, best, labels)
        labels[rng.random((rows, length)) >= fraction] = IGNORE_INDEX
        cases.append((labels.astype(np.int32), logits, what))
    return cases


def check_masked_accuracy(masked_accuracy: Callable) -> CheckResult:
    """``masked_accuracy(labels, logits)``: the share of labelled positions (label != -100) whose argmax is the
    label, 0.0 when none is labelled, with static shapes under XLA."""

    def body() -> str:
        tf = import_tensorflow()
        cases = _accuracy_cases()
        labels0, logits0, _ = cases[0]
        call_answer(masked_accuracy, tf.constant(labels0), tf.constant(logits0),
                    what="masked_accuracy(labels, logits)")
        compiled = counters.jit(masked_accuracy)
        try:
            ir = compiler.compiled_ir_stats(compiled, tf.constant(labels0), tf.constant(logits0))
        except Exception as e:  # noqa: BLE001 (the skeleton was caught by the eager call above)
            raise AssertionError(f"XLA could not compile masked_accuracy: {type(e).__name__}: "
                                 f"{compiler._why(e)}") from None
        if ir.dynamic_shapes:
            raise AssertionError(
                "your metric selects the labelled positions (tf.boolean_mask or similar): their number depends on "
                f"the batch, so XLA compiled data-dependent shapes ({', '.join(ir.dynamic_shapes)}). Keep every "
                "position: count correct predictions with a 0/1 mask and divide by the sum of the mask.")
        for labels, logits, what in cases:
            got = np.asarray(compiled(tf.constant(labels), tf.constant(logits)), dtype=np.float64)
            if got.shape != ():
                raise AssertionError(f"masked_accuracy returned shape {got.shape}: return one number for the batch")
            got = float(got)
            keep = labels != IGNORE_INDEX
            hits = logits.argmax(-1) == labels
            if not keep.any():
                if np.isnan(got):
                    raise AssertionError("for a batch with no labelled position your metric is NaN (0 / 0): return "
                                         "0.0 there (tf.math.divide_no_nan)")
                if got != 0.0:
                    raise AssertionError(f"for a batch with no labelled position your metric is {got:g}: nothing "
                                         "was predicted, so it must be 0.0")
                continue
            want = float(hits[keep].mean())
            if np.isclose(got, want, atol=1e-6):
                continue
            plain = float(hits.mean())
            if np.isclose(got, plain, atol=1e-6):
                raise AssertionError(
                    f"with {what} your metric is {got:.3f}, but the accuracy over the labelled positions is "
                    f"{want:.3f}: you count every position, also those labelled -100 (the seed's "
                    "metrics=['accuracy'] does the same). Weight each position by (labels != -100).")
            raise AssertionError(f"with {what} your metric is {got:.4f}; the accuracy over the labelled positions "
                                 f"is {want:.4f}")
        return (f"right on {len(cases)} batches (15%, 50%, 100% and 0% of the positions labelled; 0.0 for the empty "
                "one), static shapes under XLA")

    return run_check(body)
