"""MLM input pipelines, samples/s on the CPU: the three ways to feed masked-LM batches to a TensorFlow model.

* ``to_tf_dataset + collator``: blocks in a ``datasets.Dataset``, ``to_tf_dataset`` with
  ``DataCollatorForLanguageModeling`` (NumPy masking called through ``tf.py_function``: Python per batch);
* ``per-record parse, then batch``: TFRecord shards, ``tf.io.parse_single_example`` per record, then batch and
  mask (transformers' ``examples/tensorflow/language-modeling-tpu/run_mlm.py``);
* ``batch, then parse_example``: notebook 04's `make_mlm_dataset` (`tpu_helpers.mlm.lesson_cells`): batch the serialized
  records first, one ``tf.io.parse_example`` per batch, TF-native masking.

The same 20,000 blocks of 128 random ids (``--quick``: 4,000), batch 64, the same masking statistics; each
pipeline is built once and then measured in interleaved rounds (`compare_pipelines`, notebook 04's Why? D cell).
"""
from __future__ import annotations

import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.harness import Benchmark, cli  # noqa: E402

VOCAB = 8000
BLOCK = 128
BATCH = 64


def word_level_tokenizer(vocab_size: int = VOCAB):
    """A fast tokenizer with RoBERTa's special tokens and `vocab_size` ids (no training, no download): the
    collator needs only its special tokens and length."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast

    from tpu_helpers.mlm.lesson_cells import SPECIAL_TOKENS

    vocab = {t: i for i, t in enumerate(SPECIAL_TOKENS)}
    vocab.update({f"w{i}": i for i in range(len(SPECIAL_TOKENS), vocab_size)})
    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer(WordLevel(vocab, unk_token="<unk>")),
                                   bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>",
                                   cls_token="<s>", sep_token="</s>", mask_token="<mask>")


def run(quick: bool) -> Benchmark:
    from tpu_helpers.core import frameworks

    frameworks.use_framework("tf")
    import numpy as np

    from benchmarks.harness import course_support_module
    from tpu_helpers.mlm.lesson_cells import (
        SPECIAL_TOKENS,
        MaskingSpec,
        make_mlm_dataset,
        write_shards,
    )

    checks = course_support_module("mlm").notebook_04_checks()  # Why? D's measure cell, the baselines' one home
    compare_pipelines, per_record_baseline = checks.compare_pipelines, checks.per_record_baseline
    to_tf_dataset_baseline = checks.to_tf_dataset_baseline

    records = 4_000 if quick else 20_000
    rounds, seconds = (2, 0.5) if quick else (5, 2.0)
    tokenizer = word_level_tokenizer()
    spec = MaskingSpec.from_tokenizer(tokenizer)
    rng = np.random.default_rng(0)
    blocks = rng.integers(len(SPECIAL_TOKENS), VOCAB, size=(records, BLOCK)).astype(np.int32)
    blocks[:, 0], blocks[:, -1] = tokenizer.bos_token_id, tokenizer.eos_token_id
    with tempfile.TemporaryDirectory(prefix="bench-mlm-") as tmp:
        shards = os.path.join(tmp, "train")
        write_shards(blocks, shards, records_per_shard=2_000, progress=False)
        pipelines = {
            "to_tf_dataset + collator":
                lambda: to_tf_dataset_baseline(blocks, tokenizer, batch_size=BATCH).repeat(),
            "per-record parse, then batch":
                lambda: per_record_baseline(shards, spec, batch_size=BATCH, repeat=True),
            "batch, then parse_example (course)":
                lambda: make_mlm_dataset(shards, spec, batch_size=BATCH, repeat=True),
        }
        result = compare_pipelines(pipelines, rounds=rounds, seconds=seconds)
    course = "batch, then parse_example (course)"
    vs_per_record = result.ratio(course, "per-record parse, then batch")
    return Benchmark(
        "mlm_pipeline",
        f"MLM input pipelines on the CPU: {records:,} blocks x {BLOCK} ids, batch {BATCH}, samples/s",
        result.candidates, baseline="to_tf_dataset + collator",
        notes=(f"Course pipeline vs per-record parse: {vs_per_record:.1f}x. Targets: >= 10x the "
               "to_tf_dataset path and >= 3x the per-record pipeline. All three mask 15 % of the tokens "
               "(80/10/10); the two TFRecord pipelines read the same local shards; to_tf_dataset reads the "
               "same blocks from an Arrow table in memory."))


if __name__ == "__main__":
    cli(run)
