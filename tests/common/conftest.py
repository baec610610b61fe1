"""tests/common: the framework-free code (core, shared, tools). No ML framework may be imported here."""
from course_testing import guard_frameworks

guard_frameworks("common", None)
