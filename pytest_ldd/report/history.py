"""The history a report shows: each metric's pairs and observations, and the sessions.

Per metric, the calibration pairs and the observations of its current version,
oldest first (a pair logged as raw values is shown normalized, its raw values kept);
then the sessions, each once, numbered from 1.  A report may read whole logs, unlike
``status`` and promotion; with a ``budget`` a long log is read as an excerpt
(:meth:`~pytest_ldd.store.Store.read_excerpt`: its tail and an even sample of the
rest), and ``sampling`` says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from pytest_ldd.model.records import normalized_pair

if TYPE_CHECKING:
    from pytest_ldd.calibration.registry import MetricRegistry

__all__ = ["report_history"]

#: What a session's history entry keeps of each metric row of the session document.
_SESSION_METRIC_KEYS: Final = (
    "name",
    "unit",
    "state_before",
    "state_after",
    "gates",
    "breaches",
)


def report_history(
    registry: MetricRegistry,
    *,
    session: Mapping[str, Any] | None = None,
    sessions: Sequence[Mapping[str, Any]] = (),
    budget: int | None = None,
) -> dict[str, Any]:
    """The ``history`` object of the report document (see ``docs/report.md``).

    The sessions are every record of the store's session log, then ``sessions``,
    then ``session``, each once (by ``session_id``).  ``budget`` bounds what is read
    of the pair and observation logs (bytes; ``None``: everything).  Missing logs
    read as empty; nothing is created.
    """
    store = registry.store
    versions = {name: registry.spec(name).version for name in registry.names()}
    pair_log = store.read_excerpt("pairs", budget=budget)
    calibrations: dict[str, list[dict[str, Any]]] = {name: [] for name in versions}
    for record in pair_log.records:  # validated records (records.check_line)
        owner = record["metric_name"]
        if owner in versions and record["metric_version"] == versions[owner]:
            line = normalized_pair(record, registry.get(owner).normalize)
            calibrations[owner].append(_pair_json(line))
    observation_log = store.read_excerpt("observations", budget=budget)
    observations: dict[str, list[dict[str, Any]]] = {name: [] for name in versions}
    for record in observation_log.records:
        owner = record.get("metric_name")
        if isinstance(owner, str) and record.get("metric_version") == versions.get(owner):
            observations[owner].append(_observation_json(record))
    stored_sessions, _ = store.read_log("sessions")
    numbered: list[dict[str, Any]] = []
    seen: set[object] = set()
    for item in [*stored_sessions, *sessions, *([session] if session is not None else [])]:
        key = item.get("session_id")
        if key is not None and key in seen:
            continue
        seen.add(key)
        numbered.append(_session_json(item, len(numbered) + 1))
    sampling = None
    if not (pair_log.complete and observation_log.complete):
        sampling = {
            "calibrations": pair_log.describe(),
            "observations": observation_log.describe(),
        }
    return {
        "calibrations": calibrations,
        "observations": observations,
        "sessions": numbered,
        "sampling": sampling,
    }


def _pair_json(record: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "predicted": record.get("predicted"),
        "observed": record.get("observed"),
        "raw_predicted": record.get("raw_predicted"),
        "raw_observed": record.get("raw_observed"),
        "timestamp": record.get("timestamp"),
        "session_id": record.get("session_id"),
        "nodeid": record.get("nodeid"),
    }


def _observation_json(record: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "raw": record.get("raw"),
        "normalized": record.get("normalized"),
        "timestamp": record.get("timestamp"),
        "session_id": record.get("session_id"),
        "nodeid": record.get("nodeid"),
    }


def _session_json(session: Mapping[str, Any], number: int) -> dict[str, Any]:
    return {
        "number": number,
        "session_id": session.get("session_id"),
        "started_at": session.get("started_at"),
        "ended_at": session.get("ended_at"),
        "commit": session.get("commit"),
        "counts": dict(session.get("counts") or {}),
        "corpus": dict(session.get("corpus") or {}),
        "state_changes": [dict(change) for change in session.get("state_changes") or ()],
        "metrics": [
            {key: m.get(key) for key in _SESSION_METRIC_KEYS}
            for m in session.get("metrics") or ()
            if isinstance(m, Mapping)
        ],
    }
