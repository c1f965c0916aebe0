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

``python benchmarks/bench_store.py [--quick] [--dsn URL] [--only NAME]``;
figures go to ``benchmarks/results_store.json`` (a run with ``--only`` replaces only
its own figures); exits 1 when a target of this run is missed.
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
from pathlib import Path
from typing import Any, Final

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Arm, child_env, interleave, pytest_command, run_child
from _results import load_average, machine, write_results
from _suites import METRICS, write_suite

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


FIGURES: Final = ("fleet", "kill", "overhead", "status")
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
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", default=os.environ.get("LDD_TEST_POSTGRES_DSN"))
    parser.add_argument("--quick", action="store_true", help="Fewer repetitions and kills.")
    parser.add_argument("--only", action="append", choices=FIGURES)
    args = parser.parse_args(argv)
    if not args.dsn:
        parser.error('no server: pass --dsn URL or eval "$(.ci/postgres start)"')
    reps = 3 if args.quick else 5
    only = set(args.only or FIGURES)
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
