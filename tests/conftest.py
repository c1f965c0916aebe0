"""Shared fixtures of the pytest-ldd test suite."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest
from backends import BACKEND_NAMES, Backend, make_backend
from private_postgres import PrivateServer, require_psycopg
from realsuites import SUITES, shared_plain_outcomes

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


@pytest.fixture(scope="session")
def private_postgres() -> Iterator[PrivateServer]:
    """A PostgreSQL server of this test process's own, which tests may stop and restart.

    Never the shared server of ``LDD_TEST_POSTGRES_DSN``: other runs use that one.
    """
    require_psycopg()
    server = PrivateServer()
    try:
        server.start()
        yield server
    finally:
        server.destroy()


@pytest.fixture
def private_server(private_postgres: PrivateServer) -> Iterator[PrivateServer]:
    """The private server, running when the test starts and left running after it."""
    if not private_postgres.running:
        private_postgres.start()
    yield private_postgres
    if not private_postgres.running:
        private_postgres.start()


@pytest.fixture(scope="session")
def plain_suite(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], dict[str, str]]:
    """Plain pytest's outcomes of a shipped real suite by name, run once per session.

    Under xdist the cache is the folder all workers' base folders share, so that a
    suite several tests compare against runs once in all, not once per test.
    """
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    cache = root / "plain-suites"
    return lambda name: shared_plain_outcomes(SUITES[name], cache)


@pytest.fixture(autouse=True)
def _outside_github_actions(monkeypatch: pytest.MonkeyPatch) -> None:
    """The projects this suite runs never annotate, nor write the job summary of, a CI
    job that runs the suite itself on GitHub Actions; the tests of those outputs set
    the variables they need."""
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE"):
        monkeypatch.delenv(name, raising=False)
