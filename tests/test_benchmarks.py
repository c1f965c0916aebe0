"""Smoke tests of the benchmark suite: the smallest configurations, no timing asserted.

The benchmarks live in ``benchmarks/`` (scripts, not a package); these tests
import them and run each piece once at its smallest, so the code cannot rot
between the runs that produce ``docs/performance.md``.
"""

from __future__ import annotations

import ast
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, ModuleType]]:
    """The benchmark modules, imported from ``benchmarks/``."""
    import importlib

    monkeypatch.syspath_prepend(str(BENCHMARKS))
    names = ("_harness", "_suites", "_stores", "soak", "run")
    yield {name: importlib.import_module(name) for name in names}
    for name in (*names, "_results", "_soak_channel"):
        sys.modules.pop(name, None)


def script_imports(path: Path) -> set[str]:
    """The sibling scripts ``path`` imports, wherever the import stands (a function too)."""
    siblings = {p.stem for p in BENCHMARKS.glob("*.py")}
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            found.add(str(node.args[0].value))
    return (found & siblings) - {path.stem}


def test_the_benchmark_scripts_import_each_other_without_a_circle() -> None:
    graph = {path.stem: script_imports(path) for path in BENCHMARKS.glob("*.py")}
    assert "bench_sandbox" in graph["run"]  # the walk sees what it must
    circles = []
    for start in sorted(graph):
        # Depth-first from each script: reaching it again is a circle.
        seen: set[str] = set()
        todo = sorted(graph[start])
        while todo:
            name = todo.pop()
            if name == start:
                circles.append(start)
                break
            if name not in seen:
                seen.add(name)
                todo.extend(graph.get(name, ()))
    assert circles == []


# -- the harness ------------------------------------------------------------------------


def test_interleave_rotates_the_order_and_drops_warm_up(bench: dict[str, ModuleType]) -> None:
    harness = bench["_harness"]
    calls: list[str] = []
    values = iter(range(100))

    def arm(name: str) -> Any:
        def measure() -> float:
            calls.append(name)
            return float(next(values))

        return harness.Arm(name, measure, prepare=lambda: calls.append("prep-" + name))

    result = harness.interleave([arm("a"), arm("b")], 2, warmup=1)
    measured = [c for c in calls if not c.startswith("prep-")]
    # Round 0 (warm-up) a b, round 1 b a, round 2 a b.
    assert measured == ["a", "b", "b", "a", "a", "b"]
    assert calls.count("prep-a") == 3
    assert result.samples == {"a": [3.0, 4.0], "b": [2.0, 5.0]}
    assert result.median("a") == 3.5
    assert result.ratio("b", "a") == pytest.approx(3.5 / 3.5)
    assert result.to_json("s")["a"]["n"] == 2
    with pytest.raises(ValueError, match="'repetitions' must be >= 1"):
        harness.interleave([arm("a")], 0)


def test_run_child_reports_exit_code_and_peak_rss(bench: dict[str, ModuleType]) -> None:
    harness = bench["_harness"]
    # Touch every page so the memory is resident, not just reserved.
    code = "import sys; b = bytearray(40_000_000); b[::4096] = b'x' * len(b[::4096]); sys.exit(3)"
    run = harness.run_child([sys.executable, "-c", code])
    assert run.returncode == 3
    assert run.max_rss >= 40_000_000
    assert run.wall_s > 0
    assert run.cpu_s > 0
    with pytest.raises(RuntimeError, match="exited 3"):
        run.check()
    assert run.check(3) is run


def test_run_child_kills_the_whole_group_on_timeout(
    bench: dict[str, ModuleType], tmp_path: Path
) -> None:
    harness = bench["_harness"]
    pid_file = tmp_path / "grandchild.pid"
    code = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(60)\n"
    )
    with pytest.raises(RuntimeError, match="timed out"):
        harness.run_child([sys.executable, "-c", code], timeout=3.0)
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (reaped by init soon) is not running any more.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


# -- generated suites and stores ----------------------------------------------------------


def test_suites_of_every_flavour_record_the_same_values(
    bench: dict[str, ModuleType], tmp_path: Path
) -> None:
    suites = bench["_suites"]
    for flavour in suites.FLAVOURS:
        root = suites.write_suite(tmp_path / flavour, flavour, tests=4, observations=5, modules=2)
        text = "".join(p.read_text() for p in sorted(root.glob("test_*.py")))
        assert text.count("def test_") == 4
        observed, predicted = suites.expected_value(3, 0)
        assert repr(observed) in text
        assert (predicted is None) == ((3 + 0) % 2 == 1)
    pairs = sum(suites.expected_value(t, i)[1] is not None for t in range(2000) for i in range(5))
    assert pairs == 5000  # half of the 10,000 values carry a prediction
    with pytest.raises(ValueError, match="'tests'"):
        suites.write_suite(tmp_path / "bad", "ldd", tests=0)


def test_ldd_suite_records_into_the_store(bench: dict[str, ModuleType], tmp_path: Path) -> None:
    suites, harness = bench["_suites"], bench["_harness"]
    root = suites.write_suite(tmp_path / "ldd", "ldd", tests=6, observations=5, modules=2)
    loop = suites.write_suite(
        tmp_path / "loop", "ldd", tests=6, observations=5, modules=2, loop=True
    )
    for folder in (root, loop):
        run = harness.run_child(
            harness.pytest_command("-q", "-p", "no:harvest", "--ldd"), cwd=folder
        )
        run.check()
        store = folder / ".ldd"
        observations = (store / "observations.jsonl").read_text().splitlines()
        text = (store / "metric_calibrations.jsonl").read_text()
        pairs = [json.loads(line) for line in text.splitlines()]
        assert len(observations) == 30
        assert len(pairs) == 15
        assert {p["metric_name"] for p in pairs} == set(suites.METRICS)


def test_fill_store_writes_a_valid_caught_up_store(
    bench: dict[str, ModuleType], tmp_path: Path
) -> None:
    stores, harness = bench["_stores"], bench["_harness"]
    from pytest_ldd import Calibrator, MetricRegistry, TraceStore

    filled = stores.fill_store(tmp_path / "p", 120, seed=1)
    assert filled.pairs == 120
    assert filled.observations == 240
    assert filled.sessions == 1
    store = TraceStore(tmp_path / "p")
    assert len(store.read_jsonl(store.calibrations_path)[0]) == 120
    assert len(store.read_jsonl(store.observations_path)[0]) == 240
    registry = MetricRegistry(store)
    for name in registry.names():
        state = registry.state(name)
        assert state.n == 24  # caught up: the stored figures already count every pair
        assert state.is_load_bearing
    assert Calibrator(registry).verify() == []
    status = harness.run_child(
        [
            sys.executable,
            "-m",
            "pytest_ldd",
            "metric",
            "status",
            "--json",
            "--project",
            str(tmp_path / "p"),
        ]
    ).check()
    assert [m["n"] for m in json.loads(status.stdout)["metrics"]] == [24] * 5
    with pytest.raises(ValueError, match="'pairs' must be >= 0"):
        stores.fill_store(tmp_path / "q", -1)


# -- the soak -----------------------------------------------------------------------------


def test_tiny_soak_loses_nothing_and_leaves_no_process(
    bench: dict[str, ModuleType], tmp_path: Path
) -> None:
    soak = bench["soak"]
    result = soak.soak(
        tmp_path, sessions=3, tests=12, seed=2, xdist_every=0, session_s=1.5, log=lambda _: None
    )
    assert result.sessions == 3
    assert result.failures == []
    assert result.stray_processes == ()
    assert result.audit.pairs_lost == 0
    assert result.audit.pairs_expected == 2 * result.audit.finished_tests
    assert result.audit.verify_returncode == 0
    doc = result.to_json()
    assert doc["ok"] is True
    assert doc["loss_ratio"] == 0.0


def test_soak_audit_catches_a_lost_and_a_duplicated_pair(
    bench: dict[str, ModuleType], tmp_path: Path
) -> None:
    soak, harness = bench["soak"], bench["_harness"]
    project, channel = tmp_path / "project", tmp_path / "channel"
    channel.mkdir()
    soak.write_soak_suite(project, tests=4)
    env = harness.child_env(
        {
            "PYTHONPATH": str(BENCHMARKS),
            "LDD_SOAK_SESSION": "7",
            "LDD_SOAK_CHANNEL": str(soak.channel_path(channel, 7)),
        }
    )
    command = harness.pytest_command("-q", "-p", "no:harvest", "-p", "_soak_channel", "--ldd")
    harness.run_child(command, cwd=project, env=env).check()
    clean = soak.audit(project, channel, [7])
    assert clean.failures == ()
    assert clean.finished_tests == 4
    assert clean.pairs_expected == 8
    assert clean.pairs_lost == 0

    log = project / ".ldd" / "metric_calibrations.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[1:] + lines[-1:]))  # lose the first, repeat the last
    broken = soak.audit(project, channel, [7])
    assert broken.pairs_lost == 1
    assert broken.pairs_duplicated == 1
    assert any("missing" in f for f in broken.failures)
    assert any("twice" in f for f in broken.failures)


def test_soak_kills_a_session_with_its_xdist_workers(
    bench: dict[str, ModuleType], tmp_path: Path
) -> None:
    soak = bench["soak"]
    # One -n 2 session killed early (the draw is at most 1.25 x 0.4 s): workers must go too.
    result = soak.soak(
        tmp_path, sessions=1, tests=12, seed=3, xdist_every=1, session_s=0.4, log=lambda _: None
    )
    assert result.killed == 1
    assert result.stray_processes == ()
    assert result.audit.failures == ()


# -- the driver ---------------------------------------------------------------------------


def test_targets_and_table(bench: dict[str, ModuleType]) -> None:
    run = bench["run"]
    met = run.Target("a.b", 1.1, 1.15, "x", "ratio")
    missed = run.Target("c", 0.31, 0.3, "s", "wall")
    assert met.met
    assert not missed.met
    assert missed.to_json()["margin"] == pytest.approx(0.31 / 0.3 - 1)
    doc = {"targets": [met.to_json(), missed.to_json()]}
    lines = run.table(doc)
    assert lines[0].split() == ["target", "value", "limit", "verdict"]
    assert lines[1].endswith("met")
    assert lines[2].endswith("MISSED")
    assert set(run.BENCHMARKS) >= {"overhead", "overhead_xdist", "history", "memory", "soak"}
    assert run.machine()["cores"] >= 1
    assert "pytest" in run.versions()
