"""Appending to the file store's logs: whole lines or none, and a memory of one's own.

A :class:`LogAppender` keeps each log it wrote to open (a session appends once per
test) and writes under the store's lock, which its caller holds:

- a log whose last line was torn by a crash first gets its newline, so the new lines
  start on their own;
- a write the disk refuses half-way (full, a size limit) is taken back, so no torn
  line is left behind;
- a log whose path no longer names the open file (removed, replaced, renamed; the
  folder moved) is opened afresh.

It also remembers its own latest uninterrupted run of appends to each log
(:class:`OwnAppends`) with what the writer said each line counts, so the statistics
update at the end of a session counts the session's own pairs without reading them
back (:meth:`LogAppender.own_pairs`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, final

from pytest_ldd.store.files.disk import not_regular, os_error, regular, write_all
from pytest_ldd.store.files.reader import LogCursor
from pytest_ldd.store.protocol import PairRead

__all__ = ["MAX_REMEMBERED_LINES", "LogAppender", "OwnAppends"]

#: How many lines of its own appends a store remembers (see :class:`OwnAppends`).
MAX_REMEMBERED_LINES: Final = 200_000


@final
@dataclass(slots=True)
class OwnAppends:
    """An uninterrupted run of one store's appends to one log.

    ``batches`` holds ``(start offset, facts)`` per append, ``facts`` being what
    the writer said about its lines (one entry per line, in order); ``lines``
    counts the lines from ``start`` to ``end``.  At most ``MAX_REMEMBERED_LINES``
    lines are remembered.
    """

    pid: int
    ident: tuple[int, int]
    start: int
    end: int
    lines: int
    batches: list[tuple[int, Sequence[Any]]]


@final
class _OpenLog:
    """A log kept open for appending, and where its last write ended."""

    __slots__ = ("end", "fd", "generation", "ident", "pid")

    def __init__(self, pid: int, fd: int, generation: int, ident: tuple[int, int]) -> None:
        self.pid = pid
        self.fd = fd
        self.generation = generation
        #: The (device, inode) of the file opened: the log while its path still has it.
        self.ident = ident
        self.end = -1


class LogAppender:
    """The open logs of one store and the memory of its own appends (see the module)."""

    __slots__ = ("_open", "_runs", "remembered")

    def __init__(self, remembered: int = MAX_REMEMBERED_LINES) -> None:
        #: The most lines of own appends remembered per log; past it, readers read back.
        self.remembered = remembered
        self._runs: dict[str, OwnAppends] = {}
        self._open: dict[str, _OpenLog] = {}

    def write(
        self,
        batches: Sequence[tuple[str | os.PathLike[str], bytes]],
        counts: Sequence[int],
        *,
        fsync: bool,
        facts: Sequence[Sequence[Any] | None] | None,
        generation: int,
    ) -> list[int]:
        """Append each batch of encoded lines to its log; the end offsets.

        The caller holds the store's lock; ``generation`` is the lock file's (a new
        one means a new folder).  ``counts`` gives the lines of each batch and
        ``facts`` (one entry per batch, or None) what they count, remembered with it.
        """
        ends: list[int] = []
        # No context managers, one getpid, paths as str: this runs once per test.
        pid = os.getpid()
        for index, (target, data) in enumerate(batches):
            key = os.fspath(target)
            try:
                start, end, ident = self._append(key, data, fsync, generation, pid)
            except OSError as err:
                raise os_error(err, target, "append to") from err
            ends.append(end)
            if data:
                known = facts[index] if facts is not None else None
                self._remember(key, ident, start, end, counts[index], known, pid)
        return ends

    def _remember(
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
        if run.lines > self.remembered:
            # Memory stays bounded; past this, readers read the log itself.
            del self._runs[key]

    def _append(
        self, key: str, data: bytes, fsync: bool, generation: int, pid: int
    ) -> tuple[int, int, tuple[int, int]]:
        """Append encoded lines to the log at path ``key`` (the caller holds the lock).

        Returns where the lines start and end, and the file's (device, inode).
        """
        held = self._open.get(key)
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
                self._close(key)
                held = info = None
        if held is None or info is None:
            regular(key)  # a FIFO, a link to /dev/null or nowhere: named, never used
            flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)
            try:
                fd = os.open(key, flags, 0o644)
            except FileNotFoundError:
                Path(key).parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(key, flags, 0o644)
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                os.close(fd)
                raise not_regular(Path(key), info.st_mode)
            held = self._open[key] = _OpenLog(pid, fd, generation, (info.st_dev, info.st_ino))
        size, ident = info.st_size, held.ident
        if not data:
            return size, size, ident
        if size > 0 and size != held.end:
            # Someone else wrote last: make sure their last line ended.
            os.lseek(held.fd, size - 1, os.SEEK_SET)
            if os.read(held.fd, 1) != b"\n":
                # A line torn by a crash: end it, so the new lines start on their own.
                write_all(held.fd, b"\n")
                size += 1
        held.end = -1  # until the write is known to be whole
        try:
            write_all(held.fd, data)
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

    def sync(self, path: str | os.PathLike[str]) -> bool:
        """fsync the log at ``path`` if this appender holds it open (False if not)."""
        if not self.holds_open(path):
            return False
        os.fsync(self._open[os.fspath(path)].fd)
        return True

    def holds_open(self, path: str | os.PathLike[str]) -> bool:
        """Whether this appender holds the log at ``path`` open in this process."""
        held = self._open.get(os.fspath(path))
        return held is not None and held.pid == os.getpid()

    def _close(self, key: str) -> None:
        held = self._open.pop(key, None)
        if held is not None and held.pid == os.getpid():
            with suppress(OSError):
                os.close(held.fd)

    def close(self) -> None:
        """Close every log held open (they are reopened when needed)."""
        for key in list(self._open):
            self._close(key)

    def own_appends(self, path: str | os.PathLike[str]) -> OwnAppends | None:
        """This appender's latest uninterrupted run of appends to ``path`` (or None).

        Only batches appended with ``facts`` count.  Whether nobody else wrote to
        the file since is for the caller to check: the run's ``end`` must still be
        the file's size and its ``ident`` the file's (device, inode).
        """
        run = self._runs.get(os.fspath(path))
        if run is None or run.pid != os.getpid():
            return None
        return run

    def own_pairs(self, path: Path, begin: LogCursor) -> list[PairRead] | None:
        """The pairs past ``begin`` from memory, if only this appender wrote them (else None).

        They come from memory while its latest run still ends the very file (same
        device, inode and size) and ``begin`` is where one of its batches starts (or
        where it ends); one step per batch then.
        """
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
