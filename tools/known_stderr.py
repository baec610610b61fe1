"""The stderr lines the notebooks may show, each with why it is harmless and what a learner should make of it.

Anything else a notebook prints on stderr fails its cell under ``./course test`` and is listed by ``./course run``
(`stderr_check`). Fix a new line at its cause first; add it here only when it is true and harmless, with a
regex as narrow as the message (it is searched in the message's first line). ``until`` names the fix expected to
make an entry's line disappear; ``./course test`` prints which entries still matched, so the list can be pruned.
Lines classified from ``tools/run_course.py --profile ci`` (all nine notebooks, CPU, 2026-11-26).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Known:
    pattern: str  # regex searched in the first line of a stderr message
    example: str  # a line as a notebook printed it (the test checks the regex explains it)
    why: str  # why the line is harmless
    learner: str  # what the learner should make of it
    until: str = ""  # "": stays; else the fix expected to remove the line (prune the entry once it has landed)


KNOWN: tuple[Known, ...] = (
    Known(r"(\d{1,3}%\|.*\| *\S+/\S+ )?\[(\d+:)?\d+:\d+(<[^,\]]*)?, [^\]]*\]$",
          'strategies:  17%|█▋        | 1/6 [00:03<00:18,  3.80s/it]',
          "tqdm's progress bar (any loop's): tqdm draws on stderr, redrawing the line with a carriage return",
          "progress, not a problem: the bar shows how far the loop is and how fast it goes"),
    Known(r"cuda_platform\.cc:\d+\] failed call to cuInit",
          '2026-11-26 14:32:22.293241: E external/local_xla/xla/stream_executor/cuda/cuda_platform.cc:51] failed call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)',
          "the CUDA-enabled TensorFlow wheel probes for an NVIDIA GPU when it loads; on a CPU or TPU machine there is "
          "none, and TensorFlow goes on without it",
          "nothing to do: no GPU is used by this course",
          until="issue 40: TensorFlow notebooks 00/01/03/04/08 load TensorFlow without the GPU probe's log"),
    Known(r"^WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR$",
          'WARNING: All log messages before absl::InitializeLog() is called are written to STDERR',
          "TensorFlow's C++ logging (absl) says where its log lines go until it is set up",
          "nothing to do: it comes with TensorFlow's own log lines",
          until="issue 40: TensorFlow notebooks 00/01/03/04/08 load TensorFlow without the GPU probe's log"),
    Known(r"device_compiler\.h:\d+\] Compiled cluster using XLA!",
          'I0000 00:00:1795703542.364779    8334 device_compiler.h:196] Compiled cluster using XLA!  This line is logged at most once for the lifetime of the process.',
          "TensorFlow's one-time information line that XLA compiled a function (jit_compile=True)",
          "good news: the function was compiled by XLA, as the lesson says it should be",
          until="issue 40: TensorFlow notebooks 00/01/03/04/08 (C++ information lines off)"),
    Known(r"^TensorFlow and JAX classes are deprecated and will be removed in Transformers v5",
          'TensorFlow and JAX classes are deprecated and will be removed in Transformers v5. We recommend migrating to PyTorch classes or pinning your version of Transformers.',
          "true and useful: transformers 4.57 still has the TF model classes, version 5 drops them; the TensorFlow "
          "notebooks stay on 4.57 for that reason",
          "the reason the TensorFlow lessons pin transformers 4.57; the cell's text says what it means"),
    Known(r"^Device set to use \S+$",
          'Device set to use 0',
          "transformers' pipeline reports the device it picked (0: the first TensorFlow device)",
          "information: the pipeline runs on the notebook's device",
          until="issue 40: notebook 04's fill-mask pipeline"),
    Known(r"^Token indices sequence length is longer than the specified maximum sequence length for this model",
          'Token indices sequence length is longer than the specified maximum sequence length for this model (38 > 32). Running this sequence through the model will result in indexing errors',
          "notebook 04 tokenizes whole lines before cutting them into blocks of the model's length, so a long line "
          "exceeds model_max_length before it is cut; no sequence that long reaches the model",
          "nothing is truncated or lost: the text is cut into blocks right after",
          until="issue 40: notebook 04 tokenizes without the model-length warning"),
    Known(r"UserWarning: `tensorflow` can conflict with `torch-xla`\. Prefer `tensorflow-cpu`",
          '/root/.cache/tpu-course/env-ddaeec366053/lib/python3.11/site-packages/torch_xla/__init__.py:246: UserWarning: `tensorflow` can conflict with `torch-xla`. Prefer `tensorflow-cpu` when using PyTorch/XLA. To silence this warning, `pip uninstall -y tensorflow && pip install tensorflow-cpu`. If you are in a notebook environment such as Colab or Kaggle, restart your notebook runtime afterwards.',
          "the course's CPU environment holds TensorFlow and torch_xla side by side (each notebook imports only one); "
          "on a TPU VM each framework has its own environment and the warning does not appear",
          "nothing to do here: the notebooks never load both frameworks in one process",
          until="the environment split per framework (transformers 5 for the PyTorch notebooks)"),
    Known(r"^WARNING:torch_xla\.backends:Setting mat mul precision multiple times is not recommended",
          'WARNING:torch_xla.backends:Setting mat mul precision multiple times is not recommended. If you need to do so, please empirically verify that the precision setting is behaving as expected.',
          "the precision helper set torch_xla's matmul precision on every call",
          "nothing to do: the precision is the one the cell asked for",
          until="issue 40: the precision is set once (notebook 02)"),
    Known(r"^INFO: GPU available: (True|False), used: (True|False)$",
          'INFO: GPU available: False, used: False',
          "Lightning's rank-zero report of the hardware it sees when a Trainer is made (no GPU here, none used)",
          "information: the course trains on the TPU (or, off a TPU, on PyTorch/XLA's CPU device), never a GPU"),
    Known(r"^INFO: TPU available: (True|False), using: \d+ TPU cores$",
          'INFO: TPU available: False, using: 1 TPU cores',
          "Lightning's rank-zero report of the TPU it sees; off a TPU the notebook hands it PyTorch/XLA's CPU device "
          "(tpu_helpers.trainers.xla_cpu.XLACPUAccelerator), so it says False yet uses one XLA device",
          "on a TPU it reads True; on the CPU rehearsal \"False, using: 1 TPU cores\" means one XLA CPU device stands "
          "in for the TPU core (the instructor guide says so too)"),
    Known(r"^INFO:lightning\.pytorch\.utilities\.rank_zero:(GPU available|TPU available|💡 Tip)",
          'INFO:lightning.pytorch.utilities.rank_zero:TPU available: False, using: 1 TPU cores',
          "the same Lightning lines a second time, through the root logger",
          "a duplicate of the line above it",
          until="issue 40: one logger path for Lightning's messages (notebook 07)"),
    Known(r"^INFO: 💡 Tip: For seamless cloud logging and experiment tracking, try installing \[litlogger\]",
          'INFO: 💡 Tip: For seamless cloud logging and experiment tracking, try installing [litlogger](https://pypi.org/project/litlogger/) to enable LitLogger, which logs metrics and artifacts automatically to the Lightning Experiments platform.',
          "an advertisement Lightning prints when a Trainer is made",
          "nothing to do: the course needs no cloud logging",
          until="issue 40: no advertisement (notebook 07)"),
    Known(r"configuration_validator\.py:\d+: You defined a `validation_step` but have no `val_dataloader`",
          '/root/.cache/tpu-course/env-ddaeec366053/lib/python3.11/site-packages/lightning/pytorch/trainer/configuration_validator.py:70: You defined a `validation_step` but have no `val_dataloader`. Skipping val loop.',
          "the LightningModule has a validation_step that this fit does not use (no validation loader)",
          "nothing to do: this fit trains only; the validation loop is skipped",
          until="issue 40: notebook 07's LightningModule and loader configuration"),
    Known(r"UserWarning: 'pin_memory' argument is set as true but no accelerator is found",
          "/root/.cache/tpu-course/env-ddaeec366053/lib/python3.11/site-packages/torch/utils/data/dataloader.py:668: UserWarning: 'pin_memory' argument is set as true but no accelerator is found, then device pinned memory won't be used.",
          "a DataLoader asked for pinned memory, which only a CUDA-like accelerator uses",
          "nothing to do: pinning only speeds up copies to a GPU",
          until="issue 40: notebook 07's loader configuration"),
)
