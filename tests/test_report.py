"""Tests of pytest_ldd.report, pytest_ldd.report_html and pytest_ldd.svg."""

from __future__ import annotations

import copy
import json
import math
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from pytest_ldd import Calibrator, MetricRegistry, TraceStore, bounded_rate, positive_count
from pytest_ldd.registry import CalibrationGate
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
from pytest_ldd.report_html import promotion_index, running_mae
from pytest_ldd.svg import Axes, nice_ticks

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
    """Collects the SVG plots of a page: class, title and number of data points."""

    def __init__(self) -> None:
        super().__init__()
        self.svgs: list[dict[str, Any]] = []
        self.depth = 0
        self.in_title = False
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        attributes = dict(attrs)
        classes = (attributes.get("class") or "").split()
        if tag == "svg":
            self.svgs.append({"classes": classes, "title": None, "points": 0})
        elif self.svgs and tag == "circle" and "ldd-point" in classes:
            self.svgs[-1]["points"] += 1
        elif self.svgs and tag == "title" and self.svgs[-1]["title"] is None:
            self.in_title = True

    def handle_endtag(self, tag: str) -> None:
        self.in_title = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self.in_title:
            self.svgs[-1]["title"] = data

    def of(self, css_class: str) -> list[dict[str, Any]]:
        return [s for s in self.svgs if css_class in s["classes"]]


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


def hand_doc() -> dict[str, Any]:
    pairs_a = [pair(0.5, 0.5 + 0.01 * i, f"2026-12-01T08:00:0{i}Z", "s1") for i in range(4)]
    pairs_a += [pair(0.3, 0.32, "2026-12-02T08:00:00Z", None) for _ in range(3)]
    sessions = [
        {
            "session_id": "s1",
            "started_at": "x",
            "ended_at": "y",
            "counts": {},
            "corpus": {
                "task_success": {
                    "n": 10,
                    "successes": 7,
                    "success_rate": 0.7,
                    "interval": [0.397, 0.892],
                },
                "cost_per_success": {"total_dollars": 1.2, "pooled": 0.1714, "per_task": 0.18},
            },
        },
        {
            "session_id": "s2",
            "started_at": "x",
            "ended_at": "y",
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
        },
        {"session_id": "s3", "started_at": "x", "ended_at": "y", "counts": {}, "corpus": {}},
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
            "sessions": sessions,
        },
    }


def test_html_has_one_plot_pair_per_metric_and_a_point_per_pair() -> None:
    page = parse(render_html(hand_doc()))
    calibration = page.of("ldd-calibration")
    mae = page.of("ldd-mae")
    corpus = page.of("ldd-corpus")
    assert len(page.svgs) == 2 + 2 + 2
    assert [s["points"] for s in calibration] == [7, 0]
    assert [s["points"] for s in mae] == [7, 0]
    # task_success in two sessions; cost_per_success only where it is finite.
    assert [s["points"] for s in corpus] == [2, 1]
    assert all(s["title"] for s in page.svgs)
    assert calibration[0]["title"].startswith("accuracy: predicted vs observed")
    assert "script" not in page.tags


def test_html_escapes_document_text() -> None:
    doc = hand_doc()
    doc["metrics"][0]["spec"]["description"] = "<script>alert(1)</script> & co"
    doc["session"]["metrics"][0]["breaches"][0]["nodeid"] = "t.py::test[<img>]"
    page = render_html(doc)
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; co" in page
    assert "t.py::test[&lt;img&gt;]" in page
    assert "script" not in parse(page).tags


def test_html_is_self_contained() -> None:
    page = render_html(hand_doc())
    assert page.startswith("<!DOCTYPE html>")
    for forbidden in ("<script", "<link", "src=", "@import", "url("):
        assert forbidden not in page
    # The only URL is the SVG namespace, which browsers never fetch.
    assert page.count("http") == page.count('xmlns="http://www.w3.org/2000/svg"')


def test_html_without_session_or_corpus() -> None:
    doc = hand_doc()
    doc["session"] = None
    doc["history"]["sessions"] = []
    page = parse(render_html(doc))
    assert len(page.svgs) == 4
    assert "no graded episodes yet" in "".join(page.text)
    assert not page.of("ldd-corpus")


def test_html_session_tables_and_legend() -> None:
    page = render_html(hand_doc())
    text = "".join(parse(page).text)
    assert "Session 20261201T083000Z-3f2a9c" in text
    assert "advisory breach" in text
    assert "latency_p99 = 512 ms, limit le 500 (tests/test_x.py::test_a)" in text
    assert "task_success: 7/10 = 0.700 (95% CI 0.397-0.892)" in text
    # The legend names each session present in the scatter (pairs without one too).
    assert "s1" in text
    assert "outside pytest" in text


def test_html_marks_the_promotion_point() -> None:
    page = render_html(hand_doc())
    assert page.count('class="ldd-promotion"') == 1
    assert "gate first met at pair 5" in page


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
        calibrator,
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
