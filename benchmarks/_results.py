"""What every benchmark writes its figures with: the results file, the targets, the machine.

``run.py`` (the whole suite) and ``bench_sandbox.py`` (which can merge a run of its
own into the results file) both use these; neither imports the other for them.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, final

__all__ = ["RESULTS", "Target", "load_average", "machine", "versions", "write_results"]

HERE: Final = Path(__file__).resolve().parent
RESULTS: Final = HERE / "results.json"


@final
@dataclass(frozen=True, slots=True)
class Target:
    """One promise and whether this run kept it (``value <= limit``)."""

    name: str
    value: float
    limit: float
    unit: str
    what: str

    @property
    def met(self) -> bool:
        """Whether the figure is within the limit."""
        return self.value <= self.limit

    def to_json(self) -> dict[str, Any]:
        """The target as a JSON object."""
        return {
            "name": self.name,
            "value": self.value,
            "limit": self.limit,
            "unit": self.unit,
            "met": self.met,
            "what": self.what,
            "margin": (self.value / self.limit - 1.0) if self.limit else None,
        }


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = int(line.split()[1]) * 1024
                break
    except OSError:
        pass
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        available = os.cpu_count() or 1
    return {
        "cpu": cpu,
        "cores": available,
        "memory_bytes": memory,
        "os": platform.platform(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
    }


def versions() -> dict[str, str | None]:
    """Versions of the measured tools and the commit of pytest-ldd."""
    from importlib import metadata

    found: dict[str, str | None] = {}
    for dist in (
        "pytest",
        "pytest-ldd",
        "pytest-xdist",
        "pytest-harvest",
        "pluggy",
        "portalocker",  # the store lock on Windows only
    ):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found[dist] = None
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=HERE,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "pytest_ldd"],
            cwd=HERE.parent,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        found["commit"] = commit + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        found["commit"] = None
    return found


def load_average() -> list[float] | None:
    """The load average now (other work on the machine distorts wall times)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - not available
        return None


def write_results(doc: dict[str, Any], path: Path) -> None:
    """Write ``doc`` to ``path`` atomically (a half-written results file helps nobody)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
