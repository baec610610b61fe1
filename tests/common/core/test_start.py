import json
import os
import subprocess
import sys

import pytest

SCRIPT = """
import json, os
from tpu_helpers.core.start import start
rt, profile = start({framework!r}, {profile!r}, xla_cpu={xla_cpu})
print(json.dumps([rt.kind, profile.name, os.environ.get("PJRT_DEVICE"), os.environ.get("USE_TORCH"), os.environ.get("USE_TF")]))
"""


@pytest.mark.parametrize("framework, profile, xla_cpu, expected", [
    ("torch", "ci", True, ["cpu", "ci", "CPU", "1", "0"]),
    ("torch", None, False, ["cpu", "cpu", None, "1", "0"]),
    ("tf", "cpu", True, ["cpu", "cpu", None, "0", "1"]),
])
def test_start_declares_the_framework_and_prints_runtime_and_profile(framework, profile, xla_cpu, expected):
    env = {k: v for k, v in os.environ.items() if k not in ("PJRT_DEVICE", "TPU_COURSE_PROFILE", "USE_TF", "USE_TORCH")}
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(framework=framework, profile=profile, xla_cpu=xla_cpu)],
                         env=env, capture_output=True, text=True, check=True).stdout.splitlines()
    assert json.loads(out[-1]) == expected
    assert out[0].startswith("CPU only: no TPU or GPU found")
    assert out[-2].startswith(f"profile '{expected[1]}'")
