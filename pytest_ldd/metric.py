"""Metric specs, the three metric kinds, their factories and the gaming-guard.

A :class:`MetricSpec` says *what* an instrument measures; a :class:`Metric` pairs a
spec with an accessor that reads a raw value off a state ``theta`` and maps it onto
the normalized scale [0, 1] that calibration works on.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, fields
from numbers import Real
from typing import Any, Final, Literal, final, get_args

from pytest_ldd.errors import GamingGuardError, InvalidSpecError

__all__ = [
    "FORBIDDEN_PHRASES",
    "Composition",
    "MetricKind",
    "MetricSpec",
    "check_description",
]

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


def _canonical_text(text: str) -> str:
    """NFKC, drop invisible format characters, collapse whitespace, casefold."""
    text = unicodedata.normalize("NFKC", text)
    # Zero-width spaces, joiners and soft hyphens (category Cf) would otherwise let
    # "my\u200bcurrent" slip past a whole-word match while rendering as "mycurrent".
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return _WHITESPACE_RE.sub(" ", text).strip().casefold()


def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    # Lookarounds instead of \b: the same rule for ASCII and for "é", "ü", "ó".
    return re.compile(r"(?<!\w)" + re.escape(_canonical_text(phrase)) + r"(?!\w)")


_PHRASE_PATTERNS: Final[tuple[tuple[str, re.Pattern[str]], ...]] = tuple(
    (phrase, _phrase_pattern(phrase)) for phrase in FORBIDDEN_PHRASES
)


def check_description(text: str) -> None:
    """Raise :class:`GamingGuardError` when ``text`` contains a forbidden phrase.

    The text is NFKC-normalized, whitespace-collapsed and casefolded first; phrases
    match only as whole words ("the api wants" passes, "I want" does not).
    """
    canonical = _canonical_text(text)
    for phrase, pattern in _PHRASE_PATTERNS:
        if pattern.search(canonical):
            msg = (
                f"metric description contains the forbidden phrase {phrase!r}: describe "
                f"what is measured, not a reward for the current approach (got {text!r})"
            )
            raise GamingGuardError(msg, phrase=phrase)


# --------------------------------------------------------------------------- MetricSpec


def _is_real(value: object) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _spec_error(field: str, expected: str, got: object) -> InvalidSpecError:
    return InvalidSpecError(f"MetricSpec {field!r} must be {expected} (got {got!r})")


def _check_weight(name: object, weight: object) -> float:
    if not _is_real(weight) or not math.isfinite(float(weight)) or float(weight) < 0:  # type: ignore[arg-type]
        msg = (
            f"MetricSpec 'components' weight of {name!r} must be a finite number >= 0 "
            f"(got {weight!r})"
        )
        raise InvalidSpecError(msg)
    return float(weight)  # type: ignore[arg-type]


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
        scale: object = self.normalize_scale
        if not _is_real(scale) or not math.isfinite(float(scale)) or float(scale) <= 0:  # type: ignore[arg-type]
            raise _spec_error("normalize_scale", "a finite number > 0", scale)
        object.__setattr__(self, "normalize_scale", float(scale))  # type: ignore[arg-type]
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
        if not isinstance(data, Mapping):  # type: ignore[redundant-expr,unused-ignore]
            msg = f"{source}: a metric spec must be a JSON object (got {data!r})"  # type: ignore[unreachable]
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
