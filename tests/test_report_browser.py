"""The HTML report as a person sees it: parsed, counted, and rendered in headless Chromium."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest
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


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("headless Chromium is required in CI (.ci/run installs it)")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    return found


CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


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


def test_chromium_renders_the_report(report_page: Path, tmp_path: Path) -> None:
    browser = chromium()
    shot = tmp_path / "shot.png"
    common = [browser, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    subprocess.run(
        [*common, "--window-size=1000,1400", f"--screenshot={shot}", report_page.as_uri()],
        check=True,
        capture_output=True,
        timeout=120,
    )
    width, height, rows = decode_png(shot.read_bytes())
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
    dom = subprocess.run(
        [*common, "--dump-dom", report_page.as_uri()],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert "pytest-ldd report" in dom
    assert "latency" in dom
    assert dom.count("<svg") >= 2
