import json
import re

import pytest
from install_plan import read_pins

from tpu_helpers.core import summary
from tpu_helpers.core.versions import pin_mismatches


def test_record_writes_json_lines_for_the_runner(tmp_path, monkeypatch, capsys):
    path = tmp_path / "figs.jsonl"
    monkeypatch.setenv(summary.FIGURES_ENV, str(path))
    summary.record("compilations", 3)
    summary.record("ratio", 2.345678, "x")
    lines = [json.loads(s) for s in path.read_text().splitlines()]
    assert lines == [{"name": "compilations", "value": 3, "unit": ""}, {"name": "ratio", "value": 2.346, "unit": "x"}]
    assert "[measured] ratio: 2.346 x" in capsys.readouterr().out
    assert re.search(r"compilations +3\n", summary.show())


@pytest.mark.parametrize("under_runner", [False, True])
def test_record_takes_numpy_scalars_and_refuses_arrays_and_objects_alike_in_both_modes(tmp_path, monkeypatch,
                                                                                      under_runner):
    import numpy as np

    if under_runner:
        monkeypatch.setenv(summary.FIGURES_ENV, str(tmp_path / "figs.jsonl"))
    else:
        monkeypatch.delenv(summary.FIGURES_ENV, raising=False)
    assert summary.record("f", np.float32(1.25), quiet=True) == 1.25
    assert summary.record("i", np.int64(7), quiet=True) == 7 and summary.record("b", np.bool_(True), quiet=True) is True
    assert summary.record("one", np.array([3.5]), quiet=True) == 3.5
    with pytest.raises(ValueError, match="size 1"):  # NumPy's own error
        summary.record("arr", np.array([1, 2]))
    with pytest.raises(TypeError, match="not PosixPath"):
        summary.record("path", tmp_path)
    if under_runner:
        assert [json.loads(s)["name"] for s in (tmp_path / "figs.jsonl").read_text().splitlines()] == \
            ["f", "i", "b", "one"]


def test_read_pins_and_mismatches(tmp_path):
    req = tmp_path / "r.txt"
    req.write_text("# c\ntf_keras==2.20.1  # note\ntorch==2.9.0\nfoo>=1\n\n")
    pins = read_pins(req)
    assert pins == {"tf-keras": "2.20.1", "torch": "2.9.0"}
    assert pin_mismatches(pins, {"tf-keras": "2.20.1", "torch": "2.8.0"}) == {"torch": ("2.9.0", "2.8.0")}
    assert pin_mismatches(pins, {"tf-keras": None, "torch": "2.9.0"}) == {}  # not installed here: not a mismatch


def test_repository_pins_are_exact_and_include_the_stack():
    tf, torch = read_pins("tf"), read_pins("torch")
    assert torch["torch"] == torch["torch-xla"], "torch and torch_xla must match exactly"
    assert tf["tensorflow-cpu"].split(".")[:2] == tf["tf-keras"].split(".")[:2], "tf-keras must match TensorFlow"
    assert tf["transformers"].startswith("4.57."), "transformers 4.57.x is the last line with TF models"
    assert torch["transformers"].startswith("5."), "the PyTorch/XLA notebooks use transformers 5"
