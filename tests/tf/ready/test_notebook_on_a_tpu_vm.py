"""Notebook 00 on a TPU VM, as far as this CPU can rehearse one: the variables of a v5e-8 TPU VM
(``TPU_ACCELERATOR_TYPE``, ``ISTPUVM``) make the notebook take its TPU branches, where this environment has
TensorFlow's CPU build (as Kaggle's image before the install cell) and no chip answers. The notebook must run to its
end and give each framework (TensorFlow, PyTorch/XLA, JAX) a verdict, never stop on a `WrongBuildError`. (No
Colab/Kaggle variable: the install cell would install into this environment.)"""
from course_testing import ROOT, run_notebook_alone

NOTEBOOK = ROOT / "notebooks" / "00_is_my_runtime_ready.ipynb"


def test_notebook_00_runs_to_its_verdicts_on_a_tpu_vm_where_nothing_reaches_the_tpu(tmp_path, monkeypatch):
    monkeypatch.setenv("TPU_ACCELERATOR_TYPE", "v5litepod-8")
    monkeypatch.setenv("ISTPUVM", "1")
    monkeypatch.delenv("PJRT_DEVICE", raising=False)
    recorded = run_notebook_alone(NOTEBOOK, tmp_path, monkeypatch, profile="ci", parameters={})
    assert recorded["runtime"] == "cloud-tpu-vm"
    assert recorded["TF first XLA result"] == 83.0  # section 4 ran on the CPU
    # TensorFlow: the CPU build; torch_xla finds no chip and takes its CPU device. Both "does not work" here, or "not
    # checked" while another process on this machine holds /tmp/libtpu_lockfile (a TPU probe of another test)
    assert recorded["TensorFlow here"] in ("does not work", "not checked")
    assert recorded["PyTorch/XLA here"] in ("does not work", "not checked")
    assert recorded["JAX here"] in ("does not work", "not checked")  # the JAX environment has no libtpu: the CPU
