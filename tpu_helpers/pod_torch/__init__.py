"""Notebook 08's PyTorch side: notebook 05's training function as a script on every host (`worker`). A package of
its own because notebook 08's lesson package, `tpu_helpers.pod`, is a TensorFlow one."""
FRAMEWORK = 'torch'  # the framework this package's modules may import
