"""The store backends the shared scenarios run on: the ``.ldd/`` folder and PostgreSQL.

A :class:`Backend` says how a test project points at its store.  The PostgreSQL one
uses the server named by ``LDD_TEST_POSTGRES_DSN`` (``.ci/run`` starts one) and a
project key of its own per test, so tests never see each other's rows: the
store's own per-project isolation.  Without the variable the PostgreSQL cases skip,
saying how to start a server; under ``CI=true`` they fail instead.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_ldd.store import Store, open_store

POSTGRES_ENV = "LDD_TEST_POSTGRES_DSN"
BACKEND_NAMES = ("files", "postgres")

HOW_TO_START = (
    f"{POSTGRES_ENV} is not set: start a throw-away server with "
    f'`eval "$(.ci/postgres start)"` (Debian\'s postgresql package; as root it runs as '
    f"the postgres user), or point {POSTGRES_ENV} at a database of your own"
)


def postgres_dsn() -> str:
    """The test server's DSN; skips without one (fails under ``CI=true``)."""
    dsn = os.environ.get(POSTGRES_ENV, "").strip()
    if dsn:
        return dsn
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI=true but {HOW_TO_START}", pytrace=False)
    pytest.skip(HOW_TO_START)


@dataclass
class Backend:
    """One backend for one test: where its store is and how a project selects it."""

    name: str
    url: str | None = None
    key: str | None = None

    @property
    def is_database(self) -> bool:
        return self.url is not None

    def open(self, project: Path) -> Store:
        """The test project's store."""
        return open_store(project, self.url, key=self.key)

    def pyproject(self, extra: str = "") -> str:
        """A pyproject.toml that selects this backend (``extra`` goes in [tool.ldd])."""
        lines = ["[tool.ldd]"]
        if self.is_database:
            lines += [f'store = "{self.url}"', f'project = "{self.key}"']
        return "\n".join(lines) + "\n" + extra

    def write_pyproject(self, project: Path, extra: str = "") -> None:
        (project / "pyproject.toml").write_text(self.pyproject(extra))

    def drop(self) -> None:
        """Remove the test's rows (nothing for the folder: tmp_path goes away)."""
        if self.is_database:
            from pytest_ldd.store.postgres import PostgresStore

            store = PostgresStore(str(self.url), key=self.key)
            try:
                store.drop_project()
            finally:
                store.close()


def make_backend(name: str) -> Backend:
    if name == "files":
        return Backend("files")
    return Backend("postgres", url=postgres_dsn(), key=f"test-{uuid.uuid4().hex[:12]}")
