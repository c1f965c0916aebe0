"""Reading the records the child sends through the parent's pipe.

One record per line: ``<hex HMAC-SHA256 of the payload> <JSON payload>``, the key a
fresh random one per run, handed to the child on its standard input.  Every payload
holds ``seq`` (0, 1, 2, ... with no gap) and ``kind``:

- ``confinement`` (``level``, ``detail``) -- how the kernel confines the process that
  runs the workspace's code (``"landlock"`` or ``"none"``, and why); sent once, before
  ``hello`` and so before any workspace code ran;
- ``hello`` -- the runner started and imported pytest;
- ``fatal`` (``detail``) -- the runner could not start pytest (a setup problem); only
  ever the first record: one after ``hello`` was sent by code that stole the key;
- ``collected`` (``ids``) -- node ids collected, in chunks;
- ``deselected`` (``ids``) -- node ids the hidden suite's configuration deselected;
- ``collect_error`` (``id``, ``detail``) -- a file or folder failed to collect;
- ``collect_skip`` (``id``) -- a file or folder was skipped whole at collection;
- ``module`` (``id``) -- a test file was collected (its tests may all be deselected);
- ``test`` (``id``, ``outcome``, and ``line`` for a failed test whose test file it
  left at that line) -- one finished test, setup to teardown;
- ``liar`` (``id``, ``detail``) -- a workspace value in a hidden test's comparison made
  a claim about a probe no honest value can make (the test failed for it);
- ``inconclusive`` (``id``, ``detail``) -- the grader could not grade that test (a limit
  of the isolation, not a fault of the workspace); ``id`` may be empty;
- ``internal_error`` (``detail``, ``grader``) -- pytest ended with an internal error;
  ``grader`` says whether the sandbox's own code was in its traceback;
- ``integrity`` (``path``, ``detail``) -- a module file of the staged hidden tests was
  refused at import: changed, swapped or never staged (the import failed);
- ``finish`` (``exit``) -- ``pytest.main`` returned this exit code.

A record that fails authentication, is out of sequence or malformed is never used;
each is evidence that something other than the runner wrote to the pipe.  A record
is at most :data:`MAX_RECORD_BYTES` long and holds at most :data:`MAX_CONTAINERS`
JSON arrays and objects (counted before it is parsed: nesting cannot exhaust the
parser), which no honest record comes near.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MAX_CONTAINERS", "MAX_RECORD_BYTES", "OUTCOMES", "ChannelLog", "read_channel"]

OUTCOMES = frozenset({"passed", "failed", "error", "skipped"})
# The runner sends at most 200 ids, or a 2,000-character detail, per record.
MAX_RECORD_BYTES = 1024 * 1024
MAX_CONTAINERS = 8
_MAX_LIARS = 20
# Every test of a large suite may meet a limit: each one's record is kept, so that no
# failure it explains goes unexplained; past the first few hundred, with a short detail.
_MAX_INCONCLUSIVE = 20_000
_DETAILED_INCONCLUSIVE = 200
_SHORT_DETAIL_CHARS = 200
_DETAIL_CHARS = 2000
_MAX_INTEGRITY = 20
_LEVELS = frozenset({"landlock", "none"})
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


@dataclass(slots=True)
class ChannelLog:
    """What the runner reported, and what was wrong with the report."""

    problems: list[str] = field(default_factory=list)
    hello: bool = False
    fatal: str | None = None
    collected: set[str] = field(default_factory=set)
    deselected: set[str] = field(default_factory=set)
    collect_errors: dict[str, str] = field(default_factory=dict)
    collect_skips: set[str] = field(default_factory=set)
    modules: set[str] = field(default_factory=set)
    tests: dict[str, str] = field(default_factory=dict)
    duplicates: list[str] = field(default_factory=list)
    finish: int | None = None
    after_finish: int = 0
    # Process isolation: the subject was ended at the verdict's timeout.
    subject_timed_out: bool = False
    liars: list[tuple[str, str]] = field(default_factory=list)
    # Test id -> the line of its test file a failed test left it at.
    lines: dict[str, int] = field(default_factory=dict)
    # Failed test id -> its last unequal pair of plain values: (line, left, right).
    seen: dict[str, tuple[int, Any, Any]] = field(default_factory=dict)
    inconclusive: list[tuple[str, str]] = field(default_factory=list)
    internal_error: str | None = None
    internal_error_by_grader: bool = False
    confinement: tuple[str, str] | None = None
    integrity: list[tuple[str, str]] = field(default_factory=list)


def read_channel(data: bytes, key: bytes) -> ChannelLog:
    """Parse and authenticate everything the child wrote to the pipe."""
    log = ChannelLog()
    forged = 0
    expected_seq = 0
    lines = data.split(b"\n")
    # A last piece without its newline was torn by a kill mid-write: not a record.
    for line in lines[:-1]:
        mac, _, payload = line.partition(b" ")
        good = hmac.new(key, payload, hashlib.sha256).hexdigest().encode("ascii")
        if not hmac.compare_digest(mac, good):
            forged += 1
            continue
        if len(payload) > MAX_RECORD_BYTES or _containers(payload) > MAX_CONTAINERS:
            log.problems.append("a report record was larger or deeper than any the runner sends")
            continue
        try:
            record = json.loads(payload)
            seq = record["seq"]
            kind = record["kind"]
            if not isinstance(seq, int) or not isinstance(kind, str):
                raise TypeError
        except (ValueError, KeyError, TypeError, RecursionError):
            log.problems.append("a report record was malformed")
            continue
        if seq != expected_seq:
            log.problems.append(
                f"report records out of sequence (expected {expected_seq}, got {seq})"
            )
        expected_seq = seq + 1
        if log.finish is not None:
            log.after_finish += 1
            continue
        _take(log, kind, record)
    if forged:
        log.problems.insert(
            0, f"{forged} report record(s) failed authentication: forged results suspected"
        )
    if log.after_finish:
        log.problems.append(f"{log.after_finish} report record(s) arrived after pytest finished")
    return log


def _seen(value: Any) -> tuple[int, Any, Any] | None:
    """A failed test's ``seen`` field, if it is what the runner sends, else None."""
    if type(value) is not list or len(value) != 3 or type(value[0]) is not int:
        return None
    line, left, right = value
    for item in (left, right):
        if type(item) not in _SEEN_TYPES or (type(item) is str and len(item) > _SEEN_CHARS):
            return None
    return (line, left, right) if line > 0 else None


_SEEN_TYPES = (str, int, float, bool, type(None))
_SEEN_CHARS = 200


def _containers(payload: bytes) -> int:
    """How many JSON arrays and objects ``payload`` opens, outside its strings."""
    bare = _STRING.sub(b"", payload)
    return bare.count(b"[") + bare.count(b"{")


def _take(log: ChannelLog, kind: str, record: dict[str, Any]) -> None:
    try:
        if kind == "hello":
            log.hello = True
        elif kind == "fatal":
            if log.hello:
                log.problems.append(
                    "a 'fatal' report record arrived after pytest had started:"
                    " the runner's key was used by the code under test"
                )
            else:
                log.fatal = str(record["detail"])[:2000]
        elif kind == "confinement":
            level = record["level"]
            if log.hello or log.confinement is not None or level not in _LEVELS:
                log.problems.append(
                    "a 'confinement' report record arrived twice, late or malformed:"
                    " the runner's key was used by the code under test"
                )
            else:
                log.confinement = (level, str(record["detail"])[:500])
        elif kind == "integrity":
            if len(log.integrity) < _MAX_INTEGRITY:
                log.integrity.append((str(record["path"])[:500], str(record["detail"])[:500]))
        elif kind == "liar":
            if len(log.liars) < _MAX_LIARS:
                log.liars.append((str(record["id"])[:500], str(record["detail"])[:500]))
        elif kind == "inconclusive":
            if len(log.inconclusive) < _MAX_INCONCLUSIVE:
                chars = _DETAIL_CHARS
                if len(log.inconclusive) >= _DETAILED_INCONCLUSIVE:
                    chars = _SHORT_DETAIL_CHARS
                detail = str(record["detail"])[:chars]
                log.inconclusive.append((str(record["id"])[:500], detail))
        elif kind == "internal_error":
            if log.internal_error is None:
                log.internal_error = str(record["detail"])[-_DETAIL_CHARS:]
                log.internal_error_by_grader = record.get("grader") is True
        elif kind == "collected":
            log.collected.update(str(nodeid) for nodeid in record["ids"])
        elif kind == "deselected":
            log.deselected.update(str(nodeid) for nodeid in record["ids"])
        elif kind == "collect_error":
            log.collect_errors[str(record["id"])] = str(record["detail"])
        elif kind == "collect_skip":
            log.collect_skips.add(str(record["id"]))
        elif kind == "module":
            log.modules.add(str(record["id"]))
        elif kind == "test":
            nodeid, outcome = str(record["id"]), record["outcome"]
            if outcome not in OUTCOMES:
                log.problems.append(
                    f"a report record had the unknown outcome {str(outcome)[:40]!r}"
                )
            elif nodeid in log.tests:
                log.duplicates.append(nodeid)
            else:
                log.tests[nodeid] = outcome
                line = record.get("line")
                if type(line) is int and outcome == "failed" and line > 0:
                    log.lines[nodeid] = line
                    seen = _seen(record.get("seen"))
                    if seen is not None:
                        log.seen[nodeid] = seen
        elif kind == "finish":
            log.finish = int(record["exit"])
        elif kind == "subject_timeout":
            log.subject_timed_out = True
        else:
            log.problems.append(f"a report record had the unknown kind {kind[:40]!r}")
    except (KeyError, TypeError, ValueError, ArithmeticError):
        log.problems.append(f"a {kind[:40]!r} report record was malformed")
