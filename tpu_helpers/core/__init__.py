"""The course's core: runtime detection, profiles, the one-framework-per-process rule, run summaries,
versions and the exercise machinery. Imports no ML framework.
"""
FRAMEWORK = None  # the framework this package's modules may import (tests/conventions enforce it)
