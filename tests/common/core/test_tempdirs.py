"""The course's temp folders (tpu_helpers.core.tempdirs): a process removes its own at exit and nothing else."""
import os
import subprocess
import sys
import tempfile

from tpu_helpers.core import tempdirs


def test_course_temp_dir_is_named_by_process(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    folder = tempdirs.course_temp_dir("gcs", remove_at_exit=False)
    assert os.path.dirname(folder) == str(tmp_path)
    assert os.path.basename(folder).startswith(f"tpu-course-gcs-{os.getpid()}-")


def test_a_process_removes_its_own_folder_at_exit_and_leaves_a_killed_ones(tmp_path):
    killed = tmp_path / "tpu-course-shard-999999999-left"  # no such process: still not this run's to delete
    killed.mkdir()
    code = "from tpu_helpers.core.tempdirs import course_temp_dir; print(course_temp_dir('shard'))"
    made = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, TMPDIR=str(tmp_path))).stdout.strip()
    assert os.path.basename(made).startswith("tpu-course-shard-") and not os.path.exists(made)
    assert [p.name for p in tmp_path.iterdir()] == [killed.name]


def test_a_work_folder_in_use_by_another_process_is_not_shared(tmp_path):
    work = tmp_path / "nb04-ci"
    assert tempdirs.claim_work_folder(work) == str(work)  # this process holds it now
    code = ("import sys; from tpu_helpers.core.tempdirs import claim_work_folder; "
            "print(claim_work_folder(sys.argv[1], '04-work'))")
    other = subprocess.run([sys.executable, "-c", code, str(work)], capture_output=True, text=True)
    got = other.stdout.strip().splitlines()
    assert "in use by another run" in got[0] and os.path.basename(got[-1]).startswith("tpu-course-04-work-")
    assert not os.path.exists(got[-1])  # the other run's own folder went with it
