"""The PostgreSQL store under faults: a server that restarts or stops, a lost answer,
tables without their schema row, a role without CREATE, stored values out of range.

Whatever restarts or stops a server runs against a private one (``private_server``,
tests/private_postgres.py); the shared test server is never touched that way.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from backends import Backend
from calibration_support import log_errors, rate
from private_postgres import PrivateServer

from pytest_ldd.calibration.calibrator import Calibrator
from pytest_ldd.calibration.registry import MetricRegistry
from pytest_ldd.errors import StoreCorruptError, StoreUnavailableError
from pytest_ldd.store.postgres import FLUSH_TESTS, RECONNECT_DELAYS, PostgresStore

psycopg = pytest.importorskip("psycopg")


def pair_line(index: int, session: str = "s") -> str:
    return json.dumps(
        {"metric_name": "m", "metric_version": 1, "predicted": 0.5, "observed": 0.25,
         "session_id": session, "nodeid": f"t::{index}"}
    )  # fmt: skip


def observation_line(index: int, session: str = "s") -> str:
    return json.dumps(
        {"metric_name": "m", "metric_version": 1, "raw": 0.25, "normalized": 0.25,
         "session_id": session, "nodeid": f"t::{index}"}
    )  # fmt: skip


@pytest.fixture
def store(private_server: PrivateServer) -> Iterator[PostgresStore]:
    opened = PostgresStore(private_server.dsn, key=f"faults-{uuid.uuid4().hex[:8]}")
    yield opened
    if not private_server.running:
        private_server.start()
    opened.take_unsaved()
    opened.close()


def stored(server: PrivateServer, key: str, table: str = "ldd_pairs") -> list[str]:
    reader = PostgresStore(server.dsn, key=key)
    try:
        log = {"ldd_pairs": "pairs", "ldd_observations": "observations"}[table]
        records, _ = reader.read_log(log)  # type: ignore[arg-type]
        return [str(r["nodeid"]) for r in records]
    finally:
        reader.close()


def append_tests(store: PostgresStore, first: int, last: int) -> None:
    for index in range(first, last):
        store.append_lines([observation_line(index)], [pair_line(index)])


# -- a server that restarts between tests ---------------------------------------------


@pytest.mark.parametrize(
    "interruption",
    ["restart", "restart, down 1 s", "sessions ended", "restart twice"],
)
def test_a_restart_between_tests_loses_no_buffered_pair(
    store: PostgresStore, private_server: PrivateServer, interruption: str
) -> None:
    append_tests(store, 0, 10)
    store.flush()
    append_tests(store, 10, 20)  # buffered: fewer than FLUSH_TESTS, under a second
    if interruption == "sessions ended":
        private_server.terminate_sessions()
    else:
        private_server.restart(down=1.0 if "down" in interruption else 0.0)
    if interruption == "restart twice":
        append_tests(store, 20, 25)
        store.flush()
        private_server.restart()
    append_tests(store, 25, 30)
    store.sync()
    expected = [f"t::{i}" for i in range(30) if not (20 <= i < 25) or "twice" in interruption]
    assert stored(private_server, store.key) == expected
    assert stored(private_server, store.key, "ldd_observations") == expected


def test_a_flush_that_fails_keeps_the_buffer_and_commits_it_later(
    store: PostgresStore, private_server: PrivateServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pytest_ldd.store.postgres.RECONNECT_DELAYS", (0.05, 0.05))
    monkeypatch.setattr("pytest_ldd.store.postgres.RETRY_AFTER", 0.2)
    append_tests(store, 0, 5)
    store.flush()
    private_server.stop()
    # A whole flush's worth of tests while the server is down: none of them raises,
    # and none is dropped.
    append_tests(store, 5, 5 + FLUSH_TESTS + 3)
    private_server.start()
    time.sleep(0.3)
    append_tests(store, 5 + FLUSH_TESTS + 3, 5 + FLUSH_TESTS + 4)
    store.sync()
    expected = [f"t::{i}" for i in range(5 + FLUSH_TESTS + 4)]
    assert stored(private_server, store.key) == expected


def test_a_store_out_of_reach_raises_naming_what_it_holds_and_hands_it_over(
    store: PostgresStore, private_server: PrivateServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pytest_ldd.store.postgres.RECONNECT_DELAYS", (0.05, 0.1))
    append_tests(store, 0, 3)
    store.flush()
    private_server.stop()
    append_tests(store, 3, 7)
    started = time.monotonic()
    with pytest.raises(StoreUnavailableError) as info:
        store.sync()
    assert time.monotonic() - started < 30  # bounded: two short waits and the attempts
    assert (info.value.pairs, info.value.observations) == (4, 4)
    assert "2 attempts to open it again failed" in str(info.value)
    assert store.location in str(info.value)
    observations, pairs = store.take_unsaved()
    assert [json.loads(p)["nodeid"] for p in pairs] == [f"t::{i}" for i in range(3, 7)]
    assert len(observations) == 4
    assert store.take_unsaved() == ([], [])  # handed over once
    private_server.start()
    assert stored(private_server, store.key) == [f"t::{i}" for i in range(3)]


def test_the_documented_bounds() -> None:
    # Stated in docs/store.md: seven attempts, 6.3 s of waiting between them.
    assert len(RECONNECT_DELAYS) + 1 == 7
    assert sum(RECONNECT_DELAYS) == pytest.approx(6.3)
    assert list(RECONNECT_DELAYS) == sorted(RECONNECT_DELAYS)


class _AnswerLost:
    """A connection whose append is committed by the server, but whose answer is lost."""

    def __init__(self, conn: Any, lose: list[bool]) -> None:
        self._conn = conn
        self._lose = lose

    def execute(self, query: Any, params: Any = None) -> Any:
        result = self._conn.execute(query, params)
        if self._lose and "INSERT INTO ldd_pairs" in str(query):
            self._lose.pop()
            self._conn.close()
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def test_an_append_whose_answer_was_lost_is_not_stored_twice(
    store: PostgresStore, private_server: PrivateServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    append_tests(store, 0, 2)
    store.flush()
    lose = [True]
    connect = psycopg.connect
    monkeypatch.setattr(
        store._psycopg, "connect", lambda *a, **k: _AnswerLost(connect(*a, **k), lose)
    )
    store.close()
    append_tests(store, 2, 6)
    store.flush()
    assert not lose  # the answer was lost once
    assert stored(private_server, store.key) == [f"t::{i}" for i in range(6)]


def test_losing_the_connection_while_holding_the_lock_is_an_error(
    store: PostgresStore, private_server: PrivateServer
) -> None:
    registry = MetricRegistry(store)
    registry.register(rate("a"))
    document = json.loads(store.read_registry_bytes() or b"{}")

    def write_after_losing_the_connection() -> None:
        with store.lock():
            private_server.terminate_sessions()
            store.replace_registry(document)

    with pytest.raises(StoreCorruptError, match="while holding its lock"):
        write_after_losing_the_connection()
    # The next use opens a new connection and works.
    assert MetricRegistry(store).names() == ["a"]


def test_a_reader_waits_out_a_restart(store: PostgresStore, private_server: PrivateServer) -> None:
    registry = MetricRegistry(store)
    registry.register(rate("a"))
    cal = Calibrator(registry)
    log_errors(cal, "a", [0.1] * 5)
    cal.update()
    thread = threading.Thread(target=private_server.restart, kwargs={"down": 0.5})
    thread.start()
    time.sleep(0.2)
    try:
        assert Calibrator(MetricRegistry(store)).stats("a").n == 5
    finally:
        thread.join()


def test_the_first_connection_fails_at_once(private_server: PrivateServer) -> None:
    # A wrong port is a mistake, not an outage: no waiting for it to come back.
    url = private_server.url().replace(str(private_server.port), "1")
    started = time.monotonic()
    with pytest.raises(StoreCorruptError, match="cannot read the store") as info:
        PostgresStore(url, key="p").exists()
    assert not isinstance(info.value, StoreUnavailableError)
    assert time.monotonic() - started < 5


# -- the schema row and the tables ----------------------------------------------------


@pytest.mark.parametrize(
    ("damage", "named"),
    [
        ("DELETE FROM ldd_schema", "ldd_schema: its row is missing"),
        ("DROP TABLE ldd_schema", "ldd_schema: the table is missing"),
    ],
)
def test_tables_without_their_schema_row_are_a_named_error(
    private_server: PrivateServer, damage: str, named: str
) -> None:
    # A database of its own: the schema row is shared by every project in it.
    database = f"schema_{uuid.uuid4().hex[:8]}"
    private_server.psql(f"CREATE DATABASE {database}", database="postgres")
    url = private_server.url(database=database)
    store = PostgresStore(url, key="p")
    registry = MetricRegistry(store)
    registry.register(rate("a"))
    cal = Calibrator(registry)
    log_errors(cal, "a", [0.1] * 3)
    cal.update()
    store.close()
    private_server.psql(damage, database=database)
    for attempt in (
        lambda s: MetricRegistry(s),
        lambda s: s.read_log("pairs"),
        lambda s: s.exists(),
        lambda s: s.append_pairs([json.loads(pair_line(0))]),
    ):
        fresh = PostgresStore(url, key="p")
        with pytest.raises(StoreCorruptError, match=named) as info:
            attempt(fresh)
        assert "holds pytest-ldd's tables" in str(info.value)
        fresh.close()
    # Nothing was recreated over the damage.
    assert private_server.psql("SELECT count(*) FROM ldd_pairs", database=database) == "3\n"


def test_a_lost_table_is_a_named_error(private_server: PrivateServer) -> None:
    database = f"tables_{uuid.uuid4().hex[:8]}"
    private_server.psql(f"CREATE DATABASE {database}", database="postgres")
    url = private_server.url(database=database)
    store = PostgresStore(url, key="p")
    store.append_sessions([{"session_id": "x"}])
    store.close()
    private_server.psql("DROP TABLE ldd_observations", database=database)
    with pytest.raises(StoreCorruptError, match="lacks the tables ldd_observations"):
        PostgresStore(url, key="p").read_log("sessions")


# -- a role with rights on the tables, but not CREATE ---------------------------------


def test_a_role_without_create_records_into_existing_tables(
    private_server: PrivateServer,
) -> None:
    database = f"roles_{uuid.uuid4().hex[:8]}"
    role = f"writer_{uuid.uuid4().hex[:8]}"
    private_server.psql(f"CREATE DATABASE {database}", database="postgres")
    owner = PostgresStore(private_server.url(database=database), key="setup")
    owner.ensure_schema()
    owner.close()
    private_server.psql(
        f"CREATE ROLE {role} LOGIN; "
        f"REVOKE CREATE ON SCHEMA public FROM PUBLIC; "
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}",
        database=database,
    )
    url = private_server.url(user=role, database=database)
    # The role really cannot create anything there.
    with pytest.raises(psycopg.errors.InsufficientPrivilege), psycopg.connect(url) as conn:
        conn.execute("CREATE TABLE nope (x int)")
    store = PostgresStore(url, key="ci")
    registry = MetricRegistry(store)
    registry.register(rate("a"))
    cal = Calibrator(registry)
    log_errors(cal, "a", [0.1] * 5)
    cal.update()
    assert MetricRegistry(store).is_load_bearing("a")
    store.close()
    # Without the tables, the same role gets a clear error naming the permission.
    empty = f"empty_{uuid.uuid4().hex[:8]}"
    private_server.psql(f"CREATE DATABASE {empty}", database="postgres")
    private_server.psql("REVOKE CREATE ON SCHEMA public FROM PUBLIC", database=empty)
    with pytest.raises(StoreCorruptError, match="permission denied for schema public"):
        PostgresStore(private_server.url(user=role, database=empty), key="ci").ensure_schema()


# -- every stored value is checked on read --------------------------------------------


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ({"metric_name": "a", "metric_version": 1, "raw": 7, "normalized": 7},
         "'normalized' must be a number in \\[0, 1\\] \\(got 7\\)"),
        ({"metric_name": "a", "metric_version": 1, "raw": 0.1, "normalized": -0.5},
         "'normalized' must be a number in \\[0, 1\\]"),
        ({"metric_name": "a", "metric_version": 1, "raw": 0.1, "normalized": "0.5"},
         "'normalized' must be a number"),
        ({"metric_name": "a", "metric_version": 1, "raw": 0.1},
         "missing the key 'normalized'"),
    ],
)  # fmt: skip
def test_a_stored_observation_out_of_range_is_named(
    postgres: Backend, tmp_path: Any, line: dict[str, Any], named: str
) -> None:
    store = postgres.open(tmp_path)
    store.append_observations([{"metric_name": "a", "metric_version": 1, "raw": 0.1,
                                "normalized": 0.1}])  # fmt: skip
    assert postgres.url is not None
    with psycopg.connect(postgres.url, autocommit=True) as conn:
        conn.execute(
            "UPDATE ldd_observations SET line = %s WHERE project = %s",
            (json.dumps(line), postgres.key),
        )
    with pytest.raises(StoreCorruptError, match=f"observations record 1.*{named}"):
        store.read_log("observations")
    store.close()
