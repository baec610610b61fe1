"""Notebook 08's helpers: which shards a host reads, the local hosts launcher (limits, a host
killed mid-run with the processes it started in sessions of their own), and the exercise checks, which pass on
the reference answers and fail, naming the problem, on typical wrong ones. The two-host rehearsals themselves run
in the notebook (nbval), where their claims are asserted."""
import json
import os
import sys
import time

import pytest
from course_testing import failed, skeleton

from tpu_helpers.pod import exercise_checks as checks
from tpu_helpers.pod import hosts, lesson_cells, solutions
from tpu_helpers.pod.lesson_cells import shards_for_pipeline

PY = sys.executable


# ------------------------------------------------------------------------------------------ commands and shards
def test_commands_name_every_worker_and_the_delete():
    assert "--worker=all --command='a && b'" in lesson_cells.on_every_worker("s", "z", "a && b")
    assert "--worker=0 " in lesson_cells.on_every_worker("s", "z", "x", worker="0")
    assert lesson_cells.delete_commands("s", "z") == ["gcloud compute tpus tpu-vm delete s --zone=z"]
    assert "queued-resources delete q" in lesson_cells.delete_commands("s", "z", "q")[0]
    assert "--node-id=s" in lesson_cells.queued_resource_commands("q", "s", "z", "v4-16", "rt")[0]


@pytest.mark.parametrize("count,pipelines", [(4, 2), (5, 2), (16, 4), (4, 4), (9, 1)])
def test_every_shard_goes_to_exactly_one_pipeline(count, pipelines):
    names = [f"train-{i:05d}-10.tfrecord" for i in range(count)]
    shares = [shards_for_pipeline(names[::-1], p, pipelines) for p in range(pipelines)]  # any listing order
    flat = [s for share in shares for s in share]
    assert sorted(flat) == names and len(set(flat)) == len(flat)
    assert max(map(len, shares)) - min(map(len, shares)) <= 1


def test_fewer_shards_than_pipelines_is_a_clear_error():
    with pytest.raises(ValueError, match="write the data in at least 3 shards"):
        shards_for_pipeline(["a", "b"], 2, 3)


# ------------------------------------------------------------------------------------------ the local hosts
def test_tf_config_and_torchrun_command():
    config = json.loads(hosts.tf_config([1111, 2222], 1))
    assert config == {"cluster": {"worker": ["127.0.0.1:1111", "127.0.0.1:2222"]}, "task": {"type": "worker", "index": 1}}
    cmd = hosts.torchrun_command(1, 2, 29500, "pkg.mod", ["--x", "1"])
    assert cmd[1:3] == ["-m", "torch.distributed.run"] and "--node-rank=1" in cmd and "--nnodes=2" in cmd
    assert "--master-addr=127.0.0.1" in cmd and cmd[-4:] == ["--module", "pkg.mod", "--x", "1"]
    ports = hosts.free_ports(3)
    assert len(set(ports)) == 3


def test_torchrun_runs_in_the_pytorch_environment(monkeypatch):
    monkeypatch.setenv("TPU_COURSE_PYTHON_TORCH", "/envs/torch/bin/python")
    assert hosts.torchrun_command(0, 2, 29500, "pkg.mod")[0] == "/envs/torch/bin/python"


def test_child_environment_clears_what_the_host_decides(monkeypatch):
    for k, v in {"USE_TF": "0", "TF_CONFIG": "{}", "RANK": "3", "PATH": "/x"}.items():
        monkeypatch.setenv(k, v)
    env = hosts.child_environment({"EXTRA": "1"})
    assert env["PATH"] == "/x" and env["EXTRA"] == "1" and env["OMP_NUM_THREADS"] == "1"
    assert not {"USE_TF", "TF_CONFIG", "RANK"} & set(env)


def test_hosts_that_finish(tmp_path):
    env = hosts.child_environment()
    runs = hosts.run_hosts([[PY, "-c", "print('hi')"], [PY, "-c", "import sys; sys.exit(4)"]], [env, env],
                           log_dir=tmp_path, timeout_s=60, after_kill_s=30)
    assert [r.returncode for r in runs] == [0, 4] and "hi" in runs[0].output()


def test_a_run_past_its_limit_is_killed_not_waited_for(tmp_path):
    env = hosts.child_environment()
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="did not finish within 1 s"):
        hosts.run_hosts([[PY, "-c", "import time; time.sleep(60)"]], [env], log_dir=tmp_path, timeout_s=1)
    assert time.monotonic() - start < 20


KILLED_HOST = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
print("child", child.pid, flush=True)
for step in range(1000):
    print(f"step {step}/", flush=True)
    time.sleep(0.1)
"""


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is dead
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_a_killed_host_loses_every_process_and_a_waiting_survivor_is_reported_hung(tmp_path):
    env = hosts.child_environment()
    survivor = [PY, "-c", "import time; time.sleep(120)"]  # waits forever for the lost host, like an all-reduce
    runs = hosts.run_hosts([survivor, [PY, "-c", KILLED_HOST]], [env, env], log_dir=tmp_path, timeout_s=60,
                           kill=hosts.KillPlan(host=1, after=r"step 3/"), after_kill_s=1)
    assert runs[1].killed and runs[0].hung and runs[0].returncode is None
    child = int(runs[1].output().split()[1])  # started in a session of its own, as torchrun starts its workers
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child), "the killed host's worker in its own session was killed too"


def test_a_survivor_that_stops_by_itself(tmp_path):
    env = hosts.child_environment()
    watcher = [PY, "-c", "import sys, time; time.sleep(1.5); print('LOST HOST'); sys.exit(3)"]
    runs = hosts.run_hosts([watcher, [PY, "-c", KILLED_HOST]], [env, env], log_dir=tmp_path, timeout_s=60,
                           kill=hosts.KillPlan(host=1, after=r"step 1/"), after_kill_s=30)
    assert runs[1].killed and runs[0].returncode == 3 and runs[0].seconds_after_kill < 30
    assert not runs[0].hung


# ------------------------------------------------------------------------------------------ the exercises
def test_reference_answers_pass():
    result = checks.check_shards_for_host(solutions.shards_for_host)
    assert result.passed, result.message
    assert checks.check_slice_layout(solutions.slice_layout).passed


def test_skeletons_are_not_attempted():
    assert not checks.check_shards_for_host(skeleton).attempted
    assert not checks.check_slice_layout(skeleton).attempted


def test_unsorted_listing_reads_shards_twice():
    def as_listed(shards, host, hosts):
        if len(shards) < hosts:
            raise ValueError("too few")
        return list(shards)[host::hosts]  # each host's own listing order: the hosts disagree

    assert failed(checks.check_shards_for_host(as_listed), "read by two hosts", "sort the list first")


def test_contiguous_chunks_unbalanced():
    def chunks(shards, host, hosts):
        if len(shards) < hosts:
            raise ValueError("too few")
        size = -(-len(shards) // hosts)
        return sorted(shards)[host * size:(host + 1) * size]

    assert failed(checks.check_shards_for_host(chunks), "differ by at most one")


def test_an_empty_share_instead_of_an_error():
    assert failed(checks.check_shards_for_host(lambda s, h, n: sorted(s)[h::n]), "would wait for data forever")


def test_slice_layout_mistakes():
    def chips_from_name(name):  # "v4-8" read as 8 chips
        chips, workers, replicas = solutions.slice_layout(name)
        return int(name.split("-")[1]), workers, replicas

    assert failed(checks.check_slice_layout(chips_from_name), "chips or TensorCores")

    def v3_one_replica_per_chip(name):
        chips, workers, replicas = solutions.slice_layout(name)
        return chips, workers, chips

    assert failed(checks.check_slice_layout(v3_one_replica_per_chip), "a v3 chip is 2 replicas")

    def accepts_anything(name):
        try:
            return solutions.slice_layout(name)
        except ValueError:
            return 1, 1, 1

    assert failed(checks.check_slice_layout(accepts_anything), "it is not a slice")


def test_tf_worker_without_a_cluster_says_what_is_missing(tmp_path, monkeypatch):
    from tpu_helpers.pod import tf_worker

    job = tmp_path / "job.json"
    job.write_text(json.dumps({"steps": 1}))
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(SystemExit, match="no TF_CONFIG"):
        tf_worker.main(["--job", str(job)])


def test_tf_worker_trains_saves_once_and_restores_in_one_process(tmp_path, tf):
    """The script's training on one local replica (the rehearsal runs it on two hosts): its evidence, one checkpoint
    and its log by the chief, and a restore into a model with other initial weights."""
    import numpy as np

    from tpu_helpers.mlm.lesson_cells import write_shards
    from tpu_helpers.pod import tf_worker

    blocks = np.random.default_rng(0).integers(5, 60, size=(4 * 8, 16)).astype(np.int32)
    write_shards(blocks, str(tmp_path / "shards"), records_per_shard=8, progress=False)
    config = {"vocab_size": 60, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
              "intermediate_size": 32, "max_position_embeddings": 20, "pad_token_id": 1, "bos_token_id": 0,
              "eos_token_id": 2, "type_vocab_size": 1}
    job = {"shards": str(tmp_path / "shards"), "checkpoint_dir": str(tmp_path / "ckpt"), "log": str(tmp_path / "log.json"),
           "block_size": 16, "global_batch": 4, "steps": 3, "learning_rate": 1e-3, "seed": 0, "model_config": config,
           "masking": {"mask_token_id": 4, "vocab_size": 60, "special_ids": [0, 1, 2, 3, 4], "pad_token_id": 1}}
    report = tf_worker.train(job, tf.distribute.MirroredStrategy(["/cpu:0"]), steps=3, report_dir=str(tmp_path))
    assert report["chief"] and report["input_contexts"][0]["num_input_pipelines"] == 1
    assert report["global_rows_per_step"] == [4, 4, 4] and sum(report["sources"].values()) == 12
    assert set(report["sources"]) <= {f"train-{i:05d}-8.tfrecord" for i in range(4)}
    assert json.loads((tmp_path / "log.json").read_text())["losses"] == report["losses"]
    assert len(list((tmp_path / "ckpt").glob("*.index"))) == 1
    assert tf_worker.restore_digest(job, report["checkpoint"]) == report["weights_digest"]
    assert json.loads((tmp_path / "host-0.json").read_text())["weights_digest"] == report["weights_digest"]


def test_tf_worker_step_without_shard_names_returns_no_string_tensor(tmp_path, tf):
    """The TPU path (issue 36, item 6): with with_source=False, what the worker passes under a TPUStrategy, the
    dataset and the step carry no strings (TPUs take none), rehearsed on one CPU replica."""
    import numpy as np
    import tf_keras as keras

    from tpu_helpers.mlm.lesson_cells import write_shards
    from tpu_helpers.pod import tf_worker

    blocks = np.random.default_rng(1).integers(5, 60, size=(2 * 8, 16)).astype(np.int32)
    write_shards(blocks, str(tmp_path / "shards"), records_per_shard=8, progress=False)
    config = {"vocab_size": 60, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
              "intermediate_size": 32, "max_position_embeddings": 20, "pad_token_id": 1, "bos_token_id": 0,
              "eos_token_id": 2, "type_vocab_size": 1}
    job = {"shards": str(tmp_path / "shards"), "block_size": 16, "global_batch": 4, "seed": 0, "model_config": config,
           "masking": {"mask_token_id": 4, "vocab_size": 60, "special_ids": [0, 1, 2, 3, 4], "pad_token_id": 1}}
    files = sorted(str(p) for p in (tmp_path / "shards").glob("*.tfrecord"))
    dataset_fn = lesson_cells.make_dataset_fn(job, files, with_source=False)
    spec = dataset_fn(tf.distribute.InputContext()).element_spec
    assert all(s.dtype != tf.string for s in spec.values()), spec
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        model = tf_worker.build_model(job, 0)
        optimizer = keras.optimizers.Adam(1e-3)
    step = lesson_cells.make_train_step(strategy, model, optimizer, 4, with_source=False)
    iterator = iter(strategy.distribute_datasets_from_function(dataset_fn))
    for _ in range(2):
        loss, sources, _, total = step(iterator)
        assert sources == [] and int(total) == 4 and np.isfinite(float(loss))
