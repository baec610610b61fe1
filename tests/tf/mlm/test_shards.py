"""write_shards never loses or damages what it does not own: another prefix's shards, foreign files, a
complete folder after a failed call, and a folder whose manifest is not a manifest heals on a rerun."""
import json

import numpy as np
import pytest
from course_support.mlm import notebook_04_checks

from tpu_helpers.mlm.lesson_cells import read_manifest, write_shards

verify_shards = notebook_04_checks().verify_shards  # notebook 04's Why? B cell


def blocks(n, seed=0, width=8):
    return np.random.default_rng(seed).integers(5, 100, size=(n, width)).astype(np.int32)


def names(folder):
    return sorted(p.name for p in folder.iterdir())


def test_another_prefix_into_the_same_folder_is_refused_and_nothing_is_lost(tf, tmp_path):
    write_shards(blocks(250), tmp_path, prefix="train", records_per_shard=100, progress=False)
    before = names(tmp_path)
    with pytest.raises(ValueError, match=r"holds the 'train' shards of another write.*own folder"):
        write_shards(blocks(50, seed=1), tmp_path, prefix="validation", records_per_shard=100, progress=False)
    assert names(tmp_path) == before
    assert read_manifest(tmp_path).complete and not verify_shards(tmp_path)[1]


def test_foreign_files_are_left_alone(tf, tmp_path):
    (tmp_path / "my_own_data.tfrecord").write_bytes(b"not ours")
    (tmp_path / "notes.txt").write_text("a learner's notes")
    (tmp_path / "train-00009-100.tfrecord.partial-deadbeef").write_bytes(b"a leftover of ours")
    write_shards(blocks(250), tmp_path, prefix="train", records_per_shard=100, progress=False)
    assert "train-00009-100.tfrecord.partial-deadbeef" not in names(tmp_path)  # an interrupted copy's leftover
    write_shards(blocks(150), tmp_path, prefix="train", records_per_shard=100, progress=False)
    assert names(tmp_path) == ["manifest.json", "my_own_data.tfrecord", "notes.txt", "train-00000-100.tfrecord",
                               "train-00001-50.tfrecord"]  # the replaced shards of the last write removed
    assert (tmp_path / "my_own_data.tfrecord").read_bytes() == b"not ours"


@pytest.mark.parametrize("bad", [[], np.arange(10), np.zeros((0, 8), np.int32)])
def test_a_failed_call_leaves_a_complete_folder_complete(tf, tmp_path, bad):
    write_shards(blocks(120), tmp_path, prefix="train", records_per_shard=100, progress=False)
    manifest = (tmp_path / "manifest.json").read_text()
    with pytest.raises(ValueError, match="non-empty 2-D"):
        write_shards(bad, tmp_path, prefix="train", records_per_shard=100, progress=False)
    assert (tmp_path / "manifest.json").read_text() == manifest and not verify_shards(tmp_path)[1]


@pytest.mark.parametrize("content", ["[]", '"manifest"', "{", '{"format": "something-else"}'])
def test_a_manifest_that_is_not_one_is_a_clear_error_and_heals_on_rerun(tf, tmp_path, content):
    write_shards(blocks(120), tmp_path, prefix="train", records_per_shard=100, progress=False)
    (tmp_path / "manifest.json").write_text(content)
    with pytest.raises(RuntimeError, match="rerun write_shards|not a tpu-course shard manifest"):
        read_manifest(tmp_path)
    report = write_shards(blocks(120), tmp_path, prefix="train", records_per_shard=100, progress=False)
    assert read_manifest(tmp_path).complete and not verify_shards(tmp_path)[1] and report.manifest.total_records == 120
    assert json.loads((tmp_path / "manifest.json").read_text())["prefix"] == "train"
