"""The first lines of every notebook, in one place: the framework, the runtime, the profile, and the TPU build check."""
import os

from tpu_helpers.core import frameworks, profiles, runtime, summary


def start(framework: str, profile: str | None = None, *, xla_cpu: bool = True,
          check_build: bool = True) -> tuple[runtime.Runtime, profiles.Profile]:
    """Declare ``framework``; print the runtime, TPU build check and profile; ``xla_cpu``: PJRT_DEVICE=CPU off a TPU."""
    frameworks.use_framework(framework)
    rt = runtime.detect_runtime()
    if framework == "torch" and xla_cpu and not rt.is_tpu:
        os.environ.setdefault("PJRT_DEVICE", "CPU")
    print(rt.describe())
    if check_build:
        print(frameworks.check_tpu_build(rt, framework))
    chosen = profiles.choose_profile(profile, runtime=rt)
    print(chosen)
    summary.record("runtime", rt.kind, quiet=True)
    summary.record("profile", chosen.name, quiet=True)
    return rt, chosen
