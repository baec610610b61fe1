"""Notebook 00's framework-free exercise check: reading a TPU accelerator type. It passes on the reference
answer and fails, naming the problem, on typical wrong answers. (The TensorFlow exercise of notebook 00 is
checked in tests/test_tf_exercises.py.)"""
from conftest import ROOT
from tpu_helpers.checks import nb00
from tpu_helpers.solutions import nb00 as solution


def test_reference_answer_passes():
    result = nb00.check_read_accelerator_type(solution.read_accelerator_type)
    assert result.passed and result.attempted, result.message
    assert "all 10 accelerator types" in result.message


def test_the_number_in_the_name_is_not_always_chips():
    def chips_from_the_name(name):  # the typical slip: "v3-8" read as 8 chips
        generation, number = name.rsplit("-", 1)
        return ("v5e" if generation.startswith("v5lite") else generation), int(number)

    result = nb00.check_read_accelerator_type(chips_from_the_name)
    assert not result.passed and result.attempted
    assert "counts TensorCores, 2 per chip" in result.message and "'v3-8' has 4 chips" in result.message
    assert result.message.startswith("4 of 10 accelerator types read right")


def test_v5litepod_is_a_v5e():
    def literal_generation(name):
        generation, number = name.rsplit("-", 1)
        return generation, solution.read_accelerator_type(name)[1]

    result = nb00.check_read_accelerator_type(literal_generation)
    assert not result.passed
    assert "'v5litepod-1' is Google's name for a v5e slice" in result.message


def test_wrong_return_type_and_crash_are_explained():
    result = nb00.check_read_accelerator_type(lambda name: f"{name} has 4 chips")
    assert not result.passed and "return a pair (generation, chips)" in result.message
    result = nb00.check_read_accelerator_type(lambda name: ("v3", "4"))
    assert not result.passed and "whole number" in result.message

    def crashes(name):
        return name.split("-")[2]

    result = nb00.check_read_accelerator_type(crashes)
    assert not result.passed and result.attempted
    assert "read_accelerator_type('v2-8') raised IndexError" in result.message


def test_skeleton_is_not_attempted():
    def skeleton(name):
        raise NotImplementedError  # YOUR ANSWER

    result = nb00.check_read_accelerator_type(skeleton)
    assert not result.passed and not result.attempted and "not attempted" in result.message


def test_check_modules_and_the_nb00_solutions_do_not_import_a_framework():
    import subprocess
    import sys

    code = ("import sys; import tpu_helpers.checks.nb00, tpu_helpers.checks.nb01, tpu_helpers.solutions.nb00; "
            "loaded = [m for m in ('tensorflow', 'torch') if m in sys.modules]; assert not loaded, loaded")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
