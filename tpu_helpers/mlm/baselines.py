"""The pipelines notebook 04 compares its own with, and the interleaved timing that compares them."""
from __future__ import annotations

import time
from typing import Any, Callable, Mapping

import numpy as np

from tpu_helpers.core.frameworks import import_tensorflow
from tpu_helpers.core.timing import Benchmark, Candidate
from tpu_helpers.mlm.lesson_cells import FEATURE, MaskingSpec, mask_tokens, shard_files


def to_tf_dataset_baseline(blocks: np.ndarray, tokenizer: Any, *, batch_size: int, mlm_probability: float = 0.15,
                           shuffle: bool = True):
    """The blocks through ``to_tf_dataset`` with ``DataCollatorForLanguageModeling`` (numpy masking)."""
    import datasets
    from transformers import DataCollatorForLanguageModeling

    ds = datasets.Dataset.from_dict({"input_ids": np.asarray(blocks)})
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=mlm_probability, return_tensors="np")
    return ds.to_tf_dataset(columns=["input_ids", "attention_mask"], label_cols="labels", batch_size=batch_size,
                            shuffle=shuffle, collate_fn=collator, drop_remainder=True)


def per_record_baseline(folder: str, spec: MaskingSpec, *, batch_size: int, block_size: int = 128,
                        shuffle: bool = True, shuffle_buffer: int = 10_000, mlm_probability: float = 0.15,
                        repeat: bool = False):
    """The seed's run_mlm.py pipeline: parse one record at a time, then batch and mask."""
    tf = import_tensorflow()
    names, total = shard_files(folder, block_size)
    autotune = tf.data.AUTOTUNE
    files = tf.data.Dataset.from_tensor_slices(names)
    if shuffle:
        files = files.shuffle(len(names))
    records = tf.data.TFRecordDataset(files, num_parallel_reads=autotune)
    records = records.apply(tf.data.experimental.assert_cardinality(total))
    features = {FEATURE: tf.io.FixedLenFeature([block_size], tf.int64)}
    rows = records.map(lambda r: tf.cast(tf.io.parse_single_example(r, features)[FEATURE], tf.int32),
                       num_parallel_calls=autotune)
    if shuffle:
        rows = rows.shuffle(shuffle_buffer)
    if repeat:
        rows = rows.repeat()

    def finish(ids):
        masked, y = mask_tokens(ids, spec, mlm_probability=mlm_probability)
        return {"input_ids": masked, "attention_mask": tf.ones_like(masked), "labels": y}

    return rows.batch(batch_size, drop_remainder=True).map(finish, num_parallel_calls=autotune).prefetch(autotune)


def compare_pipelines(pipelines: Mapping[str, Callable[[], Any]], *, rounds: int = 3, seconds: float = 1.0,
                      warmup_steps: int = 3, progress: bool = False) -> Benchmark:
    """samples/s of several ``tf.data`` pipelines, timed in interleaved rounds; baseline the slowest."""
    from tqdm.auto import tqdm

    def rows(x) -> int:  # a batch, or a (features, labels) pair
        return int((x[0] if isinstance(x, tuple) else x)["input_ids"].shape[0])

    iterators = {name: iter(make()) for name, make in pipelines.items()}
    for it in iterators.values():
        for _ in range(warmup_steps):
            batch = rows(next(it))
    values: dict[str, list[float]] = {name: [] for name in pipelines}
    with tqdm(total=rounds * len(pipelines), desc="measuring pipelines", unit="run", disable=not progress) as bar:
        for _ in range(rounds):
            for name, it in iterators.items():
                samples, start = 0, time.perf_counter()
                while True:
                    samples += rows(next(it))
                    if (elapsed := time.perf_counter() - start) >= seconds:
                        break
                values[name].append(samples / elapsed)
                bar.update(1)
    bench = Benchmark("pipelines", f"input pipelines, batch {batch}, {rounds} rounds of {seconds:g} s each",
                      [Candidate(name, v, "samples/s") for name, v in values.items()], baseline="")
    bench.baseline = min(bench.medians, key=bench.medians.get)
    return bench
