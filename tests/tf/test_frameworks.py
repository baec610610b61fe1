"""tpu_helpers.core.frameworks.import_tensorflow, the one lazy ``import tensorflow`` of the TensorFlow lessons'
modules, in a TensorFlow process."""
import sys

from tpu_helpers.core.frameworks import import_tensorflow


def test_import_tensorflow_is_the_tensorflow_module(tf):
    assert import_tensorflow() is tf is sys.modules["tensorflow"]
