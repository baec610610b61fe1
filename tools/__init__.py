"""The course's tools (./course runs them). A tool imports its siblings by name (``import install_plan``): run as a
script, Python puts tools/ first on sys.path; tests/conftest.py puts it there for the tests. No tool edits sys.path;
a child process on another interpreter loads a tool from its file (``runpy.run_path``)."""
