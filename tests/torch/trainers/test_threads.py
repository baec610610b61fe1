"""A TPU v2/v3 runs one process per chip and one thread per TensorCore; MpDeviceLoader reads batches in a thread of
its own, where torch_xla's per-thread ordinal is not the replica's (issue 49). Rehearsed with two XLA:CPU devices in
one process and torch_xla's own thread-per-device runner (``threads_run.py``, a process of its own): notebook 07's
ReplicaShard refuses such a process with a clear message, and notebook 05's sampler, sharded by Accelerate with the
ordinal read in the replica's thread, gives each thread its own half of every global batch."""
from pathlib import Path

import pytest
from course_testing import run_json_script

pytest.importorskip("torch_xla")
pytest.importorskip("lightning")
SCRIPT = Path(__file__).with_name("threads_run.py")


def test_two_threads_per_process_refused_by_07_and_sharded_by_thread_in_05(monkeypatch):
    for name, value in {"PJRT_DEVICE": "CPU", "CPU_NUM_DEVICES": "2", "PJRT_LOCAL_PROCESS_RANK": "0"}.items():
        monkeypatch.setenv(name, value)
    threads = run_json_script(SCRIPT, drop=("XLA_NO_SPECIAL_SCALARS",))
    assert [t["ordinal"] for t in threads] == [0, 1] and {t["devices"] for t in threads} == {2}, threads
    # the hazard: in a loader thread both replicas read one ordinal, so a rank read there picks one shard for both
    assert len({t["loader_thread_ordinal"] for t in threads}) == 1, threads
    for t in threads:  # notebook 07: a clear refusal, with the way out
        assert "drives 2 TPU devices" in t["refusal"] and "TPU_DEVICES = 1" in t["refusal"], t["refusal"]
    first, second = (t["rows_05"] for t in threads)  # notebook 05: each thread its own half, nothing twice
    assert first and second and not set(first) & set(second), threads
    assert sorted(first + second) == sorted(set(first + second)) and len(first) == len(second)
