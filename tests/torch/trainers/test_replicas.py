"""`tpu_helpers.trainers.replicas`: notebook 07's multi-replica path off a TPU (``REPLICAS=N``), Lightning's CPU DDP
(``strategy="ddp_notebook"``, forked processes, gloo) fed by the course's bucketed batches.

The host-side tests check the sharding, the plan comparison and the gather's reordering. The DDP scenarios fork 2
processes and train the notebook's own ``IntentClassifier`` (its cell tagged ``lightning-module``) on a tiny BERT,
then run the notebook's own cell of replica claims (tagged ``replica-claims``) on what the processes wrote; a
planted replica-divergent sampler (one batch more on replica 1) must stop the run before its first step, naming
the replica, instead of hanging in an all-reduce; without the check, the same bug stops only at gloo's timeout.
They run in a fresh Python process (see the end of the file: a process that has trained on XLA cannot fork
replicas that run backward). On the 2-core reference machine, shared with other jobs: that process about 14 s
(7 s of imports; the 2-process training run 0.9 s, the planted divergence 0.2 s, the timeout contrast 5.5 s),
the whole file about 20 s.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("lightning")
torch = pytest.importorskip("torch")

from tpu_helpers.banking77.lesson_cells import BucketBatchSampler  # noqa: E402
from tpu_helpers.banking77.replicas import ReplicaMismatchError, batch_plan, plan_problems  # noqa: E402
from tpu_helpers.core.claims import Claims  # noqa: E402
from tpu_helpers.trainers.lesson_cells import ReplicaShard, interleave, replica_rank  # noqa: E402
from tpu_helpers.trainers.replicas import check_fork_safe  # noqa: E402

NOTEBOOK = Path(__file__).resolve().parents[3] / "notebooks" / "07_trainers_lightning_hf.ipynb"
LENGTHS = [3, 5, 7, 9, 12, 15, 16, 6, 8, 14, 2, 11, 13, 4, 10, 16, 9, 7, 5, 3] * 5  # 100 queries


def notebook_cell(tag: str) -> str:
    import nbformat

    cells = [c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells
             if tag in c.get("metadata", {}).get("tags", [])]
    assert len(cells) == 1, f"{NOTEBOOK.name}: one cell tagged {tag!r}, found {len(cells)}"
    return cells[0]


def run_cell(tag: str, namespace: dict) -> dict:
    exec(compile(notebook_cell(tag), f"{NOTEBOOK.name}:{tag}", "exec"), namespace)
    return namespace


# --- host side ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("replicas", [1, 2, 4])
@pytest.mark.parametrize("shuffle", [True, False])
def test_each_replica_takes_every_nth_batch_and_together_they_are_the_plan(replicas, shuffle, monkeypatch):
    from tpu_helpers.trainers import lesson_cells as module

    sampler = BucketBatchSampler(LENGTHS, 4, (8, 16), num_replicas=replicas, shuffle=shuffle, seed=3)
    sampler.set_epoch(2)
    shards, got = [ReplicaShard(sampler, replicas) for _ in range(replicas)], []
    for r, shard in enumerate(shards):  # each replica's process reads its own rank
        monkeypatch.setattr(module, "replica_rank", lambda: r)
        got.append(list(shard))
    plan = sampler.plan(2)
    assert [len(g) for g in got] == [len(plan)] * replicas == [len(s) for s in shards]
    for k, step in enumerate(plan):  # every replica: the same shape at step k, its own piece of the global batch
        assert {(len(g[k]), g[k][0][1]) for g in got} == {(4, step.padded_length)}
    indices = torch.tensor([[i for b in g for i, _ in b] for g in got])
    assert interleave(indices, 4).tolist() == [int(i) for s in plan for i in s.indices]
    assert shards[-1].yielded == got[-1]


def test_the_rank_is_read_in_the_iterating_process_and_set_epoch_reaches_the_sampler():
    sampler = BucketBatchSampler(LENGTHS, 4, (8, 16), num_replicas=2, seed=0)
    shard = ReplicaShard(sampler, 2)
    assert replica_rank() == 0 and len(shard) == len(sampler) // 2  # no process group: rank 0
    shard.set_epoch(5)
    assert sampler.epoch == 5


def test_bad_shards_are_clear_errors():
    sampler = BucketBatchSampler(LENGTHS, 4, (8, 16), num_replicas=2)
    with pytest.raises(ValueError, match="build it with num_replicas=4"):
        ReplicaShard(sampler, 4)
    odd = [[(0, 8)], [(1, 8)], [(2, 8)]]  # three batches for two replicas
    with pytest.raises(ValueError, match="3 batches are not a multiple of 2 replicas"):
        list(ReplicaShard(odd, 2))


def test_plan_problems_name_the_replica_with_a_step_more_or_another_shape():
    same = [(4, 8), (4, 16)]
    assert plan_problems([same, list(same), list(same)]) == []
    (more,) = plan_problems([same, same + [(4, 8)]])
    assert "replica 1 plans 3 steps, replica 0 plans 2" in more and "replica 1 would wait forever" in more
    (fewer,) = plan_problems([same, same, same[:1]])
    assert "replica 2 plans 1 steps" in fewer and "replica 0 would wait forever" in fewer
    (shape,) = plan_problems([same, [(4, 8), (4, 8)]])
    assert "replica 1 has another batch shape" in shape and "step 1: (4, 8) vs (4, 16)" in shape
    assert batch_plan([[(0, 8), (1, 8)], [5, 6, 7]]) == [(2, 8), (3, 0)]
    with pytest.raises(ReplicaMismatchError, match="several padded lengths"):
        batch_plan([[(0, 8), (1, 16)]])


def test_interleave_is_the_inverse_of_the_sharding_and_refuses_partial_batches():
    gathered = torch.tensor([[0, 1, 4, 5], [2, 3, 6, 7]])  # replica 0: steps 0 and 1, rows of 2
    assert interleave(gathered, 2).tolist() == list(range(8))
    with pytest.raises(RuntimeError, match="invalid for input of size 8"):
        interleave(gathered, 3)


def test_a_module_off_the_cpu_is_refused_before_a_fork():
    module = torch.nn.Linear(2, 2)
    check_fork_safe(module)
    module.register_buffer("elsewhere", torch.empty(1, device="meta"))
    with pytest.raises(RuntimeError, match="on meta: a forked process"):
        check_fork_safe(module)


# --- two forked processes ------------------------------------------------------------------------------------------

REPLICAS, PER_REPLICA, EPOCHS = 2, 8, 2


def make_tiny():
    """Data, loaders and the notebook's module at this file's sizes (a plain function: the fresh process calls it)."""
    from torch.utils.data import DataLoader

    from tpu_helpers.banking77 import dataset, lesson_cells
    from tpu_helpers.banking77.lesson_cells import BucketCollator, BucketedDataset
    from tpu_helpers.shared.boundaries import choose_boundaries

    data = dataset.load_banking77("synthetic", n_train_per_label=4, n_test_per_label=2, seed=7)
    tok = dataset.train_wordpiece_tokenizer(list(data.dataset["train"]["text"]), vocab_size=400)
    enc = lesson_cells.tokenize(data.dataset, tok, 32)
    lengths = {s: [len(x) for x in enc[s]["input_ids"]] for s in ("train", "test")}
    bounds = choose_boundaries(lengths["train"], 32, max_buckets=2)
    from tpu_helpers.trainers.lesson_cells import IntentClassifier  # the notebook's cell tagged lightning-module

    def loader(split, batch_sampler):
        return DataLoader(BucketedDataset(enc[split]), batch_sampler=batch_sampler, collate_fn=BucketCollator(tok))

    def module(seed=0):
        model = dataset.make_model("tiny", data, vocab_size=len(tok), max_length=32, hidden_size=32, layers=1,
                                   seed=seed)
        return IntentClassifier(model, 3e-3)

    return dict(lengths=lengths, bounds=tuple(sorted(set(bounds) | {32})), loader=loader, module=module)


def ddp_trainer(log_folder, check=True, strategy="ddp_notebook"):
    """The notebook's DDP Trainer call (section 2, REPLICAS>1), at this file's sizes."""
    import lightning.pytorch as L

    from tpu_helpers.trainers.replicas import ReplicaLog, SamePlanOnEveryReplica

    log = ReplicaLog(log_folder)
    trainer = L.Trainer(accelerator="cpu", devices=REPLICAS, strategy=strategy, max_epochs=EPOCHS,
                        callbacks=[SamePlanOnEveryReplica(), log] if check else [log], use_distributed_sampler=False,
                        logger=False, enable_checkpointing=False, enable_model_summary=False,
                        enable_progress_bar=False)
    return trainer, log


def fork_ddp(timeout_s: float):
    """``strategy="ddp_notebook"`` (DDP, processes forked) with gloo's timeout shortened from its 30 minutes."""
    import datetime

    from lightning.pytorch.strategies import DDPStrategy

    return DDPStrategy(start_method="fork", timeout=datetime.timedelta(seconds=timeout_s))


class Summary:
    def __init__(self):
        self.records = {}

    def record(self, key, value, *args, **kw):
        self.records[key] = value


def scenario_two_replicas_train_the_notebooks_module_and_the_notebooks_claims_hold(tiny, tmp_path):
    train_sampler = BucketBatchSampler(tiny["lengths"]["train"], PER_REPLICA, tiny["bounds"], num_replicas=REPLICAS,
                                       seed=11)
    test_sampler = BucketBatchSampler(tiny["lengths"]["test"], 2 * PER_REPLICA, tiny["bounds"],
                                      num_replicas=REPLICAS, shuffle=False)
    module = tiny["module"]()
    check_fork_safe(module)
    trainer, log = ddp_trainer(tmp_path / "log")
    start = time.perf_counter()
    trainer.fit(module, tiny["loader"]("train", ReplicaShard(train_sampler, REPLICAS)))
    trainer.test(module, tiny["loader"]("test", ReplicaShard(test_sampler, REPLICAS)), verbose=False)
    seconds = time.perf_counter() - start
    assert train_sampler.epoch == 0, "the epochs moved on in the forked processes, not here"

    summary = Summary()
    run_cell("replica-claims", {"replicas": REPLICAS, "replica_log": log, "epochs": EPOCHS, "module": module,
                                "train_sampler": train_sampler, "per_replica": PER_REPLICA, "torch": torch,
                                "interleave": interleave, "summary": summary, "Claims": Claims})
    assert summary.records["replicas' steps per epoch"] == len(train_sampler.plan(0)) > 1
    runs = log.read("train")
    assert runs[0]["indices"][0] != runs[0]["indices"][1], "each epoch new batches (set_epoch in the processes)"
    assert "train_loss" in trainer.callback_metrics, "Lightning brought the logged metrics back"

    evals = log.read("test")
    plan = test_sampler.plan(0)
    assert all(torch.equal(r["gathered"], torch.stack([e["predictions"] for e in evals])) for r in evals)
    order = interleave(torch.tensor([r["indices"] for r in evals]), 2 * PER_REPLICA).tolist()
    assert order == [int(i) for b in plan for i in b.indices]
    real = [int(i) for b in plan for i in b.indices[:b.real_rows]]
    assert sorted(real) == list(range(len(tiny["lengths"]["test"]))), "every test row exactly once"
    assert seconds < 120, f"the two DDP runs took {seconds:.0f} s"


class OneBatchMoreOnReplica1(ReplicaShard):
    """A planted replica-divergent bug: replica 1's share has one batch more than the others' (its ``len`` too:
    Lightning takes ``len(loader)`` batches per epoch)."""

    def __iter__(self):
        batches = list(super().__iter__())
        return iter(batches + batches[:1] if replica_rank() == 1 else batches)

    def __len__(self):
        return super().__len__() + (replica_rank() == 1)


def scenario_a_replica_with_one_batch_more_stops_the_run_before_its_first_step_naming_it(tiny, tmp_path):
    sampler = BucketBatchSampler(tiny["lengths"]["train"], PER_REPLICA, tiny["bounds"], num_replicas=REPLICAS)
    steps = len(sampler.plan(0))
    # the notebook's "ddp_notebook" with a 20 s gloo timeout (not 30 min), so that a broken check fails, not hangs
    trainer, log = ddp_trainer(tmp_path / "log", strategy=fork_ddp(20))
    start = time.perf_counter()
    with pytest.raises(Exception, match=f"replica 1 plans {steps + 1} steps, replica 0 plans {steps}: replica 1 "
                                        "would wait forever") as info:
        trainer.fit(tiny["module"](), tiny["loader"]("train", OneBatchMoreOnReplica1(sampler, REPLICAS)))
    assert time.perf_counter() - start < 60, "it failed fast, not at gloo's 30-minute timeout"
    assert "ReplicaMismatchError" in str(info.value)
    assert not list((tmp_path / "log").glob("train-rank*.pt")), "no process trained"



def scenario_without_the_check_the_same_bug_stops_only_at_gloos_timeout_naming_no_replica(tiny, tmp_path):
    """Why the check: replica 1's extra step waits in DDP's collectives for a partner that has finished its epoch.
    Only gloo's timeout ends that (30 minutes by default; 5 s here), and its message names no replica."""
    sampler = BucketBatchSampler(tiny["lengths"]["train"], PER_REPLICA, tiny["bounds"], num_replicas=REPLICAS)
    trainer, log = ddp_trainer(tmp_path / "log", check=False, strategy=fork_ddp(5))
    start = time.perf_counter()
    # the replica whose wait timed out, or the other one, whose peer then closed the connection: whichever exits first
    with pytest.raises(Exception, match="(?i)timed out|timeout|connection closed by peer") as info:
        trainer.fit(tiny["module"](), tiny["loader"]("train", OneBatchMoreOnReplica1(sampler, REPLICAS)))
    assert 5 <= time.perf_counter() - start < 60
    assert "ReplicaMismatchError" not in str(info.value)


# --- the forked runs, in a fresh process -----------------------------------------------------------------------------
# A forked process cannot run backward once its parent's autograd engine has started device threads (any backward on
# the XLA device does): PyTorch stops it with "Unable to handle autograd's threading in combination with fork-based
# multiprocessing". This pytest process trains on XLA:CPU in other tests, so the DDP scenarios above run in a fresh
# Python process (this file, run by runpy), which forks the replicas; each scenario reports "ok" or its traceback.

SCENARIOS = [name for name in dir() if name.startswith("scenario_") and callable(globals()[name])]


def run_scenarios(folder: str) -> None:
    import json
    import traceback

    tiny, results = make_tiny(), {}
    for name in SCENARIOS:
        start = time.perf_counter()
        try:
            globals()[name](tiny, Path(folder) / name)
            results[name] = "ok"
        except BaseException:  # noqa: BLE001 - reported to the test that asked
            results[name] = traceback.format_exc()
        results[name + ":seconds"] = round(time.perf_counter() - start, 2)
    (Path(folder) / "results.json").write_text(json.dumps(results))


@pytest.fixture(scope="module")
def scenario_results(tmp_path_factory):
    import json
    import os
    import subprocess
    import sys

    folder = tmp_path_factory.mktemp("ddp")
    code = f"import runpy, sys; runpy.run_path({str(Path(__file__))!r})['run_scenarios'](sys.argv[1])"
    env = {**os.environ, "PJRT_DEVICE": "CPU"}
    done = subprocess.run([sys.executable, "-c", code, str(folder)], env=env, capture_output=True, text=True,
                          timeout=300)
    results = folder / "results.json"
    assert done.returncode == 0 and results.exists(), f"the fresh process failed:\n{done.stdout[-3000:]}\n" \
                                                      f"{done.stderr[-5000:]}"
    return json.loads(results.read_text())


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_forked_replicas(scenario, scenario_results):
    assert scenario_results[scenario] == "ok", f"{scenario} failed in the fresh process:\n{scenario_results[scenario]}"


def test_shard_loader_keeps_dataset_and_collate_and_gives_each_rank_its_batches():
    from torch.utils.data import DataLoader

    from tpu_helpers.trainers.lesson_cells import shard_loader

    sampler = BucketBatchSampler(LENGTHS, 4, (8, 16), num_replicas=2, seed=1)
    class Rows:  # what BucketedDataset does: the sampler yields (index, padded length)
        def __len__(self):
            return len(LENGTHS)

        def __getitem__(self, item):
            return item[0]

    loader = DataLoader(Rows(), batch_sampler=sampler, collate_fn=lambda rows: rows)
    sharded = shard_loader(loader, 2)
    assert sharded.dataset is loader.dataset and sharded.collate_fn is loader.collate_fn
    assert isinstance(sharded.batch_sampler, ReplicaShard) and sharded.batch_sampler.batch_sampler is sampler
    assert [len(b) for b in sharded] == [4] * len(sampler.plan(0))
    with pytest.raises(ValueError, match="num_replicas=4"):
        shard_loader(loader, 4)


def test_the_layout_takes_every_tpu_device_and_splits_the_cpu_rehearsals_batch():
    from tpu_helpers.trainers.replicas import plan_replicas

    v5e8 = plan_replicas(True, 1, 32, tpu_devices=lambda: 8)  # REPLICAS is ignored on a TPU
    assert (v5e8.kind, v5e8.devices, v5e8.per_replica, v5e8.global_batch) == ("tpu", 8, 32, 256)
    assert v5e8.trainer_kwargs("tpu") == {"accelerator": "tpu", "devices": 8}  # Lightning's XLAStrategy
    v5e1 = plan_replicas(True, 4, 32, tpu_devices=lambda: 1)
    assert (v5e1.kind, v5e1.devices, v5e1.global_batch) == ("xla", 1, 32)
    ddp = plan_replicas(False, 4, 32, tpu_devices=lambda: pytest.fail("no TPU to ask"))
    assert (ddp.kind, ddp.per_replica, ddp.global_batch) == ("cpu-ddp", 8, 32)
    assert ddp.trainer_kwargs("tpu") == {"accelerator": "cpu", "devices": 4, "strategy": "ddp_notebook"}
    with pytest.raises(ValueError, match="divide the global batch 32"):
        plan_replicas(False, 3, 32, tpu_devices=lambda: 8)


def test_a_replica_spawned_by_torch_xla_reads_its_rank_from_torch_xla(monkeypatch):
    monkeypatch.delenv("PJRT_LOCAL_PROCESS_RANK", raising=False)
    assert replica_rank() == 0  # the kernel: no process group, not spawned by torch_xla
    monkeypatch.setenv("PJRT_LOCAL_PROCESS_RANK", "0")
    xr = pytest.importorskip("torch_xla.runtime")
    monkeypatch.setattr(xr, "global_ordinal", lambda: 5)
    assert replica_rank() == 5
