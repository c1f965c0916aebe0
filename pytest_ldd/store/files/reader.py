"""Reading the file store's JSON Lines logs: positions, the torn-line rule, strict lines.

A read position is a :class:`LogCursor`: a byte offset just after a newline, and the
line count before it, so an incremental read names the 1-based line of a malformed
record without counting from the start.  :func:`iter_jsonl` streams the complete
lines from a cursor; :class:`LogPositions` stores a position of the pair log with a
fingerprint of the bytes before it, and refuses it back once those bytes changed.

Torn-line rule: a line whose JSON ends before the value is complete (what a crash in
the middle of a write leaves behind) is skipped with an :class:`LddWarning` naming
the file and 1-based line; a last line without a newline is not consumed (the
cursor stays before it) and is warned about.  Blank lines are skipped.  Every other
malformed line (invalid JSON, not an object, a required key missing, a value the
validator rejects) raises :class:`StoreCorruptError` naming the file and line.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, final

try:  # the builtin module: hashlib loads OpenSSL first, a few ms of every command
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import blake2b

from pytest_ldd.errors import LddWarning, StoreCorruptError
from pytest_ldd.model.records import check_pair_line, pair_error
from pytest_ldd.store.document import reject_constant
from pytest_ldd.store.files.disk import os_error, regular
from pytest_ldd.store.protocol import PairRead, StalePosition

__all__ = ["LogCursor", "LogPositions", "iter_jsonl", "log_cursor", "read_jsonl", "read_pairs"]

_CHUNK: Final = 1 << 20

#: How many bytes before a stored position its fingerprint covers.
_CHECK_BYTES: Final = 512

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


def log_cursor(cursor: object) -> LogCursor:
    """``cursor`` if it is a file store's position (a ``TypeError`` otherwise)."""
    if not isinstance(cursor, LogCursor):
        msg = f"a file store reads its own positions (LogCursor), not {cursor!r}"
        raise TypeError(msg)
    return cursor


def iter_jsonl(
    path: str | os.PathLike[str],
    *,
    start: LogCursor | int = 0,
    required: tuple[str, ...] = (),
    validate: Callable[[dict[str, Any]], None] | None = None,
    complete_tail: bool = False,
) -> Iterator[tuple[dict[str, Any] | None, LogCursor]]:
    """Stream the complete lines of ``path`` from ``start`` (the torn-line rule above).

    Yields ``(record, cursor)`` for every line consumed, ``cursor`` being the
    position just after it; ``record`` is ``None`` for a skipped line (blank, or
    torn by a crash).  A record must hold the ``required`` keys; ``validate`` may
    raise ``ValueError`` / ``TypeError`` / ``LddError`` for one.  A missing file
    yields nothing.

    ``complete_tail``: a last line without its newline is read too when it holds a
    complete record (a file no writer is appending to: a complete record is a
    record); one that is not complete is skipped as torn, with the warning.
    """
    target = Path(path)
    cursor = start if isinstance(start, LogCursor) else LogCursor(start, 0)
    try:
        if regular(target) is None:
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
        if pending.strip() and complete_tail:
            record = _parse_line(pending, target, line_no + 1, required, validate)
            if record is not None:
                yield record, LogCursor(offset + len(pending), line_no + 1)
        elif pending.strip():
            # No newline yet: a crash tore it, or a writer is still at work.
            # Either way it is not consumed, so a later read sees it whole.
            msg = (
                f"{target}:{line_no + 1}: incomplete last line without a newline "
                f"(torn by a crash?); not read"
            )
            warnings.warn(msg, LddWarning, stacklevel=4)
    finally:
        handle.close()


def read_jsonl(
    path: str | os.PathLike[str],
    *,
    start: LogCursor | int = 0,
    required: tuple[str, ...] = (),
    validate: Callable[[dict[str, Any]], None] | None = None,
) -> tuple[list[dict[str, Any]], LogCursor]:
    """The records of :func:`iter_jsonl` as a list, and the cursor after the last line."""
    records: list[dict[str, Any]] = []
    end = start if isinstance(start, LogCursor) else LogCursor(start, 0)
    for record, cursor in iter_jsonl(path, start=end, required=required, validate=validate):
        if record is not None:
            records.append(record)
        end = cursor
    return records, end


def read_pairs(path: Path, begin: LogCursor, required: tuple[str, ...]) -> Iterator[PairRead]:
    """The pair log read from ``begin``: ``(begin, errors, end)`` per line.

    A line of raw values (the reference tool's, outside [0, 1]) carries a
    :class:`RawPair` for the reader that knows the spec to normalize.
    """
    for record, end in iter_jsonl(path, start=begin, required=required, validate=check_pair_line):
        if record is None:
            yield begin, (), end
            begin = end
            continue
        yield begin, (pair_error(record, f"{path}:{end.line}"),), end
        begin = end


class LogPositions:
    """Stored positions of one log: fingerprinted when stored, checked when read back.

    A metric's counted span is stored in ``metrics.json`` as byte positions of the
    pair log.  Were the log truncated, removed or rewritten since, counting on from
    there would count other pairs (or none): the bytes just before the end position
    are fingerprinted when it is stored (``log_check``), and compared when it is read
    back (:class:`StalePosition` when they differ).
    """

    __slots__ = ("_checks", "path")

    def __init__(self, path: Path) -> None:
        self.path = path
        # Fingerprints of positions by (device, inode, offset).
        self._checks: dict[tuple[int, int, int], str] = {}

    def to_json(self, start: LogCursor, end: LogCursor) -> dict[str, Any]:
        """``{"start": {"offset", "line"}, "log_offset", "log_line", "log_check"}``.

        ``log_check`` is null at offset 0.
        """
        return {
            "start": start.to_json(),
            "log_offset": end.offset,
            "log_line": end.line,
            "log_check": self._check(end.offset),
        }

    def _check(self, offset: int) -> str | None:
        """The fingerprint of the log's bytes before ``offset`` (None at 0)."""
        if offset == 0:
            return None
        path = self.path
        try:
            regular(path)
            with open(path, "rb") as handle:
                info = os.fstat(handle.fileno())
                key = (info.st_dev, info.st_ino, offset)
                cached = self._checks.get(key)
                if cached is not None and info.st_size >= offset:
                    return cached
                check = _fingerprint(handle, offset, info.st_size)
        except OSError as err:
            raise os_error(err, path, "read") from err
        if check is None:
            msg = f"{path} is shorter than the read position {offset} being stored"
            raise StoreCorruptError(msg, path=str(path))
        if len(self._checks) > 64:
            self._checks.clear()
        self._checks[key] = check
        return check

    def from_json(self, data: Mapping[str, Any]) -> tuple[LogCursor, LogCursor]:
        """Read :meth:`to_json`'s keys (KeyError, TypeError or ValueError if bad).

        The position must still name the same content: the log at least that long,
        the byte before it a newline, and the bytes before it those fingerprinted
        when it was stored (positions stored without one are checked for the first
        two).  Otherwise :class:`StalePosition`.
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
        path = self.path
        try:
            regular(path)
            with open(path, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                found = _fingerprint(handle, end.offset, size)
                # _fingerprint read up to the position: its last byte ends a line.
                handle.seek(end.offset - 1)
                boundary = found is not None and handle.read(1) == b"\n"
        except FileNotFoundError:
            found, boundary, size = None, False, 0
        except OSError as err:
            raise os_error(err, path, "read") from err
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


def _fingerprint(handle: Any, offset: int, size: int) -> str | None:
    """A digest of the ``_CHECK_BYTES`` bytes before ``offset`` (None: file too short)."""
    if size < offset:
        return None
    first = max(0, offset - _CHECK_BYTES)
    handle.seek(first)
    data = handle.read(offset - first)
    return blake2b(data, digest_size=8).hexdigest()


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
        record = json.loads(text, parse_constant=reject_constant)
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
