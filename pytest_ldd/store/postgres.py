"""The PostgreSQL store: one database for a fleet of recording sessions and projects.

Chosen by a ``postgresql://`` (or ``postgres://``) URL; needs psycopg 3 (``pip
install "pytest-ldd[postgres]"``), imported only here.  Every row carries the
project's key (``[tool.ldd] project``), so projects sharing a database never see
each other.

Tables (created and migrated by the plugin under an advisory lock, see
:data:`SCHEMA_VERSION` and ``docs/store.md``):

- ``ldd_schema``: one row, the schema version;
- ``ldd_projects``: one row per project, the last sequence number of each log;
- ``ldd_pairs`` / ``ldd_observations`` / ``ldd_sessions``: the logs, one row per
  record, numbered per project (``seq``) and holding the record's JSON line as the
  file store writes it (``ldd store export`` writes the very lines back);
- ``ldd_registry``: one row per project, the registry document (``metrics.json``).

**Commit-ordered numbering.**  An append is one statement: it bumps the project's
counters in ``ldd_projects`` and inserts the rows numbered from them.  The row lock
on the project's counter row is held until commit, so a second writer gets its
numbers only after the first committed: numbers are handed out in commit order, and
every snapshot sees a gap-free prefix of each log.  A reader's position (a
:class:`SeqCursor`, the last number counted) therefore never skips a pair that
commits late, the flaw of positions taken from a plain sequence.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time
import weakref
import zlib
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast, final

from pytest_ldd.errors import (
    InvalidObservationError,
    InvalidSpecError,
    StoreCorruptError,
    StoreUnavailableError,
)
from pytest_ldd.model import clock
from pytest_ldd.model.records import (
    PairError,
    check_line,
    check_pair_line,
    encode_records,
    pair_error,
)
from pytest_ldd.store.document import (
    check_document,
    document_text,
    parse_document,
    reject_constant,
)
from pytest_ldd.store.location import check_project_key, masked
from pytest_ldd.store.protocol import SAMPLE_LINES, Cursor, LogExcerpt, LogName, PairRead

if TYPE_CHECKING:
    import psycopg

__all__ = ["DB_SCHEMA_VERSION", "PostgresStore", "SeqCursor"]

#: The version of the tables this code creates and reads.
DB_SCHEMA_VERSION: Final = 1

#: The first key of every advisory lock taken here (the second is the project's).
_LOCK_SPACE: Final = 0x1DD0
#: The advisory lock serializing schema creation and migration.
_SCHEMA_LOCK: Final = (_LOCK_SPACE, 0)

DEFAULT_LOCK_TIMEOUT: Final = 120.0

#: The flush policy of test appends: committed once this many tests are buffered...
FLUSH_TESTS: Final = 50
#: ... or once the oldest buffered test waited this long (checked at each append).
FLUSH_SECONDS: Final = 1.0

#: A connection lost after it once worked is opened again after each of these waits
#: (seconds; 6.3 s in all, plus up to :data:`CONNECT_TIMEOUT` per attempt): a
#: restarted server is back well within them.  After the last, the operation fails
#: with :class:`~pytest_ldd.errors.StoreUnavailableError`.
RECONNECT_DELAYS: Final = (0.1, 0.2, 0.4, 0.8, 1.6, 3.2)
#: Seconds one attempt to connect may take.
CONNECT_TIMEOUT: Final = 5
#: After a commit of buffered test appends failed so, the next attempt waits this
#: long (seconds): a session goes on testing (and buffering) while the store is out.
RETRY_AFTER: Final = 5.0
#: The ``error`` column of a pair stored as raw values (the reference tool's lines):
#: no error can be told without the metric's spec, so the reader normalizes the line
#: itself, as the file store's reader does (:func:`pytest_ldd.model.records.pair_error`).
RAW_ERROR: Final = -1.0

_T = TypeVar("_T")

_TABLES: Final[Mapping[str, str]] = {
    "pairs": "ldd_pairs",
    "observations": "ldd_observations",
    "sessions": "ldd_sessions",
}
_ALL_TABLES: Final = (
    "ldd_schema",
    "ldd_projects",
    "ldd_pairs",
    "ldd_observations",
    "ldd_sessions",
    "ldd_registry",
)
_COUNTERS: Final[Mapping[str, str]] = {
    "pairs": "pair_seq",
    "observations": "observation_seq",
    "sessions": "session_seq",
}

_CREATE: Final = """
CREATE TABLE IF NOT EXISTS ldd_schema (
    id integer PRIMARY KEY CHECK (id = 1),
    version integer NOT NULL
);
CREATE TABLE IF NOT EXISTS ldd_projects (
    project text PRIMARY KEY,
    pair_seq bigint NOT NULL DEFAULT 0,
    observation_seq bigint NOT NULL DEFAULT 0,
    session_seq bigint NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS ldd_pairs (
    project text NOT NULL REFERENCES ldd_projects (project),
    seq bigint NOT NULL,
    metric_name text NOT NULL,
    metric_version integer NOT NULL,
    error double precision NOT NULL,
    line text NOT NULL,
    PRIMARY KEY (project, seq)
);
CREATE TABLE IF NOT EXISTS ldd_observations (
    project text NOT NULL REFERENCES ldd_projects (project),
    seq bigint NOT NULL,
    line text NOT NULL,
    PRIMARY KEY (project, seq)
);
CREATE TABLE IF NOT EXISTS ldd_sessions (
    project text NOT NULL REFERENCES ldd_projects (project),
    seq bigint NOT NULL,
    line text NOT NULL,
    PRIMARY KEY (project, seq)
);
CREATE TABLE IF NOT EXISTS ldd_registry (
    project text PRIMARY KEY REFERENCES ldd_projects (project),
    doc bytea NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
"""

# One statement per append: the counters of the project's row move, and the rows
# are numbered from them, in one implicit transaction.  The rows travel as two JSON
# arrays (one parameter each): the driver's own array adapters cost more per test
# than the rest of the append.
_APPEND: Final = """
WITH c AS (
    UPDATE ldd_projects
       SET pair_seq = pair_seq + %(np)s, observation_seq = observation_seq + %(no)s
     WHERE project = %(project)s
 RETURNING pair_seq - %(np)s AS p0, observation_seq - %(no)s AS o0
), p AS (
    INSERT INTO ldd_pairs (project, seq, metric_name, metric_version, error, line)
    SELECT %(project)s, c.p0 + t.ord, t.item->>0, (t.item->>1)::integer,
           (t.item->>2)::float8, t.item->>3
      FROM c, jsonb_array_elements(%(pairs)s::jsonb) WITH ORDINALITY AS t(item, ord)
), o AS (
    INSERT INTO ldd_observations (project, seq, line)
    SELECT %(project)s, c.o0 + t.ord, t.line
      FROM c, jsonb_array_elements_text(%(observations)s::jsonb) WITH ORDINALITY AS t(line, ord)
)
SELECT c.p0, c.o0 FROM c
"""

_APPEND_SESSIONS: Final = """
WITH c AS (
    UPDATE ldd_projects SET session_seq = session_seq + %(n)s
     WHERE project = %(project)s
 RETURNING session_seq - %(n)s AS s0
)
INSERT INTO ldd_sessions (project, seq, line)
SELECT %(project)s, c.s0 + t.ord, t.line
  FROM c, unnest(%(lines)s::text[]) WITH ORDINALITY AS t(line, ord)
"""


@final
@dataclass(frozen=True, slots=True, order=True)
class SeqCursor:
    """A position in one of a project's logs: the last sequence number read (0: none)."""

    seq: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.seq, int) or isinstance(self.seq, bool) or self.seq < 0:
            msg = f"SeqCursor 'seq' must be an int >= 0 (got {self.seq!r})"
            raise ValueError(msg)


def _seq_cursor(cursor: object) -> SeqCursor:
    if not isinstance(cursor, SeqCursor):
        msg = f"a PostgreSQL store reads its own positions (SeqCursor), not {cursor!r}"
        raise TypeError(msg)
    return cursor


def _import_psycopg(url: str) -> Any:
    try:
        import psycopg
    except ImportError:
        msg = (
            f"store {masked(url)!r} needs psycopg 3, which is not installed: "
            f'pip install "pytest-ldd[postgres]"'
        )
        raise InvalidSpecError(msg) from None
    return psycopg


class PostgresStore:
    """A project's history in a PostgreSQL database (see the module docstring).

    Nothing is created until the first write: the tables then, under the schema
    advisory lock, and the project's row.  Reading a database without the tables or
    the project reads as an empty store.

    A connection lost after it once worked (the server restarted, an administrator
    ended the session) is opened again, waiting :data:`RECONNECT_DELAYS` between the
    attempts; test appends stay buffered until a commit stores them (see
    :meth:`append_lines`), and what could not be stored is handed over by
    :meth:`take_unsaved`, never dropped.
    """

    def __init__(
        self, url: str, *, key: str | None, lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    ) -> None:
        self.url = url
        if key is None:
            msg = (
                f"store {masked(url)!r} is a database shared by projects: set "
                f'[tool.ldd] project = "name" in pyproject.toml (the key every row of '
                f"this project carries)"
            )
            raise InvalidSpecError(msg)
        self.key = check_project_key(key)
        self.lock_timeout = lock_timeout
        self._psycopg = _import_psycopg(url)
        self._conn: psycopg.Connection[Any] | None = None
        self._pid = 0
        #: Whether a connection ever worked: only then is a failed one opened again
        #: (a wrong host or password fails at once, it does not come back).
        self._reachable = False
        self._guard = threading.RLock()
        self._depth = 0
        #: Inside :meth:`atomic`: one database transaction, nothing retried within.
        self._atomic = False
        self._ready = False  # the tables and the project's row are known to exist
        self._lock_key = (_LOCK_SPACE, _signed32(zlib.crc32(self.key.encode("utf-8"))))
        #: Test appends not committed yet (see :meth:`append_lines`), and the process
        #: they belong to (a forked child never commits its parent's).
        self._pending: tuple[list[str], list[str], list[PairError]] = ([], [], [])
        self._pending_tests = 0
        self._pending_since = 0.0
        self._pending_pid = os.getpid()
        #: Before this time (monotonic) test appends only buffer: the last attempt to
        #: commit them failed after every reconnection attempt.
        self._retry_at = 0.0
        #: The highest sequence numbers this store saw committed (pairs, observations):
        #: an append whose outcome a lost connection hid is looked for past them.
        self._seen = (0, 0)

    @classmethod
    def from_url(cls, url: str, *, project: Path, key: str | None = None) -> PostgresStore:
        """The store of a ``postgresql://`` URL for the project key ``key``."""
        del project
        return cls(url, key=key)

    def __repr__(self) -> str:
        return f"PostgresStore({self.location!r})"

    @property
    def location(self) -> str:
        """The URL with its password masked, and the project key after ``#``."""
        return f"{masked(self.url)}#{self.key}"

    @property
    def registry_location(self) -> str:
        """Where the registry document is: the project's ``ldd_registry`` row."""
        return f"{self.location} (table ldd_registry)"

    # ------------------------------------------------------------------ connection

    def _connection(self) -> psycopg.Connection[Any]:
        pid = os.getpid()
        conn = self._conn
        if conn is not None and self._pid == pid and not conn.closed:
            return conn
        if conn is not None and self._pid != pid:
            # Inherited through fork: the socket is the parent's; never close it here.
            _INHERITED.append(conn)
        self._conn, self._ready, self._depth = None, False, 0
        conn = cast(
            "psycopg.Connection[Any]",
            self._psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT),
        )
        self._conn, self._pid, self._reachable = conn, pid, True
        return conn

    def _drop_connection(self) -> None:
        conn, self._conn, self._ready = self._conn, None, False
        if conn is not None and self._pid == os.getpid():
            with suppress(Exception):
                conn.close()

    def _error(self, err: Exception, action: str) -> StoreCorruptError:
        text = str(err).strip().replace("\n", " ")
        password = _password(self.url)
        if password:
            text = text.replace(password, "***")
        msg = f"cannot {action} the store {self.location}: {masked(text)}"
        return StoreCorruptError(msg, path=self.location)

    def _lost(self, err: Exception) -> bool:
        """Whether ``err`` says the connection is gone (and a new one may work)."""
        if not isinstance(err, self._psycopg.OperationalError) or not self._reachable:
            return False
        conn = self._conn
        gone = self._psycopg.errors
        return (
            conn is None
            or conn.closed
            or conn.broken
            or isinstance(err, (gone.AdminShutdown, gone.CrashShutdown, gone.CannotConnectNow))
        )

    def _run(
        self,
        action: str,
        operation: Callable[[psycopg.Connection[Any], bool], _T],
        *,
        flush: bool = True,
    ) -> _T:
        """``operation(connection, retried)`` with database failures as clear errors.

        Buffered appends are committed first (``flush``), so whatever follows (a
        read, the lock, another append) sees them, in order.  A connection lost
        after it once worked is opened again, after each of the waits of
        :data:`RECONNECT_DELAYS`, and ``operation`` runs again (``retried``: it may
        have run before, its outcome unknown) — unless the store's lock or an
        :meth:`atomic` transaction was held on it, which a new connection does not
        hold: that is an error.  After the last attempt:
        :class:`~pytest_ldd.errors.StoreUnavailableError`.
        """
        with self._guard:
            if flush and self._pending_tests:
                self.flush()
            delays = iter(RECONNECT_DELAYS)
            retried = False
            started = clock.monotonic()
            while True:
                try:
                    return operation(self._connection(), retried)
                except self._psycopg.Error as err:
                    if not self._lost(err):
                        raise self._error(err, action) from None
                    held = self._depth > 0 or self._atomic
                    self._drop_connection()
                    if held:
                        what = "transaction" if self._atomic else "lock"
                        msg = (
                            f"lost the connection to the store {self.location} while "
                            f"holding its {what} ({masked(str(err).strip())}): nothing of "
                            f"the interrupted work was kept; run it again"
                        )
                        raise StoreCorruptError(msg, path=self.location) from None
                    delay = next(delays, None)
                    if delay is None:
                        raise self._unavailable(err, action, clock.monotonic() - started) from None
                    time.sleep(delay)
                    retried = True

    def _unavailable(self, err: Exception, action: str, waited: float) -> StoreUnavailableError:
        observations, pairs, _ = self._pending
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        msg = (
            f"cannot {action} the store {self.location}: the connection was lost and "
            f"{len(RECONNECT_DELAYS)} attempts to open it again failed over {waited:.1f} s "
            f"({masked(detail)})"
        )
        return StoreUnavailableError(
            msg, path=self.location, pairs=len(pairs), observations=len(observations)
        )

    def flush(self) -> None:
        """Commit the buffered test appends now (one statement).

        The buffer is emptied only once the commit succeeded: a store that cannot
        be reached raises :class:`~pytest_ldd.errors.StoreUnavailableError` and keeps
        every line for a later attempt (or :meth:`take_unsaved`).
        """
        with self._guard:
            if self._pending_pid != os.getpid():
                # Inherited through fork: the parent commits these, not this child.
                self._forget_pending()
            if not self._pending_tests:
                return
            observations, pairs, errors = self._pending
            self._append(observations, pairs, errors)
            self._forget_pending()
            self._retry_at = 0.0

    def _forget_pending(self) -> None:
        self._pending = ([], [], [])
        self._pending_tests = 0
        self._pending_pid = os.getpid()
        _PENDING.discard(self)

    def take_unsaved(self) -> tuple[list[str], list[str]]:
        """The buffered observation and pair lines no commit has stored, handed over
        and forgotten (the caller keeps them: ``docs/store.md``, a spill folder)."""
        with self._guard:
            if self._pending_pid != os.getpid():
                self._forget_pending()
            observations, pairs, _ = self._pending
            self._forget_pending()
            return list(observations), list(pairs)

    def _schema_state(self, conn: psycopg.Connection[Any]) -> int | None:
        """The schema version, or None when there are no tables at all.

        Tables without their ``ldd_schema`` row are a named error: a reader would
        otherwise take a store holding pairs for an empty one.
        """
        found = conn.execute(
            "SELECT c.relname FROM pg_class c "
            "WHERE c.relname = ANY(%s) AND c.relkind = 'r' AND pg_table_is_visible(c.oid)",
            (list(_ALL_TABLES),),
        ).fetchall()
        present = {str(name) for (name,) in found}
        if not present:
            return None
        row = None
        if "ldd_schema" in present:
            row = conn.execute("SELECT version FROM ldd_schema WHERE id = 1").fetchone()
        if row is None:
            missing = "its row" if "ldd_schema" in present else "the table"
            msg = (
                f"the store {self.location} holds pytest-ldd's tables "
                f"({', '.join(sorted(present))}) but not the schema version (ldd_schema: "
                f"{missing} is missing): it was edited by hand or half-restored; restore "
                f"the row (INSERT INTO ldd_schema VALUES (1, {DB_SCHEMA_VERSION})) once "
                f"the tables are known to be pytest-ldd's, or restore the database"
            )
            raise StoreCorruptError(msg, path=self.location)
        version = int(row[0])
        self._check_version(version)
        if present != set(_ALL_TABLES):
            missing_tables = sorted(set(_ALL_TABLES) - present)
            msg = (
                f"the store {self.location} lacks the tables {', '.join(missing_tables)} "
                f"of schema version {version}: it was edited by hand or half-restored"
            )
            raise StoreCorruptError(msg, path=self.location)
        return version

    def _check_version(self, version: int) -> None:
        if version > DB_SCHEMA_VERSION:
            msg = (
                f"the store {self.location} has schema_version {version}, written by a "
                f"newer pytest-ldd (this one reads up to {DB_SCHEMA_VERSION}): upgrade "
                f"pytest-ldd"
            )
            raise StoreCorruptError(msg, path=self.location)

    def _prepare(self, conn: psycopg.Connection[Any]) -> None:
        """Make sure the tables and the project's row exist, on ``conn``.

        The tables are looked for first: a role with rights on the tables but not
        CREATE on the schema records into tables someone else created, without DDL.
        """
        if self._ready:
            return
        if self._schema_state(conn) is None:
            with conn.transaction():
                # Concurrent CREATE TABLE IF NOT EXISTS can still collide: one at a time.
                conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", _SCHEMA_LOCK)
                if self._schema_state(conn) is None:
                    conn.execute(_CREATE)
                    conn.execute(
                        "INSERT INTO ldd_schema (id, version) VALUES (1, %s)",
                        (DB_SCHEMA_VERSION,),
                    )
                # Later versions migrate here, step by step, under the same lock.
        conn.execute(
            "INSERT INTO ldd_projects (project) VALUES (%s) ON CONFLICT DO NOTHING",
            (self.key,),
        )
        self._ready = True

    def ensure_schema(self) -> None:
        """Create or migrate the tables and the project's row (safe to run concurrently)."""
        self._run("create the tables of", lambda conn, _: self._prepare(conn), flush=False)

    def _readable(self, conn: psycopg.Connection[Any]) -> bool:
        """Whether the tables exist (reads of a database without them read nothing)."""
        return self._ready or self._schema_state(conn) is not None

    def exists(self) -> bool:
        """Whether this project has a row in the database."""

        def read(conn: psycopg.Connection[Any], _: bool) -> bool:
            if not self._readable(conn):
                return False
            row = conn.execute(
                "SELECT 1 FROM ldd_projects WHERE project = %s", (self.key,)
            ).fetchone()
            return row is not None

        return self._run("read", read)

    # ------------------------------------------------------------------ the lock

    @contextmanager
    def lock(self) -> Iterator[None]:
        """The project's advisory lock, held by this process's connection (re-entrant).

        Waiting longer than ``lock_timeout`` seconds raises :class:`StoreCorruptError`;
        so does losing the connection while it is held (the lock goes with it).
        """
        with self._guard:
            if self._depth == 0:
                self._run("lock", self._take_lock)
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0 and self._conn is not None and not self._conn.closed:
                    with suppress(self._psycopg.Error):
                        self._conn.execute("SELECT pg_advisory_unlock(%s, %s)", self._lock_key)

    def _take_lock(self, conn: psycopg.Connection[Any], _: bool) -> None:
        self._prepare(conn)
        deadline = clock.monotonic() + self.lock_timeout
        while True:
            row = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", self._lock_key).fetchone()
            if row and row[0]:
                return
            if clock.monotonic() >= deadline:
                msg = (
                    f"could not lock the store {self.location} within "
                    f"{self.lock_timeout:g} s: another session holds it (a hung "
                    f"pytest or ldd command?); stop it and retry"
                )
                raise StoreCorruptError(msg, path=self.location)
            time.sleep(0.01)

    def read_lock(self) -> AbstractContextManager[None]:
        """Nothing: every read is one consistent snapshot of committed appends."""
        return nullcontext()

    @contextmanager
    def atomic(self) -> Iterator[PostgresStore]:
        """One database transaction under the store's lock: every write in it is
        committed together at the end, or none is (an error rolls all back)."""
        with self.lock(), self._guard:
            self.flush()
            conn = self._connection()
            if self._atomic:
                yield self
                return
            try:
                with conn.transaction():
                    self._atomic = True
                    try:
                        yield self
                    finally:
                        self._atomic = False
            except self._psycopg.Error as err:
                raise self._error(err, "commit to") from None

    # ------------------------------------------------------------------ registry

    def read_registry_bytes(self) -> bytes | None:
        """The project's registry document, or None."""

        def read(conn: psycopg.Connection[Any], _: bool) -> bytes | None:
            if not self._readable(conn):
                return None
            row = conn.execute(
                "SELECT doc FROM ldd_registry WHERE project = %s", (self.key,)
            ).fetchone()
            return None if row is None else bytes(row[0])

        return self._run("read", read)

    def parse_registry(self, data: bytes) -> dict[str, Any]:
        """Parse and check the document (the shape of ``metrics.json``)."""
        return parse_document(data, self.registry_location, path=self.location)

    def replace_registry(self, doc: Mapping[str, Any]) -> bytes:
        """Replace the document in one statement; return the bytes stored."""
        check_document(doc, self.registry_location)
        try:
            payload = document_text(doc).encode("utf-8")
        except (TypeError, ValueError) as err:
            msg = f"registry document for {self.registry_location} is not valid JSON: {err}"
            raise StoreCorruptError(msg, path=self.location) from err

        def write(conn: psycopg.Connection[Any], _: bool) -> None:
            self._prepare(conn)
            conn.execute(
                "INSERT INTO ldd_registry (project, doc) VALUES (%s, %s) "
                "ON CONFLICT (project) DO UPDATE SET doc = EXCLUDED.doc, updated_at = now()",
                (self.key, payload),
            )

        self._run("write the registry of", write)
        return payload

    # ------------------------------------------------------------------ appends

    def append_pairs(self, records: Sequence[Mapping[str, Any]], *, fsync: bool = False) -> None:
        """Append pairs (committed when this returns)."""
        lines = _encode(records, "pairs")
        errors = [_pair_error(r, i) for i, r in enumerate(records)]
        self.flush()  # in order after the buffered test appends
        self._append([], lines, errors)

    def append_observations(
        self, records: Sequence[Mapping[str, Any]], *, fsync: bool = False
    ) -> None:
        """Append observations (committed when this returns)."""
        lines = _encode(records, "observations")
        self.flush()
        self._append(lines, [], [])

    def append_sessions(
        self, records: Sequence[Mapping[str, Any]], *, fsync: bool = False
    ) -> None:
        """Append session records (committed when this returns)."""
        lines = _encode(records, "sessions")
        if not lines:
            return

        def append(conn: psycopg.Connection[Any], retried: bool) -> None:
            self._prepare(conn)
            if retried and self._stored_already(conn, "sessions", lines, 0):
                return
            conn.execute(_APPEND_SESSIONS, {"n": len(lines), "project": self.key, "lines": lines})

        self._run("append to", append)

    def append_lines(
        self,
        observations: Sequence[str],
        pairs: Sequence[str],
        errors: Sequence[PairError] | None = None,
    ) -> None:
        """Buffer a test's encoded lines; commit every :data:`FLUSH_TESTS` tests.

        The buffer is also committed once its oldest test waited
        :data:`FLUSH_SECONDS` (checked at the next append), before any other use of
        the store, by :meth:`sync` and :meth:`close`, and at interpreter exit.  A
        commit that fails for want of a connection keeps the buffer: test appends go
        on buffering, and the next attempt waits :data:`RETRY_AFTER` seconds (a
        later :meth:`sync` raises if the store is still out of reach).
        """
        if errors is None or len(errors) != len(pairs):
            errors = [_pair_error(json.loads(text), i) for i, text in enumerate(pairs)]
        if not observations and not pairs:
            return
        with self._guard:
            if self._pending_pid != os.getpid():
                self._forget_pending()
            if not self._pending_tests:
                self._pending_since = clock.monotonic()
                _PENDING.add(self)
            held_obs, held_pairs, held_errors = self._pending
            held_obs += observations
            held_pairs += pairs
            held_errors += errors
            self._pending_tests += 1
            now = clock.monotonic()
            due = (
                self._pending_tests >= FLUSH_TESTS or now - self._pending_since >= FLUSH_SECONDS
            )
            if due and now >= self._retry_at:
                try:
                    self.flush()
                except StoreUnavailableError:
                    self._retry_at = clock.monotonic() + RETRY_AFTER

    def _append(
        self, observations: list[str], pairs: list[str], errors: Sequence[PairError]
    ) -> None:
        if not observations and not pairs:
            return
        rows = [
            [name, version, error if type(error) is float else RAW_ERROR, line]
            for (name, version, error), line in zip(errors, pairs, strict=True)
        ]
        params = {
            "project": self.key,
            "np": len(pairs),
            "no": len(observations),
            "pairs": _JSON_ARRAY(rows),
            "observations": _JSON_ARRAY(observations),
        }

        def append(conn: psycopg.Connection[Any], retried: bool) -> None:
            self._prepare(conn)
            if retried:
                log: LogName = "pairs" if pairs else "observations"
                seen = self._seen[0] if pairs else self._seen[1]
                if self._stored_already(conn, log, pairs or observations, seen):
                    return
            row = conn.execute(_APPEND, params).fetchone()
            if row is None:  # pragma: no cover - the project row was removed meanwhile
                self._ready = False
                msg = f"the project {self.key!r} vanished from the store {self.location}"
                raise StoreCorruptError(msg, path=self.location)
            self._seen = (int(row[0]) + len(pairs), int(row[1]) + len(observations))

        self._run("append to", append, flush=False)

    def _stored_already(
        self, conn: psycopg.Connection[Any], log: LogName, lines: Sequence[str], past: int
    ) -> bool:
        """Whether ``lines`` were committed by an attempt whose answer a lost
        connection swallowed: all of them are numbered past ``past``, or none is."""
        row = conn.execute(
            f"SELECT count(*) FROM {_TABLES[log]} "
            "WHERE project = %s AND seq > %s AND line = ANY(%s)",
            (self.key, past, list(set(lines))),
        ).fetchone()
        found = 0 if row is None else int(row[0])
        if found == 0:
            return False
        if found >= len(lines):
            return True
        msg = (
            f"the store {self.location}: after a lost connection {found} of {len(lines)} "
            f"{log} of an append were found stored; an append is one statement, so this "
            f"means other writers logged the very same lines: not appending them again"
        )
        raise StoreCorruptError(msg, path=self.location)

    # ------------------------------------------------------------------ reads

    def origin(self) -> SeqCursor:
        """Before the first pair."""
        return SeqCursor()

    def _last(self, conn: psycopg.Connection[Any], log: LogName) -> int:
        row = conn.execute(
            f"SELECT {_COUNTERS[log]} FROM ldd_projects WHERE project = %s",
            (self.key,),
        ).fetchone()
        return 0 if row is None else int(row[0])

    def read_pairs(
        self, cursors: Collection[Cursor], *, recount: bool = False
    ) -> Iterator[PairRead]:
        """The pairs numbered past the earliest cursor, one step per pair.

        A cursor past the last number means pairs were deleted: an error.  With
        ``recount`` each error is computed from the stored line itself.
        """
        if not cursors:
            return iter(())
        mine = [_seq_cursor(c) for c in cursors]
        begin, ahead = min(mine).seq, max(mine).seq

        def read(conn: psycopg.Connection[Any], _: bool) -> tuple[list[tuple[Any, ...]], int]:
            if not self._readable(conn):
                return [], 0
            query = _RECOUNT if recount else _COUNT
            if self._atomic:
                # Inside the import's transaction: its own snapshot already.
                last = self._last(conn, "pairs")
                rows = conn.execute(query, (self.key, begin)).fetchall() if ahead <= last else []
                return rows, last
            with conn.transaction():
                # One snapshot: the counter and the rows agree.
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                last = self._last(conn, "pairs")
                rows = conn.execute(query, (self.key, begin)).fetchall() if ahead <= last else []
            return rows, last

        rows, last = self._run("read", read)
        if ahead > last:
            msg = (
                f"the store {self.location} holds {last} pairs, fewer than the position "
                f"its statistics were counted up to ({ahead}): pairs were deleted (delete "
                f"the project's ldd_registry row too to start the statistics afresh)"
            )
            raise StoreCorruptError(msg, path=self.location)
        return _steps(rows, recount=recount, where=self.location)

    def iter_log(
        self, log: LogName, *, start: Cursor | None = None
    ) -> Iterator[tuple[dict[str, Any] | None, SeqCursor]]:
        """A log's records from ``start`` as ``(record, position after it)``."""
        records, _ = self._rows(log, start)
        return iter(records)

    def read_log(
        self, log: LogName, *, start: Cursor | None = None
    ) -> tuple[list[dict[str, Any]], SeqCursor]:
        """A log's records from ``start``, and the position after the last one."""
        rows, end = self._rows(log, start)
        return [record for record, _ in rows if record is not None], end

    def read_excerpt(
        self, log: LogName, *, budget: int | None = None, samples: int = SAMPLE_LINES
    ) -> LogExcerpt:
        """Every record of ``log``: a database log is read whole, whatever the budget."""
        del budget, samples
        records, _ = self.read_log(log)
        return LogExcerpt(records)

    def read_lines(self, log: LogName) -> list[tuple[int, str]]:
        """A log's ``(seq, JSON line)`` rows, in order (what export writes)."""
        table = _TABLES[log]

        def read(conn: psycopg.Connection[Any], _: bool) -> list[tuple[int, str]]:
            if not self._readable(conn):
                return []
            cur = conn.execute(
                f"SELECT seq, line FROM {table} WHERE project = %s ORDER BY seq",
                (self.key,),
            )
            return [(int(seq), str(line)) for seq, line in cur]

        return self._run("read", read)

    def _rows(
        self, log: LogName, start: Cursor | None
    ) -> tuple[list[tuple[dict[str, Any] | None, SeqCursor]], SeqCursor]:
        """A log's records past ``start``, each checked as the file store checks a line."""
        first = SeqCursor() if start is None else _seq_cursor(start)
        table = _TABLES[log]

        def read(conn: psycopg.Connection[Any], _: bool) -> list[tuple[Any, ...]]:
            if not self._readable(conn):
                return []
            return conn.execute(
                f"SELECT seq, line FROM {table} WHERE project = %s AND seq > %s ORDER BY seq",
                (self.key, first.seq),
            ).fetchall()

        out: list[tuple[dict[str, Any] | None, SeqCursor]] = []
        end = first
        validate = check_line[log]
        for seq, line in self._run("read", read):
            end = SeqCursor(int(seq))
            record = _parse(line, self.location, log, end.seq)
            _validate(record, validate, self.location, log, end.seq)
            out.append((record, end))
        return out, end

    def position_json(self, start: Cursor, end: Cursor) -> dict[str, Any]:
        """``{"start_seq": .., "end_seq": ..}``: the pairs counted, by number."""
        return {"start_seq": _seq_cursor(start).seq, "end_seq": _seq_cursor(end).seq}

    def position_from_json(self, data: Mapping[str, Any]) -> tuple[SeqCursor, SeqCursor]:
        """Read :meth:`position_json`'s keys back."""
        return SeqCursor(data["start_seq"]), SeqCursor(data["end_seq"])

    def sync(self, logs: Iterable[LogName] | None = None) -> None:
        """Commit the buffered test appends (every other append is committed already).

        :class:`~pytest_ldd.errors.StoreUnavailableError` when the store cannot be
        reached: the buffer is kept (:meth:`take_unsaved`).
        """
        self.flush()

    def close(self) -> None:
        """Commit what is buffered and close the connection (the next use opens one).

        A buffer that cannot be committed (the store out of reach) stays buffered,
        for a later use, :meth:`take_unsaved`, or the attempt at interpreter exit.
        """
        with self._guard:
            conn = self._conn
            if conn is not None and self._pid == os.getpid():
                if self._depth:
                    return  # the lock is held: closing would release it
                with suppress(StoreUnavailableError):
                    self.flush()
                conn.close()
            self._conn = None
            self._ready = False

    def __del__(self) -> None:
        # Interpreter shutdown, a dead server: nothing left to release.
        with suppress(Exception):
            self.close()

    # ------------------------------------------------------------------ bulk (ldd store)

    def drop_project(self) -> None:
        """Delete every row of this project (the test suite's and ``import``'s clean slate)."""

        def drop(conn: psycopg.Connection[Any], _: bool) -> None:
            if not self._readable(conn):
                return
            with conn.transaction():
                for table in ("ldd_registry", *_TABLES.values()):
                    conn.execute(f"DELETE FROM {table} WHERE project = %s", (self.key,))
                conn.execute("DELETE FROM ldd_projects WHERE project = %s", (self.key,))
            self._ready = False

        self._run("delete from", drop)


_JSON_ARRAY: Final = json.JSONEncoder(
    separators=(",", ":"), allow_nan=False, ensure_ascii=False
).encode

#: Connections inherited through fork: kept referenced, never closed by the child.
_INHERITED: list[Any] = []

#: Stores holding buffered appends, committed at interpreter exit at the latest.
_PENDING: weakref.WeakSet[PostgresStore] = weakref.WeakSet()


@atexit.register
def _flush_at_exit() -> None:
    for store in list(_PENDING):
        try:
            store.flush()
        except Exception as err:  # said, never silent, never a traceback
            observations, pairs = store.take_unsaved()
            sys.stderr.write(
                f"pytest-ldd: {len(pairs)} pairs and {len(observations)} observations "
                f"buffered for {store.location} could not be stored at exit: "
                f"{masked(str(err))}\n"
            )

_COUNT: Final = (
    "SELECT seq, metric_name, metric_version, error, "
    "CASE WHEN error < 0 THEN line END FROM ldd_pairs "
    "WHERE project = %s AND seq > %s ORDER BY seq"
)
_RECOUNT: Final = "SELECT seq, line FROM ldd_pairs WHERE project = %s AND seq > %s ORDER BY seq"


def _steps(rows: Sequence[tuple[Any, ...]], *, recount: bool, where: str) -> Iterator[PairRead]:
    for row in rows:
        seq = int(row[0])
        if recount or row[4] is not None:
            # The stored line itself: a recount, or a line of raw values.
            record = _parse(row[1] if recount else row[4], where, "pairs", seq)
            _validate(record, check_pair_line, where, "pairs", seq)
            item: PairError = pair_error(record, f"{where}: pair {seq}")
        else:
            item = (row[1], int(row[2]), float(row[3]))
        yield SeqCursor(seq - 1), (item,), SeqCursor(seq)


def _parse(line: str, where: str, log: str, seq: int) -> dict[str, Any]:
    try:
        record = json.loads(line, parse_constant=reject_constant)
    except ValueError as err:
        msg = f"{where}: {log} record {seq} is not valid JSON ({err})"
        raise StoreCorruptError(msg, path=where) from None
    if not isinstance(record, dict):
        msg = f"{where}: {log} record {seq} is not a JSON object"
        raise StoreCorruptError(msg, path=where)
    return record


def _validate(
    record: dict[str, Any],
    validate: Callable[[dict[str, Any]], None],
    where: str,
    log: str,
    seq: int,
) -> None:
    """A stored record checked as the file store checks a line (a named error)."""
    try:
        validate(record)
    except KeyError as err:
        msg = f"{where}: {log} record {seq} is missing the key {err}"
        raise StoreCorruptError(msg, path=where) from None
    except (TypeError, ValueError) as err:
        msg = f"{where}: {log} record {seq}: {err}"
        raise StoreCorruptError(msg, path=where) from None


def _encode(records: Sequence[Mapping[str, Any]], log: str) -> list[str]:
    return encode_records(records, f"the {log} log")


def _pair_error(record: Mapping[str, Any], index: int) -> PairError:
    try:
        check_pair_line(dict(record))
    except (KeyError, TypeError, ValueError) as err:
        detail = f"missing {err}" if isinstance(err, KeyError) else str(err)
        msg = f"pair {index} cannot be stored: {detail} (got {dict(record)!r})"
        raise InvalidObservationError(msg) from None
    return pair_error(record, f"appended pair {index}")


def _signed32(value: int) -> int:
    return value - (1 << 32) if value >= 1 << 31 else value


def _password(url: str) -> str:
    from urllib.parse import urlsplit

    try:
        return urlsplit(url).password or ""
    except ValueError:
        return ""
