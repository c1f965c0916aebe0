"""MetricSpec validation and serialization, the gaming-guard, and the three metric kinds."""

from __future__ import annotations

import dataclasses
import math
import re
from fractions import Fraction
from typing import Any

import pytest

from pytest_ldd.errors import (
    CompositionError,
    GamingGuardError,
    InvalidObservationError,
    InvalidSpecError,
)
from pytest_ldd.model.metric import (
    FORBIDDEN_PHRASES,
    BoundedRateMetric,
    Metric,
    MetricSpec,
    PositiveCountMetric,
    SignedDeltaMetric,
    bounded_rate,
    check_description,
    metric_from_spec,
    positive_count,
    signed_delta,
    split_identifiers,
)


def spec(**overrides: Any) -> MetricSpec:
    fields: dict[str, Any] = {
        "name": "flake_rate",
        "kind": "bounded",
        "unit": "",
        "description": "fraction of flaky tests in the suite",
    }
    fields.update(overrides)
    return MetricSpec(**fields)


# --------------------------------------------------------------------------- MetricSpec


def test_spec_fields_are_in_the_documented_order_with_defaults() -> None:
    names = [f.name for f in dataclasses.fields(MetricSpec)]
    assert names == [
        "name",
        "kind",
        "unit",
        "description",
        "version",
        "advisory_only",
        "normalize_scale",
        "composition",
        "components",
    ]
    s = spec()
    assert (s.version, s.advisory_only, s.normalize_scale) == (1, True, 1.0)
    assert s.composition is None
    assert s.components is None


def test_spec_is_frozen_slotted_and_hashable() -> None:
    s = spec()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.name = "other"  # type: ignore[misc]
    assert not hasattr(s, "__dict__")
    assert hash(s) == hash(spec())


@pytest.mark.parametrize(
    ("kind", "unit"), [("bounded", "rate"), ("positive", "count"), ("signed", "dimensionless")]
)
@pytest.mark.parametrize("given", ["", None])
def test_unit_defaults_by_kind(kind: str, unit: str, given: str | None) -> None:
    assert spec(kind=kind, unit=given).unit == unit


def test_explicit_unit_is_kept() -> None:
    assert spec(kind="positive", unit="ms").unit == "ms"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"name": ""}, r"MetricSpec 'name' must be 1-64 chars of \[A-Za-z0-9_.-\] \(got ''\)"),
        ({"name": "a" * 65}, r"MetricSpec 'name' must be 1-64 chars"),
        ({"name": "has space"}, r"MetricSpec 'name' .* \(got 'has space'\)"),
        ({"name": "naïve"}, r"MetricSpec 'name' .* \(got 'naïve'\)"),
        ({"name": 3}, r"MetricSpec 'name' .* \(got 3\)"),
        (
            {"kind": "ratio"},
            r"MetricSpec 'kind' must be one of 'bounded', 'positive', 'signed' \(got 'ratio'\)",
        ),
        ({"unit": 5}, r"MetricSpec 'unit' must be a str \(got 5\)"),
        ({"description": ""}, r"MetricSpec 'description' must be a non-empty str \(got ''\)"),
        ({"description": "   "}, r"MetricSpec 'description' must be a non-empty str"),
        ({"description": None}, r"MetricSpec 'description' must be a non-empty str \(got None\)"),
        ({"version": 0}, r"MetricSpec 'version' must be an int >= 1 \(got 0\)"),
        ({"version": -2}, r"MetricSpec 'version' must be an int >= 1 \(got -2\)"),
        ({"version": True}, r"MetricSpec 'version' must be an int >= 1 \(got True\)"),
        ({"version": 1.0}, r"MetricSpec 'version' must be an int >= 1 \(got 1.0\)"),
        ({"version": "2"}, r"MetricSpec 'version' must be an int >= 1 \(got '2'\)"),
        (
            {"advisory_only": False},
            r"MetricSpec 'advisory_only' must be True at construction \(got False\)",
        ),
        ({"advisory_only": 1}, r"MetricSpec 'advisory_only' must be True .*\(got 1\)"),
        (
            {"normalize_scale": 0},
            r"MetricSpec 'normalize_scale' must be a finite number > 0 \(got 0\)",
        ),
        ({"normalize_scale": -1.5}, r"'normalize_scale' must be a finite number > 0 \(got -1.5\)"),
        ({"normalize_scale": math.inf}, r"'normalize_scale' .* \(got inf\)"),
        ({"normalize_scale": math.nan}, r"'normalize_scale' .* \(got nan\)"),
        ({"normalize_scale": True}, r"'normalize_scale' .* \(got True\)"),
        ({"normalize_scale": "1"}, r"'normalize_scale' .* \(got '1'\)"),
        (
            {"composition": "mean", "components": (("a", 1.0),)},
            r"MetricSpec 'composition' must be None, 'weighted_sum', 'max' or 'min' "
            r"\(got 'mean'\)",
        ),
        (
            {"components": (("a", 1.0),)},
            r"MetricSpec 'components' must be None when 'composition' is None",
        ),
        (
            {"composition": "max"},
            r"MetricSpec 'components' must be set when 'composition' is 'max' \(got None\)",
        ),
        (
            {"composition": "max", "components": ()},
            r"MetricSpec 'components' must be a non-empty tuple of \(name, weight\) pairs",
        ),
        (
            {"composition": "max", "components": ("a",)},
            r"MetricSpec 'components' must be a tuple of \(name, weight\) pairs \(got 'a'\)",
        ),
        (
            {"composition": "max", "components": (("bad name", 1.0),)},
            r"'components' must be named by 1-64 chars .*\(got 'bad name'\)",
        ),
        (
            {"composition": "max", "components": (("a", 1.0), ("a", 1.0))},
            r"'components' must be free of duplicate names \(got 'a'\)",
        ),
        (
            {"composition": "weighted_sum", "components": (("a", -1.0),)},
            r"'components' weight of 'a' must be a finite number >= 0 \(got -1.0\)",
        ),
        (
            {"composition": "weighted_sum", "components": (("a", True),)},
            r"'components' weight of 'a' must be a finite number >= 0 \(got True\)",
        ),
        (
            {"composition": "weighted_sum", "components": (("a", 0.0), ("b", 0))},
            r"'components' must be weighted with at least one weight > 0",
        ),
        (
            {"composition": "max", "components": (("flake_rate", 1.0),)},
            r"'components' must be free of the composite's own name 'flake_rate'",
        ),
        (
            {"kind": "positive", "composition": "max", "components": (("a", 1.0),)},
            r"MetricSpec 'kind' must be 'bounded' for a composite metric \(got 'positive'\)",
        ),
    ],
)
def test_invalid_specs_name_field_expectation_and_value(
    overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidSpecError, match=message):
        spec(**overrides)


def test_integer_scale_and_list_components_are_normalized() -> None:
    s = spec(normalize_scale=5, composition="weighted_sum", components=[["a", 2], ("b", 1)])
    assert s.normalize_scale == 5.0
    assert isinstance(s.normalize_scale, float)
    assert s.components == (("a", 2.0), ("b", 1.0))
    hash(s)


def test_spec_description_runs_the_gaming_guard() -> None:
    with pytest.raises(GamingGuardError, match="'my approach'") as info:
        spec(description="scores my approach to caching")
    assert info.value.phrase == "my approach"
    assert isinstance(info.value, InvalidSpecError)
    assert isinstance(info.value, ValueError)


# --------------------------------------------------------------------------- JSON


def test_to_json_holds_exactly_the_fields() -> None:
    assert spec().to_json() == {
        "name": "flake_rate",
        "kind": "bounded",
        "unit": "rate",
        "description": "fraction of flaky tests in the suite",
        "version": 1,
        "advisory_only": True,
        "normalize_scale": 1.0,
        "composition": None,
        "components": None,
    }


def test_to_json_writes_components_as_objects() -> None:
    s = spec(composition="weighted_sum", components=(("a", 4.0), ("b", 1.0)))
    assert s.to_json()["components"] == [
        {"name": "a", "weight": 4.0},
        {"name": "b", "weight": 1.0},
    ]


@pytest.mark.parametrize(
    "original",
    [
        spec(),
        spec(kind="positive", unit="ms", normalize_scale=250.0, version=3),
        spec(kind="signed"),
        spec(composition="max", components=(("a", 1.0), ("b", 1.0))),
        spec(composition="weighted_sum", components=(("a", 4.0), ("b", 0.0))),
    ],
)
def test_json_round_trip(original: MetricSpec) -> None:
    import json

    assert MetricSpec.from_json(json.loads(json.dumps(original.to_json()))) == original


def test_from_json_rejects_unknown_keys_naming_key_and_source() -> None:
    data = {**spec().to_json(), "load_bearing": True}
    with pytest.raises(InvalidSpecError, match=r"^custom.json: .*unknown key 'load_bearing'"):
        MetricSpec.from_json(data, source="custom.json")


@pytest.mark.parametrize("key", [f.name for f in dataclasses.fields(MetricSpec)])
def test_from_json_rejects_missing_keys(key: str) -> None:
    data = spec().to_json()
    del data[key]
    with pytest.raises(InvalidSpecError, match=rf"^metrics.json: .*missing key {key!r}"):
        MetricSpec.from_json(data)


def test_from_json_rejects_non_objects_and_bad_components() -> None:
    with pytest.raises(InvalidSpecError, match=r"^metrics.json: .*must be a JSON object"):
        MetricSpec.from_json([])  # type: ignore[arg-type]
    data = spec(composition="max", components=(("a", 1.0),)).to_json()
    data["components"] = [{"name": "a"}]
    with pytest.raises(InvalidSpecError, match=r"exactly the keys 'name' and 'weight'"):
        MetricSpec.from_json(data)


def test_from_json_prefixes_validation_errors_with_the_source() -> None:
    data = {**spec().to_json(), "version": 0}
    with pytest.raises(InvalidSpecError, match=r"^a.json: MetricSpec 'version' must be an int"):
        MetricSpec.from_json(data, source="a.json")
    data = {**spec().to_json(), "description": "what I want"}
    with pytest.raises(GamingGuardError, match=r"^a.json: .*'i want'") as info:
        MetricSpec.from_json(data, source="a.json")
    assert info.value.phrase == "i want"


def test_from_json_refuses_a_promoted_spec() -> None:
    data = {**spec().to_json(), "advisory_only": False}
    with pytest.raises(InvalidSpecError, match="'advisory_only' must be True"):
        MetricSpec.from_json(data)


def test_difference_names_the_first_differing_field() -> None:
    base = spec()
    assert base.difference(spec()) is None
    assert base.difference(spec(version=2)) == "version"
    assert base.difference(spec(unit="per-run", version=2)) == "unit"
    assert base.difference(spec(description="share of flaky tests")) == "description"
    assert spec(kind="positive").difference(spec(kind="positive", normalize_scale=2)) == (
        "normalize_scale"
    )


# --------------------------------------------------------------------------- gaming-guard


def test_forbidden_phrases_are_exported_as_a_tuple() -> None:
    assert isinstance(FORBIDDEN_PHRASES, tuple)
    assert len(FORBIDDEN_PHRASES) == len(set(FORBIDDEN_PHRASES)) == 32
    assert "i want" in FORBIDDEN_PHRASES
    assert "mi actual" in FORBIDDEN_PHRASES


@pytest.mark.parametrize("phrase", FORBIDDEN_PHRASES)
def test_every_phrase_is_rejected_in_context(phrase: str) -> None:
    with pytest.raises(GamingGuardError, match=re.escape(repr(phrase))) as info:
        check_description(f"score of {phrase} here")
    assert info.value.phrase == phrase


@pytest.mark.parametrize("phrase", FORBIDDEN_PHRASES)
def test_every_phrase_is_rejected_in_upper_case_with_odd_spacing(phrase: str) -> None:
    text = "Quality: " + phrase.upper().replace(" ", " \u00a0\t ") + "!"
    with pytest.raises(GamingGuardError) as info:
        check_description(text)
    assert info.value.phrase == phrase


@pytest.mark.parametrize("phrase", FORBIDDEN_PHRASES)
def test_phrases_glued_to_letters_are_not_whole_words(phrase: str) -> None:
    check_description(f"x{phrase}")
    check_description(f"{phrase}x")
    check_description(f"é{phrase}ü")


@pytest.mark.parametrize(
    ("text", "phrase"),
    [
        # English
        ("I want low latency", "i want"),
        ("counts what i prefer", "i prefer"),
        ("probability of my current action being right", "current action"),
        ("my current plan", "my current"),
        ("quality of the action just taken", "the action just taken"),
        ("cost of the last action", "last action"),
        ("rewards me for speed", "rewards me"),
        # German
        ("Qualität meine aktuelle Lösung", "meine aktuelle"),
        ("wie gut meine Entscheidung war", "meine entscheidung"),
        ("Metrik belohnt mich", "belohnt mich"),
        ("BEGÜNSTIGT MEINE Variante", "begünstigt meine"),
        ("mein aktueller Ansatz", "mein aktueller"),
        # French
        ("qualité de ma décision", "ma décision"),
        ("MA DÉCISION", "ma décision"),
        ("mon approche est bonne", "mon approche"),
        ("récompense mon travail", "récompense mon"),
        ("mon actuel", "mon actuel"),
        # Spanish
        ("calidad de mi acción", "mi acción"),
        ("Mi Decisión", "mi decisión"),
        ("mi enfoque", "mi enfoque"),
        ("favorece mi código", "favorece mi"),
        ("mi actual versión", "mi actual"),
        # NFKC and whitespace normalization
        ("I\u00a0 WANT fast builds", "i want"),
        ("I\n\twant", "i want"),
        ("\uff49 \uff57\uff41\uff4e\uff54", "i want"),  # fullwidth letters
        ("ma de\u0301cision", "ma décision"),  # decomposed accent
        ("my\u200b current plan", "my current"),  # zero-width space
        # Identifiers are split into their words first (the seed's red flag).
        ("This metric has prob_correct_for_current_action", "current action"),
        ("probCorrectForCurrentAction", "current action"),
        ("ProbCorrectFor_CURRENT_ACTION", "current action"),
        ("score-of-my-approach", "my approach"),
        ("myCurrentPlan", "my current"),
        ("iWantFastBuilds", "i want"),
        # Self-reference the seed implies.
        ("how well it suits the current approach", "current approach"),
        ("fit of the current strategy", "current strategy"),
    ],
)
def test_gaming_guard_rejects(text: str, phrase: str) -> None:
    with pytest.raises(GamingGuardError, match=re.escape(repr(phrase))) as info:
        check_description(text)
    assert info.value.phrase == phrase
    assert "describe what is measured" in str(info.value)


@pytest.mark.parametrize(
    "text",
    [
        "the api wants a token",
        "they want fewer retries",
        "fraction of failing tests",
        "counts the currently active actions",
        "mon actuelle version",
        "la version actuelle de mon actuelle",
        "mi actualización",
        "meine aktuellen Tests",
        "Wi-Fi wanted: signal strength",
        "my currents and voltages",
        "emi actual",
        # Identifier splitting keeps whole words whole.
        "the_api_wants a token",
        "theApiWants a token",
        "concurrent_actions per worker",
        "recurrentApproach of the model",
        "p99_latency_ms",
    ],
)
def test_gaming_guard_accepts_whole_word_non_matches(text: str) -> None:
    check_description(text)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("prob_correct_for_current_action", "prob correct for current action"),
        ("probCorrectForCurrentAction", "prob Correct For Current Action"),
        ("HTTPServer p99Latency", "HTTP Server p99 Latency"),
        ("kebab-case and snake__case", "kebab case and snake case"),
        ("_private trailing_ x-", "_private trailing_ x-"),
        ("plain words stay as they are", "plain words stay as they are"),
    ],
)
def test_split_identifiers(text: str, words: str) -> None:
    assert split_identifiers(text) == words


# --------------------------------------------------------------------------- metrics


def test_factories_build_the_right_kinds_and_specs() -> None:
    b = bounded_rate("rate", description="fraction of failing tests")
    p = positive_count("lat", description="p99 latency", unit="ms", normalize_scale=250, version=2)
    s = signed_delta("delta", description="loss change", normalize_scale=0.5)
    assert isinstance(b, BoundedRateMetric)
    assert isinstance(p, PositiveCountMetric)
    assert isinstance(s, SignedDeltaMetric)
    assert (b.spec.kind, b.spec.unit, b.spec.normalize_scale) == ("bounded", "rate", 1.0)
    assert (p.spec.kind, p.spec.unit, p.spec.normalize_scale, p.spec.version) == (
        "positive",
        "ms",
        250.0,
        2,
    )
    assert (s.spec.kind, s.spec.unit, s.spec.normalize_scale) == ("signed", "dimensionless", 0.5)
    assert positive_count("c", description="count").spec.normalize_scale == 100.0
    assert b.name == "rate"
    assert repr(p) == "PositiveCountMetric(name='lat', version=2)"


def test_factories_validate_through_the_spec() -> None:
    with pytest.raises(GamingGuardError):
        bounded_rate("r", description="my decision quality")
    with pytest.raises(InvalidSpecError, match="'normalize_scale'"):
        positive_count("c", description="count", normalize_scale=0)
    with pytest.raises(InvalidSpecError, match="'accessor' must be callable"):
        bounded_rate("r", 3, description="rate")  # type: ignore[arg-type]


def test_metric_classes_check_the_spec_kind() -> None:
    with pytest.raises(InvalidSpecError, match=r"'spec.kind' must be 'positive' \(got 'bounded'"):
        PositiveCountMetric(spec())
    with pytest.raises(InvalidSpecError, match=r"'spec' must be a MetricSpec \(got 'x'\)"):
        SignedDeltaMetric("x")  # type: ignore[arg-type]
    composite = spec(composition="max", components=(("a", 1.0),))
    with pytest.raises(InvalidSpecError, match="has a composite spec"):
        BoundedRateMetric(composite)


def test_metric_is_abstract_and_slotted() -> None:
    with pytest.raises(TypeError):
        Metric(spec())  # type: ignore[abstract]
    metric = bounded_rate("r", description="rate")
    assert not hasattr(metric, "__dict__")


def test_raw_defaults_to_identity_and_uses_the_accessor() -> None:
    theta = {"failing": 3, "total": 4, "ms": 50}
    identity = positive_count("n", description="count")
    assert identity.raw(7) == 7
    assert identity.observed(7) == 0.07
    rate = bounded_rate("r", lambda t: (t["failing"], t["total"]), description="rate")
    assert rate.raw(theta) == 0.75
    assert rate.observed(theta) == 0.75
    lat = positive_count("lat", lambda t: t["ms"], description="ms", normalize_scale=200)
    assert lat.raw(theta) == 50
    assert lat.observed(theta) == 0.25


def test_bounded_normalization() -> None:
    m = bounded_rate("r", description="rate")
    assert m.normalize(0) == 0.0
    assert m.normalize(1) == 1.0
    assert m.normalize(0.3) == 0.3
    assert m.normalize((1, 4)) == 0.25
    assert m.normalize([2, 8]) == 0.25
    assert m.normalize((0, 5)) == 0.0
    assert m.normalize(Fraction(1, 3)) == pytest.approx(1 / 3)


def test_positive_normalization() -> None:
    m = positive_count("lat", description="latency", normalize_scale=200.0)
    assert m.normalize(0) == 0.0
    assert m.normalize(50) == 0.25
    assert m.normalize(200) == 1.0
    assert m.normalize(10_000) == 1.0
    assert m.normalize(math.inf) == 1.0
    with pytest.raises(InvalidObservationError, match=r"float range .*got ~1e400"):
        m.normalize(10**400)


def test_signed_normalization() -> None:
    m = signed_delta("d", description="delta", normalize_scale=2.0)
    assert m.normalize(0) == 0.5
    assert m.normalize(2.0) == pytest.approx(1 / (1 + math.exp(-1)))
    assert m.normalize(-2.0) == pytest.approx(1 / (1 + math.exp(1)))
    assert m.normalize(math.inf) == 1.0
    assert m.normalize(-math.inf) == 0.0
    assert m.normalize(-1e308) == 0.0
    with pytest.raises(InvalidObservationError, match=r"float range .*got -~1e400"):
        m.normalize(-(10**400))


@pytest.mark.parametrize(
    ("factory", "value", "message"),
    [
        (positive_count, -3.0, r"metric 'm' \(positive\) expects a number >= 0 \(got -3.0\)"),
        (positive_count, -3, r"metric 'm' \(positive\) expects a number >= 0 \(got -3.0\)"),
        (positive_count, -math.inf, r"\(positive\) expects a number >= 0 \(got -inf\)"),
        (positive_count, math.nan, r"\(positive\) expects a number >= 0 \(got nan\)"),
        (positive_count, True, r"\(positive\) expects a number >= 0 \(got True\)"),
        (positive_count, "12", r"\(positive\) expects a number >= 0 \(got '12'\)"),
        (positive_count, None, r"\(positive\) expects a number >= 0 \(got None\)"),
        (signed_delta, math.nan, r"metric 'm' \(signed\) expects a real number \(got nan\)"),
        (signed_delta, False, r"\(signed\) expects a real number \(got False\)"),
        (signed_delta, 1j, r"\(signed\) expects a real number \(got 1j\)"),
        (bounded_rate, 1.5, r"metric 'm' \(bounded\) expects a number in \[0, 1\] \(got 1.5\)"),
        (bounded_rate, -0.1, r"\(bounded\) expects a number in \[0, 1\] \(got -0.1\)"),
        (bounded_rate, math.inf, r"\(bounded\) expects a number in \[0, 1\] \(got inf\)"),
        (bounded_rate, math.nan, r"\(bounded\) expects a number in \[0, 1\] \(got nan\)"),
        (bounded_rate, True, r"\(bounded\) expects a number in \[0, 1\] \(got True\)"),
        (bounded_rate, "0.5", r"\(bounded\) expects a number in \[0, 1\] \(got '0.5'\)"),
        (bounded_rate, (0, 0), r"total > 0: rate undefined \(got \(0, 0\)\)"),
        (bounded_rate, (1, -2), r"rate undefined \(got \(1, -2\)\)"),
        (bounded_rate, (5, 4), r"with 0 <= failing <= total \(got \(5, 4\)\)"),
        (bounded_rate, (-1, 4), r"with 0 <= failing <= total \(got \(-1, 4\)\)"),
        (bounded_rate, (1, math.inf), r"pair of finite numbers \(got \(1, inf\)\)"),
        (bounded_rate, (True, 2), r"pair of finite numbers \(got True\)"),
    ],
)
def test_invalid_observations_name_metric_expectation_and_value(
    factory: Any, value: Any, message: str
) -> None:
    metric = factory("m", description="a measured quantity")
    with pytest.raises(InvalidObservationError, match=r"^observed: .*" + message):
        metric.normalize(value)
    with pytest.raises(InvalidObservationError, match=message):
        metric.observed(value)


def test_the_field_name_goes_into_the_message() -> None:
    m = positive_count("latency", description="latency")
    with pytest.raises(
        InvalidObservationError,
        match=r"^predicted: metric 'latency' \(positive\) expects a number >= 0 \(got -3.0\)$",
    ):
        m.normalize(-3.0, field="predicted")


def test_bounded_raw_rejects_an_undefined_rate() -> None:
    m = bounded_rate("r", lambda t: t, description="rate")
    with pytest.raises(InvalidObservationError, match="rate undefined"):
        m.raw((0, 0))


# --------------------------------------------------------------------------- metric_from_spec


@pytest.mark.parametrize(
    ("kind", "cls"),
    [
        ("bounded", BoundedRateMetric),
        ("positive", PositiveCountMetric),
        ("signed", SignedDeltaMetric),
    ],
)
def test_metric_from_spec_rebuilds_identity_metrics(kind: str, cls: type[Metric]) -> None:
    s = spec(kind=kind, normalize_scale=4.0)
    metric = metric_from_spec(s)
    assert type(metric) is cls
    assert metric.spec is s
    assert metric.raw(0.5) == 0.5


def test_metric_from_spec_rebuilds_composites_from_components() -> None:
    from pytest_ldd.model.compose import CompositeMetric, weighted_sum

    a = bounded_rate("a", description="rate a")
    b = positive_count("b", description="count b", normalize_scale=10.0)
    original = weighted_sum("ab", [(a, 3.0), (b, 1.0)], description="blend of a and b")
    rebuilt = metric_from_spec(
        MetricSpec.from_json(original.spec.to_json()),
        {"a": metric_from_spec(a.spec), "b": metric_from_spec(b.spec)},
    )
    assert isinstance(rebuilt, CompositeMetric)
    assert rebuilt.spec == original.spec
    # Identity accessors: every component reads theta itself.
    assert rebuilt.observed(0.2) == pytest.approx((3 * 0.2 + 0.02) / 4)


def test_metric_from_spec_needs_every_component() -> None:
    s = spec(name="ab", composition="max", components=(("a", 1.0), ("b", 1.0)))
    with pytest.raises(CompositionError, match=r"'ab' needs its components .*missing \['b'\]"):
        metric_from_spec(s, {"a": bounded_rate("a", description="rate a")})
    with pytest.raises(CompositionError, match=r"missing \['a', 'b'\]"):
        metric_from_spec(s)
