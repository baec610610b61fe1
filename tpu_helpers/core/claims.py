"""A section's check cell: each claim with what this run measured, one line each, and a failure named at the end."""
from __future__ import annotations

from typing import Any

__all__ = ["Claims"]


class Claims:
    """``with Claims("3 · static shapes") as claim: claim("one graph per bucket", graphs == 3, f"{graphs} graphs")``.

    Every claim is printed (pass or FAIL, the claim, what was measured); leaving the block raises an
    AssertionError naming the claims that failed, so a learner sees all of them before the error.
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
        if kind is None and self.failed:
            raise AssertionError(f"{self.section}: {len(self.failed)} claim(s) failed on this run: "
                                 + "; ".join(self.failed))
