"""Pre-filled ``.ldd/`` stores with a long calibration history, written in bulk.

A store of ``pairs`` calibration pairs is what ``pairs / 2,500`` runs of the
overhead suite (2,000 tests, 5 values each, half with predictions) would leave
behind: the specs of the five metrics ``m0``..``m4``, ``pairs`` lines in
``metric_calibrations.jsonl``, twice as many in ``observations.jsonl`` and one
line per session in ``sessions.jsonl``.

The specs go through the registry API (so ``metrics.json`` is exactly what
pytest-ldd writes); the JSONL lines are formatted directly, in the registry's
own key order and number format, and written in large chunks; then the
registry catches up once (``Calibrator.update``), so the measured calls see a
store in its normal state: statistics up to date, positions at the end of the
logs.
"""

from __future__ import annotations

import calendar
import json
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final, final

from _suites import METRICS, metric_tables

__all__ = ["PAIRS_PER_SESSION", "FilledStore", "fill_store", "register_metrics"]

#: Pairs one session of the overhead suite logs (2,000 tests x 5 values / 2).
PAIRS_PER_SESSION: Final = 5000

_START: Final = calendar.timegm((2025, 1, 1, 0, 0, 0, 0, 0, 0))
_CHUNK_LINES: Final = 20_000

_PAIR = (
    '{"metric_name":"%s","metric_version":1,"predicted":%s,"observed":%s,'
    '"timestamp":"%s","raw_predicted":%s,"raw_observed":%s,"session_id":"%s",'
    '"nodeid":"%s"}\n'
)
_OBSERVATION = (
    '{"metric_name":"%s","metric_version":1,"raw":%s,"normalized":%s,'
    '"timestamp":"%s","session_id":"%s","nodeid":"%s"}\n'
)


@final
@dataclass(frozen=True, slots=True)
class FilledStore:
    """What :func:`fill_store` wrote."""

    project: Path
    ldd_dir: Path
    pairs: int
    observations: int
    sessions: int
    #: Seconds spent writing the logs, and catching the registry up once.
    write_s: float
    catch_up_s: float
    bytes_on_disk: int


def register_metrics(project: Path, *, ldd_dir: Path | None = None) -> None:
    """Register the suite's five bounded metrics through the registry API."""
    from pytest_ldd import MetricRegistry, TraceStore, bounded_rate

    registry = MetricRegistry(TraceStore(project, ldd_dir=ldd_dir))
    registry.register_many(
        bounded_rate(name, description=f"share of the generated benchmark values ({name})")
        for name in METRICS
    )


def _number(value: int) -> str:
    # The registry writes Python floats (repr); a value on the 1e-4 grid prints
    # as the shortest decimal, e.g. 0.4123, 0.5 or 1.0.
    return repr(value / 10_000)


def fill_store(project: Path, pairs: int, *, seed: int = 0, catch_up: bool = True) -> FilledStore:
    """Write a store of ``pairs`` calibration pairs under ``project/.ldd``.

    Prediction errors are Gaussian (sigma 0.05 on the normalized scale), so every
    metric is load-bearing once caught up.  ``pairs`` must be >= 0.
    """
    if pairs < 0:
        msg = f"'pairs' must be >= 0 (got {pairs})"
        raise ValueError(msg)
    from pytest_ldd import Calibrator, MetricRegistry, TraceStore

    project.mkdir(parents=True, exist_ok=True)
    (project / "pyproject.toml").write_text(
        "[tool.pytest.ini_options]\n\n" + metric_tables(), encoding="utf-8"
    )
    register_metrics(project)
    store = TraceStore(project)
    rng = random.Random(seed)
    gauss = rng.gauss
    randrange = rng.randrange
    started = time.perf_counter()
    sessions = max(1, -(-pairs // PAIRS_PER_SESSION)) if pairs else 0
    with (
        open(store.calibrations_path, "a", encoding="utf-8") as cal,
        open(store.observations_path, "a", encoding="utf-8") as obs,
        open(store.sessions_path, "a", encoding="utf-8") as ses,
    ):
        written = 0
        for session in range(sessions):
            when = _START + session * 3600
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))
            sid = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(when)) + f"-{session:06x}"
            count = min(PAIRS_PER_SESSION, pairs - written)
            cal_lines: list[str] = []
            obs_lines: list[str] = []
            for k in range(count):
                metric = METRICS[k % len(METRICS)]
                nodeid = f"test_gen_{(k // 250) % 20:03d}.py::test_{k // 2 % 2000:05d}"
                observed = randrange(100, 9901)
                error = int(gauss(0.0, 500.0))
                predicted = min(10_000, max(0, observed + error))
                o, p = _number(observed), _number(predicted)
                cal_lines.append(_PAIR % (metric, p, o, stamp, p, o, sid, nodeid))
                obs_lines.append(_OBSERVATION % (metric, o, o, stamp, sid, nodeid))
                # The value of the same test that had no prediction.
                other = _number(randrange(100, 9901))
                obs_lines.append(_OBSERVATION % (metric, other, other, stamp, sid, nodeid))
                if len(cal_lines) >= _CHUNK_LINES:
                    cal.write("".join(cal_lines))
                    obs.write("".join(obs_lines))
                    cal_lines.clear()
                    obs_lines.clear()
            cal.write("".join(cal_lines))
            obs.write("".join(obs_lines))
            written += count
            ses.write(
                json.dumps(
                    {
                        "schema_version": 1,
                        "session_id": sid,
                        "started_at": stamp,
                        "ended_at": stamp,
                        "recording": True,
                        "counts": {
                            "tests": 2000,
                            "observations": 2 * count,
                            "pairs": count,
                            "gate_failures": 0,
                            "advisory_breaches": 0,
                        },
                        "metrics": [],
                        "state_changes": [],
                        "corpus": {},
                    },
                    separators=(",", ":"),
                )
                + "\n"
            )
    write_s = time.perf_counter() - started
    catch_up_s = 0.0
    if catch_up:
        started = time.perf_counter()
        Calibrator(MetricRegistry(store)).update()
        catch_up_s = time.perf_counter() - started
    size = sum(p.stat().st_size for p in store.ldd_dir.iterdir() if p.is_file())
    return FilledStore(
        project=project,
        ldd_dir=store.ldd_dir,
        pairs=pairs,
        observations=2 * pairs,
        sessions=sessions,
        write_s=write_s,
        catch_up_s=catch_up_s,
        bytes_on_disk=size,
    )
