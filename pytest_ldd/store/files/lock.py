"""The store folder's lock: one OS file lock per folder and process, re-entrant.

Every write to a ``.ldd/`` folder holds ``.ldd/.lock`` exclusively, so many writers
at once (xdist controllers, two pytest runs, the ``ldd`` command) never lose or tear
a line.  The lock is ``flock(2)`` on POSIX, where the standard library has it, and
portalocker's on Windows (portalocker, which does the same, costs ~40 ms to import
and more at exit, paid by every session).

An OS file lock belongs to an open file, so two handles on the same file in one
process would block each other: every store of a process shares one
:class:`ProcessLock` per lock file (:func:`process_lock`), re-entrant and safe
across threads.  It lives as long as a store uses it: a process that opens many
stores (a test suite) does not keep a lock file open for each one it ever used.
A :class:`FolderLock` is one store's way to it: the folder made on first use, a
timeout named in the error.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pytest_ldd.errors import StoreCorruptError
from pytest_ldd.model import clock
from pytest_ldd.store.files.disk import ensure_folder, os_error

__all__ = ["FolderLock", "LockBusy", "ProcessLock", "process_lock"]


class LockBusy(Exception):
    """The lock is held elsewhere (another process, or another thread of this one)."""


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


class ProcessLock:
    """The exclusive lock on one lock file, shared by every store of this process.

    Re-entrant (a depth count) and safe across threads (a thread lock around it).
    The lock file stays open: the plugin takes the lock once per test.
    """

    __slots__ = ("__weakref__", "_depth", "_handle", "_ident", "_path", "_thread", "generation")

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
        """Take the lock, waiting at most ``timeout`` seconds (LockBusy after)."""
        if not self._thread.acquire(timeout=timeout):
            msg = "held by another thread of this process"
            raise LockBusy(msg)
        try:
            if self._depth == 0:
                self._lock_file(timeout)
        except BaseException:
            self._thread.release()
            raise
        self._depth += 1

    def _lock_file(self, timeout: float) -> None:
        deadline = clock.monotonic() + timeout
        while True:
            if self._handle is None:
                Path(self._path).parent.mkdir(parents=True, exist_ok=True)
                self._handle = open(self._path, "a")  # noqa: SIM115 - kept open on purpose
                held = os.fstat(self._handle.fileno())
                self._ident = (held.st_ino, held.st_dev)
                self.generation += 1
            if not _try_lock(self._handle):
                if clock.monotonic() >= deadline:
                    raise LockBusy("held by another process")
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
        """Give back one level of the lock (the file is unlocked at the outermost)."""
        self._depth -= 1
        try:
            if self._depth == 0:
                _unlock(self._handle)
        finally:
            self._thread.release()


# Keyed by process too: a forked child must not share its parent's open lock file.
# Weak: a lock (and its open file) goes with the last store that uses it.
_LOCKS: weakref.WeakValueDictionary[tuple[int, str], ProcessLock] = weakref.WeakValueDictionary()
_LOCKS_GUARD = threading.Lock()


def process_lock(path: str | os.PathLike[str]) -> ProcessLock:
    """This process's lock on the lock file ``path`` (one per file and process)."""
    key = (os.getpid(), os.path.abspath(path))
    with _LOCKS_GUARD:
        lock = _LOCKS.get(key)
        if lock is None:
            lock = _LOCKS[key] = ProcessLock(key[1])
        return lock


class FolderLock:
    """One store's lock of its folder: ``folder/.lock``, taken within ``timeout`` s.

    Taking it creates the folder (only writers lock).  Waiting longer than
    ``timeout`` seconds raises :class:`StoreCorruptError` naming the lock file.
    """

    __slots__ = ("_cache", "folder", "path", "timeout")

    def __init__(self, folder: Path, path: Path, timeout: float) -> None:
        self.folder = folder
        self.path = path
        self.timeout = timeout
        self._cache: tuple[int, ProcessLock] | None = None

    def acquire(self) -> ProcessLock:
        """Take the lock; the caller releases what is returned."""
        pid = os.getpid()
        cached = self._cache
        if cached is None or cached[0] != pid:
            # Once per store and process: the folder, the path, the shared lock.
            ensure_folder(self.folder)
            cached = self._cache = (pid, process_lock(self.path))
        lock = cached[1]
        try:
            lock.acquire(self.timeout)
        except OSError as err:
            raise os_error(err, self.path, "lock") from err
        except LockBusy:
            msg = (
                f"could not lock {self.path} within {self.timeout:g} s: another "
                f"process holds it (a hung pytest or ldd command?); stop it and retry"
            )
            raise StoreCorruptError(msg, path=str(self.path)) from None
        return lock

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lock for the ``with`` block."""
        lock = self.acquire()
        try:
            yield
        finally:
            lock.release()
