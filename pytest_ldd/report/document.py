"""The report document: what one report holds, as JSON, and the files it is written to.

:func:`build_report` gathers the JSON document (schema in ``docs/report.md``): the
session document of a pytest run when there is one, every metric's current state and
gate, and the history the plots need.  :func:`write_json` writes it as it is;
:func:`write_html` renders it first (:mod:`pytest_ldd.report.html`).  The terminal
section renders a session document alone (:mod:`pytest_ldd.report.text`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_ldd.model.clock import utc_timestamp
from pytest_ldd.store.files.disk import replace_file

if TYPE_CHECKING:
    from pytest_ldd.calibration.registry import MetricRegistry
    from pytest_ldd.model.statistics import CalibrationGate, MetricState

__all__ = [
    "HTML_LOG_BUDGET",
    "REPORT_SCHEMA_VERSION",
    "build_report",
    "dumps",
    "gate_json",
    "render_html",
    "state_json",
    "write_html",
    "write_json",
]

#: Version of the JSON report layout; bumped on any incompatible change.
REPORT_SCHEMA_VERSION = 1

#: What the HTML report reads of each log at most (bytes) before it samples.
HTML_LOG_BUDGET = 4 << 20


# -- JSON objects shared by the CLI and the reports ------------------------------------


def _finite(value: float | None) -> float | None:
    """JSON has no infinity: non-finite figures become ``null``."""
    if value is None or not math.isfinite(value):
        return None
    return value


def gate_json(gate: CalibrationGate) -> dict[str, Any]:
    """A calibration gate as a JSON object (``null`` for bounds that are not set)."""
    return {
        "min_n": gate.min_n,
        "max_mae": gate.max_mae,
        "max_p95": gate.max_p95,
        "max_worst": gate.max_worst,
        "window": gate.window,
    }


def state_json(state: MetricState, gate: CalibrationGate) -> dict[str, Any]:
    """A metric's current state and the gate that decides it, as a JSON object."""
    return {
        "name": state.name,
        "version": state.version,
        "state": state.state,
        "is_load_bearing": state.is_load_bearing,
        "n": state.n,
        "mae": _finite(state.mae),
        "window_mae": _finite(state.window_mae),
        "p95_error": _finite(state.p95_error),
        "worst_error": _finite(state.worst_error),
        "promoted_at": state.promoted_at,
        "demoted_at": state.demoted_at,
        "gate": gate_json(gate),
    }


# -- the JSON document -----------------------------------------------------------------


def build_report(
    registry: MetricRegistry,
    *,
    session: Mapping[str, Any] | None = None,
    sessions: Sequence[Mapping[str, Any]] = (),
    budget: int | None = None,
) -> dict[str, Any]:
    """The JSON report document (``schema_version`` 1, keys in ``docs/report.md``).

    ``session`` is this pytest run's session document, or ``None`` (``ldd report``).
    The session history is every line of ``sessions.jsonl``, then ``sessions``, then
    ``session``, each session once (by ``session_id``), numbered from 1, oldest first.
    Per metric, the history holds the calibration pairs and the observations of its
    current version, oldest first: a report may read the whole log, unlike
    ``status`` and promotion.  ``budget`` bounds what is read of each log (bytes):
    a longer log contributes its tail and an even sample of the rest
    (:meth:`~pytest_ldd.store.Store.read_excerpt`), and ``history.sampling`` says so;
    ``None`` reads everything.  Gates are the registry's (``gate_for``).
    """
    from pytest_ldd.report.history import report_history

    metrics: list[dict[str, Any]] = []
    for name in registry.names():
        entry = state_json(registry.state(name), registry.gate_for(name))
        entry["spec"] = registry.spec(name).to_json()
        metrics.append(entry)
    history = report_history(registry, session=session, sessions=sessions, budget=budget)
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "generated_at": utc_timestamp(),
        "ldd_dir": registry.store.location,
        "session": dict(session) if session is not None else None,
        "metrics": metrics,
        "history": history,
    }


# -- HTML and writers ------------------------------------------------------------------


def render_html(doc: Mapping[str, Any]) -> str:
    """The report document as a self-contained HTML page (see :mod:`pytest_ldd.report.html`)."""
    # Imported here: the page is only rendered when asked for.
    from pytest_ldd.report.html import render_html as render

    return render(doc)


def _write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` whole: readers never see half of it."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    replace_file(target, text.encode("utf-8"))
    return target


def _jsonable(value: Any) -> Any:
    """Replace non-finite floats (not JSON) with ``None``, recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def dumps(doc: Mapping[str, Any]) -> str:
    """The document as indented, strictly valid JSON (no NaN / Infinity)."""
    return json.dumps(_jsonable(doc), indent=2, allow_nan=False) + "\n"


def write_json(path: str | os.PathLike[str], doc: Mapping[str, Any]) -> Path:
    """Write the report document as JSON to ``path`` (temp file, then replace)."""
    return _write_text(path, dumps(doc))


def write_html(path: str | os.PathLike[str], doc: Mapping[str, Any]) -> Path:
    """Write the report document as a self-contained HTML page to ``path``.

    For a long history build ``doc`` with ``budget=HTML_LOG_BUDGET``: the page
    down-samples its plots in any case, so reading every line would only cost time.
    """
    return _write_text(path, render_html(doc))
