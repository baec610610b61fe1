"""Resolve every install plan against the package registry and print what each target would install.

    ./course python tools/resolve_plans.py                 # all targets, this Python
    ./course python tools/resolve_plans.py --python 3.12   # as Colab's Python would resolve them

The ``pip install`` calls of a plan (`install_plan.hosted_plan`, and the Cloud TPU VM environments) are resolved
together, as the environment they leave behind (pip keeps what an earlier call installed when it satisfies a later
one), with ``pip install --dry-run --ignore-installed --report`` (nothing is installed; wheels' metadata is
fetched); the ``--no-deps`` calls on their own. The helper package itself (``git+https://github.com/...``,
``--no-deps``) is not fetched. A target fails
when its TensorFlow plan would install the ``tensorflow`` distribution next to ``tensorflow-tpu``, or when a TPU
plan installs no ``libtpu``. Exit status 1 then.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import install_plan  # noqa: E402


def resolve(args: list[str], python: str | None) -> dict[str, str]:
    """{distribution: version} that ``pip install ARGS`` would install into an empty environment."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
               "--report", str(report), *args]
        if python:
            # Colab's and Kaggle's images are Ubuntu 22.04 (glibc 2.35): every manylinux tag up to that
            platforms = [f"manylinux_2_{minor}_x86_64" for minor in range(35, 16, -1)] + ["manylinux2014_x86_64",
                                                                                           "linux_x86_64"]
            cmd += ["--python-version", python, "--only-binary=:all:", "--target", str(Path(tmp) / "t"),
                    *[a for plat in platforms for a in ("--platform", plat)]]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode:
            raise RuntimeError(f"pip could not resolve {' '.join(args)}:\n{proc.stderr.strip()[-2000:]}")
        data = json.loads(report.read_text())
    return {item["metadata"]["name"].lower().replace("_", "-"): item["metadata"]["version"]
            for item in data["install"]}


def targets() -> list[tuple[str, list[list[str]]]]:
    out = []
    for framework in install_plan.FRAMEWORKS:
        for accelerator in install_plan.ACCELERATORS:
            calls = install_plan.hosted_plan(framework, accelerator, "tpu-course/tpu-course")
            out.append((f"Colab/Kaggle {accelerator.upper()} x {framework}", calls))
    for framework in install_plan.FRAMEWORKS:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("\n".join(install_plan.vm_requirements(framework)) + "\n")
        calls = [["install", "-r", f.name]]
        no_deps = install_plan.vm_no_deps(framework)
        if no_deps:
            calls.append(["install", "--no-deps", *no_deps])
        out.append((f"Cloud TPU VM environment x {framework} (./course setup --tpu)", calls))
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", help="resolve for this Python version (e.g. 3.12) instead of this interpreter's")
    ap.add_argument("--only", help="only targets whose name contains this text")
    args = ap.parse_args(argv)
    failed = 0
    for name, calls in targets():
        if args.only and args.only.lower() not in name.lower():
            continue
        dists: dict[str, str] = {}
        together: list[str] = []
        try:
            for call in calls:
                if "install" not in call:
                    continue  # pip uninstall: installs nothing
                pip_args = [a for a in call if a not in ("-q", "install") and not a.startswith("tpu-course @")]
                if "--no-deps" in pip_args:
                    if pip_args != ["--no-deps"]:
                        dists.update(resolve(pip_args, args.python))
                else:
                    together += pip_args
            dists.update(resolve(together, args.python))
        except RuntimeError as e:
            print(f"\n== {name}: FAILED\n{e}")
            failed += 1
            continue
        tpu = "TPU" in name or "VM" in name
        problems = []
        if "tensorflow-tpu" in dists and ("tensorflow" in dists or "tensorflow-cpu" in dists):
            problems.append("installs `tensorflow` next to `tensorflow-tpu` (two builds in one folder)")
        if tpu and "libtpu" not in dists:
            problems.append("installs no libtpu")
        key = ("tensorflow", "tensorflow-tpu", "tensorflow-cpu", "tf-keras", "keras", "libtpu", "torch", "torch-xla",
               "transformers", "accelerate")
        print(f"\n== {name}: {'FAILED: ' + '; '.join(problems) if problems else 'ok'}")
        print("   " + "  ".join(f"{k}=={dists[k]}" for k in key if k in dists))
        print(f"   {len(dists)} distributions: " + " ".join(f"{k}=={v}" for k, v in sorted(dists.items())))
        failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
