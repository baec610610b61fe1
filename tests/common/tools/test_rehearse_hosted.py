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


def test_the_gpu_images_local_builds_are_stood_in_for_by_pypis():
    """Colab's GPU freeze says torch==2.11.0+cu128 (PyTorch's index): PyPI's torch==2.11.0 stands in."""
    reqs, standins = rh.snapshot_requirements("colab", "gpu")
    assert "torch==2.11.0" in reqs and "torchvision==0.26.0" in reqs and not any("+cu" in r for r in reqs)
    assert standins["torch"] == "torch==2.11.0+cu128 -> PyPI's torch==2.11.0"


def test_every_target_names_an_image_snapshot_a_supported_python_and_its_notebooks():
    for target in rh.TARGETS.values():
        assert target.python in install_plan.PYTHONS and target.snapshot.exists()
        assert (target.image, target.accelerator) in install_plan.SNAPSHOTS
        assert set(target.notebooks) == set(install_plan.FRAMEWORKS)
        if target.accelerator == "tpu":
            assert "TPU_ACCELERATOR_TYPE" in target.device and "TPU_ACCELERATOR_TYPE" not in target.variables
    assert rh.TARGETS["colab-tpu"].python == "3.13" and rh.TARGETS["kaggle-tpu"].python == "3.12"
    assert rh.TARGETS["colab-cpu"].python == "3.13" and rh.TARGETS["colab-gpu"].device == {"COLAB_GPU": "1"}
    assert not any(rh.TARGETS["colab-gpu"].notebooks.values())  # the same packages on the same CPU as colab-cpu
    # the training notebooks run on Colab's CPU image too, where most learners start
    assert sorted(rh.TARGETS["colab-cpu"].notebooks["tf"] + rh.TARGETS["colab-cpu"].notebooks["torch"])[:5] == [
        "01_xla_rules_tensorflow", "02_xla_rules_pytorch_xla", "04_mlm_from_scratch_tensorflow",
        "05_banking77_accelerate", "07_trainers_lightning_hf"]


def test_off_a_tpu_nothing_looks_for_a_tpu_or_the_metadata_server():
    env = rh.variables(rh.TARGETS["kaggle-tpu"], on_device=False)
    assert env["TPU_SKIP_MDS_QUERY"] == "1" and env["PJRT_DEVICE"] == "CPU" and "TPU_ACCELERATOR_TYPE" not in env
    assert rh.variables(rh.TARGETS["colab-tpu"], on_device=True)["TPU_ACCELERATOR_TYPE"] == "v5litepod-1"
    cpu = rh.variables(rh.TARGETS["colab-gpu"], on_device=False)  # a CPU or GPU runtime sets none of OFF_TPU
    assert "COLAB_GPU" not in cpu and not set(rh.OFF_TPU) & set(cpu) and cpu["COLAB_RELEASE_TAG"]


def test_pip_check_allows_only_the_documented_lines():
    allowed = ["tf-keras 2.20.1 requires tensorflow, which is not installed."]
    refused = ["torchvision 0.23.0 has requirement torch==2.8.0, but you have torch 2.9.0.",
               "tf-keras 2.20.1 requires tensorflow, which is not installed. (and more)"]
    for line in allowed:
        assert any(re.fullmatch(p, line) for p in rh.ALLOWED_PIP_CHECK), line
    for line in refused:
        assert not any(re.fullmatch(p, line) for p in rh.ALLOWED_PIP_CHECK), line
    assert all(reason for reason in rh.ALLOWED_PIP_CHECK.values())


def test_pips_log_gives_what_it_downloaded_and_what_came_from_its_cache(tmp_path):
    (tmp_path / "six-1.17.0-py2.py3-none-any.whl").write_bytes(b"x" * 1234)
    log = (f"2026-11-26T15:00:00,1 Processing {tmp_path}/six-1.17.0-py2.py3-none-any.whl\n"
           "2026-11-26T15:00:01,1 Downloading https://files.pythonhosted.org/packages/aa/torch-2.9.0-cp313-cp313-"
           "manylinux_2_28_x86_64.whl (899.8 MB)\n"
           "2026-11-26T15:00:02,1 Using cached torch_xla-2.9.0-cp313-cp313-manylinux_2_28_x86_64.whl (93.4 MB)\n"
           "2026-11-26T15:00:03,1 Downloading tqdm-4.70.1-py3-none-any.whl (78 kB)\n")
    fetched = rh.pip_fetched(log)
    assert fetched["downloaded"] == {"torch-2.9.0-cp313-cp313-manylinux_2_28_x86_64.whl": 899_800_000,
                                     "tqdm-4.70.1-py3-none-any.whl": 78_000}
    assert fetched["cached"] == {"torch_xla-2.9.0-cp313-cp313-manylinux_2_28_x86_64.whl": 93_400_000}
    assert fetched["local"] == {"six-1.17.0-py2.py3-none-any.whl": 1234}  # a machine's mirror of the registry
