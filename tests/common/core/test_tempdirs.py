"""The course's temp folders (tpu_helpers.core.tempdirs): a killed process's folders are removed by the next course
process; a live process's folders and anything not named like ours are never touched."""
import os
import subprocess
import sys
import tempfile

import pytest

from tpu_helpers.core import tempdirs


def dead_pid():
    return int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)


def test_only_our_folders_of_dead_processes_are_removed(tmp_path):
    dead = dead_pid()
    ours_dead = [f"tpu-course-xla-records-{dead}-abc123", f"tpu-course-shard-{dead}-x_y", f"tpu-course-03-{dead}-k9"]
    kept = [f"tpu-course-xla-records-{os.getpid()}-def456",  # this live process
            "my-own-folder", f"tpu-course-xla-records-{dead}",  # not our naming
            "tpu-course-tests-abc123", f"other-{dead}-abc"]
    for name in ours_dead + kept:
        (tmp_path / name).mkdir()
    (tmp_path / f"tpu-course-gcs-{dead}-file").write_text("a file, not a folder: kept")
    assert tempdirs.remove_folders_of_dead_processes(str(tmp_path)) == sorted(ours_dead)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(kept + [f"tpu-course-gcs-{dead}-file"])


def test_course_temp_dir_is_named_by_process_and_cleans_up_first(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    (tmp_path / f"tpu-course-gcs-{dead_pid()}-left").mkdir()
    folder = tempdirs.course_temp_dir("gcs", remove_at_exit=False)
    assert os.path.basename(folder).startswith(f"tpu-course-gcs-{os.getpid()}-")
    assert [p.name for p in tmp_path.iterdir()] == [os.path.basename(folder)]
    with pytest.raises(ValueError, match="lower-case words"):
        tempdirs.course_temp_dir("Bad Kind")


def test_a_killed_process_leaves_a_folder_that_the_next_one_removes(tmp_path, monkeypatch):
    code = ("import os; from tpu_helpers.core.tempdirs import course_temp_dir; "
            "print(course_temp_dir('shard'), flush=True); os._exit(9)")  # no atexit: as if killed
    left = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, TMPDIR=str(tmp_path))).stdout.strip()
    assert os.path.dirname(left) == str(tmp_path) and os.path.isdir(left)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    tempdirs.course_temp_dir("shard", remove_at_exit=False)
    assert not os.path.exists(left)


def test_a_work_folder_in_use_by_another_process_is_not_shared(tmp_path):
    work = tmp_path / "nb04-ci"
    assert tempdirs.claim_work_folder(work) == str(work)  # this process holds it now
    code = ("import sys; from tpu_helpers.core.tempdirs import claim_work_folder; "
            "print(claim_work_folder(sys.argv[1], '04-work'))")
    other = subprocess.run([sys.executable, "-c", code, str(work)], capture_output=True, text=True)
    got = other.stdout.strip().splitlines()
    assert "in use by another run" in got[0] and os.path.basename(got[-1]).startswith("tpu-course-04-work-")
    assert not os.path.exists(got[-1])  # the other run's own folder went with it
