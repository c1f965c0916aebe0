"""Helpers for the end-to-end plugin tests (pytester projects and .ldd snapshots)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes (empty when it does not exist)."""
    if not folder.exists():
        return {}
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSONL file."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def metrics_doc(ldd_dir: Path) -> dict[str, Any]:
    """The parsed metrics.json."""
    return json.loads((ldd_dir / "metrics.json").read_text())  # type: ignore[no-any-return]


def state_of(ldd_dir: Path, name: str) -> str:
    """The stored state name of a metric."""
    for state in metrics_doc(ldd_dir)["promotions"]:
        if state["metric_name"] == name:
            return str(state["state"])
    raise AssertionError(f"no state for {name!r} in {ldd_dir}")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """Run pytest in-process with the plugin's usual flags."""
    # pytest-harvest (a benchmark baseline) is not under test here.  Nor is
    # pytest-rerunfailures, but where a test reruns: with xdist installed it opens a
    # server socket in every session and never closes it, and in-process runs would
    # pile them up in one long-lived test process (a worker's descriptors past 256).
    quiet = () if "--reruns" in args else ("-p", "no:rerunfailures")
    return pytester.runpytest(*PROJECT_ARGS, "-p", "no:harvest", *quiet, *_order(args), *args)


#: What every project this suite runs pytest in shares: no cache folder, and
#: pytest-asyncio configured as a project with async tests would configure it (left
#: unset, it warns at configure, an error under ``-W error``).
PROJECT_ARGS = ("-p", "no:cacheprovider", "-o", "asyncio_default_fixture_loop_scope=function")


def _order(args: tuple[str, ...]) -> tuple[str, ...]:
    """pytest-randomly off, unless the run asks for it: the projects' expected
    outputs (which test runs last, where ``-x`` stops) follow their file order.
    tests/plugin/test_ecosystem.py runs projects shuffled."""
    asked = any(a.startswith("--randomly") for a in args) or "randomly" in args
    return () if asked else ("-p", "no:randomly")


def strip_volatile(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records without ids and timestamps, sorted, for comparing two runs."""
    volatile = {"timestamp", "session_id"}
    cleaned = [{k: v for k, v in r.items() if k not in volatile} for r in records]
    return sorted(cleaned, key=lambda r: json.dumps(r, sort_keys=True))
