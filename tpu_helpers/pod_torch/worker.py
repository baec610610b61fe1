"""Notebook 08's PyTorch script: notebook 05's training function, unchanged, on every host of a slice."""
from __future__ import annotations

import argparse
import json
import os
from typing import Sequence

from tpu_helpers.core.files import write_json_atomic
from tpu_helpers.core.frameworks import use_framework
from tpu_helpers.pod.hosts import lost_host  # one exit status for a lost host, both frameworks


def build(seed: int, per_label: int, max_length: int | None, tokenizer_dir: str | None = None):
    """The data, the tokenizer (`prepare`'s, or trained) and, with `max_length`, the encoded splits and the model."""
    from tpu_helpers.banking77 import dataset

    data = dataset.load_banking77("synthetic", n_train_per_label=per_label, n_test_per_label=1, seed=seed)
    if tokenizer_dir:  # every host loads prepare's: WordPiece training breaks ties differently per run
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    else:
        tokenizer = dataset.load_tokenizer("tiny", data.dataset["train"]["text"], vocab_size=300)
    if max_length is None:
        return data, tokenizer, None, None
    from tpu_helpers.banking77.lesson_cells import tokenize  # imports accelerate: after the environment

    encoded = tokenize(data.dataset, tokenizer, max_length)
    model = dataset.make_model("tiny", data, vocab_size=len(tokenizer), max_length=max_length, hidden_size=32,
                               seed=seed)
    return data, tokenizer, encoded, model


def prepare(folder: str, seed: int, per_label: int) -> str:
    """Train the tokenizer once, before the hosts start, and save it to `folder` (returned)."""
    tmp = f"{folder.rstrip('/')}.partial-{os.getpid()}"
    build(seed, per_label, None)[1].save_pretrained(tmp)
    os.replace(tmp, folder)
    return folder


def restore(folder: str) -> dict:
    """Load a saved model in this (fresh) process: its digest and parameter count."""
    from transformers import AutoModelForSequenceClassification

    from tpu_helpers.banking77.replicas import torch_weights_digest

    model = AutoModelForSequenceClassification.from_pretrained(folder)
    return {"weights_digest": torch_weights_digest(model), "parameters": sum(p.numel() for p in model.parameters())}


def train_and_save(model, train_ds, eval_ds, config, tokenizer, save: str | None, report: str | None, log) -> None:
    """Notebook 05's `training_function` unchanged; the job's main process saves; every process reports."""
    import torch.distributed as dist
    from accelerate import PartialState

    from tpu_helpers.banking77.lesson_cells import training_function
    from tpu_helpers.banking77.replicas import torch_weights_digest

    training_function(model, train_ds, eval_ds, config, tokenizer, log)  # log: RunLog, the report notebook 08 reads
    state = PartialState()
    saved = None
    if state.is_main_process and save:  # one process of one host writes the model
        tmp = f"{save.rstrip('/')}.partial-{os.getpid()}"
        model.to("cpu").save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        os.replace(tmp, save)
        saved = save
    state.wait_for_everyone()
    if report:
        write_json_atomic(os.path.join(report, f"rank-{state.process_index}.json"), {
            "rank": state.process_index, "world_size": state.num_processes, "pid": os.getpid(),
            "node_rank": int(os.environ.get("GROUP_RANK", 0)), "local_world_size": int(os.environ.get("LOCAL_WORLD_SIZE", 1)),
            "is_main_process": state.is_main_process, "saved": saved, "weights_digest": torch_weights_digest(model),
            "distributed_type": str(state.distributed_type.value),
            "backend": dist.get_backend() if dist.is_initialized() else None})


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tpu_helpers.pod_torch.worker", description=__doc__)
    parser.add_argument("--save", help="where the main process saves the final model (a folder)")
    parser.add_argument("--report", help="a local folder for each process's evidence (rank-<R>.json, report.json)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=8, help="per process (replica)")
    parser.add_argument("--per-label", type=int, default=4, help="synthetic training queries per intent")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds a replica waits for the others")
    parser.add_argument("--tokenizer", help="the tokenizer folder --prepare wrote (every process loads the same one)")
    parser.add_argument("--prepare", help="train the tokenizer once, save it to this folder, and exit")
    parser.add_argument("--restore", help="load the model saved in this folder, print its digest, and exit")
    args = parser.parse_args(argv)
    from tpu_helpers.core.runtime import detect_runtime

    on_tpu = detect_runtime().is_tpu
    if not on_tpu:  # the CPU path: USE_TORCH_XLA=0 (before accelerate is imported), gloo, one thread
        os.environ.setdefault("USE_TORCH_XLA", "0")
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        use_framework("torch")
        import torch

        torch.set_num_threads(1)
    if args.restore:
        print(json.dumps(restore(args.restore)))
        return 0
    if args.prepare:
        print(f"tokenizer saved to {prepare(args.prepare, args.seed, args.per_label)}")
        return 0
    from datetime import timedelta
    from functools import partial

    import torch.distributed as dist

    from tpu_helpers.banking77.lesson_cells import TrainConfig
    from tpu_helpers.banking77.replicas import ReplicaMismatchError
    from tpu_helpers.banking77.run_log import RunLog
    from tpu_helpers.shared.boundaries import choose_boundaries

    max_length = 32
    data, tokenizer, encoded, model = build(args.seed, args.per_label, max_length, args.tokenizer)
    bounds = choose_boundaries([len(x) for x in encoded["train"]["input_ids"]], max_length)
    config = TrainConfig(epochs=args.epochs, batch_size=args.batch_size, eval_batch_size=2 * args.batch_size,
                         learning_rate=2e-3, padding="buckets", boundaries=bounds, max_length=max_length,
                         seed=args.seed, mixed_precision="bf16" if on_tpu else "no")
    log = partial(RunLog, timeout_s=args.timeout,
                  report_path=os.path.join(args.report, "report.json") if args.report else None)
    fn_args = (model, encoded["train"], encoded["test"], config, tokenizer, args.save, args.report, log)
    try:
        if on_tpu:  # a TPU VM worker: notebook 05's own launch cell, torch_xla.launch: a process per chip
            from tpu_helpers.banking77 import launch

            plan = launch.plan_launch()
            launch.prepare_environment(plan)
            launch.launch_checked(train_and_save, fn_args, plan)
        else:  # this process is one of torchrun's: the process group with a timeout on its collectives, then train
            if "WORLD_SIZE" in os.environ and not dist.is_initialized():
                dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
            train_and_save(*fn_args)
    except (RuntimeError, ReplicaMismatchError) as error:  # gloo: "Connection closed by peer", a timeout, a rank
        # that never came; or a replica missing at RunLog's monitored barrier (a dead host)
        return lost_host(f"process {os.environ.get('RANK', '?')} (host {os.environ.get('GROUP_RANK', '?')})", error)
    if dist.is_initialized():
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
