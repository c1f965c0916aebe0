"""The store seam: what the registry and the calibrator may ask of a backend.

A :class:`Store` keeps three append-only logs (calibration pairs, observations,
session records) and one registry document (specs and states).  The registry and
the calibrator see only this protocol; they never learn which backend they hold.
Read positions in the pair log are :class:`Cursor` objects that only the store
that made them interprets.

Backends live in their own modules and are named in :data:`BACKENDS`; adding one
means adding its module and one line there.  :func:`open_store` picks the backend
from a URL's scheme (``files`` is the default: a folder path, or no location at all,
is the project's ``.ldd/`` folder).
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Final, Literal, Protocol

from pytest_ldd.errors import InvalidSpecError
from pytest_ldd.model.records import PairError

__all__ = [
    "BACKENDS",
    "SCHEMA_VERSION",
    "Cursor",
    "LogName",
    "PairRead",
    "StalePosition",
    "Store",
    "check_project_key",
    "masked",
    "open_store",
]

#: The ``schema_version`` of the registry document this code reads and writes.
SCHEMA_VERSION: Final = 1

#: The three logs of a store: calibration pairs, observations, session records.
LogName = Literal["pairs", "observations", "sessions"]

#: Backends by URL scheme: ``"module:attribute"`` of a class with a ``from_url``
#: constructor (see :func:`open_store`).  The module is imported only when used.
BACKENDS: Final[Mapping[str, str]] = {
    "file": "pytest_ldd.store.files:TraceStore",
    "postgresql": "pytest_ldd.store.postgres:PostgresStore",
    "postgres": "pytest_ldd.store.postgres:PostgresStore",
}

_SCHEME: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_PASSWORD: Final = re.compile(r"(?<=://)([^/@:]*):[^/@]*@")


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


def check_project_key(key: object, *, where: str = "[tool.ldd] project") -> str:
    """``key`` if it is a valid project key, else an error naming ``where``."""
    if (
        not isinstance(key, str)
        or not key
        or len(key) > 200
        or key != key.strip()
        or any(ord(ch) < 32 for ch in key)
    ):
        msg = (
            f"{where} must be a non-empty name of at most 200 printable characters "
            f"without surrounding spaces (got {key!r})"
        )
        raise InvalidSpecError(msg)
    return key


def masked(location: str) -> str:
    """``location`` with the password of a URL replaced by ``***``."""
    return _PASSWORD.sub(lambda m: f"{m.group(1)}:***@", location)


def open_store(
    project: str | os.PathLike[str],
    location: str | os.PathLike[str] | None = None,
    *,
    key: str | None = None,
) -> Store:
    """The store at ``location`` for the project folder ``project``.

    ``location`` is a URL (a str) whose scheme names a backend in :data:`BACKENDS`,
    or a folder path (taken from ``project`` when relative), or None for the
    project's ``.ldd/`` folder.  ``key`` is the project's key (``[tool.ldd]
    project``), which a store shared by several projects requires.
    """
    text = None if location is None else os.fspath(location)
    match = _SCHEME.match(location) if isinstance(location, str) else None
    if text is None or match is None:
        folder: Store = _backend("file")(project, ldd_dir=None if text is None else Path(text))
        return folder
    scheme = match.group(1).lower()
    if scheme not in BACKENDS:
        msg = (
            f"store {masked(text)!r} has an unknown scheme {scheme!r} "
            f"(expected one of {', '.join(f'{s}://' for s in BACKENDS)}, or a folder path)"
        )
        raise InvalidSpecError(msg)
    store: Store = _backend(scheme).from_url(text, project=Path(project), key=key)
    return store


def _backend(scheme: str) -> Any:
    # Imported by name, and only when used: a backend's driver may be an extra.
    module, _, name = BACKENDS[scheme].partition(":")
    return getattr(importlib.import_module(module), name)
