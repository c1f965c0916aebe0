"""The session in the reports of pytest-html and pytest-json-report, each really installed
(the test extra), neither a dependency of pytest-ldd."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest
from plugin_support import read_jsonl, run

PROJECT = """
[tool.ldd.metrics.latency]
kind = "positive"
unit = "ms"
normalize_scale = 1000
description = "response latency"
le = 500
"""

TESTS = """
import pytest
from pytest_ldd import Observation

@pytest.mark.parametrize("case", ["<b>bold</b>"])
def test_latency(case):
    yield Observation("latency", 512, predicted=510)
"""

SERIAL_AND_XDIST = pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])


class LddSection(HTMLParser):
    """The cells of the tables and the list items inside pytest-ldd's ``div.ldd``."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.found = 0
        self.rows: list[list[str]] = []
        self.items: list[str] = []
        self.tags: list[str] = []
        self._depth = 0
        self._text: list[str] | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "div" and ("class", "ldd") in attrs:
            self.found += 1
            self._depth = 1
            return
        if not self._depth:
            return
        self.tags.append(tag)
        if tag == "div":
            self._depth += 1
        elif tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th", "li"):
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if not self._depth:
            return
        if tag == "div":
            self._depth -= 1
        elif tag in ("td", "th") and self._text is not None:
            self.rows[-1].append("".join(self._text))
            self._text = None
        elif tag == "li" and self._text is not None:
            self.items.append("".join(self._text))
            self._text = None

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)


@SERIAL_AND_XDIST
def test_pytest_html_gets_an_ldd_section(pytester: pytest.Pytester, workers: list[str]) -> None:
    pytester.makepyprojecttoml(PROJECT)
    pytester.makepyfile(test_api=TESTS)
    result = run(pytester, "--ldd", "--html=report.html", "--self-contained-html", *workers)
    assert result.ret == 0, result.stdout.str()
    section = LddSection((pytester.path / "report.html").read_text())
    assert section.found == 1
    # Only what pytest-ldd writes: tables and a list, the test id's <b> as text.
    assert "b" not in section.tags
    assert section.rows[0][:4] == ["metric", "kind", "v", "state"]
    assert section.rows[1][:6] == ["latency", "positive", "1", "insufficient_data", "1", "0.002"]
    assert section.items == [
        "advisory breach: latency = 512 ms, limit le 500 (test_api.py::test_latency[<b>bold</b>])"
    ]


def test_pytest_html_shows_state_changes(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(PROJECT)
    pytester.makepyfile(test_api=TESTS)
    for _ in range(4):
        assert run(pytester, "--ldd").ret == 0
    result = run(pytester, "--ldd", "--html=report.html")
    assert result.ret == 0, result.stdout.str()
    section = LddSection((pytester.path / "report.html").read_text())
    assert ["latency", "insufficient_data", "load_bearing"] in section.rows


def test_no_section_without_pytest_ldd(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_x():\n    pass\n")
    result = run(pytester, "--html=report.html")
    assert result.ret == 0, result.stdout.str()
    assert LddSection((pytester.path / "report.html").read_text()).found == 0


@SERIAL_AND_XDIST
def test_pytest_json_report_gets_the_session_document(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    pytester.makepyprojecttoml(PROJECT)
    pytester.makepyfile(test_api=TESTS)
    result = run(pytester, "--ldd", "--json-report", "--json-report-file=report.json", *workers)
    assert result.ret == 0, result.stdout.str()
    report = json.loads((pytester.path / "report.json").read_text())
    # The same document the session recorded, under pytest-ldd's own key.
    (recorded,) = read_jsonl(pytester.path / ".ldd" / "sessions.jsonl")
    assert report["ldd"] == recorded
    assert report["ldd"]["counts"]["tests"] == 1
    assert report["summary"]["passed"] == 1  # the plugin's own document is intact


def test_pytest_json_report_without_recording(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(PROJECT)
    pytester.makepyfile(test_api=TESTS)
    result = run(pytester, "--json-report", "--json-report-file=report.json")
    assert result.ret == 0, result.stdout.str()
    report = json.loads((pytester.path / "report.json").read_text())
    assert report["ldd"]["recording"] is False
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]+", report["ldd"]["session_id"])
    assert not (pytester.path / ".ldd").exists()
