"""The TPU slice facts: what an accelerator type names (chips, TensorCores, replicas, hosts), the friendly names."""
import pytest

from tpu_helpers.core.tpu_slices import (
    GENERATIONS,
    RESTART_MENUS,
    SOURCES,
    friendly_name,
    parse_accelerator_type,
    slice_hosts,
    tpu_slice,
)


@pytest.mark.parametrize("name,expected", [
    ("v2-8", ("v2", 4, 8)), ("v3-8", ("v3", 4, 8)), ("v3-32", ("v3", 16, 32)), ("v4-8", ("v4", 4, 8)),
    ("v5litepod-1", ("v5e", 1, 1)), ("v5litepod-8", ("v5e", 8, 8)), ("v5p-8", ("v5p", 4, 8)), ("v6e-8", ("v6e", 8, 8)),
    # v4 and v5p names count TensorCores too, 2 per chip (Google's v4 and v5p pages: v5p's 2x2x1 is 8 cores, 4 chips)
    ("v4-32", ("v4", 16, 32)), ("v5p-16", ("v5p", 8, 16)), ("v5p-128", ("v5p", 64, 128)), ("v6e-1", ("v6e", 1, 1)),
])
def test_parse_accelerator_type(name, expected):
    assert parse_accelerator_type(name) == expected


def test_parse_accelerator_type_rejects_garbage():
    with pytest.raises(ValueError, match="not a TPU accelerator type"):
        parse_accelerator_type("a100-80gb")


@pytest.mark.parametrize("name, message", [("v9-8", "unknown TPU generation"), ("v5-8", "unknown TPU generation"),
                                           ("v3-7", "positive multiple of 2"), ("v4-0", "positive multiple of 2"),
                                           ("v5p-3", "positive multiple of 2"), ("v4-1", "TensorCores"),
                                           ("v5litepod-0", "positive multiple of 1"), ("banana", "not a TPU")])
def test_parse_accelerator_type_refuses_what_google_never_names(name, message):
    with pytest.raises(ValueError, match=message):
        parse_accelerator_type(name)


def test_slice_hosts_one_vm_up_to_a_single_host_slice_then_vms_of_four_chips():
    assert [slice_hosts("v5e", c) for c in (1, 8, 16, 32)] == [1, 1, 4, 8]
    assert [slice_hosts("v3", c) for c in (4, 16)] == [1, 4]
    with pytest.raises(ValueError, match="not whole TPU VMs of 4 chips"):
        slice_hosts("v4", 6)


@pytest.mark.parametrize("name,chips,replicas,hosts", [
    ("v5e-1", 1, 1, 1), ("v5litepod-1", 1, 1, 1), ("v2-8", 4, 8, 1), ("v3-8", 4, 8, 1), ("v4-8", 4, 4, 1),
    ("v5e-8", 8, 8, 1), ("v5litepod-8", 8, 8, 1), ("v5e-16", 16, 16, 4), ("v5litepod-32", 32, 32, 8),
    ("v4-16", 8, 8, 2), ("v3-32", 16, 32, 4), ("v2-32", 16, 32, 4), ("v4-32", 16, 16, 4), ("v6e-16", 16, 16, 4),
])
def test_tpu_slice(name, chips, replicas, hosts):
    tpu = tpu_slice(name)
    assert (tpu.chips, tpu.replicas, tpu.hosts) == (chips, replicas, hosts)
    assert tpu.global_batch(32) == 32 * replicas and tpu.replicas_per_host * tpu.hosts == replicas


def test_v5litepod_is_renamed_once_and_back_for_gcloud():
    assert tpu_slice("v5litepod-8").name == tpu_slice("v5e-8").name == friendly_name("v5litepod-8") == "v5e-8"
    assert tpu_slice("v5e-16").accelerator_type == tpu_slice("v5litepod-16").accelerator_type == "v5litepod-16"
    assert tpu_slice("v3-32").accelerator_type == "v3-32" and friendly_name("v4-8") == "v4-8"
    assert "v3-32: 16 chips on 4 TPU VM(s), 8 replica(s) per VM, 32 in all" == str(tpu_slice("v3-32"))


@pytest.mark.parametrize("bad", ["v4-15", "v9-8", "v5litepod", "tpu-16", "v4-12", "a100"])
def test_tpu_slice_refuses_what_is_not_a_slice(bad):
    with pytest.raises(ValueError, match="expected e.g.|not whole TPU VMs"):
        tpu_slice(bad)


def test_every_generation_has_its_source_and_one_restart_text():
    assert all(SOURCES[g].startswith("https://cloud.google.com/tpu/docs/") for g in GENERATIONS)
    assert all(menu in RESTART_MENUS for menu in ("Colab: ", "Kaggle: ", "Jupyter: "))
