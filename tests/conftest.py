"""Shared fixtures of the pytest-ldd test suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from backends import BACKEND_NAMES, Backend, make_backend

pytest_plugins = ["pytester"]


@pytest.fixture(params=BACKEND_NAMES)
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    """Each store backend in turn (PostgreSQL: see tests/backends.py)."""
    chosen = make_backend(request.param)
    yield chosen
    chosen.drop()


@pytest.fixture
def postgres() -> Iterator[Backend]:
    """The PostgreSQL backend alone, for what only a database has."""
    chosen = make_backend("postgres")
    yield chosen
    chosen.drop()
