"""Reference answers for notebook 03's exercises. Try first, then read.
"""
from __future__ import annotations

import tensorflow as tf

# TensorFlow makes one replica per TensorCore it sees as a device. A v3 chip has 2 TensorCores, and the number
# in a v3 slice's name counts cores (v3-8: 4 chips, 8 cores; v3-32: 16 chips on 4 hosts, 32 cores); a v5e chip
# has 1, and the number in its name counts chips. https://cloud.google.com/tpu/docs/v3 ("Each v3 TPU chip
# contains two TensorCores"), https://cloud.google.com/tpu/docs/v5e.
SLICE_REPLICAS = {"v5e-1": 1, "v3-8": 8, "v5e-8": 8, "v3-32": 32}


def global_batch_and_steps(per_replica_batch: int, replicas: int, num_examples: int) -> tuple[int, int]:
    """The batch the pipeline builds (split over the replicas by tf.distribute) and the steps of one epoch.

    With ``drop_remainder=True`` the last, partial batch is dropped: integer division, rounded down.
    """
    global_batch = per_replica_batch * replicas
    return global_batch, num_examples // global_batch


def make_node_ready_dataset(features, labels, batch_size: int):
    """A pipeline a TPU Node can run: in-memory tensors (they travel with the graph), tf ops only, and
    ``drop_remainder=True`` so every batch has the same, static shape. Shuffling pairs keeps them together."""
    ds = tf.data.Dataset.from_tensor_slices((features, labels))
    ds = ds.shuffle(len(features), seed=0)
    return ds.batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
