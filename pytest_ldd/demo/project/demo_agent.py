"""A scripted coding agent, standing in for a real one so the demo is repeatable.

It "attempts" four small coding tasks by writing a solution module into a workspace
folder.  What it writes, how long it takes and the tokens it spends all come from
fixed tables indexed by the session number (``LDD_DEMO_SESSION``), so every run of
the demo tells the same story:

* some attempts are right, some have a plausible-looking bug, one is a stub;
* ``parse_duration`` is slow once in session 2 (a spike), then steady, and slow
  again from session 7 on (a regression);
* the tokens come from recorded provider usage payloads in ``usage/``.

A real project would call its agent here instead; nothing else would change.
"""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pytest_ldd import Cost

__all__ = ["SESSION_ENV", "TASKS", "Attempt", "attempt", "current_session", "plan"]

#: The environment variable that says which session of the script this is.
SESSION_ENV = "LDD_DEMO_SESSION"

#: The coding tasks, each with hidden tests in ``hidden/<task>/``.
TASKS = ("slugify", "fizzbuzz", "parse_duration", "merge_intervals")

#: The draft the agent writes for each task in sessions 1 to 7 (later sessions replay
#: session 6): "good" is correct, "subtle" looks right but has a bug, "stub" gives up.
# fmt: off
SCHEDULE: dict[str, tuple[str, ...]] = {
    #                   1       2         3         4       5         6       7
    "slugify":         ("good", "good",   "good",   "good", "subtle", "good", "good"),
    "fizzbuzz":        ("good", "subtle", "good",   "good", "good",   "good", "good"),
    "parse_duration":  ("stub", "good",   "good",   "good", "good",   "good", "good"),
    "merge_intervals": ("good", "good",   "subtle", "good", "good",   "good", "good"),
}
# fmt: on

#: Typical seconds per task; each session adds a small deterministic jitter.
BASE_SECONDS = {"slugify": 0.9, "fizzbuzz": 0.6, "parse_duration": 1.35, "merge_intervals": 1.1}

#: Where the script departs from the typical time: (task, session) -> seconds.
SLOW = {
    ("parse_duration", 2): 2.2,  # a one-off spike: the first working parser took a while
    ("parse_duration", 7): 3.1,  # a regression: a new planning step on every attempt
}

_HERE = Path(__file__).resolve().parent

DRAFTS: dict[str, dict[str, str]] = {
    "slugify": {
        "good": '''\
"""URL slugs."""

import re
import unicodedata


def slugify(text: str) -> str:
    """Lower-case ASCII words of ``text`` joined by single hyphens."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    words = re.findall(r"[a-z0-9]+", folded.lower())
    return "-".join(words)
''',
        "subtle": '''\
"""URL slugs."""

import re


def slugify(text: str) -> str:
    """Lower-case words of ``text`` joined by hyphens."""
    slug = re.sub(r"[^a-z0-9]", "-", text.lower())
    return slug.strip("-")
''',
    },
    "fizzbuzz": {
        "good": '''\
"""FizzBuzz."""


def fizzbuzz(n: int) -> list[str]:
    """The FizzBuzz words for 1 to ``n`` inclusive."""
    if n < 0:
        raise ValueError(f"n must be >= 0 (got {n})")
    words = []
    for i in range(1, n + 1):
        if i % 15 == 0:
            words.append("FizzBuzz")
        elif i % 3 == 0:
            words.append("Fizz")
        elif i % 5 == 0:
            words.append("Buzz")
        else:
            words.append(str(i))
    return words
''',
        "subtle": '''\
"""FizzBuzz."""


def fizzbuzz(n: int) -> list[str]:
    """The FizzBuzz words for 1 to ``n`` inclusive."""
    if n < 0:
        raise ValueError(f"n must be >= 0 (got {n})")
    words = []
    for i in range(1, n):
        if i % 15 == 0:
            words.append("FizzBuzz")
        elif i % 3 == 0:
            words.append("Fizz")
        elif i % 5 == 0:
            words.append("Buzz")
        else:
            words.append(str(i))
    return words
''',
    },
    "parse_duration": {
        "good": '''\
"""Durations such as "1h30m" or "2h 5m 10s"."""

import re

_UNIT_SECONDS = {"h": 3600, "m": 60, "s": 1}
_PART = re.compile(r"\\s*(\\d+)\\s*([hms])")


def parse_duration(text: str) -> int:
    """The number of seconds in ``text``, e.g. ``"1h30m"`` -> 5400."""
    text = text.strip()
    if not text:
        raise ValueError("empty duration")
    total, pos = 0, 0
    while pos < len(text):
        part = _PART.match(text, pos)
        if part is None:
            raise ValueError(f"not a duration: {text!r}")
        total += int(part.group(1)) * _UNIT_SECONDS[part.group(2)]
        pos = part.end()
    return total
''',
        "stub": '''\
"""Durations such as "1h30m"."""


def parse_duration(text: str) -> int:
    """The number of seconds in ``text``."""
    # TODO: hours, minutes and seconds
    raise NotImplementedError("parse_duration")
''',
    },
    "merge_intervals": {
        "good": '''\
"""Merging closed integer intervals."""


def merge_intervals(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merge overlapping or touching intervals; the result is sorted by start."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if start > end:
            raise ValueError(f"interval start must be <= end (got {(start, end)})")
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
''',
        "subtle": '''\
"""Merging closed integer intervals."""


def merge_intervals(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merge overlapping or touching intervals; the result is sorted by start."""
    merged: list[tuple[int, int]] = []
    for start, end in intervals:
        if start > end:
            raise ValueError(f"interval start must be <= end (got {(start, end)})")
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
''',
    },
}


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one attempt left behind: the module written, its model, cost and time."""

    task: str
    draft: str
    module: Path
    model: str
    cost: Cost
    seconds: float


def current_session() -> int:
    """The session number from ``LDD_DEMO_SESSION`` (1 when unset)."""
    raw = os.environ.get(SESSION_ENV, "1")
    try:
        session = int(raw)
    except ValueError:
        msg = f"{SESSION_ENV} must be a whole number >= 1 (got {raw!r})"
        raise ValueError(msg) from None
    if session < 1:
        msg = f"{SESSION_ENV} must be a whole number >= 1 (got {raw!r})"
        raise ValueError(msg)
    return session


def plan(task: str, session: int) -> tuple[str, float]:
    """The draft kind and the seconds of ``task`` in ``session``, from the tables."""
    drafts = SCHEDULE[task]
    # Sessions after the last scripted one replay session 6: the regression is fixed.
    draft = drafts[session - 1] if session <= len(drafts) else drafts[5]
    seconds = SLOW.get((task, session))
    if seconds is None:
        # A jitter of -0.05 .. +0.05 s that depends only on the task and the session.
        jitter = (zlib.crc32(f"{task}:{session}".encode()) % 11 - 5) / 100
        seconds = round(BASE_SECONDS[task] + jitter, 2)
    return draft, seconds


def _recorded_usage(task: str, session: int) -> tuple[str, str, dict[str, Any]]:
    """The provider, model and usage payload recorded for this attempt."""
    with open(_HERE / "usage" / f"{task}.json", encoding="utf-8") as handle:
        recording = json.load(handle)
    attempts = recording["attempts"]
    return recording["provider"], recording["model"], attempts[(session - 1) % len(attempts)]


def attempt(task: str, workspace: Path, *, session: int) -> Attempt:
    """Attempt ``task``: write ``<task>.py`` into ``workspace`` and report what it cost."""
    if task not in DRAFTS:
        msg = f"'task' must be one of {', '.join(TASKS)} (got {task!r})"
        raise ValueError(msg)
    draft, seconds = plan(task, session)
    workspace.mkdir(parents=True, exist_ok=True)
    module = workspace / f"{task}.py"
    module.write_text(DRAFTS[task][draft], encoding="utf-8")
    provider, model, usage = _recorded_usage(task, session)
    cost = replace(Cost.from_usage(usage, provider), latency_s=seconds)
    return Attempt(task, draft, module, model, cost, seconds)
