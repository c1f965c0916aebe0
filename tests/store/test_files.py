"""TraceStore: the .ldd folder, locking, atomic metrics.json, JSONL logs and torn lines."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from pytest_ldd.errors import InvalidObservationError, LddWarning, StoreCorruptError
from pytest_ldd.store.files import LogCursor, TraceStore
from pytest_ldd.store.files.lock import process_lock

PAIR = {"metric_name": "m", "metric_version": 1, "predicted": 0.5, "observed": 0.25}
EMPTY_DOC: dict[str, Any] = {
    "schema_version": 1,
    "generated_at": "2024-01-01T00:00:00Z",
    "specs": [],
    "promotions": [],
}


def pair(i: int) -> dict[str, Any]:
    return {**PAIR, "nodeid": f"t{i}"}


@pytest.fixture
def store(tmp_path: Path) -> TraceStore:
    return TraceStore(tmp_path)


def test_paths(tmp_path: Path) -> None:
    store = TraceStore(tmp_path)
    assert store.project == tmp_path
    assert store.ldd_dir == tmp_path / ".ldd"
    assert store.metrics_path == tmp_path / ".ldd" / "metrics.json"
    assert store.calibrations_path == tmp_path / ".ldd" / "metric_calibrations.jsonl"
    assert store.observations_path == tmp_path / ".ldd" / "observations.jsonl"
    assert store.sessions_path == tmp_path / ".ldd" / "sessions.jsonl"
    assert store.lock_path == tmp_path / ".ldd" / ".lock"


def test_ldd_dir_override(tmp_path: Path) -> None:
    assert TraceStore(tmp_path, ldd_dir="elsewhere").ldd_dir == tmp_path / "elsewhere"
    other = tmp_path / "abs"
    store = TraceStore(tmp_path, ldd_dir=other)
    store.append_sessions([{"id": "s"}])
    assert (other / "sessions.jsonl").exists()
    assert not (tmp_path / ".ldd").exists()


def test_reading_never_creates_the_folder(store: TraceStore) -> None:
    assert store.read_metrics() is None
    assert store.read_jsonl(store.calibrations_path) == ([], LogCursor())
    store.sync()
    assert not store.exists()
    assert not store.ldd_dir.exists()


def test_append_writes_compact_lines_and_returns_the_end(store: TraceStore) -> None:
    end = store.append_calibrations([pair(1), pair(2)])
    data = store.calibrations_path.read_bytes()
    assert end == len(data)
    lines = data.split(b"\n")
    assert lines[-1] == b""
    assert [json.loads(line) for line in lines[:-1]] == [pair(1), pair(2)]
    assert b", " not in data
    assert b": " not in data
    assert store.append_calibrations([]) == end


def test_append_keeps_unicode(store: TraceStore) -> None:
    store.append_sessions([{"id": "é✓"}])
    assert store.read_jsonl(store.sessions_path)[0] == [{"id": "é✓"}]


@pytest.mark.parametrize(
    "bad", [{"x": float("nan")}, {"x": float("inf")}, {"x": object()}, {"x": {1, 2}}]
)
def test_append_rejects_non_json_and_writes_nothing(store: TraceStore, bad: Any) -> None:
    store.append_sessions([{"id": "a"}])
    before = store.sessions_path.read_bytes()
    with pytest.raises(InvalidObservationError, match=r"record 1 .* not valid JSON"):
        store.append_sessions([{"id": "b"}, bad])
    assert store.sessions_path.read_bytes() == before


def test_read_from_a_cursor_reads_only_what_follows(store: TraceStore) -> None:
    store.append_calibrations([pair(1), pair(2)])
    records, cursor = store.read_jsonl(store.calibrations_path)
    assert len(records) == 2
    assert cursor.line == 2
    assert cursor.offset == store.calibrations_path.stat().st_size
    store.append_calibrations([pair(3)])
    more, cursor2 = store.read_jsonl(store.calibrations_path, start=cursor)
    assert more == [pair(3)]
    assert cursor2.line == 3


def test_plain_int_start_is_a_byte_offset(store: TraceStore) -> None:
    first = store.append_calibrations([pair(1)])
    store.append_calibrations([pair(2)])
    records, cursor = store.read_jsonl(store.calibrations_path, start=first)
    assert records == [pair(2)]
    assert cursor.line == 1  # counted from the offset given


def test_torn_last_line_is_not_consumed_and_warned(store: TraceStore) -> None:
    store.append_calibrations([pair(1)])
    with store.calibrations_path.open("ab") as handle:
        handle.write(b'{"metric_name":"m","metr')
    with pytest.warns(LddWarning, match=r"metric_calibrations\.jsonl:2: incomplete last line"):
        records, cursor = store.read_jsonl(store.calibrations_path)
    assert records == [pair(1)]
    assert cursor.line == 1


def test_torn_line_is_skipped_with_a_warning_and_the_next_append_starts_fresh(
    store: TraceStore,
) -> None:
    store.append_calibrations([pair(1)])
    with store.calibrations_path.open("ab") as handle:
        handle.write(b'{"metric_name":"m","metric_version":1,"predic')
    store.append_calibrations([pair(3)])
    text = store.calibrations_path.read_text()
    assert text.splitlines()[2] == json.dumps(pair(3), separators=(",", ":"))
    with pytest.warns(LddWarning, match=r"metric_calibrations\.jsonl:2: skipped a line torn"):
        records, cursor = store.read_jsonl(store.calibrations_path)
    assert records == [pair(1), pair(3)]
    assert cursor.line == 3


@pytest.mark.parametrize(
    "torn",
    [
        b"{",
        b'{"metric_name',
        b'{"metric_name":',
        b'{"metric_name":"m',
        b'{"metric_name":"m\\',
        b'{"metric_name":"\\u00',
        b'{"metric_name":"m","metric_version":1',
        b'{"metric_name":"m","metric_version":1.',
        b'{"metric_name":"m","metric_version":1e',
        b'{"metric_name":"m","metric_version":-',
        b'{"metric_name":"m","session_id":nu',
        b'{"metric_name":"m","session_id":tr',
        b'{"metric_name":"m","raw":[1,2',
        b'{"metric_name":"m","raw":{"a":',
        '{"metric_name":"é'.encode()[:-1],
    ],
)
def test_every_kind_of_truncation_counts_as_torn(store: TraceStore, torn: bytes) -> None:
    store.calibrations_path.parent.mkdir()
    store.calibrations_path.write_bytes(torn + b"\n")
    with pytest.warns(LddWarning, match=r":1: skipped a line torn"):
        assert store.read_jsonl(store.calibrations_path) == ([], LogCursor(len(torn) + 1, 1))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"metric_name":"m"}}', "not valid JSON"),
        (b'{"metric_name" "m"}', "not valid JSON"),
        (b"[1, 2]", "expected a JSON object"),
        (b'"text"', "expected a JSON object"),
        (b"garbage", "not valid JSON"),
        (b'{"metric_name":"m","predicted":NaN,"observed":0}', "not valid JSON"),
        (b'{"metric_name":"m"}', "missing required key"),
        (b"\xff\xfe{}", "not UTF-8"),
    ],
)
def test_malformed_lines_raise_naming_file_and_line(
    store: TraceStore, line: bytes, message: str
) -> None:
    store.append_calibrations([pair(1), pair(2)])
    with store.calibrations_path.open("ab") as handle:
        handle.write(line + b"\n")
    before = store.calibrations_path.read_bytes()
    with pytest.raises(
        StoreCorruptError, match=rf"metric_calibrations\.jsonl:3: .*{message}"
    ) as info:
        store.read_jsonl(store.calibrations_path)
    assert info.value.line == 3
    assert info.value.path == str(store.calibrations_path)
    assert store.calibrations_path.read_bytes() == before


def test_line_numbers_continue_from_a_cursor(store: TraceStore) -> None:
    store.append_calibrations([pair(i) for i in range(5)])
    _, cursor = store.read_jsonl(store.calibrations_path)
    with store.calibrations_path.open("ab") as handle:
        handle.write(b"[]\n")
    with pytest.raises(StoreCorruptError, match=r":6: "):
        store.read_jsonl(store.calibrations_path, start=cursor)


def test_blank_lines_carry_nothing(store: TraceStore) -> None:
    store.append_sessions([{"id": "a"}])
    with store.sessions_path.open("ab") as handle:
        handle.write(b"\n   \n")
    store.append_sessions([{"id": "b"}])
    assert store.read_jsonl(store.sessions_path)[0] == [{"id": "a"}, {"id": "b"}]


def test_validate_hook_errors_name_the_line(store: TraceStore) -> None:
    store.append_sessions([{"id": "a"}, {"id": 3}])

    def check(record: dict[str, Any]) -> None:
        if not isinstance(record["id"], str):
            msg = f"'id' must be a str (got {record['id']!r})"
            raise ValueError(msg)

    with pytest.raises(
        StoreCorruptError, match=r"sessions\.jsonl:2: 'id' must be a str \(got 3\)"
    ):
        store.read_jsonl(store.sessions_path, validate=check)


def test_cursor_beyond_the_end_means_the_log_was_truncated(store: TraceStore) -> None:
    end = store.append_calibrations([pair(1), pair(2)])
    store.calibrations_path.write_bytes(b"")
    with pytest.raises(StoreCorruptError, match="truncated or replaced"):
        store.read_jsonl(store.calibrations_path, start=LogCursor(end, 2))


def test_cursor_inside_a_line_means_the_log_was_rewritten(store: TraceStore) -> None:
    store.append_calibrations([pair(1), pair(2)])
    with pytest.raises(StoreCorruptError, match="not at the start of a line"):
        store.read_jsonl(store.calibrations_path, start=LogCursor(5, 0))


def test_cursor_validates_its_fields() -> None:
    with pytest.raises(ValueError, match="'offset' must be an int >= 0"):
        LogCursor(-1, 0)
    with pytest.raises(ValueError, match="'line' must be an int >= 0"):
        LogCursor(0, True)


def test_metrics_round_trip_atomically(store: TraceStore) -> None:
    store.write_metrics(EMPTY_DOC)
    assert store.read_metrics() == EMPTY_DOC
    doc = {**EMPTY_DOC, "specs": [{"name": "x"}]}
    store.write_metrics(doc)
    assert store.read_metrics() == doc
    # No temporary file is left behind.
    assert sorted(p.name for p in store.ldd_dir.iterdir() if p.name != ".lock") == ["metrics.json"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "not valid JSON"),
        (b"", "not valid JSON"),
        (b"\xff", "not valid JSON"),
        (b"[]", "expected a JSON object"),
        (b'{"schema_version": 2, "specs": [], "promotions": []}', "'schema_version' must be 1"),
        (b'{"schema_version": 1, "specs": {}, "promotions": []}', "'specs' must be a list"),
        (b'{"schema_version": 1, "specs": [], "promotions": [1]}', "'promotions' must be a list"),
        (b'{"schema_version": 1, "specs": [], "promotions": [], "generated_at": 5}', "ISO"),
        (b'{"schema_version": 1, "specs": [], "promotions": [], "x": NaN}', "not valid JSON"),
    ],
)
def test_corrupt_metrics_raise_and_stay_untouched(
    store: TraceStore, content: bytes, message: str
) -> None:
    store.ldd_dir.mkdir()
    store.metrics_path.write_bytes(content)
    with pytest.raises(StoreCorruptError, match=message) as info:
        store.read_metrics()
    assert str(store.metrics_path) in str(info.value)
    assert store.metrics_path.read_bytes() == content


def test_write_metrics_rejects_a_bad_document(store: TraceStore) -> None:
    store.write_metrics(EMPTY_DOC)
    before = store.metrics_path.read_bytes()
    with pytest.raises(StoreCorruptError):
        store.write_metrics(
            {"schema_version": 1, "specs": [], "promotions": [], "x": float("nan")}
        )
    with pytest.raises(StoreCorruptError):
        store.write_metrics({"specs": []})
    assert store.metrics_path.read_bytes() == before


def test_unreadable_metrics_raise(store: TraceStore) -> None:
    store.metrics_path.mkdir(parents=True)  # a folder where the file should be
    with pytest.raises(StoreCorruptError, match=r"must be a regular file, but it is a folder"):
        store.read_metrics()


def test_lock_is_reentrant_across_stores_of_one_folder(tmp_path: Path) -> None:
    a, b = TraceStore(tmp_path), TraceStore(tmp_path)
    with a.lock(), b.lock(), a.lock():
        a.append_sessions([{"id": "x"}])
        b.write_metrics(EMPTY_DOC)
    assert a.read_metrics() == EMPTY_DOC


def test_lock_timeout_is_a_clear_error(tmp_path: Path) -> None:
    holder = TraceStore(tmp_path)
    waiter = TraceStore(tmp_path, lock_timeout=0.2)
    errors: list[BaseException] = []

    def contend() -> None:
        try:
            waiter.append_sessions([{"id": "late"}])
        except BaseException as err:  # reported to the main thread
            errors.append(err)

    with holder.lock():
        thread = threading.Thread(target=contend)
        thread.start()
        thread.join()
    assert len(errors) == 1
    assert isinstance(errors[0], StoreCorruptError)
    assert "could not lock" in str(errors[0])
    assert str(holder.lock_path) in str(errors[0])
    assert not holder.sessions_path.exists()


def test_sync_and_fsync_append(store: TraceStore) -> None:
    store.append_observations(
        [{"metric_name": "m", "metric_version": 1, "raw": 1, "normalized": 1}], fsync=True
    )
    store.sync()
    assert store.read_jsonl(store.observations_path)[1].line == 1


def test_observation_lines_need_their_keys(store: TraceStore) -> None:
    store.append_observations([{"metric_name": "m", "metric_version": 1, "raw": 1}])
    with pytest.raises(StoreCorruptError, match=r"missing required key.*normalized"):
        store.read_jsonl(store.observations_path)


def test_unknown_files_have_no_required_keys(store: TraceStore, tmp_path: Path) -> None:
    other = tmp_path / "other.jsonl"
    store.append(other, [{"anything": 1}])
    assert store.read_jsonl(other)[0] == [{"anything": 1}]
    assert store.required_keys(other) == ()


def test_file_permissions_are_ordinary(store: TraceStore) -> None:
    store.append_sessions([{"id": "x"}])
    if os.name != "nt":
        assert store.sessions_path.stat().st_mode & 0o600 == 0o600


def test_metrics_json_is_as_readable_as_a_plain_file(tmp_path: Path) -> None:
    store = TraceStore(tmp_path)
    store.write_metrics({"schema_version": 1, "generated_at": "x", "specs": [], "promotions": []})
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    assert store.metrics_path.stat().st_mode & 0o777 == plain.stat().st_mode & 0o777


def test_a_deleted_store_folder_is_locked_afresh(tmp_path: Path) -> None:
    import shutil

    store = TraceStore(tmp_path)
    store.append_sessions([{"id": "first"}])
    shutil.rmtree(store.ldd_dir)
    # Another writer recreates the folder and takes the (new) lock file.
    other = TraceStore(tmp_path)
    other.append_sessions([{"id": "second"}])
    store.append_sessions([{"id": "third"}])
    held = os.stat(store.lock_path).st_ino
    lock = process_lock(store.lock_path)
    assert lock._handle is not None
    assert os.fstat(lock._handle.fileno()).st_ino == held
    assert [r["id"] for r in store.read_jsonl(store.sessions_path)[0]] == ["second", "third"]


def test_a_log_removed_or_replaced_while_held_open_is_reopened(tmp_path: Path) -> None:
    store = TraceStore(tmp_path)
    store.append_observations(
        [{"metric_name": "m", "metric_version": 1, "raw": 1, "normalized": 1}]
    )
    store.observations_path.unlink()
    store.append_observations(
        [{"metric_name": "m", "metric_version": 1, "raw": 2, "normalized": 1}]
    )
    assert [r["raw"] for r in store.read_jsonl(store.observations_path)[0]] == [2]
    replacement = store.ldd_dir / "replacement"
    line = {"metric_name": "m", "metric_version": 1, "raw": 3, "normalized": 1}
    replacement.write_text(json.dumps(line) + "\n")
    os.replace(replacement, store.observations_path)
    store.append_observations(
        [{"metric_name": "m", "metric_version": 1, "raw": 4, "normalized": 1}]
    )
    records, _ = store.read_jsonl(store.observations_path)
    assert [r["raw"] for r in records] == [3, 4]


def test_another_writers_torn_line_is_ended_before_the_next_append(tmp_path: Path) -> None:
    store = TraceStore(tmp_path)
    store.append_sessions([{"id": "first"}])
    with store.sessions_path.open("ab") as handle:
        handle.write(b'{"id": "torn')  # a writer killed mid-line, after our append
    store.append_sessions([{"id": "second"}])
    with pytest.warns(LddWarning, match="torn|not valid JSON|skipped"):
        records, _ = store.read_jsonl(store.sessions_path)
    assert [r["id"] for r in records] == ["first", "second"]


def test_close_releases_the_open_logs_and_appending_reopens_them(tmp_path: Path) -> None:
    store = TraceStore(tmp_path)
    store.append_sessions([{"id": "first"}])
    assert store.appender.holds_open(store.sessions_path)
    store.close()
    assert not store.appender.holds_open(store.sessions_path)
    store.append_sessions([{"id": "second"}])
    assert [r["id"] for r in store.read_jsonl(store.sessions_path)[0]] == ["first", "second"]


def test_a_moved_store_folder_is_appended_to_afresh(tmp_path: Path) -> None:
    store = TraceStore(tmp_path)
    store.append_sessions([{"id": "first"}])
    os.rename(store.ldd_dir, tmp_path / "moved")
    store.append_sessions([{"id": "second"}])
    assert [r["id"] for r in store.read_jsonl(store.sessions_path)[0]] == ["second"]
    moved = TraceStore(tmp_path, ldd_dir="moved")
    assert [r["id"] for r in moved.read_jsonl(moved.sessions_path)[0]] == ["first"]


def test_a_log_renamed_away_while_held_open_gets_no_more_lines(tmp_path: Path) -> None:
    store = TraceStore(tmp_path)
    store.append_sessions([{"id": "first"}])
    rotated = store.ldd_dir / "sessions-old.jsonl"
    os.rename(store.sessions_path, rotated)
    store.append_sessions([{"id": "second"}])
    assert [r["id"] for r in store.read_jsonl(store.sessions_path)[0]] == ["second"]
    assert [r["id"] for r in store.read_jsonl(rotated)[0]] == ["first"]


def test_own_pairs_from_memory_are_the_pairs_read_back(tmp_path: Path) -> None:
    """The fast path of read_pairs (this store's own appends) equals its slow twin."""
    from pytest_ldd.model.records import line_head, line_tail, number_text, pair_text

    store = TraceStore(tmp_path)
    store.append_pairs([{**PAIR, "observed": 0.0}, {**PAIR, "metric_name": "n"}])
    head, tail = line_head("m", 1), line_tail("s", "t::x")
    texts = [
        pair_text(head, number_text(p), number_text(0.5), "1", "2", "2026-01-01T00:00:00Z", tail)
        for p in (0.1, 0.9, 0.5)
    ]
    store.append_lines([], texts, [("m", 1, abs(p - 0.5)) for p in (0.1, 0.9, 0.5)])
    origin = store.origin()
    fast = list(store.read_pairs([origin]))
    slow = list(store.read_pairs([origin], recount=True))
    assert len(fast) == 2  # one step per batch
    assert len(slow) == 5  # one step per line
    assert [e for _, errors, _ in fast for e in errors] == [
        e for _, errors, _ in slow for e in errors
    ]
    assert fast[-1][2] == slow[-1][2] == LogCursor(store.calibrations_path.stat().st_size, 5)
    middle = fast[0][2]
    assert list(store.read_pairs([middle])) == [fast[1]]
    again = [e for _, errors, _ in store.read_pairs([middle], recount=True) for e in errors]
    assert again == list(fast[1][1])
    # Another writer's line: the memory no longer ends the file, so the log is read.
    TraceStore(tmp_path).append_calibrations([PAIR])
    assert len(list(store.read_pairs([origin]))) == 6


def test_positions_are_stored_in_the_keys_of_metrics_json(tmp_path: Path) -> None:
    store = TraceStore(tmp_path)
    store.append_sessions([])
    store.calibrations_path.write_bytes(b"x" * 98 + b"\n" + b"y" * 20 + b"\n")
    doc = store.position_json(LogCursor(10, 1), LogCursor(99, 7))
    check = doc.pop("log_check")
    assert isinstance(check, str)
    assert len(check) == 16
    assert doc == {"start": {"offset": 10, "line": 1}, "log_offset": 99, "log_line": 7}
    doc["log_check"] = check
    assert store.position_from_json(doc) == (LogCursor(10, 1), LogCursor(99, 7))
    assert store.position_json(LogCursor(), LogCursor())["log_check"] is None
    with pytest.raises(ValueError, match="'offset' must be an int >= 0"):
        store.position_from_json({**doc, "log_offset": -1})
    with pytest.raises(TypeError, match="LogCursor"):
        store.position_json(3, LogCursor())  # type: ignore[arg-type]


def test_a_process_that_used_many_stores_keeps_none_of_their_files_open(
    tmp_path: Path,
) -> None:
    def open_files() -> list[str]:
        """What this process's descriptors name under ``tmp_path``.

        Read by target, not counted: other tests of the same worker may close their
        own descriptors (a collected socket) while this one runs.
        """
        found = []
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):  # closed since the listing
                target = os.readlink(f"/proc/self/fd/{fd}")
                if target.startswith(str(tmp_path)):
                    found.append(target)
        return found

    def use(index: int) -> None:
        store = TraceStore(tmp_path / f"project{index}")
        store.append_sessions([{"id": index}])
        store.write_metrics(EMPTY_DOC)

    for index in range(40):
        use(index)
        assert open_files() == [], index
