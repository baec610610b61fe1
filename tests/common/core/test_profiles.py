import pytest

from tpu_helpers.core.profiles import Profile, choose_profile, sized
from tpu_helpers.core.runtime import Runtime

CPU = Runtime("cpu", "local")
TPU = Runtime("kaggle-tpu-vm", "kaggle", "v5litepod-8", "v5e", 8, 8)


@pytest.fixture(autouse=True)
def no_profile_variable(monkeypatch):
    monkeypatch.delenv("TPU_COURSE_PROFILE", raising=False)


def test_default_cpu_off_tpu():
    p = choose_profile(runtime=CPU)
    assert p.name == "cpu" and "off-TPU" in p.reason


def test_default_tpu_on_tpu():
    assert choose_profile(runtime=TPU).name == "tpu"


def test_env_overrides_runtime(monkeypatch):
    monkeypatch.setenv("TPU_COURSE_PROFILE", "ci")
    p = choose_profile(runtime=TPU)
    assert p.name == "ci" and "TPU_COURSE_PROFILE" in p.reason


def test_parameter_overrides_env(monkeypatch):
    monkeypatch.setenv("TPU_COURSE_PROFILE", "ci")
    p = choose_profile("CPU", runtime=CPU)
    assert p == Profile("cpu", "set by the notebook's PROFILE parameter")


@pytest.mark.parametrize("bad", ["gpu", "fast"])
def test_unknown_profile_is_a_clear_error(bad, monkeypatch):
    with pytest.raises(ValueError, match="choose one of tpu, cpu, ci"):
        choose_profile(bad, runtime=CPU)
    monkeypatch.setenv("TPU_COURSE_PROFILE", bad)
    with pytest.raises(ValueError, match="TPU_COURSE_PROFILE"):
        choose_profile(runtime=CPU)


def test_sized_picks_per_profile():
    assert sized(Profile("ci", ""), tpu=256, cpu=32, ci=8) == 8
    assert sized("tpu", {"tpu": {"batch": 256}, "cpu": {"batch": 32}, "ci": {"batch": 8}}) == {"batch": 256}
    with pytest.raises(ValueError, match="missing: ci"):
        sized("cpu", tpu=1, cpu=2)


def test_param_none_is_the_default_and_a_bad_value_names_the_parameter():
    import pytest

    from tpu_helpers.core.profiles import param
    assert param("BATCH_SIZE", None, 32, "positive int") == 32
    assert param("BATCH_SIZE", 8, 32, "positive int") == 8
    assert param("PADDING", "max_length", "buckets", ("buckets", "max_length")) == "max_length"
    for name, value, kind in [("BATCH_SIZE", 0, "positive int"), ("BATCH_SIZE", True, "positive int"),
                              ("EPOCHS", 2.5, "positive int"), ("LEARNING_RATE", -1e-3, "positive number"),
                              ("COMPARE", 1, "bool"), ("PADDING", "bucket", ("buckets", "max_length"))]:
        with pytest.raises(ValueError, match=rf"^{name}={value!r}: use .*None for this profile's default"):
            param(name, value, None, kind)
    with pytest.raises(KeyError, match="'positive'"):  # a kind param() does not know
        param("X", 1, 1, "positive")
