"""What one test hands over to the session's ledger: the :class:`Payload`, and its codec.

A test's recorder fills a payload as the test observes; once the test is over the
payload goes to the ledger, the single writer of the session: straight over in a
serial run, as one string attached to the test report under xdist (``encode`` in
the worker, ``decode`` in the controller).  Every field is described once, in
:data:`FIELDS`: its empty value, its form on the wire and how that is read back
(checked: only a worker of another pytest-ldd version sends another shape), and
what a :class:`Checkpoint` keeps of it.  A new field is one more row there.

On the wire the payload is one string: the first line a JSON object of every
non-empty field but the log lines, with ``"lines": [observations, pairs]``; the log
lines follow as they are, one per line (JSON text holds no raw newline).  One
string costs execnet one object, and the lines are neither escaped nor parsed on
the way.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, final

from pytest_ldd.errors import InvalidObservationError
from pytest_ldd.model.gates import Breach

if TYPE_CHECKING:
    from pytest_ldd.agents.corpus import CorpusTally

__all__ = ["FIELDS", "Checkpoint", "Field", "Payload"]


@final
@dataclass(frozen=True, slots=True)
class Field:
    """How one field of the payload is made, carried and kept.

    ``empty`` makes a fresh payload's value (None for a field most tests leave
    empty: a payload is made per test).  ``to_wire`` gives the JSON form of a
    non-empty value, ``from_wire`` reads it back or raises ``ValueError`` naming the
    problem.  ``keep`` makes what a checkpoint keeps of the value, ``back`` the value
    a checkpoint restores from ``(current value, what was kept)``.  A field in
    :data:`LINES` travels as lines after the first.
    """

    name: str
    empty: Callable[[], Any]
    to_wire: Callable[[Any], Any]
    from_wire: Callable[[Any], Any]
    keep: Callable[[Any], Any]
    back: Callable[[Any, Any], Any]


def _none() -> None:
    return None


def _same(value: Any) -> Any:
    return value


def _now(current: Any, kept: Any) -> Any:
    return current


def _copy_list(value: list[Any] | None) -> list[Any] | None:
    return None if value is None else list(value)


def _copy_lists(value: dict[str, list[Any]] | None) -> dict[str, list[Any]] | None:
    return None if value is None else {k: list(v) for k, v in value.items()}


def _back_list(current: Any, kept: list[Any] | None) -> list[Any] | None:
    return _copy_list(kept)


def _back_lists(current: Any, kept: dict[str, list[Any]] | None) -> dict[str, list[Any]] | None:
    return _copy_lists(kept)


def _counts(value: object) -> dict[str, list[int]]:
    if not isinstance(value, dict) or not all(
        isinstance(name, str)
        and isinstance(pair, list)
        and len(pair) == 2
        and all(type(n) is int for n in pair)
        for name, pair in value.items()
    ):
        msg = f"'counts' must map metric names to [observations, pairs] (got {value!r:.80})"
        raise ValueError(msg)
    return value


def _lines(name: str) -> Callable[[object], list[str]]:
    def read(value: object) -> list[str]:
        # Split on newlines, so one line each; a JSON object each, as far as cheaply told.
        lines = value if isinstance(value, list) else None
        if lines is None or not all(line[:1] == "{" and line[-1:] == "}" for line in lines):
            msg = f"{name!r} must be JSON objects, one per line (got {value!r:.80})"
            raise ValueError(msg)
        return lines

    return read


def _errors(value: object) -> list[tuple[str, int, float]]:
    if not isinstance(value, list) or not all(
        isinstance(e, (list, tuple))
        and len(e) == 3
        and isinstance(e[0], str)
        and type(e[1]) is int
        and isinstance(e[2], float)
        for e in value
    ):
        msg = f"'errors' must be a list of [metric, version, error] (got {value!r:.80})"
        raise ValueError(msg)
    return [(name, version, error) for name, version, error in value]


def _malformed(name: str, value: object) -> ValueError:
    return ValueError(f"{name!r} is malformed (got {value!r:.80})")


def _specs(value: object) -> dict[str, dict[str, Any]]:
    if not isinstance(value, list) or not all(
        isinstance(s, dict) and isinstance(s.get("name"), str) for s in value
    ):
        raise _malformed("specs", value)
    return {spec["name"]: spec for spec in value}


def _breaches(value: object) -> list[Breach]:
    if not isinstance(value, list):
        raise _malformed("breaches", value)
    try:
        return [Breach.from_json(b) for b in value]
    except ValueError:
        raise _malformed("breaches", value) from None


def _gates(value: object) -> dict[str, list[str]]:
    if not isinstance(value, dict) or not all(
        isinstance(g, list) and all(isinstance(limit, str) for limit in g) for g in value.values()
    ):
        raise _malformed("gates", value)
    return value


def _history(value: object) -> list[tuple[str, str, float]]:
    if not isinstance(value, list) or not all(
        isinstance(h, (list, tuple))
        and len(h) == 3
        and isinstance(h[0], str)
        and isinstance(h[1], str)
        and isinstance(h[2], (int, float))
        for h in value
    ):
        raise _malformed("history", value)
    return [(name, key, float(number)) for name, key, number in value]


def _episodes(value: object) -> CorpusTally:
    from pytest_ldd.agents.corpus import CorpusTally

    if not isinstance(value, dict):
        raise _malformed("episodes", value)
    try:
        return CorpusTally.from_dict(value)
    except InvalidObservationError as err:
        raise _malformed("episodes", value) from err


def _is_none(value: object) -> bool:
    return value is None


def _episodes_back(current: CorpusTally | None, was_empty: bool) -> CorpusTally | None:
    # Episodes graded by an earlier example are forgotten; a checkpoint taken after
    # an episode keeps the tally as it is now (one test, one tally).
    return None if was_empty else current


#: Every field of a payload, in wire order.
FIELDS: Final[tuple[Field, ...]] = (
    # Per metric: [observations, pairs] this test recorded.
    Field("counts", dict, _same, _counts, keep=_copy_lists, back=_back_lists),
    # The log lines, as JSON text (only a recording session has any).
    Field("observations", list, _same, _lines("observations"), _copy_list, _back_list),
    Field("pairs", list, _same, _lines("pairs"), _copy_list, _back_list),
    # One (name, version, |predicted - observed|) per pair: counted without a re-read.
    Field("errors", list, _same, _errors, _copy_list, _back_list),
    # Specs an xdist worker declared (the controller registers them).  Not taken back
    # by a checkpoint: the worker remembers them as shipped.
    Field("specs", _none, lambda s: list(s.values()), _specs, _same, _now),
    Field(
        "breaches",
        _none,
        lambda b: [breach.to_json() for breach in b],
        _breaches,
        _copy_list,
        _back_list,
    ),
    # The gate limits each metric was checked against.
    Field("gates", _none, _same, _gates, _copy_lists, _back_lists),
    # (metric, key, raw value) for the predictor history.
    Field("history", _none, _same, _history, _copy_list, _back_list),
    # The graded episodes' tally: a checkpoint keeps whether there was one.
    Field("episodes", _none, lambda t: t.to_dict(), _episodes, _is_none, _episodes_back),
)

#: The fields that travel as lines after the first.
LINES: Final = ("observations", "pairs")

# allow_nan: a raw value may be infinite (a positive metric's +inf); the text goes
# from one pytest-ldd process to another, whose json module reads it back.
_ENCODE_HEAD = json.JSONEncoder(separators=(",", ":"), allow_nan=True).encode

_WHAT: Final = "a test report carries a pytest-ldd payload"


class Payload:
    """What one test recorded since its payload was last taken (see the module)."""

    __slots__ = tuple(f.name for f in FIELDS)

    counts: dict[str, list[int]]
    observations: list[str]
    pairs: list[str]
    errors: list[tuple[str, int, float]]
    specs: dict[str, dict[str, Any]] | None
    breaches: list[Breach] | None
    gates: dict[str, list[str]] | None
    history: list[tuple[str, str, float]] | None
    episodes: CorpusTally | None

    def __init__(self) -> None:
        for field in FIELDS:
            setattr(self, field.name, field.empty())

    def __repr__(self) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in FIELDS)
        return f"Payload({shown})"

    def __bool__(self) -> bool:
        """Whether there is anything to hand over (a count, a breach, an episode)."""
        return bool(self.counts or self.breaches or self.episodes is not None)

    # -- the codec -------------------------------------------------------------------

    def to_wire(self) -> dict[str, Any]:
        """The JSON form of every non-empty field (the log lines included)."""
        wire: dict[str, Any] = {}
        for field in FIELDS:
            value = getattr(self, field.name)
            if value:
                wire[field.name] = field.to_wire(value)
        return wire

    def encode(self) -> str:
        """The payload as one string (see the module); ``ValueError`` / ``TypeError``
        for a payload JSON cannot hold."""
        head = self.to_wire()
        observations = head.pop("observations", ())
        pairs = head.pop("pairs", ())
        head["lines"] = [len(observations), len(pairs)]
        return "\n".join([_ENCODE_HEAD(head), *observations, *pairs])

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> Payload:
        """Read :meth:`to_wire`'s form back, checked field by field."""
        payload = cls()
        for field in FIELDS:
            value = wire.get(field.name)
            if value is not None:
                try:
                    setattr(payload, field.name, field.from_wire(value))
                except ValueError as err:
                    # Only a worker running another version of pytest-ldd sends this.
                    msg = f"{_WHAT} of another shape: {err} (is every worker on the same version?)"
                    raise InvalidObservationError(msg) from None
        return payload

    @classmethod
    def decode(cls, data: str | Mapping[str, Any]) -> Payload:
        """Read :meth:`encode`'s string back (or :meth:`to_wire`'s dict, as xdist's own
        serializer carries a payload that JSON could not hold)."""
        if not isinstance(data, str):
            return cls.from_wire(data)
        first, _, rest = data.partition("\n")
        try:
            head = json.loads(first)
        except ValueError as err:
            msg = f"{_WHAT} that is not valid JSON ({err})"
            raise InvalidObservationError(msg) from None
        if not isinstance(head, dict):
            msg = f"{_WHAT} that is not an object ({data:.60})"
            raise InvalidObservationError(msg)
        sizes = head.pop("lines", [0, 0])
        lines = rest.split("\n") if rest else []
        if (
            not isinstance(sizes, list)
            or len(sizes) != 2
            or not all(type(n) is int and n >= 0 for n in sizes)
            or sizes[0] + sizes[1] != len(lines)
        ):
            msg = (
                f"{_WHAT} of another shape: 'lines' says {sizes!r} but {len(lines)} lines "
                "follow (is every worker on the same version?)"
            )
            raise InvalidObservationError(msg)
        head["observations"] = lines[: sizes[0]]
        head["pairs"] = lines[sizes[0] :]
        return cls.from_wire(head)


@final
class Checkpoint:
    """What a recorder had recorded at one moment, to go back to later.

    Hypothesis runs one test body many times; only the last example counts, so each
    example starts from the checkpoint taken before the first.
    """

    __slots__ = ("failures", "fields", "history", "inconclusive")

    def __init__(
        self,
        payload: Payload,
        history: dict[str, list[float]] | None,
        failures: list[str],
        inconclusive: Sequence[str] = (),
    ) -> None:
        self.fields = tuple(field.keep(getattr(payload, field.name)) for field in FIELDS)
        #: The predictor history the test has seen (see ``TestRecorder``).
        self.history = _copy_lists(history)
        self.failures = list(failures)
        #: The episodes graded inconclusive so far in the running phase: an example
        #: Hypothesis throws away takes its own with it.
        self.inconclusive = list(inconclusive)

    def restore(self, payload: Payload) -> None:
        """Put ``payload``'s fields back as they were when this was taken."""
        for field, kept in zip(FIELDS, self.fields, strict=True):
            setattr(payload, field.name, field.back(getattr(payload, field.name), kept))
