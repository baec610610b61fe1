"""Notebook 04 on 8 simulated replicas: CI runs its distributed training every time.

The notebooks group of the suite runs notebook 04 with its default, one replica (``jit_compile=True``). Here the same
notebook runs with ``REPLICAS = 8`` at the ``ci`` profile, copied alone into an empty folder as the notebooks group
does, in a kernel of its own (logical CPU devices can be set only before TensorFlow initialises them, so not in this
test process): ``make_strategy`` splits the CPU into 8 devices under a ``MirroredStrategy``, ``fit`` trains on them,
and the notebook's own cells assert the multi-replica claims (per-replica batch shapes at every step of an epoch, the
global batch, the steps per epoch, identical replica copies of every variable, the checkpoint restoring every copy).
At 8 replicas the notebook takes about twice its one-replica time on the 2-core reference machine (two traces of the
replicated step), which is why the ci profile keeps one replica and this test runs the eight.
"""
from course_testing import ROOT, run_notebook_alone

NOTEBOOK = ROOT / "notebooks" / "04_mlm_from_scratch_tensorflow.ipynb"


def test_notebook_04_trains_on_8_simulated_replicas(tmp_path, monkeypatch):
    recorded = run_notebook_alone(NOTEBOOK, tmp_path, monkeypatch, profile="ci", parameters={"REPLICAS": 8})
    assert recorded["replicas"] == 8, recorded  # TensorFlow's num_replicas_in_sync, through check_replicas
    assert " x 8 x (8, 32)" in recorded["replicas' batches"], recorded  # 64 blocks a step: 8 on each replica
