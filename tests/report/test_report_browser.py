"""The HTML report as a person sees it: parsed, counted, and rendered in headless Chromium.

The demo's report is rendered at 1400 and at 500 CSS pixels wide; the assertions are
on the laid-out page (through the DevTools protocol, see ``browser.py``): a timeline
per metric, gate bounds drawn where their values lie on the rendered axis, a tooltip
on every point, and nothing wider than a 500 px window.
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from browser import Browser
from plugin_support import run

SUITE = """
import pytest
from pytest_ldd import Observation

@pytest.mark.metric(
    "latency", kind="positive", unit="ms", normalize_scale=1000,
    description="response latency of the toy handler", le=500,
)
@pytest.mark.parametrize("case", [0, 1])
def test_latency(case):
    yield Observation("latency", 480 + 40 * case, predicted=500)
"""


class _Counter(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.svgs: list[str] = []
        self.points: dict[str, int] = {}
        self._current: str | None = None
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag == "svg":
            self._current = next(
                (c for c in classes if c.startswith("ldd-") and c != "ldd-plot"), ""
            )
            self.svgs.append(self._current)
        elif tag == "circle" and "ldd-point" in classes and self._current is not None:
            self.points[self._current] = self.points.get(self._current, 0) + 1
        elif tag == "script":
            self.scripts += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self._current = None


@pytest.fixture(scope="module")
def report_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An HTML report after seven sessions of a two-test suite (14 pairs, a promotion)."""
    pytester_dir = tmp_path_factory.mktemp("project")
    (pytester_dir / "test_latency.py").write_text(SUITE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    for _ in range(7):
        subprocess.run(
            [
                *(os.sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p"),
                "no:harvest",
                "--ldd",
                "--ldd-html=report.html",
                "-q",
            ],
            cwd=pytester_dir,
            env=env,
            check=False,
            capture_output=True,
        )
    return pytester_dir / "report.html"


def test_html_has_one_svg_per_plot_with_every_point(report_page: Path) -> None:
    counter = _Counter()
    counter.feed(report_page.read_text())
    assert counter.scripts == 0
    assert counter.svgs.count("ldd-calibration") == 1
    assert counter.svgs.count("ldd-mae") == 1
    # 2 tests x 7 sessions = 14 pairs: one point each in the scatter and the MAE curve.
    assert counter.points["ldd-calibration"] == 14
    assert counter.points["ldd-mae"] == 14
    assert 'class="ldd-promotion"' in report_page.read_text()


def test_ldd_html_option_writes_the_page(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_latency=SUITE)
    result = run(pytester, "--ldd", "--ldd-html=out/report.html")
    assert result.ret == 0
    page = (pytester.path / "out" / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert "latency" in page


def decode_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and unfiltered pixel rows of an 8-bit RGB or RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert depth == 8, depth
    assert colour in (2, 6), colour
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - bpp] if x >= bpp else 0
            up = previous[x]
            corner = previous[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
                line[x] = (line[x] + pred) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, rows


DEMO_METRICS = ("judge_verdict", "solve_seconds", "task_success", "cost_per_success")
#: The gates of the demo project: a marker's (solve_seconds) and [tool.ldd.gates].
DEMO_BOUNDS = {
    "solve_seconds": [("le", 2.0)],
    "task_success": [("ge", 0.5)],
    "cost_per_success": [("le", 0.05)],
}

#: What the test reads off the laid-out page (the report itself has no script).
MEASURE = """
(() => {
  const view = document.documentElement.clientWidth;
  const sticking = [];
  for (const el of document.body.querySelectorAll("*")) {
    if (el.closest(".table-wrap")) continue;  // a table scrolls inside its own box
    const box = el.getBoundingClientRect();
    if (box.width > 0 && box.right > view + 0.5) {
      sticking.push(el.tagName + " " + (el.getAttribute("class") || "") + " " + box.right);
    }
  }
  const centre = (el) => { const b = el.getBoundingClientRect(); return b.top + b.height / 2; };
  const timelines = [];
  for (const section of document.querySelectorAll("section.ldd-metric")) {
    const svg = section.querySelector("svg.ldd-timeline");
    if (!svg) { timelines.push({name: section.id, svg: false}); continue; }
    const ticks = [];
    for (const line of svg.querySelectorAll("g.ldd-axes line")) {
      const text = line.nextElementSibling;
      if (line.getAttribute("y1") === line.getAttribute("y2") && text
          && text.getAttribute("text-anchor") === "end") {
        ticks.push([parseFloat(text.textContent), centre(line)]);
      }
    }
    const points = Array.from(svg.querySelectorAll(".ldd-point"));
    timelines.push({
      name: section.id.replace(/^metric-/, ""),
      svg: true,
      width: svg.getBoundingClientRect().width,
      ticks,
      bounds: Array.from(svg.querySelectorAll("line.ldd-bound")).map((line) => ({
        op: line.dataset.op, limit: parseFloat(line.dataset.limit), y: centre(line),
      })),
      points: points.length,
      titled: points.filter((p) => {
        const title = p.querySelector(":scope > title");
        return title && /observed/.test(title.textContent)
          && /Session \\d+/.test(title.textContent);
      }).length,
      predicted: points.filter((p) => /predicted [-0-9.e]+/.test(p.textContent)).length,
      bands: svg.querySelectorAll("rect.ldd-band").length,
      promotions: svg.querySelectorAll("line.ldd-promotion").length,
    });
  }
  return JSON.stringify({
    view,
    scrollWidth: document.documentElement.scrollWidth,
    bodyWidth: document.body.scrollWidth,
    sticking,
    timelines,
    breaches: document.querySelectorAll("table.ldd-breaches tbody tr").length,
    scripts: document.scripts.length,
    text: document.body.innerText,
  });
})()
"""


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's report after its seven sessions, in a git repository (commits shown)."""
    repo = tmp_path_factory.mktemp("repo")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GIT_"))},
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "start"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True)
    folder = repo / "ldd-demo"
    done = subprocess.run(
        [os.sys.executable, "-m", "pytest_ldd", "demo", "--into", str(folder)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return folder / "report.html"


@pytest.fixture(scope="module")
def rendered(demo_report: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[int, Any]:
    """The demo's report measured at 1400 and 500 CSS pixels wide."""
    profile = tmp_path_factory.mktemp("profile")
    out: dict[int, Any] = {}
    with Browser(profile) as browser:
        for width in (1400, 500):
            browser.open(demo_report.as_uri(), width=width)
            out[width] = json.loads(browser.evaluate(MEASURE))
        # A screenshot too: the page is drawn, not blank.
        browser.open(demo_report.as_uri(), width=1000, height=1400)
        out[0] = browser.screenshot(width=1000, height=1400)
    return out


@pytest.mark.parametrize("width", [1400, 500])
def test_every_demo_metric_has_a_rendered_timeline(rendered: dict[int, Any], width: int) -> None:
    page = rendered[width]
    timelines = {t["name"]: t for t in page["timelines"]}
    assert sorted(timelines) == sorted(DEMO_METRICS)
    for name, timeline in timelines.items():
        assert timeline["svg"], name
        assert timeline["points"] > 0, name
        assert timeline["width"] > 0.8 * min(width, 1000) - 64, (name, timeline["width"])
    # Seven sessions: one band per stretch of state, a promotion for each metric promoted.
    assert timelines["solve_seconds"]["promotions"] == 1
    assert timelines["solve_seconds"]["bands"] == 2
    assert timelines["judge_verdict"]["promotions"] == 0
    assert page["scripts"] == 0


@pytest.mark.parametrize("width", [1400, 500])
def test_bound_lines_sit_at_their_values_on_the_rendered_axis(
    rendered: dict[int, Any], width: int
) -> None:
    timelines = {t["name"]: t for t in rendered[width]["timelines"]}
    for name, expected in DEMO_BOUNDS.items():
        timeline = timelines[name]
        assert [(b["op"], b["limit"]) for b in timeline["bounds"]] == expected, name
        ticks = sorted(timeline["ticks"])
        assert len(ticks) >= 2, name
        (low, low_y), (high, high_y) = ticks[0], ticks[-1]
        for bound in timeline["bounds"]:
            assert low <= bound["limit"] <= high, (name, bound, ticks)
            # Where the limit lies on the rendered axis, from the tick labels' rows.
            at = low_y + (bound["limit"] - low) / (high - low) * (high_y - low_y)
            assert bound["y"] == pytest.approx(at, abs=1.5), (name, bound, ticks)
    assert timelines["judge_verdict"]["bounds"] == []


def test_every_point_has_a_tooltip_with_its_figures(rendered: dict[int, Any]) -> None:
    for timeline in rendered[1400]["timelines"]:
        assert timeline["titled"] == timeline["points"], timeline["name"]
        assert timeline["predicted"] > 0, timeline["name"]


def test_sessions_read_as_numbers_with_dates_and_commits(rendered: dict[int, Any]) -> None:
    text = rendered[1400]["text"]
    assert "latest: Session 7 · " in text
    assert "20261201T" not in text.split("Sessions")[0]  # no raw ids before the list
    # The demo ran inside a git repository: each session shows its short commit.
    rows = [line for line in text.splitlines() if line.startswith("Session ") and "\t" in line]
    assert len(rows) == 7
    assert all(re.search(r"\t[0-9a-f]{7}\t", row) for row in rows), rows
    assert rendered[1400]["breaches"] == 1  # session 7's load-bearing gate failure
    assert "gate failed" in text


def test_nothing_overflows_a_500px_window(rendered: dict[int, Any]) -> None:
    page = rendered[500]
    assert page["view"] == 500
    assert page["scrollWidth"] <= page["view"], page["sticking"][:5]
    assert page["sticking"] == []


def test_the_page_is_drawn(rendered: dict[int, Any]) -> None:
    width, height, rows = decode_png(rendered[0])
    assert (width, height) == (1000, 1400)
    bpp = len(rows[0]) // width
    background = rows[0][:3]
    ink = sum(
        1
        for row in rows[::4]
        for x in range(0, width * bpp, bpp * 4)
        if row[x : x + 3] != background
    )
    sampled = (height // 4) * (width // 4)
    # A blank or broken page is one colour; the report has text, tables and plots.
    assert ink / sampled > 0.02, f"only {ink} of {sampled} sampled pixels are not background"
