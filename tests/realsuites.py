"""Real libraries graded by their own suites: the shipped suites and plain pytest's answer.

Each suite under ``tests/data/suites/`` is a library (the *workspace*) and its own test
folder (the *hidden tests*).  :func:`plain_outcomes` runs that folder with plain pytest
in a fresh interpreter, as its authors do, and returns each test id's outcome, folded
from pytest's reports independently of the verifier's own runner (so a difference in
folding shows as a difference, not as agreement):

- a failed setup is ``error``; a failed call, or any failed subtest, is ``failed``;
- a failed teardown is ``error`` unless the test had failed already;
- a skip (xfail included) is ``skipped``; everything else ``passed``.

Ids are relative to the hidden tests' folder, as in :class:`~pytest_ldd.sandbox.Verdict`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SUITES", "RealSuite", "plain_outcomes", "stage_suite"]

DATA = Path(__file__).parent / "data" / "suites"

# Writes one JSON object {nodeid: outcome} to the file named by the environment.
_COLLECTOR = """
import json, os

_OUT = {}

def _fold(nodeid, when, outcome):
    before = _OUT.get(nodeid)
    if when == "setup":
        now = {"failed": "error", "skipped": "skipped"}.get(outcome, "passed")
    elif when == "call":
        if before == "failed":
            now = "failed"
        else:
            now = {"failed": "failed", "skipped": "skipped"}.get(outcome, before or "passed")
    elif outcome == "failed":
        now = "failed" if before == "failed" else "error"
    else:
        now = before or "error"
    _OUT[nodeid] = now

def pytest_runtest_logreport(report):
    _fold(report.nodeid, report.when, report.outcome)

def pytest_collectreport(report):
    if report.failed:
        _OUT.setdefault("<collect_errors>", []).append(report.nodeid)

def pytest_sessionfinish(session, exitstatus):
    with open(os.environ["LDD_PLAIN_OUTCOMES"], "w", encoding="utf-8") as handle:
        json.dump(_OUT, handle)
"""


@dataclass(frozen=True)
class RealSuite:
    """One shipped library and its suite."""

    name: str

    @property
    def folder(self) -> Path:
        return DATA / self.name

    @property
    def workspace(self) -> Path:
        """The library's package folder(s), as an agent's workspace would hold them."""
        return self.folder / "workspace"

    @property
    def hidden(self) -> Path:
        """The folder that holds the library's test folder (the hidden tests)."""
        return self.folder / "hidden"


SUITES = {
    name: RealSuite(name) for name in ("iniconfig", "pluggy", "more_itertools", "boltons", "attrs")
}


def stage_suite(suite: RealSuite, where: Path) -> tuple[Path, Path]:
    """Copy a suite's workspace and hidden tests under ``where``; return both folders."""
    workspace = where / "workspace"
    hidden = where / "hidden"
    ignore = shutil.ignore_patterns("__pycache__", ".pytest_cache", ".hypothesis")
    shutil.copytree(suite.workspace, workspace, ignore=ignore)
    shutil.copytree(suite.hidden, hidden, ignore=ignore)
    return workspace, hidden


def plain_outcomes(workspace: Path, hidden: Path, *, timeout: float = 600.0) -> dict[str, str]:
    """Each test id's outcome under plain pytest (the library importable, nothing else)."""
    plugin_dir = hidden.parent / "plain-collector"
    plugin_dir.mkdir(exist_ok=True)
    (plugin_dir / "ldd_plain_collector.py").write_text(_COLLECTOR, encoding="utf-8")
    out = hidden.parent / "plain-outcomes.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
    env["PYTHONPATH"] = os.pathsep.join([str(workspace), str(plugin_dir)])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["LDD_PLAIN_OUTCOMES"] = str(out)
    tests = sorted(p.name for p in hidden.iterdir())
    command = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:ldd",
        "-p", "ldd_plain_collector", "--rootdir", str(hidden), *tests,
    ]  # fmt: skip
    done = subprocess.run(
        command, cwd=hidden, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if not out.exists():
        msg = f"plain pytest wrote no outcomes (exit {done.returncode}): {done.stdout[-2000:]}"
        raise AssertionError(msg)
    found = json.loads(out.read_text(encoding="utf-8"))
    errors = found.pop("<collect_errors>", [])
    if errors:
        msg = f"plain pytest could not collect {errors}: the shipped suite is broken"
        raise AssertionError(msg)
    return found
