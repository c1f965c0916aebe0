"""The line formats of the logs: calibration pairs, observations and their builders.

A calibration pair is one line of ``metric_calibrations.jsonl`` (a
:class:`CalibrationRecord`), an observation one line of ``observations.jsonl`` (an
:class:`ObservationRecord`); the key names are the reference LDD tool's.  The line
builders (:func:`pair_text`, :func:`observation_text`) write the same lines as JSON
text without building a dict: the plugin writes one per observed value.  Every
backend stores these records; only the file store also keeps them as these lines.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from numbers import Real
from typing import Any, Final, TypeVar, final

from pytest_ldd.errors import InvalidObservationError, StoreCorruptError
from pytest_ldd.model.clock import utc_timestamp

__all__ = [
    "CalibrationRecord",
    "ObservationRecord",
    "PairError",
    "RawPair",
    "check_line",
    "check_observation_line",
    "check_pair_line",
    "check_session_line",
    "encode_line",
    "encode_records",
    "is_number",
    "is_raw_pair",
    "json_raw",
    "line_head",
    "line_tail",
    "normalized_pair",
    "number_text",
    "observation_text",
    "pair_error",
    "pair_text",
    "raw_error",
    "raw_text",
    "utc_timestamp",
]

@final
@dataclass(frozen=True, slots=True)
class RawPair:
    """A pair logged as raw values, as the reference LDD tool logs positive and signed
    metrics: no ``raw_*`` keys, and ``predicted`` / ``observed`` outside [0, 1].

    The statistics normalize it with the metric's spec (:func:`normalized_pair`);
    ``where`` names the line (``path:line``) for messages.
    """

    predicted: float
    observed: float
    where: str


#: ``(metric_name, metric_version, |predicted - observed|)`` of one pair: what the
#: statistics need of it.  A line of raw values carries a :class:`RawPair` instead of
#: the error, for the reader that knows the spec to normalize.
PairError = tuple[str, int, "float | RawPair"]

#: One record as a compact JSON line (json.dumps with keywords builds a new encoder
#: per call; a log line is hot).
encode_line: Final = json.JSONEncoder(
    separators=(",", ":"), allow_nan=False, ensure_ascii=False
).encode



def encode_records(records: Sequence[Mapping[str, Any]], where: str) -> list[str]:
    """Each record as one :func:`encode_line` text; ``where`` names the log in errors.

    A record that is not JSON, or not a JSON object, is an InvalidObservationError
    naming its index, so a batch is refused whole before anything is written.
    """
    lines: list[str] = []
    for index, record in enumerate(records):
        try:
            text = encode_line(record)
        except (TypeError, ValueError) as err:
            msg = f"record {index} for {where} is not valid JSON ({err}): {record!r}"
            raise InvalidObservationError(msg) from err
        if not text.startswith("{"):
            msg = f"record {index} for {where} must be a JSON object (got {record!r})"
            raise InvalidObservationError(msg)
        lines.append(text)
    return lines


_TIMESTAMP_RE: Final = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")


def is_number(value: object) -> bool:
    """Whether ``value`` is an int or a float (a bool is not a number here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _unit(value: object) -> bool:
    return is_number(value) and 0.0 <= value <= 1.0  # type: ignore[operator]


def json_raw(value: Any) -> Any:
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
        return [json_raw(item) for item in value]
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, Real):
        return json_raw(float(value))
    return value


def line_head(name: str, version: int) -> str:
    """The start of a log line of ``name`` version ``version``: ``{"metric_name":..``."""
    return f'{{"metric_name":{encode_line(name)},"metric_version":{int(version)}'


def line_tail(session_id: str | None, nodeid: str | None) -> str:
    """The end of a log line: ``,"session_id":..,"nodeid":..}``."""
    return f',"session_id":{encode_line(session_id)},"nodeid":{encode_line(nodeid)}}}'


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
    """``json_raw(value)`` as JSON text, as the log encoder writes it."""
    kind = type(value)
    if kind is float and math.isfinite(value):
        return float.__repr__(value)
    if kind is int:
        return int.__repr__(value)
    try:
        return encode_line(json_raw(value))
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
    if not is_number(value) or not 0.0 <= value <= 1.0:  # type: ignore[operator]
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


_Record = TypeVar("_Record", "CalibrationRecord", "ObservationRecord")


def _from_line(
    cls: type[_Record],
    data: Mapping[str, Any],
    what: str,
    required: Sequence[str],
    source: str,
) -> _Record:
    """A record of ``cls`` from one line's dict: ``required`` keys must be there, the
    other fields default to None, unknown keys are ignored (other tools may add some);
    an invalid value is an InvalidObservationError naming ``source``."""
    _record_keys(data, what, required, source)
    values: dict[str, Any] = {
        f.name: data[f.name] if f.name in required else data.get(f.name) for f in fields(cls)
    }
    try:
        return cls(**values)
    except InvalidObservationError as err:
        raise InvalidObservationError(f"{source}: {err}") from err


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
        return _from_line(cls, data, "calibration record", required, source)


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
        return _from_line(cls, data, "observation record", required, source)


def is_raw_pair(record: Mapping[str, Any]) -> bool:
    """Whether a calibration line holds raw values (see :class:`RawPair`)."""
    if "raw_predicted" in record or "raw_observed" in record:
        return False
    values = (record.get("predicted"), record.get("observed"))
    return all(is_number(v) and math.isfinite(v) for v in values) and not all(  # type: ignore[arg-type]
        _unit(v) for v in values
    )


def check_pair_line(record: dict[str, Any]) -> None:
    """Validate a calibration log line enough to count it (raises ValueError naming the key).

    A line without ``raw_*`` keys may hold raw finite values (the reference tool's
    lines of positive and signed metrics, see :class:`RawPair`); every other line
    holds normalized values in [0, 1].
    """
    name, version = record["metric_name"], record["metric_version"]
    if not isinstance(name, str) or not name:
        msg = f"'metric_name' must be a non-empty str (got {name!r})"
        raise ValueError(msg)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        msg = f"'metric_version' must be an int >= 1 (got {version!r})"
        raise ValueError(msg)
    if is_raw_pair(record):
        return
    for key in ("predicted", "observed"):
        if not _unit(record[key]):
            msg = f"{key!r} must be a normalized number in [0, 1] (got {record[key]!r})"
            raise ValueError(msg)


def normalized_pair(
    record: Mapping[str, Any], normalize: Callable[..., float], *, where: str = ""
) -> dict[str, Any]:
    """A calibration line with normalized values: a raw line is normalized by
    ``normalize(value, field=key)`` (a metric's ``normalize``; its raw values kept as
    ``raw_*``), others as they are.

    The one reading of the reference tool's raw lines: the statistics count them
    through it (:func:`raw_error`), and every path that ingests lines (``ldd store
    import``, ``merge``, ``export``) stores them through it.  A raw value the metric
    refuses makes the line fit neither reading: a :class:`StoreCorruptError` naming
    ``where`` (``path:line``) and both readings.
    """
    if not is_raw_pair(record):
        return dict(record)
    line = dict(record)
    for key in ("predicted", "observed"):
        line[f"raw_{key}"] = record[key]
        try:
            line[key] = normalize(record[key], field=key)
        except InvalidObservationError as err:
            name = record.get("metric_name")
            msg = (
                f"{where}: {key!r} must be a normalized number in [0, 1] (got "
                f"{record[key]!r}), and read as a raw value of {name!r} it is not valid "
                f"either ({err})"
            )
            raise StoreCorruptError(msg, path=where.rpartition(":")[0]) from err
    return line


def raw_error(raw: RawPair, name: str, version: int, normalize: Callable[..., float]) -> float:
    """The error of a pair logged as raw values (see :func:`normalized_pair`)."""
    record = {
        "metric_name": name,
        "metric_version": version,
        "predicted": raw.predicted,
        "observed": raw.observed,
    }
    line = normalized_pair(record, normalize, where=raw.where)
    return float(abs(line["predicted"] - line["observed"]))


def pair_error(record: Mapping[str, Any], where: str) -> PairError:
    """What a pair line counts: ``(name, version, |predicted - observed|)``.

    A line of raw values (the reference tool's) carries a :class:`RawPair` instead,
    which the statistics normalize with the metric's spec (:func:`raw_error`): every
    backend counts a line the same way, whoever wrote it.  ``record`` must have
    passed :func:`check_pair_line`.
    """
    predicted, observed = record["predicted"], record["observed"]
    name, version = record["metric_name"], record["metric_version"]
    if is_raw_pair(record):
        return name, version, RawPair(predicted, observed, where)
    return name, version, float(abs(predicted - observed))


def _optional(record: Mapping[str, Any], key: str, kind: type, expected: str) -> None:
    value = record.get(key)
    if value is not None and not isinstance(value, kind):
        msg = f"{key!r} must be {expected} or null (got {value!r})"
        raise ValueError(msg)


def check_observation_line(record: dict[str, Any]) -> None:
    """Validate an observation log line (raises ValueError naming the key).

    ``normalized`` is a number in [0, 1], as every metric's normalization gives: a
    hand-edited ``7`` is refused on read, never imported or reported.
    """
    name, version = record["metric_name"], record["metric_version"]
    if not isinstance(name, str) or not name:
        msg = f"'metric_name' must be a non-empty str (got {name!r})"
        raise ValueError(msg)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        msg = f"'metric_version' must be an int >= 1 (got {version!r})"
        raise ValueError(msg)
    if not _unit(record["normalized"]):
        msg = f"'normalized' must be a number in [0, 1] (got {record['normalized']!r})"
        raise ValueError(msg)


def check_session_line(record: dict[str, Any]) -> None:
    """Validate a ``sessions.jsonl`` line as far as reports read it (ValueError naming the key)."""
    for key in ("session_id", "started_at", "ended_at"):
        _optional(record, key, str, "a str")
    for key in ("counts", "corpus"):
        _optional(record, key, dict, "an object")
    changes = record.get("state_changes")
    if changes is not None and not (
        isinstance(changes, list) and all(isinstance(c, dict) for c in changes)
    ):
        msg = f"'state_changes' must be a list of objects or null (got {changes!r})"
        raise ValueError(msg)


#: The validator of each log's lines, by the store's log name.
check_line: Final[Mapping[str, Callable[[dict[str, Any]], None]]] = {
    "pairs": check_pair_line,
    "observations": check_observation_line,
    "sessions": check_session_line,
}
