"""The HTML report: one self-contained page (inline CSS and SVG, no script, no network).

The page answers first what a reader opens it for: *is my number getting worse, and
since when?*  It shows the latest session's gate failures and breaches, then per
metric a **timeline** of its raw values by session (bounds, predictions, promotion
and demotion, the state as a background band), then how far its predictions can be
trusted (the calibration scatter and running MAE), corpus aggregates per session and
the list of sessions.  Sessions read as ``Session N`` with their date and commit.

Dense plots are thinned deterministically (:func:`thin`: the most recent points and
an even sample of the rest) and the caption says so; a document built from an
excerpt of the logs (``history.sampling``) says that too.  All text from the
document is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any, Final, TypeVar

from pytest_ldd.errors import InvalidSpecError
from pytest_ldd.model.gates import Bound
from pytest_ldd.report.svg import (
    BREACH,
    OBSERVED,
    CalibrationPoint,
    CorpusPoint,
    StateMark,
    StateSpan,
    TimelinePoint,
    bound_label,
    calibration_svg,
    corpus_svg,
    mae_svg,
    timeline_svg,
)
from pytest_ldd.report.text import (
    breach_text,
    corpus_lines,
    fmt_error,
    fmt_value,
    gate_text,
    session_name,
    session_table,
)

__all__ = [
    "LATEST_SESSION_POINTS",
    "MAE_POINTS",
    "SCATTER_POINTS",
    "SESSION_ROWS",
    "TIMELINE_POINTS",
    "promotion_index",
    "render_html",
    "running_mae",
    "session_fragment",
    "thin",
]

#: MAE comparisons use the same tolerance as the calibration gate.
_TOLERANCE = 1e-9

#: Points drawn at most per plot; beyond, :func:`thin` chooses them.
TIMELINE_POINTS: Final = 300
SCATTER_POINTS: Final = 250
MAE_POINTS: Final = 200
#: Points the latest session keeps on a dense timeline of many sessions.
LATEST_SESSION_POINTS: Final = 30
#: Sessions listed in the sessions table (the most recent ones).
SESSION_ROWS: Final = 30

#: Corpus metrics: their timeline is the session aggregate, not the episodes.
_CORPUS_VALUE: Final = {"task_success": "success_rate", "cost_per_success": "pooled"}


_CSS = """
:root { color-scheme: light dark; --ink: #1f1f1f; --muted: #595959; --rule: #d9d9d9;
  --soft: #f3f3f3; --page: #ffffff; --bad: #b3261e; --good: #00734f; }
@media (prefers-color-scheme: dark) {
  :root { --ink: #e8e8e8; --muted: #b0b0b0; --rule: #444444; --soft: #262626;
    --page: #161616; --bad: #ff8a80; --good: #5fd3a6; }
  svg.ldd-plot { background: #1e1e1e; }
  svg.ldd-plot .ldd-axes text, svg.ldd-plot .ldd-empty { fill: #dddddd; }
  svg.ldd-plot .ldd-axes line { stroke: #3a3a3a; }
  svg.ldd-plot .ldd-axes rect { stroke: #777777; }
}
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial,
  sans-serif; margin: 0 auto; max-width: 1400px; padding: 16px clamp(10px, 3vw, 32px);
  color: var(--ink); background: var(--page); line-height: 1.45; }
h1 { font-size: 1.6em; margin: 0 0 4px; }
h2 { font-size: 1.3em; margin: 32px 0 8px; border-bottom: 1px solid var(--rule);
  padding-bottom: 4px; }
h3 { font-size: 1.1em; margin: 28px 0 6px; overflow-wrap: anywhere; }
p { overflow-wrap: anywhere; }
p.meta, p.note { color: var(--muted); margin: 4px 0; font-size: 0.92em; }
.table-wrap { max-width: 100%; overflow-x: auto; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 0.9em; }
th, td { padding: 4px 10px; border-bottom: 1px solid var(--rule); text-align: left;
  vertical-align: top; }
td { overflow-wrap: break-word; }
td.id { overflow-wrap: anywhere; min-width: 14ch; }
th { background: var(--soft); font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 0.92em; overflow-wrap: anywhere; }
.state { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 0.85em;
  border: 1px solid var(--rule); }
.state.load_bearing { border-color: var(--good); color: var(--good); }
.state.drifting, .state.catastrophic_outlier, .state.tail_risk_high {
  border-color: var(--bad); color: var(--bad); }
.failed { color: var(--bad); font-weight: 600; }
figure { margin: 0 0 12px; min-width: 0; }
figure svg { display: block; width: 100%; height: auto; max-width: 100%; }
figure.timeline svg { max-width: 1000px; }
/* A narrow window shrinks the timeline's drawing: its text and points grow in
   drawing units so that they stay readable on the page. */
@media (max-width: 700px) {
  svg.ldd-timeline text { font-size: 19px; }
  svg.ldd-timeline circle.ldd-point { r: 6px; }
  table { font-size: 0.85em; }
  th, td { padding: 3px 6px; }
}
.plots { display: grid; gap: 16px; grid-template-columns: repeat(auto-fit,
  minmax(min(100%, 320px), 1fr)); max-width: 1000px; }
.plots svg { max-width: 460px; }
figcaption { font-size: 0.88em; color: var(--muted); margin-top: 4px; }
.key { display: inline-block; width: 0.9em; height: 0.9em; vertical-align: -0.1em;
  margin: 0 3px 0 8px; }
ul.lines { padding-left: 20px; margin: 6px 0; }
@media print {
  :root { --ink: #000000; --muted: #333333; --page: #ffffff; }
  body { max-width: none; padding: 0; font-size: 10pt; }
  svg.ldd-plot { background: #ffffff; }
  svg.ldd-plot .ldd-axes text { fill: #222222; }
  section.ldd-metric, figure, table { break-inside: avoid; }
  .table-wrap { overflow: visible; }
}
"""

T = TypeVar("T")


def thin(items: Sequence[T], limit: int, *, recent: int | None = None) -> list[T]:
    """At most ``limit`` items, in order: the last ``recent`` and an even sample before.

    ``recent`` defaults to a third of ``limit``.  The choice depends only on
    ``len(items)`` and ``limit``: the same history gives the same plot.
    """
    count = len(items)
    if count <= limit:
        return list(items)
    if limit <= 0:
        return []
    keep = min(limit, limit // 3 if recent is None else recent)
    older = count - keep
    picks = limit - keep
    if picks <= 0:
        chosen = []
    elif picks == 1:
        chosen = [0]
    else:
        chosen = sorted({round(i * (older - 1) / (picks - 1)) for i in range(picks)})
    return [items[i] for i in chosen] + list(items[older:])


def running_mae(pairs: Sequence[Mapping[str, Any]]) -> list[float]:
    """The MAE after each pair: the mean of ``|predicted - observed|`` so far."""
    out: list[float] = []
    total = 0.0
    for i, pair in enumerate(pairs, start=1):
        total += abs(float(pair["predicted"]) - float(pair["observed"]))
        out.append(total / i)
    return out


def promotion_index(
    pairs: Sequence[Mapping[str, Any]],
    gate: Mapping[str, Any],
    promoted_at: str | None = None,
    session_id: str | None = None,
) -> tuple[int | None, str]:
    """The 1-based pair at which the metric was promoted, and how that was found.

    From the promoting ``session_id`` when known (its last pair: a session promotes
    at its end); else from ``promoted_at`` (the last pair logged at or before it);
    otherwise the first pair where ``n >= min_n`` and the running MAE is within
    ``max_mae``.
    """
    if session_id is not None:
        positions = [i for i, p in enumerate(pairs, start=1) if p.get("session_id") == session_id]
        if positions:
            return positions[-1], "promoted"
    if promoted_at:
        index = sum(1 for p in pairs if str(p.get("timestamp") or "") <= promoted_at)
        if index >= 1:
            return index, "promoted"
    min_n = int(gate.get("min_n") or 1)
    max_mae = float(gate.get("max_mae") or 0.0)
    for i, value in enumerate(running_mae(pairs), start=1):
        if i >= min_n and value <= max_mae + _TOLERANCE:
            return i, "gate first met"
    return None, ""


# -- sessions ------------------------------------------------------------------------------


class _Sessions:
    """The report's sessions, numbered oldest first, and the slots of records."""

    def __init__(self, doc: Mapping[str, Any]) -> None:
        history = (doc.get("history") or {}).get("sessions") or ()
        self.recorded: list[Mapping[str, Any]] = [s for s in history if isinstance(s, Mapping)]
        self.by_id: dict[str, Mapping[str, Any]] = {
            str(s["session_id"]): s for s in self.recorded if s.get("session_id")
        }
        self.number: dict[str, int] = {}
        for position, item in enumerate(self.recorded, start=1):
            if item.get("session_id"):
                self.number[str(item["session_id"])] = int(item.get("number") or position)

    def key(self, record: Mapping[str, Any]) -> str:
        """The slot a record belongs to: its session, or its day outside pytest."""
        sid = record.get("session_id")
        if sid:
            return str(sid)
        return f"outside pytest {str(record.get('timestamp') or '')[:10]}".rstrip()

    def order(self, key: str, first_seen: str) -> tuple[str, int]:
        """Sort key of a slot: when it started (recorded sessions keep their order)."""
        item = self.by_id.get(key)
        stamp = str(item.get("started_at") or "") if item else first_seen
        return (stamp, self.number.get(key, 0))

    def name(self, key: str) -> str:
        """``Session 3 · 2026-12-01 19:46 UTC · 1a2b3c4``, or what is known."""
        if key.startswith("outside pytest"):
            return key
        item = self.by_id.get(key)
        if item is None:
            return session_name(None, {"session_id": key})
        return session_name(self.number.get(key), item)

    def short(self, key: str) -> str:
        """The x axis label of a slot: the session number, ``?`` or ``cli``."""
        if key in self.number:
            return str(self.number[key])
        return "cli" if key.startswith("outside pytest") else "?"


def _metric_row(session: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """The row of ``name`` in a session's ``metrics``, if the session touched it."""
    for row in session.get("metrics") or ():
        if isinstance(row, Mapping) and row.get("name") == name:
            return row
    return None


def _bounds(name: str, sessions: _Sessions) -> list[Bound]:
    """The gate bounds of ``name`` in the latest session that had any."""
    for item in reversed(sessions.recorded):
        found: list[tuple[object, object]] = []
        row = _metric_row(item, name)
        for text in (row or {}).get("gates") or ():
            written_op, _, written = str(text).partition(" ")
            try:
                found.append((written_op, float(written)))
            except ValueError:
                continue
        for gate in (item.get("corpus") or {}).get("gates") or ():
            if gate.get("name") == name:
                found.append((gate.get("op"), gate.get("limit")))
        unique: dict[tuple[str, float], Bound] = {}
        for op, limit in found:
            # A session document is read, not trusted: a bound it cannot hold is skipped.
            if (
                isinstance(limit, bool)
                or not isinstance(limit, (int, float))
                or not math.isfinite(limit)
            ):
                continue
            try:
                bound = Bound(str(op), float(limit))
            except InvalidSpecError:
                continue
            unique[bound.op, bound.limit] = bound
        if unique:
            return list(unique.values())
    return []


def _states(
    name: str, keys: Sequence[str], sessions: _Sessions
) -> tuple[list[StateSpan], list[StateMark]]:
    """Background spans (state at each session's start) and promotion/demotion marks."""
    state = "insufficient_data"
    starts: list[str] = []
    marks: list[StateMark] = []
    for slot, key in enumerate(keys):
        item = sessions.by_id.get(key)
        row = _metric_row(item, name) if item else None
        before = str(row.get("state_before") or state) if row else state
        after = str(row.get("state_after") or before) if row else before
        for change in (item or {}).get("state_changes") or ():
            if change.get("name") == name and change.get("after"):
                after = str(change["after"])
        starts.append(before)
        was, now = before == "load_bearing", after == "load_bearing"
        if was != now:
            verb = "promoted to load_bearing" if now else f"demoted to {after}"
            marks.append(StateMark(slot, now, f"{name} {verb} at the end of {sessions.name(key)}"))
        state = after
    spans: list[StateSpan] = []
    first = 0
    for slot in range(1, len(starts) + 1):
        if slot == len(starts) or (starts[slot] == "load_bearing") != (
            starts[first] == "load_bearing"
        ):
            bearing = starts[first] == "load_bearing"
            what = "load-bearing: gates fail tests" if bearing else "advisory: gates only warn"
            names = f"{sessions.short(keys[first])}-{sessions.short(keys[slot - 1])}"
            spans.append(StateSpan(first, slot - 1, bearing, f"sessions {names}: {what}"))
            first = slot
    return spans, marks


def _tip(
    sessions: _Sessions,
    key: str,
    where: str,
    unit: str,
    observed: float,
    pair: Mapping[str, Any] | None,
) -> str:
    lines = [sessions.name(key), where, f"observed {fmt_value(observed)} {unit}".rstrip()]
    if pair is not None and isinstance(pair.get("raw_predicted"), (int, float)):
        error = abs(float(pair["predicted"]) - float(pair["observed"]))
        lines.append(f"predicted {fmt_value(pair['raw_predicted'])} {unit}".rstrip())
        lines.append(f"error {error:.3f} (normalized)")
    else:
        lines.append("no prediction")
    return "\n".join(lines)


def _timeline(
    metric: Mapping[str, Any],
    doc: Mapping[str, Any],
    sessions: _Sessions,
) -> tuple[str, str]:
    """The timeline plot of one metric and its caption."""
    name = str(metric.get("name"))
    spec = metric.get("spec") or {}
    unit = str(spec.get("unit") or "")
    history = doc.get("history") or {}
    pairs = list((history.get("calibrations") or {}).get(name) or ())
    bounds = _bounds(name, sessions)
    raw: list[tuple[str, str, float, Mapping[str, Any] | None]] = []
    first_seen: dict[str, str] = {}
    aggregate = _CORPUS_VALUE.get(name)
    corpus_sessions = [
        s for s in sessions.recorded if aggregate and ((s.get("corpus") or {}).get(name))
    ]
    if aggregate and corpus_sessions:
        session_pairs = {str(p.get("session_id")): p for p in pairs if p.get("nodeid") is None}
        for item in corpus_sessions:
            value = (item.get("corpus") or {}).get(name, {}).get(aggregate)
            if not isinstance(value, (int, float)):
                continue  # no success: an infinite cost-of-pass has no place on the axis
            key = str(item.get("session_id"))
            raw.append((key, "session aggregate", float(value), session_pairs.get(key)))
        what = "session aggregates"
    else:
        waiting: dict[tuple[str, object, object], list[Mapping[str, Any]]] = {}
        for p in pairs:
            waiting.setdefault(
                (sessions.key(p), p.get("nodeid"), p.get("raw_observed")), []
            ).append(p)
        for o in (history.get("observations") or {}).get(name) or ():
            value = o.get("raw")
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                continue
            key = sessions.key(o)
            first_seen.setdefault(key, str(o.get("timestamp") or ""))
            queue = waiting.get((key, o.get("nodeid"), value))
            pair = queue.pop(0) if queue else None
            raw.append((key, str(o.get("nodeid") or "outside pytest"), float(value), pair))
        # Pairs logged outside pytest (`ldd metric calibrate`) have no observation line:
        # their observed value is a point of its own.
        for queue in waiting.values():
            for p in queue:
                value = p.get("raw_observed")
                if p.get("session_id") is None and isinstance(value, (int, float)):
                    key = sessions.key(p)
                    first_seen.setdefault(key, str(p.get("timestamp") or ""))
                    raw.append((key, "outside pytest", float(value), p))
        raw.sort(key=lambda r: sessions.order(r[0], first_seen.get(r[0], "")))
        what = "observations"
    finite = [r for r in raw if math.isfinite(r[2])]
    keys = sorted({r[0] for r in finite}, key=lambda k: sessions.order(k, first_seen.get(k, "")))
    slot_of = {k: i for i, k in enumerate(keys)}
    shown, per_slot = _thin_by_session(finite, [slot_of[r[0]] for r in finite], len(keys))
    points = []
    for key, where, value, pair in shown:
        predicted = pair.get("raw_predicted") if pair is not None else None
        points.append(
            TimelinePoint(
                slot=slot_of[key],
                observed=value,
                predicted=float(predicted) if isinstance(predicted, (int, float)) else None,
                tip=_tip(sessions, key, where, unit, value, pair),
                breach=any(not b.holds(value) for b in bounds),
            )
        )
    spans, marks = _states(name, keys, sessions)
    plot = timeline_svg(
        f"{name}: {what} by session ({unit or 'raw'}), oldest first",
        points,
        slots=[sessions.short(k) for k in keys],
        y_label=f"{name} ({unit})" if unit else name,
        unit_interval=spec.get("kind") == "bounded" and not aggregate,
        bounds=bounds,
        unit=unit,
        spans=spans,
        marks=marks,
    )
    caption = [
        f"{name} per session ({len(keys)} session{'s' if len(keys) != 1 else ''}), "
        f"raw values in {unit or 'its unit'}: dots are {what}, hollow diamonds their "
        "predictions (the line between is the error), squares values outside a bound."
    ]
    if bounds:
        labels = ", ".join(bound_label(b, unit) for b in bounds)
        caption.append(f"Dashed lines: the gate ({labels}).")
    caption.append(
        "Background: green while the metric was load-bearing at the session's start, grey "
        "while advisory; vertical lines mark promotion and demotion."
    )
    if len(shown) < len(finite):
        if not per_slot:
            how = f"the last {TIMELINE_POINTS // 3} and an even sample of the rest"
        elif len(keys) > 1:
            how = (
                f"at most {per_slot:,} per session and {LATEST_SESSION_POINTS} of the latest, "
                "evenly spread within each"
            )
        else:
            how = "an even sample"
        caption.append(f"Showing {len(shown):,} of {len(finite):,} {what}: {how}.")
    if (doc.get("history") or {}).get("sampling"):
        caption.append(
            _sampling_note(doc).strip()
            + " An observation shows its prediction where the excerpts of both logs hold it."
        )
    return plot, " ".join(caption)


def _thin_by_session(items: Sequence[T], slots: Sequence[int], count: int) -> tuple[list[T], int]:
    """At most TIMELINE_POINTS items, shared out over the ``count`` session slots.

    The latest slot keeps up to LATEST_SESSION_POINTS of its items (all of the budget
    when it is the only slot), every other slot an equal share of the rest, each
    evenly spread by :func:`thin`, so a dense session does not crowd out the others.
    With more slots than points, the whole series is thinned at once.  Returns the
    items and the cap of the other slots (0 when the series was thinned at once).
    """
    if len(items) <= TIMELINE_POINTS:
        return list(items), 0
    latest_cap = TIMELINE_POINTS if count <= 1 else LATEST_SESSION_POINTS
    per_slot = (TIMELINE_POINTS - latest_cap) // (count - 1) if count > 1 else TIMELINE_POINTS
    if per_slot < 1:
        return thin(items, TIMELINE_POINTS), 0
    groups: dict[int, list[T]] = {}
    for item, slot in zip(items, slots, strict=True):
        groups.setdefault(slot, []).append(item)
    latest = max(groups)
    out: list[T] = []
    for slot in sorted(groups):
        out += thin(groups[slot], latest_cap if slot == latest else per_slot)
    return out, per_slot


# -- tables ----------------------------------------------------------------------------------


def _table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[bool] = ()
) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="num">{escape(c)}</td>'
            if i < len(numeric) and numeric[i]
            else f"<td>{escape(c)}</td>"
            for i, c in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    return (
        f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def _latest(doc: Mapping[str, Any], sessions: _Sessions) -> Mapping[str, Any] | None:
    if doc.get("session"):
        session: Mapping[str, Any] = doc["session"]
        return session
    return sessions.recorded[-1] if sessions.recorded else None


def _breaches_section(doc: Mapping[str, Any], sessions: _Sessions) -> list[str]:
    """The latest session's gate failures and advisory breaches, one row each."""
    latest = _latest(doc, sessions)
    out = ['<section id="breaches"><h2>Latest session: gate failures and breaches</h2>']
    if latest is None:
        out.append('<p class="note">no session recorded yet</p></section>')
        return out
    key = str(latest.get("session_id") or "")
    out.append(f'<p class="meta">{escape(sessions.name(key) if key else "this run")}</p>')
    rows: list[list[str]] = []
    failed: list[bool] = []
    for m in latest.get("metrics") or ():
        unit = str(m.get("unit") or "")
        for b in m.get("breaches") or ():
            value = b.get("value")
            shown = (
                f"{fmt_value(value)} {unit}".rstrip()
                if value is not None
                else str(b.get("message") or "assertion failed in ldd.gate()")
            )
            rows.append(
                [
                    "gate failed" if b.get("enforced") else "advisory breach",
                    str(m.get("name")),
                    shown,
                    str(b.get("limit") or "-"),
                    str(b.get("nodeid") or "-"),
                    str(m.get("state_before") or "-"),
                ]
            )
            failed.append(bool(b.get("enforced")))
    for gate in (latest.get("corpus") or {}).get("gates") or ():
        if not gate.get("breached"):
            continue
        value = gate.get("value")
        rows.append(
            [
                "gate failed" if gate.get("enforced") else "advisory breach",
                str(gate.get("name")),
                fmt_value(value) if value is not None else "inf",
                f"{gate.get('op')} {fmt_value(gate.get('limit'))}",
                "(session aggregate)",
                str(gate.get("state") or "-"),
            ]
        )
        failed.append(bool(gate.get("enforced")))
    if not rows:
        out.append('<p class="note">no gate failed and no bound was breached</p></section>')
        return out
    headers = ["outcome", "metric", "value", "bound", "test", "state at session start"]
    order = sorted(range(len(rows)), key=lambda i: (not failed[i], rows[i][1]))
    body = []
    for i in order:
        cells = "".join(
            f'<td class="id">{escape(c)}</td>' if column == 4 else f"<td>{escape(c)}</td>"
            for column, c in enumerate(rows[i])
        )
        body.append(f'<tr class="failed">{cells}</tr>' if failed[i] else f"<tr>{cells}</tr>")
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    out.append(
        f'<div class="table-wrap"><table class="ldd-breaches"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )
    out.append("</section>")
    return out


def _changes_table(changes: Sequence[Mapping[str, Any]]) -> str:
    rows = [[str(c.get("name")), str(c.get("before")), str(c.get("after"))] for c in changes]
    return _table(["metric", "before", "after"], rows)


def _session_section(session: Mapping[str, Any], sessions: _Sessions) -> list[str]:
    key = str(session.get("session_id") or "")
    out = [f'<section id="session"><h2>This run: {escape(sessions.name(key))}</h2>']
    out.append(
        f'<p class="meta">id <code>{escape(key)}</code>, started '
        f"{escape(str(session.get('started_at')))}, ended {escape(str(session.get('ended_at')))}"
        f", commit {escape(str(session.get('commit') or '-'))}</p>"
    )
    if not session.get("recording"):
        out.append('<p class="note">not recording (run with --ldd to log calibration pairs)</p>')
    counts = session.get("counts") or {}
    if counts:
        out.append(_table(list(counts), [[str(v) for v in counts.values()]], [True] * len(counts)))
    headers, rows, align = session_table(session, verbose=True)
    if rows:
        out.append(_table(headers, rows, [a == ">" for a in align]))
    else:
        out.append('<p class="note">no metrics observed</p>')
    changes = session.get("state_changes") or ()
    if changes:
        out.append("<h3>State changes</h3>")
        out.append(_changes_table(changes))
    corpus = corpus_lines(session.get("corpus") or {}, verbose=False)
    if corpus:
        out.append("<h3>Corpus</h3>")
        items = "".join(
            f'<li class="failed">{escape(line)}</li>'
            if line.startswith("corpus gate failed")
            else f"<li>{escape(line)}</li>"
            for line in corpus
        )
        out.append(f'<ul class="lines">{items}</ul>')
        by_test = (session.get("corpus") or {}).get("by_test") or {}
        if by_test:
            out.append(
                _table(
                    ["test", "success", "rate", "dollars", "cost-of-pass", "inconclusive"],
                    [
                        [
                            str(test),
                            f"{row.get('successes')}/{row.get('n')}",
                            fmt_error(row.get("success_rate")),
                            fmt_value(row.get("total_dollars")),
                            fmt_value(row.get("cost_per_success"))
                            if row.get("cost_per_success") is not None
                            else "infinite",
                            str(row.get("inconclusive") or 0),
                        ]
                        for test, row in by_test.items()
                    ],
                    [False, True, True, True, True, True],
                )
            )
    out.append("</section>")
    return out


def _status_section(metrics: Sequence[Mapping[str, Any]]) -> list[str]:
    out = ['<section id="metrics"><h2>Metrics</h2>']
    if not metrics:
        out.append('<p class="note">no metrics registered</p></section>')
        return out
    rows = [
        [
            str(m.get("name")),
            str((m.get("spec") or {}).get("kind", "-")),
            str(m.get("version")),
            str(m.get("state")),
            str(m.get("n")),
            fmt_error(m.get("mae")),
            fmt_error(m.get("p95_error")),
            fmt_error(m.get("worst_error")),
            fmt_error(m.get("window_mae")),
            gate_text(m.get("gate") or {}),
        ]
        for m in metrics
    ]
    headers = ["metric", "kind", "v", "state", "n", "MAE", "p95", "worst", "window", "gate"]
    numeric = [False, False, True, False, True, True, True, True, True, False]
    out.append(_table(headers, rows, numeric))
    out.append("</section>")
    return out


def _sessions_section(sessions: _Sessions) -> list[str]:
    out = ['<section id="sessions"><h2>Sessions</h2>']
    if not sessions.recorded:
        out.append('<p class="note">no session recorded yet</p></section>')
        return out
    shown = sessions.recorded[-SESSION_ROWS:]
    rows = []
    for item in reversed(shown):
        counts = item.get("counts") or {}
        started = str(item.get("started_at") or "")
        changes = ", ".join(
            f"{c.get('name')}: {c.get('before')} -> {c.get('after')}"
            for c in item.get("state_changes") or ()
        )
        rows.append(
            [
                f"Session {item.get('number')}",
                f"{started[:10]} {started[11:16]} UTC" if len(started) >= 16 else started,
                str(item.get("commit") or "-"),
                str(counts.get("tests", "-")),
                str(counts.get("observations", "-")),
                str(counts.get("pairs", "-")),
                str(counts.get("gate_failures", "-")),
                str(counts.get("advisory_breaches", "-")),
                changes or "-",
            ]
        )
    headers = [
        "session",
        "started",
        "commit",
        "tests",
        "obs",
        "pairs",
        "gate failures",
        "breaches",
        "state changes",
    ]
    out.append(_table(headers, rows, [False, False, False, True, True, True, True, True, False]))
    if len(sessions.recorded) > len(shown):
        older = len(sessions.recorded) - len(shown)
        out.append(f'<p class="note">and {older:,} older sessions (newest first above)</p>')
    out.append("</section>")
    return out


# -- per metric ------------------------------------------------------------------------------


def _promoting_session(sessions: _Sessions, name: str) -> str | None:
    """The id of the last recorded session that made ``name`` load-bearing."""
    found = None
    for item in sessions.recorded:
        for change in item.get("state_changes") or ():
            if change.get("name") == name and change.get("after") == "load_bearing":
                found = item.get("session_id")
    return found


def _sampling_note(doc: Mapping[str, Any]) -> str:
    sampling = (doc.get("history") or {}).get("sampling")
    if not sampling:
        return ""
    pairs = sampling.get("calibrations") or {}
    return (
        f" Read from an excerpt of the log ({pairs.get('bytes', 0) / 1e6:,.0f} MB): every "
        f"pair of its last {pairs.get('tail_bytes', 0) / 1e6:,.1f} MB and an even sample "
        f"of {pairs.get('sampled_lines', 0):,} earlier lines."
    )


def _metric_section(
    metric: Mapping[str, Any], doc: Mapping[str, Any], sessions: _Sessions
) -> list[str]:
    name = str(metric.get("name"))
    spec = metric.get("spec") or {}
    gate = metric.get("gate") or {}
    state = str(metric.get("state"))
    max_mae = float(gate.get("max_mae") or 0.0)
    pairs = list(((doc.get("history") or {}).get("calibrations") or {}).get(name) or ())
    out = [
        f'<section class="ldd-metric" id="metric-{escape(name)}">',
        f'<h3><code>{escape(name)}</code> <span class="state {escape(state)}">'
        f"{escape(state)}</span></h3>",
    ]
    facts = [
        f"{spec.get('kind', '-')}",
        f"unit {spec.get('unit', '-')}",
        f"version {metric.get('version')}",
        f"n = {metric.get('n')}",
        f"MAE = {fmt_error(metric.get('mae'))}",
        f"gate {gate_text(gate)}",
    ]
    if spec.get("composition"):
        parts = ", ".join(
            f"{c.get('name')} x {fmt_value(c.get('weight'))}" for c in spec.get("components") or ()
        )
        facts.append(f"{spec['composition']} of {parts}")
    out.append(f'<p class="meta">{escape(" · ".join(facts))}</p>')
    if spec.get("description"):
        out.append(f"<p>{escape(str(spec['description']))}</p>")

    timeline, caption = _timeline(metric, doc, sessions)
    out.append(
        f'<figure class="timeline">{timeline}<figcaption>{escape(caption)}</figcaption></figure>'
    )

    latest = _latest(doc, sessions)
    latest_key = sessions.key(latest) if latest is not None else None
    shown = thin(pairs, SCATTER_POINTS)
    points = []
    for pair in shown:
        key = sessions.key(pair)
        where = f"\n{pair['nodeid']}" if pair.get("nodeid") else ""
        error = abs(float(pair["predicted"]) - float(pair["observed"]))
        points.append(
            CalibrationPoint(
                predicted=float(pair["predicted"]),
                observed=float(pair["observed"]),
                colour=BREACH if key == latest_key else OBSERVED,
                tip=(
                    f"{sessions.name(key)}{where}\npredicted {float(pair['predicted']):.3f}, "
                    f"observed {float(pair['observed']):.3f}, error {error:.3f} (normalized)"
                ),
            )
        )
    scatter = calibration_svg(
        f"{name}: predicted vs observed (normalized), band +/- {fmt_value(max_mae)}",
        points,
        max_mae=max_mae,
    )
    values = running_mae(pairs)
    index, how = promotion_index(
        pairs, gate, metric.get("promoted_at"), _promoting_session(sessions, name)
    )
    positions = thin(list(range(1, len(values) + 1)), MAE_POINTS)
    mae_plot = mae_svg(
        f"{name}: running MAE over {len(pairs)} pairs, threshold {fmt_value(max_mae)}",
        [values[i - 1] for i in positions],
        positions=positions,
        max_mae=max_mae,
        promotion_index=index,
        promotion_label=how or "promoted",
    )
    sampled = _sampling_note(doc)
    out.append('<div class="plots">')
    note = (
        f" Showing {len(shown):,} of {len(pairs):,} pairs: the last {SCATTER_POINTS // 3} and an "
        "even sample of the rest."
        if len(shown) < len(pairs)
        else ""
    )
    key_html = (
        f'<span class="key" style="background:{BREACH}"></span>latest session'
        f'<span class="key" style="background:{OBSERVED}"></span>earlier'
    )
    out.append(
        f"<figure>{scatter}<figcaption>How far predictions can be trusted: predicted vs "
        f"observed (normalized), y = x dashed, shaded band |error| &lt;= "
        f"{escape(fmt_value(max_mae))}.{escape(note + sampled)} {key_html}</figcaption></figure>"
    )
    caption = "Running MAE after each pair; dashed line: max_mae."
    if index is not None:
        caption += f" {how.capitalize()} at pair {index}."
    if len(positions) < len(values):
        caption += f" Drawn at {len(positions):,} of {len(values):,} pairs."
    out.append(f"<figure>{mae_plot}<figcaption>{escape(caption + sampled)}</figcaption></figure>")
    out.append("</div></section>")
    return out


def _corpus_section(doc: Mapping[str, Any], sessions: _Sessions) -> list[str]:
    session = doc.get("session") or {}
    limits = {
        str(g.get("name")): g.get("limit")
        for g in (session.get("corpus") or {}).get("gates") or ()
        if isinstance(g.get("limit"), (int, float))
    }
    out = ['<section id="corpus"><h2>Corpus aggregates per session</h2>']
    success: list[CorpusPoint] = []
    cost: list[CorpusPoint] = []
    for index, item in enumerate(sessions.recorded, start=1):
        corpus = item.get("corpus") or {}
        label = sessions.name(str(item.get("session_id") or ""))
        rate_doc = corpus.get("task_success") or {}
        if isinstance(rate_doc.get("success_rate"), (int, float)):
            low, high = [*(rate_doc.get("interval") or ()), None, None][:2]
            success.append(CorpusPoint(index, label, float(rate_doc["success_rate"]), low, high))
        cost_doc = corpus.get("cost_per_success") or {}
        if cost_doc:
            pooled = cost_doc.get("pooled")
            value = float(pooled) if isinstance(pooled, (int, float)) else None
            cost.append(CorpusPoint(index, label, value))
    if not success and not cost:
        out.append('<p class="note">no graded episodes yet</p></section>')
        return out
    out.append('<div class="plots">')
    slots = len(sessions.recorded)
    if success:
        plot = corpus_svg(
            f"task_success per session ({len(success)} sessions) with 95% Wilson interval",
            success,
            slots=slots,
            y_label="success rate",
            unit_interval=True,
            limit=limits.get("task_success"),
        )
        out.append(
            f"<figure>{plot}<figcaption>Success rate per session (numbered oldest first), "
            "whiskers: 95% Wilson interval.</figcaption></figure>"
        )
    if cost:
        plot = corpus_svg(
            f"cost_per_success per session ({len(cost)} sessions), dollars per success",
            cost,
            slots=slots,
            y_label="dollars per successful task",
            unit_interval=False,
            limit=limits.get("cost_per_success"),
        )
        out.append(
            f"<figure>{plot}<figcaption>Cost-of-pass (pooled: total dollars / successes) per "
            "session; a session without a success is marked inf.</figcaption></figure>"
        )
    out.append("</div></section>")
    return out


def render_html(doc: Mapping[str, Any]) -> str:
    """The report document as one self-contained HTML page."""
    metrics = list(doc.get("metrics") or ())
    sessions = _Sessions(doc)
    latest = _latest(doc, sessions)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>pytest-ldd report</title>",
        f"<style>{_CSS}</style></head><body>",
        "<header><h1>pytest-ldd report</h1>",
    ]
    if latest is not None:
        key = str(latest.get("session_id") or "")
        out.append(
            f'<p class="meta">latest: {escape(sessions.name(key))} '
            f"({len(sessions.recorded):,} sessions recorded)</p>"
        )
    out.append(
        f'<p class="meta">generated {escape(str(doc.get("generated_at")))} from '
        f"<code>{escape(str(doc.get('ldd_dir')))}</code> "
        f"(report schema {escape(str(doc.get('schema_version')))})</p></header>"
    )
    out += _breaches_section(doc, sessions)
    out += _status_section(metrics)
    if metrics:
        out.append('<section id="timelines"><h2>Metrics over time</h2>')
        for metric in metrics:
            out += _metric_section(metric, doc, sessions)
        out.append("</section>")
    out += _corpus_section(doc, sessions)
    out += _sessions_section(sessions)
    if doc.get("session"):
        out += _session_section(doc["session"], sessions)
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def session_fragment(session: Mapping[str, Any]) -> str:
    """The session as a piece of another tool's HTML page (pytest-html's summary).

    An "ldd" heading, the metrics table, the state changes and every gate failure and
    breach, all text escaped; no page, style or script of its own.
    """
    out = ['<div class="ldd"><h2>ldd</h2>']
    if not session.get("recording"):
        out.append("<p>not recording (run with --ldd to log calibration pairs)</p>")
    headers, rows, align = session_table(session)
    numeric = [a == ">" for a in align]
    out.append(_table(headers, rows, numeric) if rows else "<p>no metrics observed</p>")
    changes = session.get("state_changes") or ()
    if changes:
        out.append("<h3>State changes</h3>")
        out.append(_changes_table(changes))
    lines = [
        f"{'gate failed' if b.get('enforced') else 'advisory breach'}: {breach_text(m, b)}"
        for m in session.get("metrics") or ()
        for b in m.get("breaches") or ()
    ]
    lines += corpus_lines(session.get("corpus") or {})
    if lines:
        out.append("<ul>" + "".join(f"<li>{escape(line)}</li>" for line in lines) + "</ul>")
    out.append("</div>")
    return "".join(out)
