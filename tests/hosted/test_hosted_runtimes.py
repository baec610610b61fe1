"""What a learner gets on today's hosted TPU runtimes, rehearsed on this CPU.

* Every hosted target's plan resolves against the package registry on its image's Python, the helper wheel of this
  checkout included (its ``requires-python`` is part of the resolution).
* Each image's packages on its Python, the notebook's install cell run verbatim on top, ``pip check`` with only the
  image's own and the documented lines, the lessons' imports, and notebooks 00 and 03 (TensorFlow) and 02
  (PyTorch/XLA) at the ``ci`` profile in that environment (`rehearse_hosted.rehearse`; environments cached).
"""
import install_plan
import pytest
import rehearse_hosted as rh
import resolve_plans

HOSTED = [(image, fw) for image in install_plan.IMAGES for fw in install_plan.FRAMEWORKS]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    return rh.build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.mark.parametrize("image,framework", HOSTED)
def test_the_plan_resolves_on_the_images_python(image, framework, wheel):
    name, python, calls = next(t for t in resolve_plans.targets(str(wheel))
                               if t[0].startswith(f"{image.capitalize()} TPU") and t[0].endswith(f"x {framework}"))
    dists, problems = resolve_plans.check(name, python, calls)
    assert not problems, problems
    assert "tpu-course" in dists and "libtpu" in dists
    if framework == "tf":
        assert "tensorflow-tpu" in dists and not {"tensorflow", "tensorflow-cpu"} & set(dists)


@pytest.mark.parametrize("target", sorted(rh.TARGETS))
@pytest.mark.parametrize("framework", install_plan.FRAMEWORKS)
def test_the_hosted_runtime_runs_the_course(target, framework, wheel):
    result = rh.rehearse(target, framework, wheel=wheel)
    assert result["versions"]["tpu-course"] == install_plan.project_version()
    if framework == "tf":
        assert "tensorflow-tpu" in result["versions"] and "tensorflow" not in result["versions"]
