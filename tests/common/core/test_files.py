import json

from tpu_helpers.core.files import write_json_atomic


def test_write_json_atomic_replaces_the_whole_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "report.json"
    path.write_text("old")
    write_json_atomic(path, {"b": 1, "a": [2]})
    assert json.loads(path.read_text()) == {"a": [2], "b": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]
