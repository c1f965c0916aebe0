"""A session as GitHub Actions shows it: the job summary (Markdown) and annotations.

:func:`job_summary` renders the session document as one Markdown section for the
job summary page (``$GITHUB_STEP_SUMMARY``): the metrics table, the state changes,
the gate failures and breaches with their tests and bounds, the corpus figures and
where the reports are.  Every piece of text that comes from a test, a marker or the
store (metric names, units, test ids, messages) is made inert first
(:func:`markdown_text`): a ``|`` would split a table cell, a newline end the table,
a backtick open a code span, ``<`` start raw HTML.

:func:`workflow_command` writes one ``::error`` / ``::warning`` line that GitHub
turns into an annotation, escaped as its workflow-command syntax requires.

Pure: no pytest import; the plugin decides when and where (:mod:`pytest_ldd.plugin.github`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pytest_ldd.report.terminal import printable
from pytest_ldd.report.text import (
    breach_text,
    corpus_lines,
    fmt_value,
    session_table,
)

__all__ = [
    "ANNOTATIONS_PER_KIND",
    "SUMMARY_BREACH_ROWS",
    "annotation_commands",
    "job_summary",
    "markdown_text",
    "workflow_command",
]

#: Breach rows the job summary lists before counting the rest.
SUMMARY_BREACH_ROWS: Final = 50
#: Annotations of one kind per session: GitHub shows 10 errors and 10 warnings of a
#: step; more lines would only lengthen the log.
ANNOTATIONS_PER_KIND: Final = 10

#: ASCII punctuation that means something inside a line of CommonMark / GFM (emphasis,
#: code spans, links, raw HTML, entities, table cells, strikethrough, GitHub's math):
#: each is written backslash-escaped, which CommonMark shows as the character itself.
_MARKDOWN_SPECIAL: Final = re.compile(r"([\\`*_\[\]<>|~&$])")
#: What would start a block at the start of a line (a heading, a list, a rule, a
#: numbered list's ``1.``): its punctuation is escaped there.
_BLOCK_START: Final = re.compile(r"^(?:\d{1,9}(?=[.)])|(?=[#+\-=]))")


def markdown_text(value: object, *, line_start: bool = True) -> str:
    """``value`` as Markdown text that renders as exactly that text, in a paragraph, a
    list item or a table cell.

    Control characters (newlines included) are shown as escapes (``\\n``), as in the
    terminal; blanks at either end are dropped (Markdown drops them); then every
    character with a meaning in a line of Markdown is escaped, and, with
    ``line_start`` (not in a table cell, where no block starts), what would start a
    block at the start of the line.
    """
    text = _MARKDOWN_SPECIAL.sub(r"\\\1", printable(str(value)).strip())
    if not line_start:
        return text
    return _BLOCK_START.sub(lambda m: m.group() + "\\", text, count=1)


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: Sequence[str]) -> str:
    """A GFM table; ``align`` holds ``"<"`` or ``">"`` per column; cells are escaped."""
    marks = ["---:" if a == ">" else ":---" for a in align]
    lines = [
        "| " + " | ".join(markdown_text(h, line_start=False) for h in headers) + " |",
        "| " + " | ".join(marks) + " |",
    ]
    lines += [
        "| " + " | ".join(markdown_text(c, line_start=False) for c in row) + " |" for row in rows
    ]
    return "\n".join(lines)


def _breach_rows(session: Mapping[str, Any]) -> list[list[str]]:
    """Per breach, gate failures first: outcome, test, metric, value, bound."""
    rows: list[list[str]] = []
    for enforced, label in ((True, "gate failed"), (False, "advisory breach")):
        for metric in session.get("metrics") or ():
            unit = metric.get("unit") or ""
            for breach in metric.get("breaches") or ():
                if bool(breach.get("enforced")) is not enforced:
                    continue
                value = breach.get("value")
                if value is None:
                    # A breach inside ldd.gate(...): what failed instead of a value.
                    shown = str(breach.get("message") or "assertion failed in ldd.gate()")
                else:
                    shown = fmt_value(value) + (f" {unit}" if unit else "")
                rows.append(
                    [
                        label,
                        str(breach.get("nodeid") or "-"),
                        str(metric.get("name")),
                        shown,
                        str(breach.get("limit") or "-"),
                    ]
                )
    return rows


def job_summary(session: Mapping[str, Any], *, reports: Sequence[tuple[str, str]] = ()) -> str:
    """The Markdown section of one session, ending with a newline.

    ``reports`` holds ``(what, path)`` pairs (``("JSON report", "out/ldd.json")``)
    shown at the end, after the ``.ldd`` folder the session used.
    """
    parts = ["## pytest-ldd"]
    counts = session.get("counts") or {}
    if not session.get("recording"):
        parts.append(markdown_text("Not recording (run with --ldd to log calibration pairs)."))
    if counts:
        figures = ", ".join(
            _counted(counts.get(key, 0), one, many)
            for key, one, many in (
                ("tests", "test", "tests"),
                ("observations", "observation", "observations"),
                ("pairs", "pair", "pairs"),
                ("gate_failures", "gate failure", "gate failures"),
                ("advisory_breaches", "advisory breach", "advisory breaches"),
            )
        )
        if counts.get("inconclusive"):
            figures += f", {counts['inconclusive']} inconclusive"
        interrupted = " (interrupted)" if session.get("interrupted") else ""
        parts.append(markdown_text(f"{figures}{interrupted}."))
    headers, rows, align = session_table(session)
    parts.append(_table(headers, rows, align) if rows else "No metric was observed.")
    changes = session.get("state_changes") or ()
    if changes:
        parts.append("### State changes")
        parts.append(
            "\n".join(
                "- " + markdown_text(f"{c.get('name')}: {c.get('before')} -> {c.get('after')}")
                for c in changes
            )
        )
    breaches = _breach_rows(session)
    if breaches:
        parts.append("### Gate failures and breaches")
        shown = breaches[:SUMMARY_BREACH_ROWS]
        parts.append(_table(["outcome", "test", "metric", "value", "bound"], shown, "<<<><"))
        if len(breaches) > len(shown):
            rest = len(breaches) - len(shown)
            parts.append(markdown_text(f"... and {rest} more (the JSON report lists all)."))
    corpus = corpus_lines(session.get("corpus") or {})
    if corpus:
        parts.append("### Corpus")
        parts.append("\n".join("- " + markdown_text(line.strip()) for line in corpus))
    where = [("Store", str(session.get("ldd_dir")))] if session.get("ldd_dir") else []
    where += list(reports)
    if where:
        parts.append("### Records and reports")
        parts.append(
            "\n".join(f"- {markdown_text(what)}: {markdown_text(p)}" for what, p in where)
        )
    return "\n\n".join(parts) + "\n"


# -- workflow commands -------------------------------------------------------------------


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(command: str, message: str, **properties: object) -> str:
    """``::command key=value,...::message``, each part escaped for GitHub's parser.

    Properties that are ``None`` are left out.  The message keeps its line breaks
    (``%0A``, shown by GitHub); other control characters are shown as escapes, so
    that no text of a test steers the log's terminal.
    """
    props = ",".join(
        f"{key}={_escape_property(printable(str(value)))}"
        for key, value in properties.items()
        if value is not None
    )
    head = f"::{command} {props}" if props else f"::{command}"
    return f"{head}::{_escape_data(printable(message, newlines=True))}"


def annotation_commands(
    session: Mapping[str, Any], locations: Mapping[str, tuple[str, int | None]]
) -> list[str]:
    """The annotations of a session: ``::error`` per load-bearing gate failure,
    ``::warning`` per advisory breach (at most :data:`ANNOTATIONS_PER_KIND` each).

    ``locations`` maps a test id to its file (relative to the repository root) and
    1-based line; a breach of a test not found there has no file.  Failed corpus
    gates, which belong to no test, are annotated without a file.
    """
    found: dict[str, list[str]] = {"error": [], "warning": []}
    for metric in session.get("metrics") or ():
        for breach in metric.get("breaches") or ():
            kind = "error" if breach.get("enforced") else "warning"
            title = "pytest-ldd: gate failed" if kind == "error" else "pytest-ldd: advisory breach"
            file, line = locations.get(str(breach.get("nodeid")), (None, None))
            found[kind].append(
                workflow_command(
                    kind, breach_text(metric, breach), file=file, line=line, title=title
                )
            )
    for gate in (session.get("corpus") or {}).get("gates") or ():
        if gate.get("breached"):
            kind = "error" if gate.get("enforced") else "warning"
            what = (
                f"{gate.get('name')} = {_corpus_value(gate.get('value'))}, "
                f"limit {gate.get('op')} {fmt_value(gate.get('limit'))}"
            )
            title = (
                "pytest-ldd: corpus gate failed"
                if kind == "error"
                else ("pytest-ldd: corpus advisory breach")
            )
            found[kind].append(workflow_command(kind, what, title=title))
    lines: list[str] = []
    for kind, commands in found.items():
        lines += commands[:ANNOTATIONS_PER_KIND]
        if len(commands) > ANNOTATIONS_PER_KIND:
            rest = len(commands) - ANNOTATIONS_PER_KIND
            lines.append(
                workflow_command(
                    "notice",
                    f"{rest} more {kind}s of pytest-ldd: the job summary and the report list all",
                    title="pytest-ldd",
                )
            )
    return lines


def _counted(number: object, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


def _corpus_value(value: object) -> str:
    # A corpus figure of null is infinite (cost-of-pass with no success).
    return "inf" if value is None else fmt_value(value)
