"""Resolve every install plan against the package registry and print what each target would install.

    ./course python tools/resolve_plans.py                 # all targets, each on its Python
    ./course python tools/resolve_plans.py --only colab    # the targets whose name contains "colab"
    ./course python tools/resolve_plans.py --wheel dist/tpu_course-0.2.0-py3-none-any.whl   # the helper too

The ``pip install`` calls of a plan (`install_plan.hosted_plan`, and the Cloud TPU VM environments) are resolved
together, as the environment they leave behind (pip keeps what an earlier call installed when it satisfies a later
one), with ``pip install --dry-run --ignore-installed --report`` (nothing is installed; wheels' metadata is
fetched); the ``--no-deps`` calls on their own. Each hosted target (Colab and Kaggle, TPU, CPU and GPU) resolves
on its image's Python (Colab 3.13, Kaggle 3.12: ``tools/images/``) with that image's plan variant
(`install_plan.plan_key`). PyTorch's CPU index (the CPU and GPU plans) is out of CI's reach: it is left out, so
PyPI's build of the same versions is resolved, unless ``TPU_COURSE_TORCH_CPU_INDEX`` names a mirror. The helper package
(``git+https://github.com/...``) is replaced by ``--wheel`` when given (so its ``requires-python`` is checked), else
left out. A target fails
when its TensorFlow plan would install the ``tensorflow`` distribution next to ``tensorflow-tpu``, or when a TPU
plan installs no ``libtpu``. Exit status 1 then.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import install_plan


def resolve(args: list[str], python: str | None) -> dict[str, str]:
    """{distribution: version} that ``pip install ARGS`` would install into an empty environment."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
               "--report", str(report), *args]
        if python:
            # Colab's and Kaggle's images are Ubuntu 22.04 (glibc 2.35): every manylinux tag up to that
            platforms = [f"manylinux_2_{minor}_x86_64" for minor in range(35, 16, -1)] + [
                "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64"]
            cmd += ["--python-version", python, "--only-binary=:all:", "--target", str(Path(tmp) / "t"),
                    *[a for plat in platforms for a in ("--platform", plat)]]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode:
            err = "\n".join(ln for ln in proc.stderr.splitlines() if "is ignored: it is neither" not in ln)
            raise RuntimeError(f"pip could not resolve {' '.join(args)}:\n{err.strip()[-2000:]}")
        data = json.loads(report.read_text())
    return {item["metadata"]["name"].lower().replace("_", "-"): item["metadata"]["version"]
            for item in data["install"]}


def targets(wheel: str | None = None) -> list[tuple[str, str | None, list[list[str]]]]:
    """(name, Python version or None for this interpreter's, pip calls) of every target."""
    out = []
    helper = install_plan.helper_spec("tpu-course/tpu-course", install_plan.project_version())
    # each image's Python: its snapshot's, else its TPU image's (Kaggle's CPU/GPU images run 3.12, as its TPU one)
    pythons = {image: ".".join(install_plan.image_snapshot(image)[0]["python"].split(".")[:2])
               for image in install_plan.IMAGES}
    for framework in install_plan.FRAMEWORKS:
        plans = install_plan.plan_variants(framework, "tpu-course/tpu-course")
        for image, python in pythons.items():
            for accelerator in install_plan.ACCELERATORS:
                calls = plans[install_plan.plan_key(plans, accelerator, image, python)]
                if wheel:
                    calls = [[wheel if a == helper else a for a in c] for c in calls]
                kept = install_plan.image_snapshot(image, accelerator=accelerator)[1] \
                    if framework == "jax" and (image, accelerator) in install_plan.SNAPSHOTS else {}
                if "jax" in kept:  # the plan keeps the image's JAX: resolve the rest against it, as pip will there
                    calls = [*calls, ["install", *(f"{n}=={kept[n]}" for n in install_plan.JAX_FAMILY if n in kept)]]
                out.append((f"{image.capitalize()} {accelerator.upper()} (Python {python}) x {framework}", python,
                            calls))
    for framework in install_plan.FRAMEWORKS:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("\n".join(install_plan.vm_requirements(framework)) + "\n")
        calls = [["install", "-r", f.name]]
        no_deps = install_plan.vm_no_deps(framework)
        if no_deps:
            calls.append(["install", "--no-deps", *no_deps])
        out.append((f"Cloud TPU VM environment x {framework} (./course setup --tpu)", None, calls))
    return out


def check(name: str, python: str | None, calls: list[list[str]]) -> tuple[dict[str, str], list[str]]:
    """({distribution: version} the target leaves behind, its problems). Raises RuntimeError if pip cannot
    resolve it."""
    dists: dict[str, str] = {}
    together: list[str] = []
    for call in calls:
        if "install" not in call:
            continue  # pip uninstall: installs nothing
        pip_args = [a for a in call if a not in ("-q", "install") and not a.startswith("tpu-course @")]
        if install_plan.TORCH_CPU_INDEX in pip_args:  # out of reach here: PyPI's build of the same versions instead
            i = pip_args.index(install_plan.TORCH_CPU_INDEX)
            index = os.environ.get("TPU_COURSE_TORCH_CPU_INDEX")
            pip_args[i - 1:i + 1] = ["--extra-index-url", index] if index else []
        if "--no-deps" in pip_args:
            if pip_args != ["--no-deps"]:
                dists.update(resolve(pip_args, python))
        else:
            together += pip_args
    dists.update(resolve(together, python))
    tpu = "TPU" in name or "VM" in name
    problems = []
    if "tensorflow-tpu" in dists and ("tensorflow" in dists or "tensorflow-cpu" in dists):
        problems.append("installs `tensorflow` next to `tensorflow-tpu` (two builds in one folder)")
    if tpu and "libtpu" not in dists:
        problems.append("installs no libtpu")
    return dists, problems


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", help="resolve the targets that use this interpreter's Python for this one instead")
    ap.add_argument("--only", help="only targets whose name contains this text")
    ap.add_argument("--wheel", help="the tpu-course wheel to resolve in place of the helper's git requirement")
    args = ap.parse_args(argv)
    failed = 0
    for name, python, calls in targets(args.wheel):
        if args.only and args.only.lower() not in name.lower():
            continue
        try:
            dists, problems = check(name, python or args.python, calls)
        except RuntimeError as e:
            print(f"\n== {name}: FAILED\n{e}")
            failed += 1
            continue
        key = ("tensorflow", "tensorflow-tpu", "tensorflow-cpu", "tf-keras", "keras", "libtpu", "torch", "torch-xla",
               "transformers", "accelerate", "tpu-course")
        print(f"\n== {name}: {'FAILED: ' + '; '.join(problems) if problems else 'ok'}")
        print("   " + "  ".join(f"{k}=={dists[k]}" for k in key if k in dists))
        print(f"   {len(dists)} distributions: " + " ".join(f"{k}=={v}" for k, v in sorted(dists.items())))
        failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
