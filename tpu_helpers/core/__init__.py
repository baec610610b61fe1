"""The course's core: runtime, profiles, one framework per process, summaries, versions, exercises (no ML framework)."""
FRAMEWORK = None  # the framework this package's modules may import (tests/conventions enforce it)
