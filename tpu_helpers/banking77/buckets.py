"""Notebook 05's length buckets: the sampler and collate written in its section 3 (cells tagged ``save``)."""
from tpu_helpers.banking77.lesson_cells import BucketBatchSampler, BucketCollator, BucketedDataset  # noqa: F401
from tpu_helpers.shared.boundaries import BucketError  # noqa: F401
