"""A section's check cell: each claim with what this run measured, one line each, then one assert over them all."""
from __future__ import annotations

from typing import Any

__all__ = ["Claims"]


class Claims:
    """``with Claims("3 · static shapes") as claim: claim("one graph per bucket", graphs == 3, f"{graphs} graphs")``.

    Every claim is printed (pass or FAIL, the claim, what was measured); the cell then ends with
    ``assert claim.passed, claim.why``, so a learner sees every claim before the error that names the failed ones.
    """

    def __init__(self, section: str) -> None:
        self.section = section
        self.failed: list[str] = []

    def __call__(self, claim: str, ok: Any, measured: Any = "") -> bool:
        passed = bool(ok)
        print(f"{'pass' if passed else 'FAIL'}  {claim}" + (f"  (measured: {measured})" if measured != "" else ""))
        if not passed:
            self.failed.append(f"{claim} (measured: {measured})" if measured != "" else claim)
        return passed

    def __enter__(self) -> "Claims":
        print(f"Claims of {self.section}:")
        return self

    def __exit__(self, kind: Any, error: Any, tb: Any) -> None:
        return None

    @property
    def passed(self) -> bool:
        """True when every claim of the block held on this run."""
        return not self.failed

    @property
    def why(self) -> str:
        """The assert's message: the section and each failed claim with what was measured."""
        return f"{self.section}: {len(self.failed)} claim(s) failed on this run: " + "; ".join(self.failed)
