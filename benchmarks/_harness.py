"""Measuring child processes: wall time, peak RSS, interleaved repetitions.

Every figure of the benchmark suite is a comparison made inside one run: the
arms of a comparison (pytest-ldd and its baseline) are repeated in turns
(A B A B ..., with the order of each round rotated so neither arm always runs
first after a quiet moment), and each arm is summarized by its median.
"""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, final

__all__ = [
    "Arm",
    "ChildRun",
    "Comparison",
    "child_env",
    "interleave",
    "pytest_command",
    "rmtree",
    "run_child",
]

#: Environment variables that would change how a child pytest behaves.
_SCRUBBED = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTHONPATH")


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a measured child: ours, without pytest-steering variables."""
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    # A child must never pick up the invoking project's coverage or warnings setup.
    env.pop("COV_CORE_SOURCE", None)
    env["PYTHONDONTWRITEBYTECODE"] = "0"
    if extra:
        env.update(extra)
    return env


def pytest_command(*args: str) -> list[str]:
    """``python -m pytest -p no:cacheprovider ARGS`` with this interpreter."""
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]


@final
@dataclass(frozen=True, slots=True)
class ChildRun:
    """One finished child process."""

    command: tuple[str, ...]
    returncode: int
    #: Wall time from spawn to reaping, in seconds (``time.perf_counter``).
    wall_s: float
    #: Peak resident set size of the child (and the children it reaped), in bytes.
    max_rss: int
    #: CPU seconds (user + system) of the child and the children it reaped.
    cpu_s: float
    stdout: str
    stderr: str

    def check(self, *allowed: int) -> ChildRun:
        """Raise ``RuntimeError`` with the child's output unless its exit code is allowed."""
        if self.returncode not in (allowed or (0,)):
            msg = (
                f"command {' '.join(self.command)!r} exited {self.returncode} "
                f"(expected {allowed or (0,)})\n--- stdout\n{self.stdout[-3000:]}\n"
                f"--- stderr\n{self.stderr[-3000:]}"
            )
            raise RuntimeError(msg)
        return self


def run_child(
    command: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 600.0,
) -> ChildRun:
    """Run ``command`` to completion in its own process group; measure it.

    The child is reaped with ``os.wait4``, whose resource usage belongs to that
    child alone, so peak RSS figures never mix two processes.  Output goes to
    temporary files (a pipe could block a chatty child and distort its timing).
    A child still running after ``timeout`` seconds is killed with its whole
    process group and ``RuntimeError`` is raised.
    """
    import tempfile

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            list(command),
            cwd=cwd,
            env=dict(env) if env is not None else child_env(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        deadline = start + timeout
        while True:
            # Wait for the exit without reaping: while the child is a zombie its pid
            # (and so its process group id) cannot be reused, which makes the group
            # kill below safe.
            if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT):
                break
            if time.perf_counter() > deadline:
                _kill_group(proc.pid)
                os.wait4(proc.pid, 0)
                proc.returncode = -9
                msg = f"command {' '.join(command)!r} timed out after {timeout:g} s"
                raise RuntimeError(msg)
            # Short sleeps: the reaping delay is part of the measured wall time.
            time.sleep(0.0005)
        wall = time.perf_counter() - start
        # Whatever the child left behind in its group (an xdist worker) goes too.
        _kill_group(proc.pid)
        _, status, usage = os.wait4(proc.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        proc.returncode = code
        out.seek(0)
        err.seek(0)
        return ChildRun(
            command=tuple(command),
            returncode=code,
            wall_s=wall,
            max_rss=usage.ru_maxrss * 1024,  # Linux reports KiB
            cpu_s=usage.ru_utime + usage.ru_stime,
            stdout=out.read().decode("utf-8", "replace"),
            stderr=err.read().decode("utf-8", "replace"),
        )


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


@final
@dataclass(frozen=True, slots=True)
class Arm:
    """One side of a comparison: how to prepare a repetition and what to measure.

    ``prepare`` runs before each repetition, outside the timing (for example to
    give pytest-ldd a fresh copy of its store).  ``measure`` returns the figure
    of one repetition (seconds, or bytes for memory arms), or a tuple of it and
    secondary figures by name (e.g. ``{"cpu_s": ...}``), kept alongside.
    """

    name: str
    measure: Callable[[], float | tuple[float, Mapping[str, float]]]
    prepare: Callable[[], None] | None = None


@final
@dataclass(slots=True)
class Comparison:
    """The samples of every arm of one comparison, collected in interleaved rounds."""

    samples: dict[str, list[float]] = field(default_factory=dict)
    #: Secondary figures: ``extra[arm][figure]`` is a list aligned with ``samples[arm]``.
    extra: dict[str, dict[str, list[float]]] = field(default_factory=dict)

    def median(self, arm: str, figure: str | None = None) -> float:
        """The median of ``arm``'s samples (or of one of its secondary figures)."""
        values = self.samples[arm] if figure is None else self.extra[arm][figure]
        return statistics.median(values)

    def ratio(self, arm: str, baseline: str, figure: str | None = None) -> float:
        """``median(arm) / median(baseline)`` (of the main or a secondary figure)."""
        return self.median(arm, figure) / self.median(baseline, figure)

    def to_json(self, unit: str) -> dict[str, Any]:
        """Medians, spreads and raw samples of every arm."""
        doc: dict[str, Any] = {}
        for name, values in self.samples.items():
            doc[name] = {
                "median": self.median(name),
                "min": min(values),
                "max": max(values),
                "n": len(values),
                "unit": unit,
                "samples": values,
            }
            for figure, more in self.extra.get(name, {}).items():
                doc[name][figure] = {"median": statistics.median(more), "samples": more}
        return doc


def interleave(
    arms: Sequence[Arm],
    repetitions: int,
    *,
    warmup: int = 1,
    log: Callable[[str], None] | None = None,
) -> Comparison:
    """Measure every arm ``repetitions`` times, in rotated rounds after ``warmup`` rounds.

    Round ``r`` runs the arms starting from arm ``r % len(arms)`` (A B C, B C A,
    C A B, ...), so slow drift of the machine (thermal, page cache, a neighbour)
    lands on every arm alike.  Warm-up rounds (byte-compiling the generated
    tests, filling the page cache) are run and discarded.
    """
    if repetitions < 1:
        msg = f"'repetitions' must be >= 1 (got {repetitions})"
        raise ValueError(msg)
    result = Comparison({arm.name: [] for arm in arms})
    for round_no in range(warmup + repetitions):
        shift = round_no % len(arms)
        for arm in [*arms[shift:], *arms[:shift]]:
            if arm.prepare is not None:
                arm.prepare()
            measured = arm.measure()
            value, extra = measured if isinstance(measured, tuple) else (measured, {})
            if round_no >= warmup:
                result.samples[arm.name].append(value)
                for figure, number in extra.items():
                    result.extra.setdefault(arm.name, {}).setdefault(figure, []).append(number)
            if log is not None:
                tag = "warm-up" if round_no < warmup else f"rep {round_no - warmup + 1}"
                log(f"    {arm.name:<28} {tag:<8} {value:.4g}")
    return result


def rmtree(path: Path) -> None:
    """Remove ``path`` if it exists (a folder tree or a file)."""
    import shutil

    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
