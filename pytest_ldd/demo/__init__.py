"""``ldd demo``: watch metrics calibrate, get promoted and fail a run, in under a minute.

The demo copies a bundled example project (a scripted coding agent, hidden tests, a
cheap judge, recorded token usage and a price catalog) into a fresh folder and runs
its suite with ``python -m pytest --ldd`` several times, printing after each session
what the calibration did.  See ``docs/demo.md``.
"""

from __future__ import annotations

from pytest_ldd.demo.runner import (
    DEFAULT_FOLDER,
    DEFAULT_SESSIONS,
    MAX_SESSIONS,
    SESSION_ENV,
    main,
)

__all__ = ["DEFAULT_FOLDER", "DEFAULT_SESSIONS", "MAX_SESSIONS", "SESSION_ENV", "main"]
