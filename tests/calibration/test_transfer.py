"""``ldd store export``, ``import`` and ``merge``, and the ``merge=union`` recipe with git."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from backends import Backend
from calibration_support import rate

from pytest_ldd import cli
from pytest_ldd.calibration.calibrator import Calibrator
from pytest_ldd.calibration.registry import MetricRegistry
from pytest_ldd.store import Store
from pytest_ldd.store.files import TraceStore


def record(store: Store, session: str, errors: list[float], name: str = "a") -> None:
    """One session's pairs of ``name`` (registered if needed), then its states."""
    registry = MetricRegistry(store)
    registry.register(rate(name))
    cal = Calibrator(registry)
    for index, error in enumerate(errors):
        cal.log(name, 0.5 + error / 2, 0.5 - error / 2, session_id=session, nodeid=f"t::{index}")
    store.append_sessions([{"session_id": session}])
    cal.update()


def folder_store(folder: Path) -> TraceStore:
    return TraceStore(folder, ldd_dir=folder)


def states(store: Store) -> dict[str, tuple[str, int, float | None]]:
    registry = MetricRegistry(store)
    return {
        name: (s.state, s.n, None if s.mae is None else round(s.mae, 12))
        for name in registry.names()
        for s in [registry.state(name)]
    }


def pair_records(store: Store) -> list[dict[str, object]]:
    records, _ = store.read_log("pairs")
    return records


def run_cli(backend: Backend, project: Path, *args: str) -> int:
    backend.write_pyproject(project)
    return cli.main([*args, "--project", str(project)])


def test_export_writes_the_same_history(
    backend: Backend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = backend.open(tmp_path)
    record(store, "s1", [0.1] * 5)
    record(store, "s2", [0.2] * 2, name="b")
    assert run_cli(backend, tmp_path, "store", "export", "--to", str(tmp_path / "out")) == 0
    assert capsys.readouterr().out.startswith("exported 7 pairs, 0 observations, 2 sessions")
    exported = folder_store(tmp_path / "out")
    assert states(exported) == states(store)
    assert states(exported)["a"][0] == "load_bearing"
    assert pair_records(exported) == pair_records(store)
    assert Calibrator(MetricRegistry(exported)).verify() == []
    # Once there, never over it.
    assert run_cli(backend, tmp_path, "store", "export", "--to", str(tmp_path / "out")) == 2
    assert "--to must be a new or empty folder" in capsys.readouterr().err
    store.close()


def test_import_is_idempotent(
    backend: Backend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "src"
    record(folder_store(source), "s1", [0.1] * 5)
    record(folder_store(source), "s2", [0.3] * 1)
    project = tmp_path / "project"
    project.mkdir()
    assert run_cli(backend, project, "store", "import", str(source)) == 0
    assert capsys.readouterr().out.startswith("imported 6 pairs, 0 observations, 2 sessions")
    store = backend.open(project)
    assert states(store) == states(folder_store(source))
    assert run_cli(backend, project, "store", "import", str(source)) == 0
    assert capsys.readouterr().out.startswith("imported 0 pairs, 0 observations, 0 sessions")
    assert len(pair_records(store)) == 6
    # New lines in the folder are all that a later import adds, and they count.
    record(folder_store(source), "s3", [0.1] * 4)
    assert run_cli(backend, project, "store", "import", str(source)) == 0
    assert capsys.readouterr().out.startswith("imported 4 pairs, 0 observations, 1 sessions")
    assert states(store)["a"][1] == 10
    assert Calibrator(MetricRegistry(store)).verify() == []
    store.close()


def fleet(tmp_path: Path) -> list[Path]:
    """Three copies of one starting store, each recording sessions of its own."""
    base = tmp_path / "base"
    record(folder_store(base), "s0", [0.1] * 3)
    copies = []
    for job, errors in enumerate(([0.1] * 2, [0.05] * 3, [0.5] * 1)):
        copy = tmp_path / f"job{job}"
        shutil.copytree(base, copy)
        record(folder_store(copy), f"job{job}", errors)
        record(folder_store(copy), f"job{job}-b", [0.0], name="c" if job == 2 else "a")
        copies.append(copy)
    return copies


def test_merge_is_the_union_in_any_order(tmp_path: Path) -> None:
    copies = fleet(tmp_path)
    outs = []
    for number, order in enumerate((copies, copies[::-1], [copies[1], copies[2], copies[0]])):
        out = tmp_path / f"merged{number}"
        assert cli.main(["store", "merge", *map(str, order), "--into", str(out)]) == 0
        outs.append(out)
    texts = []
    for out in outs:
        files = {p.name: p.read_text() for p in sorted(out.iterdir()) if p.is_file()}
        doc = json.loads(files.pop("metrics.json"))
        doc.pop("generated_at")
        for state in doc["promotions"]:
            state.pop("last_evaluated_at", None)
        texts.append((files, doc))
    assert texts[0] == texts[1] == texts[2]
    merged = folder_store(outs[0])
    pairs = pair_records(merged)
    assert len(pairs) == 3 + (2 + 1) + (3 + 1) + (1 + 1)
    assert len({(p["session_id"], p["nodeid"]) for p in pairs if p["session_id"] != "s0"}) == 9
    assert states(merged)["a"][1] == 3 + 3 + 4 + 1
    assert states(merged)["c"][1] == 1
    assert Calibrator(MetricRegistry(merged)).verify() == []
    sessions, _ = merged.read_log("sessions")
    assert len(sessions) == 1 + 2 * 3


def test_merge_into_one_of_its_inputs(tmp_path: Path) -> None:
    first, second, _ = fleet(tmp_path)
    assert cli.main(["store", "merge", str(first), str(second), "--into", str(first)]) == 0
    assert len(pair_records(folder_store(first))) == 3 + 3 + 4
    assert cli.main(["store", "merge", str(first), str(second), "--into", str(first)]) == 0
    assert len(pair_records(folder_store(first))) == 3 + 3 + 4


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.com", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if out.returncode not in (0, 1):
        raise AssertionError(out.stderr)
    return out.stdout


def test_the_gitattributes_recipe_with_a_real_merge(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.fail("git is needed for the merge=union recipe test")
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / ".gitattributes").write_text(".ldd/*.jsonl merge=union\n.ldd/metrics.json -merge\n")
    record(folder_store(repo / ".ldd"), "s0", [0.1] * 3)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "checkout", "-qb", "other")
    record(folder_store(repo / ".ldd"), "other", [0.1] * 2)
    git(repo, "commit", "-qam", "other records")
    git(repo, "checkout", "-q", "main")
    record(folder_store(repo / ".ldd"), "main", [0.2] * 2)
    git(repo, "commit", "-qam", "main records")
    git(repo, "merge", "-q", "--no-edit", "other")  # metrics.json: a conflict, ours kept
    ldd = subprocess.run(
        [sys.executable, "-m", "pytest_ldd", "store", "merge", ".ldd", "--into", ".ldd"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ldd.returncode == 0, ldd.stderr
    git(repo, "add", ".ldd")
    git(repo, "commit", "-qm", "merge other")
    assert git(repo, "status", "--porcelain") == ""
    store = folder_store(repo / ".ldd")
    pairs = pair_records(store)
    assert sorted(str(p["session_id"]) for p in pairs) == ["main"] * 2 + ["other"] * 2 + ["s0"] * 3
    assert states(store)["a"][:2] == ("load_bearing", 7)
    assert Calibrator(MetricRegistry(store)).verify() == []
