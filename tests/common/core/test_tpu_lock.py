"""One process owns a TPU: a second kernel is stopped in its first cell with the holder named (a real lockf lock
taken by a child process stands in for libtpu's)."""
import pytest
from course_testing import held_libtpu_lock

from tpu_helpers.core import frameworks, tpu_lock
from tpu_helpers.core.frameworks import check_tpu_build
from tpu_helpers.core.tpu_lock import TPUHeldError, libtpu_lock_holder


@pytest.fixture
def held_lock(tmp_path):
    # its command line names ipykernel, as a notebook kernel's does
    with held_libtpu_lock(tmp_path / "libtpu_lockfile", "-m", "ipykernel_launcher") as pid:
        yield tmp_path / "libtpu_lockfile", pid


class _TPUVM:
    is_tpu = is_tpu_vm = True


def test_the_holder_is_found_in_proc_locks(held_lock):
    path, pid = held_lock
    assert libtpu_lock_holder(path) == pid
    assert libtpu_lock_holder(path, self_pid=pid) is None  # our own lock is not "another process"


def test_no_holder_without_file_or_lock(tmp_path):
    assert libtpu_lock_holder(tmp_path / "missing") is None
    free = tmp_path / "free"
    free.touch()
    assert libtpu_lock_holder(free) is None


@pytest.fixture
def torch_tpu_build(monkeypatch):
    monkeypatch.setattr(frameworks, "installed_version", lambda name: "1")
    monkeypatch.setattr(frameworks, "_tpu_devices", lambda key: ["TPU"])


def test_every_notebooks_first_cell_names_the_kernel_that_holds_the_tpu(held_lock, torch_tpu_build, monkeypatch):
    path, pid = held_lock
    monkeypatch.setattr(tpu_lock, "LIBTPU_LOCKFILE", str(path))
    with pytest.raises(TPUHeldError) as e:
        check_tpu_build(_TPUVM(), "torch")
    msg = str(e.value)
    assert f"process {pid}" in msg and "ipykernel_launcher" in msg, msg  # which process, and what it is
    assert "shut that kernel down" in msg and f"kill {pid}" in msg and f"rm {path}" in msg


def test_a_free_tpu_passes(tmp_path, torch_tpu_build, monkeypatch):
    monkeypatch.setattr(tpu_lock, "LIBTPU_LOCKFILE", str(tmp_path / "none"))
    assert "PJRT device TPU" in check_tpu_build(_TPUVM(), "torch")
