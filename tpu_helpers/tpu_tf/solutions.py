"""Reference answers for notebook 03's exercises. Try first, then read."""
from __future__ import annotations

import tensorflow as tf

# One replica per TensorCore: a v3 chip has 2 and its name counts them, a v5e chip 1 (cloud.google.com/tpu/docs/v3)
SLICE_REPLICAS = {"v5e-1": 1, "v3-8": 8, "v5e-8": 8, "v3-32": 32}


def global_batch_and_steps(per_replica_batch: int, replicas: int, num_examples: int) -> tuple[int, int]:
    """The batch the pipeline builds (tf.distribute splits it) and one epoch's steps (drop_remainder: rounded down)."""
    global_batch = per_replica_batch * replicas
    return global_batch, num_examples // global_batch


def make_node_ready_dataset(features, labels, batch_size: int):
    """In-memory tensors and tf ops only (a TPU Node can run it), static batches, shuffled as pairs."""
    ds = tf.data.Dataset.from_tensor_slices((features, labels))
    ds = ds.shuffle(len(features), seed=0)
    return ds.batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
