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
          "the CUDA-enabled TensorFlow wheel (the `tensorflow` of Colab's CPU image, rehearsed in tests/hosted) probes "
          "for an NVIDIA GPU when it loads; on a CPU machine there is none, and TensorFlow goes on without it (the "
          "course's own environment has tensorflow-cpu, which has no CUDA platform)",
          "nothing to do: no GPU is used by this course"),
    Known(r"^WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR$",
          'WARNING: All log messages before absl::InitializeLog() is called are written to STDERR',
          "absl's logging, which the XLA line below goes through, writes to stderr until a program calls "
          "absl::InitializeLog(), which TensorFlow 2.20's Python never does, and says so before its first line. "
          "TensorFlow 2.20 has no switch for it: TF_CPP_MIN_LOG_LEVEL filters only TensorFlow's own LogMessage "
          "(xla/tsl/platform/default/logging.cc), and with TF_CPP_MIN_LOG_LEVEL=3 both lines still appear (measured)",
          "nothing to do: notebooks 00, 01, 03 and 04 say what it is where it first appears"),
    Known(r"device_compiler\.h:\d+\] Compiled cluster using XLA!",
          'I0000 00:00:1795703542.364779    8334 device_compiler.h:196] Compiled cluster using XLA!  This line is logged at most once for the lifetime of the process.',
          "TensorFlow's one-time information line that XLA compiled a function (jit_compile=True): "
          "LogOnceXlaCompiledFirstCluster in tensorflow/compiler/jit/device_compiler.h, LOG(INFO) once per process",
          "good news, explained where it first appears (notebooks 00, 01, 03, 04): XLA compiled the function"),
    Known(r"^TensorFlow and JAX classes are deprecated and will be removed in Transformers v5",
          'TensorFlow and JAX classes are deprecated and will be removed in Transformers v5. We recommend migrating to PyTorch classes or pinning your version of Transformers.',
          "true and useful: transformers 4.57 still has the TF model classes, version 5 drops them; the TensorFlow "
          "notebooks stay on 4.57 for that reason",
          "the reason the TensorFlow lessons pin transformers 4.57; the cell's text says what it means"),
    Known(r"^WARNING:absl:Grain multiprocess worker profiling requires jaxlib extension version",
          'WARNING:absl:Grain multiprocess worker profiling requires jaxlib extension version 448 or later (jaxlib >= 0.11.0). Current version: 373.',
          "grain 0.2.18 imported beside an older jaxlib (Colab's image: jaxlib 0.7.2, rehearsed in tests/hosted) says "
          "that one profiling feature of its multiprocess workers is missing; notebook 09 packs in the kernel's "
          "own process and never uses them",
          "nothing to do: notebook 09 uses no grain worker processes"),
    Known(r"^\[transformers\] \S*BertForSequenceClassification LOAD REPORT|^Key +\| Status +\||^-+\+-+\+"
          r"|^classifier\.(bias|weight) +\| \S*MISSING|^Notes:$|^- \S*MISSING\S*:\s+those params were newly initialized",
          '[transformers] \x1b[1mBertForSequenceClassification LOAD REPORT\x1b[0m from: /content/minilm',
          "transformers 5's load report for pretrained weights with a new classification head (notebook 05 with "
          "MODEL set to a checkpoint): the head's two tensors are not in the checkpoint and start random; only those "
          "two names are explained, a MISSING encoder weight stays unexplained",
          "expected: notebook 05's section 4 says so; the head is what the fine-tuning trains"),
    Known(r"UserWarning: `tensorflow` can conflict with `torch-xla`\. Prefer `tensorflow-cpu`",
          '/root/.cache/tpu-course/env-ddaeec366053/lib/python3.11/site-packages/torch_xla/__init__.py:246: UserWarning: `tensorflow` can conflict with `torch-xla`. Prefer `tensorflow-cpu` when using PyTorch/XLA. To silence this warning, `pip uninstall -y tensorflow && pip install tensorflow-cpu`. If you are in a notebook environment such as Colab or Kaggle, restart your notebook runtime afterwards.',
          "a hosted image (Colab's CPU and GPU images, rehearsed in tests/hosted) holds TensorFlow and torch_xla side "
          "by side (each notebook imports only one); the course's own PyTorch/XLA environment has no TensorFlow, and "
          "the warning does not appear there",
          "nothing to do here: the notebooks never load both frameworks in one process"),
    Known(r"FutureWarning: `is_gradient_checkpointing` is deprecated and will be removed in v6",
          "/env/lib/python3.11/site-packages/transformers/modeling_utils.py:3312: FutureWarning: `is_gradient_checkpointing` is deprecated and will be removed in v6. Use `is_activation_checkpointing` instead.",
          "peft 0.21.2's get_peft_model reads transformers' old property name (peft/peft_model.py, line 184: "
          "getattr(model, 'is_gradient_checkpointing', True)); transformers 5.24 still answers it, with this warning",
          "nothing to do: notebook 10's LoRA wrapping works; a later peft reads the new name",
          until="a peft release that reads is_activation_checkpointing"),
    Known(r"UserWarning: For backward hooks to be called, module output should be a Tensor or a tuple of Tensors",
          "/env/lib/python3.11/site-packages/torch/nn/modules/module.py:1849: UserWarning: For backward hooks to be called, module output should be a Tensor or a tuple of Tensors but received <class 'transformers.modeling_outputs.CausalLMOutputWithPast'>",
          "torch_xla's FSDPv2 wrapper registers a full backward hook on the whole model "
          "(xla_sharding.apply_backward_optimization_barrier) and the model returns a transformers output object; "
          "the hook on each wrapped decoder layer, which returns tensors, still fires",
          "nothing to do: notebook 10 proves the sharded gradients equal one device's"),
    Known(r"UserWarning: Full backward hook is firing when gradients are computed with respect to module outputs",
          "sys:1: UserWarning: Full backward hook is firing when gradients are computed with respect to module outputs since no inputs require gradients. See https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.register_full_backward_hook for more details.",
          "the same FSDPv2 hook (see the line above) on the first decoder layer, whose input (the embeddings of a "
          "frozen LoRA base) needs no gradient: PyTorch says the hook sees the output's gradients only",
          "nothing to do: the optimisation barrier the hook places needs only those"),
    Known(r"sharding_propagation\.cc:\d+\] GSPMD sharding propagation is going to be deprecated",
          "2026-11-29 05:43:09.592445: W external/xla/xla/service/sharding_propagation.cc:3120] GSPMD sharding propagation is going to be deprecated and not supported in the future. Please consider migrating to Shardy (https://openxla.org/shardy). For reference, Shardy is already the default partitioner in JAX.",
          "XLA logs this each time it partitions an SPMD graph with GSPMD, the partitioner torch_xla 2.9 uses "
          "(notebook 10's sharded step, and each gather of a sharded tensor to the host); JAX moved to Shardy",
          "nothing to do: the partitioner works; it is XLA's notice about its own future"),
)
