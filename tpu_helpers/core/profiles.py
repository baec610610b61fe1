"""The `tpu`, `cpu` and `ci` size profiles: the seeds' sizes, a laptop's minutes, the smallest that proves every claim."""
import os
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from tpu_helpers.core.runtime import Runtime, detect_runtime

PROFILES = ("tpu", "cpu", "ci")
PROFILE_ENV = "TPU_COURSE_PROFILE"


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


def choose_profile(requested: str | None = None, *, runtime: Runtime | None = None) -> Profile:
    """The profile and why: the ``PROFILE`` parameter, else ``TPU_COURSE_PROFILE``, else tpu on a TPU, cpu elsewhere."""
    if requested:
        return Profile(_check(requested, "the PROFILE parameter"), "set by the notebook's PROFILE parameter")
    if os.environ.get(PROFILE_ENV):
        return Profile(_check(os.environ[PROFILE_ENV], PROFILE_ENV), f"set by the environment ({PROFILE_ENV})")
    runtime = runtime or detect_runtime()
    if runtime.is_tpu:
        return Profile("tpu", f"default on a TPU ({runtime.kind}): the seeds' real sizes")
    return Profile("cpu", f"default off-TPU ({runtime.kind}): small sizes that finish in minutes")


def sized(profile: Profile | str, table: Mapping[str, Any] | None = None, **per_profile: Any) -> Any:
    """This profile's value: ``sized(p, tpu=128, cpu=32, ci=8)`` or ``sized(p, {"tpu": ..., "cpu": ..., "ci": ...})``."""
    name = profile.name if isinstance(profile, Profile) else _check(profile, "sized()")
    options = table if table is not None else per_profile
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
    """``default`` when ``value`` is None, else ``value`` if it is of ``kind`` (a `KINDS` name or a tuple of values)."""
    if value is None:
        return default
    if isinstance(kind, str):
        ok, accepts = KINDS[kind](value), f"a {kind}"
    else:
        ok, accepts = value in tuple(kind), "one of " + ", ".join(repr(k) for k in kind)
    if not ok:
        raise ValueError(f"{name}={value!r}: use {accepts}, or None for this profile's default ({default!r})")
    return value
