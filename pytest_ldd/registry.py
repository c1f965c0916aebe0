"""The metric registry, the calibration gate, metric states and the calibrator.

A metric is registered *advisory* (state ``insufficient_data``).  Every run logs
``(predicted, observed)`` pairs for it to ``.ldd/metric_calibrations.jsonl``; the
:class:`Calibrator` keeps per-metric statistics of the absolute errors and moves
the metric between the five states by the :class:`CalibrationGate`.

Statistics are incremental: ``metrics.json`` keeps, per metric, the position in
the calibration log up to which pairs were counted, the running sums, the last
``window`` errors and a quantized histogram for the 95th percentile.  Updating
reads only the lines appended since; a full recompute (``Calibrator.recompute``,
``ldd metric verify``) always agrees with the incremental figures.
"""

from __future__ import annotations

import base64
import math
import os
import re
import sys
import time
import zlib
from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from numbers import Real
from typing import Any, Final, Literal, final, get_args

from pytest_ldd.errors import (
    CompositionError,
    InvalidObservationError,
    InvalidSpecError,
    LddError,
    StoreCorruptError,
    UnknownMetricError,
    VersionConflictError,
)
from pytest_ldd.metric import Metric, MetricSpec, metric_from_spec
from pytest_ldd.store import _ENCODE_LINE, SCHEMA_VERSION, Cursor, TraceStore

__all__ = [
    "P95_QUANTUM",
    "STATES",
    "TOLERANCE",
    "CalibrationGate",
    "CalibrationRecord",
    "CalibrationStats",
    "Calibrator",
    "MetricRegistry",
    "MetricState",
    "ObservationRecord",
    "StateName",
    "utc_timestamp",
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

_TIMESTAMP_RE: Final = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")


_LAST_STAMP: list[Any] = [None, ""]


def utc_timestamp(when: float | None = None) -> str:
    """``when`` (default: now) as a UTC ``YYYY-MM-DDTHH:MM:SSZ`` string."""
    second = int(time.time() if when is None else when)
    # Thousands of records share a second in a busy session: format each second once.
    if _LAST_STAMP[0] != second:
        _LAST_STAMP[:] = [second, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))]
    return str(_LAST_STAMP[1])


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _unit(value: object) -> bool:
    return _is_number(value) and 0.0 <= value <= 1.0  # type: ignore[operator]


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
    if not _is_number(value) or not math.isfinite(value) or value < 0:  # type: ignore[arg-type,operator]
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
            return v is None or (_is_number(v) and math.isfinite(v))  # type: ignore[arg-type]

        def opt_str(v: object) -> bool:
            return v is None or isinstance(v, str)

        return cls(
            name=get("metric_name", lambda v: isinstance(v, str), "a str"),
            version=get("version", lambda v: isinstance(v, int) and v >= 1, "an int >= 1"),
            state=get("state", lambda v: v in STATES, f"one of {', '.join(STATES)}"),
            n=get("n_calibration_samples", lambda v: isinstance(v, int) and v >= 0, "int", 0),
            mae=get("last_mae", opt_num, "a number or null"),
            p95_error=get("last_p95_error", opt_num, "a number or null"),
            worst_error=get("last_worst_error", opt_num, "a number or null"),
            window_mae=get("last_window_mae", opt_num, "a number or null"),
            promoted_at=get("promoted_at", opt_str, "a timestamp or null"),
            demoted_at=get("demoted_at", opt_str, "a timestamp or null"),
        )


# --------------------------------------------------------------------------- records


def _json_raw(value: Any) -> Any:
    """A raw value as JSON can hold it: pairs become lists, infinities strings.

    Always plain built-in types (a ``numpy.float64`` becomes a ``float``): lines
    also travel between processes (xdist), whose serializer takes nothing else.
    """
    kind = type(value)
    if kind is float:
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if kind is int or kind is str or value is None:
        return value
    if isinstance(value, (tuple, list)):
        return [_json_raw(item) for item in value]
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, Real):
        return _json_raw(float(value))
    return value


def line_head(name: str, version: int) -> str:
    """The start of a log line of ``name`` version ``version``: ``{"metric_name":..``."""
    return f'{{"metric_name":{_ENCODE_LINE(name)},"metric_version":{int(version)}'


def line_tail(session_id: str | None, nodeid: str | None) -> str:
    """The end of a log line: ``,"session_id":..,"nodeid":..}``."""
    return f',"session_id":{_ENCODE_LINE(session_id)},"nodeid":{_ENCODE_LINE(nodeid)}}}'


def observation_text(head: str, raw: str, normalized: str, stamp: str, tail: str) -> str:
    """A line of ``observations.jsonl`` as JSON text: :meth:`Calibrator.observation_line`
    encoded, without building the dict (the plugin writes one per observed value).

    ``head`` and ``tail`` come from :func:`line_head` and :func:`line_tail`,
    ``stamp`` from :func:`utc_timestamp`; ``raw`` is :func:`raw_text` of the raw
    value and ``normalized`` :func:`number_text` of the metric's normalized value.
    """
    return f'{head},"raw":{raw},"normalized":{normalized},"timestamp":"{stamp}"{tail}'


def pair_text(
    head: str,
    predicted: str,
    observed: str,
    raw_predicted: str,
    raw_observed: str,
    stamp: str,
    tail: str,
) -> str:
    """A line of ``metric_calibrations.jsonl`` as JSON text (see :func:`observation_text`)."""
    return (
        f'{head},"predicted":{predicted},"observed":{observed},"timestamp":"{stamp}",'
        f'"raw_predicted":{raw_predicted},"raw_observed":{raw_observed}{tail}'
    )


#: A normalized value (a finite float) as JSON text, as the log encoder writes it.
number_text: Final = float.__repr__


def raw_text(value: Any) -> str:
    """``_json_raw(value)`` as JSON text, as the log encoder writes it."""
    kind = type(value)
    if kind is float and math.isfinite(value):
        return float.__repr__(value)
    if kind is int:
        return int.__repr__(value)
    try:
        return _ENCODE_LINE(_json_raw(value))
    except (TypeError, ValueError) as err:
        msg = f"raw value {value!r} cannot be stored as JSON ({err})"
        raise InvalidObservationError(msg) from err


def _check_text(owner: str, name: str, value: object, *, optional: bool) -> None:
    if (value is None and optional) or isinstance(value, str):
        return
    expected = "a str or None" if optional else "a str"
    msg = f"{owner} {name!r} must be {expected} (got {value!r})"
    raise InvalidObservationError(msg)


def _check_identity(owner: str, metric_name: object, metric_version: object) -> None:
    if not isinstance(metric_name, str) or not metric_name:
        msg = f"{owner} 'metric_name' must be a non-empty str (got {metric_name!r})"
        raise InvalidObservationError(msg)
    if (
        not isinstance(metric_version, int)
        or isinstance(metric_version, bool)
        or metric_version < 1
    ):
        msg = f"{owner} 'metric_version' must be an int >= 1 (got {metric_version!r})"
        raise InvalidObservationError(msg)


def _check_unit(owner: str, name: str, value: object) -> float:
    if not _is_number(value) or not 0.0 <= value <= 1.0:  # type: ignore[operator]
        msg = f"{owner} {name!r} must be a normalized number in [0, 1] (got {value!r})"
        raise InvalidObservationError(msg)
    return float(value)  # type: ignore[arg-type]


def _check_timestamp(owner: str, value: object) -> None:
    if value is not None and not (isinstance(value, str) and _TIMESTAMP_RE.fullmatch(value)):
        msg = f"{owner} 'timestamp' must be UTC 'YYYY-MM-DDTHH:MM:SSZ' or None (got {value!r})"
        raise InvalidObservationError(msg)


def _record_keys(
    data: Mapping[str, Any], owner: str, required: Sequence[str], source: str
) -> None:
    if not isinstance(data, Mapping):  # type: ignore[redundant-expr,unused-ignore]
        msg = f"{source}: a {owner} must be a JSON object (got {data!r})"  # type: ignore[unreachable,unused-ignore]
        raise InvalidObservationError(msg)
    missing = [key for key in required if key not in data]
    if missing:
        msg = f"{source}: {owner} is missing key(s) {missing} (got {sorted(data)})"
        raise InvalidObservationError(msg)


@final
@dataclass(frozen=True, slots=True)
class CalibrationRecord:
    """One line of ``metric_calibrations.jsonl``: a normalized (predicted, observed) pair.

    ``raw_predicted`` / ``raw_observed`` hold what the caller passed, in JSON form
    (a ``(failing, total)`` pair as a list, an infinity as ``"inf"``).
    """

    metric_name: str
    metric_version: int
    predicted: float
    observed: float
    timestamp: str | None = None
    raw_predicted: Any = None
    raw_observed: Any = None
    session_id: str | None = None
    nodeid: str | None = None

    def __post_init__(self) -> None:
        owner = "CalibrationRecord"
        _check_identity(owner, self.metric_name, self.metric_version)
        object.__setattr__(self, "predicted", _check_unit(owner, "predicted", self.predicted))
        object.__setattr__(self, "observed", _check_unit(owner, "observed", self.observed))
        _check_timestamp(owner, self.timestamp)
        _check_text(owner, "session_id", self.session_id, optional=True)
        _check_text(owner, "nodeid", self.nodeid, optional=True)

    @property
    def error(self) -> float:
        """``|predicted - observed|`` on the normalized scale."""
        return abs(self.predicted - self.observed)

    def to_json(self) -> dict[str, Any]:
        """The JSONL line as a dict (the reference tool's keys)."""
        return {
            "metric_name": self.metric_name,
            "metric_version": self.metric_version,
            "predicted": self.predicted,
            "observed": self.observed,
            "timestamp": self.timestamp,
            "raw_predicted": self.raw_predicted,
            "raw_observed": self.raw_observed,
            "session_id": self.session_id,
            "nodeid": self.nodeid,
        }

    @classmethod
    def from_json(
        cls, data: Mapping[str, Any], *, source: str = "metric_calibrations.jsonl"
    ) -> CalibrationRecord:
        """Read one line's dict; missing keys or invalid values raise InvalidObservationError.

        The optional keys (``timestamp``, ``raw_*``, ``session_id``, ``nodeid``)
        default to ``None``; unknown keys are ignored (other tools may add some).
        """
        required = ("metric_name", "metric_version", "predicted", "observed")
        _record_keys(data, "calibration record", required, source)
        try:
            return cls(
                metric_name=data["metric_name"],
                metric_version=data["metric_version"],
                predicted=data["predicted"],
                observed=data["observed"],
                timestamp=data.get("timestamp"),
                raw_predicted=data.get("raw_predicted"),
                raw_observed=data.get("raw_observed"),
                session_id=data.get("session_id"),
                nodeid=data.get("nodeid"),
            )
        except InvalidObservationError as err:
            raise InvalidObservationError(f"{source}: {err}") from err


@final
@dataclass(frozen=True, slots=True)
class ObservationRecord:
    """One line of ``observations.jsonl``: a raw observed value and its normalization."""

    metric_name: str
    metric_version: int
    raw: Any
    normalized: float
    timestamp: str | None = None
    session_id: str | None = None
    nodeid: str | None = None

    def __post_init__(self) -> None:
        owner = "ObservationRecord"
        _check_identity(owner, self.metric_name, self.metric_version)
        object.__setattr__(self, "normalized", _check_unit(owner, "normalized", self.normalized))
        _check_timestamp(owner, self.timestamp)
        _check_text(owner, "session_id", self.session_id, optional=True)
        _check_text(owner, "nodeid", self.nodeid, optional=True)

    def to_json(self) -> dict[str, Any]:
        """The JSONL line as a dict."""
        return {
            "metric_name": self.metric_name,
            "metric_version": self.metric_version,
            "raw": self.raw,
            "normalized": self.normalized,
            "timestamp": self.timestamp,
            "session_id": self.session_id,
            "nodeid": self.nodeid,
        }

    @classmethod
    def from_json(
        cls, data: Mapping[str, Any], *, source: str = "observations.jsonl"
    ) -> ObservationRecord:
        """Read one line's dict; missing keys or invalid values raise InvalidObservationError."""
        required = ("metric_name", "metric_version", "raw", "normalized")
        _record_keys(data, "observation record", required, source)
        try:
            return cls(
                metric_name=data["metric_name"],
                metric_version=data["metric_version"],
                raw=data["raw"],
                normalized=data["normalized"],
                timestamp=data.get("timestamp"),
                session_id=data.get("session_id"),
                nodeid=data.get("nodeid"),
            )
        except InvalidObservationError as err:
            raise InvalidObservationError(f"{source}: {err}") from err


def _check_pair_line(record: dict[str, Any]) -> None:
    """Validate a calibration log line enough to count it (see ``TraceStore.iter_jsonl``)."""
    name, version = record["metric_name"], record["metric_version"]
    if not isinstance(name, str):
        msg = f"'metric_name' must be a str (got {name!r})"
        raise ValueError(msg)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        msg = f"'metric_version' must be an int >= 1 (got {version!r})"
        raise ValueError(msg)
    for key in ("predicted", "observed"):
        if not _unit(record[key]):
            msg = f"{key!r} must be a normalized number in [0, 1] (got {record[key]!r})"
            raise ValueError(msg)


# --------------------------------------------------------------------------- accumulator


def _quantize(error: float) -> int:
    # Round half up on the 1e-4 grid; errors lie in [0, 1], so bins are 0..10000.
    return min(_BINS, max(0, math.floor(error * _BINS + 0.5)))


@dataclass(slots=True)
class _Accumulator:
    """Running statistics of one metric version, from ``start`` up to ``cursor``."""

    version: int
    start: Cursor
    cursor: Cursor
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
        if keep > self.keep:
            self.keep = keep
            self.recent = deque(self.recent, maxlen=keep)

    def p95(self) -> float | None:
        if self.n == 0:
            return None
        rank = (95 * self.n + 99) // 100  # ceil(0.95 n) in exact integer arithmetic
        # The first bin whose cumulative count reaches the rank (C-speed scans).
        q = bisect_left(list(accumulate(self.histogram)), rank)
        if q > _BINS:  # pragma: no cover - counts always add up to n
            raise AssertionError("histogram counts do not add up to n")
        return q / _BINS

    def stats(self, window: int) -> CalibrationStats:
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

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "start": self.start.to_json(),
            "log_offset": self.cursor.offset,
            "log_line": self.cursor.line,
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
    def from_json(cls, data: object, source: str) -> _Accumulator:
        def bad(what: str, got: object) -> StoreCorruptError:
            msg = f"{source}: calibration state {what} (got {got!r}); the file was left untouched"
            return StoreCorruptError(msg, path=source)

        if not isinstance(data, Mapping):
            raise bad("must be an object", data)
        try:
            start = data["start"]
            acc = cls(
                version=data["version"],
                start=Cursor(start["offset"], start["line"]),
                cursor=Cursor(data["log_offset"], data["log_line"]),
                keep=data["recent_keep"],
                n=data["n"],
                sum_abs=float(data["sum_abs_error"]),
                worst=None if data["worst_error"] is None else float(data["worst_error"]),
                histogram=_unpack_histogram(data["histogram"]),
                recent=deque(float(e) for e in data["recent_errors"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise bad(f"is malformed ({err!r})", data) from err
        if (
            not isinstance(acc.n, int)
            or not isinstance(acc.keep, int)
            or acc.keep < 1
            or acc.n < 0
            or sum(acc.histogram) != acc.n
            or len(acc.recent) > min(acc.n, acc.keep)
        ):
            raise bad("has inconsistent counts", data)
        stored = data["histogram"]
        if isinstance(stored, Mapping) and set(stored) == {"dense"}:
            acc.packed = str(stored["dense"])
        return acc


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


# --------------------------------------------------------------------------- registry


@dataclass(slots=True)
class _Entry:
    """What the registry knows of one metric name."""

    metric: Metric
    state: MetricState
    acc: _Accumulator
    history: dict[str, list[float]] = field(default_factory=dict)
    # False for a spec known only in memory (a read-only registry's registrations).
    persisted: bool = True

    @property
    def spec(self) -> MetricSpec:
        return self.metric.spec


def _read_only_error(store: TraceStore) -> LddError:
    msg = (
        f"the registry of {store.ldd_dir} was opened read_only=True: nothing may be "
        f"written to it (open it with read_only=False to record)"
    )
    return LddError(msg)


class MetricRegistry:
    """Every metric of a project: specs, states, calibration statistics, history.

    The registry reads ``metrics.json`` when it is created, so a metric registered
    in an earlier process needs no re-registration.  ``gate`` is the default
    :class:`CalibrationGate`, ``gates`` per-metric overrides.  With
    ``read_only=True`` nothing is ever written: registrations are still validated
    against the store but kept in memory.
    """

    def __init__(
        self,
        store: TraceStore,
        *,
        gate: CalibrationGate | None = None,
        gates: Mapping[str, CalibrationGate] | None = None,
        read_only: bool = False,
    ) -> None:
        self.store = store
        self.read_only = read_only
        self.gate = gate if gate is not None else CalibrationGate()
        self._gates: dict[str, CalibrationGate] = dict(gates or {})
        self._entries: dict[str, _Entry] = {}
        # The bytes last read or written: reload() parses again only when they differ.
        self._seen = self.store.read_metrics_bytes()
        self._entries = self._parse(self._decode(self._seen))

    def __repr__(self) -> str:
        mode = ", read_only=True" if self.read_only else ""
        return f"MetricRegistry({self.store!r}{mode})"

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    # ------------------------------------------------------------------ lookups

    def _entry(self, name: str) -> _Entry:
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(self._entries) or "none"
            msg = f"unknown metric {name!r}: register it first (registered: {known})"
            raise UnknownMetricError(msg, name=name) from None

    def names(self) -> list[str]:
        """The registered metric names, in registration order."""
        return list(self._entries)

    def get(self, name: str) -> Metric:
        """The metric object (rebuilt with the identity accessor when read from disk)."""
        return self._entry(name).metric

    def spec(self, name: str) -> MetricSpec:
        """The registered spec."""
        return self._entry(name).spec

    def state(self, name: str) -> MetricState:
        """The state as last evaluated (and stored)."""
        return self._entry(name).state

    def states(self) -> dict[str, MetricState]:
        """Every metric's state, in registration order."""
        return {name: entry.state for name, entry in self._entries.items()}

    def is_load_bearing(self, name: str) -> bool:
        """Whether the metric's gates fail tests."""
        return self._entry(name).state.is_load_bearing

    def gate_for(self, name: str) -> CalibrationGate:
        """The calibration gate of ``name`` (its own, else the registry's default)."""
        return self._gates.get(name, self.gate)

    def set_gate(self, name: str, gate: CalibrationGate) -> None:
        """Give ``name`` its own calibration gate (in memory; gates come from config)."""
        self._gates[name] = gate

    def history(self, name: str, key: str) -> list[float]:
        """The last values recorded for ``(name, key)`` (oldest first; empty if none)."""
        return list(self._entry(name).history.get(key, ()))

    # ------------------------------------------------------------------ registration

    def _as_metric(self, metric: Metric | MetricSpec) -> Metric:
        if isinstance(metric, Metric):
            return metric
        if isinstance(metric, MetricSpec):
            if metric.components is None:
                return metric_from_spec(metric)
            components = {
                name: self._entries[name].metric
                for name, _ in metric.components
                if name in self._entries
            }
            return metric_from_spec(metric, components)
        msg = f"register() expects a Metric or a MetricSpec (got {metric!r})"  # type: ignore[unreachable]
        raise InvalidSpecError(msg)

    def register(self, metric: Metric | MetricSpec) -> Metric:
        """Register a metric (or a spec); return the registered metric object.

        A new name starts advisory (``insufficient_data``).  Re-registering an
        identical spec is a no-op; the same version with a different spec, or a
        lower version, is a :class:`VersionConflictError`; a higher version
        replaces the spec and starts its statistics afresh.  A composite needs its
        components registered first (:class:`CompositionError`).
        """
        return self.register_many([metric])[0]

    def register_many(self, metrics: Iterable[Metric | MetricSpec]) -> list[Metric]:
        """Register several metrics with one lock and at most one write."""
        batch = list(metrics)
        # Validate against what is already known before touching the disk, so an
        # invalid registration leaves the store exactly as it was.
        trial = {name: _copy_entry(e) for name, e in self._entries.items()}
        if all(self._is_known(m) for m in batch):
            return [self._register_into(self._entries, self._as_metric(m))[0] for m in batch]
        for m in batch:
            self._register_into(trial, self._as_metric(m))
        if self.read_only:
            for m in batch:
                self._register_into(self._entries, self._as_metric(m))
            return [self._entries[m.name].metric for m in batch]
        with self.store.lock():
            self.reload()
            changed = False
            for m in batch:
                changed |= self._register_into(self._entries, self._as_metric(m))[1]
            if changed:
                self._write_locked()
        return [self._entries[m.name].metric for m in batch]

    def _is_known(self, metric: Metric | MetricSpec) -> bool:
        spec = metric.spec if isinstance(metric, Metric) else metric
        entry = self._entries.get(spec.name) if isinstance(spec, MetricSpec) else None
        return entry is not None and entry.spec == spec and (self.read_only or entry.persisted)

    def _register_into(self, entries: dict[str, _Entry], metric: Metric) -> tuple[Metric, bool]:
        """Apply one registration to ``entries``; return the metric and whether it changed."""
        spec = metric.spec
        if spec.components is not None:
            self._check_components(entries, metric)
        existing = entries.get(spec.name)
        if existing is not None:
            old = existing.spec
            if spec.version == old.version:
                diff = old.difference(spec)
                if diff is None:
                    # Keep the caller's object: it carries the accessor.
                    existing.metric = metric
                    return metric, False
                msg = (
                    f"metric {spec.name!r} version {spec.version} is already registered with "
                    f"a different {diff!r} ({getattr(old, diff)!r} != {getattr(spec, diff)!r}): "
                    f"bump 'version' to change it"
                )
                raise VersionConflictError(msg)
            if spec.version < old.version:
                msg = (
                    f"metric {spec.name!r} version {spec.version} is lower than the registered "
                    f"version {old.version}: versions only go up (use version > {old.version} "
                    f"for a change)"
                )
                raise VersionConflictError(msg)
        start = _frontier(entries)
        entries[spec.name] = _Entry(
            metric=metric,
            state=MetricState(spec.name, spec.version),
            acc=_Accumulator(spec.version, start, start, keep=self.gate_for(spec.name).window),
            persisted=not self.read_only,
        )
        if existing is not None:
            self._rebuild_dependents(entries, spec.name)
        return metric, True

    def _check_components(self, entries: Mapping[str, _Entry], metric: Metric) -> None:
        spec = metric.spec
        assert spec.components is not None
        missing = [name for name, _ in spec.components if name not in entries]
        if missing:
            msg = (
                f"composite metric {spec.name!r} needs its components registered first: "
                f"missing {missing} (registered: {sorted(entries)})"
            )
            raise CompositionError(msg)
        for component, _ in getattr(metric, "components", ()):
            registered = entries[component.name].spec
            diff = registered.difference(component.spec)
            if diff is not None:
                msg = (
                    f"composite metric {spec.name!r} component {component.name!r} differs from "
                    f"the registered spec in {diff!r} ({getattr(registered, diff)!r} != "
                    f"{getattr(component.spec, diff)!r}): register the component first"
                )
                raise CompositionError(msg)

    def _rebuild_dependents(self, entries: dict[str, _Entry], changed: str) -> None:
        # A composite holds its component objects; after a component's version bump
        # it must compute from the new one.
        for entry in entries.values():
            comps = entry.spec.components
            if comps is not None and any(name == changed for name, _ in comps):
                entry.metric = metric_from_spec(
                    entry.spec, {name: entries[name].metric for name, _ in comps}
                )

    # ------------------------------------------------------------------ disk

    def reload(self) -> None:
        """Re-read ``metrics.json`` (keeping memory-only specs and newer in-memory figures).

        A file whose bytes are those this registry last read or wrote is not parsed
        again (bytes, not timestamps: coarse file-system clocks cannot fool it).
        """
        raw = self.store.read_metrics_bytes()
        if raw is not None and raw == self._seen:
            return
        self._merge(self._parse(self._decode(raw)))
        self._seen = raw

    def _decode(self, raw: bytes | None) -> dict[str, Any] | None:
        return None if raw is None else self.store.parse_metrics(raw)

    def _merge(self, fresh: dict[str, _Entry]) -> None:
        for name, old in self._entries.items():
            new = fresh.get(name)
            if new is None:
                # Known here but not on disk: a read-only registration, or a
                # metrics.json that was removed; the next write stores it again.
                old.persisted = False
                fresh[name] = old
                continue
            if new.spec == old.spec:
                new.metric = old.metric
                if (
                    old.acc.version == new.acc.version
                    and old.acc.start == new.acc.start
                    and old.acc.cursor.offset > new.acc.cursor.offset
                ):
                    new.acc = old.acc
        # Composites must point at the component objects that were kept.
        for entry in fresh.values():
            comps = entry.spec.components
            current = getattr(entry.metric, "components", ())
            if comps is not None and any(m is not fresh[m.name].metric for m, _ in current):
                entry.metric = metric_from_spec(entry.spec, {n: fresh[n].metric for n, _ in comps})
        self._entries = fresh

    def _parse(self, doc: Mapping[str, Any] | None) -> dict[str, _Entry]:
        if doc is None:
            return {}
        source = str(self.store.metrics_path)

        def corrupt(msg: str) -> StoreCorruptError:
            return StoreCorruptError(f"{msg}; the file was left untouched", path=source)

        specs: list[MetricSpec] = []
        for data in doc["specs"]:
            try:
                specs.append(MetricSpec.from_json(data, source=source))
            except InvalidSpecError as err:
                raise corrupt(str(err)) from err
        states: dict[str, Mapping[str, Any]] = {}
        for data in doc["promotions"]:
            name = data.get("metric_name")
            if not isinstance(name, str):
                raise corrupt(f"{source}: a state has no 'metric_name' (got {data!r})")
            states[name] = data
        metrics: dict[str, Metric] = {}
        pending = list(specs)
        # Components come first in registration order, but tolerate any order.
        while pending:
            progress = [
                s
                for s in pending
                if s.components is None or all(n in metrics for n, _ in s.components)
            ]
            if not progress:
                names = [s.name for s in pending]
                raise corrupt(f"{source}: composites {names} name components that are not stored")
            for s in progress:
                metrics[s.name] = (
                    metric_from_spec(s)
                    if s.components is None
                    else metric_from_spec(s, {n: metrics[n] for n, _ in s.components})
                )
            pending = [s for s in pending if s.name not in metrics]
        entries: dict[str, _Entry] = {}
        for s in specs:
            entries[s.name] = self._parse_state(metrics[s.name], states.get(s.name), source)
        return entries

    def _parse_state(self, metric: Metric, data: Mapping[str, Any] | None, source: str) -> _Entry:
        spec = metric.spec
        fresh_acc = _Accumulator(spec.version, Cursor(), Cursor(), self.gate_for(spec.name).window)
        if data is None:
            # A spec without a state (e.g. written by another tool): count from the start.
            return _Entry(metric, MetricState(spec.name, spec.version), fresh_acc)
        try:
            state = MetricState.from_json(data, source=source)
        except ValueError as err:
            raise StoreCorruptError(f"{err}; the file was left untouched", path=source) from err
        if state.version != spec.version:
            return _Entry(metric, MetricState(spec.name, spec.version), fresh_acc)
        raw_acc = data.get("calibration")
        acc = fresh_acc if raw_acc is None else _Accumulator.from_json(raw_acc, source)
        if acc.version != spec.version:
            acc = fresh_acc
        history: dict[str, list[float]] = {}
        raw_history = data.get("history", {})
        if not isinstance(raw_history, Mapping):
            msg = (
                f"{source}: state 'history' of {spec.name!r} must be an object "
                f"(got {raw_history!r})"
            )
            raise StoreCorruptError(msg, path=source)
        for key, values in raw_history.items():
            if not isinstance(values, list) or not all(
                _is_number(v) and math.isfinite(v) for v in values
            ):
                msg = (
                    f"{source}: history {key!r} of {spec.name!r} must be a list of finite "
                    f"numbers (got {values!r})"
                )
                raise StoreCorruptError(msg, path=source)
            history[key] = [float(v) for v in values]
        return _Entry(metric, state, acc, history)

    def _document(self) -> dict[str, Any]:
        promotions = []
        for entry in self._entries.values():
            item = entry.state.to_json()
            item["calibration"] = entry.acc.to_json()
            item["history"] = entry.history
            promotions.append(item)
        return {
            "schema_version": SCHEMA_VERSION,
            "generated_at": utc_timestamp(),
            "specs": [entry.spec.to_json() for entry in self._entries.values()],
            "promotions": promotions,
        }

    def _write_locked(self) -> None:
        if self.read_only:
            raise _read_only_error(self.store)
        self._seen = self.store.write_metrics(self._document())
        for entry in self._entries.values():
            entry.persisted = True

    # ------------------------------------------------------------------ history

    def _apply_history(
        self, items: Mapping[tuple[str, str], Sequence[float]], window: int
    ) -> None:
        for (name, key), values in items.items():
            entry = self._entry(name)
            kept = entry.history.get(key, []) + [float(v) for v in values]
            entry.history[key] = kept[-window:]

    def _check_history(
        self, items: Mapping[tuple[str, str], Sequence[float]], window: int
    ) -> None:
        if not isinstance(window, int) or isinstance(window, bool) or window < 1:
            msg = f"history 'window' must be an int >= 1 (got {window!r})"
            raise InvalidSpecError(msg)
        for (name, key), values in items.items():
            self._entry(name)
            if not isinstance(key, str):
                msg = f"history key of {name!r} must be a str (got {key!r})"  # type: ignore[unreachable]
                raise InvalidObservationError(msg)
            for v in values:
                if not _is_number(v) or not math.isfinite(v):
                    msg = (
                        f"history value of ({name!r}, {key!r}) must be a finite number (got {v!r})"
                    )
                    raise InvalidObservationError(msg)

    def extend_history(
        self, items: Mapping[tuple[str, str], Sequence[float]], *, window: int = 10
    ) -> None:
        """Append values per ``(metric, key)``, keeping the last ``window`` of each.

        Stored in ``metrics.json`` (one locked update); only in memory when the
        registry is read-only.  A version bump starts the history afresh.
        """
        self._check_history(items, window)
        if self.read_only:
            self._apply_history(items, window)
            return
        with self.store.lock():
            self.reload()
            self._apply_history(items, window)
            self._write_locked()


def _copy_entry(entry: _Entry) -> _Entry:
    return _Entry(entry.metric, entry.state, entry.acc, dict(entry.history), entry.persisted)


def _frontier(entries: Mapping[str, _Entry]) -> Cursor:
    """How far the calibration log has been counted (a valid line boundary)."""
    best = Cursor()
    for entry in entries.values():
        if entry.acc.cursor.offset > best.offset:
            best = entry.acc.cursor
    return best


# --------------------------------------------------------------------------- calibrator


class Calibrator:
    """Logs calibration pairs and observations; keeps statistics; moves states.

    ``gate`` is the default gate for metrics that have no gate of their own in
    the registry (else the registry's default applies).
    """

    def __init__(self, registry: MetricRegistry, gate: CalibrationGate | None = None) -> None:
        self.registry = registry
        self.gate = gate

    def __repr__(self) -> str:
        return f"Calibrator({self.registry!r})"

    @property
    def store(self) -> TraceStore:
        """The registry's store."""
        return self.registry.store

    def gate_for(self, name: str) -> CalibrationGate:
        """The gate of ``name``: its own, else this calibrator's, else the registry's."""
        own = self.registry._gates.get(name)
        if own is not None:
            return own
        return self.gate if self.gate is not None else self.registry.gate

    # ------------------------------------------------------------------ records

    def make_record(
        self,
        name: str,
        predicted: Any,
        observed: Any,
        *,
        session_id: str | None = None,
        nodeid: str | None = None,
    ) -> CalibrationRecord:
        """Validate and normalize a raw pair; no disk access, no lock."""
        line = self.pair_line(name, predicted, observed, session_id=session_id, nodeid=nodeid)
        return CalibrationRecord(**line)

    def pair_line(
        self,
        name: str,
        predicted: Any,
        observed: Any,
        *,
        session_id: str | None = None,
        nodeid: str | None = None,
    ) -> dict[str, Any]:
        """One line of ``metric_calibrations.jsonl`` as a dict, without building a record.

        The values are validated and normalized by the metric; :meth:`make_record`
        builds its record from this line (and re-validates it), the plugin uses the
        line as it is.
        """
        metric = self.registry.get(name)
        return {
            "metric_name": metric.name,
            "metric_version": metric.spec.version,
            "predicted": metric.normalize(predicted, field="predicted"),
            "observed": metric.normalize(observed, field="observed"),
            "timestamp": utc_timestamp(),
            "raw_predicted": _json_raw(predicted),
            "raw_observed": _json_raw(observed),
            "session_id": session_id,
            "nodeid": nodeid,
        }

    def observation_line(
        self,
        name: str,
        raw: Any,
        *,
        session_id: str | None = None,
        nodeid: str | None = None,
    ) -> dict[str, Any]:
        """One line of ``observations.jsonl`` as a dict (see :meth:`pair_line`)."""
        metric = self.registry.get(name)
        return {
            "metric_name": metric.name,
            "metric_version": metric.spec.version,
            "raw": _json_raw(raw),
            "normalized": metric.normalize(raw, field="observed"),
            "timestamp": utc_timestamp(),
            "session_id": session_id,
            "nodeid": nodeid,
        }

    def make_observation(
        self,
        name: str,
        raw: Any,
        *,
        session_id: str | None = None,
        nodeid: str | None = None,
    ) -> ObservationRecord:
        """Validate and normalize a raw observed value; no disk access, no lock."""
        return ObservationRecord(
            **self.observation_line(name, raw, session_id=session_id, nodeid=nodeid)
        )

    def log(
        self,
        name: str,
        predicted: Any,
        observed: Any,
        *,
        session_id: str | None = None,
        nodeid: str | None = None,
    ) -> CalibrationRecord:
        """Validate, normalize and append one pair; return the record written."""
        record = self.make_record(name, predicted, observed, session_id=session_id, nodeid=nodeid)
        self.log_many([record])
        return record

    def log_many(self, records: Sequence[CalibrationRecord], *, fsync: bool = False) -> int:
        """Append pairs in one locked write; return the log's end offset."""
        if self.registry.read_only:
            raise _read_only_error(self.store)
        facts = [(r.metric_name, r.metric_version, abs(r.predicted - r.observed)) for r in records]
        return self.store.append_batches(
            [(self.store.calibrations_path, [r.to_json() for r in records])],
            fsync=fsync,
            facts=[facts],
        )[0]

    def append_lines(
        self,
        observations: Sequence[str],
        pairs: Sequence[str],
        errors: Sequence[Sequence[Any]],
    ) -> None:
        """Append a test's log lines, as the line builders encoded them, under one lock.

        ``observations`` and ``pairs`` are JSON texts from :func:`observation_text`
        and :func:`pair_text`; ``errors`` holds ``(name, version, |predicted -
        observed|)`` per pair, so the next statistics update counts this process's
        own pairs without reading them back.
        """
        if self.registry.read_only:
            raise _read_only_error(self.store)
        store = self.store
        store.append_texts(
            [(store.observations_path, observations), (store.calibrations_path, pairs)],
            facts=[None, errors if len(errors) == len(pairs) else None],
        )

    def log_observations(
        self, records: Sequence[ObservationRecord], *, fsync: bool = False
    ) -> int:
        """Append observations in one locked write; return the log's end offset."""
        if self.registry.read_only:
            raise _read_only_error(self.store)
        return self.store.append_observations([r.to_json() for r in records], fsync=fsync)

    # ------------------------------------------------------------------ statistics

    def _catch_up(self, entries: Sequence[_Entry], gates: Mapping[str, CalibrationGate]) -> None:
        """Count the pairs appended since each entry's cursor (in memory)."""
        if not entries:
            return
        for entry in entries:
            window = gates[entry.spec.name].window
            if window > entry.acc.keep:
                if entry.acc.n > len(entry.acc.recent):
                    # A wider window than was kept: recount this version once.
                    entry.acc = self._count(
                        {entry.spec.name: entry.spec.version}, entry.acc.start, window
                    )[entry.spec.name]
                entry.acc.widen(window)
        self._scan({e.spec.name: e.acc for e in entries})

    def _count(
        self, versions: Mapping[str, int], start: Cursor, window: int
    ) -> dict[str, _Accumulator]:
        """Count every pair of the given versions from ``start`` (a full recompute)."""
        accs = {name: _Accumulator(v, start, start, keep=window) for name, v in versions.items()}
        self._scan(accs, own=False)
        return accs

    def _scan(self, accs: Mapping[str, _Accumulator], *, own: bool = True) -> None:
        """Read the log once from the earliest cursor; add each pair past its acc's cursor."""
        if not accs:
            return
        path = self.store.calibrations_path
        size = path.stat().st_size if path.exists() else 0
        ahead = max(acc.cursor.offset for acc in accs.values())
        if ahead > size:
            msg = (
                f"{path} is shorter ({size} bytes) than the position its pairs were counted "
                f"up to ({ahead}): the append-only log was truncated or removed (remove "
                f"{self.store.metrics_path.name} too to start the statistics afresh)"
            )
            raise StoreCorruptError(msg, path=str(path))
        line_start = min((acc.cursor for acc in accs.values()), key=lambda c: c.offset)
        if own and self._scan_own(accs, line_start, path):
            return
        for record, cursor in self.store.iter_jsonl(
            path, start=line_start, validate=_check_pair_line
        ):
            if record is not None:
                acc = accs.get(record["metric_name"])
                if (
                    acc is not None
                    and record["metric_version"] == acc.version
                    and line_start.offset >= acc.cursor.offset
                ):
                    acc.add(abs(record["predicted"] - record["observed"]))
            line_start = cursor
        for acc in accs.values():
            if line_start.offset > acc.cursor.offset:
                acc.cursor = line_start

    def _scan_own(self, accs: Mapping[str, _Accumulator], line_start: Cursor, path: Any) -> bool:
        """Count the pairs past ``line_start`` from memory, if only this process wrote them.

        The plugin's session-end update would otherwise re-read every pair the
        session has just written.  Taken only when ``line_start`` is where a batch
        of the store's own uninterrupted run of appends starts (or where the run
        ends) and the run still ends the very file (same device, inode and size);
        else False, and the log is read.
        """
        run = self.store.own_appends(path)
        begin = line_start.offset
        if run is None or not (run.start <= begin <= run.end):
            return False
        batches = [(start, facts) for start, facts in run.batches if start >= begin]
        if begin != run.end and (not batches or batches[0][0] != begin):
            return False  # not a position this run's appends know
        try:
            info = os.stat(path)
        except OSError:
            return False
        if (info.st_dev, info.st_ino) != run.ident or info.st_size != run.end:
            return False
        lines = 0
        found: dict[str, list[float]] = {name: [] for name in accs}
        for start, facts in batches:
            lines += len(facts)
            for name, version, error in facts:
                acc = accs.get(name)
                if acc is not None and version == acc.version and start >= acc.cursor.offset:
                    found[name].append(error)
        for name, errors in found.items():
            accs[name].add_many(errors)
        end = Cursor(run.end, line_start.line + lines)
        for acc in accs.values():
            if end.offset > acc.cursor.offset:
                acc.cursor = end
        return True

    def _gates(self, names: Iterable[str]) -> dict[str, CalibrationGate]:
        return {name: self.gate_for(name) for name in names}

    def _caught_up(self, entries: Sequence[_Entry]) -> None:
        gates = self._gates(e.spec.name for e in entries)
        if self.registry.read_only or not self.store.calibrations_path.exists():
            # Reading never creates the folder or the lock file.
            self._catch_up(entries, gates)
            return
        # Writers lock even to read, so a line being appended is never seen torn.
        with self.store.lock():
            self._catch_up(entries, gates)

    def stats(self, name: str) -> CalibrationStats:
        """Current statistics of ``name``'s version, reading only what was appended since."""
        entry = self.registry._entry(name)
        self._caught_up([entry])
        return entry.acc.stats(self.gate_for(name).window)

    def recompute(self, name: str) -> CalibrationStats:
        """Statistics of ``name``'s version from a full re-read of the calibration log."""
        entry = self.registry._entry(name)
        window = self.gate_for(name).window
        acc = self._count({name: entry.spec.version}, Cursor(), window)[name]
        return acc.stats(window)

    def verify(self) -> list[str]:
        """Compare the incremental figures with a full recompute; describe each mismatch."""
        entries = list(self.registry._entries.values())
        self._caught_up(entries)
        gates = self._gates(e.spec.name for e in entries)
        widest = max((g.window for g in gates.values()), default=1)
        full = self._count({e.spec.name: e.spec.version for e in entries}, Cursor(), widest)
        problems: list[str] = []
        for entry in entries:
            name, window = entry.spec.name, gates[entry.spec.name].window
            mine, theirs = entry.acc.stats(window), full[name].stats(window)
            for key in ("n", "mae", "p95_error", "worst_error", "window_mae"):
                a, b = getattr(mine, key), getattr(theirs, key)
                same = (a is None and b is None) or (
                    a is not None and b is not None and abs(a - b) <= TOLERANCE
                )
                if not same:
                    problems.append(
                        f"metric {name!r} version {entry.spec.version}: stored {key} = {a!r}, "
                        f"full recompute {key} = {b!r}"
                    )
        return problems

    # ------------------------------------------------------------------ states

    def _evaluate(self, entry: _Entry, gate: CalibrationGate, now: str) -> MetricState:
        stats = entry.acc.stats(gate.window)
        verdict = gate.verdict(stats)
        comps = entry.spec.components
        if verdict == "load_bearing" and comps is not None:
            entries = self.registry._entries
            if not all(n in entries and entries[n].state.is_load_bearing for n, _ in comps):
                # Its own pairs pass, but a component is still advisory.
                verdict = "insufficient_data"
        before = entry.state
        promoted_at, demoted_at = before.promoted_at, before.demoted_at
        if verdict == "load_bearing" and not before.is_load_bearing:
            promoted_at, demoted_at = now, None
        elif verdict != "load_bearing" and before.is_load_bearing:
            demoted_at = now
        return MetricState(
            name=entry.spec.name,
            version=entry.spec.version,
            state=verdict,
            n=stats.n,
            mae=stats.mae,
            p95_error=stats.p95_error,
            worst_error=stats.worst_error,
            window_mae=stats.window_mae,
            promoted_at=promoted_at,
            demoted_at=demoted_at,
        )

    def _order(self, names: Iterable[str] | None) -> list[str]:
        """The names to evaluate, with their dependent composites, components first."""
        entries = self.registry._entries
        wanted = (
            set(entries) if names is None else {self.registry._entry(n).spec.name for n in names}
        )
        # Composites that depend on a wanted metric are re-evaluated too.
        grew = True
        while grew:
            grew = False
            for name, entry in entries.items():
                comps = entry.spec.components
                if name not in wanted and comps and any(n in wanted for n, _ in comps):
                    wanted.add(name)
                    grew = True
        ordered: list[str] = []
        seen: set[str] = set()

        def visit(name: str) -> None:
            if name in seen or name not in entries:
                return
            seen.add(name)
            for component, _ in entries[name].spec.components or ():
                visit(component)
            if name in wanted:
                ordered.append(name)

        for name in entries:
            visit(name)
        return ordered

    def _plan(self, names: Iterable[str] | None) -> list[tuple[str, MetricState, MetricState]]:
        """Catch up and evaluate ``names`` in memory; return (name, before, after) for all."""
        order = self._order(names)
        entries = self.registry._entries
        self._catch_up(list(entries.values()), self._gates(entries))
        now = utc_timestamp()
        results = []
        for name in order:
            entry = entries[name]
            before = entry.state
            entry.state = self._evaluate(entry, self.gate_for(name), now)
            results.append((name, before, entry.state))
        return results

    def _fingerprint(self) -> list[tuple[str, Cursor, int, MetricState, bool]]:
        """What a write of ``metrics.json`` would record, in a cheaply comparable form."""
        return [
            (name, e.acc.cursor, e.acc.n, e.state, e.persisted)
            for name, e in self.registry._entries.items()
        ]

    def update(
        self,
        names: Iterable[str] | None = None,
        *,
        history: Mapping[tuple[str, str], Sequence[float]] | None = None,
        history_window: int = 10,
    ) -> list[tuple[str, MetricState, MetricState]]:
        """Catch up the statistics and re-evaluate states, in one locked metrics.json write.

        Reloads ``metrics.json`` under the store lock, counts only the pairs
        appended since the stored positions, re-evaluates ``names`` (default: all;
        composites that depend on them too), promotes and demotes, appends
        ``history`` (see :meth:`MetricRegistry.extend_history`), writes once and
        returns ``(name, before, after)`` for every state that changed.
        """
        registry = self.registry
        if registry.read_only:
            raise _read_only_error(self.store)
        wanted = None if names is None else list(names)
        if history:
            registry._check_history(history, history_window)
        with self.store.lock():
            registry.reload()
            if wanted is not None:
                for name in wanted:
                    registry._entry(name)
            before = self._fingerprint()
            results = self._plan(wanted)
            if history:
                registry._apply_history(history, history_window)
            # Nothing appended, nothing moved, nothing new: the file on disk already
            # says all of it, and rewriting it (with an fsync) is pure cost.
            unsaved = any(not e.persisted for e in registry._entries.values())
            if history or unsaved or self._fingerprint() != before:
                registry._write_locked()
        return [(name, b, a) for name, b, a in results if b.state != a.state]

    def can_promote(self, name: str) -> bool:
        """Whether ``name`` would be load-bearing if its state were evaluated now."""
        registry = self.registry
        entry = registry._entry(name)
        entries = list(registry._entries.values())
        self._caught_up(entries)
        # Evaluate on copies: asking must not change any state.
        saved = {e.spec.name: e.state for e in entries}
        try:
            for n in self._order([name]):
                registry._entries[n].state = self._evaluate(
                    registry._entries[n], self.gate_for(n), utc_timestamp()
                )
            return entry.state.is_load_bearing
        finally:
            for n, state in saved.items():
                registry._entries[n].state = state

    def try_promote(self, name: str) -> bool:
        """Re-evaluate ``name`` (store the result); True iff it is load-bearing afterwards."""
        self.update([name])
        return self.registry.is_load_bearing(name)
