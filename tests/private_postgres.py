"""A PostgreSQL server of a test's own, for what must stop or restart a server.

The shared test server (``LDD_TEST_POSTGRES_DSN``) serves every test run on the
machine at once: stopping it would break other runs.  A test that restarts, stops or
reconfigures a server starts a :class:`PrivateServer` instead: ``initdb`` in a
temporary folder, run as the ``postgres`` user when we are root (the server refuses
to run as root; ``setpriv``, as ``.ci/postgres`` does), on a free port of 127.0.0.1
and a unix socket in its folder, durability off.

Without PostgreSQL's programs the tests that need one skip, saying how to install
them; under ``CI=true`` they fail instead (CI installs them: ``.ci/postgres``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

__all__ = ["PrivateServer", "postgres_bindir", "require_psycopg"]

HOW_TO_INSTALL = (
    "PostgreSQL's programs (initdb, pg_ctl) are not installed: apt-get install "
    "postgresql (Debian), or put a bin folder holding them on PATH"
)


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def postgres_bindir() -> Path:
    """The folder of ``initdb`` and ``pg_ctl``; skips without one (fails under ``CI=true``)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=_version)
    if found:
        return found[-1].parent
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).parent
    if _in_ci():
        pytest.fail(f"CI=true but {HOW_TO_INSTALL}", pytrace=False)
    pytest.skip(HOW_TO_INSTALL)


def require_psycopg() -> None:
    """Skip without psycopg 3, the database store's driver (fail under ``CI=true``)."""
    if importlib.util.find_spec("psycopg") is not None:
        return
    reason = 'psycopg is not installed: pip install -e ".[postgres]"'
    if _in_ci():
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason)


def _version(path: Path) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in path.parent.parent.name.split("."))
    except ValueError:
        return (0,)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrivateServer:
    """A throw-away PostgreSQL server: :meth:`start`, :meth:`stop`, :meth:`restart`.

    ``dsn`` names its database ``ldd_test`` as the superuser ``postgres`` (trust
    authentication: nothing else can reach 127.0.0.1's port in a test).
    """

    def __init__(self) -> None:
        self.bindir = postgres_bindir()
        self.folder = Path(tempfile.mkdtemp(prefix="ldd-private-pg."))
        self.data = self.folder / "db"
        self.log = self.folder / "server.log"
        self.port = _free_port()
        self.running = False
        if os.geteuid() == 0:
            import pwd

            owner = pwd.getpwnam("postgres")
            os.chown(self.folder, owner.pw_uid, owner.pw_gid)
        self._run(
            "initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-instructions"
        )

    @property
    def dsn(self) -> str:
        """The URL of its test database."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/ldd_test"

    def url(self, user: str = "postgres", database: str = "ldd_test") -> str:
        """The URL of ``database`` as ``user``."""
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}"

    def _as_owner(self) -> list[str]:
        if os.geteuid() != 0:
            return []
        setpriv = shutil.which("setpriv")
        assert setpriv, "setpriv (util-linux) is needed to run PostgreSQL as its own user"
        return [setpriv, "--reuid=postgres", "--regid=postgres", "--init-groups"]

    def _run(self, program: str, *args: str, timeout: float = 120) -> str:
        command = [*self._as_owner(), str(self.bindir / program), *args]
        out = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, check=False
        )
        if out.returncode != 0:
            log = self.log.read_text() if self.log.exists() else ""
            msg = f"{program} failed ({out.returncode}): {out.stderr.strip()} {log[-2000:]}"
            raise RuntimeError(msg)
        return out.stdout

    def start(self) -> None:
        """Start the server (and create ``ldd_test`` the first time); wait until it serves."""
        options = (
            f"-k {self.folder} -c listen_addresses=127.0.0.1 -p {self.port} "
            "-c fsync=off -c max_connections=100"
        )
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60",
                  "-o", options, "start")  # fmt: skip
        self.running = True
        if not (self.folder / ".created").exists():
            self.psql("CREATE DATABASE ldd_test", database="postgres")
            (self.folder / ".created").write_text("")

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: end every session; ``immediate``: as a crash would)."""
        if self.running:
            self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")
            self.running = False

    def restart(self, down: float = 0.0, mode: str = "fast") -> None:
        """Stop, stay down ``down`` seconds, start again."""
        self.stop(mode)
        if down:
            time.sleep(down)
        self.start()

    def command(self, action: str, *options: str) -> list[str]:
        """The command line that runs ``pg_ctl ACTION`` on this server (as its owner),
        for a test session that restarts or stops it from inside a test."""
        return [
            *self._as_owner(), str(self.bindir / "pg_ctl"), "-D", str(self.data),
            "-l", str(self.log), "-w", "-t", "60", *options, action,
        ]  # fmt: skip

    def psql(self, sql: str, *, database: str = "ldd_test", user: str = "postgres") -> str:
        """Run ``sql`` through ``psql`` (over the unix socket); its output."""
        psql = shutil.which("psql") or str(self.bindir / "psql")
        out = subprocess.run(
            [psql, "-h", str(self.folder), "-p", str(self.port), "-U", user, "-d", database,
             "-v", "ON_ERROR_STOP=1", "-Atqc", sql],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        if out.returncode != 0:
            msg = f"psql failed: {out.stderr.strip()}"
            raise RuntimeError(msg)
        return out.stdout

    def terminate_sessions(self, database: str = "ldd_test") -> None:
        """End every client session of ``database`` (as an administrator's restart would)."""
        self.psql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            f"WHERE datname = '{database}' AND pid <> pg_backend_pid()",
            database="postgres",
        )

    def destroy(self) -> None:
        """Stop the server and remove its folder."""
        try:
            self.stop("immediate")
        finally:
            subprocess.run(["rm", "-rf", str(self.folder)], check=False)

