"""Notebook 10's plumbing and measurements: input checks, compilations per step, shards, HLO, replay, reload."""
from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

DUMP_FLAG = "--xla_dump_to="
COLLECTIVES = ("all-gather", "reduce-scatter", "all-reduce", "dynamic-slice")


class LessonInputError(ValueError):
    """A parameter of notebook 10 that cannot work; the message says what to change."""


_MADE: list[str] = []


def dump_compiled_hlo() -> Path:
    """XLA writes each compiled graph's HLO as text into this process's own folder (XLA_FLAGS: before the runtime)."""
    flags = os.environ.get("XLA_FLAGS", "")
    if DUMP_FLAG in flags:  # a rerun in this kernel: the runtime read the flags already
        return Path(flags.split(DUMP_FLAG)[1].split()[0])
    folder = tempfile.mkdtemp(prefix="tpu-course-10-hlo-")
    _MADE.append(folder)
    atexit.register(shutil.rmtree, folder, True)  # again at exit: XLA recreates it at a later compilation
    os.environ["XLA_FLAGS"] = (f"{flags} {DUMP_FLAG}{folder} --xla_dump_hlo_as_text "
                               "--xla_dump_hlo_module_re=SyncTensorsGraph").strip()
    return Path(folder)


def remove_hlo_dumps() -> None:
    """Remove the dump folder `dump_compiled_hlo` made in this process (Python's exit removes it again)."""
    for folder in _MADE:
        shutil.rmtree(folder, ignore_errors=True)


def check_devices(devices: int, replicas: int, is_tpu: bool) -> None:
    """Off a TPU the runtime must have started with REPLICAS devices (it reads CPU_NUM_DEVICES once per process)."""
    if not is_tpu and devices != replicas:
        raise LessonInputError(f"REPLICAS={replicas}, but this kernel's XLA runtime already started with {devices} "
                               "device(s): restart the kernel to change REPLICAS.")


def check_batch(global_batch: int, devices: int, rows: int, steps: int) -> None:
    """The global batch splits evenly over the devices, and there are rows for every step."""
    if global_batch % devices:
        raise LessonInputError(f"the global batch of {global_batch} rows does not split over {devices} devices: "
                               f"set REPLICAS to a divisor of {global_batch} (1, 2, 4 or 8).")
    if rows < steps * global_batch:
        raise LessonInputError(f"{rows} training rows make {rows // global_batch} steps of {global_batch}, fewer than "
                               f"STEPS={steps}: lower STEPS or load more data.")


def row_length(pairs: list[tuple[list[int], list[int]]], requested: int | None, multiple: int = 16) -> int:
    """``requested``, or the longest prompt + answer rounded up; an error names the rows a shorter length would cut."""
    lengths = [len(p) + len(a) for p, a in pairs]
    longest = max(lengths)
    if requested is None:
        return -(-longest // multiple) * multiple
    if not isinstance(requested, int) or requested < 1:
        raise LessonInputError(f"ROW_LENGTH={requested!r}: use a positive int, or None for the longest row rounded up.")
    if requested < longest:
        cut = sum(n > requested for n in lengths)
        raise LessonInputError(f"ROW_LENGTH={requested} would cut {cut} of {len(lengths)} rows (the longest prompt + "
                               f"answer is {longest} tokens): set ROW_LENGTH >= {longest}, or None.")
    return requested


def compilations() -> int:
    """torch_xla's count of compiled graphs so far in this process."""
    import torch_xla.debug.metrics as met

    data = met.metric_data("CompileTime")
    return data[0] if data else 0


class StepRecorder(TrainerCallback):
    """Compilations per training step, and the trainable weights after step 1 (read once step 1 has run)."""

    def __init__(self, model: Any) -> None:
        self.model, self.per_step, self.first_step = model, [], {}
        self._mark = 0

    def on_train_begin(self, args, state, control, **kwargs):
        self._mark, self.per_step = compilations(), []

    def on_step_begin(self, args, state, control, **kwargs):
        if state.global_step:
            self.per_step.append(compilations() - self._mark)
        if state.global_step == 1:  # the loader's mark_step ran step 1's graph: its weights are on the device
            from tpu_helpers.llm_lora.lesson_cells import trained_weights  # imports torch_xla: not before the flags

            self.first_step = {k: v for k, v in trained_weights(self.model).items() if "lora_" in k}
        self._mark = compilations()  # the reads above compile gathers of their own: not the step's

    def on_train_end(self, args, state, control, **kwargs):
        self.per_step.append(compilations() - self._mark)


def bytes_per_device(model: Any) -> dict[str, int]:
    """Parameter bytes each device holds, summed from every parameter's local shards."""
    import torch_xla.distributed.spmd as xs

    held: dict[str, int] = {}
    for p in model.parameters():
        for shard in xs.wrap_if_sharded(p.data).local_shards:
            held[shard.shard_device] = held.get(shard.shard_device, 0) + shard.data.numel() * shard.data.element_size()
    return held


_STEP_HLO: dict[str, str] = {}  # per folder, the largest graph dumped: a rerun in the kernel runs the cached step


def step_collectives(folder: Path) -> dict[str, int]:
    """Collectives in the largest graph (the training step) this process compiled, from XLA's dump after optimisation."""
    for dump in Path(folder).glob("*after_optimizations.txt"):
        if len(text := dump.read_text()) > len(_STEP_HLO.get(str(folder), "")):
            _STEP_HLO[str(folder)] = text
    return {op: len(re.findall(rf"= \S+ {op}\(", _STEP_HLO.get(str(folder), ""))) for op in COLLECTIVES}


def replay_first_step(lora_cpu: Any, rows: list[dict], lr: float, max_grad_norm: float = 1.0) -> dict[str, Any]:
    """The Trainer's first step on one device (PyTorch's CPU): loss, backward, clipping, AdamW; trainable weights."""
    import torch
    from transformers import default_data_collator

    trainable = [p for p in lora_cpu.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=lr, weight_decay=0.0)
    lora_cpu(**default_data_collator(rows)).loss.backward()
    torch.nn.utils.clip_grad_norm_(trainable, max_grad_norm)
    optimizer.step()
    return {n: p.detach().clone() for n, p in lora_cpu.named_parameters() if p.requires_grad}


_RELOAD = """
import sys, torch
from transformers import AutoModelForCausalLM
folder, batch_file, out_file = sys.argv[1:]
model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
batch = torch.load(batch_file)
with torch.no_grad():
    logits = model(**batch).logits
torch.save({"logits": logits, "torch_xla_imported": "torch_xla" in sys.modules, "type": type(model).__name__}, out_file)
"""


def reload_logits(folder: str, batch: dict[str, Any]) -> dict[str, Any]:
    """Logits of the saved checkpoint from a fresh Python process on the CPU, without torch_xla."""
    import torch

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PJRT_", "XLA_", "CPU_NUM_DEVICES"))}
    env["USE_TORCH_XLA"] = "0"  # transformers leaves torch_xla unimported
    with tempfile.TemporaryDirectory(prefix="tpu-course-10-reload-") as name:
        work = Path(name)
        torch.save({k: v for k, v in batch.items() if k != "labels"}, work / "batch.pt")
        done = subprocess.run([sys.executable, "-c", _RELOAD, folder, str(work / "batch.pt"), str(work / "out.pt")],
                              env=env, capture_output=True, text=True, timeout=600)
        if done.returncode:
            raise RuntimeError(f"reloading {folder} in a child process failed:\n{done.stderr[-2000:]}")
        return torch.load(work / "out.pt")


def exact_match(model: Any, tokenizer: Any, prompts: list[list[int]], answers: list[str], batch: int = 16) -> float:
    """Share of prompts whose greedy answer (on the CPU) is exactly the intent's name."""
    import torch

    hits, pad = 0, tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    new = max(len(tokenizer(a)["input_ids"]) for a in answers) + 2
    for i in range(0, len(prompts), batch):
        chunk = prompts[i:i + batch]
        width = max(map(len, chunk))
        ids = torch.tensor([[pad] * (width - len(p)) + p for p in chunk])  # left-padded for generation
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in chunk])
        with torch.no_grad():
            out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=new, do_sample=False,
                                 pad_token_id=pad, eos_token_id=tokenizer.eos_token_id)
        texts = tokenizer.batch_decode(out[:, width:], skip_special_tokens=True)
        hits += sum(t.strip() == a for t, a in zip(texts, answers[i:i + batch]))
    return hits / len(prompts)


def tiles(spec: str) -> int:
    """How many devices a sharding spec such as ``{devices=[8,1]0,1,...}`` splits a tensor over (1: replicated)."""
    found = re.search(r"devices=\[([\d,]+)\]", spec)
    if not found:
        return 1
    sizes = [int(n) for n in found.group(1).split(",")]
    return sizes[0] * sizes[1] if "last_tile_dim_replicate" not in spec else sizes[0] * sizes[1] // sizes[-1]
