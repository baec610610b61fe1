"""Notebook 04, a RoBERTa masked LM from scratch in TensorFlow: the corpus (`corpus`: WikiText, offline text, or
the learner's own through `sources`: ``.txt`` files, ``gs://``, a Hub dataset by name), the tokenizer, config and
128-token blocks (`tokenizer`), TFRecord shards with a manifest, local or on ``gs://`` (`shards`, `gcs`), the
pure-TensorFlow ``tf.data`` pipeline with MLM masking (`pipeline`) and the ones it is compared with (`baselines`),
and what the training reads (`training`: metrics, the step log, the plan timed from the first steps).

It follows the seed (HF blog "Training a language model with Transformers using TensorFlow and TPUs" and
``transformers/examples/tensorflow/language-modeling-tpu``: ``train_unigram.py``, ``prepare_tfrecord_shards.py``,
``run_mlm.py``) and fixes what they get wrong:

* **Special tokens vs the model config.** ``train_unigram.py`` trains ``[CLS] [SEP] <unk> <pad> [MASK]`` (ids 0-4)
  but ``run_mlm.py`` keeps roberta-base's ``pad_token_id=1``, which is ``[SEP]`` in that vocabulary (and
  ``eos_token_id=2`` is ``<unk>``): RoBERTa derives position ids from ``input_ids != pad_token_id``, so every
  ``[SEP]`` gets the padding position instead of its own. Here the tokenizer has
  RoBERTa's own ``<s> <pad> </s> <unk> <mask>`` and `roberta_config` copies every id (and sizes the position
  table: RoBERTa positions start at ``pad_token_id + 1``, so 128-token blocks need 130 positions);
  `check_config_matches_tokenizer` says what is wrong with a mismatched pair.
* **Chunking.** The seed groups texts per ``datasets.map`` batch of 1000 lines, so up to ``block_size - 1``
  tokens are dropped *per batch*, and empty WikiText lines become ``[CLS] [SEP]`` pairs. `BlockChunker` carries the remainder across
  batches (at most ``block_size - 1`` tokens are dropped in total, and counted) and `filter_lines` drops empty
  lines first; an empty corpus is a clear `ValueError`.
* **Shards.** The seed recovers sample counts from file names only, writes shards in place (an interrupted run
  leaves a truncated file that looks complete), stores an all-ones ``attention_mask`` (twice the bytes), and
  tests ``"gs" in output_dir`` (true for ``logs/``). Here each shard is written to a local temporary file,
  copied to a ``.partial`` name and then renamed (``tf.io.gfile.rename``: ``rename(2)`` locally, a server-side
  copy plus delete on GCS, so the final object appears whole or not at all); a JSON manifest records counts and
  sha256 checksums; a re-run skips shards that verify.
* **Input pipeline.** The seed parses one record at a time and reads its shuffle buffer size from a global
  ``args``. Here records are batched first and parsed with ``tf.io.parse_example`` (one vectorised op per batch),
  the cardinality comes from the manifest, and masking is TF-native (no ``py_function``, so it runs where the
  data pipeline runs, a TPU Node's host included), draws random replacement tokens only from the regular
  vocabulary, and never masks special tokens.

Framework use: these modules import only numpy at import time (chunking is framework-free); TensorFlow,
``datasets``, ``tokenizers`` and ``transformers`` are imported inside the functions that need them, so call
``tpu_helpers.core.frameworks.use_framework("tf")`` first, as every TF notebook does.

The notebook: ``notebooks/04_mlm_from_scratch_tensorflow.ipynb`` (its metadata names this package). Framework:
TensorFlow only (``FRAMEWORK``); the exercises' checks are in ``exercise_checks.py``, the reference answers in ``solutions.py``.
"""
FRAMEWORK = 'tf'  # the framework this package's modules may import (tests/conventions enforce it)
NOTEBOOK = '04_mlm_from_scratch_tensorflow'
