"""Tests of pytest_ldd.report, pytest_ldd.report.html and pytest_ldd.report.svg."""

from __future__ import annotations

import copy
import itertools
import json
import math
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from calibration_support import write_pair_lines

from pytest_ldd import Calibrator, MetricRegistry, TraceStore, bounded_rate, positive_count
from pytest_ldd.model.statistics import CalibrationGate
from pytest_ldd.report import (
    BREACH_LINES,
    build_report,
    dumps,
    format_table,
    render_html,
    render_terminal,
    write_html,
    write_json,
)
from pytest_ldd.report.html import (
    LATEST_SESSION_POINTS,
    MAE_POINTS,
    SCATTER_POINTS,
    TIMELINE_POINTS,
    promotion_index,
    running_mae,
    thin,
)
from pytest_ldd.report.svg import Axes, nice_ticks
from pytest_ldd.report.text import session_name

SESSION: dict[str, Any] = {
    "schema_version": 1,
    "session_id": "20261201T083000Z-3f2a9c",
    "started_at": "2026-12-01T08:30:00Z",
    "ended_at": "2026-12-01T08:30:04Z",
    "recording": True,
    "ldd_dir": "/abs/path/.ldd",
    "counts": {
        "tests": 12,
        "observations": 40,
        "pairs": 20,
        "gate_failures": 1,
        "advisory_breaches": 2,
    },
    "metrics": [
        {
            "name": "latency_p99",
            "kind": "positive",
            "unit": "ms",
            "version": 1,
            "state_before": "insufficient_data",
            "state_after": "load_bearing",
            "n": 5,
            "mae": 0.04,
            "window_mae": 0.04,
            "p95_error": 0.06,
            "worst_error": 0.07,
            "max_mae": 0.15,
            "min_n": 5,
            "gates": ["le 500"],
            "observations": 4,
            "pairs": 2,
            "breaches": [
                {
                    "nodeid": "tests/test_x.py::test_a",
                    "value": 512.0,
                    "limit": "le 500",
                    "enforced": False,
                }
            ],
        },
        {
            "name": "judge_score",
            "kind": "bounded",
            "unit": "rate",
            "version": 2,
            "state_before": "insufficient_data",
            "state_after": "insufficient_data",
            "n": 0,
            "mae": None,
            "window_mae": None,
            "p95_error": None,
            "worst_error": None,
            "max_mae": 0.15,
            "min_n": 5,
            "gates": [],
            "observations": 12,
            "pairs": 0,
            "breaches": [],
        },
    ],
    "state_changes": [
        {"name": "latency_p99", "before": "insufficient_data", "after": "load_bearing"}
    ],
    "corpus": {
        "task_success": {"n": 10, "successes": 7, "success_rate": 0.7, "interval": [0.397, 0.892]},
        "cost_per_success": {"total_dollars": 1.2, "pooled": 0.1714, "per_task": 0.18},
        "pass_hat_k": {"1": 0.7, "2": 0.5},
        "by_test": {
            "test_tasks": {
                "n": 10,
                "successes": 7,
                "success_rate": 0.7,
                "total_dollars": 1.2,
                "cost_per_success": 0.1714,
            }
        },
        "gates": [
            {
                "name": "task_success",
                "op": "ge",
                "limit": 0.8,
                "value": 0.7,
                "state": "drifting",
                "enforced": False,
                "breached": True,
            }
        ],
    },
}


def session(**changes: Any) -> dict[str, Any]:
    """A deep copy of SESSION with top-level keys replaced."""
    doc = copy.deepcopy(SESSION)
    doc.update(changes)
    return doc


# -- tables and the terminal section -----------------------------------------------------


def test_format_table_aligns_text_left_and_numbers_right() -> None:
    lines = format_table(
        ["name", "n", "note"],
        [["a", "5", "x"], ["longer", "12", ""]],
        ["<", ">", "<"],
    )
    assert lines == [
        "name     n  note",
        "a        5  x",
        "longer  12",
    ]


def test_format_table_indent_and_default_alignment() -> None:
    assert format_table(["a", "b"], [["xx", "y"]], indent="  ") == ["  a   b", "  xx  y"]


@pytest.mark.parametrize(
    ("rows", "align", "fragment"),
    [
        ([["only one"]], None, "each row must have 2 cells"),
        ([], ["<"], "'align' must have one entry per column (2)"),
    ],
)
def test_format_table_rejects_ragged_input(
    rows: list[list[str]], align: list[Any] | None, fragment: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(fragment)):
        format_table(["a", "b"], rows, align)


def test_terminal_section_of_the_schema_example() -> None:
    assert render_terminal(SESSION) == [
        "metric       kind      v  state                              n    MAE  gate    "
        "+obs  +pairs  breaches",
        "latency_p99  positive  1  insufficient_data -> load_bearing  5  0.040  le 500     "
        "4       2         1",
        "judge_score  bounded   2  insufficient_data                  0      -  -         "
        "12       0         0",
        "state changes:",
        "  latency_p99: insufficient_data -> load_bearing",
        "advisory breach: latency_p99 = 512 ms, limit le 500 (tests/test_x.py::test_a)",
        "task_success: 7/10 = 0.700 (95% CI 0.397-0.892)",
        "cost-of-pass: $0.1714 per successful task (per task: $0.1800); total $1.2000",
        "pass^k: k=1 0.700, k=2 0.500",
        "corpus advisory breach: task_success = 0.7, limit ge 0.8 (state drifting)",
    ]


def test_terminal_section_not_recording_verbose() -> None:
    lines = render_terminal(session(recording=False), verbose=True)
    assert lines[0] == "not recording (run with --ldd to log calibration pairs)"
    assert lines[1].split() == [
        "metric",
        "kind",
        "v",
        "state",
        "n",
        "MAE",
        "p95",
        "worst",
        "window",
        "gate",
        "+obs",
        "+pairs",
        "breaches",
    ]
    assert lines[2].split()[7:12] == ["0.040", "0.060", "0.070", "0.040", "le"]
    assert lines[-5:] == [
        "pass^k: k=1 0.700, k=2 0.500",
        "by test:",
        "  test        success   rate  dollars  cost-of-pass",
        "  test_tasks     7/10  0.700  $1.2000       $0.1714",
        "corpus advisory breach: task_success = 0.7, limit ge 0.8 (state drifting)",
    ]


def test_terminal_recording_session_has_no_not_recording_line() -> None:
    assert not any("not recording" in line for line in render_terminal(SESSION))


def test_terminal_empty_session() -> None:
    doc = {"recording": True, "metrics": [], "state_changes": [], "corpus": {}}
    assert render_terminal(doc) == ["no metrics observed"]
    doc["recording"] = False
    assert render_terminal(doc) == [
        "not recording (run with --ldd to log calibration pairs)",
        "no metrics observed",
    ]


def test_enforced_breach_and_assertion_breach_lines() -> None:
    doc = session()
    doc["metrics"][0]["breaches"] = [
        {"nodeid": "t.py::a", "value": 600, "limit": "le 500", "enforced": True},
        {"nodeid": "t.py::b", "value": None, "message": "assert 0.2 >= 0.5", "enforced": False},
    ]
    lines = render_terminal(doc)
    assert "gate failed: latency_p99 = 600 ms, limit le 500 (t.py::a)" in lines
    assert "advisory breach: latency_p99: assert 0.2 >= 0.5 (t.py::b)" in lines
    doc["metrics"][0]["breaches"] = [
        {"nodeid": "t.py::c", "value": None, "limit": "assertion", "enforced": False}
    ]
    assert "advisory breach: latency_p99: assertion failed in ldd.gate() (t.py::c)" in (
        render_terminal(doc)
    )
    # Failures come before advisory breaches.
    assert lines.index("gate failed: latency_p99 = 600 ms, limit le 500 (t.py::a)") < lines.index(
        "advisory breach: latency_p99: assert 0.2 >= 0.5 (t.py::b)"
    )


def test_many_breaches_are_summarised_unless_verbose() -> None:
    doc = session()
    doc["metrics"][0]["breaches"] = [
        {"nodeid": f"t.py::t{i}", "value": 501 + i, "limit": "le 500", "enforced": False}
        for i in range(BREACH_LINES + 3)
    ]
    short = [line for line in render_terminal(doc) if line.startswith("advisory breach")]
    assert len(short) == BREACH_LINES
    assert "... and 3 more (run with -v to list all)" in render_terminal(doc)
    full = [
        line for line in render_terminal(doc, verbose=True) if line.startswith("advisory breach")
    ]
    assert len(full) == BREACH_LINES + 3


def test_corpus_without_success_and_gate_outcomes() -> None:
    corpus = {
        "task_success": {"n": 4, "successes": 0, "success_rate": 0.0, "interval": [0.0, 0.49]},
        "cost_per_success": {"total_dollars": 0.5, "pooled": None, "per_task": None},
        "gates": [
            {
                "name": "task_success",
                "op": "ge",
                "limit": 0.8,
                "value": 0.0,
                "state": "load_bearing",
                "enforced": True,
                "breached": True,
            },
            {
                "name": "cost_per_success",
                "op": "le",
                "limit": 2,
                "value": None,
                "state": "insufficient_data",
                "enforced": False,
                "breached": True,
            },
            {
                "name": "other",
                "op": "le",
                "limit": 2,
                "value": 1.5,
                "state": "load_bearing",
                "enforced": True,
                "breached": False,
            },
        ],
    }
    lines = render_terminal(session(metrics=[], state_changes=[], corpus=corpus))
    assert lines == [
        "no metrics observed",
        "task_success: 0/4 = 0.000 (95% CI 0.000-0.490)",
        "cost-of-pass: infinite (no successful task) (per task: infinite); total $0.5000",
        "corpus gate failed: task_success = 0, limit ge 0.8 (load-bearing)",
        "corpus advisory breach: cost_per_success = inf, limit le 2 (state insufficient_data)",
        "corpus gate passed: other = 1.5, limit le 2 (state load_bearing)",
    ]


# -- HTML ----------------------------------------------------------------------------------


class PageParser(HTMLParser):
    """Collects the SVG plots of a page: class, title, data points and timeline parts."""

    def __init__(self) -> None:
        super().__init__()
        self.svgs: list[dict[str, Any]] = []
        self.in_title: str | None = None
        self.tags: list[str] = []
        self.text: list[str] = []
        self.rows: list[list[str]] = []
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._pending: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        attributes = dict(attrs)
        classes = (attributes.get("class") or "").split()
        if tag == "svg":
            self.svgs.append(
                {
                    "classes": classes,
                    "attrs": attributes,
                    "title": None,
                    "points": 0,
                    "predicted": 0,
                    "breaches": 0,
                    "tips": [],
                    "bounds": [],
                    "bands": [],
                    "marks": [],
                }
            )
            self._pending = "svg"
        elif self.svgs and "ldd-point" in classes:
            plot = self.svgs[-1]
            plot["points"] += 1
            plot["predicted"] += "ldd-predicted" in classes
            plot["breaches"] += "ldd-breach" in classes
            self._pending = "point"
            plot["tips"].append("")
        elif self.svgs and "ldd-bound" in classes:
            self.svgs[-1]["bounds"].append(attributes)
        elif self.svgs and "ldd-band" in classes:
            self.svgs[-1]["bands"].append(classes[-1])
        elif self.svgs and ("ldd-promotion" in classes or "ldd-demotion" in classes):
            self.svgs[-1]["marks"].append((classes[0], attributes))
        elif tag == "table":
            self._table = " ".join(classes)
        elif tag == "tr" and self._table == "ldd-breaches":
            self.rows.append([])
        elif tag == "td" and self._table == "ldd-breaches":
            self._cell = []
        if tag == "title":
            self.in_title, self._pending = self._pending or "other", None

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = None
        elif tag == "td" and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)
        if self.in_title == "svg" and self.svgs[-1]["title"] is None:
            self.svgs[-1]["title"] = data
        elif self.in_title == "point":
            self.svgs[-1]["tips"][-1] += data

    def of(self, css_class: str) -> list[dict[str, Any]]:
        return [s for s in self.svgs if css_class in s["classes"]]

    @property
    def breach_rows(self) -> list[list[str]]:
        """The body rows of the breaches table (the header row has no cells)."""
        return [row for row in self.rows if row]


def parse(page: str) -> PageParser:
    parser = PageParser()
    parser.feed(page)
    parser.close()
    return parser


def pair(predicted: float, observed: float, stamp: str, sid: str | None) -> dict[str, Any]:
    return {
        "predicted": predicted,
        "observed": observed,
        "raw_predicted": predicted,
        "raw_observed": observed,
        "timestamp": stamp,
        "session_id": sid,
        "nodeid": None,
    }


GATE = {"min_n": 5, "max_mae": 0.15, "max_p95": None, "max_worst": None, "window": 10}


def metric_entry(name: str, n: int, description: str = "Time to answer.") -> dict[str, Any]:
    return {
        "name": name,
        "version": 1,
        "state": "load_bearing" if n >= 5 else "insufficient_data",
        "is_load_bearing": n >= 5,
        "n": n,
        "mae": 0.05 if n else None,
        "window_mae": 0.05 if n else None,
        "p95_error": 0.1 if n else None,
        "worst_error": 0.1 if n else None,
        "promoted_at": None,
        "demoted_at": None,
        "gate": dict(GATE),
        "spec": {
            "name": name,
            "kind": "bounded",
            "unit": "rate",
            "description": description,
            "version": 1,
            "advisory_only": True,
            "normalize_scale": 1.0,
            "composition": None,
            "components": None,
        },
    }


def observation(raw: float, stamp: str, sid: str | None, nodeid: str | None) -> dict[str, Any]:
    return {
        "raw": raw,
        "normalized": raw,
        "timestamp": stamp,
        "session_id": sid,
        "nodeid": nodeid,
    }


def accuracy_row(before: str, after: str, breaches: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": "accuracy",
        "unit": "rate",
        "state_before": before,
        "state_after": after,
        "gates": ["ge 0.45"],
        "breaches": breaches,
    }


def hand_doc() -> dict[str, Any]:
    """Three sessions; ``accuracy`` is promoted at the end of s1 and gated ``ge 0.45``.

    Its pairs: four in s1 (tests t.py::a and t.py::b), three outside pytest; its
    observations: those seven, and one without a prediction in s2.
    """
    pairs_a = [pair(0.5, 0.5 + 0.01 * i, f"2026-12-01T08:00:0{i}Z", "s1") for i in range(4)]
    for i, p in enumerate(pairs_a):
        p["nodeid"] = "t.py::a" if i % 2 == 0 else "t.py::b"
    pairs_a += [pair(0.3, 0.32, "2026-12-02T08:00:00Z", None) for _ in range(3)]
    observations_a = [
        observation(p["raw_observed"], p["timestamp"], p["session_id"], p["nodeid"])
        for p in pairs_a
    ]
    observations_a.append(observation(0.4, "2026-12-03T08:00:01Z", "s2", "t.py::a"))
    sessions = [
        {
            "number": 1,
            "session_id": "s1",
            "started_at": "2026-12-01T08:00:00Z",
            "ended_at": "2026-12-01T08:00:09Z",
            "commit": "1a2b3c4",
            "counts": {"tests": 2, "observations": 4, "pairs": 4},
            "corpus": {
                "task_success": {
                    "n": 10,
                    "successes": 7,
                    "success_rate": 0.7,
                    "interval": [0.397, 0.892],
                },
                "cost_per_success": {"total_dollars": 1.2, "pooled": 0.1714, "per_task": 0.18},
            },
            "state_changes": [
                {"name": "accuracy", "before": "insufficient_data", "after": "load_bearing"}
            ],
            "metrics": [accuracy_row("insufficient_data", "load_bearing", [])],
        },
        {
            "number": 2,
            "session_id": "s2",
            "started_at": "2026-12-03T08:00:00Z",
            "ended_at": "2026-12-03T08:00:02Z",
            "commit": "5d6e7f8+dirty",
            "counts": {},
            "corpus": {
                "task_success": {
                    "n": 2,
                    "successes": 0,
                    "success_rate": 0.0,
                    "interval": [0.0, 0.658],
                },
                "cost_per_success": {"total_dollars": 0.2, "pooled": None, "per_task": None},
            },
            "metrics": [
                accuracy_row(
                    "load_bearing",
                    "load_bearing",
                    [{"nodeid": "t.py::a", "value": 0.4, "limit": "ge 0.45", "enforced": True}],
                )
            ],
        },
        {
            "number": 3,
            "session_id": "s3",
            "started_at": "2026-12-04T08:00:00Z",
            "ended_at": "y",
            "counts": {},
            "corpus": {},
        },
    ]
    return {
        "schema_version": 1,
        "generated_at": "2026-12-03T00:00:00Z",
        "ldd_dir": "/p/.ldd",
        "session": session(),
        "metrics": [
            metric_entry("accuracy", 7, "Share of <b>correct</b> answers & more"),
            metric_entry("fresh", 0),
        ],
        "history": {
            "calibrations": {"accuracy": pairs_a, "fresh": []},
            "observations": {"accuracy": observations_a, "fresh": []},
            "sessions": sessions,
            "sampling": None,
        },
    }


def test_html_has_a_timeline_and_one_plot_pair_per_metric_and_a_point_per_pair() -> None:
    page = parse(render_html(hand_doc()))
    timeline = page.of("ldd-timeline")
    calibration = page.of("ldd-calibration")
    mae = page.of("ldd-mae")
    corpus = page.of("ldd-corpus")
    assert len(page.svgs) == 2 + 2 + 2 + 2
    assert [t["title"].split(":")[0] for t in timeline] == ["accuracy", "fresh"]
    # Eight observations, seven of them with a prediction (a diamond each).
    assert [t["points"] - t["predicted"] for t in timeline] == [8, 0]
    assert [t["predicted"] for t in timeline] == [7, 0]
    assert [s["points"] for s in calibration] == [7, 0]
    assert [s["points"] for s in mae] == [7, 0]
    # task_success in two sessions; cost_per_success only where it is finite.
    assert [s["points"] for s in corpus] == [2, 1]
    assert all(s["title"] for s in page.svgs)
    assert calibration[0]["title"].startswith("accuracy: predicted vs observed")
    assert "no observations yet" in "".join(page.text)
    assert "script" not in page.tags


def bound_row(plot: dict[str, Any], limit: float) -> float:
    """Where ``limit`` belongs on the y axis of a timeline, from the svg's own scale."""
    attrs = plot["attrs"]
    low, high = float(attrs["data-value-min"]), float(attrs["data-value-max"])
    bottom, top = float(attrs["data-row-min"]), float(attrs["data-row-max"])
    return bottom + (limit - low) / (high - low) * (top - bottom)


def test_timeline_draws_the_gate_bound_at_its_value() -> None:
    (accuracy, fresh) = parse(render_html(hand_doc())).of("ldd-timeline")
    assert [(b["data-op"], float(b["data-limit"])) for b in accuracy["bounds"]] == [("ge", 0.45)]
    (bound,) = accuracy["bounds"]
    assert float(bound["y1"]) == float(bound["y2"])
    assert float(bound["y1"]) == pytest.approx(bound_row(accuracy, 0.45), abs=0.06)
    assert float(accuracy["attrs"]["data-value-min"]) <= 0.45
    # The values below the bound (0.32 x 3 outside pytest, 0.4 in s2) are breaches.
    assert accuracy["breaches"] == 4
    assert fresh["bounds"] == []


def test_timeline_leaves_out_a_bound_the_gates_would_refuse() -> None:
    doc = hand_doc()
    latest = [s for s in doc["history"]["sessions"] if s.get("metrics")][-1]
    latest["metrics"][0]["gates"] = ["ge 0.45", "between 1", "le nan", "le", "lt inf"]
    latest["corpus"]["gates"] = [
        {"name": "accuracy", "op": "le", "limit": 0.9},
        {"name": "accuracy", "op": "around", "limit": 0.5},
        {"name": "accuracy", "op": "ge", "limit": True},
        {"name": "accuracy", "op": "ge", "limit": "0.2"},
    ]
    (accuracy, _) = parse(render_html(doc)).of("ldd-timeline")
    drawn = [(b["data-op"], float(b["data-limit"])) for b in accuracy["bounds"]]
    assert drawn == [("ge", 0.45), ("le", 0.9)]


def test_timeline_points_carry_predicted_observed_error_test_and_session() -> None:
    (accuracy, _) = parse(render_html(hand_doc())).of("ldd-timeline")
    tips = accuracy["tips"]
    assert len(tips) == accuracy["points"]
    assert all(tip for tip in tips)
    paired = [t for t in tips if "predicted" in t]
    assert len(paired) == 2 * 7  # the observation and its diamond
    first = paired[0]
    assert "Session 1 · 2026-12-01 08:00 UTC · 1a2b3c4" in first
    assert "t.py::a" in first
    assert "observed 0.5 rate" in first
    assert "predicted 0.5 rate" in first
    assert "error 0.000 (normalized)" in first
    lone = [t for t in tips if "no prediction" in t]
    assert len(lone) == 1
    assert "Session 2 · 2026-12-03 08:00 UTC · 5d6e7f8+dirty" in lone[0]
    assert "observed 0.4 rate" in lone[0]
    assert any("outside pytest 2026-12-02" in t for t in tips)


def test_timeline_shades_states_and_marks_the_promotion() -> None:
    (accuracy, fresh) = parse(render_html(hand_doc())).of("ldd-timeline")
    # Slots: s1 (advisory at its start), outside pytest (2026-12-02), s2 (load-bearing).
    assert accuracy["bands"] == ["ldd-band-advisory", "ldd-band-load-bearing"]
    (mark,) = accuracy["marks"]
    assert mark[0] == "ldd-promotion"
    assert fresh["marks"] == []
    assert fresh["bands"] == []


def test_timeline_slots_are_sessions_in_time_order() -> None:
    doc = hand_doc()
    page = render_html(doc)
    timeline = page[page.index('class="ldd-plot ldd-timeline"') :]
    timeline = timeline[: timeline.index("</svg>")]
    # x labels: session 1, the day outside pytest ("cli"), session 2.
    labels = [part.split("<")[0] for part in timeline.split('font-size="11" fill="#333333">')[1:]]
    assert [label for label in labels if label in ("1", "2", "3", "cli", "?")][-3:] == [
        "1",
        "cli",
        "2",
    ]


def test_html_lists_the_latest_sessions_breaches() -> None:
    page = parse(render_html(hand_doc()))
    rows = page.breach_rows
    assert [
        "advisory breach",
        "latency_p99",
        "512 ms",
        "le 500",
        "tests/test_x.py::test_a",
        "insufficient_data",
    ] in rows
    assert [
        "advisory breach",
        "task_success",
        "0.7",
        "ge 0.8",
        "(session aggregate)",
        "drifting",
    ] in rows
    # Without a session of its own the report shows the last recorded one's.
    doc = hand_doc()
    doc["session"] = None
    doc["history"]["sessions"] = doc["history"]["sessions"][:2]
    rows = parse(render_html(doc)).breach_rows
    assert rows == [["gate failed", "accuracy", "0.4 rate", "ge 0.45", "t.py::a", "load_bearing"]]


def test_html_escapes_document_text() -> None:
    doc = hand_doc()
    doc["metrics"][0]["spec"]["description"] = "<script>alert(1)</script> & co"
    doc["session"]["metrics"][0]["breaches"][0]["nodeid"] = "t.py::test[<img>]"
    doc["history"]["observations"]["accuracy"][0]["nodeid"] = "t.py::x[<b>&]"
    doc["history"]["sessions"][0]["commit"] = "<i>abc"
    page = render_html(doc)
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; co" in page
    assert "t.py::test[&lt;img&gt;]" in page
    assert "t.py::x[&lt;b&gt;&amp;]" in page
    assert "&lt;i&gt;abc" in page
    assert "<i>" not in page
    assert "<b>" not in page
    assert "script" not in parse(page).tags


def test_html_is_self_contained() -> None:
    page = render_html(hand_doc())
    assert page.startswith("<!DOCTYPE html>")
    for forbidden in ("<script", "<link", "src=", "@import", "url("):
        assert forbidden not in page
    # The only URL is the SVG namespace, which browsers never fetch.
    assert page.count("http") == page.count('xmlns="http://www.w3.org/2000/svg"')


def test_html_has_dark_mode_print_and_a_responsive_layout() -> None:
    page = render_html(hand_doc())
    assert "@media (prefers-color-scheme: dark)" in page
    assert "@media print" in page
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    assert "max-width: 100%" in page


def test_html_without_session_or_corpus() -> None:
    doc = hand_doc()
    doc["session"] = None
    doc["history"]["sessions"] = []
    page = parse(render_html(doc))
    assert len(page.svgs) == 6
    text = "".join(page.text)
    assert "no graded episodes yet" in text
    assert "no session recorded yet" in text
    assert not page.of("ldd-corpus")


def test_html_session_tables_and_names() -> None:
    page = render_html(hand_doc())
    text = "".join(parse(page).text)
    assert "This run: Session 20261201T083000Z-3f2a9c" not in text
    assert "Unrecorded session · 20261201T083000Z-3f2a9c" in text
    assert "advisory breach" in text
    assert "task_success: 7/10 = 0.700 (95% CI 0.397-0.892)" in text
    # The sessions table: newest first, with date and commit.
    assert "Session 3" in text
    assert "2026-12-01 08:00 UTC" in text
    assert "5d6e7f8+dirty" in text
    assert "latest session" in text


def test_html_marks_the_promotion_point() -> None:
    page = render_html(hand_doc())
    mae = page[page.index('class="ldd-plot ldd-mae"') :]
    mae = mae[: mae.index("</svg>")]
    assert mae.count('class="ldd-promotion"') == 1
    assert "promoted at pair 4" in mae


def test_session_name() -> None:
    item = {"started_at": "2026-12-01T19:46:42Z", "commit": "1a2b3c4+dirty"}
    assert session_name(7, item) == "Session 7 · 2026-12-01 19:46 UTC · 1a2b3c4+dirty"
    assert session_name(2, {"started_at": "2026-12-01T19:46:42Z"}) == (
        "Session 2 · 2026-12-01 19:46 UTC"
    )
    assert session_name(None, {"session_id": "abc"}) == "Unrecorded session · abc"


def test_thin_keeps_the_recent_points_and_an_even_sample() -> None:
    items = list(range(1000))
    assert thin(items, 2000) == items
    chosen = thin(items, 30)
    assert len(chosen) == 30
    assert chosen == sorted(chosen)
    assert chosen[-10:] == list(range(990, 1000))
    assert chosen[0] == 0
    older = chosen[:20]
    gaps = {b - a for a, b in itertools.pairwise(older)}
    assert max(gaps) - min(gaps) <= 1
    assert thin(items, 30) == chosen  # deterministic
    assert thin(items, 0) == []
    assert thin(items, 5, recent=5) == [995, 996, 997, 998, 999]


def test_dense_plots_are_thinned_and_say_so() -> None:
    doc = hand_doc()
    many = [pair(0.5, 0.5, f"2026-12-01T08:00:{i % 60:02d}Z", "s1") for i in range(5000)]
    doc["history"]["calibrations"]["accuracy"] = many
    doc["history"]["observations"]["accuracy"] = [
        observation(0.5, p["timestamp"], "s1", None) for p in many
    ]
    text = render_html(doc)
    page = parse(text)
    (timeline, _) = page.of("ldd-timeline")
    assert timeline["points"] - timeline["predicted"] == TIMELINE_POINTS
    assert page.of("ldd-calibration")[0]["points"] == SCATTER_POINTS
    assert page.of("ldd-mae")[0]["points"] == MAE_POINTS
    assert "Showing 300 of 5,000 observations" in text
    assert "Showing 250 of 5,000 pairs" in text
    assert len(text.encode()) < 600_000


def test_running_mae_and_promotion_index() -> None:
    pairs = [
        pair(0.5, 0.5 + e, f"2026-01-01T00:00:0{i}Z", None)
        for i, e in enumerate([0.3] + [0.1] * 8)
    ]
    values = running_mae(pairs)
    assert values[0] == pytest.approx(0.3)
    assert values[4] == pytest.approx((0.3 + 0.4) / 5)
    # At n=5 MAE is 0.14 <= 0.15: the gate is first met at the fifth pair.
    assert promotion_index(pairs, GATE) == (5, "gate first met")
    strict = dict(GATE, max_mae=0.12)
    # MAE after k pairs is (0.3 + 0.1 (k-1)) / k <= 0.12 first at k = 10: not reached.
    assert promotion_index(pairs, strict) == (None, "")
    assert promotion_index(pairs, GATE, "2026-01-01T00:00:06Z") == (7, "promoted")


def test_exact_band_edge_counts_as_gate_met() -> None:
    # Five errors of exactly 0.15 pass, as in the calibration gate.
    pairs = [pair(0.5, 0.65, "t", None) for _ in range(5)]
    assert promotion_index(pairs, GATE) == (5, "gate first met")


# -- SVG helpers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("low", "high", "integer", "expected"),
    [
        (0.0, 1.0, False, [0.0, 0.25, 0.5, 0.75, 1.0]),
        (0.0, 0.2, False, [0.0, 0.05, 0.1, 0.15, 0.2]),
        (1.0, 3.0, True, [1.0, 2.0, 3.0]),
        (1.0, 40.0, True, [10.0, 20.0, 30.0, 40.0]),
        (2.0, 2.0, False, [2.0]),
    ],
)
def test_nice_ticks(low: float, high: float, integer: bool, expected: list[float]) -> None:
    assert nice_ticks(low, high, 5, integer=integer) == expected


def test_axes_map_corners_and_reject_empty_ranges() -> None:
    axes = Axes(0.0, 1.0, 0.0, 1.0, width=100, height=100, left=10, right=10, top=10, bottom=10)
    assert (axes.x(0.0), axes.y(0.0)) == (10.0, 90.0)
    assert (axes.x(1.0), axes.y(1.0)) == (90.0, 10.0)
    with pytest.raises(ValueError, match=re.escape("'x_max' must be > x_min=1.0")):
        Axes(1.0, 1.0, 0.0, 1.0)


# -- writers ---------------------------------------------------------------------------------


def test_write_json_replaces_non_finite_numbers_and_leaves_no_temp(tmp_path: Path) -> None:
    doc = {"a": math.inf, "b": [1.0, math.nan], "c": {"d": 2}}
    target = write_json(tmp_path / "out" / "report.json", doc)
    assert json.loads(target.read_text()) == {"a": None, "b": [1.0, None], "c": {"d": 2}}
    assert [p.name for p in target.parent.iterdir()] == ["report.json"]
    assert dumps(doc) == target.read_text()


def test_write_html_overwrites(tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    target.write_text("old")
    write_html(target, hand_doc())
    assert target.read_text().startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


# -- build_report with a real registry ---------------------------------------------------------


def accuracy(version: int = 1) -> Any:
    return bounded_rate(
        "accuracy", description="Share of answers matching the reference.", version=version
    )


def latency() -> Any:
    return positive_count(
        "latency_ms", description="Time to first byte.", unit="ms", normalize_scale=1000.0
    )


def stored_session(sid: str, rate: float) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "session_id": sid,
        "started_at": "2026-12-01T08:00:00Z",
        "ended_at": "2026-12-01T08:00:09Z",
        "recording": True,
        "counts": {"tests": 1},
        "metrics": [],
        "state_changes": [],
        "corpus": {
            "task_success": {"n": 10, "successes": 7, "success_rate": rate, "interval": [0.4, 0.9]}
        },
    }


def test_build_report_document(tmp_path: Path) -> None:
    store = TraceStore(tmp_path)
    registry = MetricRegistry(store, gates={"latency_ms": CalibrationGate(min_n=3)})
    registry.register(accuracy())
    registry.register(latency())
    calibrator = Calibrator(registry)
    for observed in (0.5, 0.6, 0.7):
        calibrator.log("accuracy", 0.6, observed, session_id="s1", nodeid="t.py::a")
    calibrator.log("latency_ms", 100, 120)
    calibrator.update()
    store.append_sessions([stored_session("s1", 0.7)])

    doc = build_report(
        registry,
        session=session(session_id="s3"),
        sessions=[stored_session("s1", 0.7), stored_session("s2", 0.5)],
    )
    assert list(doc) == [
        "schema_version",
        "generated_at",
        "ldd_dir",
        "session",
        "metrics",
        "history",
    ]
    assert doc["schema_version"] == 1
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", doc["generated_at"])
    assert doc["ldd_dir"] == str(tmp_path / ".ldd")
    assert doc["session"]["session_id"] == "s3"
    first, second = doc["metrics"]
    assert list(first) == [
        "name",
        "version",
        "state",
        "is_load_bearing",
        "n",
        "mae",
        "window_mae",
        "p95_error",
        "worst_error",
        "promoted_at",
        "demoted_at",
        "gate",
        "spec",
    ]
    assert (first["name"], first["n"], first["state"]) == ("accuracy", 3, "insufficient_data")
    assert first["mae"] == pytest.approx(0.2 / 3)
    assert first["gate"] == {
        "min_n": 5,
        "max_mae": 0.15,
        "max_p95": None,
        "max_worst": None,
        "window": 10,
    }
    assert second["gate"]["min_n"] == 3
    assert first["spec"] == accuracy().spec.to_json()
    pairs = doc["history"]["calibrations"]
    assert [p["observed"] for p in pairs["accuracy"]] == [0.5, 0.6, 0.7]
    assert pairs["accuracy"][0]["session_id"] == "s1"
    assert pairs["accuracy"][0]["nodeid"] == "t.py::a"
    assert set(pairs["accuracy"][0]) == {
        "predicted",
        "observed",
        "raw_predicted",
        "raw_observed",
        "timestamp",
        "session_id",
        "nodeid",
    }
    assert pairs["latency_ms"][0]["raw_observed"] == 120
    assert pairs["latency_ms"][0]["observed"] == pytest.approx(0.12)
    # Each session once: the stored line, then the given ones, then this session.
    assert [s["session_id"] for s in doc["history"]["sessions"]] == ["s1", "s2", "s3"]
    assert [s["number"] for s in doc["history"]["sessions"]] == [1, 2, 3]
    assert set(doc["history"]["sessions"][0]) == {
        "number",
        "session_id",
        "started_at",
        "ended_at",
        "commit",
        "counts",
        "corpus",
        "state_changes",
        "metrics",
    }
    assert doc["history"]["sampling"] is None
    assert json.loads(dumps(doc)) == json.loads(json.dumps(doc))

    page = parse(render_html(doc))
    assert [s["points"] for s in page.of("ldd-calibration")] == [3, 1]
    assert [s["points"] for s in page.of("ldd-mae")] == [3, 1]
    # task_success in all three sessions; cost_per_success only in this one.
    assert [s["points"] for s in page.of("ldd-corpus")] == [3, 1]


def test_build_report_keeps_only_the_current_versions_pairs(tmp_path: Path) -> None:
    registry = MetricRegistry(TraceStore(tmp_path))
    registry.register(accuracy())
    Calibrator(registry).log("accuracy", 0.1, 0.2)
    registry.register(accuracy(version=2))
    Calibrator(registry).log("accuracy", 0.3, 0.4)
    doc = build_report(registry)
    assert [p["observed"] for p in doc["history"]["calibrations"]["accuracy"]] == [0.4]
    assert doc["metrics"][0]["version"] == 2
    assert doc["session"] is None


def test_build_report_reads_without_creating(tmp_path: Path) -> None:
    registry = MetricRegistry(TraceStore(tmp_path), read_only=True)
    registry.register(accuracy())
    doc = build_report(registry)
    assert doc["history"] == {
        "calibrations": {"accuracy": []},
        "observations": {"accuracy": []},
        "sessions": [],
        "sampling": None,
    }
    assert not (tmp_path / ".ldd").exists()


def test_promotion_is_marked_from_promoted_at(tmp_path: Path) -> None:
    registry = MetricRegistry(TraceStore(tmp_path))
    registry.register(accuracy())
    calibrator = Calibrator(registry)
    for _ in range(5):
        calibrator.log("accuracy", 0.5, 0.55)
    assert calibrator.try_promote("accuracy")
    page = render_html(build_report(registry))
    assert "promoted at pair 5" in page


def test_promotion_index_prefers_the_promoting_session() -> None:
    # Sessions s1..s3 log two pairs each within one second; s2 promoted at its end.
    pairs = [pair(0.5, 0.5, "2026-01-01T00:00:00Z", f"s{1 + i // 2}") for i in range(6)]
    assert promotion_index(pairs, GATE, "2026-01-01T00:00:00Z", "s2") == (4, "promoted")
    # Without the session, the timestamp cannot tell s3's pairs from s2's.
    assert promotion_index(pairs, GATE, "2026-01-01T00:00:00Z") == (6, "promoted")


# -- a report of a long log ----------------------------------------------------------------


def test_build_report_with_a_budget_says_it_read_an_excerpt(tmp_path: Path) -> None:
    registry = MetricRegistry(TraceStore(tmp_path))
    registry.register(accuracy())
    write_pair_lines(registry.store, 20_000)
    whole = build_report(registry)
    assert whole["history"]["sampling"] is None
    assert len(whole["history"]["calibrations"]["accuracy"]) == 20_000
    doc = build_report(registry, budget=200_000)
    sampling = doc["history"]["sampling"]
    assert sampling["calibrations"]["complete"] is False
    assert sampling["observations"]["complete"] is True  # no observations at all
    pairs = doc["history"]["calibrations"]["accuracy"]
    assert 1000 < len(pairs) < 20_000
    assert pairs[-1]["nodeid"] == "t.py::test_019999"
    page = render_html(doc)
    assert "Read from an excerpt of the log" in page
    assert f"Showing {SCATTER_POINTS} of {len(pairs):,} pairs" in page


def test_timeline_marks_a_demotion_and_shades_the_states_after_it() -> None:
    doc = hand_doc()
    s2 = doc["history"]["sessions"][1]
    s2["metrics"][0]["state_after"] = "drifting"
    s2["state_changes"] = [{"name": "accuracy", "before": "load_bearing", "after": "drifting"}]
    doc["history"]["sessions"].append(
        {
            "number": 4,
            "session_id": "s4",
            "started_at": "2026-12-05T08:00:00Z",
            "counts": {},
            "corpus": {},
            "metrics": [accuracy_row("drifting", "drifting", [])],
        }
    )
    doc["history"]["observations"]["accuracy"].append(
        observation(0.6, "2026-12-05T08:00:01Z", "s4", "t.py::a")
    )
    (accuracy, _) = parse(render_html(doc)).of("ldd-timeline")
    # s1 advisory, the day outside pytest and s2 load-bearing, s4 advisory again.
    assert accuracy["bands"] == [
        "ldd-band-advisory",
        "ldd-band-load-bearing",
        "ldd-band-advisory",
    ]
    assert [kind for kind, _ in accuracy["marks"]] == ["ldd-promotion", "ldd-demotion"]
    promoted, demoted = (float(attrs["x1"]) for _, attrs in accuracy["marks"])
    assert promoted < demoted


def test_a_dense_timeline_shares_its_points_out_over_the_sessions() -> None:
    doc = hand_doc()
    sessions = [
        {
            "number": i + 1,
            "session_id": f"d{i:02d}",
            "started_at": f"2026-12-01T{i // 60:02d}:{i % 60:02d}:00Z",
            "counts": {},
            "corpus": {},
            "metrics": [],
        }
        for i in range(50)
    ]
    doc["session"] = None
    doc["history"]["sessions"] = sessions
    doc["history"]["calibrations"]["accuracy"] = []
    doc["history"]["observations"]["accuracy"] = [
        observation(0.5, s["started_at"], s["session_id"], f"t.py::{k}")
        for s in sessions
        for k in range(100)
    ]
    text = render_html(doc)
    (timeline, _) = parse(text).of("ldd-timeline")
    # 49 earlier sessions share 270 points (5 each), the latest keeps 30.
    assert timeline["points"] == 49 * 5 + LATEST_SESSION_POINTS
    tips = timeline["tips"]
    assert sum("Session 50 ·" in t for t in tips) == LATEST_SESSION_POINTS
    assert sum("Session 1 ·" in t for t in tips) == 5
    assert "Showing 275 of 5,000 observations: at most 5 per session and 30 of the" in text


@pytest.mark.parametrize(
    ("corpus", "expected"),
    [
        (
            {"confinement": {"verdicts": 5, "unconfined": 0}},
            ["confinement: all 5 verdicts ran confined by the kernel"],
        ),
        (
            {"confinement": {"verdicts": 5, "unconfined": 2}},
            [
                "confinement: 2 of 5 verdicts ran unconfined"
                " (the agent's code was not confined by the kernel)"
            ],
        ),
        # A document from before confinement was counted, or a damaged one: no line.
        ({"confinement": {"verdicts": "5", "unconfined": 2}}, []),
        ({"confinement": [5, 2]}, []),
        (
            {"task_success": {"n": 0, "successes": 0, "success_rate": None, "inconclusive": 2}},
            ["task_success: 0/0 = -; 2 inconclusive (not judged, not counted)"],
        ),
        (
            {"task_success": {"n": 1, "successes": 1, "success_rate": 1.0, "inconclusive": True}},
            ["task_success: 1/1 = 1.000"],
        ),
    ],
)
def test_corpus_lines_count_inconclusive_episodes_and_unconfined_verdicts(
    corpus: dict[str, Any], expected: list[str]
) -> None:
    from pytest_ldd.report.text import corpus_lines

    assert corpus_lines(corpus) == expected
