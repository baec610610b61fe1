"""Notebook 10 repairs the Hugging Face Trainer's FSDPv2 path twice (transformers 5.24, torch_xla 2.9). Each test
here fails once the pinned versions no longer need its repair: then drop the repair from the notebook and the test
(notebook 10 itself, under nbval, proves that the repaired Trainer trains).
The attempts run on 8 simulated devices in a child process: SPMD is process-wide, pytest's process stays without it."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch_xla")
pytest.importorskip("peft")


@pytest.fixture(scope="module")
def attempts():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XLA_", "CPU_NUM_DEVICES"))}
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("trainer_breaks_run.py"))], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_fix_1_still_needed_the_plain_trainer_has_no_optimizer(attempts):
    assert "param_groups" in attempts["plain Trainer"], (
        f"the plain Trainer now trains under FSDPv2 ({attempts['plain Trainer']}): retire FSDPv2Trainer's "
        "create_scheduler repair in notebook 10")


def test_fix_2_still_needed_fused_adamw_refuses_xla(attempts):
    assert "fused" in attempts["fused AdamW"].lower(), (
        f"adamw_torch_fused now runs on XLA ({attempts['fused AdamW']}): retire optim='adamw_torch' in notebook 10")

