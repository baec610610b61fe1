"""Child process of test_trainer_fixes.py: SPMD on 8 CPU devices (process-wide, so never in pytest's own process).
Tries the two Trainer breaks notebook 10 repairs and prints one JSON line: what each attempt raised."""
import json
import os
import sys
import tempfile

os.environ["PJRT_DEVICE"], os.environ["CPU_NUM_DEVICES"] = "CPU", "8"
import torch_xla.runtime as xr  # noqa: E402

xr.use_spmd()
from transformers import Trainer, default_data_collator  # noqa: E402

from tpu_helpers.llm_lora.lesson_cells import FSDPv2Trainer, chat_row, fsdp_v2_arguments, with_lora  # noqa: E402
from tpu_helpers.llm_lora.sources import tiny_llama  # noqa: E402


def attempt(trainer_class, **overrides):
    """What one training step raises (its type and first line), or 'trained'."""
    model = with_lora(tiny_llama(64, seed=0, row_length=16))
    rows = [chat_row(list(range(3, 9)), [10 + i % 5, 2], 16, 0) for i in range(16)]
    with tempfile.TemporaryDirectory() as output_dir:  # the Trainer's: it saves nothing there
        args = fsdp_v2_arguments(output_dir, global_batch=8, steps=1, learning_rate=1e-3,
                                 layer_class="LlamaDecoderLayer")
        for key, value in overrides.items():
            setattr(args, key, value)
        try:
            trainer_class(model=model, args=args, train_dataset=rows, data_collator=default_data_collator).train()
            return "trained"
        except Exception as e:  # noqa: BLE001 (the test reads what the Trainer raised)
            return f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"


result = {"plain Trainer": attempt(Trainer),  # without fix 1
          "fused AdamW": attempt(FSDPv2Trainer, optim="adamw_torch_fused")}  # without fix 2 (the notebook: both)
print(json.dumps(result))
sys.stdout.flush()
