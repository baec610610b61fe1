"""The pure-TensorFlow input pipeline of notebook 04: batched records parsed with ``tf.io.parse_example``, TF-native
MLM masking (never special tokens, replacements from the regular vocabulary), cardinality from the manifest."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from tpu_helpers.core.frameworks import import_tensorflow
from tpu_helpers.mlm.errors import MLMDataError
from tpu_helpers.mlm.shards import FEATURE, inspect_shards
from tpu_helpers.mlm.tokenizer import BLOCK_SIZE


@dataclass(frozen=True)
class MaskingSpec:
    """What MLM masking needs from the tokenizer (plain ints, so it is cheap to pass into ``tf.data``)."""

    mask_token_id: int
    vocab_size: int
    special_ids: tuple[int, ...]
    pad_token_id: int

    @classmethod
    def from_tokenizer(cls, tokenizer: Any) -> "MaskingSpec":
        specials = tuple(sorted(set(int(i) for i in tokenizer.all_special_ids)))
        return cls(int(tokenizer.mask_token_id), len(tokenizer), specials, int(tokenizer.pad_token_id))

    @property
    def regular_ids(self) -> np.ndarray:
        ids = np.arange(self.vocab_size, dtype=np.int32)
        return ids[~np.isin(ids, self.special_ids)]


def mask_tokens(input_ids: Any, spec: MaskingSpec, *, mlm_probability: float = 0.15, seed: Any = None):
    """BERT/RoBERTa MLM masking in pure TensorFlow: returns ``(masked_input_ids, labels)``.

    Each non-special token is selected with probability `mlm_probability`; a selected token becomes ``<mask>``
    80 % of the time, a random *regular* token 10 %, and stays unchanged 10 %. ``labels`` hold the original id
    at selected positions and -100 elsewhere (ignored by the loss). Special tokens are never selected.
    `seed`: an int32/int64 tensor of shape ``[2]`` for stateless (reproducible) randomness, or None.
    Works on any shape; traceable by ``tf.function``/XLA and inside ``tf.data``; with a seed, the same masks
    with or without ``jit_compile`` (Philox generator pinned).
    """
    tf = import_tensorflow()
    ids = tf.convert_to_tensor(input_ids)
    shape = tf.shape(ids)
    specials = tf.constant(spec.special_ids, dtype=ids.dtype)
    regular = tf.constant(spec.regular_ids, dtype=ids.dtype)
    if seed is None:
        u_select = tf.random.uniform(shape)
        u_action = tf.random.uniform(shape)
        pick = tf.random.uniform(shape, maxval=tf.size(regular), dtype=tf.int32)
    else:
        # alg="philox" pinned: "auto_select" picks different generators with and without XLA.
        seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), num=3, alg="philox")
        u_select = tf.random.stateless_uniform(shape, seed=seeds[0], alg="philox")
        u_action = tf.random.stateless_uniform(shape, seed=seeds[1], alg="philox")
        pick = tf.random.stateless_uniform(shape, seed=seeds[2], maxval=tf.size(regular), dtype=tf.int32,
                                           alg="philox")
    is_special = tf.reduce_any(tf.equal(ids[..., tf.newaxis], specials), axis=-1)
    selected = (u_select < mlm_probability) & ~is_special
    labels = tf.where(selected, ids, tf.constant(-100, ids.dtype))
    to_mask = selected & (u_action < 0.8)
    to_random = selected & (u_action >= 0.8) & (u_action < 0.9)
    out = tf.where(to_mask, tf.constant(spec.mask_token_id, ids.dtype), ids)
    out = tf.where(to_random, tf.gather(regular, pick), out)
    return out, labels


def make_mlm_dataset(shards: str | Sequence[str], spec: MaskingSpec, *, batch_size: int,
                     block_size: int = BLOCK_SIZE, shuffle: bool = True, seed: int | None = None,
                     shuffle_buffer: int = 10_000, mlm_probability: float = 0.15, labels: str = "dict",
                     repeat: bool = False, manifest: bool = True, cycle_length: int = 8, peek: int = 8,
                     drop_remainder: bool = True):
    """The MLM input pipeline, all ``tf.data``/TF ops (no Python in the loop).

    glob the shards (`inspect_shards`: gs:// or local, checked against the manifest) -> shuffle the file list ->
    interleave ``TFRecordDataset`` readers -> ``assert_cardinality`` (manifest total) -> shuffle records ->
    ``batch(drop_remainder=True)`` of *serialized* records -> ``tf.io.parse_example`` (one op per batch, fixed
    shape ``[batch, block_size]``) -> TF-native masking (`mask_tokens`) -> ``prefetch``.

    labels: ``"dict"`` yields ``{"input_ids", "attention_mask", "labels"}`` (a Transformers TF model computes
    its own MLM loss from ``labels`` in the inputs); ``"tuple"`` yields ``({"input_ids", "attention_mask"},
    labels)`` for a Keras loss/metric. seed: with an int the file order, record order and masks are
    reproducible; training re-draws masks every epoch, evaluation (``shuffle=False``) keeps the same masks.
    The dataset's cardinality is ``total_records // batch_size`` (``repeat=True``: infinite).
    """
    tf = import_tensorflow()
    if labels not in ("dict", "tuple"):
        raise ValueError("labels must be 'dict' or 'tuple'")
    if batch_size < 1:
        raise ValueError("batch_size must be positive")
    info = inspect_shards(shards, block_size=block_size, manifest=manifest, peek=peek)
    if drop_remainder and info.total_records < batch_size:
        raise MLMDataError(f"{info.total_records} records cannot fill one batch of {batch_size} with "
                           "drop_remainder=True: write more data or use a smaller batch")
    autotune = tf.data.AUTOTUNE
    # list_files (one glob, the same one inspect_shards checked) marks the names as files in the dataset graph,
    # so tools that inspect a pipeline (tpu_helpers.tpu_tf.purity, SavedModel asset tracking) see them.
    files = tf.data.Dataset.list_files(info.pattern, shuffle=shuffle, seed=seed)
    records = files.interleave(lambda f: tf.data.TFRecordDataset(f), cycle_length=min(cycle_length, len(info.files)),
                               num_parallel_calls=autotune, deterministic=seed is not None or not shuffle)
    records = records.apply(tf.data.experimental.assert_cardinality(info.total_records))
    if shuffle:
        records = records.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    if repeat:
        records = records.repeat()
    batches = records.batch(batch_size, drop_remainder=drop_remainder)
    features = {FEATURE: tf.io.FixedLenFeature([block_size], tf.int64)}

    def parse(serialized):
        ids = tf.cast(tf.io.parse_example(serialized, features)[FEATURE], tf.int32)
        return ids

    batches = batches.map(parse, num_parallel_calls=autotune)

    def finish(ids, mask_seed=None):
        masked, y = mask_tokens(ids, spec, mlm_probability=mlm_probability, seed=mask_seed)
        inputs = {"input_ids": masked, "attention_mask": tf.ones_like(masked)}
        if labels == "tuple":
            return inputs, y
        inputs["labels"] = y
        return inputs

    if seed is None:
        batches = batches.map(finish, num_parallel_calls=autotune)
    else:
        seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=shuffle).batch(2)
        batches = tf.data.Dataset.zip(batches, seeds).map(finish, num_parallel_calls=autotune)
    return batches.prefetch(autotune)



def show_masked_example(batch: Mapping[str, Any] | tuple, tokenizer: Any, *, row: int = 0,
                        max_tokens: int = 48) -> str:
    """One row of a masked batch as text: ``[<mask>→the]`` where the model must guess ``the``, ``[~of→the]`` for
    a random replacement and ``[=the]`` for a selected token left unchanged; other tokens plain."""
    inputs, labels = (batch[0], batch[1]) if isinstance(batch, tuple) else (batch, batch["labels"])
    ids = np.asarray(inputs["input_ids"])[row][:max_tokens]
    lab = np.asarray(labels)[row][:max_tokens]
    words = []
    for i, y in zip(ids.tolist(), lab.tolist()):
        shown = tokenizer.convert_ids_to_tokens(int(i))
        if y == -100:
            words.append(shown)
        else:
            orig = tokenizer.convert_ids_to_tokens(int(y))
            words.append(f"[{shown}→{orig}]" if i == tokenizer.mask_token_id else
                         f"[={orig}]" if i == y else f"[~{shown}→{orig}]")
    return " ".join(words).replace("▁", "")


