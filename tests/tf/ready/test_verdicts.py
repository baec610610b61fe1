"""Notebook 00's verdicts on the runtimes learners have, rehearsed on the CPU: Colab's v5e-1 and Kaggle's v5e-8 after
the TensorFlow install cell (TensorFlow's libtpu 0.0.14 beside the image's torch_xla), a held TPU, the wrong
TensorFlow build. Every case ends in a verdict, never a `WrongBuildError`. What a TPU would answer is patched in (the
installed versions, the lock holder, the probes, pip); the PyTorch/XLA probe itself runs for real where the CPU can
run it, and with the real libtpu releases loaded by torch_xla (which logs their PJRT API version before it looks for
a chip)."""
import json
import linecache
import os
import sys
from pathlib import Path

import pytest
from course_testing import ROOT, held_libtpu_lock

from tpu_helpers.core.runtime import Runtime
from tpu_helpers.ready import first_xla, verdicts
from tpu_helpers.ready.verdicts import Verdict


def notebook_00_cell(defines: str) -> dict:
    """The names notebook 00's code cell that defines `defines` makes, with their source readable as in a kernel."""
    cells = json.loads((ROOT / "notebooks" / "00_is_my_runtime_ready.ipynb").read_text(encoding="utf-8"))["cells"]
    source = next("".join(c["source"]) for c in cells if c["cell_type"] == "code" and f"def {defines}(" in "".join(
        c["source"]))
    name = "<notebook 00's cell>"  # IPython registers each cell's source in linecache the same way
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    names: dict = {}
    exec(compile(source, name, "exec"), names)
    return names


FIRST_COMPUTATIONS = notebook_00_cell("torch_xla_first_computation")  # the cell defines both
TORCH, JAX = FIRST_COMPUTATIONS["torch_xla_first_computation"], FIRST_COMPUTATIONS["jax_first_computation"]

COLAB_V5E_1 = Runtime("colab-tpu-vm", "colab", "v5litepod-1", "v5e", 1, 1)
KAGGLE_V5E_8 = Runtime("kaggle-tpu-vm", "kaggle", "v5litepod-8", "v5e", 8, 8)
CPU = Runtime("cpu", "local")
PJRT_LINE = "I0000 pjrt_api.cc:167] The PJRT plugin has PJRT API version {}. The framework PJRT API version is {}."


def dists(**versions):
    return {k.replace("_", "-"): v for k, v in versions.items()}


# Colab's TPU image after notebook 00's install cell: its torch_xla 2.9, TensorFlow's tensorflow-tpu and libtpu 0.0.14
COLAB_AFTER_TF_PLAN = dists(torch_xla="2.9.0", tensorflow_tpu="2.20.0", libtpu="0.0.14")
KAGGLE_AFTER_TF_PLAN = dists(torch_xla="2.8.0", tensorflow_tpu="2.20.0", libtpu="0.0.14")
TORCH_XLA_29 = ['libtpu==0.0.21; extra == "tpu"', 'tpu-info; extra == "tpu"']
TORCH_XLA_28 = ['libtpu==0.0.17; extra == "tpu"']


class Calls:
    """A stand-in that records its calls and answers with `answer` (or raises it)."""

    def __init__(self, answer):
        self.answer, self.calls = answer, []

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


@pytest.fixture
def tpu(monkeypatch):
    """Patch in what a TPU VM would answer: ``tpu(probe=..., fetch=..., holder=...)``; returns the probe and fetch."""
    from tpu_helpers.core import tpu_lock

    def patch(probe=None, fetch=None, holder=None):
        probe, fetch = probe or Calls(tpu_result()), fetch or Calls((None, ""))
        monkeypatch.setattr(first_xla, "torch_xla_first_xla", probe)
        monkeypatch.setattr(verdicts, "fetch_libtpu", fetch)
        monkeypatch.setattr(tpu_lock, "libtpu_lock_holder", holder or (lambda **kw: None))
        return probe, fetch

    return patch


def tpu_result(output=""):
    return {"device": "xla:0", "device_type": "TPU", "devices": 1, "value": 83.0,
            "compilations": 1, "torch_xla": "2.9.0", "output": output}


# ------------------------------------------------------------------------------------------------ builds
def _build(monkeypatch, installed, devices=()):
    """check_tpu_build's view of this kernel: `installed` distributions, `devices` TPUs, no other TPU holder."""
    from tpu_helpers.core import frameworks, tpu_lock

    monkeypatch.setattr(frameworks, "installed_version", installed.get)
    monkeypatch.setattr(frameworks, "_tpu_devices", lambda key: list(devices))
    monkeypatch.setattr(tpu_lock, "libtpu_lock_holder", lambda: None)


def test_the_build_checks_report_instead_of_stopping_the_notebook(monkeypatch):
    _build(monkeypatch, dists(tensorflow="2.20.0", libtpu="0.0.14"))  # the install cell not run (Kaggle: tf-cpu)
    ok, found = verdicts.build_check(KAGGLE_V5E_8, "tf")
    assert not ok and "CPU build of TensorFlow" in found and "install cell" in found
    _build(monkeypatch, COLAB_AFTER_TF_PLAN)
    ok, found = verdicts.build_check(COLAB_V5E_1, "tf")
    assert ok and "tensorflow-tpu 2.20.0, libtpu 0.0.14" in found
    ok, found = verdicts.build_check(COLAB_V5E_1, "tf", probe_devices=True)
    assert not ok and "lists no TPU device" in found
    assert verdicts.build_check(CPU, "tf") == (True, "not on a TPU: the TensorFlow build installed here is the right one")


def test_a_held_tpu_is_reported_with_its_holder(tmp_path, monkeypatch, tpu):
    from tpu_helpers.core import frameworks, tpu_lock
    from tpu_helpers.core.tpu_lock import libtpu_lock_holder

    monkeypatch.setattr(frameworks, "installed_version", COLAB_AFTER_TF_PLAN.get)
    with held_libtpu_lock(tmp_path / "libtpu_lockfile", "-m", "ipykernel_launcher") as pid:
        holder = lambda **kw: libtpu_lock_holder(tmp_path / "libtpu_lockfile")  # noqa: E731
        monkeypatch.setattr(tpu_lock, "LIBTPU_LOCKFILE", str(tmp_path / "libtpu_lockfile"))
        ok, found = verdicts.build_check(COLAB_V5E_1, "tf")
        assert ok is None and f"process {pid}" in found
        tf_held = verdicts.tf_verdict(COLAB_V5E_1, ok, found, {"xla": True, "device": "/CPU:0"})
        assert tf_held.works is None and tf_held.line().startswith("TensorFlow: not checked. The TPU is already in use")
        probe, _ = tpu(holder=holder)
        verdict, result = verdicts.torch_verdict(COLAB_V5E_1, COLAB_AFTER_TF_PLAN, TORCH_XLA_29, TORCH)
    assert verdict.works is None and result is None and not probe.calls, "the chips are held: nothing probed"
    assert f"process {pid}" in verdict.found and "ipykernel_launcher" in verdict.found and f"kill {pid}" in verdict.todo
    assert verdict.line().startswith("PyTorch/XLA: not checked. The TPU is already in use by process")


def test_this_kernel_holding_the_tpu_says_restart(tpu):
    tpu(holder=lambda **kw: os.getpid())
    verdict, _ = verdicts.torch_verdict(COLAB_V5E_1, COLAB_AFTER_TF_PLAN, TORCH_XLA_29, TORCH)
    assert verdict.works is None and verdict.found.startswith("This kernel itself holds the TPU")
    assert "restart the runtime" in verdict.todo
    jax_verdict, result = verdicts.jax_verdict(COLAB_V5E_1, JAX)
    assert jax_verdict.works is None and result is None and jax_verdict.found.startswith("This kernel itself holds")


# ---------------------------------------------------------------------------------- PyTorch/XLA's libtpu
def test_torch_xla_s_own_libtpu_release_comes_from_its_metadata():
    assert verdicts.torch_xla_libtpu(TORCH_XLA_29) == "0.0.21" and verdicts.torch_xla_libtpu(TORCH_XLA_28) == "0.0.17"
    assert verdicts.torch_xla_libtpu(["numpy", "pyyaml"]) is None
    requires = first_xla.torch_environment()[2]  # the PyTorch/XLA environment's torch_xla 2.9.0 (a child reads it)
    assert verdicts.torch_xla_libtpu(requires) == "0.0.21"
    assert verdicts.libtpu_matches("0.0.21.1", "0.0.21") and verdicts.libtpu_matches("0.0.21", "0.0.21")
    assert not verdicts.libtpu_matches("0.0.14", "0.0.21") and not verdicts.libtpu_matches("0.0.210", "0.0.21")
    assert not verdicts.libtpu_matches(None, "0.0.21")


def test_the_pjrt_api_line_is_read_from_the_child_s_log():
    assert verdicts.pjrt_api_versions("x\n" + PJRT_LINE.format("0.68", "0.75") + "\ny") == ("0.68", "0.75")
    assert verdicts.pjrt_api_versions("no such line") is None


class FakePip:
    """pip for `fetch_libtpu`: the exact release has no wheel for this Python, its post-release has (0.0.21 on
    Python 3.13), as the package registry has it."""

    def __init__(self, wheels=("0.0.21.1",)):
        self.wheels, self.specs = wheels, []

    def __call__(self, argv, **kwargs):
        import subprocess

        spec, folder = argv[-1], Path(argv[argv.index("--target") + 1])
        self.specs.append(spec)
        want = spec.split("==", 1)[1]
        match = [w for w in self.wheels if w == want or (want.endswith(".*") and w.startswith(want[:-1]))]
        if not match:
            return subprocess.CompletedProcess(argv, 1, "", f"ERROR: No matching distribution found for {spec}\n")
        (folder / "libtpu").mkdir(parents=True, exist_ok=True)
        (folder / "libtpu" / "libtpu.so").write_bytes(b"")
        (folder / f"libtpu-{match[-1]}.dist-info").mkdir(exist_ok=True)
        return subprocess.CompletedProcess(argv, 0, "", "")


def test_fetch_libtpu_takes_the_post_release_when_the_release_has_no_wheel(tmp_path, monkeypatch):
    monkeypatch.setattr(verdicts, "SIDE_FOLDER", tmp_path)
    monkeypatch.setattr(verdicts.subprocess, "run", pip := FakePip())
    path, what = verdicts.fetch_libtpu("0.0.21")
    assert path == str(tmp_path / "libtpu-0.0.21" / "libtpu" / "libtpu.so") and "libtpu 0.0.21.1" in what
    assert pip.specs == ["libtpu==0.0.21", "libtpu==0.0.21.*"]
    monkeypatch.setattr(verdicts.subprocess, "run", again := FakePip())
    assert verdicts.fetch_libtpu("0.0.21")[0] == path and not again.specs
    monkeypatch.setattr(verdicts.subprocess, "run", FakePip(wheels=()))
    path, what = verdicts.fetch_libtpu("0.0.17")
    assert path is None and "pip could not install libtpu==0.0.17.*" in what and "No matching distribution" in what


def test_colab_v5e_1_probes_torch_xla_with_its_own_libtpu(tpu):
    probe, fetch = tpu(Calls(tpu_result(PJRT_LINE.format("0.75", "0.75"))),
                       Calls(("/side/libtpu/libtpu.so", "libtpu 0.0.21.1 from /side")))
    verdict, result = verdicts.torch_verdict(COLAB_V5E_1, COLAB_AFTER_TF_PLAN, TORCH_XLA_29, TORCH)
    assert fetch.calls == [(("0.0.21",), {})]
    assert probe.calls == [((COLAB_V5E_1, TORCH), {"libtpu_path": "/side/libtpu/libtpu.so"})]
    assert verdict.works is True and verdict.where == "TPU" and result["device_type"] == "TPU"
    assert "asks libtpu 0.0.21" in verdict.found and "libtpu 0.0.21.1 from /side" in verdict.found
    assert "PJRT API: plugin 0.75, framework 0.75" in verdict.found


def test_a_runtime_with_torch_xla_s_libtpu_needs_no_side_folder(tpu):
    probe, fetch = tpu()
    verdict, _ = verdicts.torch_verdict(COLAB_V5E_1, dists(torch_xla="2.9.0", libtpu="0.0.21.1"), TORCH_XLA_29, TORCH)
    assert verdict.works is True and not fetch.calls and probe.calls[0][1] == {"libtpu_path": None}


def test_kaggle_v5e_8_without_network_names_the_libtpu_mismatch_not_another_process(tpu):
    output = "\n".join([PJRT_LINE.format("0.68", "0.70"), "RuntimeError: TPU initialization failed"])
    probe, _ = tpu(Calls(first_xla.ProbeFailed(1, output)),
                   Calls((None, "pip could not install libtpu==0.0.17.* into /side (network unreachable)")))
    verdict, result = verdicts.torch_verdict(KAGGLE_V5E_8, KAGGLE_AFTER_TF_PLAN, TORCH_XLA_28, TORCH)
    assert verdict.works is False and result is None and probe.calls[0][1] == {"libtpu_path": None}
    assert verdict.found.startswith("libtpu mismatch (exit 1)")
    assert "torch_xla asks libtpu 0.0.17, this runtime has libtpu 0.0.14" in verdict.found
    assert "PJRT API version 0.68, torch_xla's framework 0.70" in verdict.found
    assert "network unreachable" in verdict.found and "install cell" in verdict.todo and "(0.0.17)" in verdict.todo
    assert "another process" not in verdict.line().replace("Nothing else holds", "")


def test_the_pjrt_line_alone_names_a_mismatch():
    found, todo = verdicts.torch_failure(PJRT_LINE.format("0.68", "0.75"), 1, have="0.0.21", want="0.0.21", side=True)
    assert found.startswith("libtpu mismatch") and "0.68" in found and "asks libtpu" not in found


def test_a_failure_with_no_mismatch_shows_the_child_s_last_lines(tpu):
    output = PJRT_LINE.format("0.75", "0.75") + "\nline a\nRuntimeError: something else"
    tpu(Calls(first_xla.ProbeFailed(1, output)))
    verdict, _ = verdicts.torch_verdict(COLAB_V5E_1, dists(torch_xla="2.9.0", libtpu="0.0.21.1"), TORCH_XLA_29, TORCH)
    assert verdict.works is False and "no libtpu mismatch" in verdict.found
    assert "RuntimeError: something else" in verdict.found and "notebook 02" in verdict.todo
    timed_out, _ = verdicts.torch_failure("", None, have="0.0.21", want="0.0.21", side=False)
    assert "timed out" in timed_out


def test_torch_xla_on_the_wrong_device_or_missing(tpu):
    tpu(Calls({**tpu_result(), "device_type": "CPU"}))
    verdict, _ = verdicts.torch_verdict(COLAB_V5E_1, dists(torch_xla="2.9.0", libtpu="0.0.21"), TORCH_XLA_29, TORCH)
    assert verdict.works is False and "ran on CPU, not the TPU" in verdict.found and "PJRT_DEVICE" in verdict.todo
    probe, _ = tpu()
    verdict, _ = verdicts.torch_verdict(COLAB_V5E_1, dists(tensorflow_tpu="2.20.0"), [], TORCH)
    assert verdict.works is None and "not installed" in verdict.found and not probe.calls
    tpu(Calls(first_xla.ProbeFailed(1, "ImportError: undefined symbol")))
    verdict, _ = verdicts.torch_verdict(CPU, dists(torch_xla="2.9.0"), [], TORCH)
    assert verdict.works is False and "undefined symbol" in verdict.found and "./course setup" in verdict.todo


def test_the_real_probe_on_this_cpu():
    installed, _, requires = first_xla.torch_environment()
    verdict, result = verdicts.torch_verdict(CPU, installed, requires, TORCH)
    assert verdict.works is True and verdict.where == "CPU", verdict.line()
    assert result["value"] == 83.0 and result["device_type"] == "CPU"


@pytest.fixture(scope="module")
def real_libtpu():
    """libtpu 0.0.14 (TensorFlow's) and 0.0.21 (torch_xla 2.9's) from the package registry, in side folders."""
    found = {}
    for version in ("0.0.14", "0.0.21"):
        path, what = verdicts.fetch_libtpu(version)
        if not path:
            pytest.skip(f"needs libtpu {version} from the package registry: {what}")
        found[version] = path
    return found


def test_the_real_libtpu_mismatch_is_named_from_torch_xla_s_own_log(real_libtpu, monkeypatch, tpu):
    """torch_xla 2.9 loading TensorFlow's libtpu 0.0.14 logs "PJRT API version 0.68 ... 0.75" before it looks for a
    chip; with its own 0.0.21 from the side folder (``TPU_LIBRARY_PATH``) the versions agree. Off a TPU both then
    fail to find one, which the verdict must not blame on a libtpu mismatch in the second case."""
    monkeypatch.setenv("PJRT_DEVICE", "TPU")  # make the child load libtpu here, where there is no chip
    monkeypatch.setenv("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")  # and leave /tmp/libtpu_lockfile alone
    monkeypatch.setenv("TPU_SKIP_MDS_QUERY", "1")  # no TPU VM metadata server here
    real_probe = first_xla.torch_xla_first_xla
    tensorflow_s = lambda rt, computation, libtpu_path: real_probe(  # noqa: E731
        rt, computation, libtpu_path=libtpu_path or real_libtpu["0.0.14"])  # the installed libtpu: TensorFlow's
    tpu(tensorflow_s, lambda version: (None, "no network"))
    verdict, _ = verdicts.torch_verdict(COLAB_V5E_1, COLAB_AFTER_TF_PLAN, TORCH_XLA_29, TORCH)
    assert verdict.works is False and "PJRT API version 0.68, torch_xla's framework 0.75" in verdict.found, verdict.found
    tpu(tensorflow_s, lambda version: (real_libtpu[version], f"libtpu {version}"))
    verdict, _ = verdicts.torch_verdict(COLAB_V5E_1, COLAB_AFTER_TF_PLAN, TORCH_XLA_29, TORCH)
    assert verdict.works is False and "no libtpu mismatch" in verdict.found, verdict.found


# ------------------------------------------------------------------------------------------------- JAX
def test_the_real_jax_probe_on_this_cpu():
    """The JAX environment's interpreter (TPU_COURSE_PYTHON_JAX, exported by ./course) compiles gram_sum once."""
    verdict, result = verdicts.jax_verdict(CPU, JAX)
    assert verdict.works is True and verdict.where == "CPU", verdict.line()
    assert result["value"] == 83.0 and result["compilations"] == 1 and result["device_type"] == "CPU"
    assert verdict.line().startswith("JAX: works here (on the CPU). JAX ")


def test_no_jax_interpreter_says_so_and_where_to_go(monkeypatch):
    monkeypatch.setenv("TPU_COURSE_PYTHON_JAX", sys.executable)  # framework_python's fallback: this (TF) kernel's
    verdict, result = verdicts.jax_verdict(CPU, JAX)
    assert verdict.works is None and result is None and "JAX is not installed" in verdict.found, verdict.line()
    assert "notebook 09" in verdict.todo and "./course setup --tpu" in verdict.todo


def test_a_tpu_vm_whose_jax_finds_no_tpu_does_not_work(tpu, monkeypatch):
    """On a TPU VM the child keeps JAX's own platform choice: here it finds no TPU and takes the CPU, or fails when
    told to use the TPU; both are "does not work" with what to do, never an exception."""
    tpu()  # nothing holds the TPU
    monkeypatch.delenv("JAX_PLATFORMS", raising=False)
    verdict, result = verdicts.jax_verdict(KAGGLE_V5E_8, JAX)
    assert verdict.works is False and result["device_type"] == "CPU" and "not on the TPU" in verdict.found
    assert "no TPU it can use" in verdict.todo and "notebook 09" in verdict.todo
    monkeypatch.setenv("JAX_PLATFORMS", "tpu")
    verdict, result = verdicts.jax_verdict(KAGGLE_V5E_8, JAX)
    assert verdict.works is False and result is None and "The JAX check failed" in verdict.found, verdict.found
    assert "tpu" in verdict.found.lower().split("exit 1)", 1)[1] and "notebook 09" in verdict.todo


# ------------------------------------------------------------------------------------------ TensorFlow
def test_tensorflow_verdicts():
    listed = {"xla": True, "device": "/device:TPU:0", "tensorflow": "2.20.0", "devices": ["/device:TPU:0"]}
    assert verdicts.tf_verdict(COLAB_V5E_1, True, "8 TPU devices", listed) == Verdict(
        "tf", True, "TPU", "TensorFlow 2.20.0 compiled with XLA on /device:TPU:0.")
    host_only = {"xla": False, "why": "could not find registered transfer manager for platform Host",
                 "device": "/CPU:0", "tensorflow": "2.20.0"}
    none_found = "tensorflow-tpu 2.20.0 with libtpu 0.0.14 lists no TPU device. ... PROFILE = \"cpu\" ..."
    verdict = verdicts.tf_verdict(KAGGLE_V5E_8, False, none_found, host_only)
    assert verdict.works is False and verdict.found == none_found
    cpu_build = {"xla": True, "device": "/CPU:0", "tensorflow": "2.20.0"}
    verdict = verdicts.tf_verdict(KAGGLE_V5E_8, False, "this kernel has the CPU build of TensorFlow", cpu_build)
    assert verdict.works is False and "Only this machine's CPU" in verdict.found
    broken = {"xla": False, "why": "NotFoundError on the TPU: boom", "tpu_error": True}
    verdict = verdicts.tf_verdict(COLAB_V5E_1, True, "1 TPU devices", broken)
    assert verdict.works is False and "could not use it" in verdict.found and "PROFILE" in verdict.todo
    assert verdicts.tf_verdict(CPU, True, "not on a TPU", {**cpu_build}).where == "CPU"
    verdict = verdicts.tf_verdict(CPU, True, "not on a TPU", host_only)
    assert verdict.works is False and "CPU build" in verdict.todo


def test_tf_probe_reports_a_tpu_error_and_stays_on_the_cpu_without_the_tpu(monkeypatch):
    monkeypatch.setattr(first_xla, "tf_first_xla", failing := Calls(RuntimeError("TPU initialization failed\nmore")))
    result = verdicts.tf_probe(COLAB_V5E_1, True)
    assert result["xla"] is False and result["why"] == "RuntimeError on the TPU: TPU initialization failed"
    assert failing.calls[0][1] == {"tpu": True}
    host = verdicts.tf_probe(KAGGLE_V5E_8, False)  # TensorFlow found no TPU, and the host fails too
    assert host["xla"] is False and host["why"].startswith("RuntimeError on the host") and not host["tpu_error"]
    assert failing.calls[1][1] == {"tpu": False}
    with pytest.raises(RuntimeError):
        verdicts.tf_probe(CPU, False)  # off a TPU an error is a bug, not a verdict


def test_the_report_has_one_paragraph_per_framework():
    lines = [Verdict("torch", True, "TPU", "ran.").line(), Verdict("tf", False, "", "no TPU.", "use cpu.").line()]
    assert lines == ["PyTorch/XLA: works here (on the TPU). ran.",
                     "TensorFlow: does not work here. no TPU. To do: use cpu."]
    assert sys.modules.get("torch_xla") is None


def test_a_probe_that_runs_out_of_time_is_a_failure_with_no_exit_status():
    with pytest.raises(first_xla.ProbeFailed) as e:
        first_xla.torch_xla_first_xla(CPU, TORCH, timeout=0.5)  # torch_xla takes seconds to import
    assert e.value.returncode is None and "exit None" in str(e.value)
    assert "timed out" in verdicts.torch_failure(e.value.output, e.value.returncode, have=None, want=None, side=False)[0]
