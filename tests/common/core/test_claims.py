import pytest

from tpu_helpers.core.claims import Claims


def test_every_claim_is_printed_and_the_assert_names_the_failures(capsys):
    with Claims("3 · shapes") as claim:
        claim("one graph", 2 == 1, 2)
        claim("no fallbacks", True, "0 ops")
    assert not claim.passed
    assert claim.why == "3 · shapes: 1 claim(s) failed on this run: one graph (measured: 2)"
    with pytest.raises(AssertionError, match=r"failed on this run: one graph \(measured: 2\)"):
        assert claim.passed, claim.why
    out = capsys.readouterr().out.splitlines()
    assert out == ["Claims of 3 · shapes:", "FAIL  one graph  (measured: 2)", "pass  no fallbacks  (measured: 0 ops)"]


def test_all_claims_passing_pass_and_an_error_inside_propagates(capsys):
    with Claims("1") as claim:
        claim("a", 1)
    assert claim.passed and capsys.readouterr().out.splitlines()[-1] == "pass  a"
    with pytest.raises(ZeroDivisionError):
        with Claims("2") as claim:
            claim("b", 1 / 0)
