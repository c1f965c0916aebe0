"""Child side of the hidden-test sandbox: the trusted bootstrap of the test process.

The parent copies this file into a folder of its own and runs it as
``python -I -B -X utf8 runner.py`` (isolated: no ``PYTHON*`` variables, no user site,
neither the current folder nor the script's folder on ``sys.path``).  It then

1. reads its settings from one line of standard input -- never from argv or the
   environment, which a calling shell could have set and the code under test can read
   back more easily -- and points standard input at ``/dev/null``;
2. applies the resource limits and scrubs ``PYTEST_*`` / ``PYTHON*`` once more;
3. runs ``pytest.main`` with a reporting plugin that writes one authenticated JSON
   line per event to a pipe inherited from the parent (HMAC-SHA256 under a per-run
   key, numbered in sequence), and puts the workspace copy on ``sys.path`` only once
   pytest's own start-up is over (as pytest's ``pythonpath`` setting does);
4. leaves with ``os._exit``, so nothing the code under test registered to run at exit
   can change the exit status after pytest reported it.

It imports only the standard library and pytest, because the interpreter under test
need not have pytest-ldd installed.  The parent never imports it.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import sys
from typing import Any

_AUTOLOAD_OFF = "PYTEST_DISABLE_PLUGIN_AUTOLOAD"
_SCRUBBED_PREFIXES = ("PYTEST_", "PYTHON")
_IDS_PER_RECORD = 200
_DETAIL_CHARS = 2000


class Channel:
    """Writes numbered, authenticated records to the parent's pipe."""

    def __init__(self, fd: int, key: bytes) -> None:
        self._fd = fd
        self._key = key
        self._seq = 0
        self.broken = False

    def send(self, kind: str, **fields: Any) -> None:
        """Send one record; a closed or broken pipe silences the channel for good."""
        if self.broken:
            return
        payload = json.dumps(
            {"seq": self._seq, "kind": kind, **fields}, separators=(",", ":"), ensure_ascii=True
        ).encode("ascii")
        mac = hmac.new(self._key, payload, hashlib.sha256).hexdigest().encode("ascii")
        data = mac + b" " + payload + b"\n"
        self._seq += 1
        try:
            while data:
                data = data[os.write(self._fd, data) :]
        except OSError:
            self.broken = True


def _phase_outcome(when: str, outcome: str, before: str | None) -> str:
    """Fold the outcome of one phase (setup, call, teardown) into the test's outcome."""
    if when == "setup":
        return {"failed": "error", "skipped": "skipped"}.get(outcome, "passed")
    if when == "call":
        return {"failed": "failed", "skipped": "skipped"}.get(outcome, "passed")
    # teardown: a failure there is an error, unless the test itself had failed already
    if outcome == "failed":
        return "failed" if before == "failed" else "error"
    return before if before is not None else "error"


class Reporter:
    """The pytest plugin of the sandbox: reports collection and per-test outcomes."""

    def __init__(self, channel: Channel, pythonpath: list[str]) -> None:
        self._channel = channel
        self._pythonpath = pythonpath
        self._outcomes: dict[str, str] = {}

    def pytest_load_initial_conftests(self) -> None:
        # Runs after plugins named with -p were imported, before any conftest.py or
        # test module is: the workspace cannot shadow them, and is importable by all.
        for path in reversed(self._pythonpath):
            sys.path.insert(0, path)

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            detail = str(report.longrepr)[-_DETAIL_CHARS:]
            self._channel.send("collect_error", id=report.nodeid, detail=detail)
        elif report.skipped:  # a module-level skip, e.g. pytest.importorskip(...)
            self._channel.send("collect_skip", id=report.nodeid)

    def pytest_collection_finish(self, session: Any) -> None:
        ids = [item.nodeid for item in session.items]
        for start in range(0, len(ids), _IDS_PER_RECORD):
            self._channel.send("collected", ids=ids[start : start + _IDS_PER_RECORD])

    def pytest_runtest_logreport(self, report: Any) -> None:
        before = self._outcomes.get(report.nodeid)
        self._outcomes[report.nodeid] = _phase_outcome(report.when, report.outcome, before)

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self._channel.send("test", id=nodeid, outcome=self._outcomes.pop(nodeid, "error"))


def _apply_limits(limits: dict[str, list[int]]) -> None:
    try:
        import resource
    except ImportError:  # pragma: no cover - not a POSIX system
        return
    for name, (soft, hard) in limits.items():
        which = getattr(resource, name, None)
        if which is None:
            continue
        _, current_hard = resource.getrlimit(which)
        if current_hard != resource.RLIM_INFINITY:
            hard = min(hard, current_hard)
            soft = min(soft, hard)
        try:
            resource.setrlimit(which, (soft, hard))
        except (ValueError, OSError):
            # A limit the OS refuses is left as it was; the timeout and the process
            # group still contain the run.
            continue


def _scrub_environment() -> None:
    for name in list(os.environ):
        if name.startswith(_SCRUBBED_PREFIXES):
            del os.environ[name]
    os.environ[_AUTOLOAD_OFF] = "1"


def main() -> int:
    """Run the hidden tests as the parent's settings say; return pytest's exit code."""
    settings = json.loads(sys.stdin.buffer.readline())
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    _apply_limits(settings["limits"])
    _scrub_environment()
    fd = int(settings["fd"])
    # The code under test shares this process, but the processes it starts do not
    # inherit the pipe.
    os.set_inheritable(fd, False)
    channel = Channel(fd, bytes.fromhex(settings.pop("key")))
    try:
        import pytest
    except ImportError as exc:
        channel.send("fatal", detail=f"pytest cannot be imported: {exc}")
        return 3
    channel.send("hello", pytest=pytest.__version__, pid=os.getpid())
    reporter = Reporter(channel, list(settings["pythonpath"]))
    code = int(pytest.main(list(settings["args"]), plugins=[reporter]))
    channel.send("finish", exit=code)
    return code


if __name__ == "__main__":
    status = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)
