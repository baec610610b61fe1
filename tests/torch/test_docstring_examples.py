"""The ``>>>`` examples of the PyTorch modules run as doctests (the list: tests/common/core/test_docstring_examples.py)."""
import doctest
import importlib

import pytest


@pytest.mark.parametrize("name", ["tpu_helpers.xla_debug.diagnose"])
def test_docstring_examples_run(name):
    pytest.importorskip("torch")
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0, result
