"""Nothing under tests/data/ is a test of pytest-ldd: the real suites there are graded
as hidden tests by tests/test_real_suites.py, never collected as part of this suite."""

collect_ignore_glob = ["*"]
