"""The Store seam: open_store, the backend names, and a registry on another backend.

``ListStore`` keeps its logs in lists and its positions are pair counts, nothing
like the file store's byte offsets: the registry and the calibrator must work on
it unchanged, which is what makes the cursor opaque and a backend one module.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from calibration_support import log_errors, rate

from pytest_ldd.calibration.calibrator import Calibrator
from pytest_ldd.calibration.registry import MetricRegistry
from pytest_ldd.errors import InvalidSpecError, StoreCorruptError
from pytest_ldd.store import BACKENDS, PairRead, Store, masked, open_store
from pytest_ldd.store.files import TraceStore


@dataclass(frozen=True, order=True)
class Count:
    """A position: how many records precede it."""

    n: int = 0


class ListStore:
    """A whole backend in memory: lists for the logs, bytes for the document."""

    def __init__(self, url: str = "lists://here") -> None:
        self.url = url
        self.logs: dict[str, list[dict[str, Any]]] = {
            "pairs": [],
            "observations": [],
            "sessions": [],
        }
        self.document: bytes | None = None
        self._lock = threading.RLock()

    @classmethod
    def from_url(cls, url: str, *, project: Path, key: str | None = None) -> ListStore:
        del project, key
        return cls(url)

    @property
    def location(self) -> str:
        return masked(self.url)

    @property
    def registry_location(self) -> str:
        return f"{self.location}#registry"

    def exists(self) -> bool:
        return self.document is not None or any(self.logs.values())

    def lock(self) -> AbstractContextManager[None]:
        return _Held(self._lock)

    read_lock = lock

    @contextmanager
    def atomic(self) -> Iterator[ListStore]:
        # Whole or nothing: the lists as they were come back when the block raises.
        with self._lock:
            saved = {log: list(records) for log, records in self.logs.items()}, self.document
            try:
                yield self
            except BaseException:
                self.logs, self.document = saved
                raise

    def take_unsaved(self) -> tuple[list[str], list[str]]:
        return [], []

    def read_registry_bytes(self) -> bytes | None:
        return self.document

    def parse_registry(self, data: bytes) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(data)
        return doc

    def replace_registry(self, doc: Mapping[str, Any]) -> bytes:
        self.document = json.dumps(doc).encode()
        return self.document

    def append_pairs(self, records: Sequence[Mapping[str, Any]], *, fsync: bool = False) -> None:
        self.logs["pairs"] += [dict(r) for r in records]

    def append_observations(
        self, records: Sequence[Mapping[str, Any]], *, fsync: bool = False
    ) -> None:
        self.logs["observations"] += [dict(r) for r in records]

    def append_sessions(
        self, records: Sequence[Mapping[str, Any]], *, fsync: bool = False
    ) -> None:
        self.logs["sessions"] += [dict(r) for r in records]

    def append_lines(
        self,
        observations: Sequence[str],
        pairs: Sequence[str],
        errors: Sequence[tuple[str, int, float]] | None = None,
    ) -> None:
        self.logs["observations"] += [json.loads(text) for text in observations]
        self.logs["pairs"] += [json.loads(text) for text in pairs]

    def origin(self) -> Count:
        return Count()

    def read_pairs(
        self, cursors: Collection[Any], *, recount: bool = False
    ) -> Iterator[PairRead]:
        pairs = self.logs["pairs"]
        if max(c.n for c in cursors) > len(pairs):
            raise StoreCorruptError("pairs went missing", path=self.location)
        for index in range(min(c.n for c in cursors), len(pairs)):
            r = pairs[index]
            error = abs(r["predicted"] - r["observed"])
            yield Count(index), ((r["metric_name"], r["metric_version"], error),), Count(index + 1)

    def iter_log(
        self, log: str, *, start: Any = None
    ) -> Iterator[tuple[dict[str, Any] | None, Count]]:
        first = 0 if start is None else start.n
        for index, record in enumerate(self.logs[log][first:], first):
            yield record, Count(index + 1)

    def read_log(self, log: str, *, start: Any = None) -> tuple[list[dict[str, Any]], Count]:
        end = Count() if start is None else start
        records = []
        for record, end in self.iter_log(log, start=start):  # noqa: B007 - the last end
            assert record is not None
            records.append(record)
        return records, end

    def position_json(self, start: Any, end: Any) -> dict[str, Any]:
        return {"counted": [start.n, end.n]}

    def position_from_json(self, data: Mapping[str, Any]) -> tuple[Count, Count]:
        first, last = data["counted"]
        return Count(first), Count(last)

    def sync(self, logs: Iterable[str] | None = None) -> None:
        pass

    def close(self) -> None:
        pass


class _Held:
    def __init__(self, lock: Any) -> None:
        self._lock = lock

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


def test_the_registry_and_calibrator_run_on_another_backend() -> None:
    store = ListStore()
    registry = MetricRegistry(store)
    registry.register_many([rate("a"), rate("b")])
    cal = Calibrator(registry)
    log_errors(cal, "a", [0.1] * 5)
    log_errors(cal, "b", [0.4] * 2)
    changes = cal.update()
    assert [(name, after.state) for name, _, after in changes] == [("a", "load_bearing")]
    assert cal.stats("b").n == 2
    assert cal.verify() == []
    doc = json.loads(store.document or b"")
    (state_a, _) = doc["promotions"]
    # The store's own positions, in the store's own form: nothing of the file store.
    assert state_a["calibration"]["counted"] == [0, 7]
    assert "log_offset" not in state_a["calibration"]
    reopened = Calibrator(MetricRegistry(store))
    assert reopened.registry.is_load_bearing("a")
    log_errors(reopened, "b", [0.0] * 3)
    assert reopened.stats("b").n == 5
    assert reopened.stats("b") == reopened.recompute("b")


def test_a_store_that_lost_pairs_is_an_error_on_any_backend() -> None:
    store = ListStore()
    registry = MetricRegistry(store)
    registry.register(rate())
    cal = Calibrator(registry)
    log_errors(cal, "pass_rate", [0.1] * 3)
    cal.update()
    store.logs["pairs"].clear()
    with pytest.raises(StoreCorruptError, match="pairs went missing"):
        cal.update()


def test_a_backend_is_one_entry_in_the_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(BACKENDS, "lists", "test_store_seam:ListStore")  # type: ignore[arg-type]
    store = open_store(Path("."), "lists://user:s3cret@host/db")
    assert isinstance(store, ListStore)
    assert store.location == "lists://user:***@host/db"


def test_open_store_defaults_to_the_folder(tmp_path: Path) -> None:
    plain = open_store(tmp_path)
    assert isinstance(plain, TraceStore)
    assert plain.ldd_dir == tmp_path / ".ldd"
    assert open_store(tmp_path, "custom").location == str(tmp_path / "custom")
    assert open_store(tmp_path, tmp_path / "p").location == str(tmp_path / "p")
    url = open_store(tmp_path, f"file://{tmp_path}/u")
    assert url.location == f"{tmp_path}/u"
    assert not (tmp_path / ".ldd").exists()  # opening creates nothing
    with pytest.raises(InvalidSpecError, match="file:///absolute/folder"):
        open_store(tmp_path, "file://relative")


def test_an_unknown_scheme_names_the_known_ones_and_hides_the_password(tmp_path: Path) -> None:
    with pytest.raises(InvalidSpecError) as info:
        open_store(tmp_path, "mysql://admin:hunter2@db.example/ldd")
    text = str(info.value)
    assert "hunter2" not in text
    assert "'mysql://admin:***@db.example/ldd'" in text
    assert "unknown scheme 'mysql'" in text
    assert "file://" in text


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:p@h:5432/d", "postgresql://u:***@h:5432/d"),
        ("postgresql://u@h/d", "postgresql://u@h/d"),
        ("postgresql://h/d", "postgresql://h/d"),
        ("postgresql://:p@h/d", "postgresql://:***@h/d"),
        ("/plain/folder", "/plain/folder"),
    ],
)
def test_masked(url: str, shown: str) -> None:
    assert masked(url) == shown


def test_the_file_store_is_a_store(tmp_path: Path) -> None:
    members = [name for name in vars(Store) if not name.startswith("_")]
    store = TraceStore(tmp_path)
    missing = [name for name in members if not hasattr(store, name)]
    assert members
    assert missing == []
    seam: Store = store  # the protocol, checked by the type checker where it is used
    assert seam.location == str(tmp_path / ".ldd")
    assert seam.registry_location == str(tmp_path / ".ldd" / "metrics.json")
