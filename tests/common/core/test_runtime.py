"""Runtime detection from faked environments and fake device trees: every kind, no TPU needed."""
from pathlib import Path

import pytest

from tpu_helpers.core import runtime
from tpu_helpers.core.runtime import Runtime, detect_runtime


def make_root(tmp_path: Path, accel: int = 0, vfio: int = 0, nvidia: int = 0, pci: tuple = ()) -> Path:
    dev = tmp_path / "dev"
    dev.mkdir()
    for i in range(accel):
        (dev / f"accel{i}").touch()
    if vfio:
        (dev / "vfio").mkdir()
        (dev / "vfio" / "vfio").touch()  # the control node is not a chip
        for i in range(vfio):
            (dev / "vfio" / str(i)).touch()
    for i in range(nvidia):
        (dev / f"nvidia{i}").touch()
    (dev / "nvidiactl").touch()  # not a GPU
    for i, (vendor, device, *sub) in enumerate(pci):
        d = tmp_path / "sys" / "bus" / "pci" / "devices" / f"0000:00:{i:02x}.0"
        d.mkdir(parents=True)
        (d / "vendor").write_text(vendor + "\n")
        (d / "device").write_text(device + "\n")
        if sub:
            (d / "subsystem_device").write_text(sub[0] + "\n")
    return tmp_path


@pytest.fixture
def detect(tmp_path, monkeypatch):
    """`detect_runtime(env)` on a fake machine whose device files `make_root` lays out under tmp_path."""
    def run(env, **devices):
        monkeypatch.setattr(runtime, "ROOT", make_root(tmp_path, **devices))
        return detect_runtime(env)
    return run


def test_plain_cpu(detect):
    rt = detect({})
    assert rt == Runtime("cpu", "local")
    assert not rt.is_tpu and "CPU only" in rt.describe()


def test_gpu_counts_numbered_devices_only(detect):
    rt = detect({}, nvidia=2)
    assert (rt.kind, rt.gpus) == ("gpu", 2)
    assert "2 NVIDIA GPUs" in rt.describe()


def test_colab_gpu(detect):
    rt = detect({"COLAB_RELEASE_TAG": "release-colab_20261101", "COLAB_GPU": "1"}, nvidia=1)
    assert (rt.kind, rt.platform) == ("gpu", "colab")


def test_colab_tpu_vm_v5e_1(detect):
    env = {"COLAB_RELEASE_TAG": "release-colab_20261101", "TPU_ACCELERATOR_TYPE": "v5litepod-1"}
    rt = detect(env, vfio=1, pci=[("0x1ae0", "0x0063")])
    assert rt.kind == "colab-tpu-vm" and rt.is_tpu_vm and not rt.is_tpu_node
    assert (rt.generation, rt.chips, rt.devices, rt.slice_name) == ("v5e", 1, 1, "v5e-1")
    assert rt.describe().startswith("Colab TPU VM: v5e-1")


def test_kaggle_tpu_vm_v5e_8(detect):
    env = {"KAGGLE_KERNEL_RUN_TYPE": "Interactive", "ISTPUVM": "1", "TPU_ACCELERATOR_TYPE": "v5litepod-8"}
    rt = detect(env, vfio=8)
    assert (rt.kind, rt.platform, rt.chips, rt.devices, rt.slice_name) == ("kaggle-tpu-vm", "kaggle", 8, 8, "v5e-8")


def test_kaggle_tpu_vm_from_env_only(detect):
    # Kaggle's image sets ISTPUVM=1 and the accelerator type; chips may be hidden from a sandboxed /dev.
    env = {"KAGGLE_URL_BASE": "https://www.kaggle.com", "ISTPUVM": "1", "TPU_ACCELERATOR_TYPE": "v3-8"}
    rt = detect(env)
    assert (rt.kind, rt.generation, rt.chips, rt.devices) == ("kaggle-tpu-vm", "v3", 4, 8)


def test_cloud_tpu_vm_v3_from_pci_only(detect):
    pci = [("0x1ae0", "0x0027", "0x004f")] * 4 + [("0x8086", "0x1234")]
    rt = detect({}, accel=4, pci=pci)
    assert (rt.kind, rt.platform) == ("cloud-tpu-vm", "local")
    assert (rt.generation, rt.chips, rt.devices, rt.accelerator_type) == ("v3", 4, 8, "v3-8")


def test_cloud_tpu_vm_v2_subsystem_id(detect):
    pci = [("0x1ae0", "0x0027", "0x004e")] * 4
    rt = detect({}, accel=4, pci=pci)
    assert (rt.generation, rt.accelerator_type, rt.devices) == ("v2", "v2-8", 8)


def test_cloud_tpu_vm_v4_megacore(detect):
    rt = detect({}, accel=4, pci=[("0x1ae0", "0x005e")] * 4)
    assert (rt.generation, rt.chips, rt.devices, rt.accelerator_type) == ("v4", 4, 4, "v4-8")


def test_cloud_tpu_vm_v5p_names_its_slice_by_tensorcores(detect):
    # a v5p host's 4 chips (megacore: one device each) make a v5p-8, as Google names it
    rt = detect({}, vfio=4, pci=[("0x1ae0", "0x0062")] * 4)
    assert (rt.generation, rt.chips, rt.devices, rt.accelerator_type) == ("v5p", 4, 4, "v5p-8")


def test_pod_slice_host_counts_local_chips(detect):
    # A v3-32 is 4 hosts; this host sees its own 4 chips (8 devices); the type names the whole slice.
    rt = detect({"TPU_ACCELERATOR_TYPE": "v3-32"}, accel=4)
    assert (rt.accelerator_type, rt.chips, rt.devices) == ("v3-32", 4, 8)


def test_legacy_colab_tpu_node(detect):
    rt = detect({"COLAB_RELEASE_TAG": "x", "COLAB_TPU_ADDR": "10.0.0.2:8470"})
    assert rt.kind == "tpu-node" and rt.is_tpu_node and rt.is_tpu and not rt.is_tpu_vm
    assert (rt.tpu_address, rt.devices, rt.platform) == ("grpc://10.0.0.2:8470", 8, "colab")
    assert "Legacy TPU Node (Colab)" in rt.describe()


def test_tpu_node_from_grpc_tpu_name(detect):
    rt = detect({"TPU_NAME": "grpc://10.1.2.3:8470"})
    assert (rt.kind, rt.tpu_address, rt.devices) == ("tpu-node", "grpc://10.1.2.3:8470", None)


def test_named_tpu_without_grpc_is_not_a_node(detect):
    # TPU_NAME=my-tpu names a Cloud TPU to resolve through the API: not evidence of a local TPU.
    assert detect({"TPU_NAME": "my-tpu"}).kind == "cpu"


def test_other_google_pci_devices_are_not_tpus(detect):
    assert detect({}, pci=[("0x1ae0", "0x0042")]).kind == "cpu"


def test_a_bad_accelerator_type_variable_is_a_clear_error(detect):
    with pytest.raises(ValueError, match="TPU_ACCELERATOR_TYPE='banana' is not a TPU accelerator type"):
        detect({"TPU_ACCELERATOR_TYPE": "banana", "ISTPUVM": "1"})


def test_detects_this_machine():
    rt = detect_runtime()
    assert rt.kind in ("colab-tpu-vm", "kaggle-tpu-vm", "cloud-tpu-vm", "tpu-node", "gpu", "cpu") and rt.describe()
