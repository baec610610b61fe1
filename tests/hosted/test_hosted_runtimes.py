"""What a learner gets on today's hosted TPU runtimes, rehearsed on this CPU.

* The plan of every hosted TPU target, and of Kaggle's CPU and GPU (no package list to rehearse), resolves against
  the package registry on the image's Python, the helper wheel of this checkout included (its ``requires-python``
  is part of the resolution).
* Each image's packages on its Python (Colab TPU, CPU and GPU, Kaggle TPU), the notebook's install cell run verbatim
  on top, ``pip check`` with nothing new about the course's packages, the lessons' imports (torchvision, torchaudio
  and lightning for PyTorch), and the target's notebooks at the ``ci`` profile in that environment: 00 and 03
  (TensorFlow) and 02 (PyTorch/XLA) on the TPU images, 01 and 04 (TensorFlow), 02, 05, 07 and 10 (PyTorch/XLA) and 09
  (JAX, on the image's own JAX 0.7.2) on Colab's CPU image, none on its GPU image (the same packages on the same CPU here) (`rehearse_hosted.rehearse`;
  environments cached).
"""
import install_plan
import pytest
import rehearse_hosted as rh
import resolve_plans

# resolved: the TPU targets and those with no rehearsal (Kaggle's CPU and GPU); Colab's CPU and GPU rehearsals install
# the same plans, with the same wheel, on the same Python
HOSTED = [(image, acc, fw) for image in install_plan.IMAGES for acc in install_plan.ACCELERATORS
          for fw in install_plan.FRAMEWORKS if acc == "tpu" or f"{image}-{acc}" not in rh.TARGETS]


RESULTS = {}  # (target, framework): what `rehearse_hosted.rehearse` found


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    return rh.build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.mark.parametrize("image,accelerator,framework", HOSTED)
def test_the_plan_resolves_on_the_images_python(image, accelerator, framework, wheel):
    name, python, calls = next(t for t in resolve_plans.targets(str(wheel)) if t[0].startswith(
        f"{image.capitalize()} {accelerator.upper()}") and t[0].endswith(f"x {framework}"))
    dists, problems = resolve_plans.check(name, python, calls)
    assert not problems, problems
    assert "tpu-course" in dists and ("libtpu" in dists) == (accelerator == "tpu")
    if framework == "tf" and accelerator == "tpu":
        assert "tensorflow-tpu" in dists and not {"tensorflow", "tensorflow-cpu"} & set(dists)
    if framework == "jax" and (image, accelerator) in install_plan.SNAPSHOTS:  # the image's own JAX, kept
        have = install_plan.image_snapshot(image, accelerator=accelerator)[1]
        assert all(dists.get(n) == have[n] for n in install_plan.JAX_FAMILY if n in have)
    if framework == "torch" and (image, accelerator) != ("kaggle", "tpu"):  # resolved together: each requires torch==
        assert (dists["torch"], dists["torchvision"], dists["torchaudio"]) == ("2.9.0", "0.24.0", "2.9.0")


@pytest.mark.parametrize("target", sorted(rh.TARGETS))
@pytest.mark.parametrize("framework", install_plan.FRAMEWORKS)
def test_the_hosted_runtime_runs_the_course(target, framework, wheel):
    result = RESULTS[target, framework] = rh.rehearse(target, framework, wheel=wheel)
    assert result["versions"]["tpu-course"] == install_plan.project_version()
    versions = result["versions"]
    if framework == "tf" and rh.TARGETS[target].accelerator == "tpu":
        assert "tensorflow-tpu" in versions and "tensorflow" not in versions
    elif framework == "tf":
        assert "tensorflow" in versions and "tensorflow-tpu" not in versions
    elif framework == "jax":  # the image's own JAX, never replaced (Colab: 0.7.2; Kaggle's TPU image: 0.10.2)
        have = install_plan.image_snapshot(rh.TARGETS[target].image, accelerator=rh.TARGETS[target].accelerator)[1]
        assert versions["jax"] == have["jax"]
    elif rh.TARGETS[target].image == "colab":  # the torch family changed whole (Colab's CPU/GPU images had 2.11)
        assert (versions["torch"], versions["torchvision"], versions["torchaudio"]) == ("2.9.0", "0.24.0", "2.9.0")
    if framework == "torch":  # no downgrade of the image's Hugging Face stack (transformers 5 there)
        have = install_plan.image_snapshot(rh.TARGETS[target].image, accelerator=rh.TARGETS[target].accelerator)[1]
        kept = install_plan.keeps_hf("torch", rh.TARGETS[target].accelerator, rh.TARGETS[target].image,
                                     install_plan.read_pins("torch"))
        assert kept and {n: versions.get(n) for n in kept} == {n: have[n] for n in kept}
    if target == "colab-gpu" and ("colab-cpu", framework) in RESULTS:
        # why the GPU image runs no notebooks here: the course's packages are the CPU image's, at the same versions
        assert result["course"] == RESULTS["colab-cpu", framework]["course"]
