"""The file store: the ``.ldd/`` folder, the embedded default backend.

Four files live in the folder (see ``docs/store.md``): ``metrics.json`` (specs and
states, rewritten whole and atomically), and three append-only JSON Lines logs:
``metric_calibrations.jsonl``, ``observations.jsonl`` and ``sessions.jsonl``.

:class:`TraceStore` is the :class:`~pytest_ldd.store.Store` of a folder, put together
from the folder's parts:

- :mod:`~pytest_ldd.store.files.lock`: the folder's exclusive lock (``.ldd/.lock``),
  held by every write;
- :mod:`~pytest_ldd.store.files.metrics_file`: ``metrics.json``;
- :mod:`~pytest_ldd.store.files.reader`: reading the logs, and read positions
  (:class:`LogCursor`);
- :mod:`~pytest_ldd.store.files.appender`: appending to them, whole lines or none;
- :mod:`~pytest_ldd.store.files.excerpt`: a bounded excerpt of a long log;
- :mod:`~pytest_ldd.store.files.disk`: what all of them ask of the disk.

Reads never lock and never create anything: a process that only reads the store
leaves the file system exactly as it found it.  The store remembers its own
uninterrupted run of appends to the pair log, so the statistics update at the end of
a session counts the session's own pairs without reading them back
(:meth:`TraceStore.read_pairs`; ``recount=True`` is the slow twin).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pytest_ldd.errors import InvalidSpecError, StoreCorruptError
from pytest_ldd.model.records import (
    PairError,
    check_line,
    check_pair_line,
    encode_records,
    pair_error,
)
from pytest_ldd.store.document import SCHEMA_VERSION
from pytest_ldd.store.files.disk import fsync_folder, os_error, os_errors, regular
from pytest_ldd.store.files.lock import FolderLock
from pytest_ldd.store.files.metrics_file import MetricsFile
from pytest_ldd.store.files.reader import (
    LogCursor,
    LogPositions,
    iter_jsonl,
    log_cursor,
    read_jsonl,
    read_pairs,
)
from pytest_ldd.store.protocol import SAMPLE_LINES, Cursor, LogExcerpt, LogName, PairRead

if TYPE_CHECKING:
    from pytest_ldd.store.files.appender import LogAppender, OwnAppends
    from pytest_ldd.store.protocol import Store

__all__ = [
    "CALIBRATIONS_FILE",
    "LDD_DIR",
    "LOCK_FILE",
    "METRICS_FILE",
    "OBSERVATIONS_FILE",
    "SCHEMA_VERSION",
    "SESSIONS_FILE",
    "STORE_FILES",
    "LogCursor",
    "OwnAppends",
    "TraceStore",
]

#: The folder name under the project.
LDD_DIR: Final = ".ldd"
METRICS_FILE: Final = "metrics.json"
CALIBRATIONS_FILE: Final = "metric_calibrations.jsonl"
OBSERVATIONS_FILE: Final = "observations.jsonl"
SESSIONS_FILE: Final = "sessions.jsonl"
LOCK_FILE: Final = ".lock"
#: The files of a store folder, in the order a staged write moves them into place
#: (the logs first: a ``metrics.json`` never counts lines its logs do not hold).
STORE_FILES: Final = (CALIBRATIONS_FILE, OBSERVATIONS_FILE, SESSIONS_FILE, METRICS_FILE)
#: The prefix of a staged copy's folder inside the store folder (see ``staged``).
STAGE_PREFIX: Final = ".staged-"

#: Keys every line of a log must hold (a line without them is corrupt).
_REQUIRED_KEYS: Final[Mapping[str, tuple[str, ...]]] = {
    CALIBRATIONS_FILE: ("metric_name", "metric_version", "predicted", "observed"),
    OBSERVATIONS_FILE: ("metric_name", "metric_version", "raw", "normalized"),
    SESSIONS_FILE: (),
}

#: How long a writer waits for the lock before giving up with a clear error.
DEFAULT_LOCK_TIMEOUT: Final = 120.0


class TraceStore:
    """The ``.ldd/`` folder of a project.

    ``project`` is the folder that holds ``.ldd/``; ``ldd_dir`` overrides the
    folder itself (relative paths are taken from ``project``).  Nothing is created
    until the first write.
    """

    def __init__(
        self,
        project: str | os.PathLike[str],
        *,
        ldd_dir: str | os.PathLike[str] | None = None,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    ) -> None:
        self.project: Path = Path(project)
        folder = self.project / LDD_DIR if ldd_dir is None else self.project / Path(ldd_dir)
        #: The store folder (``<project>/.ldd`` unless overridden).
        self.ldd_dir: Path = folder
        self.metrics_path: Path = folder / METRICS_FILE
        self.calibrations_path: Path = folder / CALIBRATIONS_FILE
        self.observations_path: Path = folder / OBSERVATIONS_FILE
        self.sessions_path: Path = folder / SESSIONS_FILE
        self.lock_path: Path = folder / LOCK_FILE
        self._lock = FolderLock(folder, self.lock_path, lock_timeout)
        self.metrics = MetricsFile(self.metrics_path, self._lock)
        self._appender: LogAppender | None = None
        self._positions = LogPositions(self.calibrations_path)

    def __repr__(self) -> str:
        return f"TraceStore({str(self.ldd_dir)!r})"

    @classmethod
    def from_url(cls, url: str, *, project: Path, key: str | None = None) -> TraceStore:
        """The store of a ``file://`` URL: its path is the store folder itself.

        ``key`` (the project key) is not needed: the folder is the project's own.
        """
        del key
        folder = url.partition("://")[2]
        if not folder.startswith("/"):
            msg = f"store {url!r} must be file:///absolute/folder (got the path {folder!r})"
            raise InvalidSpecError(msg)
        return cls(project, ldd_dir=folder)

    @property
    def location(self) -> str:
        """The store folder, as text."""
        return str(self.ldd_dir)

    @property
    def registry_location(self) -> str:
        """``metrics.json``'s path, as text."""
        return str(self.metrics_path)

    @property
    def appender(self) -> LogAppender:
        """What appends to the logs (made on first use: a store that only reads never
        imports it)."""
        if self._appender is None:
            from pytest_ldd.store.files.appender import LogAppender

            self._appender = LogAppender()
        return self._appender

    @property
    def lock_timeout(self) -> float:
        """How long a writer waits for the lock (seconds) before a clear error."""
        return self._lock.timeout

    @lock_timeout.setter
    def lock_timeout(self, seconds: float) -> None:
        self._lock.timeout = seconds

    # ------------------------------------------------------------------ folder, lock

    def exists(self) -> bool:
        """Whether the store folder exists."""
        return self.ldd_dir.is_dir()

    def lock(self) -> AbstractContextManager[None]:
        """Hold the store's exclusive lock (re-entrant within a process and thread).

        Creates the folder: only writers lock.  Waiting longer than
        ``lock_timeout`` seconds raises :class:`StoreCorruptError`.
        """
        return self._lock.held()

    def read_lock(self) -> AbstractContextManager[None]:
        """The lock while the pair log exists (a line being appended is never seen torn).

        Without a pair log there is nothing to read torn, and reading creates nothing.
        """
        return self.lock() if self.calibrations_path.exists() else nullcontext()

    def atomic(self) -> AbstractContextManager[TraceStore]:
        """A unit of writes applied whole or not at all: a staged copy of the folder
        (see :meth:`staged`), moved into place when the ``with`` block ends."""
        return self.staged(copy=True)

    @contextmanager
    def staged(self, *, copy: bool) -> Iterator[TraceStore]:
        """Hold the lock and yield a store on a staged folder; move it into place at the end.

        The staged folder lies inside the store folder (same file system), starts as
        a copy of the store's files (``copy``) or empty, and takes every write of the
        ``with`` block.  When the block ends, its files replace the store's, each with
        ``os.replace`` (the logs first, ``metrics.json`` last), and a file the staged
        folder lacks is removed when it did not start as a copy; when the block
        raises, the store is left as it was.  The lock is held throughout: no other
        writer interleaves.
        """
        import shutil  # only a staged write needs them: not paid by every command
        import tempfile

        with self.lock():
            stage = Path(tempfile.mkdtemp(prefix=STAGE_PREFIX, dir=self.ldd_dir))
            try:
                if copy:
                    for name in STORE_FILES:
                        source = self.ldd_dir / name
                        if regular(source) is not None:
                            shutil.copyfile(source, stage / name)
                staged = TraceStore(stage, ldd_dir=stage, lock_timeout=self.lock_timeout)
                try:
                    yield staged
                    staged.sync()
                finally:
                    staged.close()
                self._move_into_place(stage, remove_missing=not copy)
            finally:
                shutil.rmtree(stage, ignore_errors=True)

    def _move_into_place(self, stage: Path, *, remove_missing: bool) -> None:
        # The staged files are durable already (sync, and metrics.json's own write).
        with os_errors(self.ldd_dir, "replace the files of"):
            for name in STORE_FILES:
                staged, target = stage / name, self.ldd_dir / name
                if staged.exists():
                    os.replace(staged, target)
                elif remove_missing:
                    target.unlink(missing_ok=True)
            fsync_folder(self.ldd_dir)

    def take_unsaved(self) -> tuple[list[str], list[str]]:
        """Nothing: every append is written when it returns (or raises at once)."""
        return [], []

    # ------------------------------------------------------------------ metrics.json

    def read_metrics(self) -> dict[str, Any] | None:
        """The parsed ``metrics.json``, or ``None`` when it does not exist.

        A file that cannot be read or parsed, or that is not an object with
        ``schema_version`` 1, a ``specs`` list and a ``promotions`` list, raises
        :class:`StoreCorruptError` naming it; the file is never touched.
        """
        data = self.metrics.read_bytes()
        return None if data is None else self.metrics.parse(data)

    def read_metrics_bytes(self) -> bytes | None:
        """The bytes of ``metrics.json``, or ``None`` when it does not exist."""
        return self.metrics.read_bytes()

    def parse_metrics(self, data: bytes) -> dict[str, Any]:
        """Parse and check the bytes of ``metrics.json`` (see :meth:`read_metrics`)."""
        return self.metrics.parse(data)

    def write_metrics(self, doc: Mapping[str, Any]) -> bytes:
        """Replace ``metrics.json`` atomically (temp file, fsync, ``os.replace``).

        Returns the bytes written.
        """
        return self.metrics.write(doc)

    # The registry document of the Store protocol is metrics.json.
    def read_registry_bytes(self) -> bytes | None:
        """The bytes of ``metrics.json`` (see :meth:`read_metrics_bytes`)."""
        return self.read_metrics_bytes()

    def parse_registry(self, data: bytes) -> dict[str, Any]:
        """Parse and check ``metrics.json``'s bytes (see :meth:`parse_metrics`)."""
        return self.parse_metrics(data)

    def replace_registry(self, doc: Mapping[str, Any]) -> bytes:
        """Replace ``metrics.json`` atomically (see :meth:`write_metrics`)."""
        return self.write_metrics(doc)

    # ------------------------------------------------------------------ JSONL logs

    def append(
        self,
        path: str | os.PathLike[str],
        records: Sequence[Mapping[str, Any]],
        *,
        fsync: bool = False,
    ) -> int:
        """Append ``records`` as JSON lines in one locked write; return the end offset.

        Records are serialized before the lock is taken, so an invalid one (NaN,
        infinity, a non-JSON value) raises :class:`InvalidObservationError` and
        nothing is written.  A file whose last byte is not a newline (a line torn
        by a crash) first gets a newline, so the new lines start on their own.
        """
        return self.append_batches([(path, records)], fsync=fsync)[0]

    def append_batches(
        self,
        batches: Sequence[tuple[str | os.PathLike[str], Sequence[Mapping[str, Any]]]],
        *,
        fsync: bool = False,
        facts: Sequence[Sequence[Any] | None] | None = None,
    ) -> list[int]:
        """Append to several logs under one lock (as :meth:`append` each); the end offsets.

        ``facts`` (one entry per batch, or None) is remembered with each batch: see
        :meth:`own_appends`.
        """
        # Paths stay as given (no Path() per call): this can run once per test.
        encoded = [
            (path, "".join(f"{text}\n" for text in encode_records(records, str(path))).encode())
            for path, records in batches
        ]
        counts = [len(records) for _, records in batches]
        return self._write(encoded, counts, fsync=fsync, facts=facts)

    def append_texts(
        self,
        batches: Sequence[tuple[str | os.PathLike[str], Sequence[str]]],
        *,
        facts: Sequence[Sequence[Any] | None] | None = None,
    ) -> list[int]:
        """Append lines already encoded as JSON text, under one lock; the end offsets.

        Each text must be one JSON object without a newline, as the line builders
        of :mod:`pytest_ldd.model.records` make them: the plugin flushes a test's
        observations and pairs this way, validated when they were observed.
        """
        encoded = [
            (path, ("\n".join(texts) + "\n").encode("utf-8") if texts else b"")
            for path, texts in batches
        ]
        counts = [len(texts) for _, texts in batches]
        return self._write(encoded, counts, fsync=False, facts=facts)

    def _write(
        self,
        encoded: Sequence[tuple[str | os.PathLike[str], bytes]],
        counts: Sequence[int],
        *,
        fsync: bool,
        facts: Sequence[Sequence[Any] | None] | None,
    ) -> list[int]:
        lock = self._lock.acquire()
        try:
            return self.appender.write(
                encoded, counts, fsync=fsync, facts=facts, generation=lock.generation
            )
        finally:
            lock.release()

    def close(self) -> None:
        """Close the logs this store keeps open for appending (it reopens them if needed)."""
        if self._appender is not None:
            self._appender.close()

    def __del__(self) -> None:
        with suppress(Exception):
            self.close()

    def own_appends(self, path: str | os.PathLike[str]) -> OwnAppends | None:
        """This store's own latest uninterrupted run of appends to ``path`` (or None).

        Only batches appended with ``facts`` count; see
        :meth:`~pytest_ldd.store.files.appender.LogAppender.own_appends`.
        """
        return None if self._appender is None else self._appender.own_appends(path)

    def append_calibrations(
        self, records: Sequence[Mapping[str, Any]], *, fsync: bool = False
    ) -> int:
        """Append lines to ``metric_calibrations.jsonl`` as they are; the end offset."""
        return self.append(self.calibrations_path, records, fsync=fsync)

    def append_pairs(self, records: Sequence[Mapping[str, Any]], *, fsync: bool = False) -> None:
        """Append calibration pairs, remembering what they count (see :meth:`read_pairs`).

        What a pair counts is what the reader would count reading it back
        (:func:`~pytest_ldd.model.records.pair_error`: a line of raw values is
        normalized with its metric's spec when counted, never taken as its raw
        difference).
        """
        where = f"{self.calibrations_path}: appended pair"
        facts: list[Any] | None
        try:
            facts = [pair_error(_checked_pair(r), f"{where} {i}") for i, r in enumerate(records)]
        except (KeyError, TypeError, ValueError):
            facts = None  # not pairs the statistics count: they are read back, and named
        self.append_batches([(self.calibrations_path, records)], fsync=fsync, facts=[facts])

    def append_observations(
        self, records: Sequence[Mapping[str, Any]], *, fsync: bool = False
    ) -> None:
        """Append lines to ``observations.jsonl``."""
        self.append(self.observations_path, records, fsync=fsync)

    def append_sessions(
        self, records: Sequence[Mapping[str, Any]], *, fsync: bool = False
    ) -> None:
        """Append lines to ``sessions.jsonl``."""
        self.append(self.sessions_path, records, fsync=fsync)

    def append_lines(
        self,
        observations: Sequence[str],
        pairs: Sequence[str],
        errors: Sequence[PairError] | None = None,
    ) -> None:
        """Append encoded observation and pair lines under one lock (see :meth:`append_texts`)."""
        known = errors if errors is not None and len(errors) == len(pairs) else None
        self.append_texts(
            [(self.observations_path, observations), (self.calibrations_path, pairs)],
            facts=[None, known],
        )

    # ------------------------------------------------------------------ reading

    def origin(self) -> LogCursor:
        """The start of the pair log."""
        return LogCursor()

    def log_path(self, log: LogName) -> Path:
        """The file of ``log``."""
        return {
            "pairs": self.calibrations_path,
            "observations": self.observations_path,
            "sessions": self.sessions_path,
        }[log]

    def iter_log(
        self, log: LogName, *, start: Cursor | None = None, complete_tail: bool = False
    ) -> Iterator[tuple[dict[str, Any] | None, LogCursor]]:
        """:meth:`iter_jsonl` of ``log``'s file.

        ``complete_tail``: a last line without its newline that holds a complete,
        valid record is read too (for a folder no writer is appending to: a merge's
        input, an import's source).  The position after it is not one to store.
        """
        begin = LogCursor() if start is None else log_cursor(start)
        return iter_jsonl(
            self.log_path(log),
            start=begin,
            required=self.required_keys(self.log_path(log)),
            validate=check_line[log],
            complete_tail=complete_tail,
        )

    def read_log(
        self, log: LogName, *, start: Cursor | None = None
    ) -> tuple[list[dict[str, Any]], LogCursor]:
        """:meth:`read_jsonl` of ``log``'s file."""
        begin = LogCursor() if start is None else log_cursor(start)
        return self.read_jsonl(self.log_path(log), start=begin, validate=check_line[log])

    def read_excerpt(
        self, log: LogName, *, budget: int | None = None, samples: int = SAMPLE_LINES
    ) -> LogExcerpt:
        """``log``'s records, whole up to ``budget`` bytes, else its tail and an even
        sample of the rest by byte offsets (:mod:`pytest_ldd.store.files.excerpt`)."""
        from pytest_ldd.store.files.excerpt import read_excerpt

        return read_excerpt(
            self.log_path(log),
            log,
            budget=budget,
            samples=samples,
            whole=lambda: (record for record, _ in self.iter_log(log)),
        )

    def read_pairs(
        self, cursors: Collection[Cursor], *, recount: bool = False
    ) -> Iterator[PairRead]:
        """The pairs past the earliest of ``cursors``: ``(begin, errors, end)`` per line.

        A cursor past the end of the log means it was truncated or removed: a
        :class:`StoreCorruptError` naming the fix.  Unless ``recount``, the pairs of
        this store's own latest run of appends come from memory while that run
        still ends the very file (same device, inode and size) and the earliest
        cursor is where one of its batches starts (or where it ends); one step per
        batch then.
        """
        if not cursors:
            return iter(())
        mine = [log_cursor(c) for c in cursors]
        path = self.calibrations_path
        try:
            found = regular(path)
            size = 0 if found is None else found.st_size
        except FileNotFoundError:
            size = 0
        except OSError as err:
            raise os_error(err, path, "read") from err
        ahead = max(c.offset for c in mine)
        if ahead > size:
            msg = (
                f"{path} is shorter ({size} bytes) than the position its pairs were counted "
                f"up to ({ahead}): the append-only log was truncated or removed (remove "
                f"{self.metrics_path.name} too to start the statistics afresh)"
            )
            raise StoreCorruptError(msg, path=str(path))
        begin = min(mine)
        if not recount and self._appender is not None:
            own = self._appender.own_pairs(path, begin)
            if own is not None:
                return iter(own)
        return read_pairs(path, begin, self.required_keys(path))

    def position_json(self, start: Cursor, end: Cursor) -> dict[str, Any]:
        """``{"start": {"offset", "line"}, "log_offset", "log_line", "log_check"}``.

        ``log_check`` fingerprints the bytes just before ``log_offset`` (see
        :meth:`position_from_json`); it is null at offset 0.
        """
        return self._positions.to_json(log_cursor(start), log_cursor(end))

    def position_from_json(self, data: Mapping[str, Any]) -> tuple[LogCursor, LogCursor]:
        """Read :meth:`position_json`'s keys (KeyError, TypeError or ValueError if bad).

        :class:`StalePosition` when the log no longer holds the bytes counted up to
        (see :class:`~pytest_ldd.store.files.reader.LogPositions`).
        """
        return self._positions.from_json(data)

    def required_keys(self, path: str | os.PathLike[str]) -> tuple[str, ...]:
        """The keys every line of ``path`` must hold (none for unknown files)."""
        target = Path(path)
        if target.parent != self.ldd_dir:
            return ()
        return _REQUIRED_KEYS.get(target.name, ())

    def iter_jsonl(
        self,
        path: str | os.PathLike[str],
        *,
        start: LogCursor | int = 0,
        validate: Callable[[dict[str, Any]], None] | None = None,
    ) -> Iterator[tuple[dict[str, Any] | None, LogCursor]]:
        """Stream the complete lines of ``path`` from ``start``.

        Yields ``(record, cursor)`` for every line consumed, ``cursor`` being the
        position just after it; ``record`` is ``None`` for a skipped line (blank,
        or torn by a crash).  ``validate`` may raise ``ValueError`` / ``TypeError``
        / ``LddError`` for a record; that becomes a :class:`StoreCorruptError`
        naming the file and line.  The torn-line rule is described in
        :mod:`pytest_ldd.store.files.reader`.  A missing file yields nothing.
        """
        return iter_jsonl(path, start=start, required=self.required_keys(path), validate=validate)

    def read_jsonl(
        self,
        path: str | os.PathLike[str],
        *,
        start: LogCursor | int = 0,
        validate: Callable[[dict[str, Any]], None] | None = None,
    ) -> tuple[list[dict[str, Any]], LogCursor]:
        """Parse the complete lines of ``path`` from ``start``; return them and the end.

        ``start`` is a :class:`LogCursor` (or a plain byte offset, whose line numbers
        then count from it).  The returned cursor sits after the last line consumed;
        pass it back as ``start`` to read only what was appended since.  Torn and
        malformed lines follow the rule of :mod:`pytest_ldd.store.files.reader`.
        """
        return read_jsonl(path, start=start, required=self.required_keys(path), validate=validate)

    def sync(self, logs: Iterable[LogName] | None = None) -> None:
        """fsync the logs that exist (default: all three; session end: nothing
        finished is lost)."""
        names: Iterable[LogName] = ("pairs", "observations", "sessions") if logs is None else logs
        for path in map(self.log_path, names):
            try:
                self._sync_one(path)
            except OSError as err:
                raise os_error(err, path, "fsync") from err

    def _sync_one(self, path: Path) -> None:
        if self._appender is not None and self._appender.sync(path):
            return
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        except FileNotFoundError:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _checked_pair(record: Mapping[str, Any]) -> Mapping[str, Any]:
    check_pair_line(dict(record))
    return record


if TYPE_CHECKING:

    def _is_a_store(store: TraceStore) -> Store:
        # The type checker proves here that the file store implements the protocol.
        return store


def __getattr__(name: str) -> Any:
    # OwnAppends stays importable from here; its module loads with the first append.
    if name == "OwnAppends":
        from pytest_ldd.store.files.appender import OwnAppends

        return OwnAppends
    msg = f"module 'pytest_ldd.store.files' has no attribute {name!r}"
    raise AttributeError(msg)
