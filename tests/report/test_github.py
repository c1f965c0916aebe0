"""The job summary's Markdown and the workflow commands, rendered and parsed back.

The Markdown is rendered by markdown-it-py (GFM tables) and each cell read back: a
name, unit or test id with ``|``, a backtick, ``<``, ``*`` or a newline must show as
itself, in its own cell.  Workflow commands are parsed back as GitHub's runner does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from github_support import parse_command, render
from hypothesis import given
from hypothesis import strategies as st

from pytest_ldd.report.github import (
    ANNOTATIONS_PER_KIND,
    SUMMARY_BREACH_ROWS,
    annotation_commands,
    job_summary,
    markdown_text,
    workflow_command,
)
from pytest_ldd.report.terminal import printable

NASTY = "a|b`c`*d*_e_ <b>x</b> &amp; $y$ ~~z~~ [l](u) \\| \\"


def metric(
    name: str, *, unit: str = "ms", breaches: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "name": name,
        "kind": "positive",
        "unit": unit,
        "version": 1,
        "state_before": "insufficient_data",
        "state_after": "load_bearing",
        "n": 5,
        "mae": 0.0125,
        "gates": ["le 500"],
        "observations": 2,
        "pairs": 1,
        "breaches": breaches or [],
    }


def session(*metrics: dict[str, Any], **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "recording": True,
        "interrupted": False,
        "ldd_dir": "/work/project/.ldd",
        "counts": {
            "tests": 3,
            "observations": 4,
            "pairs": 2,
            "gate_failures": 1,
            "advisory_breaches": 1,
        },
        "metrics": list(metrics),
        "state_changes": [],
        "corpus": {},
    }
    doc.update(extra)
    return doc


def test_the_summary_renders_its_tables_lists_and_report_paths() -> None:
    doc = session(
        metric(
            "latency_p99",
            breaches=[
                {
                    "nodeid": "tests/test_api.py::test_latency",
                    "value": 512.0,
                    "limit": "le 500",
                    "enforced": True,
                },
            ],
        ),
        metric(
            "judge_score",
            unit="",
            breaches=[
                {
                    "nodeid": "tests/test_judge.py::test_a",
                    "value": None,
                    "limit": "assertion",
                    "enforced": False,
                    "message": "judge score 0.82 below 0.9",
                },
            ],
        ),
        state_changes=[
            {"name": "latency_p99", "before": "insufficient_data", "after": "load_bearing"}
        ],
    )
    page = render(job_summary(doc, reports=[("HTML report", "out/ldd.html")]))
    assert page.headings == [
        "pytest-ldd",
        "State changes",
        "Gate failures and breaches",
        "Records and reports",
    ]
    metrics_table, breaches_table = page.tables
    assert metrics_table[0] == [
        "metric",
        "kind",
        "v",
        "state",
        "n",
        "MAE",
        "gate",
        "+obs",
        "+pairs",
        "breaches",
    ]
    assert metrics_table[1] == [
        "latency_p99",
        "positive",
        "1",
        "insufficient_data -> load_bearing",
        "5",
        "0.013",
        "le 500",
        "2",
        "1",
        "1",
    ]
    assert [row[0] for row in metrics_table[1:]] == ["latency_p99", "judge_score"]
    assert breaches_table == [
        ["outcome", "test", "metric", "value", "bound"],
        ["gate failed", "tests/test_api.py::test_latency", "latency_p99", "512 ms", "le 500"],
        [
            "advisory breach",
            "tests/test_judge.py::test_a",
            "judge_score",
            "judge score 0.82 below 0.9",
            "assertion",
        ],
    ]
    assert page.items == [
        "latency_p99: insufficient_data -> load_bearing",
        "Store: /work/project/.ldd",
        "HTML report: out/ldd.html",
    ]
    assert "3 tests, 4 observations, 2 pairs, 1 gate failure, 1 advisory breach." in page.html
    assert "Not recording" not in page.html


def test_every_cell_shows_its_text_whatever_it_holds() -> None:
    name = NASTY + "\nnext line\x1b[31m"
    doc = session(
        metric(
            name,
            unit="m|s`",
            breaches=[
                {
                    "nodeid": "t.py::test[" + NASTY + "]",
                    "value": 7,
                    "limit": "le 5",
                    "enforced": False,
                }
            ],
        ),
        state_changes=[{"name": name, "before": "a|b", "after": "c`d"}],
        recording=False,
    )
    page = render(job_summary(doc, reports=[("JSON report", "a|b`.json")]))
    assert page.other_tags == []  # no <b>, <a>, <code>, <em>, <del>: nothing was markup
    shown = printable(name)
    assert "\n" not in shown
    assert "\\n" in shown
    metrics_table, breaches_table = page.tables
    assert len(metrics_table[1]) == 10
    assert metrics_table[1][0] == shown
    assert breaches_table[1] == [
        "advisory breach",
        "t.py::test[" + NASTY + "]",
        shown,
        "7 m|s`",
        "le 5",
    ]
    assert page.items[0] == f"{shown}: a|b -> c`d"
    assert page.items[-1] == "JSON report: a|b`.json"
    assert "Not recording (run with --ldd to log calibration pairs)." in page.html


@given(st.text(max_size=40))
def test_any_text_renders_as_itself_in_a_cell(text: str) -> None:
    doc = session(metric(text))
    page = render(job_summary(doc))
    # A cell's leading and trailing blanks are not content in GFM.
    assert page.tables[0][1][0] == printable(text).strip()
    assert len(page.tables[0][1]) == 10


@given(st.text(max_size=40))
def test_any_text_renders_as_itself_in_a_list_item(text: str) -> None:
    doc = session(state_changes=[{"name": text, "before": "a", "after": "b"}])
    page = render(job_summary(doc))
    assert page.items[0] == printable(f"{text}: a -> b").strip()


def test_markdown_text_escapes_what_markdown_reads() -> None:
    assert markdown_text("a|b") == "a\\|b"
    assert markdown_text("`x`") == "\\`x\\`"
    assert markdown_text("a\nb") == "a\\\\nb"  # shown as \n, not a line break
    assert markdown_text("plain-name_1.0") == "plain-name\\_1.0"
    # What would start a block at the start of a list item's line.
    assert markdown_text("# x") == "\\# x"
    assert markdown_text("- x") == "\\- x"
    assert markdown_text("12. x") == "12\\. x"
    assert markdown_text("  ==  ") == "\\=="


def test_inconclusive_episodes_are_counted_when_there_are_some() -> None:
    counts = {"tests": 2, "observations": 0, "pairs": 0, "gate_failures": 0}
    page = render(job_summary(session(counts={**counts, "inconclusive": 2})))
    assert "2 tests, 0 observations, 0 pairs, 0 gate failures, 0 advisory breaches, " in page.html
    assert "2 inconclusive." in page.html
    assert "inconclusive" not in render(job_summary(session(counts=counts))).html


def test_a_session_without_metrics_says_so() -> None:
    doc = session(counts={})
    page = render(job_summary(doc))
    assert page.tables == []
    assert "No metric was observed." in page.html


def test_breaches_past_the_limit_are_counted() -> None:
    many = [
        {"nodeid": f"t.py::test_{i}", "value": 600 + i, "limit": "le 500", "enforced": True}
        for i in range(SUMMARY_BREACH_ROWS + 7)
    ]
    page = render(job_summary(session(metric("latency", breaches=many))))
    assert len(page.tables[1]) == 1 + SUMMARY_BREACH_ROWS
    assert "... and 7 more (the JSON report lists all)." in page.html


def test_corpus_lines_are_listed() -> None:
    corpus = {
        "task_success": {"n": 4, "successes": 3, "success_rate": 0.75, "interval": [0.3, 0.95]},
        "gates": [
            {
                "name": "task_success",
                "op": "ge",
                "limit": 0.9,
                "value": 0.75,
                "state": "load_bearing",
                "enforced": True,
                "breached": True,
            },
        ],
    }
    page = render(job_summary(session(corpus=corpus)))
    assert page.headings[-2:] == ["Corpus", "Records and reports"]
    assert page.items[0] == "task_success: 3/4 = 0.750 (95% CI 0.300-0.950)"
    assert page.items[1] == "corpus gate failed: task_success = 0.75, limit ge 0.9 (load-bearing)"


# -- workflow commands -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "file"),
    [
        ("plain", "tests/test_a.py"),
        ("100% of it, a: b\nsecond line\n", "dir,with:odd%chars/t.py"),
        ("%0A is not a newline; %25 not a percent", "a%2Cb.py"),
        ("::error::forged", "x.py"),
    ],
)
def test_workflow_commands_read_back_as_written(message: str, file: str) -> None:
    line = workflow_command("error", message, file=file, line=12, title="t: a, b")
    name, props, text = parse_command(line)
    assert name == "error"
    assert props == {"file": file, "line": "12", "title": "t: a, b"}
    assert text == message


def test_workflow_command_escapes_exactly_as_the_spec_says() -> None:
    line = workflow_command("warning", "50% done\nnext", file="a,b:c.py", line=None)
    assert line == "::warning file=a%2Cb%3Ac.py::50%25 done%0Anext"
    assert workflow_command("notice", "x") == "::notice::x"
    # Terminal escapes are shown, never sent to the log's terminal.
    assert workflow_command("error", "\x1b[31mred") == "::error::\\x1b[31mred"
    # A carriage return would move the log line's cursor: shown too.
    assert workflow_command("error", "a\r\nb") == "::error::a\\x0d%0Ab"


def breach(nodeid: str, enforced: bool, value: float = 512.0) -> dict[str, Any]:
    return {"nodeid": nodeid, "value": value, "limit": "le 500", "enforced": enforced}


def test_annotations_error_for_gate_failures_warning_for_advisory_breaches() -> None:
    doc = session(
        metric("latency", breaches=[breach("t.py::test_a", True)]),
        metric("other", breaches=[breach("sub/u.py::test_b[x]", False), breach("gone::t", False)]),
    )
    locations = {"t.py::test_a": ("pkg/t.py", 7), "sub/u.py::test_b[x]": ("pkg/sub/u.py", 3)}
    commands = [parse_command(line) for line in annotation_commands(doc, locations)]
    assert commands == [
        (
            "error",
            {"file": "pkg/t.py", "line": "7", "title": "pytest-ldd: gate failed"},
            "latency = 512 ms, limit le 500 (t.py::test_a)",
        ),
        (
            "warning",
            {"file": "pkg/sub/u.py", "line": "3", "title": "pytest-ldd: advisory breach"},
            "other = 512 ms, limit le 500 (sub/u.py::test_b[x])",
        ),
        # A test whose location is unknown: the annotation has no file.
        (
            "warning",
            {"title": "pytest-ldd: advisory breach"},
            "other = 512 ms, limit le 500 (gone::t)",
        ),
    ]


def test_annotations_of_corpus_gates_and_the_cap() -> None:
    many = [breach(f"t.py::test_{i}", True) for i in range(ANNOTATIONS_PER_KIND + 3)]
    corpus = {
        "gates": [
            {
                "name": "cost",
                "op": "le",
                "limit": 1.0,
                "value": None,
                "state": "drifting",
                "enforced": False,
                "breached": True,
            },
            {
                "name": "ok",
                "op": "ge",
                "limit": 0.5,
                "value": 0.9,
                "state": "load_bearing",
                "enforced": True,
                "breached": False,
            },
        ]
    }
    commands = [
        parse_command(c)
        for c in annotation_commands(session(metric("m", breaches=many), corpus=corpus), {})
    ]
    kinds = [c[0] for c in commands]
    assert kinds == ["error"] * ANNOTATIONS_PER_KIND + ["notice", "warning"]
    assert commands[ANNOTATIONS_PER_KIND][2] == (
        "3 more errors of pytest-ldd: the job summary and the report list all"
    )
    assert commands[-1] == (
        "warning",
        {"title": "pytest-ldd: corpus advisory breach"},
        "cost = inf, limit le 1",
    )


def test_the_summary_page_is_drawn_in_chromium(tmp_path: Path) -> None:
    # The page tests/summary_image.py screenshots for docs/ci.md, from a summary.
    from browser import Browser, chromium
    from summary_image import last_section, summary_page

    chromium()
    doc = session(metric("latency_p99", breaches=[breach("t.py::test_a|b", True)]))
    markdown = "# An earlier step\n\n" + job_summary(doc)
    page = tmp_path / "summary.html"
    page.write_text(summary_page(last_section(markdown)), encoding="utf-8")
    profile = tmp_path / "profile"
    profile.mkdir()
    with Browser(profile) as browser:
        browser.open(page.as_uri(), width=1000, height=600)
        cells = browser.evaluate(
            "[...document.querySelectorAll('table')].map(t => [...t.rows].map("
            "r => [...r.cells].map(c => c.textContent)))"
        )
        heading = browser.evaluate("document.querySelector('h1, h2').textContent")
        shot = browser.screenshot(width=1000, height=600)
    assert heading == "pytest-ldd"  # the earlier step's part was left out
    assert cells[1] == [
        ["outcome", "test", "metric", "value", "bound"],
        ["gate failed", "t.py::test_a|b", "latency_p99", "512 ms", "le 500"],
    ]
    assert shot.startswith(b"\x89PNG")
