"""Code only the tests, benchmarks and ./course use (fixture writers, notebook runners): not in the learner's wheel.

``tests/`` is on ``sys.path`` for pytest (tests/conftest.py) and for the benchmarks (benchmarks/harness.py), so a
module here is ``course_support.<name>``; one module per lesson area, named after it.
"""
