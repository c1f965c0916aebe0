"""Moving histories between stores: ``ldd store export``, ``import`` and ``merge``.

Everything here goes through the :class:`~pytest_ldd.store.Store` protocol, so it
works between any two backends.  A record's identity is its canonical JSON line
(:func:`pytest_ldd.model.records.encode_line`): its content, timestamp, session id and
node id together.  Logs are multisets of such lines; a union keeps each line as many
times as the input holding it most often does, so the common history of several
copies of one store counts once and every session's own lines are all kept.

The statistics are never translated position by position: the registry document
is written without its counted spans (``calibration``), and the calibrator counts
the pairs afresh from the start of the target's log, then re-evaluates every
state.  The result is what ``ldd metric verify`` checks, by construction.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from pytest_ldd.calibration.registry import MetricRegistry
from pytest_ldd.errors import InvalidSpecError, StoreCorruptError
from pytest_ldd.model.records import encode_line, utc_timestamp
from pytest_ldd.store import SCHEMA_VERSION, LogName, Store
from pytest_ldd.store.files import (
    CALIBRATIONS_FILE,
    METRICS_FILE,
    OBSERVATIONS_FILE,
    SESSIONS_FILE,
    TraceStore,
)

__all__ = ["LOGS", "export_store", "import_store", "merge_folders"]

#: The logs, in the order they are copied.
LOGS: Final[tuple[LogName, ...]] = ("pairs", "observations", "sessions")

_BATCH: Final = 5_000

#: Opens the registry of a store with the project's gates and declared metrics.
OpenRegistry = Callable[[Store], MetricRegistry]


def _lines(store: Store, log: LogName) -> list[tuple[str, dict[str, Any]]]:
    found = store.iter_log(log)
    return [(encode_line(record), record) for record, _ in found if record is not None]


def _append(store: Store, log: LogName, records: Sequence[dict[str, Any]]) -> None:
    append = {
        "pairs": store.append_pairs,
        "observations": store.append_observations,
        "sessions": store.append_sessions,
    }[log]
    for start in range(0, len(records), _BATCH):
        append(records[start : start + _BATCH])


def _document(store: Store) -> dict[str, Any] | None:
    data = store.read_registry_bytes()
    return None if data is None else store.parse_registry(data)


def _without_spans(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The document with every counted span removed: the counts start afresh."""
    promotions = [
        {key: value for key, value in state.items() if key != "calibration"}
        for state in doc.get("promotions", [])
    ]
    return {
        "schema_version": SCHEMA_VERSION,
        "generated_at": utc_timestamp(),
        "specs": list(doc.get("specs", [])),
        "promotions": promotions,
    }


def _rederive(target: Store, doc: Mapping[str, Any] | None, open_registry: OpenRegistry) -> None:
    """Write ``doc`` (spans removed) to ``target``, then count and re-evaluate."""
    from pytest_ldd.calibration.calibrator import Calibrator

    if doc is not None:
        with target.lock():
            target.replace_registry(_without_spans(doc))
    registry = open_registry(target)
    Calibrator(registry).update()


def _empty(folder: Path) -> bool:
    return not folder.exists() or (folder.is_dir() and not any(folder.iterdir()))


def export_store(source: Store, folder: Path, open_registry: OpenRegistry) -> dict[str, int]:
    """Write ``source``'s history as a new ``.ldd/`` folder; the lines written per log."""
    if not _empty(folder):
        msg = f"--to must be a new or empty folder (got {str(folder)!r}, which holds files)"
        raise InvalidSpecError(msg)
    target = TraceStore(folder, ldd_dir=folder)
    counts: dict[str, int] = {}
    try:
        for log in LOGS:
            records = [record for _, record in _lines(source, log)]
            _append(target, log, records)
            counts[log] = len(records)
        target.sync()
        _rederive(target, _document(source), open_registry)
    finally:
        target.close()
    return counts


def import_store(source: Store, target: Store, open_registry: OpenRegistry) -> dict[str, int]:
    """Add ``source``'s lines that ``target`` lacks (idempotent); the lines added per log.

    Metrics ``target`` does not know are added with their states; a metric both know
    must have the same spec in both.
    """
    theirs = _document(source)
    added: dict[str, int] = {}
    with target.lock():
        mine = _document(target)
        docs = [d for d in (mine, theirs) if d is not None]
        doc = _combine(docs, prefer_first=True) if docs else None
        known = {(s.get("name"), s.get("version")) for s in (mine or {}).get("specs", [])}
        new_specs = doc is not None and any(
            (s.get("name"), s.get("version")) not in known for s in doc["specs"]
        )
        for log in LOGS:
            have = Counter(text for text, _ in _lines(target, log))
            missing = []
            for text, record in _lines(source, log):
                if have[text] > 0:
                    have[text] -= 1
                else:
                    missing.append(record)
            _append(target, log, missing)
            added[log] = len(missing)
        target.sync()
        if new_specs or any(added.values()):
            # Counted afresh from the start: the new lines may sit anywhere in time.
            _rederive(target, doc, open_registry)
    return added


def merge_folders(
    inputs: Sequence[Path], into: Path, open_registry: OpenRegistry
) -> dict[str, int]:
    """The union of several ``.ldd/`` folders, written to ``into``; the lines per log.

    The result does not depend on the order of ``inputs``: lines are ordered by
    timestamp, session id, node id and text, and every state is re-derived.
    ``into`` may be one of the inputs (or hold anything): its files are replaced.
    """
    if not inputs:
        msg = "ldd store merge needs at least one input folder"
        raise InvalidSpecError(msg)
    for folder in inputs:
        if not folder.is_dir():
            msg = f"merge input {str(folder)!r} must be an existing .ldd folder"
            raise InvalidSpecError(msg)
    stores = [TraceStore(folder, ldd_dir=folder) for folder in inputs]
    union: dict[str, list[dict[str, Any]]] = {}
    for log in LOGS:
        most: Counter[str] = Counter()
        records: dict[str, dict[str, Any]] = {}
        for store in stores:
            counts: Counter[str] = Counter()
            for text, record in _lines(store, log):
                counts[text] += 1
                records.setdefault(text, record)
            most |= counts  # the larger multiplicity of each line
        order = sorted(most, key=lambda text: _order_key(records[text], text))
        union[log] = [records[text] for text in order for _ in range(most[text])]
    docs = [d for d in (_document(store) for store in stores) if d is not None]
    doc = _combine(docs, prefer_first=False) if docs else None
    into.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".ldd-merge.", dir=into.parent))
    try:
        target = TraceStore(staging, ldd_dir=staging)
        for log in LOGS:
            _append(target, log, union[log])
        target.sync()
        _rederive(target, doc, open_registry)
        target.close()
        into.mkdir(parents=True, exist_ok=True)
        for name in (CALIBRATIONS_FILE, OBSERVATIONS_FILE, SESSIONS_FILE, METRICS_FILE):
            if (staging / name).exists():
                os.replace(staging / name, into / name)
            else:
                (into / name).unlink(missing_ok=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return {log: len(records) for log, records in union.items()}


def _order_key(record: Mapping[str, Any], text: str) -> tuple[str, str, str, str]:
    stamp = record.get("timestamp") or record.get("finished_at") or record.get("started_at")
    return (
        str(stamp or ""),
        str(record.get("session_id") or ""),
        str(record.get("nodeid") or ""),
        text,
    )


def _combine(docs: Iterable[Mapping[str, Any]], *, prefer_first: bool) -> dict[str, Any]:
    """One registry document from several: every spec once, the highest version.

    Two specs of one name and version that differ are an error.  Of the states of a
    spec's version, the first document's is kept (``prefer_first``) or, for a merge,
    the one counting the most pairs (ties: its JSON text), so the choice does not
    depend on the order of the documents.
    """
    specs: dict[str, dict[str, Any]] = {}
    states: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        for spec in doc.get("specs", []):
            name, version = spec.get("name"), spec.get("version")
            known = specs.get(name)
            if known is None or known.get("version", 0) < version:
                specs[name] = dict(spec)
            elif known.get("version") == version and known != spec:
                diff = sorted(k for k in set(known) | set(spec) if known.get(k) != spec.get(k))
                msg = (
                    f"metric {name!r} version {version} differs between the stores "
                    f"(in {', '.join(diff)}): bump its version in one of them first"
                )
                raise StoreCorruptError(msg)
        for state in doc.get("promotions", []):
            states.setdefault(str(state.get("metric_name")), []).append(dict(state))
    promotions = []
    for name, spec in specs.items():
        candidates = [s for s in states.get(name, []) if s.get("version") == spec["version"]]
        if not candidates:
            continue
        if prefer_first:
            chosen = candidates[0]
        else:
            chosen = max(
                candidates,
                key=lambda s: (
                    s.get("n_calibration_samples") or 0,
                    encode_line({k: v for k, v in s.items() if k != "calibration"}),
                ),
            )
        promotions.append(chosen)
    ordered = sorted(specs.values(), key=lambda s: _depth(s, specs))
    return {
        "schema_version": SCHEMA_VERSION,
        "specs": ordered,
        "promotions": sorted(promotions, key=lambda s: str(s.get("metric_name"))),
    }


def _depth(spec: Mapping[str, Any], specs: Mapping[str, Mapping[str, Any]]) -> tuple[int, str]:
    """Components before composites, then by name: a deterministic order."""
    depth, seen = 0, {spec.get("name")}
    frontier = [c.get("name") for c in (spec.get("components") or [])]
    while frontier:
        depth += 1
        nxt = []
        for name in frontier:
            if name in seen or name not in specs:
                continue
            seen.add(name)
            nxt += [c.get("name") for c in (specs[name].get("components") or [])]
        frontier = nxt
    return depth, str(spec.get("name"))
