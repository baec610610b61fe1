"""Notebook 08's PyTorch side: notebook 05's training function as a script launched on every host of a slice
(`worker`, run by ``torchrun`` in the notebook's two-host rehearsal). A package of its own because notebook 08's
lesson package, `tpu_helpers.pod`, is a TensorFlow one: no module of it may import torch."""
FRAMEWORK = 'torch'  # the framework this package's modules may import
