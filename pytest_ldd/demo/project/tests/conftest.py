"""Fixtures of the agent suite."""

from __future__ import annotations

import demo_agent  # the project's top folder
import pytest


@pytest.fixture(scope="session")
def session_number() -> int:
    """Which session of the demo script this run is (``LDD_DEMO_SESSION``, default 1)."""
    session: int = demo_agent.current_session()
    return session
