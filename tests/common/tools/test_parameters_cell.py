"""The parameters-cell rule: papermill itself must list every parameter, with its help."""
import notebook_conventions as nc

GOOD = '''# Parameters (papermill convention: `./course run -p PROFILE cpu` overrides them).
PROFILE = None  # None: automatic (TPU_COURSE_PROFILE, else "tpu" on a TPU, "cpu" elsewhere); or "tpu", "cpu", "ci"
SEED = 0  # the random seed; every claim must hold for any seed
LENGTHS = [16, 32]  # a list is fine
'''


def test_a_cell_in_the_format_has_no_problems():
    assert nc.parameter_problems(GOOD) == []


def test_a_second_equals_sign_is_named():
    found = nc.parameter_problems('PROFILE = None  # None = automatic\nSEED = 0  # the seed\n')
    assert len(found) == 1 and found[0].startswith("PROFILE: papermill cannot parse") and "None: automatic" in found[0]


def test_missing_help_code_and_non_literals_are_named():
    found = " | ".join(nc.parameter_problems("SEED = 0\nX = make()  # x\nimport os\n"))
    assert "SEED: no help" in found
    assert "X must be a literal" in found
    assert "line 3: only one-line" in found
    assert nc.parameter_problems("X = (1,\n")[0].startswith("not valid Python")
