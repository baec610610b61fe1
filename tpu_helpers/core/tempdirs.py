"""Temporary folders ``tpu-course-<kind>-<pid>-<random>``: removed at exit, or by the next course process if killed."""
import atexit
import fcntl
import os
import re
import shutil
import tempfile

PREFIX = "tpu-course-"
_NAME = re.compile(re.escape(PREFIX) + r"(?P<kind>[a-z0-9]+(?:-[a-z0-9]+)*)-(?P<pid>\d+)-(?P<rand>[A-Za-z0-9_]+)")


def course_temp_dir(kind: str, *, remove_at_exit: bool = True) -> str:
    """A new folder ``tpu-course-<kind>-<pid>-<random>`` (after removing dead processes' ones)."""
    if not re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", kind):
        raise ValueError(f"kind must be lower-case words joined by '-', not {kind!r}")
    tmp = tempfile.gettempdir()
    remove_folders_of_dead_processes(tmp)
    folder = tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-{os.getpid()}-", dir=tmp)
    if remove_at_exit:
        atexit.register(shutil.rmtree, folder, True)
    return folder


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):  # someone else's process (or not a pid): not ours to judge
        pass
    return True


def remove_folders_of_dead_processes(tmp: str | None = None) -> list[str]:
    """Remove the course's folders (``tpu-course-<kind>-<pid>-<random>``) whose process is gone; return their names."""
    tmp = tmp or tempfile.gettempdir()
    removed = []
    for name in os.listdir(tmp) if os.path.isdir(tmp) else ():
        m = _NAME.fullmatch(name)
        path = os.path.join(tmp, name)
        if not m or not os.path.isdir(path) or os.path.islink(path) or _alive(int(m.group("pid"))):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(name)
    return sorted(removed)


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
