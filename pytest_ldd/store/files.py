"""The file store: the ``.ldd/`` folder, the embedded default backend.

Four files live in the folder (see ``docs/store.md``): ``metrics.json`` (specs and
states, rewritten whole and atomically), and three append-only JSON Lines logs:
``metric_calibrations.jsonl``, ``observations.jsonl`` and ``sessions.jsonl``.

Every write holds one exclusive lock (``.ldd/.lock``, an OS file lock: ``flock``),
so many writers at once (xdist controllers, two pytest runs, the CLI) never lose
or tear a line.  Reads never lock and never create anything: a process that only
reads the store leaves the file system exactly as it found it.

A read position is a :class:`LogCursor` (a byte offset just after a newline, and
the line count before it); only this module interprets one.  The store remembers
its own uninterrupted run of appends to the pair log, so the statistics update at
the end of a session counts the session's own pairs without reading them back
(:meth:`TraceStore.read_pairs`; ``recount=True`` is the slow twin).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, final

from pytest_ldd.errors import (
    InvalidSpecError,
    LddWarning,
    StoreCorruptError,
)
from pytest_ldd.model.records import (
    PairError,
    RawPair,
    check_line,
    check_pair_line,
    encode_records,
)
from pytest_ldd.store import SCHEMA_VERSION, Cursor, LogName, PairRead, StalePosition

if TYPE_CHECKING:
    from pytest_ldd.store import Store

__all__ = [
    "CALIBRATIONS_FILE",
    "LDD_DIR",
    "LOCK_FILE",
    "METRICS_FILE",
    "OBSERVATIONS_FILE",
    "SCHEMA_VERSION",
    "SESSIONS_FILE",
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

#: Keys every line of a log must hold (a line without them is corrupt).
_REQUIRED_KEYS: Final[Mapping[str, tuple[str, ...]]] = {
    CALIBRATIONS_FILE: ("metric_name", "metric_version", "predicted", "observed"),
    OBSERVATIONS_FILE: ("metric_name", "metric_version", "raw", "normalized"),
    SESSIONS_FILE: (),
}

#: How long a writer waits for the lock before giving up with a clear error.
DEFAULT_LOCK_TIMEOUT: Final = 120.0

_CHUNK: Final = 1 << 20

#: How many lines of its own appends a store remembers (see ``own_appends``).
_MAX_REMEMBERED_LINES: Final = 200_000


class _LockBusy(Exception):
    """The lock is held elsewhere (another process, or another thread of this one)."""


# The OS lock on an open file: flock(2) on POSIX, where the standard library has it
# (portalocker, which does the same, costs ~40 ms to import and more at exit, paid
# by every session); portalocker where it is not.
if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import portalocker

    def _try_lock(handle: Any) -> bool:
        try:
            portalocker.lock(handle, portalocker.LOCK_EX | portalocker.LOCK_NB)
        except portalocker.exceptions.LockException:
            return False
        return True

    def _unlock(handle: Any) -> None:
        portalocker.unlock(handle)

else:
    import fcntl

    def _try_lock(handle: Any) -> bool:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(handle: Any) -> None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


class _ProcessLock:
    """The exclusive lock on one lock file, shared by every store of this process.

    An OS file lock belongs to an open file, so two handles on the same file in one
    process would block each other: one instance per file and process, re-entrant
    (a depth count) and safe across threads (a thread lock around it).  The lock
    file stays open: the plugin takes the lock once per test.
    """

    __slots__ = ("_depth", "_handle", "_ident", "_path", "_thread", "generation")

    def __init__(self, path: str) -> None:
        self._path = path
        self._thread = threading.RLock()
        self._depth = 0
        self._handle: Any = None
        self._ident = (0, 0)
        #: How many times the lock file was opened: a new one means a new folder,
        #: and the logs a store keeps open must be opened afresh too.
        self.generation = 0

    def acquire(self, timeout: float) -> None:
        """Take the lock, waiting at most ``timeout`` seconds (_LockBusy after)."""
        if not self._thread.acquire(timeout=timeout):
            msg = "held by another thread of this process"
            raise _LockBusy(msg)
        try:
            if self._depth == 0:
                self._lock_file(timeout)
        except BaseException:
            self._thread.release()
            raise
        self._depth += 1

    def _lock_file(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self._handle is None:
                Path(self._path).parent.mkdir(parents=True, exist_ok=True)
                self._handle = open(self._path, "a")  # noqa: SIM115 - kept open on purpose
                held = os.fstat(self._handle.fileno())
                self._ident = (held.st_ino, held.st_dev)
                self.generation += 1
            if not _try_lock(self._handle):
                if time.monotonic() >= deadline:
                    raise _LockBusy("held by another process")
                time.sleep(0.01)
                continue
            if self._is_current():
                return
            # The lock file was removed or replaced (say, the .ldd folder was deleted)
            # while we kept it open: a lock on the old file excludes nobody.
            _unlock(self._handle)
            self._handle.close()
            self._handle = None

    def _is_current(self) -> bool:
        """Whether the open handle is still the file at the lock path."""
        try:
            on_disk = os.stat(self._path)
        except FileNotFoundError:
            return False
        return (on_disk.st_ino, on_disk.st_dev) == self._ident

    def __del__(self) -> None:
        # The handle is kept open for the life of the lock object; close it with it
        # (a module reloaded by a test runner drops its locks).
        handle = getattr(self, "_handle", None)
        if handle is not None:
            handle.close()

    def release(self) -> None:
        self._depth -= 1
        try:
            if self._depth == 0:
                _unlock(self._handle)
        finally:
            self._thread.release()


# Keyed by process too: a forked child must not share its parent's open lock file.
_LOCKS: dict[tuple[int, str], _ProcessLock] = {}
_LOCKS_GUARD = threading.Lock()

# The literal and number tails a truncated line can end in (see _is_truncated).
_NUMBER_TAIL: Final = re.compile(r"-?[0-9]*(\.[0-9]*)?([eE][+-]?[0-9]*)?")


@final
@dataclass(frozen=True, slots=True, order=True)
class LogCursor:
    """A position in a JSONL log: a byte ``offset`` and the ``line`` count before it.

    ``offset`` always sits just after a newline (or at 0).  ``line`` is the number
    of lines that precede ``offset``, so the next line read is line ``line + 1``;
    keeping it alongside the offset is what lets an incremental read name the
    1-based line of a malformed record without counting from the start.
    """

    offset: int = 0
    line: int = 0

    def __post_init__(self) -> None:
        for field in ("offset", "line"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                msg = f"LogCursor {field!r} must be an int >= 0 (got {value!r})"
                raise ValueError(msg)

    def to_json(self) -> dict[str, int]:
        """The cursor as ``{"offset": .., "line": ..}``."""
        return {"offset": self.offset, "line": self.line}


@final
@dataclass(slots=True)
class OwnAppends:
    """An uninterrupted run of one store's appends to one log (see ``own_appends``).

    ``batches`` holds ``(start offset, facts)`` per append, ``facts`` being what
    the writer said about its lines (one entry per line, in order); ``lines``
    counts the lines from ``start`` to ``end``.  At most ``_MAX_REMEMBERED_LINES``
    lines are remembered.
    """

    pid: int
    ident: tuple[int, int]
    start: int
    end: int
    lines: int
    batches: list[tuple[int, Sequence[Any]]]


@final
class _Appender:
    """A log a store keeps open for appending, and where its last write ended."""

    __slots__ = ("end", "fd", "generation", "ident", "pid")

    def __init__(self, pid: int, fd: int, generation: int, ident: tuple[int, int]) -> None:
        self.pid = pid
        self.fd = fd
        self.generation = generation
        #: The (device, inode) of the file opened: the log while its path still has it.
        self.ident = ident
        self.end = -1


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
        self.lock_timeout = lock_timeout
        self._lock_cache: tuple[int, _ProcessLock] | None = None
        self._runs: dict[str, OwnAppends] = {}
        self._appenders: dict[str, _Appender] = {}
        # Fingerprints of pair-log positions by (device, inode, offset).
        self._checks: dict[tuple[int, int, int], str] = {}

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

    # ------------------------------------------------------------------ folder, lock

    def exists(self) -> bool:
        """Whether the store folder exists."""
        return self.ldd_dir.is_dir()

    def read_lock(self) -> AbstractContextManager[None]:
        """The lock while the pair log exists (a line being appended is never seen torn).

        Without a pair log there is nothing to read torn, and reading creates nothing.
        """
        return self.lock() if self.calibrations_path.exists() else nullcontext()

    def _ensure_dir(self) -> None:
        try:
            self.ldd_dir.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            where = err.filename if isinstance(err.filename, str) else self.ldd_dir
            msg = f"cannot create the store folder {self.ldd_dir} ({where}: {err.strerror or err})"
            raise StoreCorruptError(msg, path=str(self.ldd_dir)) from err
        if not self.ldd_dir.is_dir():
            msg = f"the store folder {self.ldd_dir} is not a folder"
            raise StoreCorruptError(msg, path=str(self.ldd_dir))

    def _file_lock(self) -> _ProcessLock:
        key = (os.getpid(), os.path.abspath(self.lock_path))
        with _LOCKS_GUARD:
            lock = _LOCKS.get(key)
            if lock is None:
                lock = _LOCKS[key] = _ProcessLock(key[1])
            return lock

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the store's exclusive lock (re-entrant within a process and thread).

        Creates the folder: only writers lock.  Waiting longer than
        ``lock_timeout`` seconds raises :class:`StoreCorruptError`.
        """
        lock = self._acquire()
        try:
            yield
        finally:
            lock.release()

    def _acquire(self) -> _ProcessLock:
        """Take the lock (see :meth:`lock`); the caller releases what is returned."""
        pid = os.getpid()
        cached = self._lock_cache
        if cached is None or cached[0] != pid:
            # Once per store and process: the folder, the path, the shared lock.
            self._ensure_dir()
            cached = self._lock_cache = (pid, self._file_lock())
        lock = cached[1]
        try:
            lock.acquire(self.lock_timeout)
        except OSError as err:
            raise _os_error(err, self.lock_path, "lock") from err
        except _LockBusy:
            msg = (
                f"could not lock {self.lock_path} within {self.lock_timeout:g} s: another "
                f"process holds it (a hung pytest or ldd command?); stop it and retry"
            )
            raise StoreCorruptError(msg, path=str(self.lock_path)) from None
        return lock

    # ------------------------------------------------------------------ metrics.json

    def read_metrics(self) -> dict[str, Any] | None:
        """The parsed ``metrics.json``, or ``None`` when it does not exist.

        A file that cannot be read or parsed, or that is not an object with
        ``schema_version`` 1, a ``specs`` list and a ``promotions`` list, raises
        :class:`StoreCorruptError` naming it; the file is never touched.
        """
        data = self.read_metrics_bytes()
        return None if data is None else self.parse_metrics(data)

    def read_metrics_bytes(self) -> bytes | None:
        """The bytes of ``metrics.json``, or ``None`` when it does not exist."""
        path = self.metrics_path
        try:
            if _regular(path) is None:
                return None
            return path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as err:
            msg = f"cannot read {path}: {err.strerror or err}"
            raise StoreCorruptError(msg, path=str(path)) from err

    def parse_metrics(self, data: bytes) -> dict[str, Any]:
        """Parse and check the bytes of ``metrics.json`` (see :meth:`read_metrics`)."""
        path = self.metrics_path
        try:
            doc = json.loads(
                data.decode("utf-8"),
                parse_constant=_reject_constant,
                object_pairs_hook=_unique_keys,
            )
        except _DuplicateKeyError as err:
            msg = f"{path}: {err}; the file was left untouched"
            raise StoreCorruptError(msg, path=str(path)) from err
        except (UnicodeDecodeError, ValueError) as err:
            msg = f"{path} is not valid JSON ({err}); it was left untouched"
            raise StoreCorruptError(msg, path=str(path)) from err
        _check_metrics_shape(doc, path)
        return doc  # type: ignore[no-any-return]

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

    def write_metrics(self, doc: Mapping[str, Any]) -> bytes:
        """Replace ``metrics.json`` atomically (temp file, fsync, ``os.replace``).

        Returns the bytes written.
        """
        _check_metrics_shape(doc, self.metrics_path)
        try:
            text = _metrics_text(doc)
        except (TypeError, ValueError) as err:
            msg = f"metrics document for {self.metrics_path} is not valid JSON: {err}"
            raise StoreCorruptError(msg, path=str(self.metrics_path)) from err
        payload = text.encode("utf-8")
        with self.lock(), _os_errors(self.metrics_path, "write"):
            fd, tmp = tempfile.mkstemp(prefix=".metrics.", suffix=".tmp", dir=str(self.ldd_dir))
            try:
                os.chmod(tmp, new_file_mode())
                with os.fdopen(fd, "wb") as handle:
                    handle.write(payload)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(tmp, self.metrics_path)
            except BaseException:
                with suppress(OSError):
                    os.unlink(tmp)
                raise
            _fsync_dir(self.ldd_dir)
        return payload

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
        encoded = [(path, b"".join(_encode_lines(path, records))) for path, records in batches]
        counts = [len(records) for _, records in batches]
        return self._append_encoded(encoded, counts, fsync=fsync, facts=facts)

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
        return self._append_encoded(encoded, counts, fsync=False, facts=facts)

    def _append_encoded(
        self,
        encoded: Sequence[tuple[str | os.PathLike[str], bytes]],
        counts: Sequence[int],
        *,
        fsync: bool,
        facts: Sequence[Sequence[Any] | None] | None,
    ) -> list[int]:
        ends: list[int] = []
        # No context managers, one getpid, paths as str: this runs once per test.
        pid = os.getpid()
        lock = self._acquire()
        try:
            for index, (target, data) in enumerate(encoded):
                key = os.fspath(target)
                try:
                    start, end, ident = self._append_locked(
                        key, data, fsync=fsync, generation=lock.generation, pid=pid
                    )
                except OSError as err:
                    raise _os_error(err, target, "append to") from err
                ends.append(end)
                if data:
                    known = facts[index] if facts is not None else None
                    self._note_append(key, ident, start, end, counts[index], known, pid)
        finally:
            lock.release()
        return ends

    def _note_append(
        self,
        key: str,
        ident: tuple[int, int],
        start: int,
        end: int,
        lines: int,
        facts: Sequence[Any] | None,
        pid: int,
    ) -> None:
        run = self._runs.get(key)
        if facts is None or len(facts) != lines:
            # Lines nobody described: what follows can no longer be taken from memory.
            self._runs.pop(key, None)
            return
        if run is None or run.ident != ident or run.end != start or run.pid != pid:
            run = self._runs[key] = OwnAppends(pid, ident, start, start, 0, [])
        run.end = end
        run.lines += lines
        run.batches.append((start, facts))
        if run.lines > _MAX_REMEMBERED_LINES:
            # Memory stays bounded; past this, readers read the log itself.
            del self._runs[key]

    def _append_locked(
        self, key: str, data: bytes, *, fsync: bool, generation: int, pid: int
    ) -> tuple[int, int, tuple[int, int]]:
        """Append encoded lines to the log at path ``key`` (the caller holds the lock).

        Returns where the lines start and end, and the file's (device, inode).
        Each log stays open between appends (a session appends once per test);
        one whose path no longer names the open file (removed, replaced, renamed)
        is opened afresh, and so is every log once the lock file was
        (``generation``: a moved or recreated folder).
        """
        held = self._appenders.get(key)
        info = None
        if held is not None:
            if held.pid == pid and held.generation == generation:
                # The path, not the descriptor: a log renamed away (rotated by hand)
                # must not go on receiving the lines meant for the log.
                try:
                    info = os.stat(key)
                except FileNotFoundError:
                    info = None
            if info is None or (info.st_dev, info.st_ino) != held.ident:
                # Forked, a new folder, or the file was removed, replaced or renamed.
                self._close_appender(key)
                held = info = None
        if held is None or info is None:
            _regular(key)  # a FIFO, a link to /dev/null or nowhere: named, never used
            flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)
            try:
                fd = os.open(key, flags, 0o644)
            except FileNotFoundError:
                Path(key).parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(key, flags, 0o644)
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                os.close(fd)
                raise _not_regular(Path(key), info.st_mode)
            held = self._appenders[key] = _Appender(
                pid, fd, generation, (info.st_dev, info.st_ino)
            )
        size, ident = info.st_size, held.ident
        if not data:
            return size, size, ident
        if size > 0 and size != held.end:
            # Someone else wrote last: make sure their last line ended.
            os.lseek(held.fd, size - 1, os.SEEK_SET)
            if os.read(held.fd, 1) != b"\n":
                # A line torn by a crash: end it, so the new lines start on their own.
                _write_all(held.fd, b"\n")
                size += 1
        held.end = -1  # until the write is known to be whole
        try:
            _write_all(held.fd, data)
        except OSError:
            # A full disk or a file-size limit mid-write: take back the part written,
            # so no torn line is left behind (the lock keeps every other writer out).
            with suppress(OSError):
                os.ftruncate(held.fd, size)
            raise
        if fsync:
            os.fsync(held.fd)
        held.end = size + len(data)
        return size, held.end, ident

    def _close_appender(self, key: str) -> None:
        held = self._appenders.pop(key, None)
        if held is not None and held.pid == os.getpid():
            with suppress(OSError):
                os.close(held.fd)

    def close(self) -> None:
        """Close the logs this store keeps open for appending (it reopens them if needed)."""
        for key in list(self._appenders):
            self._close_appender(key)

    def __del__(self) -> None:
        with suppress(Exception):
            self.close()

    def own_appends(self, path: str | os.PathLike[str]) -> OwnAppends | None:
        """This store's own latest uninterrupted run of appends to ``path`` (or None).

        Only batches appended with ``facts`` count.  Whether nobody else wrote to
        the file since is for the caller to check: the run's ``end`` must still be
        the file's size and its ``ident`` the file's (device, inode).
        """
        run = self._runs.get(os.fspath(path))
        if run is None or run.pid != os.getpid():
            return None
        return run

    def append_calibrations(
        self, records: Sequence[Mapping[str, Any]], *, fsync: bool = False
    ) -> int:
        """Append lines to ``metric_calibrations.jsonl`` as they are; the end offset."""
        return self.append(self.calibrations_path, records, fsync=fsync)

    def append_pairs(self, records: Sequence[Mapping[str, Any]], *, fsync: bool = False) -> None:
        """Append calibration pairs, remembering what they count (see :meth:`read_pairs`)."""
        try:
            errors: list[Any] | None = [
                (r["metric_name"], r["metric_version"], abs(r["predicted"] - r["observed"]))
                for r in records
            ]
        except (KeyError, TypeError):
            errors = None  # not pairs the statistics count: they are read back, and named
        self.append_batches([(self.calibrations_path, records)], fsync=fsync, facts=[errors])

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

    # ------------------------------------------------------------------ reading pairs

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
        self, log: LogName, *, start: Cursor | None = None
    ) -> Iterator[tuple[dict[str, Any] | None, LogCursor]]:
        """:meth:`iter_jsonl` of ``log``'s file."""
        begin = LogCursor() if start is None else _log_cursor(start)
        return self.iter_jsonl(self.log_path(log), start=begin, validate=check_line[log])

    def read_log(
        self, log: LogName, *, start: Cursor | None = None
    ) -> tuple[list[dict[str, Any]], LogCursor]:
        """:meth:`read_jsonl` of ``log``'s file."""
        begin = LogCursor() if start is None else _log_cursor(start)
        return self.read_jsonl(self.log_path(log), start=begin, validate=check_line[log])

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
        mine = [_log_cursor(c) for c in cursors]
        path = self.calibrations_path
        try:
            found = _regular(path)
            size = 0 if found is None else found.st_size
        except FileNotFoundError:
            size = 0
        except OSError as err:
            raise _os_error(err, path, "read") from err
        ahead = max(c.offset for c in mine)
        if ahead > size:
            msg = (
                f"{path} is shorter ({size} bytes) than the position its pairs were counted "
                f"up to ({ahead}): the append-only log was truncated or removed (remove "
                f"{self.metrics_path.name} too to start the statistics afresh)"
            )
            raise StoreCorruptError(msg, path=str(path))
        begin = min(mine)
        if not recount:
            own = self._own_pairs(path, begin)
            if own is not None:
                return iter(own)
        return self._read_pair_lines(path, begin)

    def _read_pair_lines(self, path: Path, begin: LogCursor) -> Iterator[PairRead]:
        for record, end in self.iter_jsonl(path, start=begin, validate=check_pair_line):
            if record is None:
                yield begin, (), end
                begin = end
                continue
            predicted, observed = record["predicted"], record["observed"]
            if 0.0 <= predicted <= 1.0 and 0.0 <= observed <= 1.0:
                error: float | RawPair = abs(predicted - observed)
            else:
                error = RawPair(predicted, observed, f"{path}:{end.line}")
            yield begin, ((record["metric_name"], record["metric_version"], error),), end
            begin = end

    def _own_pairs(self, path: Path, begin: LogCursor) -> list[PairRead] | None:
        """The pairs past ``begin`` from memory, if only this store wrote them (else None)."""
        run = self.own_appends(path)
        offset = begin.offset
        if run is None or not (run.start <= offset <= run.end):
            return None
        batches = [(start, facts) for start, facts in run.batches if start >= offset]
        if offset != run.end and (not batches or batches[0][0] != offset):
            return None  # not a position this run's appends know
        try:
            info = os.stat(path)
        except OSError:
            return None
        if (info.st_dev, info.st_ino) != run.ident or info.st_size != run.end:
            return None
        steps: list[PairRead] = []
        line = begin.line
        ends = [start for start, _ in batches[1:]] + [run.end] if batches else []
        for (start, facts), stop in zip(batches, ends, strict=True):
            first = LogCursor(start, line)
            line += len(facts)
            steps.append((first, facts, LogCursor(stop, line)))
        return steps

    def position_json(self, start: Cursor, end: Cursor) -> dict[str, Any]:
        """``{"start": {"offset", "line"}, "log_offset", "log_line", "log_check"}``.

        ``log_check`` fingerprints the bytes just before ``log_offset`` (see
        :meth:`position_from_json`); it is null at offset 0.
        """
        first, last = _log_cursor(start), _log_cursor(end)
        return {
            "start": first.to_json(),
            "log_offset": last.offset,
            "log_line": last.line,
            "log_check": self._log_check(last.offset),
        }

    def _log_check(self, offset: int) -> str | None:
        """The fingerprint of the pair log's bytes before ``offset`` (None at 0)."""
        if offset == 0:
            return None
        path = self.calibrations_path
        try:
            _regular(path)
            with open(path, "rb") as handle:
                info = os.fstat(handle.fileno())
                key = (info.st_dev, info.st_ino, offset)
                cached = self._checks.get(key)
                if cached is not None and info.st_size >= offset:
                    return cached
                check = _fingerprint(handle, offset, info.st_size)
        except OSError as err:
            raise _os_error(err, path, "read") from err
        if check is None:
            msg = f"{path} is shorter than the read position {offset} being stored"
            raise StoreCorruptError(msg, path=str(path))
        if len(self._checks) > 64:
            self._checks.clear()
        self._checks[key] = check
        return check

    def position_from_json(self, data: Mapping[str, Any]) -> tuple[LogCursor, LogCursor]:
        """Read :meth:`position_json`'s keys (KeyError, TypeError or ValueError if bad).

        The position must still name the same content: the log at least that long,
        the byte before it a newline, and the bytes before it those fingerprinted
        when it was stored (``log_check``; positions stored without one are checked
        for the first two).  Otherwise :class:`StalePosition`.
        """
        start = data["start"]
        begin = LogCursor(start["offset"], start["line"])
        end = LogCursor(data["log_offset"], data["log_line"])
        check = data.get("log_check")
        if check is not None and not isinstance(check, str):
            msg = f"'log_check' must be a str or null (got {check!r})"
            raise TypeError(msg)
        if begin > end:
            msg = f"'start' {begin.to_json()} lies past 'log_offset' {end.offset}"
            raise ValueError(msg)
        if end.offset == 0:
            return begin, end
        path = self.calibrations_path
        try:
            _regular(path)
            with open(path, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                found = _fingerprint(handle, end.offset, size)
                # _fingerprint read up to the position: its last byte ends a line.
                handle.seek(end.offset - 1)
                boundary = found is not None and handle.read(1) == b"\n"
        except FileNotFoundError:
            found, boundary, size = None, False, 0
        except OSError as err:
            raise _os_error(err, path, "read") from err
        if found is None:
            why = f"is shorter ({size} bytes) than the position {end.offset} counted up to"
        elif not boundary:
            why = f"has no line boundary at the position {end.offset} counted up to"
        elif check is not None and check != found:
            why = f"holds other bytes before the position {end.offset} than were counted"
        else:
            return begin, end
        msg = f"{path} {why}: it was truncated, removed or rewritten since"
        raise StalePosition(msg)

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
        :meth:`read_jsonl`.  A missing file yields nothing.
        """
        target = Path(path)
        cursor = start if isinstance(start, LogCursor) else LogCursor(start, 0)
        required = self.required_keys(target)
        try:
            if _regular(target) is None:
                return
            handle = open(target, "rb")  # noqa: SIM115 - closed in the finally below
        except FileNotFoundError:
            return
        except OSError as err:
            msg = f"cannot read {target}: {err.strerror or err}"
            raise StoreCorruptError(msg, path=str(target)) from err
        try:
            size = os.fstat(handle.fileno()).st_size
            _check_cursor(handle, cursor, size, target)
            handle.seek(cursor.offset)
            offset, line_no = cursor.offset, cursor.line
            pending = b""
            while True:
                chunk = handle.read(_CHUNK)
                if not chunk:
                    break
                pending += chunk
                lines = pending.split(b"\n")
                pending = lines.pop()
                for raw in lines:
                    line_no += 1
                    offset += len(raw) + 1
                    record = _parse_line(raw, target, line_no, required, validate)
                    yield record, LogCursor(offset, line_no)
            if pending.strip():
                # No newline yet: a crash tore it, or a writer is still at work.
                # Either way it is not consumed, so a later read sees it whole.
                msg = (
                    f"{target}:{line_no + 1}: incomplete last line without a newline "
                    f"(torn by a crash?); not read"
                )
                warnings.warn(msg, LddWarning, stacklevel=3)
        finally:
            handle.close()

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
        pass it back as ``start`` to read only what was appended since.

        Torn-line rule: a line whose JSON ends before the value is complete (what a
        crash in the middle of a write leaves behind) is skipped with an
        :class:`LddWarning` naming the file and 1-based line; a last line without a
        newline is not consumed (the cursor stays before it) and is warned about.
        Blank lines are skipped.  Every other malformed line (invalid JSON, not an
        object, a required key missing, a value ``validate`` rejects) raises
        :class:`StoreCorruptError` naming the file and line.
        """
        records: list[dict[str, Any]] = []
        end = start if isinstance(start, LogCursor) else LogCursor(start, 0)
        for record, cursor in self.iter_jsonl(path, start=end, validate=validate):
            if record is not None:
                records.append(record)
            end = cursor
        return records, end

    def sync(self, logs: Iterable[LogName] | None = None) -> None:
        """fsync the logs that exist (default: all three; session end: nothing
        finished is lost)."""
        names: Iterable[LogName] = ("pairs", "observations", "sessions") if logs is None else logs
        for path in map(self.log_path, names):
            try:
                self._sync_one(path)
            except OSError as err:
                raise _os_error(err, path, "fsync") from err

    def _sync_one(self, path: str | os.PathLike[str]) -> None:
        held = self._appenders.get(os.fspath(path))
        if held is not None and held.pid == os.getpid():
            os.fsync(held.fd)
            return
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        except FileNotFoundError:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# ---------------------------------------------------------------------- helpers


_ENCODE = json.JSONEncoder(allow_nan=False, ensure_ascii=False).encode


def _metrics_text(doc: Mapping[str, Any]) -> str:
    """``metrics.json`` as text: one spec or state object per line.

    A diff of the committed file shows which metric changed, line by line, and each
    line is encoded by the C JSON encoder (``indent=`` would force the pure-Python
    one, which makes every update several times slower).
    """
    parts = []
    for key, value in doc.items():
        if isinstance(value, list) and value:
            items = ",\n".join(f"    {_ENCODE(item)}" for item in value)
            parts.append(f"  {_ENCODE(key)}: [\n{items}\n  ]")
        else:
            parts.append(f"  {_ENCODE(key)}: {_ENCODE(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


@contextmanager
def _os_errors(path: str | os.PathLike[str], action: str) -> Iterator[None]:
    """An operating-system failure (disk full, permissions) as a clear store error."""
    try:
        yield
    except OSError as err:
        raise _os_error(err, path, action) from err


_KINDS: Final = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _not_regular(path: Path, mode: int) -> StoreCorruptError:
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    shown = f"{path} (a link to {os.path.realpath(path)})" if path.is_symlink() else str(path)
    msg = f"{shown} must be a regular file, but it is {kind}; the store cannot use it"
    return StoreCorruptError(msg, path=str(path))


def _regular(path: str | os.PathLike[str]) -> os.stat_result | None:
    """``path``'s stat if it is a regular file, None if it does not exist.

    Anything else (a FIFO would hang a reader, a link to /dev/null swallow every
    line, a symlink loop) is a :class:`StoreCorruptError` saying what it is.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            msg = f"{path} is a symbolic link to {os.readlink(path)!r}, which does not exist"
            raise StoreCorruptError(msg, path=str(path)) from None
        return None
    except OSError as err:
        raise _os_error(err, path, "read") from err
    if not stat.S_ISREG(info.st_mode):
        raise _not_regular(Path(path), info.st_mode)
    return info


def _os_error(err: OSError, path: str | os.PathLike[str], action: str) -> StoreCorruptError:
    msg = f"cannot {action} {path}: {err.strerror or err}"
    return StoreCorruptError(msg, path=str(path))


def _encode_lines(
    target: str | os.PathLike[str], records: Sequence[Mapping[str, Any]]
) -> list[bytes]:
    return [text.encode("utf-8") + b"\n" for text in encode_records(records, str(target))]


def new_file_mode() -> int:
    """The mode an ordinary new file gets here (0o666 less the umask).

    ``tempfile.mkstemp`` creates files readable by their owner only; a file that
    replaces a store or report file must be as readable as one written plainly.
    """
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _reject_constant(name: str) -> Any:
    # json accepts NaN / Infinity by default; the store never holds them.
    msg = f"non-finite number {name} is not allowed"
    raise ValueError(msg)


class _DuplicateKeyError(ValueError):
    """A JSON object of metrics.json names one key twice."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json.loads keeps the last of duplicate keys silently; a store never guesses.
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        msg = f"an object holds the key {twice!r} twice"
        raise _DuplicateKeyError(msg)
    return result


def _check_metrics_shape(doc: object, path: Path) -> None:
    def bad(what: str, got: object) -> StoreCorruptError:
        msg = f"{path}: {what} (got {got!r}); the file was left untouched"
        return StoreCorruptError(msg, path=str(path))

    if not isinstance(doc, Mapping):
        raise bad("expected a JSON object with 'schema_version', 'specs', 'promotions'", doc)
    version = doc.get("schema_version")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise bad(f"'schema_version' must be {SCHEMA_VERSION}", version)
    for key in ("specs", "promotions"):
        value = doc.get(key)
        if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
            raise bad(f"{key!r} must be a list of objects", value)
    generated = doc.get("generated_at")
    if generated is not None and not isinstance(generated, str):
        raise bad("'generated_at' must be an ISO timestamp string", generated)


#: How many bytes before a stored position its fingerprint covers.
_CHECK_BYTES: Final = 512


def _fingerprint(handle: Any, offset: int, size: int) -> str | None:
    """A digest of the ``_CHECK_BYTES`` bytes before ``offset`` (None: file too short)."""
    if size < offset:
        return None
    first = max(0, offset - _CHECK_BYTES)
    handle.seek(first)
    data = handle.read(offset - first)
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def _log_cursor(cursor: object) -> LogCursor:
    if not isinstance(cursor, LogCursor):
        msg = f"a file store reads its own positions (LogCursor), not {cursor!r}"
        raise TypeError(msg)
    return cursor


def _check_cursor(handle: Any, cursor: LogCursor, size: int, path: Path) -> None:
    """A cursor past the end, or not after a newline, means the file was rewritten."""
    if cursor.offset == 0:
        return
    if cursor.offset > size:
        msg = (
            f"{path} is shorter ({size} bytes) than the recorded read position "
            f"({cursor.offset}): an append-only log was truncated or replaced"
        )
        raise StoreCorruptError(msg, path=str(path))
    handle.seek(cursor.offset - 1)
    if handle.read(1) != b"\n":
        msg = (
            f"{path}: the recorded read position {cursor.offset} is not at the start of "
            f"a line: an append-only log was rewritten"
        )
        raise StoreCorruptError(msg, path=str(path), line=cursor.line + 1)


def _is_truncated(text: str, err: json.JSONDecodeError) -> bool:
    """Whether ``text`` fails only because it ends early (a prefix of valid JSON)."""
    if err.msg.startswith("Unterminated string"):
        return True
    tail = text[err.pos :]
    if not tail:
        return True
    if tail.startswith("\\u") or err.msg.startswith("Invalid \\uXXXX"):
        return err.pos + 6 > len(text)
    if any(word.startswith(tail) for word in ("true", "false", "null")):
        return True
    return _NUMBER_TAIL.fullmatch(tail) is not None


def _parse_line(
    raw: bytes,
    path: Path,
    line_no: int,
    required: tuple[str, ...],
    validate: Callable[[dict[str, Any]], None] | None,
) -> dict[str, Any] | None:
    where = f"{path}:{line_no}"
    if not raw.strip():
        return None
    zeroed = b"\x00" in raw
    if zeroed:
        # NUL bytes are what a power loss leaves where a write had not reached the
        # disk: the line is torn, unless a complete record precedes the NULs.
        raw = raw.rstrip(b"\x00 \t\r")
        if not raw or b"\x00" in raw:
            _warn_torn(where)
            return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        if zeroed or (err.end >= len(raw.rstrip()) and "end of data" in str(err.reason)):
            _warn_torn(where)
            return None
        msg = f"{where}: line is not UTF-8 ({err})"
        raise StoreCorruptError(msg, path=str(path), line=line_no) from err
    text = text.rstrip()
    try:
        record = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        if zeroed or _is_truncated(text, err):
            _warn_torn(where)
            return None
        msg = f"{where}: line is not valid JSON ({err.msg} at column {err.colno}): {text[:80]!r}"
        raise StoreCorruptError(msg, path=str(path), line=line_no) from err
    except ValueError as err:
        msg = f"{where}: line is not valid JSON ({err}): {text[:80]!r}"
        raise StoreCorruptError(msg, path=str(path), line=line_no) from err
    if not isinstance(record, dict):
        msg = f"{where}: expected a JSON object (got {type(record).__name__}: {text[:80]!r})"
        raise StoreCorruptError(msg, path=str(path), line=line_no)
    missing = [key for key in required if key not in record]
    if missing:
        msg = f"{where}: record is missing required key(s) {missing} (got {sorted(record)})"
        raise StoreCorruptError(msg, path=str(path), line=line_no)
    if validate is not None:
        try:
            validate(record)
        except StoreCorruptError:
            raise
        except (ValueError, TypeError) as err:
            msg = f"{where}: {err}"
            raise StoreCorruptError(msg, path=str(path), line=line_no) from err
    return record


def _warn_torn(where: str) -> None:
    msg = f"{where}: skipped a line torn by an interrupted write (incomplete JSON)"
    warnings.warn(msg, LddWarning, stacklevel=5)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _fsync_dir(folder: Path) -> None:
    # Make the rename itself durable; directories cannot be opened on Windows.
    if os.name == "nt":  # pragma: no cover
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


if TYPE_CHECKING:

    def _is_a_store(store: TraceStore) -> Store:
        # The type checker proves here that the file store implements the protocol.
        return store
