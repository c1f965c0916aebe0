"""The HTML report: one self-contained page (inline CSS and SVG, no script, no network).

The page shows the same data as the terminal section and the JSON document: the
session's tables (when the report belongs to a pytest run), every metric's state,
and per metric a calibration scatter and its running MAE; then corpus aggregates
per session.  All text from the document is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from pytest_ldd.report import (
    breach_text,
    corpus_lines,
    fmt_error,
    fmt_value,
    gate_text,
    session_table,
)
from pytest_ldd.svg import (
    OLDER,
    PALETTE,
    CalibrationPoint,
    CorpusPoint,
    calibration_svg,
    corpus_svg,
    mae_svg,
)

__all__ = ["promotion_index", "render_html", "running_mae"]

#: MAE comparisons use the same tolerance as the calibration gate.
_TOLERANCE = 1e-9

_CSS = """
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial,
  sans-serif; margin: 0 auto; max-width: 1100px; padding: 24px; color: #222;
  background: #fff; line-height: 1.45; }
h1 { font-size: 1.6em; margin: 0 0 4px; }
h2 { font-size: 1.25em; margin: 32px 0 8px; border-bottom: 1px solid #ddd;
  padding-bottom: 4px; }
h3 { font-size: 1.05em; margin: 24px 0 6px; }
p.meta, p.note { color: #666; margin: 4px 0; font-size: 0.92em; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 0.9em; }
th, td { padding: 4px 10px; border-bottom: 1px solid #eee; text-align: left;
  vertical-align: top; }
th { background: #f6f6f6; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 0.92em; }
.state { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 0.85em;
  background: #eee; color: #333; }
.state.load_bearing { background: #d9f2e6; color: #0b6b3a; }
.state.drifting, .state.catastrophic_outlier, .state.tail_risk_high {
  background: #fde8dc; color: #9a3a06; }
.plots { display: flex; flex-wrap: wrap; gap: 16px; }
figure { margin: 0; }
figcaption { font-size: 0.85em; color: #555; max-width: 380px; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 50%;
  margin: 0 4px 0 10px; vertical-align: baseline; }
ul.lines { padding-left: 20px; margin: 6px 0; }
.failed { color: #b00020; }
svg.ldd-plot { background: #fff; }
"""


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


def _promoting_session(doc: Mapping[str, Any], name: str) -> str | None:
    """The id of the last recorded session that made ``name`` load-bearing."""
    sessions = (doc.get("history") or {}).get("sessions") or ()
    found = None
    for item in sessions:
        for change in item.get("state_changes") or ():
            if change.get("name") == name and change.get("after") == "load_bearing":
                found = item.get("session_id")
    return found


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
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _session_label(session_id: object) -> str:
    return str(session_id) if session_id else "outside pytest"


def _colours(calibrations: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, str]:
    """One colour per session label, the newest sessions getting the palette."""
    first: dict[str, str] = {}
    for pairs in calibrations.values():
        for pair in pairs:
            label = _session_label(pair.get("session_id"))
            stamp = str(pair.get("timestamp") or "")
            if label not in first or stamp < first[label]:
                first[label] = stamp
    order = sorted(first, key=lambda label: (first[label], label))
    out = dict.fromkeys(order, OLDER)
    out.update({label: PALETTE[i] for i, label in enumerate(order[-len(PALETTE) :])})
    return out


def _session_section(session: Mapping[str, Any]) -> list[str]:
    out = [f'<section id="session"><h2>Session {escape(str(session.get("session_id")))}</h2>']
    out.append(
        f'<p class="meta">started {escape(str(session.get("started_at")))}, '
        f"ended {escape(str(session.get('ended_at')))}</p>"
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
        out.append(
            _table(
                ["metric", "before", "after"],
                [[str(c.get("name")), str(c.get("before")), str(c.get("after"))] for c in changes],
            )
        )
    breaches = [(m, b) for m in session.get("metrics") or () for b in m.get("breaches") or ()]
    if breaches:
        out.append("<h3>Gate breaches</h3>")
        out.append(
            _table(
                ["kind", "breach"],
                [
                    ["gate failed" if b.get("enforced") else "advisory breach", breach_text(m, b)]
                    for m, b in breaches
                ],
            )
        )
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
                    ["test", "success", "rate", "dollars", "cost-of-pass"],
                    [
                        [
                            str(test),
                            f"{row.get('successes')}/{row.get('n')}",
                            fmt_error(row.get("success_rate")),
                            fmt_value(row.get("total_dollars")),
                            fmt_value(row.get("cost_per_success"))
                            if row.get("cost_per_success") is not None
                            else "infinite",
                        ]
                        for test, row in by_test.items()
                    ],
                    [False, True, True, True, True],
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


def _metric_section(
    metric: Mapping[str, Any],
    pairs: Sequence[Mapping[str, Any]],
    colours: Mapping[str, str],
    promoted_in: str | None = None,
) -> list[str]:
    name = str(metric.get("name"))
    spec = metric.get("spec") or {}
    gate = metric.get("gate") or {}
    state = str(metric.get("state"))
    max_mae = float(gate.get("max_mae") or 0.0)
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

    points = []
    present: list[str] = []
    for i, pair in enumerate(pairs, start=1):
        label = _session_label(pair.get("session_id"))
        if label not in present:
            present.append(label)
        where = f", {pair['nodeid']}" if pair.get("nodeid") else ""
        points.append(
            CalibrationPoint(
                predicted=float(pair["predicted"]),
                observed=float(pair["observed"]),
                colour=colours.get(label, OLDER),
                tip=(
                    f"pair {i}: predicted {float(pair['predicted']):.3f}, "
                    f"observed {float(pair['observed']):.3f} ({label}{where})"
                ),
            )
        )
    legend = "".join(
        f'<span class="swatch" style="background:{colours.get(label, OLDER)}"></span>'
        f"{escape(label)}"
        for label in present
    )
    scatter = calibration_svg(
        f"{name}: predicted vs observed (normalized), band +/- {fmt_value(max_mae)}",
        points,
        max_mae=max_mae,
    )
    index, how = promotion_index(pairs, gate, metric.get("promoted_at"), promoted_in)
    mae_plot = mae_svg(
        f"{name}: running MAE over {len(pairs)} pairs, threshold {fmt_value(max_mae)}",
        running_mae(pairs),
        max_mae=max_mae,
        promotion_index=index,
        promotion_label=how or "promoted",
    )
    out.append('<div class="plots">')
    out.append(
        f"<figure>{scatter}<figcaption>Predicted vs observed, y = x dashed, shaded band "
        f"|error| &lt;= {escape(fmt_value(max_mae))}. {legend}</figcaption></figure>"
    )
    caption = "Running MAE after each pair; dashed line: max_mae."
    if index is not None:
        caption += f" {how.capitalize()} at pair {index}."
    out.append(f"<figure>{mae_plot}<figcaption>{escape(caption)}</figcaption></figure>")
    out.append("</div></section>")
    return out


def _corpus_section(doc: Mapping[str, Any]) -> list[str]:
    sessions = (doc.get("history") or {}).get("sessions") or ()
    session = doc.get("session") or {}
    limits = {
        str(g.get("name")): g.get("limit")
        for g in (session.get("corpus") or {}).get("gates") or ()
        if isinstance(g.get("limit"), (int, float))
    }
    out = ['<section id="corpus"><h2>Corpus aggregates per session</h2>']
    success: list[CorpusPoint] = []
    cost: list[CorpusPoint] = []
    for index, item in enumerate(sessions, start=1):
        corpus = item.get("corpus") or {}
        label = _session_label(item.get("session_id"))
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
    if success:
        plot = corpus_svg(
            f"task_success per session ({len(success)} sessions) with 95% Wilson interval",
            success,
            slots=len(sessions),
            y_label="success rate",
            unit_interval=True,
            limit=limits.get("task_success"),
        )
        out.append(
            f"<figure>{plot}<figcaption>Success rate per session, whiskers: 95% Wilson "
            "interval.</figcaption></figure>"
        )
    if cost:
        plot = corpus_svg(
            f"cost_per_success per session ({len(cost)} sessions), dollars per success",
            cost,
            slots=len(sessions),
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
    calibrations = (doc.get("history") or {}).get("calibrations") or {}
    colours = _colours(calibrations)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>pytest-ldd report</title>",
        f"<style>{_CSS}</style></head><body>",
        "<header><h1>pytest-ldd report</h1>",
        f'<p class="meta">generated {escape(str(doc.get("generated_at")))} from '
        f"<code>{escape(str(doc.get('ldd_dir')))}</code> "
        f"(report schema {escape(str(doc.get('schema_version')))})</p></header>",
    ]
    if doc.get("session"):
        out += _session_section(doc["session"])
    out += _status_section(metrics)
    if metrics:
        out.append('<section id="calibration"><h2>Calibration</h2>')
        for metric in metrics:
            name = metric.get("name")
            promoted_in = _promoting_session(doc, str(name))
            out += _metric_section(metric, calibrations.get(name) or (), colours, promoted_in)
        out.append("</section>")
    out += _corpus_section(doc)
    out.append("</body></html>")
    return "\n".join(out) + "\n"
