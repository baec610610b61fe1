"""Notebook 08, from one TPU host to a pod slice: slices' layouts and commands (`slices`), which shards a host reads
(`sharding`), local hosts on loopback (`hosts`), and notebook 04's masked LM as a multi-host script (`tf_worker`;
its PyTorch counterpart is `tpu_helpers.pod_torch.worker`, a package of its own: no module here imports torch)."""
FRAMEWORK = 'tf'  # the framework this package's modules may import (tests/conventions enforce it)
NOTEBOOK = '08_pod_slice_multi_host'
