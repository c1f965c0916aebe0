"""Moving histories between stores: ``ldd store export``, ``import`` and ``merge``.

Everything here goes through the :class:`~pytest_ldd.store.Store` protocol, so it
works between any two backends.  A record's identity is its canonical JSON line
(:func:`pytest_ldd.model.records.encode_line`): its content, timestamp, session id and
node id together.  Logs are multisets of such lines; a union keeps each line as many
times as the input holding it most often does, so the common history of several
copies of one store counts once and every session's own lines are all kept.

Every path that takes lines in reads them strictly (a malformed line is an error
naming it) and stores a line of the reference tool's raw values normalized with its
metric's spec (:func:`pytest_ldd.model.records.normalized_pair`), the reading the
statistics give it; all of it is read and checked before anything is written, and
the writes are one unit (:meth:`Store.atomic`): an import or a merge is applied
whole or not at all.

The statistics are never translated position by position: the registry document
is written without its counted spans (``calibration``), and the calibrator counts
the pairs afresh from the start of the target's log, then re-evaluates every
state.  The result is what ``ldd metric verify`` checks, by construction.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from pytest_ldd.calibration.registry import MetricRegistry
from pytest_ldd.errors import InvalidSpecError, StoreCorruptError
from pytest_ldd.model.metric import MetricSpec, metric_from_spec
from pytest_ldd.model.records import encode_line, is_raw_pair, normalized_pair, utc_timestamp
from pytest_ldd.store import SCHEMA_VERSION, LogName, Store
from pytest_ldd.store.files import LDD_DIR, STORE_FILES, TraceStore

__all__ = [
    "LOGS",
    "SPILL_DIR",
    "check_merge_folders",
    "check_store_folder",
    "export_store",
    "import_store",
    "merge_folders",
    "spill",
]

#: The logs, in the order they are copied.
LOGS: Final[tuple[LogName, ...]] = ("pairs", "observations", "sessions")

_BATCH: Final = 5_000

#: Opens the registry of a store with the project's gates and declared metrics.
OpenRegistry = Callable[[Store], MetricRegistry]

#: A log's records with their canonical lines, in log order.
Lines = list[tuple[str, dict[str, Any]]]


def _lines(store: Store, log: LogName) -> Lines:
    found: Iterable[tuple[dict[str, Any] | None, object]]
    if isinstance(store, TraceStore):
        # A folder being moved has no writer at work: its last line, complete but
        # for the newline, is a record (see TraceStore.iter_log).
        found = store.iter_log(log, complete_tail=True)
    else:
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


def _normalized(lines: Lines, doc: Mapping[str, Any] | None, where: str) -> Lines:
    """The pair lines with every line of raw values normalized by its metric's spec.

    A raw line is normalized when the spec of its version is known, which is when
    the statistics count it; a line of another version stays as it is (it is never
    counted).  A raw value the spec refuses is an error naming the line.
    """
    normalizers: dict[tuple[str, int], Callable[..., float]] = {}
    for data in (doc or {}).get("specs", []):
        try:
            spec = MetricSpec.from_json(data, source=where)
        except InvalidSpecError as err:
            raise StoreCorruptError(str(err), path=where) from err
        # A composite normalizes as the bounded metric it is.
        plain = replace(spec, composition=None, components=None)
        normalizers[spec.name, spec.version] = metric_from_spec(plain).normalize
    out: Lines = []
    for number, (text, record) in enumerate(lines, 1):
        normalize = normalizers.get((record["metric_name"], record["metric_version"]))
        if normalize is None or not is_raw_pair(record):
            out.append((text, record))
            continue
        line = normalized_pair(record, normalize, where=f"{where}: pair {number}")
        out.append((encode_line(line), line))
    return out


def _read_all(store: Store) -> dict[LogName, Lines]:
    """Every log of ``store``, read (and checked) whole before anything is written."""
    return {log: _lines(store, log) for log in LOGS}


def _empty(folder: Path) -> bool:
    return not folder.exists() or (folder.is_dir() and not any(folder.iterdir()))


def export_store(source: Store, folder: Path, open_registry: OpenRegistry) -> dict[str, int]:
    """Write ``source``'s history as a new ``.ldd/`` folder; the lines written per log."""
    if not _empty(folder):
        msg = f"--to must be a new or empty folder (got {str(folder)!r}, which holds files)"
        raise InvalidSpecError(msg)
    doc = _document(source)
    logs = _read_all(source)
    logs["pairs"] = _normalized(logs["pairs"], doc, source.location)
    target = TraceStore(folder, ldd_dir=folder)
    try:
        with target.staged(copy=False) as staged:
            for log in LOGS:
                _append(staged, log, [record for _, record in logs[log]])
            staged.sync()
            _rederive(staged, doc, open_registry)
    finally:
        target.close()
    return {log: len(logs[log]) for log in LOGS}


def import_store(
    source: TraceStore, target: Store, open_registry: OpenRegistry
) -> dict[str, int]:
    """Add ``source``'s lines that ``target`` lacks (idempotent); the lines added per log.

    Metrics ``target`` does not know are added with their states; a metric both know
    must have the same spec in both.  All or nothing: every line of ``source`` is
    read and checked first, and the writes are one :meth:`Store.atomic` unit (one
    transaction of a database, a staged copy of a folder moved into place).
    """
    theirs = _document(source)
    found = _read_all(source)
    added: dict[str, int] = {}
    with target.atomic() as unit:
        mine = _document(unit)
        docs = [d for d in (mine, theirs) if d is not None]
        doc = _combine(docs, prefer_first=True) if docs else None
        known = {(s.get("name"), s.get("version")) for s in (mine or {}).get("specs", [])}
        new_specs = doc is not None and any(
            (s.get("name"), s.get("version")) not in known for s in doc["specs"]
        )
        incoming = {**found, "pairs": _normalized(found["pairs"], doc, source.location)}
        missing: dict[LogName, list[dict[str, Any]]] = {}
        for log in LOGS:
            have = Counter(text for text, _ in _lines(unit, log))
            missing[log] = []
            for text, record in incoming[log]:
                if have[text] > 0:
                    have[text] -= 1
                else:
                    missing[log].append(record)
        for log in LOGS:
            _append(unit, log, missing[log])
            added[log] = len(missing[log])
        unit.sync()
        if new_specs or any(added.values()):
            # Counted afresh from the start: the new lines may sit anywhere in time.
            _rederive(unit, doc, open_registry)
    return added


def check_merge_folders(inputs: Sequence[Path], into: Path) -> None:
    """Refuse inputs that cannot be merged into ``into`` (an error naming the folder).

    Each input must be an existing store folder; one that holds none of the store's
    files but a ``.ldd`` folder is a project folder, not its store.  No input may hold
    ``into`` inside it (through ``..``, a symbolic link or a relative path as well):
    a merge's output must not be part of its own input.  An input that *is* ``into``
    is fine: its lines are read before anything is written.
    """
    if not inputs:
        msg = "ldd store merge needs at least one input folder"
        raise InvalidSpecError(msg)
    output = into.resolve()
    for folder in inputs:
        if not folder.is_dir():
            msg = f"merge input {str(folder)!r} must be an existing .ldd folder"
            raise InvalidSpecError(msg)
        resolved = folder.resolve()
        if resolved != output and resolved in output.parents:
            msg = (
                f"merge input {str(folder)!r} holds the output folder {str(into)!r}: a "
                f"merge's input must not be its own output (name the store folder "
                f"itself, e.g. {str(folder / LDD_DIR)!r})"
            )
            raise InvalidSpecError(msg)
        check_store_folder(folder, "merge input")


def check_store_folder(folder: Path, what: str) -> None:
    """Refuse a project folder given for its store folder (an error naming both).

    A folder that holds none of the store's files but a ``.ldd`` folder would read
    as an empty store, and its history would be left out without a word.
    """
    if not any((folder / name).exists() for name in STORE_FILES) and (
        (folder / LDD_DIR).is_dir()
    ):
        msg = (
            f"{what} {str(folder)!r} is a project folder, not a store folder: it holds "
            f"no store files but {str(folder / LDD_DIR)!r}; name that one"
        )
        raise InvalidSpecError(msg)


def merge_folders(
    inputs: Sequence[Path], into: Path, open_registry: OpenRegistry
) -> dict[str, int]:
    """The union of several ``.ldd/`` folders, written to ``into``; the lines per log.

    The result does not depend on the order of ``inputs``: lines are ordered by
    timestamp, session id, node id and text, and every state is re-derived.  What
    ``into`` holds is always part of the union (so a merge never drops it, and two
    merges into one folder at once lose nothing): the whole merge holds ``into``'s
    lock, from reading to writing, and its files are replaced atomically.
    """
    check_merge_folders(inputs, into)
    destination = TraceStore(into, ldd_dir=into)
    with destination.staged(copy=False) as staged:
        folders = list(inputs)
        if into.resolve() not in {folder.resolve() for folder in inputs}:
            folders.append(into)
        stores = [TraceStore(folder, ldd_dir=folder) for folder in folders]
        docs = [d for d in (_document(store) for store in stores) if d is not None]
        doc = _combine(docs, prefer_first=False) if docs else None
        union: dict[LogName, list[dict[str, Any]]] = {}
        for log in LOGS:
            most: Counter[str] = Counter()
            records: dict[str, dict[str, Any]] = {}
            for store in stores:
                counts: Counter[str] = Counter()
                lines = _lines(store, log)
                if log == "pairs":
                    lines = _normalized(lines, doc, store.location)
                for text, record in lines:
                    counts[text] += 1
                    records.setdefault(text, record)
                most |= counts  # the larger multiplicity of each line
            order = sorted(most, key=lambda text: _order_key(records[text], text))
            union[log] = [records[text] for text in order for _ in range(most[text])]
        for log in LOGS:
            _append(staged, log, union[log])
        staged.sync()
        _rederive(staged, doc, open_registry)
    destination.close()
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



#: Where a session keeps what its store could not take, below the project folder.
SPILL_DIR: Final = ".ldd-spill"


def spill(
    folder: Path,
    *,
    observations: Sequence[str],
    pairs: Sequence[str],
    sessions: Sequence[Mapping[str, Any]],
    specs: Sequence[Mapping[str, Any]],
) -> None:
    """Keep lines a store could not take in ``folder``, laid out as ``ldd store export``
    writes a store: the three logs and a ``metrics.json`` holding the specs of their
    metrics, so that ``ldd store import FOLDER`` loads them into the store later.

    Raises :class:`StoreCorruptError` (naming the folder) when it cannot be written.
    """
    store = TraceStore(folder, ldd_dir=folder)
    try:
        with store.lock():
            store.append_texts(
                [(store.observations_path, observations), (store.calibrations_path, pairs)]
            )
            store.append_sessions(list(sessions))
            store.write_metrics(
                {
                    "schema_version": SCHEMA_VERSION,
                    "generated_at": utc_timestamp(),
                    "specs": [dict(spec) for spec in specs],
                    "promotions": [],
                }
            )
            store.sync()
    finally:
        store.close()
