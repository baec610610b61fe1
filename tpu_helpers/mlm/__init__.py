"""Notebook 04, a RoBERTa masked LM from scratch in TensorFlow: the corpus (`corpus`, `sources`), bucket checks
(`gcs`), shard verification (`shards`), the pipelines it is compared with (`baselines`), what training reads
(`training`, `claims`); the lesson itself (tokenizer, blocks, shards, pipeline, training) is in the notebook's cells
tagged ``save``, generated into `lesson_cells`."""
FRAMEWORK = 'tf'  # the framework this package's modules may import (tests/conventions enforce it)
NOTEBOOK = '04_mlm_from_scratch_tensorflow'
