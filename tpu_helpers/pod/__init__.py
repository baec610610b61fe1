"""Notebook 08, from one TPU host to a pod slice: layouts, each host's shards, local hosts, the TF script."""
FRAMEWORK = 'tf'  # the one framework this package may import
NOTEBOOK = '08_pod_slice_multi_host'
