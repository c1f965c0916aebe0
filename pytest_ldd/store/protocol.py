"""The store seam: what the registry and the calibrator may ask of a backend.

A :class:`Store` keeps three append-only logs (calibration pairs, observations,
session records) and one registry document (specs and states).  The registry and
the calibrator see only this protocol; they never learn which backend they hold.
Read positions in the pair log are :class:`Cursor` objects that only the store
that made them interprets.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol, final

from pytest_ldd.model.records import PairError

__all__ = ["SAMPLE_LINES", "Cursor", "LogExcerpt", "LogName", "PairRead", "StalePosition", "Store"]

#: The three logs of a store: calibration pairs, observations, session records.
LogName = Literal["pairs", "observations", "sessions"]

#: Lines an excerpt samples evenly from the part of a long log before its tail.
SAMPLE_LINES: Final = 3000


class StalePosition(Exception):
    """A stored read position no longer names the same content of the log.

    Raised by :meth:`Store.position_from_json` when the log was truncated, removed
    or rewritten since the position was stored; the registry then recounts the
    metric from the start of the log, with a warning (the message says why).
    """


class Cursor(Protocol):
    """A read position in a store's pair log, opaque above the store.

    Each backend defines its own.  The registry and the calibrator only keep
    cursors, compare them (a later position is greater, equal ones are equal) and
    hand them back to the store that made them.
    """

    def __lt__(self, other: Any, /) -> bool: ...

    def __le__(self, other: Any, /) -> bool: ...


#: One step of :meth:`Store.read_pairs`: ``(begin, errors, end)``, the pairs stored
#: between the positions ``begin`` and ``end`` as :data:`pytest_ldd.model.records.PairError`
#: tuples (possibly none: a skipped line still moves the position).
PairRead = tuple[Cursor, Sequence[PairError], Cursor]


@final
@dataclass(frozen=True, slots=True)
class LogExcerpt:
    """The records read of one log, in log order, and how they were chosen.

    A report of a long history must not cost what the history costs: at a million
    pairs the logs hold some 600 MB, and a page a person reads needs a few thousand
    points.  An excerpt is the whole log while it is at most a budget of bytes; of a
    longer one, the **tail** (the last half of the budget, every record of it) and an
    **even sample** of the rest.  Both are deterministic: the same log gives the same
    excerpt.  See :meth:`Store.read_excerpt`.
    """

    records: list[dict[str, Any]] = field(default_factory=list)
    #: Every record was read.
    complete: bool = True
    #: Size of the log in bytes (0 where the backend does not count bytes).
    size: int = 0
    #: Byte offset from which every record was read (0 when complete).
    tail_from: int = 0
    #: Records read by the even sample before the tail (0 when complete).
    sampled: int = 0

    def describe(self) -> dict[str, Any]:
        """The excerpt as a JSON object (``history.sampling`` of the report)."""
        return {
            "complete": self.complete,
            "bytes": self.size,
            "tail_bytes": self.size - self.tail_from,
            "sampled_lines": self.sampled,
            "records": len(self.records),
        }


class Store(Protocol):
    """A backend: three append-only logs and one registry document, behind one lock.

    Appends are atomic per call and never lose or tear a record when several
    writers run at once.  ``lock`` is the exclusive lock (or transaction) under
    which the registry reads, changes and replaces its document.  Reading never
    creates anything.  Every failure of the backend is a
    :class:`~pytest_ldd.errors.StoreCorruptError` naming what failed.
    """

    @property
    def location(self) -> str:
        """Where the store is, for messages (a database URL with its password masked)."""
        ...

    @property
    def registry_location(self) -> str:
        """Where the registry document is, for messages (``.../metrics.json``)."""
        ...

    def exists(self) -> bool:
        """Whether anything was ever written to the store."""
        ...

    def lock(self) -> AbstractContextManager[None]:
        """Hold the store's exclusive lock (re-entrant within a process and thread)."""
        ...

    def read_lock(self) -> AbstractContextManager[None]:
        """Hold what makes a read consistent with concurrent appends; creates nothing."""
        ...

    def atomic(self) -> AbstractContextManager[Store]:
        """Hold the lock for a unit of writes applied whole or not at all.

        Yields the store to read and write within the unit (the store itself inside
        a database transaction, or a staged copy of a folder); every write to it is
        applied when the ``with`` block ends, none when it raises.
        """
        ...

    def take_unsaved(self) -> tuple[list[str], list[str]]:
        """The observation and pair lines :meth:`append_lines` took but no write
        stored (a database out of reach), handed over and forgotten; usually none."""
        ...

    # -- the registry document

    def read_registry_bytes(self) -> bytes | None:
        """The stored registry document as its serialized bytes (None: none stored).

        Bytes, so a reader can tell cheaply whether it changed since it last read it.
        """
        ...

    def parse_registry(self, data: bytes) -> dict[str, Any]:
        """Parse and check :meth:`read_registry_bytes`'s bytes."""
        ...

    def replace_registry(self, doc: Mapping[str, Any]) -> bytes:
        """Replace the registry document atomically; return the bytes stored."""
        ...

    # -- the logs

    def append_pairs(self, records: Sequence[Mapping[str, Any]], *, fsync: bool = False) -> None:
        """Append pairs (the dicts of :class:`~pytest_ldd.model.records.CalibrationRecord`)."""
        ...

    def append_observations(
        self, records: Sequence[Mapping[str, Any]], *, fsync: bool = False
    ) -> None:
        """Append observations (dicts of :class:`~pytest_ldd.model.records.ObservationRecord`)."""
        ...

    def append_sessions(
        self, records: Sequence[Mapping[str, Any]], *, fsync: bool = False
    ) -> None:
        """Append session records (one per ``--ldd`` session)."""
        ...

    def append_lines(
        self,
        observations: Sequence[str],
        pairs: Sequence[str],
        errors: Sequence[PairError] | None = None,
    ) -> None:
        """Append observations and pairs already encoded as JSON text, in one write.

        The texts come from :func:`pytest_ldd.model.records.observation_text` and
        :func:`~pytest_ldd.model.records.pair_text`; ``errors`` (one per pair, or None)
        says what the pairs count, so a backend may count its own appends without
        reading them back.
        """
        ...

    def origin(self) -> Cursor:
        """The position before the first pair."""
        ...

    def read_pairs(
        self, cursors: Collection[Cursor], *, recount: bool = False
    ) -> Iterator[PairRead]:
        """The pairs stored past the earliest of ``cursors``, in order.

        Every cursor must be a position this store handed out for its current
        content; one that is not (a truncated or replaced log) is a
        :class:`~pytest_ldd.errors.StoreCorruptError`.  With ``recount`` the stored
        pairs themselves are read, never a backend's memory of its own appends.
        """
        ...

    def iter_log(
        self, log: LogName, *, start: Cursor | None = None
    ) -> Iterator[tuple[dict[str, Any] | None, Cursor]]:
        """Stream a log's records from ``start`` as ``(record, position after it)``.

        ``record`` is None for a skipped entry (a line torn by a crash, warned about).
        """
        ...

    def read_log(
        self, log: LogName, *, start: Cursor | None = None
    ) -> tuple[list[dict[str, Any]], Cursor]:
        """A log's records from ``start``, and the position after the last one."""
        ...

    def read_excerpt(
        self, log: LogName, *, budget: int | None = None, samples: int = SAMPLE_LINES
    ) -> LogExcerpt:
        """A log's records: whole up to ``budget`` bytes, else an excerpt (:class:`LogExcerpt`).

        ``budget`` None reads every record with the store's own rules (torn lines
        warned about, malformed ones an error); so does a backend that cannot read a
        part of a log cheaply.  In an excerpt a record of the wrong shape is skipped
        with an :class:`~pytest_ldd.errors.LddWarning` (``ldd metric verify`` reads
        every one).  A missing log is an empty one.
        """
        ...

    def position_json(self, start: Cursor, end: Cursor) -> dict[str, Any]:
        """The stored form of a metric's counted span (keys of its ``calibration`` object)."""
        ...

    def position_from_json(self, data: Mapping[str, Any]) -> tuple[Cursor, Cursor]:
        """Read :meth:`position_json`'s keys back (KeyError, TypeError or ValueError if bad).

        :class:`StalePosition` when the positions no longer name the content they
        were stored for (the log was truncated, removed or rewritten since).
        """
        ...

    def sync(self, logs: Iterable[LogName] | None = None) -> None:
        """Make what was appended to ``logs`` (default: all) durable."""
        ...

    def close(self) -> None:
        """Release what the store holds open (it reopens what it needs)."""
        ...
