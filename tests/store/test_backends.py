"""The same scenarios on every store backend: the ``.ldd/`` folder and PostgreSQL.

Each test takes the ``backend`` fixture (tests/conftest.py), so it runs once per
backend; nothing here knows which one it holds except through
:class:`backends.Backend`.  What only a database has (concurrent writers, the
schema, project keys, masked passwords) is at the end, on the ``postgres`` fixture.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from backends import Backend
from calibration_support import log_errors, rate
from plugin_support import run

from pytest_ldd import cli, weighted_sum
from pytest_ldd.calibration.calibrator import Calibrator
from pytest_ldd.calibration.registry import MetricRegistry
from pytest_ldd.errors import InvalidSpecError, StoreCorruptError

MARKED_TEST = """
import pytest
from pytest_ldd import Observation

@pytest.mark.metric(
    "latency", kind="positive", unit="ms", normalize_scale=1000,
    description="response latency of the toy handler", le=500,
)
def test_latency():
    yield Observation("latency", 512, predicted=510)
"""

MANY_TEST = """
import pytest
from pytest_ldd import Observation

@pytest.mark.metric("score", kind="bounded", description="share of cases solved", ge=0.0)
@pytest.mark.parametrize("case", range(8))
def test_case(case):
    yield Observation("score", case / 10, predicted=case / 10 + 0.01)
"""

GATE_FAILURE = "ldd gate failed: latency = 512 ms, limit le 500 (load-bearing: n=5, MAE=0.002)"


# --------------------------------------------------------------------------- registry


def test_promotion_demotion_and_verify(backend: Backend, tmp_path: Path) -> None:
    store = backend.open(tmp_path)
    registry = MetricRegistry(store)
    registry.register_many([rate("a"), rate("b")])
    cal = Calibrator(registry)
    log_errors(cal, "a", [0.1] * 5)
    log_errors(cal, "b", [0.4] * 2)
    changes = cal.update()
    assert [(name, after.state) for name, _, after in changes] == [("a", "load_bearing")]
    assert cal.verify() == []
    store.close()

    reopened = Calibrator(MetricRegistry(backend.open(tmp_path)))
    assert reopened.registry.is_load_bearing("a")
    assert reopened.stats("b").n == 2
    log_errors(reopened, "a", [0.9] * 10)
    (change,) = reopened.update()
    assert change[0] == "a"
    assert change[2].state == "drifting"
    assert change[2].demoted_at is not None
    assert reopened.stats("a") == reopened.recompute("a")
    assert reopened.stats("a").n == 15
    assert reopened.verify() == []
    reopened.store.close()


def test_a_composite_waits_for_its_components(backend: Backend, tmp_path: Path) -> None:
    registry = MetricRegistry(backend.open(tmp_path))
    a, b = rate("a"), rate("b")
    registry.register_many([a, b, weighted_sum("ab", [(a, 1.0), (b, 1.0)], description="a, b")])
    cal = Calibrator(registry)
    log_errors(cal, "ab", [0.0] * 5)
    log_errors(cal, "a", [0.0] * 5)
    cal.update()
    assert not registry.is_load_bearing("ab")
    log_errors(cal, "b", [0.0] * 5)
    cal.update(["b"])
    assert registry.is_load_bearing("b")
    assert registry.is_load_bearing("ab")
    registry.store.close()


def test_a_version_bump_counts_afresh(backend: Backend, tmp_path: Path) -> None:
    registry = MetricRegistry(backend.open(tmp_path))
    registry.register(rate("a"))
    cal = Calibrator(registry)
    log_errors(cal, "a", [0.0] * 5)
    cal.update()
    registry.register(rate("a", version=2))
    log_errors(cal, "a", [0.2] * 2)
    cal.update()
    assert cal.stats("a").n == 2
    assert cal.verify() == []
    assert not registry.is_load_bearing("a")
    registry.store.close()


def test_logs_read_back_in_order(backend: Backend, tmp_path: Path) -> None:
    store = backend.open(tmp_path)
    store.append_sessions([{"session_id": "s1"}, {"session_id": "s2"}])
    store.append_lines(['{"metric_name":"x","metric_version":1,"raw":1,"normalized":1.0}'], [])
    store.sync()
    records, end = store.read_log("sessions")
    assert [r["session_id"] for r in records] == ["s1", "s2"]
    store.append_sessions([{"session_id": "s3"}])
    later, _ = store.read_log("sessions", start=end)
    assert [r["session_id"] for r in later] == ["s3"]
    (observation,) = [r for r, _ in store.iter_log("observations")]
    assert observation is not None
    assert observation["raw"] == 1
    store.close()


def test_an_excerpt_of_a_short_log_is_the_whole_log(backend: Backend, tmp_path: Path) -> None:
    store = backend.open(tmp_path)
    assert store.read_excerpt("sessions").records == []
    store.append_sessions([{"session_id": f"s{i}"} for i in range(50)])
    for budget in (None, 1 << 20):
        excerpt = store.read_excerpt("sessions", budget=budget)
        assert excerpt.complete
        assert [r["session_id"] for r in excerpt.records] == [f"s{i}" for i in range(50)]
    store.close()


# --------------------------------------------------------------------------- plugin


def _select(backend: Backend, pytester: pytest.Pytester) -> None:
    backend.write_pyproject(pytester.path)


def _state(backend: Backend, folder: Path, name: str) -> dict[str, Any]:
    store = backend.open(folder)
    try:
        data = store.read_registry_bytes()
        assert data is not None
        doc = store.parse_registry(data)
    finally:
        store.close()
    (state,) = [s for s in doc["promotions"] if s["metric_name"] == name]
    return state  # type: ignore[no-any-return]


def test_sessions_earn_a_gate(backend: Backend, pytester: pytest.Pytester) -> None:
    _select(backend, pytester)
    pytester.makepyfile(test_latency=MARKED_TEST)
    for number in range(1, 6):
        result = run(pytester, "--ldd")
        assert result.ret == 0, result.stdout.str()
        expected = "load_bearing" if number == 5 else "insufficient_data"
        assert _state(backend, pytester.path, "latency")["state"] == expected
    gated = run(pytester)
    assert gated.ret == 1
    gated.stdout.fnmatch_lines([f"*{GATE_FAILURE}*"])
    # Where the history went: the folder only for the file store.
    assert (pytester.path / ".ldd").exists() == (not backend.is_database)


def test_xdist_sessions_record_each_pair_once(backend: Backend, pytester: pytest.Pytester) -> None:
    _select(backend, pytester)
    pytester.makepyfile(test_many=MANY_TEST)
    for _ in range(2):
        assert run(pytester, "--ldd", "-n", "2").ret == 0
    store = backend.open(pytester.path)
    try:
        pairs, _ = store.read_log("pairs")
        observations, _ = store.read_log("observations")
        sessions, _ = store.read_log("sessions")
    finally:
        store.close()
    assert len(pairs) == 16
    assert len(observations) == 16
    assert len(sessions) == 2
    assert sorted(p["nodeid"] for p in pairs) == sorted(
        f"test_many.py::test_case[{case}]" for case in range(8) for _ in range(2)
    )
    state = _state(backend, pytester.path, "score")
    assert state["state"] == "load_bearing"
    assert state["n_calibration_samples"] == 16


def test_a_read_only_session_writes_nothing(backend: Backend, pytester: pytest.Pytester) -> None:
    _select(backend, pytester)
    pytester.makepyfile(test_latency=MARKED_TEST)
    assert run(pytester).ret == 0
    store = backend.open(pytester.path)
    try:
        assert not store.exists()
        assert store.read_registry_bytes() is None
    finally:
        store.close()


# --------------------------------------------------------------------------- cli


def ldd(backend: Backend, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``ldd ARGS`` as a subprocess in ``project`` (whose pyproject selects the backend)."""
    return subprocess.run(
        [sys.executable, "-m", "pytest_ldd", *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_cli_verbs(backend: Backend, tmp_path: Path) -> None:
    backend.write_pyproject(tmp_path)
    registry = MetricRegistry(backend.open(tmp_path))
    registry.register(rate("accuracy"))
    registry.store.close()
    unknown = ldd(
        backend, tmp_path, "metric", "calibrate", "--name", "nope",
        "--predicted", "0.8", "--observed", "0.84",
    )
    assert unknown.returncode == 1
    assert "unknown metric 'nope' (known: accuracy)" in unknown.stderr
    outs = [
        ldd(
            backend, tmp_path, "metric", "calibrate", "--name", "accuracy",
            "--predicted", "0.8", "--observed", "0.84",
        )
        for _ in range(5)
    ]
    assert [o.returncode for o in outs] == [0] * 5, outs[-1].stderr
    assert outs[-1].stdout == "promoted 'accuracy' to load_bearing (n=5, MAE=0.040 <= 0.15)\n"
    status = ldd(backend, tmp_path, "metric", "status", "--json")
    assert status.returncode == 0, status.stderr
    (accuracy,) = json.loads(status.stdout)["metrics"]
    assert (accuracy["state"], accuracy["n"]) == ("load_bearing", 5)
    show = ldd(backend, tmp_path, "metric", "show", "accuracy")
    assert show.returncode == 0, show.stderr
    assert "load_bearing" in show.stdout
    verify = ldd(backend, tmp_path, "metric", "verify")
    assert (verify.returncode, verify.stdout) == (0, "ok: 1 metric verified\n")
    report = ldd(backend, tmp_path, "report", "--json", "r.json")
    assert report.returncode == 0, report.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    assert len(doc["history"]["calibrations"]["accuracy"]) == 5
    if backend.is_database:
        assert doc["ldd_dir"].endswith(f"#{backend.key}")
        assert not (tmp_path / ".ldd").exists()


def test_cli_verify_catches_tampered_statistics(backend: Backend, tmp_path: Path) -> None:
    backend.write_pyproject(tmp_path)
    store = backend.open(tmp_path)
    registry = MetricRegistry(store)
    registry.register(rate("accuracy"))
    cal = Calibrator(registry)
    log_errors(cal, "accuracy", [0.1, 0.2, 0.3])
    cal.update()
    data = store.read_registry_bytes()
    assert data is not None
    doc = store.parse_registry(data)
    doc["promotions"][0]["calibration"]["sum_abs_error"] += 0.3
    store.replace_registry(doc)
    tampered = store.read_registry_bytes()
    store.close()
    bad = ldd(backend, tmp_path, "metric", "verify")
    # A sum that no longer fits the histogram stored beside it is refused as soon as
    # the store is read, naming the metric and the field; nothing is rewritten.
    assert bad.returncode == 1
    assert "metric 'accuracy'" in bad.stderr
    assert "'sum_abs_error'" in bad.stderr
    reopened = backend.open(tmp_path)
    assert reopened.read_registry_bytes() == tampered
    reopened.close()


# --------------------------------------------------------------------------- database only


def _append_pairs(url: str, key: str, name: str, count: int, barrier: Any) -> None:
    from pytest_ldd.store import open_store

    store = open_store(".", url, key=key)
    barrier.wait()
    for index in range(count):
        line = json.dumps(
            {
                "metric_name": name,
                "metric_version": 1,
                "predicted": 0.5,
                "observed": 0.5 - (index % 3) / 10,
                "nodeid": f"w::{index}",
            }
        )
        store.append_lines([], [line])
    store.close()


def test_concurrent_writers_lose_nothing(postgres: Backend, tmp_path: Path) -> None:
    """Writers commit in any order while a reader updates: every pair is counted once."""
    store = postgres.open(tmp_path)
    registry = MetricRegistry(store)
    registry.register(rate("m"))
    cal = Calibrator(registry)
    cal.update()
    writers, each = 6, 150
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(writers)
    procs = [
        context.Process(
            target=_append_pairs, args=(postgres.url, postgres.key, "m", each, barrier)
        )
        for _ in range(writers)
    ]
    for proc in procs:
        proc.start()
    # Update while they write: each update counts from its stored position only.
    updates = 0
    while any(proc.is_alive() for proc in procs):
        cal.update()
        updates += 1
    for proc in procs:
        proc.join()
        assert proc.exitcode == 0
    cal.update()
    assert updates > 1
    assert cal.stats("m").n == writers * each
    assert cal.stats("m") == cal.recompute("m")
    assert cal.verify() == []
    pairs, _ = store.read_log("pairs")
    assert len(pairs) == writers * each
    store.close()


def _create(url: str, key: str, barrier: Any) -> None:
    from pytest_ldd.store.postgres import PostgresStore

    store = PostgresStore(url, key=key)
    barrier.wait()
    store.ensure_schema()
    store.append_sessions([{"session_id": key}])
    store.close()


def test_concurrent_schema_creation_is_safe(postgres: Backend) -> None:
    """Sessions that create the tables at once all succeed, with one schema row.

    They run in a PostgreSQL schema of their own (``options=-csearch_path=...`` in
    the URL), so the tables are created from nothing while other tests use theirs.
    """
    import psycopg

    assert postgres.url is not None
    namespace = f"ldd_{postgres.key}".replace("-", "_")
    separator = "&" if "?" in postgres.url else "?"
    url = f"{postgres.url}{separator}options=-csearch_path%3D{namespace}"
    with psycopg.connect(postgres.url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {namespace}")
        try:
            context = multiprocessing.get_context("spawn")
            barrier = context.Barrier(4)
            keys = [f"{postgres.key}-{n}" for n in range(4)]
            procs = [context.Process(target=_create, args=(url, k, barrier)) for k in keys]
            for proc in procs:
                proc.start()
            for proc in procs:
                proc.join()
            assert [proc.exitcode for proc in procs] == [0] * 4
            rows = conn.execute(f"SELECT id, version FROM {namespace}.ldd_schema").fetchall()
            assert rows == [(1, 1)]
            found = conn.execute(
                f"SELECT project FROM {namespace}.ldd_sessions ORDER BY project"
            ).fetchall()
            assert [r[0] for r in found] == keys
            # Nothing went to the tables the other tests use.
            (exists,) = conn.execute("SELECT to_regclass('public.ldd_projects')").fetchone() or (
                None,
            )
            if exists is not None:
                public = conn.execute(
                    "SELECT count(*) FROM public.ldd_projects WHERE project = ANY(%s)", (keys,)
                ).fetchone()
                assert public == (0,)
        finally:
            conn.execute(f"DROP SCHEMA {namespace} CASCADE")


def test_projects_never_see_each_other(postgres: Backend, tmp_path: Path) -> None:
    other = Backend("postgres", url=postgres.url, key=f"{postgres.key}-other")
    try:
        mine = MetricRegistry(postgres.open(tmp_path))
        mine.register(rate("a"))
        log_errors(Calibrator(mine), "a", [0.1] * 3)
        theirs = MetricRegistry(other.open(tmp_path))
        assert theirs.names() == []
        theirs.register(rate("a"))
        assert Calibrator(theirs).stats("a").n == 0
        log_errors(Calibrator(theirs), "a", [0.2])
        assert Calibrator(mine).stats("a").n == 3
        assert Calibrator(theirs).stats("a").n == 1
        mine.store.close()
        theirs.store.close()
    finally:
        other.drop()


def test_a_newer_schema_is_refused(postgres: Backend, tmp_path: Path) -> None:
    import psycopg

    store = postgres.open(tmp_path)
    store.append_sessions([{"session_id": "x"}])
    store.close()
    assert postgres.url is not None
    with psycopg.connect(postgres.url, autocommit=True) as conn:
        conn.execute("UPDATE ldd_schema SET version = 99")
        try:
            with pytest.raises(StoreCorruptError, match=r"schema_version 99.*upgrade pytest-ldd"):
                postgres.open(tmp_path).read_registry_bytes()
        finally:
            conn.execute("UPDATE ldd_schema SET version = 1")


def test_deleted_pairs_are_an_error(postgres: Backend, tmp_path: Path) -> None:
    import psycopg

    registry = MetricRegistry(postgres.open(tmp_path))
    registry.register(rate("a"))
    cal = Calibrator(registry)
    log_errors(cal, "a", [0.1] * 3)
    cal.update()
    assert postgres.url is not None
    with psycopg.connect(postgres.url, autocommit=True) as conn:
        conn.execute("DELETE FROM ldd_pairs WHERE project = %s", (postgres.key,))
        conn.execute("UPDATE ldd_projects SET pair_seq = 0 WHERE project = %s", (postgres.key,))
    with pytest.raises(StoreCorruptError, match="fewer than the position"):
        cal.update()
    registry.store.close()


def test_a_database_store_needs_a_project_key(postgres: Backend, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(f'[tool.ldd]\nstore = "{postgres.url}"\n')
    result = cli.main(["metric", "status", "--project", str(tmp_path)])
    assert result == 2
    bad = Backend("postgres", url=postgres.url, key=" spaced ")
    with pytest.raises(InvalidSpecError, match=r"project must be a non-empty name"):
        bad.open(tmp_path)


def test_errors_mask_the_password(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("psycopg")
    url = "postgresql://ldd:hunter2@127.0.0.1:1/nowhere"
    (tmp_path / "pyproject.toml").write_text(f'[tool.ldd]\nproject = "p"\nstore = "{url}"\n')
    assert cli.main(["metric", "status", "--project", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "hunter2" not in err
    assert "postgresql://ldd:***@127.0.0.1:1/nowhere#p" in err


def test_store_precedence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_ldd.config import load_config

    (tmp_path / "pyproject.toml").write_text('[tool.ldd]\nproject = "p"\nstore = "from-config"\n')
    config = load_config(tmp_path)
    monkeypatch.delenv("LDD_STORE", raising=False)
    assert config.store_location() == "from-config"
    monkeypatch.setenv("LDD_STORE", "from-env")
    assert config.store_location() == "from-env"
    assert config.store_location(option="from-option") == "from-option"
    assert config.store_location(ldd_dir=tmp_path / "d") == tmp_path / "d"
    with pytest.raises(InvalidSpecError, match="give the store once"):
        config.store_location(option="x", ldd_dir=tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.ldd]\nstore = "a"\ndir = "b"\n')
    with pytest.raises(InvalidSpecError, match="both name the store"):
        load_config(tmp_path)


def test_the_file_store_never_imports_the_driver(tmp_path: Path) -> None:
    code = (
        "import sys; from pytest_ldd import cli; "
        f"cli.main(['metric', 'status', '--project', {str(tmp_path)!r}]); "
        "print('psycopg' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.splitlines()[-1] == "False"


def _append_then_die(url: str, key: str, tests: int) -> None:
    import signal

    from pytest_ldd.store import open_store

    store = open_store(".", url, key=key)
    for index in range(tests):
        line = json.dumps(
            {"metric_name": "m", "metric_version": 1, "predicted": 0.5, "observed": 0.5,
             "nodeid": f"t::{index}"}
        )  # fmt: skip
        store.append_lines([], [line])
    os.kill(os.getpid(), signal.SIGKILL)


def test_the_flush_policy_bounds_what_a_kill_loses(postgres: Backend, tmp_path: Path) -> None:
    from pytest_ldd.store.postgres import FLUSH_TESTS

    reader = postgres.open(tmp_path)
    writer = postgres.open(tmp_path)
    line = '{"metric_name":"m","metric_version":1,"predicted":0.5,"observed":0.5}'
    for _ in range(FLUSH_TESTS - 1):
        writer.append_lines([], [line])
    assert reader.read_log("pairs")[0] == []  # buffered, not committed yet
    assert len(writer.read_log("pairs")[0]) == FLUSH_TESTS - 1  # its own reads flush
    writer.append_lines([], [line])
    writer.close()
    assert len(reader.read_log("pairs")[0]) == FLUSH_TESTS
    reader.close()
    postgres.drop()

    context = multiprocessing.get_context("spawn")
    tests = 2 * FLUSH_TESTS + 7
    proc = context.Process(target=_append_then_die, args=(postgres.url, postgres.key, tests))
    proc.start()
    proc.join()
    assert proc.exitcode == -9
    store = postgres.open(tmp_path)
    pairs, _ = store.read_log("pairs")
    store.close()
    # Everything up to the last flush, in order, and nothing after it.
    assert [p["nodeid"] for p in pairs] == [f"t::{i}" for i in range(2 * FLUSH_TESTS)]
