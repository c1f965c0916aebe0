"""The report as text: number formats, aligned tables and the terminal section.

The ``ldd`` terminal section of a pytest run (:func:`render_terminal`), the tables of
``ldd metric status`` and the formats every rendering shares (``fmt_*``,
:func:`gate_text`, :func:`session_name`) live here; :mod:`pytest_ldd.report` builds the
document they render and :mod:`pytest_ldd.report.html` the page.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

__all__ = [
    "BREACH_LINES",
    "Align",
    "breach_text",
    "corpus_lines",
    "fmt_dollars",
    "fmt_error",
    "fmt_state",
    "fmt_value",
    "format_table",
    "gate_text",
    "render_terminal",
    "session_name",
    "session_table",
    "status_table",
]

#: How many breach lines the terminal section shows before summarising the rest.
BREACH_LINES = 20

Align = Literal["<", ">"]


# -- small formatting helpers -------------------------------------------------------


def fmt_error(value: object) -> str:
    """A normalized error (MAE, p95, worst) with three decimals, ``-`` when absent."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return f"{value:.3f}"
    return "-"


def fmt_value(value: object) -> str:
    """A raw value or limit the way a person writes it: ``512``, ``0.8``, ``1.5e-07``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "-" if value is None else str(value)
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.6g}"


def fmt_dollars(value: object) -> str:
    """Dollars with four decimals; ``None`` (no successful task) reads as infinite."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return f"${value:.4f}"
    return "infinite"


def fmt_state(before: object, after: object) -> str:
    """``after``, or ``before -> after`` when the state changed."""
    if before is not None and after is not None and before != after:
        return f"{before} -> {after}"
    return str(after if after is not None else before if before is not None else "-")


def format_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    align: Sequence[Align] | None = None,
    *,
    indent: str = "",
) -> list[str]:
    """Rows as aligned text lines: a header line, then one line per row.

    Column widths fit the widest cell; columns are two spaces apart; ``align`` gives
    ``"<"`` (text) or ``">"`` (numbers) per column.  Trailing spaces are stripped.
    """
    columns = len(headers)
    aligns: Sequence[Align] = align if align is not None else ["<"] * columns
    if len(aligns) != columns:
        msg = f"'align' must have one entry per column ({columns}) (got {len(aligns)})"
        raise ValueError(msg)
    for row in rows:
        if len(row) != columns:
            msg = f"each row must have {columns} cells (got {len(row)}: {list(row)!r})"
            raise ValueError(msg)
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: Sequence[str]) -> str:
        parts = [
            cell.rjust(widths[i]) if aligns[i] == ">" else cell.ljust(widths[i])
            for i, cell in enumerate(cells)
        ]
        return (indent + "  ".join(parts)).rstrip()

    return [line(headers), *(line(row) for row in rows)]


def session_name(number: int | None, session: Mapping[str, Any]) -> str:
    """``Session 3 · 2026-12-01 19:46 UTC · 1a2b3c4+dirty`` (the parts that are known).

    ``number`` is the session's 1-based place in ``sessions.jsonl`` (oldest first);
    ``None`` for a session that left pairs but no session line (killed before its end).
    """
    parts = [f"Session {number}" if number is not None else "Unrecorded session"]
    started = str(session.get("started_at") or "")
    if len(started) >= 16 and started[10] == "T":
        parts.append(f"{started[:10]} {started[11:16]} UTC")
    elif session.get("session_id"):
        parts.append(str(session["session_id"]))
    if session.get("commit"):
        parts.append(str(session["commit"]))
    return " · ".join(parts)


def gate_text(gate: Mapping[str, Any]) -> str:
    """A gate object in a few words: ``n>=5 MAE<=0.15 p95<=0.3``."""
    parts = [f"n>={gate.get('min_n')}", f"MAE<={fmt_value(gate.get('max_mae'))}"]
    if gate.get("max_p95") is not None:
        parts.append(f"p95<={fmt_value(gate['max_p95'])}")
    if gate.get("max_worst") is not None:
        parts.append(f"worst<={fmt_value(gate['max_worst'])}")
    return " ".join(parts)


def status_table(states: Sequence[Mapping[str, Any]]) -> list[str]:
    """The ``ldd metric status`` table from :func:`state_json` objects."""
    headers = ["metric", "v", "state", "n", "MAE", "p95", "worst", "window", "gate"]
    align: list[Align] = ["<", ">", "<", ">", ">", ">", ">", ">", "<"]
    rows = [
        [
            str(s["name"]),
            str(s["version"]),
            str(s["state"]),
            str(s["n"]),
            fmt_error(s["mae"]),
            fmt_error(s["p95_error"]),
            fmt_error(s["worst_error"]),
            fmt_error(s["window_mae"]),
            gate_text(s["gate"]),
        ]
        for s in states
    ]
    return format_table(headers, rows, align)


# -- the terminal section --------------------------------------------------------------


def session_table(
    session: Mapping[str, Any], *, verbose: bool = False
) -> tuple[list[str], list[list[str]], list[Align]]:
    """Headers, rows and alignment of the per-metric table of a session document."""
    headers = ["metric", "kind", "v", "state", "n", "MAE"]
    align: list[Align] = ["<", "<", ">", "<", ">", ">"]
    if verbose:
        headers += ["p95", "worst", "window"]
        align += [">", ">", ">"]
    headers += ["gate", "+obs", "+pairs", "breaches"]
    align += ["<", ">", ">", ">"]
    rows: list[list[str]] = []
    for m in session.get("metrics") or ():
        row = [
            str(m.get("name")),
            str(m.get("kind", "-")),
            str(m.get("version", "-")),
            fmt_state(m.get("state_before"), m.get("state_after")),
            str(m.get("n", 0)),
            fmt_error(m.get("mae")),
        ]
        if verbose:
            row += [
                fmt_error(m.get("p95_error")),
                fmt_error(m.get("worst_error")),
                fmt_error(m.get("window_mae")),
            ]
        row += [
            ", ".join(str(g) for g in m.get("gates") or ()) or "-",
            str(m.get("observations", 0)),
            str(m.get("pairs", 0)),
            str(len(m.get("breaches") or ())),
        ]
        rows.append(row)
    return headers, rows, align


def breach_text(metric: Mapping[str, Any], breach: Mapping[str, Any]) -> str:
    """``latency_p99 = 512 ms, limit le 500 (tests/test_x.py::test_a)``."""
    name = metric.get("name")
    unit = metric.get("unit") or ""
    where = f" ({breach['nodeid']})" if breach.get("nodeid") else ""
    value = breach.get("value")
    if value is None:
        # ldd.gate() blocks breach by a failed assertion, not by a value.
        limit = breach.get("limit")
        detail = breach.get("message") or (
            "assertion failed in ldd.gate()" if limit in (None, "assertion") else str(limit)
        )
        return f"{name}: {detail}{where}"
    shown = fmt_value(value) + (f" {unit}" if unit else "")
    return f"{name} = {shown}, limit {breach.get('limit')}{where}"


def _breach_lines(session: Mapping[str, Any], verbose: bool) -> list[str]:
    lines: list[str] = []
    for enforced, label in ((True, "gate failed"), (False, "advisory breach")):
        found = [
            f"{label}: {breach_text(m, b)}"
            for m in session.get("metrics") or ()
            for b in m.get("breaches") or ()
            if bool(b.get("enforced")) is enforced
        ]
        if not verbose and len(found) > BREACH_LINES:
            rest = len(found) - BREACH_LINES
            found = [*found[:BREACH_LINES], f"... and {rest} more (run with -v to list all)"]
        lines += found
    return lines


def _count(value: object) -> int:
    """A count read from a session document (0 for anything that is not one)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _confinement_line(confinement: object) -> str:
    """How many hidden-test verdicts ran the agent's code unconfined ('' for none at all)."""
    if not isinstance(confinement, Mapping):
        return ""
    verdicts = _count(confinement.get("verdicts"))
    unconfined = _count(confinement.get("unconfined"))
    if not verdicts:
        return ""
    if not unconfined:
        return f"confinement: all {verdicts} verdicts ran confined by the kernel"
    return (
        f"confinement: {unconfined} of {verdicts} verdicts ran unconfined"
        " (the agent's code was not confined by the kernel)"
    )


def corpus_lines(corpus: Mapping[str, Any], *, verbose: bool = False) -> list[str]:
    """Success rate, cost-of-pass, pass^k and corpus gate lines of a session."""
    lines: list[str] = []
    success = corpus.get("task_success")
    if success:
        interval = success.get("interval") or [None, None]
        rate = success.get("success_rate")
        line = (
            f"task_success: {success.get('successes')}/{success.get('n')} = "
            f"{fmt_error(rate) if rate is not None else '-'}"
        )
        if interval[0] is not None and interval[1] is not None:
            line += f" (95% CI {interval[0]:.3f}-{interval[1]:.3f})"
        doubt = _count(success.get("inconclusive"))
        if doubt:
            line += f"; {doubt} inconclusive (not judged, not counted)"
        lines.append(line)
    line = _confinement_line(corpus.get("confinement"))
    if line:
        lines.append(line)
    cost = corpus.get("cost_per_success")
    if cost:
        pooled = cost.get("pooled")
        head = (
            f"{fmt_dollars(pooled)} per successful task"
            if pooled is not None
            else "infinite (no successful task)"
        )
        per_task = (
            f" (per task: {fmt_dollars(cost.get('per_task'))})" if "per_task" in cost else ""
        )
        lines.append(
            f"cost-of-pass: {head}{per_task}; total {fmt_dollars(cost.get('total_dollars'))}"
        )
    pass_hat = corpus.get("pass_hat_k")
    if pass_hat:
        figures = ", ".join(f"k={k} {fmt_error(v)}" for k, v in pass_hat.items())
        lines.append(f"pass^k: {figures}")
    by_test = corpus.get("by_test")
    # One test function is the whole corpus: its row would repeat the line above.
    if by_test and (verbose or len(by_test) > 1):
        # The inconclusive column only where some test had an episode not judged.
        doubts = any(_count(row.get("inconclusive")) for row in by_test.values())
        rows = [
            [
                str(test),
                f"{row.get('successes')}/{row.get('n')}",
                fmt_error(row.get("success_rate")),
                fmt_dollars(row.get("total_dollars")),
                fmt_dollars(row.get("cost_per_success")),
                *([str(_count(row.get("inconclusive")))] if doubts else []),
            ]
            for test, row in by_test.items()
        ]
        headers = ["test", "success", "rate", "dollars", "cost-of-pass"]
        align: list[Align] = ["<", ">", ">", ">", ">"]
        if doubts:
            headers.append("inconclusive")
            align.append(">")
        lines.append("by test:")
        lines += format_table(headers, rows, align, indent="  ")
    for gate in corpus.get("gates") or ():
        value = fmt_value(gate.get("value")) if gate.get("value") is not None else "inf"
        what = (
            f"{gate.get('name')} = {value}, limit {gate.get('op')} {fmt_value(gate.get('limit'))}"
        )
        if gate.get("breached") and gate.get("enforced"):
            lines.append(gate.get("message") or f"corpus gate failed: {what} (load-bearing)")
        elif gate.get("breached"):
            lines.append(f"corpus advisory breach: {what} (state {gate.get('state')})")
        else:
            lines.append(f"corpus gate passed: {what} (state {gate.get('state')})")
    return lines


def render_terminal(session: Mapping[str, Any], *, verbose: bool = False) -> list[str]:
    """The lines of the ``ldd`` terminal section of a session document.

    An aligned row per metric touched, then state changes, gate failures and
    advisory breaches, then corpus aggregates and corpus gates.  ``verbose`` adds the
    p95 / worst / window columns, every breach and the per-test corpus table.
    """
    lines: list[str] = []
    if not session.get("recording"):
        lines.append("not recording (run with --ldd to log calibration pairs)")
    headers, rows, align = session_table(session, verbose=verbose)
    if rows:
        lines += format_table(headers, rows, align)
    else:
        lines.append("no metrics observed")
    changes = session.get("state_changes") or ()
    if changes:
        lines.append("state changes:")
        lines += [f"  {c.get('name')}: {c.get('before')} -> {c.get('after')}" for c in changes]
    lines += _breach_lines(session, verbose)
    lines += corpus_lines(session.get("corpus") or {}, verbose=verbose)
    return lines
