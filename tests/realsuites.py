"""Real libraries graded by their own suites: the shipped suites and plain pytest's answer.

Each suite under ``tests/data/suites/`` is a library (the *workspace*) and its own test
folder (the *hidden tests*).  :func:`plain_outcomes` runs that folder with plain pytest
in a fresh interpreter, as its authors do, and returns each test id's outcome, folded
from pytest's reports independently of the verifier's own runner (so a difference in
folding shows as a difference, not as agreement):

- a failed setup is ``error``; a failed call, or any failed subtest, is ``failed``;
- a failed teardown is ``error`` unless the test had failed already;
- a skip (xfail included) is ``skipped``, but a skipped subtest of a test that passed
  leaves it ``passed`` (as pytest counts it); everything else ``passed``.

Ids are relative to the hidden tests' folder, as in :class:`~pytest_ldd.sandbox.Verdict`.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest_ldd

__all__ = ["SUITES", "RealSuite", "plain_outcomes", "shared_plain_outcomes", "stage_suite"]

DATA = Path(__file__).parent / "data" / "suites"

# Writes one JSON object {nodeid: outcome} to the file named by the environment.
_COLLECTOR = """
import json, os

_OUT = {}

def _fold(nodeid, when, outcome, subtest):
    before = _OUT.get(nodeid)
    if when == "setup":
        now = {"failed": "error", "skipped": "skipped"}.get(outcome, "passed")
    elif when == "call":
        if before == "failed" or outcome == "failed":
            now = "failed"
        elif subtest:
            now = before or "passed"
        else:
            now = "skipped" if outcome == "skipped" else "passed"
    elif outcome == "failed":
        now = "failed" if before == "failed" else "error"
    else:
        now = before or "error"
    _OUT[nodeid] = now

def pytest_runtest_logreport(report):
    subtest = type(report).__name__ == "SubtestReport"
    _fold(report.nodeid, report.when, report.outcome, subtest)

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
    name: RealSuite(name)
    for name in (
        "iniconfig", "pluggy", "more_itertools", "boltons", "attrs",
        "six", "cachetools", "exceptiongroup", "semver", "packaging",
    )
}  # fmt: skip


def stage_suite(suite: RealSuite, where: Path) -> tuple[Path, Path]:
    """Copy a suite's workspace and hidden tests under ``where``; return both folders."""
    workspace = where / "workspace"
    hidden = where / "hidden"
    ignore = shutil.ignore_patterns("__pycache__", ".pytest_cache", ".hypothesis")
    shutil.copytree(suite.workspace, workspace, ignore=ignore)
    shutil.copytree(suite.hidden, hidden, ignore=ignore)
    return workspace, hidden


# Confines itself as the sandbox's test process does, then runs pytest: the suite's
# outcomes under the sandbox's allow-list, with nothing else of the sandbox around.
_CONFINED = """
import json, sys
policy, module = json.loads(sys.argv[1]), sys.argv[2]
namespace = {"__name__": "_ldd_confinement"}
with open(module, encoding="utf-8") as handle:
    exec(compile(handle.read(), module, "exec"), namespace)
report = namespace["confine"](policy)
if report["level"] != "landlock":
    raise SystemExit(f"not confined: {report['detail']}")
import pytest
raise SystemExit(pytest.main(sys.argv[3:]))
"""


def plain_outcomes(
    workspace: Path,
    hidden: Path,
    *,
    timeout: float = 600.0,
    confine: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """Each test id's outcome under plain pytest (the library importable, nothing else).

    With ``confine`` (a policy of ``pytest_ldd._sandbox.confinement``), pytest runs in
    a process that confined itself with that policy first, with ``HOME`` and
    ``TMPDIR`` in the folders the policy lets it write (its first two), and its
    working folder the workspace, as in the sandbox.
    """
    plugin_dir = hidden.parent / "plain-collector"
    plugin_dir.mkdir(exist_ok=True)
    (plugin_dir / "ldd_plain_collector.py").write_text(_COLLECTOR, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
    env["PYTHONPATH"] = os.pathsep.join([str(workspace), str(plugin_dir)])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # No plugin but the collector, as the sandbox runs hidden tests: those installed
    # beside pytest-ldd are no part of a suite's outcome (pytest-randomly would
    # reorder and reseed each run differently).
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    # What pytest collects from: folders and Python files (a pyproject.toml beside
    # them configures the run, and pytest reads it there as the rootdir's).
    tests = sorted(p.name for p in hidden.iterdir() if p.is_dir() or p.suffix == ".py")
    options = [
        "-q", "-p", "no:cacheprovider", "-p", "no:ldd",
        "-p", "ldd_plain_collector", "--rootdir", str(hidden),
    ]  # fmt: skip
    command = [sys.executable, "-m", "pytest", *options, *tests]
    cwd = hidden
    out = hidden.parent / "plain-outcomes.json"
    if confine is not None:
        home, tmp = (Path(folder) for folder in list(confine["write"])[:2])
        env.update(HOME=str(home), TMPDIR=str(tmp))
        out = tmp / "plain-outcomes.json"
        module = Path(pytest_ldd.__file__).parent / "_sandbox" / "confinement.py"
        command = [sys.executable, "-c", _CONFINED, json.dumps(dict(confine)), str(module)]
        command += [*options, "--basetemp", str(tmp / "pytest")]
        command += [str(hidden / name) for name in tests]
        cwd = workspace
    env["LDD_PLAIN_OUTCOMES"] = str(out)
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if not out.exists():
        msg = f"plain pytest wrote no outcomes (exit {done.returncode}): {done.stdout[-2000:]}"
        msg += done.stderr[-2000:]
        raise AssertionError(msg)
    found = json.loads(out.read_text(encoding="utf-8"))
    errors = found.pop("<collect_errors>", [])
    if errors:
        msg = f"plain pytest could not collect {errors}: the shipped suite is broken"
        raise AssertionError(msg)
    return found


def shared_plain_outcomes(suite: RealSuite, cache: Path) -> dict[str, str]:
    """Plain pytest's outcomes of a shipped suite, run once per test session.

    ``cache`` is a folder that every xdist worker of the session shares.  The first
    test to need a suite stages it there and runs it (another that needs it meanwhile
    waits on the suite's lock); the others read the outcomes it wrote.  They depend on
    the shipped files alone, never on where a copy of them is graded.
    """
    cache.mkdir(parents=True, exist_ok=True)
    done = cache / f"{suite.name}.json"
    with open(cache / f"{suite.name}.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            staged = cache / suite.name
            shutil.rmtree(staged, ignore_errors=True)
            workspace, hidden = stage_suite(suite, staged)
            found = plain_outcomes(workspace, hidden)
            partial = done.with_suffix(".partial")
            partial.write_text(json.dumps(found), encoding="utf-8")
            partial.replace(done)
    outcomes: dict[str, str] = json.loads(done.read_text(encoding="utf-8"))
    return outcomes
