"""./course run keeps going when a notebook's figures file holds a cut-off or foreign line (a killed kernel)."""
import json

import run_course


def test_cut_off_and_foreign_figure_lines_are_skipped(tmp_path):
    path = tmp_path / "figures.jsonl"
    good = json.dumps({"name": "F1", "value": 0.7, "unit": ""})
    path.write_text("\n".join([good, '{"name": "cut', "[]", '{"name": "no value"}', "null",
                               json.dumps({"name": "steps", "value": 3, "unit": "steps"})]) + "\n")
    assert run_course._records(path) == {"F1": (0.7, ""), "steps": (3, "steps")}
    assert run_course._figures(path) == "F1=0.7; steps=3 steps"
    assert run_course._records(tmp_path / "missing.jsonl") == {}
