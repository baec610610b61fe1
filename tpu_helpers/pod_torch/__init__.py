"""Notebook 08's PyTorch side (`worker`): a package of its own, as `tpu_helpers.pod` is a TensorFlow one."""
FRAMEWORK = 'torch'  # the framework this package's modules may import
