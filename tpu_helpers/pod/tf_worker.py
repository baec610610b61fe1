"""Notebook 08's TensorFlow script: notebook 04's masked LM on several hosts; the chief keeps checkpoint and log."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from collections import Counter
from typing import Any, Sequence

from tpu_helpers.core import digests
from tpu_helpers.core.files import write_json_atomic
from tpu_helpers.core.frameworks import import_tensorflow, use_framework
from tpu_helpers.pod.hosts import lost_host
from tpu_helpers.pod.lesson_cells import make_dataset_fn, make_strategy, make_train_step  # notebook 08's cell


def tf_weights_digest(variables: Sequence[Any]) -> int:
    """`core.digests.weights_digest` of TF variables, names without Keras's numbered top scope."""
    return digests.weights_digest((v.name.split("/", 1)[-1], v.numpy()) for v in variables)


def build_model(job: dict[str, Any], seed: int):
    """The job's RoBERTa masked LM from its config, built (variables created) with `seed`."""
    import tf_keras as keras
    from transformers import RobertaConfig, TFAutoModelForMaskedLM

    keras.utils.set_random_seed(seed)
    model = TFAutoModelForMaskedLM.from_config(RobertaConfig.from_dict(job["model_config"]))
    model(model.dummy_inputs, training=False)
    return model


def train(job: dict[str, Any], strategy, *, steps: int, report_dir: str | None) -> dict:
    """Train `steps` global steps and return this host's evidence (off a TPU with the shard of every example)."""
    tf = import_tensorflow()
    import tf_keras as keras

    from tpu_helpers.mlm.lesson_cells import shard_files  # notebook 04's cell: complete, the job's block size

    resolver = strategy.cluster_resolver
    task = int(resolver.task_id or 0) if resolver is not None and resolver.task_type else 0
    chief = task == 0
    with_source = not isinstance(strategy, tf.distribute.TPUStrategy)  # TPUs take no string tensors
    files = shard_files(job["shards"], int(job["block_size"]))[0]
    contexts: list[dict] = []

    def dataset_fn(ctx):  # what TensorFlow tells each input pipeline, kept as evidence
        contexts.append({"input_pipeline_id": ctx.input_pipeline_id, "num_input_pipelines": ctx.num_input_pipelines,
                         "per_replica_batch": ctx.get_per_replica_batch_size(int(job["global_batch"]))})
        return make_dataset_fn(job, files, with_source=with_source)(ctx)

    dist = strategy.distribute_datasets_from_function(dataset_fn)
    with strategy.scope():
        model = build_model(job, int(job["seed"]))
        optimizer = keras.optimizers.Adam(float(job["learning_rate"]))
    train_step = make_train_step(strategy, model, optimizer, int(job["global_batch"]), with_source=with_source)
    iterator = iter(dist)
    rows_per_step, global_rows, losses, sources = [], [], [], Counter()
    for step in range(1, steps + 1):
        loss, srcs, rows, total = train_step(iterator)
        rows_per_step.append(sum(int(r) for r in strategy.experimental_local_results(rows)))  # this host's rows
        sources.update(name.decode().rsplit("/", 1)[-1] for s in  # the shards they came from (a TPU run: none)
                       (strategy.experimental_local_results(srcs[0]) if srcs else ()) for name in s.numpy().tolist())
        global_rows.append(int(total))
        losses.append(float(loss))
        print(f"host {task}: step {step}/{steps} loss {float(loss):.4f}, {rows_per_step[-1]} rows here, "
              f"{int(total)} in the global batch", flush=True)

    ckpt = tf.train.Checkpoint(model=model, optimizer=optimizer)
    own = None if chief else tempfile.mkdtemp(prefix=f"tpu-course-ckpt-worker{task}-")
    saved = ckpt.write(f"{job['checkpoint_dir']}/ckpt" if chief else os.path.join(own, "ckpt"))
    if own:
        shutil.rmtree(own)  # its own folder: only the chief's checkpoint is kept
    log_path = job.get("log") if chief else None
    if log_path:  # one writer for the run's log too: the chief, next to the checkpoint in gs://
        tmp = f"{log_path}.partial-{os.getpid()}"
        with tf.io.gfile.GFile(tmp, "w") as f:
            f.write(json.dumps({"losses": losses, "global_rows_per_step": global_rows}))
        tf.io.gfile.rename(tmp, log_path, overwrite=True)  # whole or absent (on GCS: a copy, then a delete)
    report = {"task": task, "chief": chief, "input_contexts": contexts, "rows_per_step": rows_per_step,
              "replicas_in_sync": strategy.num_replicas_in_sync, "local_replicas": len(strategy.extended.worker_devices),
              "global_rows_per_step": global_rows, "losses": losses, "sources": sources,
              "weights_digest": tf_weights_digest(model.variables), "checkpoint": saved if chief else None, "log": log_path,
              "discarded_checkpoint": None if chief else saved}
    if report_dir:
        write_json_atomic(os.path.join(report_dir, f"host-{task}.json"), report)
    return report


def restore_digest(job: dict[str, Any], checkpoint: str) -> int:
    """Build the model afresh (no strategy), restore `checkpoint` into it, return its `weights_digest`."""
    model = build_model(job, int(job["seed"]) + 1)  # other initial weights: only the restore can match
    import_tensorflow().train.Checkpoint(model=model).read(checkpoint).expect_partial().assert_existing_objects_matched()
    return tf_weights_digest(model.variables)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tpu_helpers.pod.tf_worker", description=__doc__)
    parser.add_argument("--job", required=True, help="job.json written by notebook 08 (gs:// or local)")
    parser.add_argument("--tpu", help="a TPU slice's name: TPUClusterResolver finds its hosts (omit: TF_CONFIG)")
    parser.add_argument("--report", help="a local folder for this host's evidence (host-<task>.json)")
    parser.add_argument("--steps", type=int, help="global steps (default: the job's)")
    parser.add_argument("--collective-timeout", type=float, default=120.0,
                        help="seconds an all-reduce may wait for the other hosts before it fails")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    use_framework("tf")  # before transformers is imported
    tf = import_tensorflow()
    with tf.io.gfile.GFile(args.job) as f:  # the job notebook 08 wrote next to the data
        job = json.loads(f.read())
    strategy = make_strategy(args.tpu, args.collective_timeout)
    try:
        train(job, strategy, steps=args.steps or int(job["steps"]), report_dir=args.report)
    except (tf.errors.UnavailableError, tf.errors.DeadlineExceededError, tf.errors.CancelledError,
            tf.errors.InternalError, tf.errors.AbortedError) as error:
        return lost_host(f"TensorFlow worker (pid {os.getpid()})", error)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
