"""Who holds the TPU: libtpu locks ``/tmp/libtpu_lockfile`` until its process exits, so one process at a time."""
import os
from pathlib import Path
from typing import Callable

LIBTPU_LOCKFILE = "/tmp/libtpu_lockfile"


class TPUHeldError(RuntimeError):
    """Another process holds the TPU; the message names it and says how to free the chips."""


def libtpu_lock_holder(path: str | os.PathLike[str] | None = None, proc_locks: str = "/proc/locks",
                       self_pid: int | None = None) -> int | None:
    """The pid of another process holding libtpu's lock on `path` (default `LIBTPU_LOCKFILE`), or None."""
    try:
        st = os.stat(path or LIBTPU_LOCKFILE)
        lines = Path(proc_locks).read_text().splitlines()
    except OSError:
        return None
    # fs/locks.c prints a lock as "N: POSIX ADVISORY WRITE <pid> %02x:%02x:%lu (major:minor:inode) ..."
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for parts in (line.split() for line in lines):
        if key in parts and "->" not in parts:  # "->": a waiter, not a holder
            pid = int(parts[parts.index(key) - 1])
            if pid != (os.getpid() if self_pid is None else self_pid):
                return pid
    return None


def held_message(pid: int | None, path: str = LIBTPU_LOCKFILE) -> tuple[str, str]:
    """(what happened, what to do) when the TPU is held by `pid` (None: holder unknown)."""
    try:  # the holder's command line ("" when it cannot be read)
        command = " ".join(Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").replace("\0", " ").split())
    except OSError:
        command = ""
    if len(command) > 160:  # its start (the program) and its end (the script or kernel arguments)
        command = f"{command[:80]} ... {command[-75:]}"
    who = f"process {pid}" + (f" ({command})" if command else "") if pid else "another process"
    kernel = " it is another notebook's Jupyter kernel:" if "ipykernel" in command else ""
    what = (f"The TPU is already in use by {who}: only one process at a time can hold the chips of a TPU VM "
            f"(libtpu locks {path}).")
    fix = (f"stop it:{kernel} in Jupyter shut that kernel down (Kernel > Shut Down Kernel, or the Running tab), or "
           + (f"`kill {pid}`" if pid else "find it with `sudo lsof -w /dev/accel0` or `/dev/vfio/0`")
           + f"; then restart this kernel. If no such process is left, remove a stale lock: `sudo rm {path}`.")
    return what, fix


def held_problem(lock_holder: Callable[[], int | None] | None = None) -> str | None:
    """"What happened. To fix: ..." when another process holds the TPU, else None."""
    pid = (lock_holder or libtpu_lock_holder)()
    if pid is None:
        return None
    what, fix = held_message(pid, LIBTPU_LOCKFILE)
    return f"{what} To fix: {fix}"

