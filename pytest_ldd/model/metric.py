"""Metric specs, the metric kinds (three plain, one composite), factories, gaming-guard.

A :class:`MetricSpec` says *what* an instrument measures; a :class:`Metric` pairs a
spec with an accessor that reads a raw value off a state ``theta`` and maps it onto
the normalized scale [0, 1] that calibration works on.
"""

from __future__ import annotations

import functools
import math
import re
import sys
import types
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from numbers import Real
from typing import Any, ClassVar, Final, Literal, final, get_args

from pytest_ldd.errors import (
    CompositionError,
    GamingGuardError,
    InvalidObservationError,
    InvalidSpecError,
)

__all__ = [
    "FORBIDDEN_PHRASES",
    "Accessor",
    "BoundedRateMetric",
    "CompositeMetric",
    "Composition",
    "Metric",
    "MetricKind",
    "MetricSpec",
    "PositiveCountMetric",
    "SignedDeltaMetric",
    "accessor_fingerprint",
    "bounded_rate",
    "check_description",
    "metric_from_spec",
    "positive_count",
    "signed_delta",
    "split_identifiers",
]

#: Reads a metric's raw value off a state ``theta``; deterministic, read-only.
Accessor = Callable[[Any], Any]

#: Bytecode differs between interpreters, so fingerprints are compared per tag.
FINGERPRINT_TAG: Final = f"{sys.implementation.name}-{sys.version_info[0]}{sys.version_info[1]}"


def accessor_fingerprint(accessor: Callable[..., Any]) -> str:
    """``"cpython-311:<16 hex digits>"``: a digest of what ``accessor`` runs.

    Functions are digested by their code objects (recursively: nested functions and
    comprehensions), the names they use and their default values; bound methods and
    ``functools.partial`` by the function they wrap (and the partial's arguments); a
    callable object by its class's ``__call__``; code without a code object (written
    in C, such as ``operator.itemgetter``) by its ``repr``, which names what it reads.
    Variable names do not count: renaming a local is not a semantic change.
    """
    import hashlib  # here: the commands that never digest an accessor skip OpenSSL's load

    digest = hashlib.sha256()
    _digest_callable(accessor, digest, depth=0)
    return f"{FINGERPRINT_TAG}:{digest.hexdigest()[:16]}"


def _digest_callable(obj: Any, digest: Any, *, depth: int) -> None:
    if depth > 8:
        digest.update(b"<deep>")
        return
    if isinstance(obj, functools.partial):
        digest.update(b"partial")
        _digest_callable(obj.func, digest, depth=depth + 1)
        digest.update(repr((obj.args, sorted(obj.keywords.items()))).encode())
        return
    if isinstance(obj, types.MethodType):
        _digest_callable(obj.__func__, digest, depth=depth + 1)
        return
    code = getattr(obj, "__code__", None)
    if isinstance(code, types.CodeType):
        _digest_code(code, digest)
        digest.update(repr(getattr(obj, "__defaults__", None)).encode())
        digest.update(repr(getattr(obj, "__kwdefaults__", None)).encode())
        return
    if callable(obj) and not isinstance(obj, (type, types.BuiltinFunctionType)):
        call = type(obj).__call__
        if isinstance(getattr(call, "__code__", None), types.CodeType):
            _digest_callable(call, digest, depth=depth + 1)
            return
    digest.update(repr(obj).encode("utf-8", "backslashreplace"))


def _digest_code(code: types.CodeType, digest: Any) -> None:
    digest.update(code.co_code)
    digest.update(repr(code.co_names).encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _digest_code(const, digest)
        else:
            digest.update(_const_text(const).encode("utf-8", "backslashreplace"))


def _const_text(const: object) -> str:
    # A frozenset constant (``x in {"a", "b"}``) iterates in hash order, which string
    # hashing randomizes per process: sort its members so the text is stable.
    if isinstance(const, frozenset):
        return "frozenset(" + ",".join(sorted(_const_text(c) for c in const)) + ")"
    if isinstance(const, tuple):
        return "(" + ",".join(_const_text(c) for c in const) + ")"
    return repr(const)

MetricKind = Literal["bounded", "positive", "signed"]
Composition = Literal["weighted_sum", "max", "min"]

KINDS: Final[tuple[str, ...]] = get_args(MetricKind)
COMPOSITIONS: Final[tuple[str, ...]] = get_args(Composition)

# The unit a spec gets when none is given.
DEFAULT_UNITS: Final[Mapping[str, str]] = {
    "bounded": "rate",
    "positive": "count",
    "signed": "dimensionless",
}

_NAME_RE: Final = re.compile(r"[A-Za-z0-9_.-]{1,64}")


# --------------------------------------------------------------------------- gaming-guard

#: Phrases a description may not contain as whole words: they reward the current
#: approach instead of describing a property of the world.
FORBIDDEN_PHRASES: Final[tuple[str, ...]] = (
    # English
    "current action",
    "last action",
    "my decision",
    "the action i took",
    "the action just taken",
    "my current",
    "i want",
    "i prefer",
    "rewards me",
    "favor my",
    "my approach",
    # Self-reference the seed implies ("prob_correct_for_current_action").
    "current approach",
    "current strategy",
    "the chosen action",
    # German
    "meine aktuelle",
    "meine aktion",
    "meine entscheidung",
    "belohnt mich",
    "begünstigt meine",
    "mein aktueller",
    # French
    "mon action",
    "ma décision",
    "mon approche",
    "récompense mon",
    "favorise mon",
    "mon actuel",
    # Spanish
    "mi acción",
    "mi decisión",
    "mi enfoque",
    "recompensa mi",
    "favorece mi",
    "mi actual",
)

_WHITESPACE_RE: Final = re.compile(r"\s+")


# Identifier boundaries: "_" or "-" between two word characters, a lower-case letter
# or digit followed by an upper-case one ("currentAction"), and the last capital of
# an acronym before a capitalised word ("HTTPServer" -> "HTTP Server").  Case runs
# are ASCII: identifiers are, and NFKC has already folded full-width letters.
_IDENTIFIER_SEPARATOR_RE: Final = re.compile(r"(?<=[^\W_])[_-]+(?=[^\W_])")
_CAMEL_RE: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def split_identifiers(text: str) -> str:
    """``snake_case``, ``kebab-case`` and ``camelCase`` words as separate words.

    ``"prob_correct_for_current_action"`` becomes ``"prob correct for current action"``
    and ``"probCorrectForCurrentAction"`` ``"prob Correct For Current Action"``, so
    the whole-word match of the gaming-guard sees the words an identifier is made of.
    Text without identifiers is unchanged.
    """
    text = _IDENTIFIER_SEPARATOR_RE.sub(" ", text)
    return _CAMEL_RE.sub(" ", text)


def _canonical_text(text: str) -> str:
    """NFKC, drop invisible format characters, split identifiers, collapse
    whitespace, casefold."""
    text = unicodedata.normalize("NFKC", text)
    # Zero-width spaces, joiners and soft hyphens (category Cf) would otherwise let
    # "my\u200bcurrent" slip past a whole-word match while rendering as "mycurrent".
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    # Before casefolding: camelCase boundaries are only visible in the original case.
    text = split_identifiers(text)
    return _WHITESPACE_RE.sub(" ", text).strip().casefold()


def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    # Lookarounds instead of \b: the same rule for ASCII and for "é", "ü", "ó".
    return re.compile(r"(?<!\w)" + re.escape(_canonical_text(phrase)) + r"(?!\w)")


# One pattern for the common case (no forbidden phrase at all); which phrase
# matched is then found phrase by phrase, in the order of FORBIDDEN_PHRASES.
_ANY_PHRASE: Final = re.compile(
    r"(?<!\w)(?:"
    + "|".join(re.escape(_canonical_text(phrase)) for phrase in FORBIDDEN_PHRASES)
    + r")(?!\w)"
)


def check_description(text: str) -> None:
    """Raise :class:`GamingGuardError` when ``text`` contains a forbidden phrase.

    The text is NFKC-normalized, its identifiers split into words
    (``prob_correct_for_current_action``, ``currentAction``), whitespace-collapsed and
    casefolded first; phrases match only as whole words ("the api wants" passes,
    "I want" does not).
    """
    canonical = _canonical_text(text)
    if not _ANY_PHRASE.search(canonical):
        return
    for phrase in FORBIDDEN_PHRASES:
        if _phrase_pattern(phrase).search(canonical):
            msg = (
                f"metric description contains the forbidden phrase {phrase!r}: describe "
                f"what is measured, not a reward for the current approach (got {text!r})"
            )
            raise GamingGuardError(msg, phrase=phrase)


# --------------------------------------------------------------------------- MetricSpec


def _is_real(value: object) -> bool:
    # The exact types first: isinstance against the Real ABC costs a microsecond, and
    # the plugin normalizes every observed value.
    kind = type(value)
    if kind is float or kind is int:
        return True
    return isinstance(value, Real) and not isinstance(value, bool)


def _spec_error(field: str, expected: str, got: object) -> InvalidSpecError:
    return InvalidSpecError(f"MetricSpec {field!r} must be {expected} (got {got!r})")


def _finite(value: object) -> float | None:
    """``value`` as a float when it is a finite real number (not a bool), else ``None``."""
    if not _is_real(value):
        return None
    number = float(value)  # type: ignore[arg-type]  # Real, checked above
    return number if math.isfinite(number) else None


def _check_weight(name: object, weight: object) -> float:
    number = _finite(weight)
    if number is None or number < 0:
        msg = (
            f"MetricSpec 'components' weight of {name!r} must be a finite number >= 0 "
            f"(got {weight!r})"
        )
        raise InvalidSpecError(msg)
    return number


def _check_components(value: object) -> tuple[tuple[str, float], ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)) or not value:
        raise _spec_error("components", "a non-empty tuple of (name, weight) pairs", value)
    checked: list[tuple[str, float]] = []
    seen: set[str] = set()
    for item in value:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise _spec_error("components", "a tuple of (name, weight) pairs", item)
        name, weight = item
        if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
            raise _spec_error("components", "named by 1-64 chars of [A-Za-z0-9_.-]", name)
        if name in seen:
            raise _spec_error("components", "free of duplicate names", name)
        seen.add(name)
        checked.append((name, _check_weight(name, weight)))
    return tuple(checked)


@final
@dataclass(frozen=True, slots=True)
class MetricSpec:
    """What a metric measures: name, kind, unit, description and version.

    ``advisory_only`` must be ``True``: a spec is always born advisory, and promotion
    to load-bearing is recorded by the registry, never by changing the spec.
    ``composition`` and ``components`` are set by the compose functions.
    ``unit`` may be given as ``""`` or ``None`` to take the kind's default.
    """

    name: str
    kind: MetricKind
    unit: str
    description: str
    version: int = 1
    advisory_only: bool = True
    normalize_scale: float = 1.0
    composition: Composition | None = None
    components: tuple[tuple[str, float], ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME_RE.fullmatch(self.name):
            raise _spec_error("name", "1-64 chars of [A-Za-z0-9_.-]", self.name)
        if self.kind not in KINDS:
            raise _spec_error("kind", "one of 'bounded', 'positive', 'signed'", self.kind)
        unit: object = self.unit
        if unit is None or unit == "":
            object.__setattr__(self, "unit", DEFAULT_UNITS[self.kind])
        elif not isinstance(unit, str):
            raise _spec_error("unit", "a str", unit)
        if not isinstance(self.description, str) or not self.description.strip():
            raise _spec_error("description", "a non-empty str", self.description)
        check_description(self.description)
        if not isinstance(self.version, int) or isinstance(self.version, bool) or self.version < 1:
            raise _spec_error("version", "an int >= 1", self.version)
        if self.advisory_only is not True:
            raise _spec_error("advisory_only", "True at construction", self.advisory_only)
        scale = _finite(self.normalize_scale)
        if scale is None or scale <= 0:
            raise _spec_error("normalize_scale", "a finite number > 0", self.normalize_scale)
        object.__setattr__(self, "normalize_scale", scale)
        self._check_composition()

    def _check_composition(self) -> None:
        if self.composition is not None and self.composition not in COMPOSITIONS:
            raise _spec_error(
                "composition", "None, 'weighted_sum', 'max' or 'min'", self.composition
            )
        if self.composition is None:
            if self.components is not None:
                raise _spec_error("components", "None when 'composition' is None", self.components)
            return
        if self.components is None:
            raise _spec_error(
                "components", f"set when 'composition' is {self.composition!r}", None
            )
        components = _check_components(self.components)
        object.__setattr__(self, "components", components)
        if self.kind != "bounded":
            raise _spec_error("kind", "'bounded' for a composite metric", self.kind)
        if self.name in {name for name, _ in components}:
            raise _spec_error(
                "components", f"free of the composite's own name {self.name!r}", self.name
            )
        if self.composition == "weighted_sum" and not any(w > 0 for _, w in components):
            raise _spec_error(
                "components", "weighted with at least one weight > 0", self.components
            )

    @property
    def is_composite(self) -> bool:
        """Whether the spec describes a composition of other metrics."""
        return self.composition is not None

    def to_json(self) -> dict[str, Any]:
        """The spec as a JSON-ready dict holding exactly the spec's fields."""
        return {
            "name": self.name,
            "kind": self.kind,
            "unit": self.unit,
            "description": self.description,
            "version": self.version,
            "advisory_only": self.advisory_only,
            "normalize_scale": self.normalize_scale,
            "composition": self.composition,
            "components": (
                None
                if self.components is None
                else [{"name": n, "weight": w} for n, w in self.components]
            ),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, source: str = "metrics.json") -> MetricSpec:
        """Rebuild a spec from :meth:`to_json` output; unknown or missing keys are errors.

        ``source`` names where the data came from, for the error message.
        """
        data_obj: object = data
        if not isinstance(data_obj, Mapping):
            msg = f"{source}: a metric spec must be a JSON object (got {data_obj!r})"
            raise InvalidSpecError(msg)
        expected = [f.name for f in fields(cls)]
        for key in data:
            if key not in expected:
                msg = f"{source}: metric spec has unknown key {key!r} (expected {expected})"
                raise InvalidSpecError(msg)
        for key in expected:
            if key not in data:
                msg = f"{source}: metric spec is missing key {key!r} (got {sorted(data)})"
                raise InvalidSpecError(msg)
        raw_components = data["components"]
        components: Any = raw_components
        if isinstance(raw_components, list):
            components = tuple(_component_from_json(item, source) for item in raw_components)
        try:
            return cls(
                name=data["name"],
                kind=data["kind"],
                unit=data["unit"],
                description=data["description"],
                version=data["version"],
                advisory_only=data["advisory_only"],
                normalize_scale=data["normalize_scale"],
                composition=data["composition"],
                components=components,
            )
        except GamingGuardError as err:
            raise GamingGuardError(f"{source}: {err}", phrase=err.phrase) from err
        except InvalidSpecError as err:
            raise InvalidSpecError(f"{source}: {err}") from err

    def difference(self, other: MetricSpec) -> str | None:
        """The name of the first field in which ``other`` differs, or ``None``."""
        for f in fields(self):
            if getattr(self, f.name) != getattr(other, f.name):
                return f.name
        return None


def _component_from_json(item: object, source: str) -> tuple[object, object]:
    if not isinstance(item, Mapping) or set(item) != {"name", "weight"}:
        msg = (
            f"{source}: metric spec 'components' entries must be objects with exactly "
            f"the keys 'name' and 'weight' (got {item!r})"
        )
        raise InvalidSpecError(msg)
    return (item["name"], item["weight"])


# --------------------------------------------------------------------------- metrics


class Metric(ABC):
    """A spec plus an accessor: ``observed(theta) == normalize(raw(theta))`` in [0, 1].

    The accessor must be deterministic and must not mutate ``theta``; without one,
    ``theta`` itself is the raw value.
    """

    __slots__ = ("_accessor", "_spec")

    #: The spec kind this class implements.
    kind: ClassVar[MetricKind]

    def __init__(self, spec: MetricSpec, accessor: Accessor | None = None) -> None:
        spec_obj: object = spec
        if not isinstance(spec_obj, MetricSpec):
            msg = f"{type(self).__name__} 'spec' must be a MetricSpec (got {spec_obj!r})"
            raise InvalidSpecError(msg)
        if spec.kind != self.kind:
            msg = (
                f"{type(self).__name__} 'spec.kind' must be {self.kind!r} "
                f"(got {spec.kind!r} for metric {spec.name!r})"
            )
            raise InvalidSpecError(msg)
        accessor_obj: object = accessor
        if accessor_obj is not None and not callable(accessor_obj):
            msg = f"metric {spec.name!r} 'accessor' must be callable or None (got {accessor!r})"
            raise InvalidSpecError(msg)
        self._spec = spec
        self._accessor = accessor

    @property
    def spec(self) -> MetricSpec:
        """The metric's immutable spec."""
        return self._spec

    @property
    def name(self) -> str:
        """The metric's name (``spec.name``)."""
        return self._spec.name

    def raw(self, theta: Any) -> Any:
        """The raw value at ``theta``: the accessor's result, or ``theta`` itself."""
        return theta if self._accessor is None else self._accessor(theta)

    @property
    def accessor_fingerprint(self) -> str | None:
        """A digest of the accessor's code, tagged with the interpreter; None without one.

        The registry keeps it beside the metric's state and warns when it changes while
        the version does not (the seed: a semantic change needs a version bump).  What
        it sees is the accessor's own bytecode, constants, names and defaults; what it
        cannot see is documented in docs/decisions.md (values in closures and globals,
        functions the accessor calls, code written in C).
        """
        return None if self._accessor is None else accessor_fingerprint(self._accessor)

    @abstractmethod
    def normalize(self, raw: Any, *, field: str = "observed") -> float:
        """Map a raw value onto [0, 1]; invalid values raise InvalidObservationError.

        ``field`` names the value in the error message ("observed", "predicted").
        """

    def observed(self, theta: Any) -> float:
        """The normalized value at ``theta``, in [0, 1]."""
        return self.normalize(self.raw(theta))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, version={self._spec.version})"

    # Shared validation, so every kind words its errors the same way.

    def _invalid(self, expected: str, got: object, field: str) -> InvalidObservationError:
        return InvalidObservationError(
            f"{field}: metric {self.name!r} ({self._spec.kind}) expects {expected} (got {got!r})"
        )

    def _number(self, raw: object, expected: str, field: str) -> float:
        """``raw`` as a float; bools, non-numbers and NaN are rejected."""
        if not _is_real(raw):
            raise self._invalid(expected, raw, field)
        try:
            value = float(raw)  # type: ignore[arg-type]
        except OverflowError:  # an int or Fraction beyond float range
            shown = (
                f"{'-' if raw < 0 else ''}~1e{math.floor(math.log10(abs(raw)))}"
                if isinstance(raw, int)
                else repr(raw)[:40]
            )
            raise InvalidObservationError(
                f"{field}: metric {self.name!r} ({self._spec.kind}) expects {expected} "
                f"within the float range (about +-1.8e308; got {shown}, which no float "
                f"holds): pass math.inf for an unbounded value"
            ) from None
        if math.isnan(value):
            raise self._invalid(expected, value, field)
        return value

    def _unit_interval(self, raw: object, field: str) -> float:
        value = self._number(raw, "a number in [0, 1]", field)
        if not 0.0 <= value <= 1.0:
            raise self._invalid("a number in [0, 1]", value, field)
        return value


def _is_pair(value: object) -> bool:
    return isinstance(value, (tuple, list)) and len(value) == 2


class BoundedRateMetric(Metric):
    """A value in [0, 1] by construction, such as a failing / total rate.

    The accessor may return a float in [0, 1] or a ``(failing, total)`` pair.
    Values outside [0, 1] are errors, never clamped.
    """

    __slots__ = ()
    kind = "bounded"

    def __init__(self, spec: MetricSpec, accessor: Accessor | None = None) -> None:
        super().__init__(spec, accessor)
        # Only a bounded spec can be composite (MetricSpec enforces that).
        if spec.is_composite:
            msg = (
                f"metric {spec.name!r} has a composite spec (composition "
                f"{spec.composition!r}): build it with weighted_sum, maximum or minimum"
            )
            raise InvalidSpecError(msg)

    def raw(self, theta: Any) -> Any:
        """The raw value at ``theta``; a ``(failing, total)`` pair becomes its rate."""
        value = super().raw(theta)
        return self._rate(value, "observed") if _is_pair(value) else value

    def normalize(self, raw: Any, *, field: str = "observed") -> float:
        """``raw`` itself once checked to lie in [0, 1]; pairs are turned into rates."""
        if type(raw) is float and 0.0 <= raw <= 1.0:
            return raw  # the common case, decided inline (NaN fails the comparison)
        if _is_pair(raw):
            raw = self._rate(raw, field)
        return self._unit_interval(raw, field)

    def _rate(self, pair: Any, field: str) -> float:
        failing, total = pair
        expected = "a (failing, total) pair of finite numbers"
        failing_v = self._number(failing, expected, field)
        total_v = self._number(total, expected, field)
        if not (math.isfinite(failing_v) and math.isfinite(total_v)):
            raise self._invalid(expected, tuple(pair), field)
        if total_v <= 0:
            raise self._invalid(
                "a (failing, total) pair with total > 0: rate undefined", tuple(pair), field
            )
        if not 0 <= failing_v <= total_v:
            raise self._invalid(
                "a (failing, total) pair with 0 <= failing <= total", tuple(pair), field
            )
        return failing_v / total_v


class PositiveCountMetric(Metric):
    """A value >= 0 (latency, counts); normalized as ``min(1, raw / normalize_scale)``."""

    __slots__ = ()
    kind = "positive"

    def normalize(self, raw: Any, *, field: str = "observed") -> float:
        """``min(1, raw / normalize_scale)``; ``+inf`` maps to 1.0."""
        value = self._number(raw, "a number >= 0", field)
        if value < 0:
            raise self._invalid("a number >= 0", value, field)
        return min(1.0, value / self._spec.normalize_scale)


class SignedDeltaMetric(Metric):
    """Any real value (a delta); normalized by a logistic curve, so 0 maps to 0.5."""

    __slots__ = ()
    kind = "signed"

    def normalize(self, raw: Any, *, field: str = "observed") -> float:
        """``1 / (1 + exp(-raw / normalize_scale))``; ``+inf`` -> 1.0, ``-inf`` -> 0.0."""
        z = self._number(raw, "a real number", field) / self._spec.normalize_scale
        # Two branches so that exp() never overflows for large |z|.
        if z >= 0:
            return 1.0 / (1.0 + math.exp(-z))
        e = math.exp(z)
        return e / (1.0 + e)


def bounded_rate(
    name: str,
    accessor: Accessor | None = None,
    *,
    description: str,
    unit: str = "rate",
    version: int = 1,
) -> BoundedRateMetric:
    """A bounded metric: the accessor returns a rate in [0, 1] or ``(failing, total)``."""
    spec = MetricSpec(name, "bounded", unit, description, version=version)
    return BoundedRateMetric(spec, accessor)


def positive_count(
    name: str,
    accessor: Accessor | None = None,
    *,
    description: str,
    unit: str = "count",
    normalize_scale: float = 100.0,
    version: int = 1,
) -> PositiveCountMetric:
    """A positive metric normalized as ``min(1, raw / normalize_scale)``."""
    spec = MetricSpec(
        name, "positive", unit, description, version=version, normalize_scale=normalize_scale
    )
    return PositiveCountMetric(spec, accessor)


def signed_delta(
    name: str,
    accessor: Accessor | None = None,
    *,
    description: str,
    unit: str = "dimensionless",
    normalize_scale: float = 1.0,
    version: int = 1,
) -> SignedDeltaMetric:
    """A signed metric normalized by ``1 / (1 + exp(-raw / normalize_scale))``."""
    spec = MetricSpec(
        name, "signed", unit, description, version=version, normalize_scale=normalize_scale
    )
    return SignedDeltaMetric(spec, accessor)


# --------------------------------------------------------------------------- composites


@final
class CompositeMetric(Metric):
    """A bounded metric computed from other metrics' ``observed`` values.

    ``spec.composition`` says how ("weighted_sum", "max", "min") and
    ``spec.components`` names the components and their weights, in order.
    """

    __slots__ = ("_components", "_scaled")
    kind = "bounded"

    def __init__(self, spec: MetricSpec, components: Sequence[tuple[Metric, float]]) -> None:
        super().__init__(spec)
        if spec.components is None:
            msg = f"CompositeMetric 'spec.composition' must be set (got {spec.composition!r})"
            raise CompositionError(msg)
        given = tuple((metric.name, float(weight)) for metric, weight in components)
        if given != spec.components:
            msg = (
                f"composite metric {spec.name!r} components must match its spec "
                f"{list(spec.components)} (got {list(given)})"
            )
            raise CompositionError(msg)
        self._components = tuple((metric, float(weight)) for metric, weight in components)
        # Dividing by the largest weight keeps sums finite for huge weights; the
        # weighted mean is unchanged because it is homogeneous in the weights.
        top = max(weight for _, weight in self._components)
        self._scaled = tuple(weight / top if top > 0 else 0.0 for _, weight in self._components)

    @property
    def components(self) -> tuple[tuple[Metric, float], ...]:
        """The component metrics with their weights (1.0 for max / min), in order."""
        return self._components

    @property
    def composition(self) -> Composition:
        """How the components are combined."""
        composition = self.spec.composition
        assert composition is not None  # guaranteed by __init__
        return composition

    def raw(self, theta: Any) -> Any:
        """The composite is already normalized: its raw value is its observed value."""
        return self.observed(theta)

    def normalize(self, raw: Any, *, field: str = "observed") -> float:
        """Check that ``raw`` lies in [0, 1], like a bounded metric, and return it."""
        return self._unit_interval(raw, field)

    def observed(self, theta: Any) -> float:
        """Weighted mean, maximum or minimum of the components' ``observed(theta)``."""
        values = [metric.observed(theta) for metric, _ in self._components]
        if self.composition == "max":
            return max(values)
        if self.composition == "min":
            return min(values)
        active = [(w, v) for w, v in zip(self._scaled, values, strict=True) if w > 0]
        # fsum is exactly rounded, so the result does not depend on component order.
        mean = math.fsum(w * v for w, v in active) / math.fsum(w for w, _ in active)
        # Mathematically the mean lies between the smallest and the largest value;
        # clamping removes the last-bit rounding that could step outside.
        lows = [v for _, v in active]
        return min(max(mean, min(lows)), max(lows))


_PLAIN: Final[Mapping[str, type[Metric]]] = {
    "bounded": BoundedRateMetric,
    "positive": PositiveCountMetric,
    "signed": SignedDeltaMetric,
}


def metric_from_spec(spec: MetricSpec, components: Mapping[str, Metric] | None = None) -> Metric:
    """Rebuild a metric with the identity accessor from a stored spec.

    For a composite spec, ``components`` maps each component name to its metric;
    a missing component is a :class:`CompositionError`.
    """
    if spec.composition is None or spec.components is None:
        return _PLAIN[spec.kind](spec)
    available = components or {}
    missing = [name for name, _ in spec.components if name not in available]
    if missing:
        msg = (
            f"composite metric {spec.name!r} needs its components registered first: "
            f"missing {missing} (got {sorted(available)})"
        )
        raise CompositionError(msg)
    resolved: list[tuple[Metric, float]] = [
        (available[name], weight) for name, weight in spec.components
    ]
    return CompositeMetric(spec, resolved)
