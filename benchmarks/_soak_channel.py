"""The soak's side channel: a pytest plugin that logs every finished test.

Loaded with ``-p _soak_channel`` (``benchmarks/`` on ``PYTHONPATH``) and told
where to write by ``LDD_SOAK_CHANNEL``.  In the process that receives the test
reports (the only process of a plain run, the controller under xdist) it
appends one JSON line per test whose teardown report arrived, with one
unbuffered ``write`` on an ``O_APPEND`` descriptor, after every other
``pytest_runtest_logreport`` implementation (``trylast``) -- so pytest-ldd has
already handled the reports of that test when the line is written.  A SIGKILL
cannot lose a line that was written: it sits in the page cache.

This plugin knows nothing of pytest-ldd: it is the independent witness the
soak compares the store against.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

ENV = "LDD_SOAK_CHANNEL"

_fd: int | None = None


def pytest_configure(config: pytest.Config) -> None:
    """Open the channel in the reporting process (never in an xdist worker)."""
    global _fd
    path = os.environ.get(ENV)
    if path and not hasattr(config, "workerinput"):
        _fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report: Any) -> None:
    """Log a test as finished once its teardown report has been handled."""
    if _fd is not None and report.when == "teardown":
        line = json.dumps({"nodeid": report.nodeid, "outcome": report.outcome}) + "\n"
        os.write(_fd, line.encode("utf-8"))


def pytest_unconfigure(config: pytest.Config) -> None:
    """Close the channel."""
    global _fd
    if _fd is not None:
        os.close(_fd)
        _fd = None
