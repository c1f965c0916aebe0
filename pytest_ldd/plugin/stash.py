"""Where pytest-ldd keeps its state in pytest: the stash keys.

Per-run state lives in one session object (:class:`~pytest_ldd.plugin.session.LddSession`)
in the config's stash, and what a test's markers declare in the item's stash, never
in private attributes of pytest's objects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_ldd.plugin.markers import TestPlan
    from pytest_ldd.plugin.session import LddSession

__all__ = ["PLAN", "SESSION", "YIELD_TESTS"]

#: The session object of a pytest session (the config's stash).
SESSION: pytest.StashKey[LddSession] = pytest.StashKey()

#: A marked test's plan (the item's stash).
PLAN: pytest.StashKey[TestPlan] = pytest.StashKey()

#: Whether collection made a yield test (the config's stash).
YIELD_TESTS: pytest.StashKey[bool] = pytest.StashKey()
