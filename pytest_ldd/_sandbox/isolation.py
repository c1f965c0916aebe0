"""The parent's part of ``isolation="process"``: staging the judge and naming the subject.

In this mode the parent starts the *judge* (``judge_runner.py``) with this very
interpreter instead of the in-process runner, and hands it, among the usual
settings, the command of the *subject*: the ``python=`` interpreter or wrapper
(the only process that ever runs workspace code) with the bootstrap of
``subject.py``.  Everything else -- the staged copies, the channel, the limits, the
scrubbed environment, the process group, the timeout and the judgement -- is the
sandbox's own, shared with ``isolation="inprocess"``.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_ldd._sandbox.boot import BOOTSTRAP
from pytest_ldd._sandbox.precompiled import copy_module
from pytest_ldd.errors import SandboxError

__all__ = [
    "ISOLATIONS",
    "JUDGE_FILES",
    "JUDGE_FLAGS",
    "check_isolation",
    "new_hash_seed",
    "stage_judge",
]

ISOLATIONS = ("process", "inprocess")
_HERE = Path(__file__).parent
# The judge's files, staged beside the runner's own (runner.py, confinement.py,
# integrity.py, staged already), and copied into a judge's zygote.
JUDGE_FILES = (
    "judge_runner.py", "wire.py", "containers.py", "handles.py", "stubs.py", "calls.py",
    "boot.py", "rng.py", "sync.py", "watching.py", "proxies.py", "subject.py", "template.py",
)  # fmt: skip
# The judge, its zygote and the subject start as ``-I`` would start them, but without
# ``-E``: the one PYTHON* variable their environment holds is PYTHONHASHSEED, so that
# the judge and the subject hash strings alike (a set of strings iterates in the same
# order on both sides, as in one process).  ``-s`` keeps the user's site folder out;
# each strips the folder of its script (or the working folder of ``-c``) from
# ``sys.path`` before anything it did not stage could be there.
JUDGE_FLAGS = ("-s", "-B", "-X", "utf8")


def new_hash_seed() -> str:
    """A random PYTHONHASHSEED for a judge and its subject (never 0, which turns hashing off)."""
    return str(secrets.randbelow(2**32 - 1) + 1)


def check_isolation(isolation: object) -> str:
    """The validated ``isolation`` option."""
    if not isinstance(isolation, str) or isolation not in ISOLATIONS:
        msg = f"'isolation' must be one of {', '.join(map(repr, ISOLATIONS))} (got {isolation!r})"
        raise SandboxError(msg)
    return isolation


def stage_judge(
    runner_dir: Path,
    settings: Mapping[str, Any],
    *,
    subject_python: Sequence[str],
    workspace: Path,
    timeout: float,
    confine: Mapping[str, Any],
) -> tuple[list[str], dict[str, Any]]:
    """Copy the judge's files beside the runner; the judge's argv and settings.

    ``confine`` is the confinement policy the subject applies to itself.
    """
    for name in JUDGE_FILES:
        copy_module(_HERE / name, runner_dir / name)
    if not sys.executable:
        msg = "isolation='process' needs this interpreter's executable for the judge process"
        raise SandboxError(msg)
    subject = {
        "argv": [*subject_python, *JUDGE_FLAGS, "-c", BOOTSTRAP],
        "cwd": str(workspace),
        "timeout": timeout,
        "confine": dict(confine),
    }
    argv = [sys.executable, *JUDGE_FLAGS, str(runner_dir / "judge_runner.py")]
    return argv, {**settings, "subject": subject}
