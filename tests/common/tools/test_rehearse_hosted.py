"""The hosted rehearsal's own rules (tools/rehearse_hosted.py); the rehearsals themselves run in tests/hosted."""
import re

import install_plan
import rehearse_hosted as rh


def test_the_images_cpu_torch_wheels_are_stood_in_for_by_the_same_versions():
    reqs, standins = rh.snapshot_requirements("colab")
    assert "torch==2.9.0" in reqs and "torch-xla==2.9.0" in reqs and "torchvision==0.24.0" in reqs
    assert "download.pytorch.org" not in " ".join(reqs)
    assert "torch" in standins and "PyPI's torch==2.9.0" in standins["torch"]
    assert "left out" in standins["google-colab"]  # a file:// sdist of Colab's own: not on any registry


def test_every_target_names_an_image_snapshot_and_a_supported_python():
    for target in rh.TARGETS.values():
        assert target.python in install_plan.PYTHONS
        assert "TPU_ACCELERATOR_TYPE" in target.tpu and "TPU_ACCELERATOR_TYPE" not in target.variables
    assert rh.TARGETS["colab-tpu"].python == "3.13" and rh.TARGETS["kaggle-tpu"].python == "3.12"


def test_off_a_tpu_nothing_looks_for_a_tpu_or_the_metadata_server():
    env = rh.variables(rh.TARGETS["kaggle-tpu"], on_tpu=False)
    assert env["TPU_SKIP_MDS_QUERY"] == "1" and env["PJRT_DEVICE"] == "CPU" and "TPU_ACCELERATOR_TYPE" not in env
    assert rh.variables(rh.TARGETS["colab-tpu"], on_tpu=True)["TPU_ACCELERATOR_TYPE"] == "v5litepod-1"


def test_pip_check_allows_only_the_documented_lines():
    allowed = ["tf-keras 2.20.1 requires tensorflow, which is not installed.",
               "diffusers 0.42.1 has requirement huggingface-hub<3.0,>=1.32.0, but you have huggingface-hub 0.36.2."]
    refused = ["torchvision 0.23.0 has requirement torch==2.8.0, but you have torch 2.9.0.",
               "tf-keras 2.20.1 requires tensorflow, which is not installed. (and more)"]
    for line in allowed:
        assert any(re.fullmatch(p, line) for p in rh.ALLOWED_PIP_CHECK), line
    for line in refused:
        assert not any(re.fullmatch(p, line) for p in rh.ALLOWED_PIP_CHECK), line
    assert all(reason for reason in rh.ALLOWED_PIP_CHECK.values())
