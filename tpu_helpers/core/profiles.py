"""One switch for sizes: the `tpu`, `cpu` and `ci` profiles.

* ``tpu``: the seeds' real settings (full datasets, base-size models, real batch sizes).
* ``cpu``: what a laptop finishes in minutes per notebook, through the same XLA code paths.
* ``ci``:  the smallest sizes that still prove every claim the notebooks assert.

The profile comes from, in order: the notebook's ``PROFILE`` parameter, the ``TPU_COURSE_PROFILE``
environment variable (``./course test`` sets ``ci``), then the runtime: ``tpu`` on a TPU, ``cpu`` elsewhere.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping, Sequence, TypeVar

from tpu_helpers.core.runtime import Runtime, detect_runtime

__all__ = ["PROFILES", "PROFILE_ENV", "Profile", "choose_profile", "sized", "param"]

PROFILES = ("tpu", "cpu", "ci")
PROFILE_ENV = "TPU_COURSE_PROFILE"
T = TypeVar("T")


@dataclass(frozen=True)
class Profile:
    name: str
    reason: str

    def __str__(self) -> str:
        return f"profile '{self.name}': {self.reason}"


def _check(name: str, source: str) -> str:
    value = name.strip().lower()
    if value not in PROFILES:
        raise ValueError(f"unknown profile {name!r} from {source}; choose one of {', '.join(PROFILES)}")
    return value


def choose_profile(requested: str | None = None, *, env: Mapping[str, str] | None = None,
                   runtime: Runtime | None = None) -> Profile:
    """Pick the profile and say why, in one line (print the result)."""
    env = os.environ if env is None else env
    if requested:
        return Profile(_check(requested, "the PROFILE parameter"), "set by the notebook's PROFILE parameter")
    if env.get(PROFILE_ENV):
        return Profile(_check(env[PROFILE_ENV], PROFILE_ENV), f"set by the environment ({PROFILE_ENV})")
    runtime = runtime or detect_runtime(env)
    if runtime.is_tpu:
        return Profile("tpu", f"default on a TPU ({runtime.kind}): the seeds' real sizes")
    return Profile("cpu", f"default off-TPU ({runtime.kind}): small sizes that finish in minutes")


def sized(profile: Profile | str, table: Mapping[str, T] | None = None, **per_profile: T) -> T:
    """Pick the value for this profile: ``sized(p, tpu=128, cpu=32, ci=8)``.

    A dict of settings per profile works too: ``cfg = sized(p, SIZES)``.
    """
    name = profile.name if isinstance(profile, Profile) else _check(profile, "sized()")
    options: Mapping[str, Any] = table if table is not None else per_profile
    missing = [p for p in PROFILES if p not in options]
    if missing:
        raise ValueError(f"sized() needs a value for every profile; missing: {', '.join(missing)}")
    return options[name]


KINDS = {
    "positive int": lambda v: isinstance(v, int) and not isinstance(v, bool) and v > 0,
    "int >= 0": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
    "positive number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0,
    "bool": lambda v: isinstance(v, bool),
    "text": lambda v: isinstance(v, str) and v.strip() != "",
}


def param(name: str, value: Any, default: Any, kind: str | Sequence[Any]) -> Any:
    """A parameter's value: ``default`` (the profile's) when it is None, else ``value`` once it is of ``kind``.

    ``kind`` is one of "positive int", "int >= 0", "positive number", "bool", "text", or the accepted values
    themselves (a tuple); anything else raises a ValueError naming the parameter and what it accepts.
    """
    if value is None:
        return default
    if isinstance(kind, str):
        if kind not in KINDS:
            raise ValueError(f"param(): unknown kind {kind!r}; use one of {', '.join(KINDS)} or a tuple of values")
        ok, accepts = KINDS[kind](value), f"a {kind}"
    else:
        ok, accepts = value in tuple(kind), "one of " + ", ".join(repr(k) for k in kind)
    if not ok:
        raise ValueError(f"{name}={value!r}: use {accepts}, or None for this profile's default ({default!r})")
    return value
