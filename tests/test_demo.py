"""``ldd demo``: one end-to-end run shared by the assertions, plus the fast refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_ldd.demo import DEFAULT_SESSIONS, main, runner
from pytest_ldd.demo.runner import REGRESSION_SESSION, SessionRun, copy_project, surprises
from pytest_ldd.registry import MetricRegistry
from pytest_ldd.store.files import TraceStore

METRICS = {"cost_per_success", "judge_verdict", "solve_seconds", "task_success"}


@dataclass(frozen=True)
class DemoRun:
    """One finished ``ldd demo --into FOLDER``."""

    folder: Path
    returncode: int
    stdout: str
    stderr: str


def _ldd(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # The demo must not depend on the surrounding pytest's own settings.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run(
        [sys.executable, "-m", "pytest_ldd", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    base = tmp_path_factory.mktemp("demo")
    folder = base / "my-demo"
    done = _ldd("demo", "--into", str(folder), cwd=base)
    return DemoRun(folder, done.returncode, done.stdout, done.stderr)


def _session_block(stdout: str, number: int) -> str:
    """The lines the demo printed for session ``number``."""
    start = stdout.index(f"session {number}/{DEFAULT_SESSIONS}:")
    end = stdout.find("\n\n", start)
    return stdout[start:end]


# -- the end-to-end run ----------------------------------------------------------------


def test_the_demo_goes_as_scripted(demo: DemoRun) -> None:
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "unexpected" not in demo.stderr
    for number in range(1, DEFAULT_SESSIONS + 1):
        assert f"session {number}/{DEFAULT_SESSIONS}:" in demo.stdout


def test_each_session_prints_a_status_line_per_metric(demo: DemoRun) -> None:
    block = _session_block(demo.stdout, 4)
    for name in METRICS:
        assert f"  {name} " in block
    header = block.splitlines()[1].split()
    assert header == ["metric", "state", "n", "MAE", "this", "session"]


def test_an_advisory_breach_passes_with_a_warning(demo: DemoRun) -> None:
    block = _session_block(demo.stdout, 2)
    assert block.startswith("session 2/7: passed, with 1 advisory breach")
    assert "advisory breach: solve_seconds = 2.2 s, limit le 2" in block
    assert "passed with a warning" in block


def test_the_gated_metric_is_promoted(demo: DemoRun) -> None:
    block = _session_block(demo.stdout, 3)
    assert "promoted: solve_seconds is load-bearing" in block
    assert "session 3: solve_seconds was promoted to load_bearing" in demo.stdout


def test_the_last_session_fails_on_the_load_bearing_gate(demo: DemoRun) -> None:
    block = _session_block(demo.stdout, 7)
    assert block.startswith("session 7/7: gate failed (expected: the metric is now load-bearing)")
    assert "gate failed: solve_seconds = 3.1 s, limit le 2" in block
    for number in range(1, 7):
        assert "gate failed" not in _session_block(demo.stdout, number)


def test_the_judge_stays_advisory(demo: DemoRun) -> None:
    assert "judge_verdict stayed advisory (drifting" in demo.stdout


def test_the_html_report_is_written(demo: DemoRun) -> None:
    report = demo.folder / "report.html"
    assert f"HTML report: {report}" in demo.stdout
    html = report.read_text(encoding="utf-8")
    assert "<svg" in html
    for name in METRICS:
        assert name in html


def test_the_store_holds_the_metrics_and_their_states(demo: DemoRun) -> None:
    registry = MetricRegistry(TraceStore(demo.folder), read_only=True)
    assert set(registry.names()) == METRICS
    states = {name: registry.state(name) for name in METRICS}
    assert states["solve_seconds"].state == "load_bearing"
    # history_mean has no prediction in session 1: six sessions of four tasks.
    assert states["solve_seconds"].n == 24
    # The judge cannot tell a subtle bug from a correct solution: it never earns trust.
    assert states["judge_verdict"].state == "drifting"
    assert states["judge_verdict"].n == 28
    # Corpus metrics: one pair per session from session 2 on.
    assert states["task_success"].n == 6
    assert states["cost_per_success"].n == 6


def test_every_session_is_recorded(demo: DemoRun) -> None:
    lines = (demo.folder / ".ldd" / "sessions.jsonl").read_text(encoding="utf-8").splitlines()
    sessions = [json.loads(line) for line in lines]
    assert len(sessions) == DEFAULT_SESSIONS
    assert [s["counts"]["gate_failures"] for s in sessions] == [0, 0, 0, 0, 0, 0, 1]
    assert [s["counts"]["advisory_breaches"] for s in sessions] == [0, 1, 0, 0, 0, 0, 0]
    # Cost-of-pass comes from the recorded usage priced by prices.toml.
    assert all(s["corpus"]["cost_per_success"]["pooled"] > 0 for s in sessions)


def test_the_suggested_commands_work(demo: DemoRun) -> None:
    # The folder is shown relative to where the demo ran (the fixture's base folder).
    assert "ldd metric status --project my-demo" in demo.stdout
    assert "ldd metric show solve_seconds --project my-demo" in demo.stdout
    assert "cd my-demo && pytest --ldd" in demo.stdout
    status = _ldd("metric", "status", "--project", str(demo.folder), cwd=demo.folder)
    assert status.returncode == 0, status.stderr
    row = next(line for line in status.stdout.splitlines() if line.startswith("solve_seconds"))
    assert "load_bearing" in row
    # The stored figures are exactly a full recompute from the logs.
    verify = _ldd("metric", "verify", "--project", str(demo.folder), cwd=demo.folder)
    assert verify.returncode == 0, verify.stdout + verify.stderr


# -- fast checks -------------------------------------------------------------------------


def test_a_non_empty_folder_is_refused(tmp_path: Path) -> None:
    keep = tmp_path / "notes.txt"
    keep.write_text("mine\n", encoding="utf-8")
    done = _ldd("demo", "--into", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 2
    assert "not empty" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    assert keep.read_text(encoding="utf-8") == "mine\n"


def test_the_default_folder_is_refused_when_not_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "ldd-demo").mkdir()
    (tmp_path / "ldd-demo" / "x").write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main([]) == 2
    assert "'ldd-demo' exists and is not empty" in capsys.readouterr().err


def test_a_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "file"
    target.write_text("", encoding="utf-8")
    assert main(["--into", str(target)]) == 2
    assert "is not a folder" in capsys.readouterr().err


@pytest.mark.parametrize("sessions", ["0", "11", "many"])
def test_a_bad_session_count_is_a_usage_error(
    sessions: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--into", str(tmp_path / "d"), "--sessions", sessions]) == 2
    assert "--sessions" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()


def test_help_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "--into DIR" in capsys.readouterr().out


def test_the_copy_is_the_whole_project_and_nothing_else(tmp_path: Path) -> None:
    files = copy_project(tmp_path / "copy")
    copied = sorted(
        p.relative_to(tmp_path / "copy").as_posix()
        for p in (tmp_path / "copy").rglob("*")
        if p.is_file()
    )
    assert len(copied) == files
    assert "pyproject.toml" in copied
    assert "README.md" in copied
    assert "prices.toml" in copied
    assert "demo_agent.py" in copied
    assert "tests/test_agent.py" in copied
    for task in ("slugify", "fizzbuzz", "parse_duration", "merge_intervals"):
        assert f"hidden/{task}/test_{task}.py" in copied
        assert f"usage/{task}.json" in copied
    assert not [p for p in copied if "__pycache__" in p or p.startswith(".ldd")]


def test_an_unexpected_failure_exits_one_and_says_what(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken"
    copy_project(broken)
    with open(broken / "tests" / "test_agent.py", "a", encoding="utf-8") as handle:
        handle.write('\n\ndef test_broken() -> None:\n    assert False, "broken on purpose"\n')
    monkeypatch.setattr(runner, "_bundled_project", lambda: broken)
    assert main(["--into", str(tmp_path / "run"), "--sessions", "1"]) == 1
    err = capsys.readouterr().err
    assert "something unexpected happened" in err
    assert "session 1: pytest exited 1, expected 0" in err
    assert "test_broken failed" in err
    assert "broken on purpose" in err


def _run(number: int, returncode: int, failures: list[tuple[str, str]]) -> SessionRun:
    breach = {"nodeid": "t", "value": 3.1, "limit": "le 2", "enforced": True}
    row = {"name": "solve_seconds", "unit": "s", "breaches": [breach] if failures else []}
    document = {"metrics": [row], "state_changes": []}
    return SessionRun(number, returncode, 1.0, "", document, failures)


def test_the_script_expects_a_gate_failure_in_the_regression_session_only() -> None:
    gate = [("test_agent_task[parse_duration]", "ldd gate failed: solve_seconds = 3.1 s")]
    assert surprises(_run(REGRESSION_SESSION, 1, gate)) == []
    assert surprises(_run(3, 0, [])) == []
    assert surprises(_run(3, 1, gate)) != []
    assert any("expected 1" in s for s in surprises(_run(REGRESSION_SESSION, 0, [])))
    other = [*gate, ("test_other", "AssertionError: boom")]
    assert any("another reason" in s for s in surprises(_run(REGRESSION_SESSION, 1, other)))
