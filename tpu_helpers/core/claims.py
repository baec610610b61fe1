"""A section's check cell: each claim with what this run measured, one line each, then one assert over them all."""
from typing import Any


class Claims:
    """``with Claims("3 · shapes") as claim: claim("one graph", graphs == 1, graphs)``; then ``assert claim.passed``."""

    def __init__(self, section: str) -> None:
        self.section = section
        self.failed: list[str] = []

    def __call__(self, claim: str, ok: Any, measured: Any = "") -> None:
        print(f"{'pass' if ok else 'FAIL'}  {claim}" + (f"  (measured: {measured})" if measured != "" else ""))
        if not ok:
            self.failed.append(f"{claim} (measured: {measured})" if measured != "" else claim)

    def __enter__(self) -> "Claims":
        print(f"Claims of {self.section}:")
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    @property
    def passed(self) -> bool:
        return not self.failed

    @property
    def why(self) -> str:
        return f"{self.section}: {len(self.failed)} claim(s) failed on this run: " + "; ".join(self.failed)
