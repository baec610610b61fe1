"""Docstring examples are run, never left to rot: every ``>>>`` example in tpu_helpers runs as a doctest (today only
framework-free modules have one; a framework module's example needs a doctest in its framework's test folder)."""
import doctest
import importlib
from pathlib import Path

import pytest
from course_testing import ROOT

HERE = []  # modules with an example, each importable without a framework (numpy at most)


def test_every_module_with_an_example_has_its_doctest():
    found = sorted(".".join(p.relative_to(ROOT).with_suffix("").parts) for p in (ROOT / "tpu_helpers").rglob("*.py")
                   if ">>>" in p.read_text(encoding="utf-8"))
    assert found == sorted(HERE), "add the module to a doctest list (or remove the example)"


@pytest.mark.parametrize("name", HERE)
def test_docstring_examples_run(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0, result
    assert Path(importlib.import_module(name).__file__).name.endswith(".py")
