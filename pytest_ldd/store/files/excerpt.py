"""An excerpt of a long JSON Lines log: its tail, and an even sample of the rest by bytes.

:func:`read_excerpt` reads a log whole while it is at most ``budget`` bytes.  A longer
log is read as

- the **tail**, the last ``budget / 2`` bytes, every line of it (the recent sessions
  in full detail);
- an **even sample** of the rest: ``samples`` probes at evenly spaced byte offsets,
  each reading the one line that starts after it.

Both are deterministic: the same file gives the same excerpt, in file order.  Lines
of similar length make the byte-even sample close to a line-even one.  The cost is
about ``budget / 2 + samples x 1 KB`` of reading, whatever the size of the log.

In an excerpt a line that is not a JSON object of the log's shape is skipped with an
:class:`~pytest_ldd.errors.LddWarning` naming the file and byte offset (a whole read
applies the store's strict rules, and ``ldd metric verify`` reads every line).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, BinaryIO, Final

from pytest_ldd.errors import LddWarning
from pytest_ldd.model.records import check_line
from pytest_ldd.store.protocol import LogExcerpt, LogName

__all__ = ["read_excerpt"]

#: Bytes read at each probe; a longer line is read on, up to _MAX_LINE.
_WINDOW: Final = 1024
_MAX_LINE: Final = 1 << 20


def read_excerpt(
    path: Path,
    log: LogName,
    *,
    budget: int | None,
    samples: int,
    whole: Callable[[], Iterable[dict[str, Any] | None]],
) -> LogExcerpt:
    """The records of the log file ``path``: whole up to ``budget`` bytes, else an excerpt.

    ``whole`` reads every record with the store's own rules; it serves a short log
    and ``budget`` None.  A missing file is an empty log.
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return LogExcerpt()
    if budget is None or size <= budget:
        return LogExcerpt([r for r in whole() if r is not None], True, size, 0, 0)
    if budget < 2 or samples < 0:
        msg = f"'budget' must be >= 2 and 'samples' >= 0 (got {budget!r}, {samples!r})"
        raise ValueError(msg)
    with open(path, "rb") as handle:
        tail_from = _line_start(handle, size - budget // 2)
        records: list[dict[str, Any]] = []
        seen: set[int] = set()
        for i in range(samples):
            start = _line_start(handle, i * tail_from // samples)
            if start >= tail_from or start in seen:
                continue
            seen.add(start)
            raw = _line_at(handle, start, tail_from)
            record = _parse(raw, path, start, log) if raw is not None else None
            if record is not None:
                records.append(record)
        sampled = len(records)
        handle.seek(tail_from)
        offset = tail_from
        data = handle.read(size - tail_from)
        lines = data.split(b"\n")
        # Without a final newline the last line is still being written: not read.
        for raw in lines[:-1]:
            record = _parse(raw, path, offset, log)
            if record is not None:
                records.append(record)
            offset += len(raw) + 1
    return LogExcerpt(records, False, size, tail_from, sampled)


def _line_start(handle: BinaryIO, offset: int) -> int:
    """The offset of the first line that starts at or after ``offset``."""
    if offset <= 0:
        return 0
    position = offset - 1
    while True:
        handle.seek(position)
        chunk = handle.read(_WINDOW)
        if not chunk:
            return position
        found: int = chunk.find(b"\n")
        if found >= 0:
            return position + found + 1
        position += len(chunk)
        if position - offset > _MAX_LINE:
            return position


def _line_at(handle: BinaryIO, start: int, end: int) -> bytes | None:
    """The line starting at ``start`` (without its newline), if it ends before ``end``."""
    handle.seek(start)
    data = b""
    while len(data) <= _MAX_LINE:
        chunk = handle.read(_WINDOW)
        if not chunk:
            return None
        data += chunk
        found = data.find(b"\n")
        if found >= 0:
            return data[:found] if start + found < end else None
    return None


def _parse(raw: bytes, path: Path, offset: int, log: LogName) -> dict[str, Any] | None:
    text = raw.strip()
    if not text:
        return None
    try:
        record = json.loads(text)
    except ValueError:
        record = None
    problem = "not a JSON object"
    if isinstance(record, dict):
        # The same rules as a whole read (records.check_line), so no line of an
        # unexpected shape reaches the report.
        try:
            check_line[log](record)
        except KeyError as err:
            problem = f"no {err.args[0]!r} key"
        except (TypeError, ValueError) as err:
            problem = str(err)
        else:
            return record
    msg = (
        f"{path}: skipped the line at byte {offset} of a sampled read: {problem} "
        "(ldd metric verify reads every line)"
    )
    warnings.warn(msg, LddWarning, stacklevel=5)
    return None
