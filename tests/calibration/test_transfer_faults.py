"""``ldd store merge`` and ``import`` under faults: concurrent merges, a merge into its
own input, a last line without its newline, a corrupt source, lines of raw values.

Nothing stored is lost, and an import is applied whole or not at all.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from backends import Backend
from calibration_support import rate

from pytest_ldd import cli
from pytest_ldd.calibration.calibrator import Calibrator
from pytest_ldd.calibration.registry import MetricRegistry
from pytest_ldd.model.metric import positive_count
from pytest_ldd.store import Store
from pytest_ldd.store.files import TraceStore


def folder_store(folder: Path) -> TraceStore:
    return TraceStore(folder, ldd_dir=folder)


def record(store: Store, session: str, count: int, name: str = "a") -> None:
    """``count`` pairs of ``name`` logged in session ``session``, states updated."""
    registry = MetricRegistry(store)
    registry.register(rate(name))
    cal = Calibrator(registry)
    for index in range(count):
        cal.log(name, 0.5, 0.45, session_id=session, nodeid=f"t::{index}")
    store.append_sessions([{"session_id": session}])
    cal.update()


def pairs_of(store: Store) -> list[dict[str, Any]]:
    return store.read_log("pairs")[0]


def snapshot(store: Store) -> dict[str, Any]:
    """Everything a store holds, to compare before and after a refused write."""
    return {
        "pairs": store.read_log("pairs")[0],
        "observations": store.read_log("observations")[0],
        "sessions": store.read_log("sessions")[0],
        "registry": store.read_registry_bytes(),
    }


# -- merge: the lock, atomic replacement, its own output --------------------------------


def _merge(args: list[str]) -> int:
    return cli.main(["store", "merge", *args])


def test_two_merges_into_one_folder_at_once_lose_nothing(tmp_path: Path) -> None:
    jobs = []
    for job in range(4):
        folder = tmp_path / f"job{job}"
        record(folder_store(folder), f"job{job}", 650)
        jobs.append(folder)
    into = tmp_path / "merged"
    context = multiprocessing.get_context("spawn")
    procs = [
        context.Process(target=_merge, args=([str(jobs[0]), str(jobs[1]), "--into", str(into)],)),
        context.Process(target=_merge, args=([str(jobs[2]), str(jobs[3]), "--into", str(into)],)),
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=300)
        assert proc.exitcode == 0
    merged = folder_store(into)
    assert len(pairs_of(merged)) == 4 * 650
    assert len(merged.read_log("sessions")[0]) == 4
    assert Calibrator(MetricRegistry(merged)).verify() == []


def test_a_merge_into_a_folder_keeps_what_it_holds(tmp_path: Path) -> None:
    into, other = tmp_path / "into", tmp_path / "other"
    record(folder_store(into), "mine", 3)
    record(folder_store(other), "theirs", 2)
    assert _merge([str(other), "--into", str(into)]) == 0
    assert sorted(p["session_id"] for p in pairs_of(folder_store(into))) == ["mine"] * 3 + [
        "theirs"
    ] * 2


@pytest.mark.parametrize("spelling", ["plain", "relative", "dotdot", "symlink"])
def test_a_merge_whose_input_holds_its_output_is_refused(
    tmp_path: Path,
    spelling: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    project = tmp_path / "project"
    record(folder_store(project / ".ldd"), "s", 40)
    before = {p.name: p.read_bytes() for p in (project / ".ldd").iterdir() if p.is_file()}
    monkeypatch.chdir(tmp_path)
    source = {
        "plain": str(project),
        "relative": "project",
        "dotdot": str(project / ".ldd" / ".."),
        "symlink": str(tmp_path / "link"),
    }[spelling]
    if spelling == "symlink":
        (tmp_path / "link").symlink_to(project)
    assert _merge([source, "--into", str(project / ".ldd")]) == 2
    err = capsys.readouterr().err
    assert "must not be its own output" in err
    after = {p.name: p.read_bytes() for p in (project / ".ldd").iterdir() if p.is_file()}
    assert after == before
    assert len(pairs_of(folder_store(project / ".ldd"))) == 40


def test_a_project_folder_is_not_taken_for_its_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    record(folder_store(project / ".ldd"), "s", 4)
    assert _merge([str(project), "--into", str(tmp_path / "out")]) == 2
    assert "is a project folder, not a store folder" in capsys.readouterr().err
    (tmp_path / "p2").mkdir()
    (tmp_path / "p2" / "pyproject.toml").write_text("")
    code = cli.main(["store", "import", str(project), "--project", str(tmp_path / "p2")])
    assert code == 2
    assert "is a project folder" in capsys.readouterr().err
    assert not (tmp_path / "p2" / ".ldd").exists()


def test_a_merge_into_its_input_keeps_a_last_line_without_its_newline(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    record(folder_store(first), "one", 3)
    record(folder_store(second), "two", 2)
    log = first / "metric_calibrations.jsonl"
    log.write_bytes(log.read_bytes().rstrip(b"\n"))  # a complete record, no newline
    assert _merge([str(first), str(second), "--into", str(first)]) == 0
    merged = pairs_of(folder_store(first))
    assert sorted(p["session_id"] for p in merged) == ["one"] * 3 + ["two"] * 2
    assert log.read_bytes().endswith(b"\n")


@pytest.mark.filterwarnings("default")  # the CLI shows it as a line of its own
def test_a_torn_last_line_is_skipped_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = tmp_path / "first"
    record(folder_store(first), "one", 3)
    log = first / "metric_calibrations.jsonl"
    log.write_bytes(log.read_bytes()[:-20])  # the last record cut short
    assert _merge([str(first), "--into", str(tmp_path / "out")]) == 0
    assert "ldd: warning: " in capsys.readouterr().err
    assert len(pairs_of(folder_store(tmp_path / "out"))) == 2


def test_a_failed_merge_leaves_its_output_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    into, other = tmp_path / "into", tmp_path / "other"
    record(folder_store(into), "mine", 3)
    record(folder_store(other), "theirs", 2)
    before = {p.name: p.read_bytes() for p in into.iterdir() if p.is_file()}

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise OSError(28, "No space left on device")

    from pytest_ldd.calibration.transfer import merge_folders
    from pytest_ldd.config import load_config

    def open_registry(store: Store) -> MetricRegistry:
        return load_config(tmp_path).open_registry(store, read_only=False)

    monkeypatch.setattr(Calibrator, "update", fail)
    with pytest.raises(OSError, match="No space"):
        merge_folders([other], into, open_registry)
    after = {p.name: p.read_bytes() for p in into.iterdir() if p.is_file()}
    assert after == before
    assert not any(p.name.startswith(".staged-") for p in into.iterdir())


# -- import: all or nothing --------------------------------------------------------------


def _corrupt(folder: Path, how: str) -> None:
    if how == "observation line 3":
        path = folder / "observations.jsonl"
        lines = path.read_text().splitlines()
        lines[2] = lines[2][:-1] + ', "x": }'
        path.write_text("\n".join(lines) + "\n")
    elif how == "pair line 4":
        path = folder / "metric_calibrations.jsonl"
        lines = path.read_text().splitlines()
        lines[3] = json.dumps({"metric_name": "a", "metric_version": 1, "predicted": "x",
                               "observed": 0.1})  # fmt: skip
        path.write_text("\n".join(lines) + "\n")
    elif how == "normalized 7":
        path = folder / "observations.jsonl"
        lines = path.read_text().splitlines()
        record = json.loads(lines[1])
        record["normalized"] = 7
        lines[1] = json.dumps(record)
        path.write_text("\n".join(lines) + "\n")
    elif how == "raw value of a bounded metric":
        with (folder / "metric_calibrations.jsonl").open("a") as handle:
            handle.write(json.dumps({"metric_name": "a", "metric_version": 1,
                                     "predicted": 3.0, "observed": 0.2}) + "\n")  # fmt: skip
    elif how == "session line":
        with (folder / "sessions.jsonl").open("a") as handle:
            handle.write('{"session_id": ["not", "a", "str"]}\n')
    elif how == "metrics.json":
        (folder / "metrics.json").write_text('{"schema_version": 1, "specs": [')
    elif how == "a conflicting spec":
        doc = json.loads((folder / "metrics.json").read_text())
        doc["specs"][0]["description"] = "another meaning of the same version"
        (folder / "metrics.json").write_text(json.dumps(doc))


def _source(folder: Path) -> None:
    store = folder_store(folder)
    registry = MetricRegistry(store)
    registry.register(rate("a"))
    cal = Calibrator(registry)
    for index in range(5):
        cal.log("a", 0.5, 0.4, session_id="src", nodeid=f"t::{index}")
        cal.log_observations([cal.make_observation("a", 0.4, session_id="src")])
    store.append_sessions([{"session_id": "src"}])
    cal.update()


@pytest.mark.parametrize(
    "how",
    ["observation line 3", "pair line 4", "normalized 7", "raw value of a bounded metric",
     "session line", "metrics.json", "a conflicting spec"],
)  # fmt: skip
def test_importing_a_corrupt_folder_changes_nothing(
    backend: Backend, tmp_path: Path, how: str, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    backend.write_pyproject(project)
    target = backend.open(project)
    record(target, "mine", 3)
    before = snapshot(target)
    source = tmp_path / "source"
    _source(source)
    _corrupt(source, how)
    code = cli.main(["store", "import", str(source), "--project", str(project)])
    err = capsys.readouterr().err
    assert code in (1, 2), err
    assert err.startswith("ldd: ")
    assert snapshot(target) == before
    if not backend.is_database:
        assert not any(p.name.startswith(".staged-") for p in (project / ".ldd").iterdir())
    target.close()


def test_an_import_failing_half_way_is_rolled_back(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every line was valid, the appends were made, and then the state update failed:
    # nothing of the import remains.
    project = tmp_path / "project"
    project.mkdir()
    backend.write_pyproject(project)
    target = backend.open(project)
    record(target, "mine", 3)
    before = snapshot(target)
    source = tmp_path / "source"
    _source(source)

    def fail(*args: Any, **kwargs: Any) -> Any:
        from pytest_ldd.errors import StoreCorruptError

        raise StoreCorruptError("the update failed half-way")

    monkeypatch.setattr(Calibrator, "update", fail)
    code = cli.main(["store", "import", str(source), "--project", str(project)])
    assert code == 1
    assert snapshot(target) == before
    target.close()


# -- lines of raw values, on every path that takes lines in ------------------------------


def _reference_folder(folder: Path) -> None:
    """A store the reference tool wrote to: raw latencies as predicted / observed."""
    store = folder_store(folder)
    registry = MetricRegistry(store)
    registry.register(
        positive_count("latency", description="p99 latency", unit="ms", normalize_scale=1000)
    )
    store.append_calibrations(
        [
            {"metric_name": "latency", "metric_version": 1, "predicted": p, "observed": o,
             "timestamp": "2026-12-01T00:00:00Z", "session_id": "ref", "nodeid": None}
            for p, o in [(300.0, 420.0), (410.0, 400.0), (150.01, 0.0), (420.0, 420.0)]
        ]
    )  # fmt: skip


def _expected_mae() -> float:
    metric = positive_count("latency", description="p99 latency", normalize_scale=1000)
    errors = [
        abs(metric.normalize(p) - metric.normalize(o))
        for p, o in [(300.0, 420.0), (410.0, 400.0), (150.01, 0.0), (420.0, 420.0)]
    ]
    return sum(errors) / len(errors)


def _latency_figures(store: Store) -> tuple[int, float | None]:
    registry = MetricRegistry(store)
    state = registry.state("latency")
    assert Calibrator(registry).verify() == []
    return state.n, state.mae


def test_raw_lines_imported_into_any_store_are_normalized(
    backend: Backend, tmp_path: Path
) -> None:
    source = tmp_path / "reference"
    _reference_folder(source)
    project = tmp_path / "project"
    project.mkdir()
    backend.write_pyproject(project)
    assert cli.main(["store", "import", str(source), "--project", str(project)]) == 0
    store = backend.open(project)
    n, mae = _latency_figures(store)
    assert n == 4
    assert mae == pytest.approx(_expected_mae())
    stored = pairs_of(store)
    assert all(0.0 <= p["predicted"] <= 1.0 and 0.0 <= p["observed"] <= 1.0 for p in stored)
    assert [p["raw_predicted"] for p in stored] == [300.0, 410.0, 150.01, 420.0]
    # Idempotent all the same: the second import adds nothing.
    assert cli.main(["store", "import", str(source), "--project", str(project)]) == 0
    assert len(pairs_of(store)) == 4
    store.close()


def test_raw_lines_merged_into_a_folder_are_normalized(tmp_path: Path) -> None:
    source = tmp_path / "reference"
    _reference_folder(source)
    other = tmp_path / "other"
    record(folder_store(other), "s", 2)
    for into in (tmp_path / "merged", source):
        assert _merge([str(source), str(other), "--into", str(into)]) == 0
        n, mae = _latency_figures(folder_store(into))
        assert (n, mae) == (4, pytest.approx(_expected_mae()))


def test_raw_lines_appended_to_a_database_count_as_the_file_reader_counts_them(
    postgres: Backend, tmp_path: Path
) -> None:
    store = postgres.open(tmp_path)
    registry = MetricRegistry(store)
    registry.register(
        positive_count("latency", description="p99 latency", unit="ms", normalize_scale=1000)
    )
    store.append_pairs(
        [{"metric_name": "latency", "metric_version": 1, "predicted": p, "observed": o}
         for p, o in [(300.0, 420.0), (410.0, 400.0), (150.01, 0.0), (420.0, 420.0)]]
    )  # fmt: skip
    cal = Calibrator(MetricRegistry(store))
    assert cal.stats("latency").mae == pytest.approx(_expected_mae())
    assert cal.recompute("latency").mae == pytest.approx(_expected_mae())
    cal.update()
    assert _latency_figures(store) == (4, pytest.approx(_expected_mae()))
    # Exported, they are written normalized, and read as the same history.
    out = tmp_path / "exported"
    postgres.write_pyproject(tmp_path)
    assert cli.main(["store", "export", "--to", str(out), "--project", str(tmp_path)]) == 0
    exported = pairs_of(folder_store(out))
    assert [p["raw_observed"] for p in exported] == [420.0, 400.0, 0.0, 420.0]
    assert _latency_figures(folder_store(out)) == (4, pytest.approx(_expected_mae()))
    store.close()


def test_moving_a_folder_with_its_own_store_files_keeps_them_whole(tmp_path: Path) -> None:
    # The staged copy never leaves anything behind in the folder it replaces.
    into = tmp_path / "into"
    record(folder_store(into), "s", 2)
    shutil.copytree(into, tmp_path / "copy")
    assert _merge([str(tmp_path / "copy"), "--into", str(into)]) == 0
    names = sorted(p.name for p in into.iterdir())
    assert names == sorted(
        [".lock", "metric_calibrations.jsonl", "metrics.json", "sessions.jsonl"]
    ), names
    assert os.stat(into / "metrics.json").st_mode & 0o044  # readable as a plain file is
