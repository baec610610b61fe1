"""The learner's install path: the install cells on every hosted target, the Cloud TPU VM environments, the wheel.

Each notebook's install cell is executed as Colab or Kaggle would run it (their environment variables, the device
files of a TPU or GPU runtime), with ``subprocess.Popen`` captured instead of running pip: the calls must be
the plan of `install_plan` for that target, and the TPU plans must keep the CPU builds out.
"""
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import install_plan
import nbformat
import notebook_conventions as nc
import pytest
from course_testing import ROOT

HOSTS = {"colab": {"COLAB_RELEASE_TAG": "release-colab-20261101"}, "kaggle": {"KAGGLE_KERNEL_RUN_TYPE": "Interactive"}}
DEVICES = {"tpu": {"/dev/vfio/0"}, "gpu": {"/dev/nvidia0"}, "cpu": set()}


def run_install_cell(source: str, env: dict, device_files: set, monkeypatch, pip_says: str = "") -> list[list[str]]:
    """Execute an install cell with this environment and these device files, pip replaced by a process that prints
    ``pip_says``; return the pip argument lists."""
    calls = []
    monkeypatch.setattr(os, "environ", dict(env))
    real_exists = os.path.exists
    monkeypatch.setattr(os.path, "exists", lambda p: p in device_files if str(p).startswith("/dev/") else real_exists(p))

    class Pip:
        def __init__(self, cmd, *a, **k):
            assert cmd[:3] == [sys.executable, "-m", "pip"], cmd
            calls.append(list(cmd[3:]))
            self.stdout = iter(pip_says.splitlines(keepends=True))
            self.returncode = 0

        def wait(self):
            return self.returncode

    monkeypatch.setattr(subprocess, "Popen", Pip)
    exec(compile(source, "<install cell>", "exec"), {})
    return calls


def tpu_tf_problems(calls: list[list[str]]) -> list[str]:
    """What makes a TensorFlow TPU install wrong: the CPU build installed or left beside the TPU build."""
    out = []
    installs = [c for c in calls if "install" in c]
    flat = [a for c in installs for a in c]
    if not any(a.startswith("tensorflow-tpu==") for a in flat):
        out.append("no tensorflow-tpu")
    if any(re.match(r"tensorflow(\[[^\]]*\])?==", a) for a in flat):
        out.append("installs the tensorflow (CPU) distribution")
    for c in installs:  # anything that requires `tensorflow` by name must come without its dependencies
        if any(a.startswith("tf-keras") for a in c) and "--no-deps" not in c:
            out.append("tf-keras with its dependencies pulls in the tensorflow distribution")
    if not any(a.startswith("libtpu==") for a in flat):
        out.append("libtpu not pinned")
    first_tpu = next(i for i, c in enumerate(calls) if any(a.startswith("tensorflow-tpu") for a in c)) \
        if "no tensorflow-tpu" not in out else 0
    if not any(c[:1] == ["uninstall"] and "tensorflow" in c and "tensorflow-cpu" in c for c in calls[:first_tpu]):
        out.append("a preinstalled tensorflow/tensorflow-cpu is not removed first")
    return out


@pytest.mark.parametrize("python", install_plan.PYTHONS)
@pytest.mark.parametrize("host", sorted(HOSTS))
@pytest.mark.parametrize("accelerator", install_plan.ACCELERATORS)
@pytest.mark.parametrize("framework", install_plan.FRAMEWORKS)
def test_install_cell_runs_the_plan_of_its_target(framework, accelerator, host, python, monkeypatch):
    source = nc.install_source(framework)  # every notebook of the framework carries it (test_notebook_conventions)
    env = {"PATH": "/usr/bin", **HOSTS[host]}
    if accelerator == "tpu" and host == "colab":
        env["TPU_ACCELERATOR_TYPE"] = "v5litepod-1"
    monkeypatch.setattr(sys, "version_info", (3, int(python.split(".")[1]), 0, "final", 0))
    calls = run_install_cell(source, env, DEVICES[accelerator], monkeypatch)
    plans = install_plan.plan_variants(framework, nc.GITHUB_REPO)
    assert calls == plans[install_plan.plan_key(plans, accelerator, host, python)]
    assert calls[-1][-1] == f"tpu-course @ git+https://github.com/{nc.GITHUB_REPO}@v{nc.VERSION}", \
        "the helpers come from the notebook's own revision"
    flat = " ".join(a for c in calls for a in c)
    if framework == "tf" and accelerator == "tpu":
        assert tpu_tf_problems(calls) == []
    elif framework == "tf":
        assert "tensorflow-tpu" not in flat and "libtpu" not in flat
    elif framework == "jax":  # an image's own JAX and libtpu are never touched; elsewhere jax (jax[tpu] on a TPU)
        assert "tensorflow" not in flat and "torch" not in flat and "transformers" not in flat
        have = install_plan.image_snapshot(host, accelerator=accelerator)[1] \
            if (host, accelerator) in install_plan.SNAPSHOTS else {}
        if "jax" in have:
            assert not [a for a in flat.split() if a.split("==")[0] in (*install_plan.JAX_FAMILY, *have)]
        else:
            assert f"jax{'[tpu]' if accelerator == 'tpu' else ''}=={install_plan.read_pins('jax')['jax']}" in flat
    else:
        assert "tensorflow" not in flat
        torch_call = next(c for c in calls if any(a.startswith("torch==") for a in c))
        family = {a.split("==")[0] for a in torch_call if "==" in a}
        assert {"torch", "torchvision", "torchaudio"} <= family, "torch changes with the torchvision/torchaudio built for it"
        if accelerator != "tpu":
            assert "libtpu" not in flat and "[tpu]" not in flat
            # PyTorch's CPU wheels (torch_xla has no CUDA build: XLA runs on the CPU of a GPU runtime too)
            assert torch_call[torch_call.index("--extra-index-url") + 1] == install_plan.TORCH_CPU_INDEX
        elif host == "kaggle":  # the image's own torch family, as its snapshot lists it: no 6 GB CUDA build
            kept = install_plan.image_snapshot("kaggle")[1]
            for name in ("torch", "torch-xla", "torchvision", "torchaudio", "libtpu"):
                assert f"{name}=={kept[name]}" in flat, name
        elif python == "3.13" or host == "colab":  # libtpu 0.0.21 has no cp313 wheel (Colab's Python); 0.0.21.1 has
            assert "torch_xla[tpu]" not in flat and "libtpu==0.0.21.1" in flat
        else:
            assert "torch_xla[tpu]==" in flat
        # the image's Hugging Face stack stays (transformers 5 on Colab's and Kaggle's TPU images, Colab's CPU/GPU)
        if (host, accelerator) in install_plan.SNAPSHOTS:
            have = install_plan.image_snapshot(host, accelerator=accelerator)[1]
            assert not [a for a in flat.split() if a.split("==")[0] in have and a.split("==")[0] in install_plan.HF_STACK]
            assert "lightning==" in flat


def test_pytorch_plans_keep_the_hosted_images_hugging_face_stack():
    """Issue: notebook 05's cell moved Colab's transformers 5.15 -> 4.57.6 and hub 1.27 -> 0.36, and on Kaggle pip's
    red ERROR (diffusers needs hub >= 1.32). Now the torch plans install none of the image's HF packages."""
    plans = install_plan.plan_variants("torch", "o/r", version="0.0.0")
    colab = " ".join(a for c in plans["tpu-colab"] for a in c)
    for name in install_plan.HF_STACK:
        assert f"{name}==" not in colab, name
    assert "libtpu==0.0.21.1" in colab and "lightning==" in colab  # Colab's Python 3.13 variant, plus what it lacks
    kaggle = " ".join(a for c in plans["tpu-kaggle"] for a in c)
    assert "huggingface-hub==" not in kaggle and "transformers==" not in kaggle
    assert f"datasets=={install_plan.read_pins('torch')['datasets']}" in kaggle  # the image has none
    for key in ("cpu-colab", "gpu-colab"):
        assert "transformers==" not in " ".join(a for c in plans[key] for a in c), key
    # the TensorFlow plans keep transformers 4.57 (the last line with TF models) everywhere
    for calls in install_plan.plan_variants("tf", "o/r", version="0.0.0").values():
        assert f"transformers=={install_plan.read_pins('tf')['transformers']}" in [a for c in calls for a in c]
    # an image with transformers 4 keeps nothing (the PyTorch lessons need transformers 5)
    assert install_plan.keeps_hf("torch", "tpu", None, install_plan.read_pins("torch")) == set()
    assert install_plan.keeps_hf("tf", "tpu", "colab", install_plan.read_pins("tf")) == set()


def test_each_environment_reads_its_own_pin_files_and_the_marked_no_deps_pin():
    tf, torch = install_plan.read_pins("tf"), install_plan.read_pins("torch")
    common = install_plan.read_pins(install_plan.COMMON)
    assert common.items() <= tf.items() and common.items() <= torch.items()
    assert tf["transformers"].startswith("4.57.") and torch["transformers"].startswith("5.")
    assert not {"torch", "torch-xla", "accelerate", "lightning"} & set(tf)
    assert not {"tensorflow", "tensorflow-cpu", "tf-keras"} & set(torch)
    assert install_plan.no_deps_pins("tf") == [f"tf-keras=={tf['tf-keras']}"] and install_plan.no_deps_pins("torch") == []
    assert install_plan.pip_check_expected("tf") == [f"tf-keras {tf['tf-keras']} requires tensorflow, which is not "
                                                     "installed."]
    assert "tf-keras" not in install_plan.read_pins(install_plan.REQUIREMENTS["tf"])  # a comment to pip and setuptools
    course = (ROOT / "course").read_text()
    assert "no-deps \"$fw\"" in course and "pip-check-expected" in course


@pytest.mark.parametrize("python", ["3.10", "3.14"])
def test_install_cell_stops_on_a_python_the_course_does_not_support(python, monkeypatch):
    source = nc.install_source("tf")
    monkeypatch.setattr(sys, "version_info", (3, int(python.split(".")[1]), 0, "final", 0))
    with pytest.raises(SystemExit, match=rf"Python {python}; the course supports 3.11-3.13"):
        run_install_cell(source, {"PATH": "/usr/bin", **HOSTS["colab"]}, DEVICES["tpu"], monkeypatch)


def test_install_cell_names_the_expected_conflicts_and_only_those(monkeypatch, capsys):
    """pip's red ERROR after a TensorFlow notebook's install on Kaggle (its diffusers wants huggingface-hub >= 1.32, the
    TensorFlow pins 0.36; the PyTorch plans keep the image's hub): the cell says right after it that it is expected and
    harmless, because diffusers is not a package the course uses; a conflict of one of the course's packages
    (transformers, here) is called not expected."""
    source = nc.install_source("tf")
    report = ("ERROR: pip's dependency resolver does not currently take into account all the packages that are "
              "installed. This behaviour is the source of the following dependency conflicts.\n"
              "diffusers 0.42.1 requires huggingface-hub<3.0,>=1.32.0, but you have huggingface-hub 0.36.2 which is "
              "incompatible.\n")
    run_install_cell(source, {"PATH": "/usr/bin", **HOSTS["kaggle"]}, DEVICES["tpu"], monkeypatch, report)
    out = capsys.readouterr().out
    assert "Expected and harmless: pip's ERROR lines above about diffusers." in out and "Not expected" not in out
    ours = report + ("transformers 4.57.6 requires huggingface-hub<1.0,>=0.34.0, but you have huggingface-hub 1.32.0 "
                     "which is incompatible.\n")
    run_install_cell(source, {"PATH": "/usr/bin", **HOSTS["kaggle"]}, DEVICES["tpu"], monkeypatch, ours)
    out = capsys.readouterr().out
    assert "about diffusers." in out and "Not expected" in out  # and it is listed after that line:
    assert out.rindex("transformers 4.57.6 requires") > out.index("Not expected")


def test_the_conflict_rule_reads_both_of_pips_wordings():
    """pip install's conflict report and `pip check` word a conflict differently; both name the package and what it
    requires, and the course's distributions include what its packages require (as installed)."""
    assert install_plan.conflict_parts("diffusers 0.42.1 requires huggingface-hub<3.0,>=1.32.0, but you have "
                                       "huggingface-hub 0.36.2 which is incompatible.") == ("diffusers", "huggingface-hub")
    assert install_plan.conflict_parts("tf_keras 2.20.1 requires tensorflow, which is not installed.") == \
        ("tf-keras", "tensorflow")
    assert install_plan.conflict_parts("Diffusers 0.42.1 has requirement huggingface-hub<3.0,>=1.32.0, but you have "
                                       "huggingface-hub 0.36.2.") == ("diffusers", "huggingface-hub")
    assert install_plan.conflict_parts("No broken requirements found.") is None
    # read where the PyTorch/XLA packages are installed (the torch environment: ./course names its interpreter)
    from tpu_helpers.core.frameworks import framework_python

    script = ("import json, runpy, sys; p = runpy.run_path(sys.argv[1]); print(json.dumps(sorted(p['course_distributions']"
              "(p['plan_roots'](p['hosted_plan']('torch', 'cpu', 'o/r'))))))")
    proc = subprocess.run([framework_python("torch"), "-c", script, str(ROOT / "tools" / "install_plan.py")], capture_output=True,
                          text=True, timeout=120)
    course = set(__import__("json").loads(proc.stdout))
    assert {"torch", "torchvision", "lightning", "torchmetrics", "transformers", "huggingface-hub", "tpu-course"} <= course
    assert "diffusers" not in course and "--extra-index-url" not in course


def test_install_cell_takes_another_helper_when_told(monkeypatch):
    """The hosted rehearsal (and an offline classroom) installs the helper from a wheel file instead of GitHub."""
    source = nc.install_source("tf")
    env = {"PATH": "/usr/bin", **HOSTS["kaggle"], "TPU_COURSE_HELPER": "/tmp/tpu_course-0-py3-none-any.whl"}
    calls = run_install_cell(source, env, DEVICES["tpu"], monkeypatch)
    assert calls[-1] == ["-q", "install", "--no-deps", "/tmp/tpu_course-0-py3-none-any.whl"]


def test_every_supported_python_is_admitted_everywhere():
    """pyproject's requires-python, ./course's check and the plans name the same Pythons, and each hosted image's
    Python is one of them (the helper install failed on Colab's 3.13 when the package said <3.13)."""
    spec = re.search(r'^requires-python = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    lower, upper = re.fullmatch(r">=3\.(\d+),<3\.(\d+)", spec).groups()
    assert [f"3.{m}" for m in range(int(lower), int(upper))] == list(install_plan.PYTHONS)
    case = re.search(r'case "\$PYVER" in ([0-9.|]+)\)', (ROOT / "course").read_text()).group(1)
    assert case.split("|") == list(install_plan.PYTHONS)
    for image, accelerator in install_plan.SNAPSHOTS:
        python = install_plan.image_snapshot(image, accelerator=accelerator)[0]["python"]
        assert ".".join(python.split(".")[:2]) in install_plan.PYTHONS, (image, python)


def test_snapshots_are_dated_and_sourced():
    for image, accelerator in install_plan.SNAPSHOTS:
        header, versions = install_plan.image_snapshot(image, accelerator=accelerator)
        assert re.fullmatch(r"[0-9a-f]{40}", header["commit"]) and re.fullmatch(r"\d{4}-\d\d-\d\d", header["date"])
        assert header["source"].startswith("https://github.com/") and header["image"] == image
        assert {"torch", "torchvision", "torchaudio"} <= set(versions), image
        if accelerator == "tpu":
            assert {"torch-xla", "libtpu"} <= set(versions), image
    colab = install_plan.image_snapshot("colab")[1]
    assert colab["torch"] == "2.9.0" and colab["libtpu"] == "0.0.21.1"  # read from `torch @ ...2.9.0%2Bcpu...` too
    # Colab's CPU and GPU runtimes: torch 2.11 (PyTorch's +cpu wheel; +cu128), no torch_xla: the plans change torch
    for accelerator, torch in (("cpu", "2.11.0"), ("gpu", "2.11.0+cu128")):
        versions = install_plan.image_snapshot("colab", accelerator=accelerator)[1]
        assert versions["torch"] == torch and "torch-xla" not in versions, accelerator


def test_every_torch_the_plans_install_comes_with_its_own_torchvision_and_torchaudio():
    """A plan that changes torch pins the torchvision and torchaudio built for it (their wheels require torch==...
    exactly: `resolve_plans` resolves them together on each image's Python, tests/hosted)."""
    pins = install_plan.read_pins("torch")
    family = install_plan.TORCH_COMPANIONS[pins["torch"]]
    assert family["torchaudio"] == pins["torch"]  # torchaudio's releases carry torch's version
    major, minor = pins["torch"].split(".")[:2]
    assert family["torchvision"].split(".")[:2] == ["0", str(int(minor) + 15)] and major == "2"  # 2.9 <-> 0.24
    with pytest.raises(ValueError, match="TORCH_COMPANIONS"):
        install_plan.framework_calls("torch", "cpu", {**pins, "torch": "2.99.0"})


def test_notebook_00_checks_what_its_plan_installs():
    """versions.PLAN_PACKAGES (what notebook 00 checks against the pins) is what the install plans install."""
    from tpu_helpers.core import versions

    for fw in install_plan.FRAMEWORKS:
        hosted = install_plan.HOSTED_JAX if fw == "jax" else install_plan.HOSTED_COMMON + install_plan.HOSTED_EXTRA[fw]
        planned = {n.lower().replace("tensorflow-cpu", "tensorflow") for n in install_plan.FRAMEWORK_PINS[fw]
                   + tuple(hosted)}
        assert planned == set(versions.PLAN_PACKAGES[fw]), fw
    pins = {n.replace("tensorflow-cpu", "tensorflow"): v for n, v in install_plan.read_pins("tf").items()}
    colab = {"tensorflow": "2.20.0", "tf-keras": pins["tf-keras"], "transformers": pins["transformers"],
             "torch-xla": "2.9.0", "accelerate": "1.14.0", "jax": "0.7.2"}
    mismatches, kept = versions.plan_check("tf", pins, colab)
    assert mismatches == {} and kept == {"torch-xla": "2.9.0", "accelerate": "1.14.0", "jax": "0.7.2"}
    mismatches, _ = versions.plan_check("tf", pins, {**colab, "transformers": "5.15.0"})
    assert mismatches == {"transformers": (pins["transformers"], "5.15.0")}


def test_tpu_checker_rejects_the_one_call_install_that_installs_two_tensorflows():
    """The install cell before this plan: tensorflow-tpu and tf-keras in one pip call (tf-keras then pulls the CPU
    `tensorflow` into the same folder), libtpu left to pip."""
    old = [["install", "-q", "tensorflow-tpu==2.20.0", "-f", "https://storage.googleapis.com/libtpu-tf-releases/"
            "index.html", "transformers==4.57.6", "tf-keras==2.20.1"]]
    found = " | ".join(tpu_tf_problems(old))
    assert "tf-keras with its dependencies" in found and "libtpu not pinned" in found


def test_install_cell_does_nothing_off_colab_and_kaggle(monkeypatch):
    for path in nc.notebook_paths():
        cell = nbformat.read(path, as_version=4).cells[1]
        assert run_install_cell(cell.source, {"PATH": "/usr/bin"}, {"/dev/vfio/0"}, monkeypatch) == []


def test_cloud_tpu_vm_environments_hold_one_framework_each_with_its_tpu_build():
    pins = {**install_plan.read_pins("tf"), **install_plan.read_pins("torch")}
    tf_env = install_plan.vm_requirements("tf")
    torch_env = install_plan.vm_requirements("torch")
    names = lambda lines: {re.split(r"[=\[<>~ ]", ln.split("#")[0].strip())[0].lower().replace("_", "-")  # noqa: E731
                           for ln in lines if ln.split("#")[0].strip()}
    assert {"tensorflow-tpu", "libtpu"} <= names(tf_env)
    assert not names(tf_env) & {"tensorflow", "tensorflow-cpu", "tf-keras", "torch", "torch-xla", "accelerate"}
    assert install_plan.vm_no_deps("tf") == [f"tf-keras=={pins['tf-keras']}"]
    assert f"torch_xla[tpu]=={pins['torch-xla']}" in torch_env
    assert not names(torch_env) & {"tensorflow", "tensorflow-cpu", "tf-keras"}
    assert install_plan.vm_no_deps("torch") == []
    shared = names(install_plan.vm_requirements("tf")) & names(torch_env)
    assert {"transformers", "jupyterlab", "ipykernel"} <= shared


def test_course_setup_tpu_and_lab_name_the_kernels_the_notebooks_ask_for():
    course = (ROOT / "course").read_text()
    for fw in install_plan.FRAMEWORKS:
        assert nc.KERNELSPECS[fw]["name"] == f"tpu-course-{fw}"
    assert '--name "tpu-course-$fw"' in course and "setup_tpu" in course and '"${PLAN[@]}" vm "$fw"' in course
    for path in nc.notebook_paths():
        nb = nbformat.read(path, as_version=4)
        assert nb.metadata.kernelspec == nc.KERNELSPECS[nb.metadata.tpu_course.framework]


def test_installed_kernels_exist_for_both_frameworks():
    from jupyter_client.kernelspec import KernelSpecManager

    specs = KernelSpecManager().find_kernel_specs()
    assert {"tpu-course-tf", "tpu-course-torch"} <= set(specs), sorted(specs)


def test_badges_and_helper_pin_follow_the_project_version():
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    assert nc.VERSION == version and nc.REVISION == f"v{version}"
    assert f"/blob/v{version}/notebooks/" in (ROOT / "colab_links.md").read_text()


def test_the_wheel_holds_every_module_and_the_course_pins(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "requirements-common.txt", "requirements-tf.txt",
                 "requirements-torch.txt"):
        (src / name).write_bytes((ROOT / name).read_bytes())
    subprocess.run(["cp", "-r", str(ROOT / "tpu_helpers"), str(src)], check=True)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "w"),
                           str(src)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = (tmp_path / "w").glob("tpu_course-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {str(p.relative_to(ROOT)) for p in (ROOT / "tpu_helpers").rglob("*.py") if "__pycache__" not in p.parts}
    assert {"tpu_helpers/banking77/exercise_checks.py", "tpu_helpers/banking77/solutions.py", "tpu_helpers/__init__.py",
            "tpu_helpers/gcs_emulator/__init__.py"} <= names
    assert modules <= names, sorted(modules - names)
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    for fw, names in (("tf", ("tensorflow-cpu", "transformers")), ("torch", ("torch-xla", "transformers"))):
        pins = install_plan.read_pins(fw)
        for name in names:
            assert re.search(rf"Requires-Dist: {re.escape(name)}=={re.escape(pins[name])} ?; extra == \"{fw}\"",
                             metadata.replace("torch_xla", "torch-xla"), re.I), (fw, name)
    assert not re.search(r"Requires-Dist: tf[-_]keras", metadata, re.I)  # installed --no-deps, never by pip's resolver


def test_the_installed_package_is_the_wheel_and_knows_the_pins():
    import tpu_helpers
    from tpu_helpers.core import versions

    assert ROOT not in Path(tpu_helpers.__file__).resolve().parents, "tests must import the installed wheel"
    for fw in install_plan.FRAMEWORKS:
        pins = {k.replace("tensorflow-cpu", "tensorflow"): v for k, v in install_plan.read_pins(fw).items()
                if f"{k}=={v}" not in install_plan.no_deps_pins(fw)}
        assert versions.course_pins(fw) == pins, fw


def test_lightning_comes_with_the_pytorch_xla_plans_only_and_no_cloud_tpu_client():
    """Notebook 07: the torch plans install the pinned lightning (on a TPU beside torch_xla[tpu]); the TF ones and
    the TF VM environment never (lightning requires torch); the guide's obsolete cloud-tpu-client nowhere."""
    pins = install_plan.read_pins("torch")
    for acc in install_plan.ACCELERATORS:
        torch_plan = [a for c in install_plan.hosted_plan("torch", acc, "o/r", pins, "0.0.0") for a in c]
        tf_plan = [a for c in install_plan.hosted_plan("tf", acc, "o/r", None, "0.0.0") for a in c]
        assert f"lightning=={pins['lightning']}" in torch_plan and not any("lightning" in a for a in tf_plan)
        assert not any("cloud-tpu-client" in a for a in torch_plan + tf_plan)
    assert not any(ln.startswith("lightning") for ln in install_plan.vm_requirements("tf"))
    assert f"lightning=={pins['lightning']}" in install_plan.vm_requirements("torch")
