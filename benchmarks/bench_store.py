"""The store figures: a fleet of concurrent sessions, SIGKILLed sessions, overhead, status.

Needs a PostgreSQL server: ``--dsn URL`` or ``LDD_TEST_POSTGRES_DSN`` (``eval "$(.ci/postgres
start)"`` starts a throw-away one).  Every figure is taken in one run, as a count or
a ratio against a baseline measured alongside:

- ``fleet_db``: 8 concurrent ``pytest --ldd`` sessions (2 of them under ``-n 2``),
  2,000 pairs each, into one database project: pairs lost and duplicated (both must
  be 0), and whether the final states equal those of the same pairs replayed
  serially into a file store;
- ``fleet_files``: the same sessions, each into its own copy of one file store,
  then ``ldd store merge``: lost, duplicated, and equal to the serial replay;
- ``kill``: sessions against the database SIGKILLed at random moments: pairs of
  tests that had finished (their successor had started) and are missing (must be 0);
- ``overhead``: the overhead suite (2,000 tests, 5 values each) with the database
  store relative to the file store (target <= 1.3);
- ``status``: ``ldd metric status`` on a database project holding 1,000,000 pairs
  (target <= 0.3 s) and relative to 10,000 pairs (target <= 1.2).

The reliability figures (issue 22) are counts against an independent witness:

- ``restart``: a 500-test ``pytest --ldd`` session into a database project while the
  server is restarted N times (``pg_ctl restart``, fast and immediate shutdowns in
  turn): the pairs stored against the pairs of the tests a side channel
  (``_soak_channel.py``) saw pass, none lost, none duplicated, none spilled;
- ``merges``: two ``ldd store merge`` runs at once into one non-empty folder, from
  two different source folders, and (merge has no database target) two ``ldd store
  import`` runs at once into one non-empty database project: the result against the
  union of the sources and the target's own lines, none lost, none duplicated;
- ``corrupt_import``: ``ldd store import`` of a folder whose observation log has a
  corrupt line in the middle, into a non-empty folder and a non-empty database
  project: a full dump before and after must be equal, the exit code non-zero and the
  message must name the file and the line;
- ``registration``: one session declaring 2,000 metrics from
  ``pytest_ldd_register_metrics`` and recording one pair into each, with ``--ldd``
  into a fresh file store and a fresh database project, against the same suite
  without ``--ldd``: difference of medians <= 2 s for each.

``python benchmarks/bench_store.py [--quick] [--dsn URL] [--pgdata DIR] [--only NAME]``;
figures go to ``benchmarks/results_store.json`` (a run with ``--only`` replaces only
its own figures); exits 1 when a target of this run is missed.  ``restart`` needs the
server's data folder (``--pgdata`` or ``LDD_TEST_POSTGRES_DATA``, as ``.ci/postgres``
sets it) and the right to run ``pg_ctl`` on it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Arm, child_env, interleave, pytest_command, rmtree, run_child
from _results import load_average, machine, write_results
from _suites import METRICS, expected_value, write_suite

from pytest_ldd.calibration.calibrator import Calibrator
from pytest_ldd.calibration.registry import MetricRegistry
from pytest_ldd.model.metric import bounded_rate
from pytest_ldd.store import open_store
from pytest_ldd.store.files import TraceStore
from pytest_ldd.store.postgres import FLUSH_TESTS

HERE = Path(__file__).resolve().parent


def _say(text: str) -> None:
    print(text, flush=True)


def _pyproject_with_key(suite: Path, key: str) -> None:
    path = suite / "pyproject.toml"
    text = path.read_text()
    path.write_text(f'[tool.ldd]\nproject = "{key}"\n\n{text}')


def _database_project(suite: Path, project: Path, dsn: str, key: str, target: Path) -> list[str]:
    """A copy of ``suite`` (no tests) keyed ``key`` in the database, holding ``target``'s pairs.

    Returns the ``ldd`` options that name it: ``--project`` and ``--store``.
    """
    shutil.copytree(suite, project, ignore=shutil.ignore_patterns("test_*", "__pycache__"))
    _pyproject_with_key(project, key)
    common = ["--project", str(project), "--store", dsn]
    run_child(
        [sys.executable, "-m", "pytest_ldd", "store", "import", str(target), *common], cwd=project
    ).check(0)
    return common


def _drop(dsn: str, key: str) -> None:
    from pytest_ldd.store.postgres import PostgresStore

    store = PostgresStore(dsn, key=key)
    store.drop_project()
    store.close()


def _states(store: Any) -> dict[str, tuple[str, int, float | None]]:
    registry = MetricRegistry(store)
    out = {}
    for name in registry.names():
        s = registry.state(name)
        out[name] = (s.state, s.n, None if s.mae is None else round(s.mae, 9))
    return out


def _replay(pairs: list[dict[str, Any]], folder: Path) -> dict[str, tuple[str, int, float | None]]:
    """The same pairs, appended serially into a fresh file store, then one update."""
    store = TraceStore(folder, ldd_dir=folder)
    registry = MetricRegistry(store)
    registry.register_many(
        bounded_rate(n, description=f"share of the generated benchmark values ({n})")
        for n in METRICS
    )
    for start in range(0, len(pairs), 5000):
        store.append_pairs(pairs[start : start + 5000])
    Calibrator(registry).update()
    states = _states(store)
    store.close()
    return states


def _check_pairs(pairs: list[dict[str, Any]], sessions: int, per_session: int) -> tuple[int, int]:
    """(lost, duplicated) of a fleet's pairs: each (session, node, metric) exactly once."""
    keys = Counter((p["session_id"], p["nodeid"], p["metric_name"]) for p in pairs)
    duplicated = sum(n - 1 for n in keys.values() if n > 1)
    per = Counter(session for session, _, _ in keys)
    lost = sum(max(0, per_session - n) for n in per.values()) + per_session * max(
        0, sessions - len(per)
    )
    return lost, duplicated


def _fleet_commands(suite: Path, sessions: int, store_args: list[list[str]]) -> list[list[str]]:
    commands = []
    for index in range(sessions):
        extra = ["-n", "2"] if index < 2 else []
        commands.append(
            pytest_command("--ldd", "-q", "-p", "no:harvest", *store_args[index], *extra)
        )
    return commands


def _run_all(commands: list[list[str]], cwd: Path) -> float:
    start = time.perf_counter()
    procs = [
        subprocess.Popen(
            c, cwd=cwd, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        for c in commands
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=900)
        if proc.returncode != 0:
            raise RuntimeError(f"a fleet session exited {proc.returncode}: {err.decode()[-2000:]}")
    return time.perf_counter() - start


def fleet(dsn: str, work: Path, tests: int) -> dict[str, Any]:
    per_session = tests * 5 // 2  # half of the 5 values of each test have a prediction
    suite = write_suite(work / "fleet_suite", "ldd", tests=tests)
    key = f"bench-fleet-{uuid.uuid4().hex[:8]}"
    _pyproject_with_key(suite, key)
    sessions = 8
    result: dict[str, Any] = {"sessions": sessions, "pairs_per_session": per_session}
    try:
        wall = _run_all(_fleet_commands(suite, sessions, [["--ldd-store", dsn]] * sessions), suite)
        store = open_store(suite, dsn, key=key)
        pairs, _ = store.read_log("pairs")
        lost, dup = _check_pairs(pairs, sessions, per_session)
        replayed = _replay(pairs, work / "replay_db")
        result["db"] = {
            "wall_s": wall,
            "pairs": len(pairs),
            "lost": lost,
            "duplicated": dup,
            "states_equal_serial_replay": _states(store) == replayed,
            "verify": Calibrator(MetricRegistry(store)).verify() == [],
        }
        store.close()
    finally:
        _drop(dsn, key)
    base = work / "fleet_base"
    base.mkdir()
    copies = []
    for index in range(sessions):
        copy = work / f"fleet_copy{index}"
        shutil.copytree(base, copy)
        copies.append(copy)
    wall = _run_all(_fleet_commands(suite, sessions, [[f"--ldd-dir={c}"] for c in copies]), suite)
    merged = work / "fleet_merged"
    subprocess.run(
        [sys.executable, "-m", "pytest_ldd", "store", "merge", *map(str, copies), "--into",
         str(merged), "--project", str(suite)],
        check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    store = TraceStore(merged, ldd_dir=merged)
    pairs, _ = store.read_log("pairs")
    lost, dup = _check_pairs(pairs, sessions, per_session)
    result["files"] = {
        "wall_s": wall,
        "pairs": len(pairs),
        "lost": lost,
        "duplicated": dup,
        "states_equal_serial_replay": _states(store) == _replay(pairs, work / "replay_files"),
        "verify": Calibrator(MetricRegistry(store)).verify() == [],
    }
    return result


KILL_SUITE = """
import os, time
import pytest
from pytest_ldd import Observation

@pytest.mark.metric("m0", kind="bounded", description="share of the killed values")
@pytest.mark.parametrize("case", range({tests}))
def test_case(case):
    with open(os.environ["BEGAN_FILE"], "a") as handle:
        handle.write(f"{{case}}\\n")
    time.sleep(0.01)
    yield Observation("m0", (case % 10) / 10, predicted=(case % 10) / 10 + 0.01)
"""


def kill(dsn: str, work: Path, runs: int) -> dict[str, Any]:
    tests = 600
    suite = work / "kill_suite"
    suite.mkdir()
    (suite / "test_kill.py").write_text(KILL_SUITE.format(tests=tests))
    rng = random.Random(15)
    figures = []
    for run in range(runs):
        key = f"bench-kill-{uuid.uuid4().hex[:8]}"
        (suite / "pyproject.toml").write_text(f'[tool.ldd]\nproject = "{key}"\n')
        began = work / f"began{run}.txt"
        env = child_env({"BEGAN_FILE": str(began)})
        proc = subprocess.Popen(
            pytest_command("--ldd", "-q", "-p", "no:harvest", "--ldd-store", dsn),
            cwd=suite, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        time.sleep(rng.uniform(2.0, 5.0))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        started = [int(x) for x in began.read_text().split()] if began.exists() else []
        # A test whose successor began has finished and been reported.
        finished = set(started[:-1])
        try:
            store = open_store(suite, dsn, key=key)
            pairs, _ = store.read_log("pairs")
            store.close()
        finally:
            _drop(dsn, key)
        recorded = Counter(int(p["nodeid"].rsplit("[", 1)[1].rstrip("]")) for p in pairs)
        # Everything up to the last flushed test must be there (no holes); what came
        # after it is the flush window, bounded by FLUSH_TESTS tests.
        last = max(recorded, default=-1)
        figures.append(
            {
                "started": len(started),
                "finished": len(finished),
                "recorded": len(pairs),
                "lost": len({i for i in finished if i <= last} - set(recorded)),
                "duplicated": sum(n - 1 for n in recorded.values() if n > 1),
                "unflushed": len(finished - set(recorded)),
            }
        )
    return {
        "runs": figures,
        "lost": sum(f["lost"] for f in figures),
        "duplicated": sum(f["duplicated"] for f in figures),
        "max_unflushed_tests": max(f["unflushed"] for f in figures),
    }


def overhead(dsn: str, work: Path, reps: int) -> dict[str, Any]:
    suite = write_suite(work / "overhead_suite", "ldd", tests=2000)
    key = f"bench-overhead-{uuid.uuid4().hex[:8]}"
    _pyproject_with_key(suite, key)
    seed = work / "overhead_seed"
    run_child(
        pytest_command("--ldd", "-q", "-p", "no:harvest", f"--ldd-dir={seed}"), cwd=suite
    ).check(0, 1)
    live = work / "overhead_live"

    def fresh_files() -> None:
        shutil.rmtree(live, ignore_errors=True)
        shutil.copytree(seed, live)

    def fresh_db() -> None:
        from pytest_ldd.calibration.transfer import import_store
        from pytest_ldd.config import load_config

        _drop(dsn, key)
        config = load_config(suite)
        target = open_store(suite, dsn, key=key)
        import_store(
            TraceStore(seed, ldd_dir=seed), target,
            lambda s: config.open_registry(s, read_only=False),
        )  # fmt: skip
        target.close()

    def timed(*args: str) -> Any:
        def measure() -> float:
            return (
                run_child(pytest_command("--ldd", "-q", "-p", "no:harvest", *args), cwd=suite)
                .check(0, 1)
                .wall_s
            )

        return measure

    try:
        comparison = interleave(
            [
                Arm("files", timed(f"--ldd-dir={live}"), fresh_files),
                Arm("postgres", timed("--ldd-store", dsn), fresh_db),
            ],
            reps,
            log=_say,
        )
    finally:
        _drop(dsn, key)
    return {
        "ratio": comparison.ratio("postgres", "files"),
        "arms": comparison.to_json("s"),
    }


def _fill(dsn: str, key: str, pairs: int) -> None:
    """A project holding ``pairs`` pairs of the five metrics, caught up once."""
    import psycopg

    from pytest_ldd.model.records import encode_line

    store = open_store(".", dsn, key=key)
    registry = MetricRegistry(store)
    registry.register_many(
        bounded_rate(n, description=f"share of the generated benchmark values ({n})")
        for n in METRICS
    )
    store.close()
    rng = random.Random(pairs)
    with psycopg.connect(dsn, autocommit=True) as conn:
        with conn.cursor().copy(
            "COPY ldd_pairs (project, seq, metric_name, metric_version, error, line) FROM STDIN"
        ) as copy:
            for seq in range(1, pairs + 1):
                name = METRICS[seq % 5]
                predicted, observed = rng.random(), rng.random()
                line = encode_line(
                    {
                        "metric_name": name, "metric_version": 1, "predicted": predicted,
                        "observed": observed, "timestamp": "2026-12-01T00:00:00Z",
                        "session_id": f"s{seq // 5000}", "nodeid": f"t.py::test_{seq}",
                    }
                )  # fmt: skip
                copy.write_row((key, seq, name, 1, abs(predicted - observed), line))
        conn.execute("UPDATE ldd_projects SET pair_seq = %s WHERE project = %s", (pairs, key))
    store = open_store(".", dsn, key=key)
    Calibrator(MetricRegistry(store)).update()
    store.close()


def status(dsn: str, work: Path, reps: int, large: int) -> dict[str, Any]:
    keys = {10_000: f"bench-status-10k-{uuid.uuid4().hex[:6]}"}
    keys[large] = f"bench-status-large-{uuid.uuid4().hex[:6]}"
    try:
        for size, key in keys.items():
            start = time.perf_counter()
            _fill(dsn, key, size)
            _say(f"  filled {size:,} pairs in {time.perf_counter() - start:.1f} s")
        arms = []
        for size, key in keys.items():
            project = work / f"status_{size}"
            project.mkdir()
            (project / "pyproject.toml").write_text(
                f'[tool.ldd]\nproject = "{key}"\nstore = "{dsn}"\n'
            )
            command = [sys.executable, "-m", "pytest_ldd", "metric", "status"]

            def measure(
                command: list[str] = command, project: Path = project
            ) -> tuple[float, dict[str, float]]:
                done = run_child(command, cwd=project).check(0)
                return done.wall_s, {"cpu_s": done.cpu_s}

            arms.append(Arm(str(size), measure))
        comparison = interleave(arms, reps, log=_say)
    finally:
        for key in keys.values():
            _drop(dsn, key)
    return {
        "large": large,
        "large_wall_s": comparison.median(str(large)),
        "large_cpu_s": comparison.median(str(large), "cpu_s"),
        "ratio": comparison.ratio(str(large), "10000"),
        "cpu_ratio": comparison.ratio(str(large), "10000", "cpu_s"),
        "arms": comparison.to_json("s"),
    }


# -- reliability figures (issue 22) ---------------------------------------------------

RESTART_SUITE = """
import time
import pytest
from pytest_ldd import Observation

@pytest.mark.metric("r0", kind="bounded", description="share of the restart soak's values")
@pytest.mark.parametrize("case", range({tests}))
def test_case(case):
    time.sleep({sleep!r})
    yield Observation("r0", (case % 100) / 100, predicted=(case % 100) / 100 + 0.005)
"""


def _pg_ctl(pgdata: Path, *args: str) -> None:
    """``pg_ctl -D PGDATA/db ARGS`` as the server's owner (as ``.ci/postgres`` runs it)."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    program = str(found[-1]) if found else shutil.which("pg_ctl")
    if program is None:
        msg = "pg_ctl not found (looked in /usr/lib/postgresql/*/bin and on PATH)"
        raise RuntimeError(msg)
    owner = []
    if os.geteuid() == 0:
        owner = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"]
    command = [*owner, program, "-D", str(pgdata / "db"), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        msg = f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()}"
        raise RuntimeError(msg)


def _finished(channel: Path) -> list[dict[str, Any]]:
    """The side channel's lines: one per test whose teardown report was handled."""
    if not channel.exists():
        return []
    return [json.loads(line) for line in channel.read_text().splitlines() if line.strip()]


def restart(dsn: str, pgdata: Path, work: Path, restarts: int) -> dict[str, Any]:
    tests = 500
    suite = work / "restart_suite"
    suite.mkdir()
    (suite / "test_restart.py").write_text(RESTART_SUITE.format(tests=tests, sleep=0.01))
    key = f"bench-restart-{uuid.uuid4().hex[:8]}"
    (suite / "pyproject.toml").write_text(f'[tool.ldd]\nproject = "{key}"\n')
    channel = work / "restart_channel.jsonl"
    output = work / "restart_output.txt"
    env = child_env({"PYTHONPATH": str(HERE), "LDD_SOAK_CHANNEL": str(channel)})
    command = pytest_command(
        "--ldd", "-q", "-p", "no:harvest", "-p", "_soak_channel", "--ldd-store", dsn
    )
    log: list[dict[str, Any]] = []
    with output.open("wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(
            command, cwd=suite, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:
        # Restart k waits until k / (N + 1) of the tests have finished: every restart
        # lands among the tests, after the session's first connection.
        for k in range(1, restarts + 1):
            while proc.poll() is None and len(_finished(channel)) < k * tests // (restarts + 1):
                time.sleep(0.01)
            if proc.poll() is not None:
                break
            mode = "fast" if k % 2 else "immediate"
            began = time.perf_counter()
            at = len(_finished(channel))
            _pg_ctl(pgdata, "-l", str(pgdata / "server.log"), "-w", "-t", "60", "-m", mode,
                    "restart")  # fmt: skip
            log.append({"mode": mode, "after_tests": at, "took_s": time.perf_counter() - began})
        proc.wait(timeout=600)
        wall = time.perf_counter() - start
        store = open_store(suite, dsn, key=key)
        pairs, _ = store.read_log("pairs")
        store.close()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        _drop(dsn, key)
    observed = Counter(
        line["nodeid"] for line in _finished(channel) if line["outcome"] == "passed"
    )
    stored = Counter(p["nodeid"] for p in pairs)
    spilled = [
        line
        for path in (suite / ".ldd-spill").glob("*/metric_calibrations.jsonl")
        for line in path.read_text().splitlines()
        if line.strip()
    ]
    tail = output.read_text(errors="replace").strip().splitlines()
    return {
        "tests": tests,
        "restarts": len(log),
        "restarts_asked": restarts,
        "restart_log": log,
        "session_wall_s": wall,
        "exit_code": proc.returncode,
        "pairs_observed": sum(observed.values()),
        "pairs_stored": sum(stored.values()),
        "lost": sum(max(0, n - stored[k]) for k, n in observed.items()),
        "duplicated": sum(max(0, n - observed[k]) for k, n in stored.items()),
        "spilled": len(spilled),
        "summary": tail[-1] if tail else "",
        "errors": [line for line in tail if line.startswith("pytest-ldd:")][:3],
    }


PairKey = tuple[str, str, str, float, float]


def _pair_keys(pairs: list[dict[str, Any]]) -> Counter[PairKey]:
    return Counter(
        (p["session_id"], p["nodeid"], p["metric_name"], p["predicted"], p["observed"])
        for p in pairs
    )


def _folder_pairs(folder: Path) -> tuple[list[dict[str, Any]], bool]:
    """A folder's pairs, and whether ``ldd metric verify``'s check passes on it."""
    store = TraceStore(folder, ldd_dir=folder)
    pairs, _ = store.read_log("pairs")
    verify = Calibrator(MetricRegistry(store)).verify() == []
    store.close()
    return pairs, verify


def _compare(expected: Counter[PairKey], found: Counter[PairKey]) -> dict[str, int]:
    return {
        "expected": sum(expected.values()),
        "found": sum(found.values()),
        "lost": sum(max(0, n - found[k]) for k, n in expected.items()),
        "duplicated": sum(max(0, n - expected[k]) for k, n in found.items()),
    }


def _session_stores(
    work: Path, names: tuple[str, ...], tests: int
) -> tuple[Path, dict[str, Path]]:
    """A generated suite, and one ``.ldd`` folder per name holding one session of it."""
    suite = write_suite(work / "sources_suite", "ldd", tests=tests)
    folders = {}
    for name in names:
        folder = work / f"source_{name}"
        run_child(
            pytest_command("--ldd", "-q", "-p", "no:harvest", f"--ldd-dir={folder}"), cwd=suite
        ).check(0)
        folders[name] = folder
    return suite, folders


def _run_pair(commands: list[list[str]], cwd: Path) -> tuple[float, list[int], list[str]]:
    """Start both commands at once; (wall, exit codes, last stderr line of each)."""
    start = time.perf_counter()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "pytest_ldd", *command],
            cwd=cwd,
            env=child_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for command in commands
    ]
    outs = [proc.communicate(timeout=600) for proc in procs]
    wall = time.perf_counter() - start
    errors = [err.decode("utf-8", "replace").strip().splitlines() for _, err in outs]
    return wall, [p.returncode for p in procs], [e[-1] if e else "" for e in errors]


def merges(dsn: str, work: Path, rounds: int) -> dict[str, Any]:
    suite, folders = _session_stores(work, ("a", "b", "target"), tests=600)
    # Three sessions: no line is in two of them, so the union is the sum.
    expected = sum((_pair_keys(_folder_pairs(f)[0]) for f in folders.values()), Counter())
    files = []
    for round_no in range(rounds):
        into = work / f"merged{round_no}"
        shutil.copytree(folders["target"], into)
        wall, codes, errors = _run_pair(
            [["store", "merge", str(folders[name]), "--into", str(into), "--project", str(suite)]
             for name in ("a", "b")],
            suite,
        )  # fmt: skip
        pairs, verify = _folder_pairs(into)
        files.append(
            {"wall_s": wall, "exit_codes": codes, "errors": [e for e in errors if e],
             "verify": verify, **_compare(expected, _pair_keys(pairs))}
        )  # fmt: skip
    db = []
    for round_no in range(rounds):
        key = f"bench-import-{uuid.uuid4().hex[:8]}"
        project = work / f"import_project{round_no}"
        try:
            common = _database_project(suite, project, dsn, key, folders["target"])
            wall, codes, errors = _run_pair(
                [["store", "import", str(folders[name]), *common] for name in ("a", "b")],
                project,
            )
            store = open_store(project, dsn, key=key)
            pairs, _ = store.read_log("pairs")
            verify = Calibrator(MetricRegistry(store)).verify() == []
            store.close()
        finally:
            _drop(dsn, key)
        db.append(
            {"wall_s": wall, "exit_codes": codes, "errors": [e for e in errors if e],
             "verify": verify, **_compare(expected, _pair_keys(pairs))}
        )  # fmt: skip

    def total(runs: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "rounds": runs,
            "expected_per_round": sum(expected.values()),
            "lost": sum(r["lost"] for r in runs),
            "duplicated": sum(r["duplicated"] for r in runs),
            "failed_runs": sum(code != 0 for r in runs for code in r["exit_codes"]),
            "verify_failed": sum(not r["verify"] for r in runs),
        }

    return {"files": total(files), "db_import": total(db)}


def _dump_folder(folder: Path) -> dict[str, str]:
    """Every file below ``folder`` (hidden ones too) and a digest of its bytes."""
    import hashlib

    return {
        str(path.relative_to(folder)): (
            hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "<dir>"
        )
        for path in sorted(folder.rglob("*"))
    }


def _dump_project(dsn: str, key: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the project, in every table (counters and timestamps included)."""
    import psycopg

    dump = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        for table, order in (
            ("ldd_projects", "project"), ("ldd_registry", "project"),
            ("ldd_pairs", "seq"), ("ldd_observations", "seq"), ("ldd_sessions", "seq"),
        ):  # fmt: skip
            rows = conn.execute(
                f"SELECT * FROM {table} WHERE project = %s ORDER BY {order}", (key,)
            ).fetchall()
            dump[table] = [tuple(row) for row in rows]
    return dump


def _files_changed(before: dict[str, str], after: dict[str, str]) -> int:
    """How many files differ, appeared or went between two :func:`_dump_folder`."""
    return sum(before.get(k) != after.get(k) for k in before.keys() | after.keys())


def _rows_changed(
    before: dict[str, list[tuple[Any, ...]]], after: dict[str, list[tuple[Any, ...]]]
) -> int:
    """How many rows differ, appeared or went between two :func:`_dump_project`."""
    count = 0
    for table in before.keys() | after.keys():
        old, new = Counter(before.get(table, [])), Counter(after.get(table, []))
        count += sum(((old - new) + (new - old)).values())
    return count


#: How the observation log's middle line is corrupted (each a separate import).  A line
#: cut short is not among them: the store reads one as torn by a crash and skips it with a
#: warning (docs/store.md, "Torn and malformed lines"); ``torn`` records what that does.
CORRUPTIONS: Final[dict[str, Callable[[str], str]]] = {
    "invalid_json": lambda line: line.replace('"raw":', '"raw";', 1),
    "not_utf8": lambda line: "\udcff\udcfe" + line[2:],
    "missing_key": lambda line: json.dumps(
        {k: v for k, v in json.loads(line).items() if k != "metric_name"}
    ),
    "normalized_7": lambda line: json.dumps({**json.loads(line), "normalized": 7}),
}
TORN: Final = "torn"


def corrupt_import(dsn: str, work: Path) -> dict[str, Any]:
    suite, folders = _session_stores(work, ("export", "target"), tests=200)
    lines = folders["export"].joinpath("observations.jsonl").read_text().splitlines()
    middle = len(lines) // 2
    runs: list[dict[str, Any]] = []
    torn: list[dict[str, Any]] = []
    kinds = {**CORRUPTIONS, TORN: lambda line: line[: len(line) // 2]}
    for name, corrupt in kinds.items():
        source = work / f"corrupt_{name}"
        shutil.copytree(folders["export"], source)
        bad = [*lines[:middle], corrupt(lines[middle]), *lines[middle + 1 :]]
        source.joinpath("observations.jsonl").write_bytes(
            ("\n".join(bad) + "\n").encode("utf-8", "surrogateescape")
        )
        found = torn if name == TORN else runs
        into = work / f"corrupt_into_{name}"
        shutil.copytree(folders["target"], into)
        before = _dump_folder(into)
        done = run_child(
            [sys.executable, "-m", "pytest_ldd", "store", "import", str(source),
             "--project", str(suite), "--ldd-dir", str(into)], cwd=suite,
        )  # fmt: skip
        changed = _files_changed(before, _dump_folder(into))
        found.append(_corrupt_run(name, "files", done, changed, middle + 1))
        key = f"bench-corrupt-{uuid.uuid4().hex[:8]}"
        project = work / f"corrupt_project_{name}"
        try:
            common = _database_project(suite, project, dsn, key, folders["target"])
            before_db = _dump_project(dsn, key)
            done = run_child(
                [sys.executable, "-m", "pytest_ldd", "store", "import", str(source), *common],
                cwd=project,
            )
            changed = _rows_changed(before_db, _dump_project(dsn, key))
        finally:
            _drop(dsn, key)
        found.append(_corrupt_run(name, "db", done, changed, middle + 1))
    return {
        "corrupt_line": middle + 1,
        "lines": len(lines),
        "runs": runs,
        "changed": sum(r["changed"] for r in runs),
        "exited_zero": sum(r["exit_code"] == 0 for r in runs),
        "unclear": sum(not r["clear"] for r in runs),
        # Not a target: a line cut short is skipped with a warning naming it, and the
        # rest is imported (the changes counted are the import's own).
        "torn_line": torn,
    }


def _corrupt_run(name: str, store: str, done: Any, changed: int, line: int) -> dict[str, Any]:
    message = (done.stderr.strip().splitlines() or [""])[-1]
    # Clear: it names the observation log and the corrupt line's number.
    clear = f"observations.jsonl:{line}:" in message
    return {
        "corruption": name,
        "store": store,
        "exit_code": done.returncode,
        "changed": changed,
        "clear": clear,
        "message": message[:500],
    }


REGISTRATION_CONFTEST = """
import os

import pytest

if os.environ.get("LDD_BENCH_BARE"):
    # Run with -p no:ldd: the fixture the tests use, doing nothing.
    class _Bare:
        def observe(self, *args, **kwargs):
            pass

    @pytest.fixture
    def ldd():
        return _Bare()

else:
    from pytest_ldd import bounded_rate

    def pytest_ldd_register_metrics(registry):
        for index in range({metrics}):
            registry.register(
                bounded_rate(f"g{{index:05d}}", description=f"generated metric {{index}}")
            )
"""


def _write_registration_suite(root: Path, metrics: int, modules: int = 20) -> Path:
    """``metrics`` tests, test ``j`` recording one pair into its own metric ``g<j>``."""
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    (root / "conftest.py").write_text(REGISTRATION_CONFTEST.format(metrics=metrics))
    per_module = -(-metrics // modules)
    for module in range(modules):
        body = [f'"""Generated registration module {module}."""\n']
        for index in range(module * per_module, min(metrics, (module + 1) * per_module)):
            observed, _ = expected_value(index, 0)
            predicted = round(min(1.0, observed + 0.01), 2)
            body.append(
                f"\n\ndef test_{index:05d}(ldd):\n"
                f"    ldd.observe('g{index:05d}', {observed!r}, predicted={predicted!r})\n"
            )
        (root / f"test_reg_{module:03d}.py").write_text("".join(body))
    return root


def registration(dsn: str, work: Path, reps: int, metrics: int = 2000) -> dict[str, Any]:
    suite = _write_registration_suite(work / "registration_suite", metrics)
    key = f"bench-registration-{uuid.uuid4().hex[:8]}"
    (suite / "pyproject.toml").write_text(f'[tool.ldd]\nproject = "{key}"\n')
    live = work / "registration_live"

    def timed(
        *args: str, env: dict[str, str] | None = None
    ) -> Callable[[], tuple[float, dict[str, float]]]:
        def measure() -> tuple[float, dict[str, float]]:
            command = pytest_command("-q", "-p", "no:harvest", *args)
            done = run_child(command, cwd=suite, env=child_env(env)).check(0)
            return done.wall_s, {"cpu_s": done.cpu_s}

        return measure

    try:
        comparison = interleave(
            [
                Arm("plain", timed()),
                Arm("bare", timed("-p", "no:ldd", env={"LDD_BENCH_BARE": "1"})),
                Arm("files", timed("--ldd", f"--ldd-dir={live}"), lambda: rmtree(live)),
                Arm("postgres", timed("--ldd", "--ldd-store", dsn), lambda: _drop(dsn, key)),
            ],
            reps,
            log=_say,
        )
        # What the last runs left: every metric registered, one pair each.
        stores = {
            "files": TraceStore(live, ldd_dir=live),
            "postgres": open_store(suite, dsn, key=key),
        }
        kept = {}
        for arm, store in stores.items():
            pairs, _ = store.read_log("pairs")
            kept[arm] = {"metrics": len(MetricRegistry(store).names()), "pairs": len(pairs)}
            store.close()
    finally:
        _drop(dsn, key)
    plain = comparison.median("plain")
    return {
        "metrics": metrics,
        "files_minus_plain_s": comparison.median("files") - plain,
        "postgres_minus_plain_s": comparison.median("postgres") - plain,
        "files_minus_plain_cpu_s": comparison.median("files", "cpu_s")
        - comparison.median("plain", "cpu_s"),
        "postgres_minus_plain_cpu_s": comparison.median("postgres", "cpu_s")
        - comparison.median("plain", "cpu_s"),
        # Not a target: the same against pytest without pytest-ldd at all (its own
        # start-up, and the hook's 2,000 declarations in memory, that plain pays too).
        "files_minus_bare_s": comparison.median("files") - comparison.median("bare"),
        "postgres_minus_bare_s": comparison.median("postgres") - comparison.median("bare"),
        "plain_minus_bare_s": plain - comparison.median("bare"),
        "stored": kept,
        "arms": comparison.to_json("s"),
    }


FIGURES: Final = (
    "fleet", "kill", "overhead", "status", "restart", "merges", "corrupt_import", "registration"
)  # fmt: skip
RESULTS: Final = HERE / "results_store.json"


def targets(figures: dict[str, Any]) -> list[tuple[str, str, str, bool]]:
    """``(figure, target, measured, met)`` of every figure in ``figures``."""
    found: list[tuple[str, str, str, bool]] = []

    def add(key: str, target: str, measured: str, ok: bool) -> None:
        found.append((key, target, measured, ok))

    if "fleet" in figures:
        for arm in ("db", "files"):
            f = figures["fleet"][arm]
            ok = f["lost"] == 0 and f["duplicated"] == 0 and f["states_equal_serial_replay"]
            add("fleet", f"fleet.{arm}: lost 0, duplicated 0, states = serial replay",
                f"lost {f['lost']}, dup {f['duplicated']}, "
                f"equal {f['states_equal_serial_replay']}, pairs {f['pairs']}", ok)  # fmt: skip
    if "kill" in figures:
        f = figures["kill"]
        add("kill", f"kill: lost 0 before the last flush, window <= {FLUSH_TESTS} tests",
            f"lost {f['lost']}, dup {f['duplicated']}, "
            f"unflushed <= {f['max_unflushed_tests']} tests",
            f["lost"] == 0 and f["duplicated"] == 0
            and f["max_unflushed_tests"] <= FLUSH_TESTS)  # fmt: skip
    if "overhead" in figures:
        r = figures["overhead"]["ratio"]
        add("overhead", "overhead: database / files <= 1.3", f"{r:.3f}", r <= 1.3)
    if "status" in figures:
        s = figures["status"]
        add("status", "status on 1M pairs <= 0.3 s", f"{s['large_wall_s']:.3f} s",
            s["large_wall_s"] <= 0.3)  # fmt: skip
        add("status", "status 1M / 10k <= 1.2", f"{s['ratio']:.3f}", s["ratio"] <= 1.2)
    if "restart" in figures:
        f = figures["restart"]
        add("restart",
            f"restart: {f['restarts_asked']} restarts in a {f['tests']}-test session, "
            "stored = observed",
            f"{f['restarts']} restarts, {f['pairs_stored']}/{f['pairs_observed']} stored, "
            f"lost {f['lost']}, dup {f['duplicated']}, spilled {f['spilled']}, "
            f"exit {f['exit_code']}, {f['session_wall_s']:.1f} s",
            f["restarts"] == f["restarts_asked"] and f["lost"] == 0 and f["duplicated"] == 0
            and f["spilled"] == 0 and f["exit_code"] == 0)  # fmt: skip
    if "merges" in figures:
        for arm, what in (("files", "2 merges at once into a folder"),
                          ("db_import", "2 imports at once into a database")):  # fmt: skip
            f = figures["merges"][arm]
            add("merges", f"merges.{arm}: {what}: lost 0, dup 0",
                f"{len(f['rounds'])} rounds x {f['expected_per_round']} pairs: lost "
                f"{f['lost']}, dup {f['duplicated']}, failed runs {f['failed_runs']}, "
                f"verify failed {f['verify_failed']}",
                f["lost"] == 0 and f["duplicated"] == 0 and f["failed_runs"] == 0
                and f["verify_failed"] == 0)  # fmt: skip
    if "corrupt_import" in figures:
        f = figures["corrupt_import"]
        add("corrupt_import", "corrupt_import: 0 changed, exit != 0, message names the line",
            f"{len(f['runs'])} imports: {f['changed']} changed, {f['exited_zero']} exited 0, "
            f"{f['unclear']} unclear",
            f["changed"] == 0 and f["exited_zero"] == 0 and f["unclear"] == 0)  # fmt: skip
    if "registration" in figures:
        f = figures["registration"]
        for arm in ("files", "postgres"):
            d = f[f"{arm}_minus_plain_s"]
            stored = f["stored"][arm]
            add("registration",
                f"registration.{arm}: {f['metrics']:,} metrics, --ldd - plain <= 2 s",
                f"{d:+.2f} s ({f[f'{arm}_minus_plain_cpu_s']:+.2f} s CPU), "
                f"{stored['metrics']} metrics, {stored['pairs']} pairs",
                d <= 2.0 and stored["metrics"] == f["metrics"]
                and stored["pairs"] == f["metrics"])  # fmt: skip
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", default=os.environ.get("LDD_TEST_POSTGRES_DSN"))
    parser.add_argument(
        "--pgdata",
        type=Path,
        default=os.environ.get("LDD_TEST_POSTGRES_DATA"),
        help="The server's folder (.ci/postgres's LDD_TEST_POSTGRES_DATA), for restart.",
    )
    parser.add_argument("--quick", action="store_true", help="Fewer repetitions and kills.")
    parser.add_argument("--only", action="append", choices=FIGURES)
    args = parser.parse_args(argv)
    if not args.dsn:
        parser.error('no server: pass --dsn URL or eval "$(.ci/postgres start)"')
    reps = 3 if args.quick else 5
    only = set(args.only or FIGURES)
    if "restart" in only and not args.pgdata:
        parser.error("restart needs the server's folder: --pgdata DIR or LDD_TEST_POSTGRES_DATA")
    figures: dict[str, Any] = {}
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="ldd-bench-store-") as tmp:
        work = Path(tmp)
        if "fleet" in only:
            _say("fleet: 8 concurrent sessions (2 under -n 2)")
            figures["fleet"] = fleet(args.dsn, work, tests=800)
        if "kill" in only:
            _say("kill: SIGKILLed sessions")
            figures["kill"] = kill(args.dsn, work, runs=3 if args.quick else 6)
        if "overhead" in only:
            _say("overhead: database store / file store")
            figures["overhead"] = overhead(args.dsn, work, reps)
        if "status" in only:
            _say("status: 1,000,000 vs 10,000 pairs")
            figures["status"] = status(args.dsn, work, reps, 1_000_000)
        if "restart" in only:
            _say("restart: server restarts during a 500-test session")
            figures["restart"] = restart(args.dsn, args.pgdata, work, restarts=6)
        if "merges" in only:
            _say("merges: two merges (and two database imports) at once")
            figures["merges"] = merges(args.dsn, work, rounds=3 if args.quick else 5)
        if "corrupt_import" in only:
            _say("corrupt_import: an export with a corrupt observation line")
            figures["corrupt_import"] = corrupt_import(args.dsn, work)
        if "registration" in only:
            _say("registration: 2,000 metrics declared by the hook, --ldd against plain")
            figures["registration"] = registration(args.dsn, work, reps=3)
    measured = {
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average_before": load_before,
        "load_average_after": load_average(),
        "quick": args.quick,
        "machine": machine(),
    }
    for figure in figures.values():
        figure["measured"] = measured
    # A run with --only replaces its own figures and keeps the others.
    doc = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    doc.pop("targets", None)
    doc.update(figures)
    ours = [t for t in targets(doc) if t[0] in figures]
    doc["targets"] = [
        {"figure": key, "target": t, "measured": m, "met": ok} for key, t, m, ok in targets(doc)
    ]
    write_results(doc, RESULTS)
    for _, target, measured_text, ok in ours:
        _say(f"{'ok  ' if ok else 'MISS'} {target:<58} {measured_text}")
    if "status" in figures:
        s = figures["status"]
        _say(f"     status on 1M pairs: {s['large_cpu_s']:.3f} s of CPU, CPU ratio "
             f"{s['cpu_ratio']:.3f}")  # fmt: skip
    return 0 if all(ok for *_, ok in ours) else 1


if __name__ == "__main__":
    sys.exit(main())
