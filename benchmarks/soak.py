"""Crash soak: many ``pytest --ldd`` sessions on one store, each SIGKILLed at a random moment.

``python benchmarks/soak.py [--sessions 30] [--seed 0]``

Sessions run two at a time on one ``.ldd/`` store; every third runs under
``-n 2``.  Each is killed (its whole process group, workers included) at a
random moment between its start and 1.25 times what an unkilled session takes,
so kills land in start-up, collection, the middle of the tests and the
session-end update alike (a session that ends before its moment is not killed).
A side channel (``_soak_channel.py``, a plugin that knows nothing of pytest-ldd)
logs every test whose reports had reached the recording process.  Afterwards:

- ``ldd metric verify`` must pass and ``metrics.json`` must parse;
- every pair (and every observation) of every test the side channel saw finish
  must be in the store **exactly once**; values are unique per session and
  test, so a pair is identified by its metric, its raw values and its nodeid;
- no process of any session may be left running.

The figure is pairs lost / pairs expected (and duplicates, which count as
failures too).  Exit code 0 when all checks pass, 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, final

HERE: Final = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from _harness import child_env, pytest_command, run_child  # noqa: E402

__all__ = ["Audit", "SoakResult", "audit", "channel_path", "main", "soak", "write_soak_suite"]

RESULTS: Final = HERE / "soak-results.json"

#: Raw values are ``session * SESSION_STRIDE + test * 10 + index``: unique per pair.
SESSION_STRIDE: Final = 1_000_000
SCALE: Final = 1e9
METRICS: Final = ("soak_latency", "soak_tokens")


def write_soak_suite(project: Path, *, tests: int = 80, sleep_ms: int = 4) -> None:
    """The soak's test project: ``tests`` tests recording 3 values (2 pairs) each.

    Test ``j`` sleeps ``(j % 5) * sleep_ms`` ms before recording, so a session
    spends its time inside tests and kills land between and inside them.
    """
    project.mkdir(parents=True, exist_ok=True)
    tables = "".join(
        f'[tool.ldd.metrics.{name}]\nkind = "positive"\nnormalize_scale = {SCALE!r}\n'
        f'unit = "count"\ndescription = "generated value of the crash soak ({name})"\n\n'
        for name in METRICS
    )
    (project / "pyproject.toml").write_text(
        "[tool.pytest.ini_options]\ntestpaths = ['tests']\n\n" + tables, encoding="utf-8"
    )
    folder = project / "tests"
    folder.mkdir(exist_ok=True)
    body = [
        '"""Generated crash-soak tests."""\n\nimport os\nimport time\n\n',
        "SESSION = int(os.environ['LDD_SOAK_SESSION'])\n\n",
        "def _record(ldd, test):\n",
        f"    time.sleep((test % 5) * {sleep_ms} / 1000)\n",
        f"    base = SESSION * {SESSION_STRIDE} + test * 10\n",
        f"    ldd.observe({METRICS[0]!r}, float(base), predicted=float(base + 1))\n",
        f"    ldd.observe({METRICS[1]!r}, float(base + 1), predicted=float(base + 3))\n",
        f"    ldd.observe({METRICS[0]!r}, float(base + 2))\n",
    ]
    for test in range(tests):
        body.append(f"\n\ndef test_{test:04d}(ldd):\n    _record(ldd, {test})\n")
    (folder / "test_soak.py").write_text("".join(body), encoding="utf-8")


Key = tuple[Any, ...]


def expected_records(session: int, nodeid: str) -> tuple[set[Key], set[Key]]:
    """The (pairs, observations) a finished test of ``session`` must have stored."""
    test = int(nodeid.rsplit("test_", 1)[1])
    base = float(session * SESSION_STRIDE + test * 10)
    pairs = {
        (METRICS[0], base + 1, base, nodeid),
        (METRICS[1], base + 3, base + 1, nodeid),
    }
    observations = {
        (METRICS[0], base, nodeid),
        (METRICS[1], base + 1, nodeid),
        (METRICS[0], base + 2, nodeid),
    }
    return pairs, observations


@final
@dataclass(slots=True)
class _Session:
    number: int
    xdist: bool
    kill_after: float
    proc: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    ended: float = 0.0
    killed: bool = False
    returncode: int | None = None


@final
@dataclass(frozen=True, slots=True)
class Audit:
    """What the store holds compared with what the side channel saw finish."""

    finished_tests: int
    pairs_expected: int
    pairs_lost: int
    pairs_duplicated: int
    observations_expected: int
    observations_lost: int
    observations_duplicated: int
    pairs_in_store: int
    torn_lines_skipped: int
    verify_returncode: int
    verify_output: str
    metrics_json_ok: bool
    leftover_temp_files: int
    failures: tuple[str, ...]

    @property
    def loss_ratio(self) -> float:
        """Pairs lost / pairs expected."""
        return self.pairs_lost / self.pairs_expected if self.pairs_expected else 0.0


@final
@dataclass(frozen=True, slots=True)
class SoakResult:
    """What the soak did and found."""

    sessions: int
    killed: int
    completed: int
    xdist_sessions: int
    stray_processes: tuple[int, ...]
    duration_s: float
    audit: Audit

    @property
    def failures(self) -> list[str]:
        """Every failed check, in words."""
        found = list(self.audit.failures)
        if self.stray_processes:
            found.append(
                f"{len(self.stray_processes)} process(es) of killed sessions were still running"
            )
        return found

    @property
    def ok(self) -> bool:
        """Whether every check passed."""
        return not self.failures

    @property
    def loss_ratio(self) -> float:
        """Pairs lost / pairs expected."""
        return self.audit.loss_ratio

    def to_json(self) -> dict[str, Any]:
        """The result as one flat JSON object."""
        doc: dict[str, Any] = {
            "sessions": self.sessions,
            "killed": self.killed,
            "completed": self.completed,
            "xdist_sessions": self.xdist_sessions,
            "stray_processes": list(self.stray_processes),
            "duration_s": self.duration_s,
        }
        doc.update({name: getattr(self.audit, name) for name in Audit.__dataclass_fields__})
        doc["failures"] = self.failures
        doc["loss_ratio"] = self.loss_ratio
        doc["ok"] = self.ok
        return doc


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - someone else's group
        return True
    return True


def _processes_in_sessions(sids: set[int]) -> list[int]:
    """Pids of live processes whose session id is one of ``sids`` (Linux /proc)."""
    found = []
    proc = Path("/proc")
    if not proc.is_dir():  # pragma: no cover - not Linux
        return [sid for sid in sids if _group_alive(sid)]
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Fields after the parenthesized command: state ppid pgrp session ...
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[3]) in sids:
            found.append(int(entry.name))
    return found


def _kill(session: _Session) -> None:
    assert session.proc is not None
    with contextlib.suppress(ProcessLookupError):
        os.killpg(session.proc.pid, signal.SIGKILL)


def _run_sessions(
    project: Path, plan: Sequence[_Session], channel: Path, *, parallel: int, log: Any
) -> None:
    pending = list(plan)
    active: list[_Session] = []
    plugin_env = {"PYTHONPATH": str(HERE)}
    while pending or active:
        while pending and len(active) < parallel:
            session = pending.pop(0)
            args = ["-q", "-p", "no:harvest", "-p", "_soak_channel", "--ldd"]
            if session.xdist:
                args += ["-n", "2"]
            env = child_env(
                {
                    **plugin_env,
                    "LDD_SOAK_SESSION": str(session.number),
                    "LDD_SOAK_CHANNEL": str(channel_path(channel, session.number)),
                }
            )
            session.started = time.perf_counter()
            session.proc = subprocess.Popen(
                pytest_command(*args),
                cwd=project,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            active.append(session)
        time.sleep(0.002)
        now = time.perf_counter()
        for session in list(active):
            assert session.proc is not None
            flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
            exited = os.waitid(os.P_PID, session.proc.pid, flags) is not None
            if not exited and now - session.started >= session.kill_after:
                _kill(session)
                session.killed = True
                exited = True  # reaped below
            if exited:
                # The zombie keeps its pid (and group id) reserved while we kill
                # whatever is left in its group, e.g. xdist workers.
                _kill(session)
                session.returncode = session.proc.wait()
                session.ended = time.perf_counter()
                active.remove(session)
                what = "killed" if session.killed else f"exited {session.returncode}"
                log(
                    f"  session {session.number:2d}{' -n 2' if session.xdist else '     '} "
                    f"{what} after {session.ended - session.started:.2f} s"
                )


def _session_time(project: Path, *, xdist: bool) -> float:
    """Wall time of one unkilled session of the soak suite on a scratch store."""
    scratch = Path(tempfile.mkdtemp(prefix="ldd-soak-probe-"))
    try:
        args = ["-q", "-p", "no:harvest", "--ldd", f"--ldd-dir={scratch / '.ldd'}"]
        if xdist:
            args += ["-n", "2"]
        env = child_env({"LDD_SOAK_SESSION": "0"})
        # The first run byte-compiles the tests; the second is the typical one.
        return min(
            run_child(pytest_command(*args), cwd=project, env=env).check().wall_s for _ in range(2)
        )
    finally:
        import shutil

        shutil.rmtree(scratch, ignore_errors=True)


def _read_store(project: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    from pytest_ldd import TraceStore
    from pytest_ldd.errors import LddWarning

    store = TraceStore(project)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LddWarning)
        pairs, _ = store.read_jsonl(store.calibrations_path)
        observations, _ = store.read_jsonl(store.observations_path)
    torn = sum(1 for w in caught if issubclass(w.category, LddWarning))
    return pairs, observations, torn


def soak(
    workdir: Path,
    *,
    sessions: int = 30,
    tests: int = 80,
    seed: int = 0,
    parallel: int = 2,
    xdist_every: int = 3,
    session_s: float | None = None,
    log: Any = None,
) -> SoakResult:
    """Run the soak in ``workdir`` (its project and store are created there).

    Every ``xdist_every``-th session runs under ``-n 2`` (0: none).  Kill moments
    are drawn up to the time an unkilled session takes, measured first unless
    ``session_s`` gives it.
    """
    say = log or (lambda text: print(text, file=sys.stderr, flush=True))
    began = time.perf_counter()
    project = workdir / "project"
    channel = workdir / "channel"
    channel.mkdir(parents=True, exist_ok=True)
    write_soak_suite(project, tests=tests)
    if session_s is None:
        serial_s = _session_time(project, xdist=False)
        xdist_s = _session_time(project, xdist=True) if xdist_every else serial_s
    else:
        serial_s = xdist_s = session_s
    say(f"  an unkilled session takes {serial_s:.2f} s (-n 2: {xdist_s:.2f} s)")
    rng = random.Random(seed)
    plan = []
    for number in range(1, sessions + 1):
        xdist = bool(xdist_every) and number % xdist_every == 0
        # Up to 1.25 x an unkilled session's time: two sessions share the cores and
        # run slower than alone, so most kills land mid-run, some in the
        # session-end update, and a few sessions finish first.
        typical = xdist_s if xdist else serial_s
        plan.append(_Session(number, xdist, rng.uniform(0.05, 1.25) * typical))
    _run_sessions(project, plan, channel, parallel=parallel, log=say)
    sids = {s.proc.pid for s in plan if s.proc is not None}
    time.sleep(0.2)
    stray = _processes_in_sessions(sids)
    for pid in stray:  # never leave anything behind, even when reporting it
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)

    return SoakResult(
        sessions=len(plan),
        killed=sum(1 for s in plan if s.killed),
        completed=sum(1 for s in plan if not s.killed),
        xdist_sessions=sum(1 for s in plan if s.xdist),
        stray_processes=tuple(stray),
        duration_s=time.perf_counter() - began,
        audit=audit(project, channel, [s.number for s in plan]),
    )


def channel_path(channel: Path, session: int) -> Path:
    """The side-channel file of session number ``session``."""
    return channel / f"session-{session:03d}.jsonl"


def audit(project: Path, channel: Path, sessions: Iterable[int]) -> Audit:
    """Check the store of ``project`` against the side channel of ``sessions``."""
    failures: list[str] = []
    verify = run_child(
        [sys.executable, "-m", "pytest_ldd", "metric", "verify", "--project", str(project)],
        cwd=project,
    )
    if verify.returncode != 0:
        failures.append(f"ldd metric verify exited {verify.returncode}")
    metrics_ok = True
    store = project / ".ldd"
    try:
        json.loads((store / "metrics.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        # Only a store that was never written (every session killed before it
        # registered its metrics) may lack metrics.json.
        if any(store.glob("*.jsonl")):
            metrics_ok = False
            failures.append("metrics.json is missing although the logs exist")
    except (OSError, ValueError) as err:
        metrics_ok = False
        failures.append(f"metrics.json does not parse: {err}")

    pairs, observations, torn = _read_store(project)
    pair_counts = Counter(
        (p["metric_name"], p["raw_predicted"], p["raw_observed"], p["nodeid"]) for p in pairs
    )
    obs_counts = Counter((o["metric_name"], o["raw"], o["nodeid"]) for o in observations)
    expected_pairs: set[Key] = set()
    expected_obs: set[Key] = set()
    finished = 0
    for number in sessions:
        path = channel_path(channel, number)
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            nodeid = json.loads(line)["nodeid"]
            finished += 1
            more_pairs, more_obs = expected_records(number, nodeid)
            expected_pairs |= more_pairs
            expected_obs |= more_obs
    pairs_lost = sum(1 for key in expected_pairs if pair_counts[key] == 0)
    obs_lost = sum(1 for key in expected_obs if obs_counts[key] == 0)
    # Any pair stored twice is a failure, whether its test finished or not.
    pairs_dup = sum(count - 1 for count in pair_counts.values() if count > 1)
    obs_dup = sum(count - 1 for count in obs_counts.values() if count > 1)
    if pairs_lost:
        failures.append(f"{pairs_lost} of {len(expected_pairs)} expected pairs are missing")
    if obs_lost:
        failures.append(f"{obs_lost} of {len(expected_obs)} expected observations are missing")
    if pairs_dup or obs_dup:
        failures.append(f"{pairs_dup} pair(s) and {obs_dup} observation(s) stored twice")
    return Audit(
        finished_tests=finished,
        pairs_expected=len(expected_pairs),
        pairs_lost=pairs_lost,
        pairs_duplicated=pairs_dup,
        observations_expected=len(expected_obs),
        observations_lost=obs_lost,
        observations_duplicated=obs_dup,
        pairs_in_store=len(pairs),
        torn_lines_skipped=torn,
        verify_returncode=verify.returncode,
        verify_output=(verify.stdout + verify.stderr).strip()[-2000:],
        metrics_json_ok=metrics_ok,
        leftover_temp_files=len(list(store.glob(".metrics.*.tmp"))),
        failures=tuple(failures),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the soak and print its figures; exit 0 when every check passed."""
    parser = argparse.ArgumentParser(
        prog="python benchmarks/soak.py", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--sessions", type=int, default=30, help="Sessions to run (30).")
    parser.add_argument("--tests", type=int, default=80, help="Tests per session (80).")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the kill moments (0).")
    parser.add_argument(
        "--output", type=Path, default=RESULTS, help=f"Results file (default: {RESULTS})."
    )
    parser.add_argument(
        "--workdir", type=Path, default=None, help="Keep the project and store in this folder."
    )
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="ldd-soak-"))
    try:
        result = soak(workdir.resolve(), sessions=args.sessions, tests=args.tests, seed=args.seed)
    finally:
        if args.workdir is None:
            import shutil

            shutil.rmtree(workdir, ignore_errors=True)
    doc = result.to_json()
    args.output.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    a = result.audit
    print(
        f"{result.sessions} sessions ({result.killed} killed, "
        f"{result.xdist_sessions} under -n 2), {a.finished_tests} finished tests\n"
        f"pairs lost / expected: {a.pairs_lost} / {a.pairs_expected} "
        f"({a.loss_ratio:.2%}); duplicated: {a.pairs_duplicated}\n"
        f"observations lost / expected: {a.observations_lost} / "
        f"{a.observations_expected}; duplicated: {a.observations_duplicated}\n"
        f"torn lines skipped: {a.torn_lines_skipped}; verify exit code: "
        f"{a.verify_returncode}; metrics.json parses: {a.metrics_json_ok}; "
        f"stray processes: {len(result.stray_processes)}"
    )
    for failure in result.failures:
        print(f"FAILED: {failure}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
