"""Inline SVG plots of the HTML report: timeline, calibration scatter, running MAE, corpus.

Every plot is one self-contained ``<svg>`` element with a ``<title>``, a class naming
the plot (``ldd-timeline``, ``ldd-calibration``, ``ldd-mae``, ``ldd-corpus``) and one
element of class ``ldd-point`` per data point (a circle; in the timeline also the
prediction's diamond and a breach's square), each with its own ``<title>`` so a
browser shows the exact figures on hover without any JavaScript.  The functions take
plain numbers and strings; they know nothing about the report document.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING, final

if TYPE_CHECKING:
    from pytest_ldd.model.gates import Bound

__all__ = [
    "PALETTE",
    "Axes",
    "CalibrationPoint",
    "CorpusPoint",
    "StateMark",
    "StateSpan",
    "TimelinePoint",
    "bound_label",
    "calibration_svg",
    "corpus_svg",
    "mae_svg",
    "nice_ticks",
    "timeline_svg",
]

#: Okabe-Ito colours first (distinguishable with every common colour-vision deficiency),
#: for plots that need a series per colour; ``OLDER`` for whatever is past them.
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
    x_names: Sequence[str] | None = None,
) -> list[str]:
    """Grid lines, tick labels, the box and the axis labels.

    ``x_names`` replaces the x tick labels (one per tick), for axes of names.
    """
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
    for i, tick in enumerate(x_ticks):
        col = axes.x(tick)
        name = x_names[i] if x_names is not None else _fmt(tick)
        out.append(
            f'<line x1="{_n(col)}" y1="{_n(y0)}" x2="{_n(col)}" y2="{_n(y1)}" '
            f'stroke="{_GRID}" stroke-width="1"/>'
        )
        out.append(
            f'<text x="{_n(col)}" y="{_n(y0 + 16)}" text-anchor="middle" '
            f'font-size="11" fill="{_INK}">{escape(name)}</text>'
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
    positions: Sequence[int] | None = None,
    promotion_index: int | None = None,
    promotion_label: str = "promoted",
) -> str:
    """Running MAE after each pair (1-based pair index) with the threshold line.

    ``positions`` are the 1-based pair indices of the values (default 1, 2, ...), so
    a thinned curve keeps its x axis.  ``promotion_index`` (1-based) marks the pair at
    which the metric was promoted, or first met its gate, with a vertical line.
    """
    at = list(positions) if positions is not None else list(range(1, len(running_mae) + 1))
    if len(at) != len(running_mae):
        msg = f"'positions' must have one entry per value ({len(running_mae)}) (got {len(at)})"
        raise ValueError(msg)
    count = max(at) if at else 0
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
            f"{'M' if i == 0 else 'L'}{_n(axes.x(x))},{_n(axes.y(v))}"
            for i, (x, v) in enumerate(zip(at, running_mae, strict=True))
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
    for x, value in zip(at, running_mae, strict=True):
        out.append(
            _point(
                axes.x(x),
                axes.y(value),
                "#0072b2",
                f"after pair {x}: MAE {value:.3f}",
                # Smaller dots once they would overlap, so the line stays readable.
                radius=3.0 if len(at) <= 60 else 1.8,
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


# -- the timeline of a metric's raw values ----------------------------------------------

#: Colours of the timeline (Okabe-Ito: distinguishable with every common colour-vision
#: deficiency; each role also has its own shape or dash, so colour is never alone).
OBSERVED = "#0072b2"  # blue, filled circles
PREDICTED = "#e69f00"  # orange, hollow diamonds
BREACH = "#d55e00"  # vermilion, filled squares
BOUND = "#cc79a7"  # reddish purple, dashed lines
LOAD_BEARING = "#009e73"  # bluish green: band and promotion marks
ADVISORY = "#999999"  # grey band


@final
@dataclass(frozen=True, slots=True)
class TimelinePoint:
    """One observation in its raw unit, in session slot ``slot`` (0-based, oldest first).

    ``predicted`` is the raw prediction logged with it, when there was one; ``breach``
    marks a value outside one of the gate's bounds.
    """

    slot: int
    observed: float
    tip: str
    predicted: float | None = None
    breach: bool = False


@final
@dataclass(frozen=True, slots=True)
class StateSpan:
    """Slots ``first`` to ``last`` (inclusive) in which the metric began in one state."""

    first: int
    last: int
    load_bearing: bool
    tip: str


@final
@dataclass(frozen=True, slots=True)
class StateMark:
    """A promotion or demotion at the end of slot ``slot``."""

    slot: int
    promoted: bool
    tip: str


def _value_ticks(values: Sequence[float], *, unit_interval: bool) -> list[float]:
    """Round ticks covering ``values`` (a positive range starts at 0)."""
    if unit_interval:
        return [0.0, 0.25, 0.5, 0.75, 1.0]
    finite = [v for v in values if math.isfinite(v)] or [0.0, 1.0]
    low, high = min(finite), max(finite)
    if low >= 0:
        low = 0.0
    if high - low <= 0:
        high = low + (abs(low) or 1.0)
    pad = (high - low) * 0.08
    low = low if low == 0 else low - pad
    high += pad
    ticks = nice_ticks(low, high, 5)
    step = ticks[1] - ticks[0] if len(ticks) >= 2 else 1.0
    while ticks[0] > low + 1e-12:
        ticks.insert(0, round(ticks[0] - step, 10))
    while ticks[-1] < high - 1e-12:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def _diamond(cx: float, cy: float, size: float) -> str:
    return (
        f"M{_n(cx)},{_n(cy - size)} L{_n(cx + size)},{_n(cy)} "
        f"L{_n(cx)},{_n(cy + size)} L{_n(cx - size)},{_n(cy)} Z"
    )


def bound_label(bound: Bound, unit: str) -> str:
    """A bound as the gate reads it, in its unit: ``le 500 ms``."""
    return f"{bound} {unit}".rstrip()


def timeline_svg(
    title: str,
    points: Sequence[TimelinePoint],
    *,
    slots: Sequence[str],
    y_label: str,
    unit_interval: bool = False,
    bounds: Sequence[Bound] = (),
    unit: str = "",
    spans: Sequence[StateSpan] = (),
    marks: Sequence[StateMark] = (),
) -> str:
    """A metric's raw values by session, oldest first, with its bounds and states.

    ``slots`` labels the sessions on the x axis (one slot each); a slot's points are
    spread across its width in order.  A prediction is a hollow diamond at the same x
    as its observation, joined to it by a thin line (its error).  ``spans`` shade the
    background by the state the metric had at each session's start, ``marks`` draw a
    promotion (solid) or demotion (dashed) at the end of its session.  The ``<svg>``
    carries ``data-value-min`` / ``data-value-max`` and ``data-row-min`` /
    ``data-row-max``: the value range of the y axis and the pixel rows it maps to.
    Each bound is a dashed line labelled as the gate reads it, in ``unit``.
    """
    count = max(len(slots), 1)
    values = [p.observed for p in points]
    values += [p.predicted for p in points if p.predicted is not None]
    values += [b.limit for b in bounds]
    y_ticks = _value_ticks(values, unit_interval=unit_interval)
    axes = Axes(-0.5, count - 0.5, y_ticks[0], y_ticks[-1], width=760, height=300, left=64)
    step = max(1, math.ceil(count / 12))
    x_ticks = [float(i) for i in range(0, count, step)]
    top, bottom = axes.y(axes.y_max), axes.y(axes.y_min)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="ldd-plot ldd-timeline" '
        f'width="{axes.width}" height="{axes.height}" '
        f'viewBox="0 0 {axes.width} {axes.height}" role="img" '
        f'data-value-min="{axes.y_min!r}" data-value-max="{axes.y_max!r}" '
        f'data-row-min="{_n(bottom)}" data-row-max="{_n(top)}">',
        f"<title>{escape(title)}</title>",
    ]
    for span in spans:
        x0, x1 = axes.x(span.first - 0.5), axes.x(span.last + 0.5)
        colour, opacity, css = (
            (LOAD_BEARING, "0.16", "ldd-band-load-bearing")
            if span.load_bearing
            else (ADVISORY, "0.10", "ldd-band-advisory")
        )
        out.append(
            f'<rect class="ldd-band {css}" x="{_n(x0)}" y="{_n(top)}" width="{_n(x1 - x0)}" '
            f'height="{_n(bottom - top)}" fill="{colour}" fill-opacity="{opacity}">'
            f"<title>{escape(span.tip)}</title></rect>"
        )
    names = [slots[int(t)] for t in x_ticks] if slots else [""] * len(x_ticks)
    out += _frame(axes, x_ticks, y_ticks, "session (oldest first)", y_label, names)
    x_left, x_right = axes.x(axes.x_min), axes.x(axes.x_max)
    for bound in bounds:
        label = bound_label(bound, unit)
        row = axes.y(bound.limit)
        out.append(
            f'<line class="ldd-bound" data-op="{escape(bound.op)}" '
            f'data-limit="{bound.limit!r}" x1="{_n(x_left)}" y1="{_n(row)}" '
            f'x2="{_n(x_right)}" y2="{_n(row)}" stroke="{BOUND}" stroke-width="1.6" '
            f'stroke-dasharray="7 4"><title>{escape(f"gate {label}")}</title></line>'
        )
        out.append(
            f'<text class="ldd-bound-label" x="{_n(x_right - 4)}" y="{_n(row - 5)}" '
            f'text-anchor="end" font-size="12" fill="{BOUND}">{escape(label)}</text>'
        )
    for mark in marks:
        col = axes.x(mark.slot + 0.5)
        css, colour, dash = (
            ("ldd-promotion", LOAD_BEARING, "")
            if mark.promoted
            else ("ldd-demotion", BREACH, ' stroke-dasharray="4 3"')
        )
        out.append(
            f'<line class="{css}" x1="{_n(col)}" y1="{_n(top)}" x2="{_n(col)}" '
            f'y2="{_n(bottom)}" stroke="{colour}" stroke-width="2"{dash}>'
            f"<title>{escape(mark.tip)}</title></line>"
        )
        out.append(
            f'<text x="{_n(col + 3)}" y="{_n(top + 12)}" font-size="11" fill="{colour}">'
            f"{'promoted' if mark.promoted else 'demoted'}</text>"
        )
    if not points:
        out.append(_empty_note(axes, "no observations yet"))
    by_slot: dict[int, int] = {}
    for point in points:
        by_slot[point.slot] = by_slot.get(point.slot, 0) + 1
    seen: dict[int, int] = {}
    for point in points:
        j = seen.get(point.slot, 0)
        seen[point.slot] = j + 1
        share = by_slot[point.slot]
        offset = 0.0 if share == 1 else (j + 0.5) / share * 0.7 - 0.35
        cx, cy = axes.x(point.slot + offset), axes.y(point.observed)
        if point.predicted is not None:
            py = axes.y(point.predicted)
            out.append(
                f'<line class="ldd-error" x1="{_n(cx)}" y1="{_n(py)}" x2="{_n(cx)}" '
                f'y2="{_n(cy)}" stroke="{PREDICTED}" stroke-width="1"/>'
            )
            out.append(
                f'<path class="ldd-point ldd-predicted" d="{_diamond(cx, py, 4.5)}" '
                f'fill="none" stroke="{PREDICTED}" stroke-width="1.6">'
                f"<title>{escape(point.tip)}</title></path>"
            )
        if point.breach:
            out.append(
                f'<rect class="ldd-point ldd-observed ldd-breach" x="{_n(cx - 4.5)}" '
                f'y="{_n(cy - 4.5)}" width="9" height="9" fill="{BREACH}" '
                f'stroke="#ffffff" stroke-width="0.8"><title>{escape(point.tip)}</title></rect>'
            )
        else:
            out.append(
                f'<circle class="ldd-point ldd-observed" cx="{_n(cx)}" cy="{_n(cy)}" r="4" '
                f'fill="{OBSERVED}" stroke="#ffffff" stroke-width="0.8">'
                f"<title>{escape(point.tip)}</title></circle>"
            )
    out.append("</svg>")
    return "\n".join(out)
