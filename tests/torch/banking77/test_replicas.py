"""Notebook 05's training function with several replicas: N real CPU processes (`accelerate.debug_launcher`, gloo),
as `REPLICAS = N` runs it on a CPU, and replica-divergent bugs planted in replica 1 that must stop the run fast,
naming the replica, instead of hanging it (on a TPU a replica with one step more waits forever in an all-reduce).

Each run is a process of its own (`replicas_run.py`): accelerate must be imported there with USE_TORCH_XLA=0.
"""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tpu_helpers.banking77.run_log import TrainReport

SCRIPT = Path(__file__).with_name("replicas_run.py")


def run(n: int, plant: str, tmp_path, timeout_s: float = 60.0, limit_s: float = 300.0):
    report = tmp_path / f"report-{n}-{plant}.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    for name in ("USE_TORCH_XLA", "PJRT_DEVICE", "CPU_NUM_DEVICES", "XLA_FLAGS"):
        env.pop(name, None)
    start = time.monotonic()
    done = subprocess.run([sys.executable, str(SCRIPT), str(n), plant, str(report), str(timeout_s)], env=env,
                          capture_output=True, text=True, timeout=limit_s)
    return done, time.monotonic() - start, report


@pytest.mark.parametrize("n", [2, 4])
def test_replicas_train_as_one(n, tmp_path):
    done, _, path = run(n, "none", tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    report = TrainReport.load(path)
    assert (report.distributed_type, report.num_processes, report.global_batch_size) == ("MULTI_CPU", n, 8 * n)
    steps = report.replica_steps
    assert len(steps) == n and len({len(s) for s in steps}) == 1 and len(steps[0]) == 2 * report.steps_per_epoch
    for pieces in zip(*steps):  # what each process collated at each step
        assert len({length for _, length in pieces}) == 1 and sum(rows for rows, _ in pieces) == 8 * n
    assert len(report.replica_weights) == n and len(set(report.replica_weights)) == 1
    # the gather: one prediction per test row, in the test set's order (its labels came back with it)
    assert len(report.predictions) == len(report.references) == report.eval_samples == 77


@pytest.mark.parametrize("plant, says", [
    ("extra_batch", "replica 1 plans"),
    ("other_shape", "replica 1 has another batch shape"),
])
def test_a_replica_planning_another_training_stops_the_run_before_its_first_step(plant, says, tmp_path):
    done, seconds, path = run(2, plant, tmp_path)
    assert done.returncode != 0 and not path.exists()
    assert "ReplicaMismatchError" in done.stderr and says in done.stderr, done.stderr[-3000:]
    assert seconds < 120, f"{seconds:.0f} s: the mismatch must stop the run before training"


def test_a_replica_busy_with_one_step_more_is_named_within_the_timeout(tmp_path):
    done, seconds, path = run(2, "extra_batch_unchecked", tmp_path, timeout_s=5.0)
    assert done.returncode != 0 and not path.exists()
    assert "ReplicaMismatchError" in done.stderr and "not every replica reached the end of epoch 1" in done.stderr
    assert "Ranks 1 failed to pass monitoredBarrier" in done.stderr, done.stderr[-3000:]
    assert seconds < 120, f"{seconds:.0f} s: the 5 s timeout must end the run"
