"""The clocks pytest-ldd reads, out of reach of the test doubles of the tests it records.

Tests fake time: ``mocker.patch("time.time", side_effect=[100.0, 100.25])``,
``monkeypatch.setattr(time, "time", ...)``, freezegun's ``freeze_time`` (which also
replaces every module attribute that holds a real ``time`` or ``datetime``
function).  A record stamped by a faked clock is mislabelled (1970, 2012), and a
``side_effect`` list that pytest-ldd reads once more runs dry in the test
(``StopIteration``).  So the real functions are taken when this module is first
imported (the plugin imports it as pytest loads it, before any test runs) and kept
where no patcher looks: in an object's slots, never as module attributes.  On
POSIX the wall clock is ``clock_gettime(CLOCK_REALTIME)``, which freezegun leaves
alone even in a process that imported this module after time was frozen.

Every timestamp pytest-ldd writes comes from :func:`utc_timestamp`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Final, final

__all__ = ["monotonic", "now", "utc_timestamp"]


def _wall_clock() -> Callable[[], float]:
    realtime = getattr(time, "CLOCK_REALTIME", None)
    if realtime is not None:
        return partial(time.clock_gettime, realtime)
    return time.time  # Windows: no clock_gettime


@final
class _RealTime:
    """The real functions, held where freezegun's module scan does not look."""

    __slots__ = ("gmtime", "last", "steady", "strftime", "wall")

    def __init__(self) -> None:
        self.wall = _wall_clock()
        self.steady = time.monotonic
        self.gmtime = time.gmtime
        self.strftime = time.strftime
        #: The last second formatted, and its text.
        self.last: tuple[int | None, str] = (None, "")


_REAL: Final = _RealTime()


def now() -> float:
    """Seconds since the epoch, from the real wall clock."""
    return _REAL.wall()


def monotonic() -> float:
    """The real monotonic clock (deadlines, durations)."""
    return _REAL.steady()


def utc_timestamp(when: float | None = None) -> str:
    """``when`` (default: now) as a UTC ``YYYY-MM-DDTHH:MM:SSZ`` string."""
    real = _REAL
    second = int(real.wall() if when is None else when)
    # Thousands of records share a second in a busy session: format each second once.
    if real.last[0] != second:
        real.last = (second, real.strftime("%Y-%m-%dT%H:%M:%SZ", real.gmtime(second)))
    return real.last[1]
