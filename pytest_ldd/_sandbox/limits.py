"""Resource limits of one hidden-test run."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import final

from pytest_ldd.errors import SandboxError

__all__ = ["GiB", "KiB", "Limits", "MiB"]

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB


@final
@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits of one hidden-test run; ``None`` turns an optional limit off.

    - ``memory_bytes``: address space of each test process (``RLIMIT_AS``);
    - ``cpu_seconds``: CPU time of each test process (``RLIMIT_CPU``); ``None`` derives it
      from the timeout (timeout + 1 s), so a CPU limit always applies;
    - ``file_bytes``: the largest file a test process may write (``RLIMIT_FSIZE``);
    - ``processes``: processes the run may add to the user's current count
      (``RLIMIT_NPROC``; the kernel does not apply it to root, where the process group
      and the timeout contain a storm);
    - ``output_bytes``: combined stdout and stderr read before the run is killed;
    - ``tail_bytes``: how much of the end of the output the verdict keeps;
    - ``workspace_bytes`` / ``workspace_files``: the largest workspace that is copied.
    """

    memory_bytes: int | None = 2 * GiB
    cpu_seconds: int | None = None
    file_bytes: int | None = 256 * MiB
    processes: int | None = 256
    output_bytes: int = 16 * MiB
    tail_bytes: int = 16 * KiB
    workspace_bytes: int | None = 1 * GiB
    workspace_files: int | None = 100_000

    def __post_init__(self) -> None:
        for spec in fields(self):
            value = getattr(self, spec.name)
            if value is None and spec.name not in ("output_bytes", "tail_bytes"):
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                msg = f"Limits {spec.name!r} must be an int > 0 (got {value!r})"
                raise SandboxError(msg)

    def rlimits(
        self, timeout: float, *, is_root: bool, user_processes: int | None
    ) -> dict[str, tuple[int, int]]:
        """The ``(soft, hard)`` limits the child sets on itself, by ``resource`` name.

        ``user_processes`` is how many processes the user runs now (``None`` where it
        cannot be counted, which leaves the process limit off).
        """
        cpu = self.cpu_seconds if self.cpu_seconds is not None else math.ceil(timeout) + 1
        # SIGXCPU at the soft limit, SIGKILL one second later at the hard one.
        limits: dict[str, tuple[int, int]] = {"RLIMIT_CPU": (cpu, cpu + 1), "RLIMIT_CORE": (0, 0)}
        if self.memory_bytes is not None:
            limits["RLIMIT_AS"] = (self.memory_bytes, self.memory_bytes)
        if self.file_bytes is not None:
            limits["RLIMIT_FSIZE"] = (self.file_bytes, self.file_bytes)
        if self.processes is not None and not is_root and user_processes is not None:
            # RLIMIT_NPROC counts every process of the real user, not only this run's.
            allowed = user_processes + self.processes
            limits["RLIMIT_NPROC"] = (allowed, allowed)
        return limits
