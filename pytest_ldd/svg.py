"""Inline SVG plots of the HTML report: calibration scatter, running MAE, corpus series.

Every plot is one self-contained ``<svg>`` element with a ``<title>``, a class naming
the plot (``ldd-calibration``, ``ldd-mae``, ``ldd-corpus``) and one
``<circle class="ldd-point">`` per data point, each with its own ``<title>`` so a
browser shows the exact figures on hover without any JavaScript.  The functions take
plain numbers and strings; they know nothing about the report document.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import final

__all__ = [
    "PALETTE",
    "Axes",
    "CalibrationPoint",
    "CorpusPoint",
    "calibration_svg",
    "corpus_svg",
    "mae_svg",
    "nice_ticks",
]

#: Colours of sessions in the calibration scatter (colour-blind friendly, Okabe-Ito
#: order first); sessions beyond the palette fall back to ``OLDER``.
PALETTE = (
    "#0072b2",
    "#e69f00",
    "#009e73",
    "#cc79a7",
    "#56b4e9",
    "#d55e00",
    "#f0e442",
    "#000000",
    "#8c564b",
    "#7f7f7f",
)
OLDER = "#b8b8b8"
_INK = "#333333"
_GRID = "#e5e5e5"
_ACCENT = "#d55e00"


def _n(value: float) -> str:
    """A pixel coordinate, short and stable."""
    return f"{value:.1f}"


def _fmt(value: float) -> str:
    """A tick label: at most three significant decimals, no trailing zeros."""
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


@final
@dataclass(frozen=True, slots=True)
class Axes:
    """A plot frame: data ranges mapped onto a pixel box with margins for labels."""

    x_min: float
    x_max: float
    y_min: float
    y_max: float
    width: int = 380
    height: int = 300
    left: int = 56
    right: int = 16
    top: int = 16
    bottom: int = 44

    def __post_init__(self) -> None:
        if not self.x_max > self.x_min:
            msg = f"'x_max' must be > x_min={self.x_min} (got {self.x_max})"
            raise ValueError(msg)
        if not self.y_max > self.y_min:
            msg = f"'y_max' must be > y_min={self.y_min} (got {self.y_max})"
            raise ValueError(msg)

    def x(self, value: float) -> float:
        """The pixel column of data value ``value``."""
        span = self.width - self.left - self.right
        return self.left + (value - self.x_min) / (self.x_max - self.x_min) * span

    def y(self, value: float) -> float:
        """The pixel row of data value ``value`` (SVG rows grow downwards)."""
        span = self.height - self.top - self.bottom
        return self.height - self.bottom - (value - self.y_min) / (self.y_max - self.y_min) * span


def nice_ticks(low: float, high: float, count: int = 5, *, integer: bool = False) -> list[float]:
    """Round tick values covering ``[low, high]``, about ``count`` of them."""
    if not high > low:
        return [low]
    raw = (high - low) / max(1, count - 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    if integer:
        step = max(1.0, math.ceil(step))
    first = math.ceil(low / step - 1e-9) * step
    ticks = []
    value = first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    return ticks


def _cover(ticks: list[float], top: float) -> list[float]:
    """``ticks`` extended by one step when the last one is below ``top``."""
    if len(ticks) >= 2 and ticks[-1] < top:
        ticks = [*ticks, round(ticks[-1] + (ticks[1] - ticks[0]), 10)]
    return ticks


def _open(axes: Axes, css_class: str, title: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="ldd-plot {css_class}" '
        f'width="{axes.width}" height="{axes.height}" '
        f'viewBox="0 0 {axes.width} {axes.height}" role="img">',
        f"<title>{escape(title)}</title>",
    ]


def _frame(
    axes: Axes,
    x_ticks: Sequence[float],
    y_ticks: Sequence[float],
    x_label: str,
    y_label: str,
) -> list[str]:
    """Grid lines, tick labels, the box and the axis labels."""
    out: list[str] = ['<g class="ldd-axes">']
    x0, x1 = axes.x(axes.x_min), axes.x(axes.x_max)
    y0, y1 = axes.y(axes.y_min), axes.y(axes.y_max)
    for tick in y_ticks:
        row = axes.y(tick)
        out.append(
            f'<line x1="{_n(x0)}" y1="{_n(row)}" x2="{_n(x1)}" y2="{_n(row)}" '
            f'stroke="{_GRID}" stroke-width="1"/>'
        )
        out.append(
            f'<text x="{_n(x0 - 6)}" y="{_n(row + 4)}" text-anchor="end" '
            f'font-size="11" fill="{_INK}">{escape(_fmt(tick))}</text>'
        )
    for tick in x_ticks:
        col = axes.x(tick)
        out.append(
            f'<line x1="{_n(col)}" y1="{_n(y0)}" x2="{_n(col)}" y2="{_n(y1)}" '
            f'stroke="{_GRID}" stroke-width="1"/>'
        )
        out.append(
            f'<text x="{_n(col)}" y="{_n(y0 + 16)}" text-anchor="middle" '
            f'font-size="11" fill="{_INK}">{escape(_fmt(tick))}</text>'
        )
    out.append(
        f'<rect x="{_n(x0)}" y="{_n(y1)}" width="{_n(x1 - x0)}" height="{_n(y0 - y1)}" '
        f'fill="none" stroke="#999999" stroke-width="1"/>'
    )
    out.append(
        f'<text x="{_n((x0 + x1) / 2)}" y="{axes.height - 6}" text-anchor="middle" '
        f'font-size="12" fill="{_INK}">{escape(x_label)}</text>'
    )
    mid = (y0 + y1) / 2
    out.append(
        f'<text x="14" y="{_n(mid)}" text-anchor="middle" font-size="12" fill="{_INK}" '
        f'transform="rotate(-90 14 {_n(mid)})">{escape(y_label)}</text>'
    )
    out.append("</g>")
    return out


def _point(cx: float, cy: float, colour: str, tip: str, radius: float = 4.0) -> str:
    return (
        f'<circle class="ldd-point" cx="{_n(cx)}" cy="{_n(cy)}" r="{radius}" '
        f'fill="{colour}" fill-opacity="0.8" stroke="#ffffff" stroke-width="0.8">'
        f"<title>{escape(tip)}</title></circle>"
    )


def _empty_note(axes: Axes, text: str) -> str:
    cx = (axes.x(axes.x_min) + axes.x(axes.x_max)) / 2
    cy = (axes.y(axes.y_min) + axes.y(axes.y_max)) / 2
    return (
        f'<text class="ldd-empty" x="{_n(cx)}" y="{_n(cy)}" text-anchor="middle" '
        f'font-size="13" fill="#777777">{escape(text)}</text>'
    )


@final
@dataclass(frozen=True, slots=True)
class CalibrationPoint:
    """One calibration pair on the normalized scale, with the colour of its session."""

    predicted: float
    observed: float
    colour: str
    tip: str


def calibration_svg(
    title: str,
    points: Sequence[CalibrationPoint],
    *,
    max_mae: float,
) -> str:
    """Predicted vs observed (both normalized to 0..1), the y = x line and the band.

    The shaded band is ``|observed - predicted| <= max_mae``: a metric whose points
    stay inside it is one whose predictions are as good as its gate asks.
    """
    axes = Axes(0.0, 1.0, 0.0, 1.0, width=340, height=320)
    ticks = [0.0, 0.25, 0.5, 0.75, 1.0]
    out = _open(axes, "ldd-calibration", title)
    out += _frame(axes, ticks, ticks, "predicted (normalized)", "observed (normalized)")
    band = max(0.0, min(1.0, max_mae))
    # The band y in [x - m, x + m] clipped to the unit square is this hexagon.
    corners = [
        (0.0, 0.0),
        (band, 0.0),
        (1.0, 1.0 - band),
        (1.0, 1.0),
        (1.0 - band, 1.0),
        (0.0, band),
    ]
    coords = " ".join(f"{_n(axes.x(px))},{_n(axes.y(py))}" for px, py in corners)
    out.append(
        f'<polygon class="ldd-band" points="{coords}" fill="#56b4e9" fill-opacity="0.18" '
        f'stroke="none"><title>{escape(f"band |observed - predicted| <= {_fmt(band)}")}'
        "</title></polygon>"
    )
    out.append(
        f'<line class="ldd-identity" x1="{_n(axes.x(0))}" y1="{_n(axes.y(0))}" '
        f'x2="{_n(axes.x(1))}" y2="{_n(axes.y(1))}" stroke="#0072b2" stroke-width="1.2" '
        f'stroke-dasharray="4 3"/>'
    )
    if not points:
        out.append(_empty_note(axes, "no calibration pairs yet"))
    for point in points:
        out.append(
            _point(axes.x(point.predicted), axes.y(point.observed), point.colour, point.tip)
        )
    out.append("</svg>")
    return "\n".join(out)


def mae_svg(
    title: str,
    running_mae: Sequence[float],
    *,
    max_mae: float,
    promotion_index: int | None = None,
    promotion_label: str = "promoted",
) -> str:
    """Running MAE after each pair (1-based pair index) with the threshold line.

    ``promotion_index`` (1-based) marks the pair at which the metric was promoted, or
    first met its gate, with a vertical line.
    """
    count = len(running_mae)
    top = max([max_mae * 1.25, *running_mae, 0.05])
    y_ticks = _cover(nice_ticks(0.0, top, 5), top)
    # Half a pair of room on each side so the first and last points are not clipped.
    x_max = float(max(count, 2))
    pad = max(0.5, x_max * 0.02)
    axes = Axes(1.0 - pad, x_max + pad, 0.0, y_ticks[-1], width=380, height=320)
    x_ticks = nice_ticks(1.0, x_max, 6, integer=True)
    out = _open(axes, "ldd-mae", title)
    out += _frame(axes, x_ticks, y_ticks, "pairs", "running MAE (normalized)")
    row = axes.y(max_mae)
    out.append(
        f'<line class="ldd-threshold" x1="{_n(axes.x(axes.x_min))}" y1="{_n(row)}" '
        f'x2="{_n(axes.x(axes.x_max))}" y2="{_n(row)}" stroke="{_ACCENT}" '
        f'stroke-width="1.2" stroke-dasharray="5 3">'
        f"<title>{escape(f'max_mae = {_fmt(max_mae)}')}</title></line>"
    )
    out.append(
        f'<text x="{_n(axes.x(axes.x_max) - 4)}" y="{_n(row - 5)}" text-anchor="end" '
        f'font-size="11" fill="{_ACCENT}">{escape(f"max_mae {_fmt(max_mae)}")}</text>'
    )
    if not running_mae:
        out.append(_empty_note(axes, "no calibration pairs yet"))
    else:
        path = " ".join(
            f"{'M' if i == 0 else 'L'}{_n(axes.x(i + 1))},{_n(axes.y(v))}"
            for i, v in enumerate(running_mae)
        )
        out.append(f'<path d="{path}" fill="none" stroke="#0072b2" stroke-width="1.5"/>')
    if promotion_index is not None and 1 <= promotion_index <= count:
        col = axes.x(promotion_index)
        out.append(
            f'<line class="ldd-promotion" x1="{_n(col)}" y1="{_n(axes.y(axes.y_min))}" '
            f'x2="{_n(col)}" y2="{_n(axes.y(axes.y_max))}" stroke="#009e73" '
            f'stroke-width="1.5"><title>{escape(f"{promotion_label} at pair {promotion_index}")}'
            "</title></line>"
        )
        # Keep the label inside the frame: right of the line, or left of it past the middle.
        right = promotion_index <= (axes.x_min + axes.x_max) / 2
        out.append(
            f'<text x="{_n(col + 4 if right else col - 4)}" y="{_n(axes.y(axes.y_max) + 12)}" '
            f'text-anchor="{"start" if right else "end"}" font-size="11" fill="#009e73">'
            f"{escape(f'{promotion_label} (pair {promotion_index})')}</text>"
        )
    for i, value in enumerate(running_mae):
        out.append(
            _point(
                axes.x(i + 1),
                axes.y(value),
                "#0072b2",
                f"after pair {i + 1}: MAE {value:.3f}",
                # Smaller dots once they would overlap, so the line stays readable.
                radius=3.0 if count <= 60 else 1.8,
            )
        )
    out.append("</svg>")
    return "\n".join(out)


@final
@dataclass(frozen=True, slots=True)
class CorpusPoint:
    """One session's aggregate at 1-based position ``index``, with its interval if any.

    ``value`` ``None`` means infinite (cost-of-pass without a success): it is drawn as
    an ``inf`` mark at the top of the plot, not as a data point.
    """

    index: int
    label: str
    value: float | None
    low: float | None = None
    high: float | None = None


def corpus_svg(
    title: str,
    points: Sequence[CorpusPoint],
    *,
    slots: int,
    y_label: str,
    unit_interval: bool,
    limit: float | None = None,
) -> str:
    """One aggregate across ``slots`` sessions (oldest first) with interval whiskers.

    ``unit_interval`` fixes the y axis to 0..1 (rates); otherwise it spans the data.
    ``limit`` draws the corpus gate's limit as a dashed line.
    """
    count = max(slots, 1)
    if unit_interval:
        y_max = 1.0
        y_ticks = [0.0, 0.25, 0.5, 0.75, 1.0]
    else:
        highs = [p.high if p.high is not None else p.value for p in points]
        top = max([*(h for h in highs if h is not None), limit or 0.0, 1e-6]) * 1.15
        y_ticks = _cover(nice_ticks(0.0, top, 5), top)
        y_max = y_ticks[-1]
    axes = Axes(0.5, count + 0.5, 0.0, y_max, width=max(380, 36 * count + 80), height=300)
    x_ticks = nice_ticks(1.0, float(count), min(count, 8), integer=True)
    out = _open(axes, "ldd-corpus", title)
    out += _frame(axes, x_ticks, y_ticks, "session (oldest first)", y_label)
    if limit is not None and 0.0 <= limit <= y_max:
        row = axes.y(limit)
        out.append(
            f'<line class="ldd-threshold" x1="{_n(axes.x(axes.x_min))}" y1="{_n(row)}" '
            f'x2="{_n(axes.x(axes.x_max))}" y2="{_n(row)}" stroke="{_ACCENT}" '
            f'stroke-width="1.2" stroke-dasharray="5 3">'
            f"<title>{escape(f'gate limit {_fmt(limit)}')}</title></line>"
        )
    if not points:
        out.append(_empty_note(axes, "no sessions with this aggregate yet"))
    for point in points:
        col = axes.x(point.index)
        if point.value is None:
            out.append(
                f'<text class="ldd-infinite" x="{_n(col)}" y="{_n(axes.y(y_max) + 12)}" '
                f'text-anchor="middle" font-size="11" fill="{_ACCENT}">inf'
                f"<title>{escape(f'{point.label}: infinite')}</title></text>"
            )
            continue
        tip = f"{point.label}: {point.value:.4g}"
        if point.low is not None and point.high is not None:
            tip += f" (95% CI {point.low:.3f}-{point.high:.3f})"
            lo, hi = axes.y(point.low), axes.y(point.high)
            out.append(
                f'<g class="ldd-whisker" stroke="{_INK}" stroke-width="1.2">'
                f'<line x1="{_n(col)}" y1="{_n(lo)}" x2="{_n(col)}" y2="{_n(hi)}"/>'
                f'<line x1="{_n(col - 5)}" y1="{_n(lo)}" x2="{_n(col + 5)}" y2="{_n(lo)}"/>'
                f'<line x1="{_n(col - 5)}" y1="{_n(hi)}" x2="{_n(col + 5)}" y2="{_n(hi)}"/>'
                "</g>"
            )
        out.append(_point(col, axes.y(point.value), "#0072b2", tip))
    out.append("</svg>")
    return "\n".join(out)
