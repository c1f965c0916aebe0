"""Calibration statistics: the accumulator, its histogram, the gate and the five states.

The statistics of a metric version are those of its absolute errors
``|predicted - observed|`` on the normalized scale.  An :class:`Accumulator` keeps
them incrementally (running sums, the last ``window`` errors and a dense quantized
histogram for the 95th percentile) together with the store positions it counted
from and up to; the :class:`CalibrationGate` turns the figures into one of the five
states, and a :class:`MetricState` is what the registry stores of a verdict.
"""

from __future__ import annotations

import base64
import math
import operator
import sys
import zlib
from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, Final, Literal, Protocol, final, get_args

from pytest_ldd.errors import InvalidSpecError, StoreCorruptError
from pytest_ldd.model.records import is_number


class Position(Protocol):
    """Where an accumulator counted from or up to in its store's pair log.

    Opaque here, as above the store (:class:`pytest_ldd.store.Cursor` is the store's
    name for it): kept, compared (a later position is greater) and handed back.
    """

    def __lt__(self, other: Any, /) -> bool: ...

    def __le__(self, other: Any, /) -> bool: ...


__all__ = [
    "P95_QUANTUM",
    "STATES",
    "TOLERANCE",
    "Accumulator",
    "CalibrationGate",
    "CalibrationStats",
    "MetricState",
    "Position",
    "StateName",
    "evaluate_state",
]


StateName = Literal[
    "insufficient_data", "catastrophic_outlier", "tail_risk_high", "drifting", "load_bearing"
]

#: The five state names (shared with the reference LDD tool); all but the last are advisory.
STATES: Final[tuple[str, ...]] = get_args(StateName)

#: Gate comparisons are inclusive up to this tolerance (five errors of 0.15 pass).
TOLERANCE: Final = 1e-9

#: Errors are quantized to this step for the 95th percentile (see docs/store.md).
P95_QUANTUM: Final = 1e-4
_BINS: Final = 10_000  # 1 / P95_QUANTUM, as an exact int

# --------------------------------------------------------------------------- gate, stats


@final
@dataclass(frozen=True, slots=True)
class CalibrationStats:
    """Statistics of one metric version's absolute errors ``|predicted - observed|``.

    ``p95_error`` is the nearest-rank 95th percentile of the errors quantized to
    :data:`P95_QUANTUM`.  Every figure but ``n`` is ``None`` when ``n == 0``.
    """

    n: int = 0
    mae: float | None = None
    p95_error: float | None = None
    worst_error: float | None = None
    window_mae: float | None = None

    def to_json(self) -> dict[str, Any]:
        """The figures as a JSON-ready dict."""
        return {
            "n": self.n,
            "mae": self.mae,
            "p95_error": self.p95_error,
            "worst_error": self.worst_error,
            "window_mae": self.window_mae,
        }


def _gate_number(name: str, value: object, *, optional: bool) -> float | None:
    if value is None and optional:
        return None
    if not is_number(value) or not math.isfinite(value) or value < 0:  # type: ignore[arg-type,operator]
        expected = "None or a finite number >= 0" if optional else "a finite number >= 0"
        msg = f"CalibrationGate {name!r} must be {expected} (got {value!r})"
        raise InvalidSpecError(msg)
    return float(value)  # type: ignore[arg-type]


def _gate_count(name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        msg = f"CalibrationGate {name!r} must be an int >= 1 (got {value!r})"
        raise InvalidSpecError(msg)
    return value


@final
@dataclass(frozen=True, slots=True)
class CalibrationGate:
    """When a metric may be trusted: ``n >= min_n`` and every bound met.

    ``max_mae`` bounds both the MAE over all pairs and the MAE of the last
    ``window`` pairs; ``max_p95`` and ``max_worst`` are optional.  Bounds are
    inclusive with a tolerance of 1e-9.
    """

    min_n: int = 5
    max_mae: float = 0.15
    max_p95: float | None = None
    max_worst: float | None = None
    window: int = 10

    def __post_init__(self) -> None:
        object.__setattr__(self, "min_n", _gate_count("min_n", self.min_n))
        object.__setattr__(self, "window", _gate_count("window", self.window))
        object.__setattr__(self, "max_mae", _gate_number("max_mae", self.max_mae, optional=False))
        for name in ("max_p95", "max_worst"):
            object.__setattr__(self, name, _gate_number(name, getattr(self, name), optional=True))

    def verdict(self, stats: CalibrationStats) -> StateName:
        """The state these statistics earn (composites also need their components)."""
        if stats.n < self.min_n or stats.mae is None:
            return "insufficient_data"
        if self.max_worst is not None and _exceeds(stats.worst_error, self.max_worst):
            return "catastrophic_outlier"
        if self.max_p95 is not None and _exceeds(stats.p95_error, self.max_p95):
            return "tail_risk_high"
        if _exceeds(stats.mae, self.max_mae) or _exceeds(stats.window_mae, self.max_mae):
            return "drifting"
        return "load_bearing"

    def passes(self, stats: CalibrationStats) -> bool:
        """Whether ``stats`` earn ``load_bearing``."""
        return self.verdict(stats) == "load_bearing"

    def to_json(self) -> dict[str, Any]:
        """The gate as a JSON-ready dict."""
        return {
            "min_n": self.min_n,
            "max_mae": self.max_mae,
            "max_p95": self.max_p95,
            "max_worst": self.max_worst,
            "window": self.window,
        }


def _exceeds(value: float | None, limit: float) -> bool:
    return value is not None and value > limit + TOLERANCE


# --------------------------------------------------------------------------- states


@final
@dataclass(frozen=True, slots=True)
class MetricState:
    """A metric version's state and the figures it was last evaluated on."""

    name: str
    version: int
    state: StateName = "insufficient_data"
    n: int = 0
    mae: float | None = None
    p95_error: float | None = None
    worst_error: float | None = None
    window_mae: float | None = None
    promoted_at: str | None = None
    demoted_at: str | None = None

    def __post_init__(self) -> None:
        if self.state not in STATES:
            msg = f"MetricState 'state' must be one of {', '.join(STATES)} (got {self.state!r})"
            raise InvalidSpecError(msg)

    @property
    def is_load_bearing(self) -> bool:
        """Whether the metric's gates fail tests (every other state is advisory)."""
        return self.state == "load_bearing"

    @property
    def stats(self) -> CalibrationStats:
        """The figures of this state as :class:`CalibrationStats`."""
        return CalibrationStats(
            self.n, self.mae, self.p95_error, self.worst_error, self.window_mae
        )

    def to_json(self) -> dict[str, Any]:
        """The state object of ``metrics.json`` (the reference tool's keys)."""
        return {
            "metric_name": self.name,
            "version": self.version,
            "state": self.state,
            "is_load_bearing": self.is_load_bearing,
            "promoted_at": self.promoted_at,
            "demoted_at": self.demoted_at,
            "n_calibration_samples": self.n,
            "last_mae": self.mae,
            "last_p95_error": self.p95_error,
            "last_worst_error": self.worst_error,
            "last_window_mae": self.window_mae,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, source: str = "metrics.json") -> MetricState:
        """Read a state object; extra keys are ignored, wrong types raise ValueError."""

        def get(key: str, check: Any, expected: str, default: Any = None) -> Any:
            value = data.get(key, default)
            if not check(value):
                msg = f"{source}: state {key!r} must be {expected} (got {value!r})"
                raise ValueError(msg)
            return value

        def opt_num(v: object) -> bool:
            return v is None or (is_number(v) and math.isfinite(v))  # type: ignore[arg-type]

        def opt_str(v: object) -> bool:
            return v is None or isinstance(v, str)

        state = data.get("state")
        flag = data.get("is_load_bearing", state == "load_bearing")
        if flag is not (state == "load_bearing"):
            msg = (
                f"{source}: state 'is_load_bearing' must be {state == 'load_bearing'} "
                f"for state {state!r} (got {flag!r})"
            )
            raise ValueError(msg)
        return cls(
            name=get("metric_name", lambda v: isinstance(v, str), "a str"),
            version=get("version", lambda v: _is_count(v) and v >= 1, "an int >= 1"),
            state=get("state", lambda v: v in STATES, f"one of {', '.join(STATES)}"),
            n=get("n_calibration_samples", _is_count, "an int >= 0", 0),
            mae=get("last_mae", opt_num, "a number or null"),
            p95_error=get("last_p95_error", opt_num, "a number or null"),
            worst_error=get("last_worst_error", opt_num, "a number or null"),
            window_mae=get("last_window_mae", opt_num, "a number or null"),
            promoted_at=get("promoted_at", opt_str, "a timestamp or null"),
            demoted_at=get("demoted_at", opt_str, "a timestamp or null"),
        )


def evaluate_state(
    before: MetricState,
    stats: CalibrationStats,
    gate: CalibrationGate,
    *,
    components_load_bearing: bool = True,
    now: str | None = None,
) -> MetricState:
    """The state ``stats`` earn under ``gate``, moving on from ``before``.

    A composite is load-bearing only when every component is
    (``components_load_bearing``) and its own pairs pass the gate.  A promotion
    dates ``promoted_at`` (and clears ``demoted_at``), a demotion dates
    ``demoted_at``, both ``now``.  The one rule every state is evaluated by: the
    calibrator's, the registry's before a write, ``ldd metric verify``'s.
    """
    verdict = gate.verdict(stats)
    if verdict == "load_bearing" and not components_load_bearing:
        # Its own pairs pass, but a component is still advisory.
        verdict = "insufficient_data"
    promoted_at, demoted_at = before.promoted_at, before.demoted_at
    if verdict == "load_bearing" and not before.is_load_bearing:
        promoted_at, demoted_at = now, None
    elif verdict != "load_bearing" and before.is_load_bearing:
        demoted_at = now
    return MetricState(
        name=before.name,
        version=before.version,
        state=verdict,
        n=stats.n,
        mae=stats.mae,
        p95_error=stats.p95_error,
        worst_error=stats.worst_error,
        window_mae=stats.window_mae,
        promoted_at=promoted_at,
        demoted_at=demoted_at,
    )


# --------------------------------------------------------------------------- accumulator


def _quantize(error: float) -> int:
    # Round half up on the 1e-4 grid; errors lie in [0, 1], so bins are 0..10000.
    return min(_BINS, max(0, math.floor(error * _BINS + 0.5)))


@dataclass(slots=True)
class Accumulator:
    """Running statistics of one metric version's pairs, from ``start`` up to ``cursor``.

    ``start`` and ``cursor`` are positions the store handed out (see
    :class:`pytest_ldd.store.Cursor`): kept, compared and handed back, never read.
    """

    version: int
    start: Position
    cursor: Position
    keep: int = 10
    n: int = 0
    sum_abs: float = 0.0
    worst: float | None = None
    #: Counts per 1e-4 bin of error, dense (10,001 bins): O(1) to update, and its
    #: stored form costs the same whatever the history.
    histogram: array[int] = field(default_factory=lambda: _empty_histogram())
    recent: deque[float] = field(default_factory=deque)
    #: The stored form of ``histogram`` while it is unchanged since read or packed:
    #: a write of ``metrics.json`` re-packs only the histograms that changed.
    packed: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.recent = deque(self.recent, maxlen=self.keep)

    def add(self, error: float) -> None:
        """Count one error (the slow twin of :meth:`add_many`)."""
        self.add_many((error,))

    def add_many(self, errors: Sequence[float]) -> None:
        """Count each of ``errors``, in order (one loop, with local names)."""
        if not errors:
            return
        self.packed = None
        histogram = self.histogram
        total, worst = self.sum_abs, self.worst
        for error in errors:
            total += error
            if worst is None or error > worst:
                worst = error
            histogram[_quantize(error)] += 1
        self.n += len(errors)
        self.sum_abs, self.worst = total, worst
        self.recent.extend(errors)

    def widen(self, keep: int) -> None:
        """Keep at least the last ``keep`` errors from now on."""
        if keep > self.keep:
            self.keep = keep
            self.recent = deque(self.recent, maxlen=keep)

    def p95(self) -> float | None:
        """The nearest-rank 95th percentile of the quantized errors (None if n == 0)."""
        if self.n == 0:
            return None
        rank = (95 * self.n + 99) // 100  # ceil(0.95 n) in exact integer arithmetic
        # The first bin whose cumulative count reaches the rank (C-speed scans).
        q = bisect_left(list(accumulate(self.histogram)), rank)
        if q > _BINS:  # pragma: no cover - counts always add up to n
            raise AssertionError("histogram counts do not add up to n")
        return q / _BINS

    def stats(self, window: int) -> CalibrationStats:
        """The figures, ``window_mae`` over the last ``window`` errors."""
        if self.n == 0:
            return CalibrationStats()
        tail = list(self.recent)[-window:]
        return CalibrationStats(
            n=self.n,
            mae=self.sum_abs / self.n,
            p95_error=self.p95(),
            worst_error=self.worst,
            window_mae=sum(tail) / len(tail),
        )

    def to_json(self, position: Mapping[str, Any]) -> dict[str, Any]:
        """The ``calibration`` object of a stored state; ``position`` is the store's form
        of ``start`` and ``cursor`` (see :meth:`pytest_ldd.store.Store.position_json`)."""
        return {
            "version": self.version,
            **position,
            "n": self.n,
            "sum_abs_error": self.sum_abs,
            "worst_error": self.worst,
            "histogram": {"dense": self._packed()},
            "recent_errors": list(self.recent),
            "recent_keep": self.keep,
        }

    def _packed(self) -> str:
        if self.packed is None:
            self.packed = _pack_histogram(self.histogram)["dense"]
        return self.packed

    @classmethod
    def from_json(
        cls,
        data: object,
        source: str,
        position: Callable[[Mapping[str, Any]], tuple[Position, Position]],
    ) -> Accumulator:
        """Read :meth:`to_json`'s form; ``position`` reads the store's ``(start, cursor)``.

        Anything malformed or inconsistent is a :class:`StoreCorruptError`.
        """

        def bad(what: str, got: object) -> StoreCorruptError:
            shown = repr(got)
            shown = shown if len(shown) <= 200 else shown[:197] + "..."
            msg = f"{source}: calibration state {what} (got {shown}); the file was left untouched"
            return StoreCorruptError(msg, path=source)

        if not isinstance(data, Mapping):
            raise bad("must be an object", data)
        for key in ("version", "n", "recent_keep"):
            value = data.get(key)
            low = 0 if key == "n" else 1
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise bad(f"{key!r} must be an int >= {low}", value)
        n = data["n"]
        total = data.get("sum_abs_error")
        if not _is_error_sum(total, n):
            raise bad(f"'sum_abs_error' must be a finite number in [0, n] (n = {n})", total)
        worst = data.get("worst_error")
        if n == 0 and worst is not None:
            raise bad("'worst_error' must be null when n = 0", worst)
        if n > 0 and not _is_error(worst):
            raise bad("'worst_error' must be an error in [0, 1]", worst)
        recent = data.get("recent_errors")
        if not isinstance(recent, list) or not all(_is_error(e) for e in recent):
            raise bad("'recent_errors' must be a list of errors in [0, 1]", recent)
        if len(recent) != min(n, data["recent_keep"]):
            raise bad(
                f"'recent_errors' must hold min(n, recent_keep) = "
                f"{min(n, data['recent_keep'])} errors",
                len(recent),
            )
        try:
            start, cursor = position(data)
            acc = cls(
                version=data["version"],
                start=start,
                cursor=cursor,
                keep=data["recent_keep"],
                n=n,
                sum_abs=float(total),  # type: ignore[arg-type]
                worst=None if worst is None else float(worst),
                histogram=_unpack_histogram(data["histogram"]),
                recent=deque(float(e) for e in recent),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise bad(f"is malformed ({err!r})", data) from err
        problem = acc.inconsistency()
        if problem is not None:
            msg = (
                f"{source}: calibration state is inconsistent: {problem}; "
                f"the file was left untouched"
            )
            raise StoreCorruptError(msg, path=source)
        stored = data["histogram"]
        if isinstance(stored, Mapping) and set(stored) == {"dense"}:
            acc.packed = str(stored["dense"])
        return acc

    def inconsistency(self) -> str | None:
        """What in these figures cannot come from any sequence of errors (None: nothing).

        The histogram must count ``n`` errors; the sum, the largest error and the
        recent errors must fall in the bins it counts (each error lies within half a
        quantum of its bin's centre).
        """
        n = self.n
        # Every store read checks this (``ldd metric status`` too): the bins past the
        # largest counted one are all zero, so only the bins up to it are summed, and
        # that bin is found by the bytes, not by a loop over 10,001 bins.
        size = self.histogram.itemsize
        top = (len(self.histogram.tobytes().rstrip(b"\0")) + size - 1) // size - 1
        histogram = self.histogram[: top + 1]
        counted = sum(histogram)
        if counted != n:
            return f"the histogram counts {counted} errors, 'n' is {n}"
        if n == 0:
            return None if self.sum_abs == 0.0 else f"'sum_abs_error' {self.sum_abs!r} with n = 0"
        weighted = sum(map(operator.mul, histogram, range(top + 1)))
        # Each error e in bin q satisfies (q - 0.5) / BINS <= e < (q + 0.5) / BINS.
        slack = n * (0.5 + 1e-6) / _BINS + TOLERANCE
        centre = weighted / _BINS
        if not centre - slack <= self.sum_abs <= centre + slack:
            return (
                f"'sum_abs_error' {self.sum_abs!r} does not match the histogram "
                f"(expected {centre:.6g} +- {slack:.2g})"
            )
        if self.worst is None or _quantize(self.worst) != top:
            return f"'worst_error' {self.worst!r} is not in the histogram's largest bin ({top})"
        for error in self.recent:
            if not self.histogram[_quantize(error)]:
                return f"recent error {error!r} is not counted in the histogram"
            if error > self.worst + TOLERANCE:
                return f"recent error {error!r} exceeds 'worst_error' {self.worst!r}"
        if sum(self.recent) > self.sum_abs + slack:
            return f"the recent errors add up to more than 'sum_abs_error' {self.sum_abs!r}"
        return None


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_error(value: object) -> bool:
    return is_number(value) and 0.0 <= value <= 1.0  # type: ignore[operator]


def _is_error_sum(value: object, n: int) -> bool:
    return (
        is_number(value)
        and math.isfinite(value)  # type: ignore[arg-type]
        and 0.0 <= value <= n + TOLERANCE  # type: ignore[operator]
    )


def _unpacked(typecode: str, text: str) -> array[int]:
    values = array(typecode)
    values.frombytes(base64.b64decode(text.encode("ascii"), validate=True))
    if sys.byteorder == "big":
        values.byteswap()
    return values


def _empty_histogram() -> array[int]:
    return array("I", bytes(4 * (_BINS + 1)))


def _pack_histogram(histogram: array[int]) -> dict[str, str]:
    """The dense histogram as base64 of its zlib-compressed little-endian uint32 counts.

    The same 10,001 counts whatever the history (mostly zeros, so a few hundred
    bytes compressed): writing and reading it costs the same at ten thousand pairs
    as at a million.
    """
    return {"dense": _packed_bytes(histogram)}


def _packed_bytes(values: array[int]) -> str:
    if sys.byteorder == "big":  # the stored form is little-endian everywhere
        values = array(values.typecode, values)
        values.byteswap()
    return base64.b64encode(zlib.compress(values.tobytes(), 1)).decode("ascii")


def _unpack_histogram(data: Any) -> array[int]:
    """Read :func:`_pack_histogram`'s form, or the older sparse ones.

    Older ``metrics.json`` files hold ``{"bins": ..., "counts": ...}`` (base64
    uint16 bins and uint32 counts) or a plain ``{"<bin>": count}`` object.
    """
    histogram = _empty_histogram()
    if isinstance(data, Mapping) and set(data) == {"dense"}:
        size = 4 * (_BINS + 1)
        packed = base64.b64decode(str(data["dense"]).encode("ascii"), validate=True)
        try:
            # Bounded: a hostile file cannot inflate past one histogram.
            raw = zlib.decompressobj().decompress(packed, size + 1)
        except zlib.error as err:
            msg = f"dense histogram does not decompress ({err})"
            raise ValueError(msg) from None
        if len(raw) != size:
            msg = f"dense histogram holds {len(raw)} bytes (expected {4 * (_BINS + 1)})"
            raise ValueError(msg)
        histogram = array("I")
        histogram.frombytes(raw)
        if sys.byteorder == "big":
            histogram.byteswap()
        return histogram
    if isinstance(data, Mapping) and set(data) == {"bins", "counts"}:
        bins = _unpacked("H", data["bins"])
        counts = _unpacked("I", data["counts"])
        if len(bins) != len(counts):
            msg = f"histogram has {len(bins)} bins for {len(counts)} counts"
            raise ValueError(msg)
        pairs: Iterable[tuple[int, int]] = zip(bins, counts, strict=True)
    else:
        pairs = ((int(q), c) for q, c in data.items())
    for q, count in pairs:
        if not isinstance(count, int) or count < 1 or not 0 <= q <= _BINS:
            msg = f"histogram bin {q!r} has count {count!r}"
            raise ValueError(msg)
        histogram[q] += count
    return histogram
