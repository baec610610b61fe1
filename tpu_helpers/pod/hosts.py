"""Notebook 08's rehearsal of a multi-host slice: `run_hosts` runs one process group per "host" on 127.0.0.1."""
from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from tpu_helpers.core.frameworks import framework_python

# what a parent process may have set that each host decides for itself
_CLEARED = ("USE_TF", "USE_TORCH", "USE_TORCH_XLA", "TF_CONFIG", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
            "MASTER_PORT", "PJRT_DEVICE", "CPU_NUM_DEVICES", "XLA_FLAGS", "ACCELERATE_USE_CPU")


LOST_HOST_EXIT = 3  # the exit status of a host whose partner stopped answering (both frameworks' workers)


def lost_host(who: str, error: BaseException) -> int:
    """Say on stderr that a collective failed because another host stopped answering; `LOST_HOST_EXIT`."""
    first = next((ln.strip() for ln in str(error).splitlines() if ln.strip()), "")[:300]
    print(f"LOST HOST: {who}: a collective failed, another host stopped answering ({type(error).__name__}: "
          f"{first}). Every host must run to the end; restart the whole job from its last checkpoint.",
          file=sys.stderr, flush=True)
    return LOST_HOST_EXIT


@dataclass
class KillPlan:
    """Kill host `host` once host `watch`'s log (its own by default) matches the regular expression `after`."""

    host: int
    after: str
    watch: int | None = None


@dataclass
class HostRun:
    """One host's process: its exit status, how long it ran, its log, and whether the run killed it."""

    name: str
    log: Path
    returncode: int | None = None
    seconds: float = 0.0
    killed: bool = False
    seconds_after_kill: float | None = None  # how long this host ran on after another host was killed
    hung: bool = False  # still running after another host ended: it would have waited forever

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def tail(self, lines: int = 12) -> str:
        return "\n".join(self.output().rstrip().splitlines()[-lines:])

    def __str__(self) -> str:
        return f"{self.name}: {'killed' if self.killed else f'exit {self.returncode}'} after {self.seconds:.1f} s"


def free_ports(count: int) -> list[int]:
    """`count` distinct TCP ports free on 127.0.0.1 right now."""
    socks = [socket.create_server(("127.0.0.1", 0)) for _ in range(count)]  # all open at once: distinct
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def tf_config(ports: Sequence[int], index: int) -> str:
    """``TF_CONFIG`` for worker `index` of a cluster on 127.0.0.1 (worker 0 is the chief)."""
    return json.dumps({"cluster": {"worker": [f"127.0.0.1:{p}" for p in ports]},
                       "task": {"type": "worker", "index": index}})


def torchrun_command(node_rank: int, nnodes: int, port: int, module: str, args: Sequence[str] = (), *,
                     nproc_per_node: int = 1) -> list[str]:
    """One host's ``torchrun`` command in the PyTorch environment: static rendezvous at 127.0.0.1:`port`."""
    return [framework_python("torch"), "-m", "torch.distributed.run", f"--nnodes={nnodes}", f"--node-rank={node_rank}",
            f"--nproc-per-node={nproc_per_node}", "--master-addr=127.0.0.1", f"--master-port={port}",
            "--max-restarts=0", "--module", module, *args]


def child_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without `_CLEARED`, unbuffered, one OpenMP thread, then `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED}
    env.update(PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", TF_CPP_MIN_LOG_LEVEL="2")
    env.update(extra or {})
    return env


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL a host's group and all its descendants (torchrun starts its workers in sessions of their own)."""
    parents = {}
    for entry in Path("/proc").glob("[0-9]*/stat"):  # Linux; elsewhere only the group is killed
        try:
            parents[int(entry.parent.name)] = int(entry.read_text().rsplit(")", 1)[1].split()[1])
        except OSError:  # the process ended meanwhile
            continue
    pids = [proc.pid]
    for pid in pids:  # the list grows as the loop runs: every descendant
        pids += [p for p, parent in parents.items() if parent == pid]
    for pid, kill in [(proc.pid, os.killpg)] + [(pid, os.kill) for pid in pids[1:]]:
        with contextlib.suppress(ProcessLookupError):
            kill(pid, signal.SIGKILL)


def run_hosts(commands: Sequence[Sequence[str]], envs: Sequence[Mapping[str, str]], *, log_dir: str | os.PathLike,
              timeout_s: float, kill: KillPlan | None = None, after_kill_s: float = 90.0) -> list[HostRun]:
    """One process group per host; after a kill or failure the others get `after_kill_s`, then are marked ``hung``."""
    log_dir = Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    runs = [HostRun(f"host {i}", log_dir / f"host-{i}.log") for i in range(len(commands))]
    procs: list[subprocess.Popen] = []
    start = time.monotonic()
    ended_at: float | None = None  # when a host was killed, or first failed by itself
    pattern = re.compile(kill.after) if kill else None
    try:
        for run, command, env in zip(runs, commands, envs):
            with open(run.log, "wb") as log:
                procs.append(subprocess.Popen(list(command), env=dict(env), stdout=log, stderr=subprocess.STDOUT,
                                              stdin=subprocess.DEVNULL, start_new_session=True))
        while True:
            now = time.monotonic()
            for run, proc in zip(runs, procs):
                if run.returncode is None and not run.killed and proc.poll() is not None:
                    run.returncode, run.seconds = proc.returncode, now - start
                    if ended_at is not None:
                        run.seconds_after_kill = now - ended_at
                    elif proc.returncode != 0:
                        ended_at = now
            if kill and ended_at is None and not runs[kill.host].killed and runs[kill.host].returncode is None \
                    and pattern.search(runs[kill.host if kill.watch is None else kill.watch].output()):
                _kill_group(procs[kill.host])
                procs[kill.host].wait(timeout=30)
                runs[kill.host].killed, runs[kill.host].seconds = True, now - start
                ended_at = now
            running = [i for i, r in enumerate(runs) if r.returncode is None and not r.killed]
            if not running:
                return runs
            if now - start > timeout_s:
                raise RuntimeError(f"the hosts did not finish within {timeout_s:.0f} s (still running: "
                                   f"{', '.join(runs[i].name for i in running)}); every host was killed.\n"
                                   + "\n".join(f"--- {r.name}, last lines:\n{r.tail()}" for r in runs))
            if ended_at is not None and now - ended_at > after_kill_s:
                for i in running:  # a survivor that would wait forever: stopped, and reported as such
                    _kill_group(procs[i])
                    runs[i].seconds, runs[i].seconds_after_kill = now - start, now - ended_at
                    runs[i].hung = True
                return runs
            time.sleep(0.2)
    finally:
        for proc in procs:
            if proc.poll() is None:
                _kill_group(proc)
                proc.wait(timeout=30)
