"""Notebook 08, from one TPU host to a pod slice: what changes on a multi-host slice, and a rehearsal of it with two
local hosts on real distributed engines (loopback only).

* `slices`: hosts, chips and replicas of the slices the notebook names, with their sources; the commands that run
  the same program on every worker of a slice, and the one that stops the bill;
* `sharding`: which TFRecord shards each host's input pipeline reads;
* `hosts`: start several local "hosts" (process groups), with timeouts, logs, and a worker killed mid-run;
* `tf_worker`: notebook 04's masked LM as a multi-host TensorFlow script (``python -m tpu_helpers.pod.tf_worker``);
  its PyTorch counterpart, notebook 05's training function under ``torchrun``, is `tpu_helpers.pod_torch.worker`
  (a package of its own: no module of this one imports torch).

The notebook: ``notebooks/08_pod_slice_multi_host.ipynb`` (its metadata names this package). Framework: TensorFlow
(``FRAMEWORK``; the PyTorch rehearsal runs in child processes); the exercises' checks are in ``exercise_checks.py``, the
reference answers in ``solutions.py``.
"""
FRAMEWORK = 'tf'  # the framework this package's modules may import (tests/conventions enforce it)
NOTEBOOK = '08_pod_slice_multi_host'
