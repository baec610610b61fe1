"""Temporary folders ``tpu-course-<kind>-<pid>-<random>``: each process removes only its own, at exit."""
import atexit
import fcntl
import os
import shutil
import tempfile


def course_temp_dir(kind: str, *, remove_at_exit: bool = True) -> str:
    """A new folder ``tpu-course-<kind>-<pid>-<random>`` in the system's temporary folder."""
    folder = tempfile.mkdtemp(prefix=f"tpu-course-{kind}-{os.getpid()}-")
    if remove_at_exit:
        atexit.register(shutil.rmtree, folder, True)
    return folder


_CLAIMS: list = []  # open lock files: a claim lasts as long as the process


def claim_work_folder(folder: str | os.PathLike[str], kind: str = "work") -> str:
    """`folder`, claimed with ``flock`` on ``.in-use``; when another process holds it, a ``course_temp_dir`` of its own."""
    folder = os.path.abspath(os.path.expanduser(os.fspath(folder)))
    os.makedirs(folder, exist_ok=True)
    handle = open(os.path.join(folder, ".in-use"), "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        own = course_temp_dir(kind)
        print(f"{folder} is in use by another run: this run works in {own} (removed when it exits)")
        return own
    _CLAIMS.append(handle)
    return folder
