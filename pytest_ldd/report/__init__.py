"""Reports: one document rendered three ways (the terminal section, JSON, HTML).

- :mod:`~pytest_ldd.report.document`: the JSON document and the files it is written to;
- :mod:`~pytest_ldd.report.history`: what a report reads of the store's logs;
- :mod:`~pytest_ldd.report.text`: number formats, tables and the terminal section;
- :mod:`~pytest_ldd.report.html` and :mod:`~pytest_ldd.report.svg`: the page and its plots;
- :mod:`~pytest_ldd.report.terminal`: text made safe to write to a terminal.

The names below stay importable from ``pytest_ldd.report`` (its path before the
package existed); each is looked up on first use, so the ``ldd`` command pays only for
the module it needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_ldd.report.document import (
        HTML_LOG_BUDGET,
        REPORT_SCHEMA_VERSION,
        build_report,
        dumps,
        gate_json,
        render_html,
        state_json,
        write_html,
        write_json,
    )
    from pytest_ldd.report.text import (
        BREACH_LINES,
        Align,
        breach_text,
        corpus_lines,
        fmt_dollars,
        fmt_error,
        fmt_state,
        fmt_value,
        format_table,
        gate_text,
        render_terminal,
        session_name,
        session_table,
        status_table,
    )

__all__ = [
    "BREACH_LINES",
    "HTML_LOG_BUDGET",
    "REPORT_SCHEMA_VERSION",
    "Align",
    "breach_text",
    "build_report",
    "corpus_lines",
    "dumps",
    "fmt_dollars",
    "fmt_error",
    "fmt_state",
    "fmt_value",
    "format_table",
    "gate_json",
    "gate_text",
    "render_html",
    "render_terminal",
    "session_name",
    "session_table",
    "state_json",
    "status_table",
    "write_html",
    "write_json",
]

_DOCUMENT = frozenset(
    {
        "HTML_LOG_BUDGET",
        "REPORT_SCHEMA_VERSION",
        "build_report",
        "dumps",
        "gate_json",
        "render_html",
        "state_json",
        "write_html",
        "write_json",
    }
)


def __getattr__(name: str) -> Any:
    if name not in __all__:
        msg = f"module 'pytest_ldd.report' has no attribute {name!r}"
        raise AttributeError(msg)
    home = "pytest_ldd.report.document" if name in _DOCUMENT else "pytest_ldd.report.text"
    return getattr(importlib.import_module(home), name)


def __dir__() -> list[str]:
    return sorted(__all__)
