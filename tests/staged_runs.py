"""Run staged hidden tests (canaries and twins planted) with plain pytest, for the tests.

:func:`run_staged` runs a staged suite in a fresh interpreter with the workspace on
``sys.path`` and returns, per test id, its outcome and -- for a failed test -- the line
of its test file where it failed, taken from the raw traceback (independently of the
sandbox's runner).  :func:`twin_report` sorts a suite's twins by what they did.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from pytest_ldd._sandbox.staging import HiddenSuite

__all__ = ["TwinReport", "run_staged", "twin_report"]

_COLLECTOR = """
import json, os

OUT = {}

def pytest_runtest_makereport(item, call):
    if call.when == "call" and call.excinfo is not None:
        tb, line = call.excinfo.tb, None
        while tb is not None:
            if os.path.realpath(tb.tb_frame.f_code.co_filename) == os.path.realpath(item.path):
                line = tb.tb_lineno
            tb = tb.tb_next
        OUT[item.nodeid] = ["failed", line]

def pytest_runtest_logreport(report):
    if report.failed and report.when != "call":
        OUT[report.nodeid] = ["error", None]
    elif report.when == "call" and report.nodeid not in OUT:
        OUT[report.nodeid] = [report.outcome, None]

def pytest_collectreport(report):
    if report.failed:
        OUT.setdefault("<collect_errors>", []).append(report.nodeid)

def pytest_sessionfinish(session):
    with open(os.environ["LDD_STAGED_OUT"], "w", encoding="utf-8") as handle:
        json.dump(OUT, handle)
"""


def run_staged(suite_root: Path, workspace: Path, *, timeout: float = 600) -> dict[str, list]:
    """Each test id of a plain pytest run of the staged suite: ``[outcome, failed line]``."""
    work = suite_root.parent / f"{suite_root.name}-run"
    work.mkdir(exist_ok=True)
    (work / "ldd_staged_collector.py").write_text(_COLLECTOR, encoding="utf-8")
    out = work / "outcomes.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
    env.update(
        PYTHONPATH=os.pathsep.join([str(workspace), str(work)]),
        PYTHONDONTWRITEBYTECODE="1",
        PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
        LDD_STAGED_OUT=str(out),
    )
    command = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
        "-p", "ldd_staged_collector", "--rootdir", str(suite_root), str(suite_root),
    ]  # fmt: skip
    done = subprocess.run(
        command, cwd=work, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if not out.exists():
        msg = f"the staged run wrote nothing (exit {done.returncode}): {done.stdout[-3000:]}"
        raise AssertionError(msg)
    found: dict[str, list] = json.loads(out.read_text(encoding="utf-8"))
    return found


@dataclass
class TwinReport:
    """What each twin run (one per parameter set) did."""

    at_check: list[str] = field(default_factory=list)
    passed: list[str] = field(default_factory=list)
    elsewhere: list[str] = field(default_factory=list)


def twin_report(suite: HiddenSuite, outcomes: dict[str, list]) -> TwinReport:
    """Sort the twin runs: failed at their check, passed, or anything else."""
    report = TwinReport()
    for nodeid, (outcome, line) in outcomes.items():
        if nodeid.startswith("<"):
            continue
        twin = next((t for t in suite.twins if nodeid.split("[")[0] == t), None)
        if twin is None:
            continue
        first, last = suite.twin_lines[twin]
        if outcome == "failed" and line is not None and first <= line <= last:
            report.at_check.append(nodeid)
        elif outcome == "passed":
            report.passed.append(nodeid)
        else:
            report.elsewhere.append(f"{nodeid} ({outcome} at {line}, check at {first})")
    return report
