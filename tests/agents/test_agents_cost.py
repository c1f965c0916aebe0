"""Cost (disjoint token counts, from_usage on recorded payloads) and Episode."""

from __future__ import annotations

import json
import math
from dataclasses import FrozenInstanceError
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_ldd.agents import Cost, Episode, load_prices
from pytest_ldd.errors import InvalidObservationError

USAGE = Path(__file__).parent.parent / "data" / "usage"
PRICES = Path(__file__).parent.parent / "data" / "prices" / "prices.toml"


def _recorded(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((USAGE / name).read_text(encoding="utf-8"))
    return data


def _as_attributes(value: Any) -> Any:
    """The same payload as SDK-like objects with attributes instead of keys."""
    if isinstance(value, dict):
        return SimpleNamespace(**{key: _as_attributes(item) for key, item in value.items()})
    return value


# -- Cost values -------------------------------------------------------------------------


def test_cost_defaults_to_zero_and_is_frozen() -> None:
    cost = Cost()
    assert cost.total_tokens == 0
    assert cost.latency_s == 0.0
    with pytest.raises(FrozenInstanceError):
        cost.input_tokens = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    "field",
    [
        "input_tokens",
        "output_tokens",
        "cached_input_tokens",
        "cache_write_tokens",
        "reasoning_tokens",
        "retries",
    ],
)
@pytest.mark.parametrize("bad", [-1, 1.0, True, "3", None])
def test_cost_counts_must_be_non_negative_ints(field: str, bad: object) -> None:
    with pytest.raises(InvalidObservationError, match=field):
        Cost(**{field: bad})  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-0.1, math.inf, math.nan, True, "1"])
def test_cost_latency_must_be_finite_and_non_negative(bad: object) -> None:
    with pytest.raises(InvalidObservationError, match="latency_s"):
        Cost(latency_s=bad)  # type: ignore[arg-type]


def test_cost_latency_int_is_stored_as_float() -> None:
    cost = Cost(latency_s=2)
    assert cost.latency_s == 2.0
    assert isinstance(cost.latency_s, float)


def test_costs_add_field_by_field_and_sum() -> None:
    a = Cost(input_tokens=1, output_tokens=2, cached_input_tokens=3, retries=1, latency_s=0.5)
    b = Cost(cache_write_tokens=4, reasoning_tokens=5, retries=2, latency_s=1.25)
    assert a + b == Cost(1, 2, 3, 4, 5, retries=3, latency_s=1.75)
    assert sum([a, b]) == a + b
    assert sum([], Cost()) == Cost()
    assert sum([a]) == a


def test_cost_does_not_add_other_things() -> None:
    with pytest.raises(TypeError):
        Cost() + 1  # type: ignore[operator, unused-ignore]
    with pytest.raises(TypeError):
        1 + Cost()  # type: ignore[operator, unused-ignore]


# -- from_usage on recorded payloads -------------------------------------------------------


def test_openai_chat_usage_is_taken_apart() -> None:
    payload = _recorded("openai_chat.json")
    cost = Cost.from_usage(payload["usage"], "openai")
    # prompt 2006 includes 1920 cached; completion 300 includes 192 reasoning.
    assert cost == Cost(
        input_tokens=86, output_tokens=108, cached_input_tokens=1920, reasoning_tokens=192
    )
    assert cost.total_tokens == payload["usage"]["total_tokens"]


def test_openai_responses_usage_is_taken_apart() -> None:
    payload = _recorded("openai_responses.json")
    cost = Cost.from_usage(payload["usage"], "openai")
    assert cost == Cost(
        input_tokens=242, output_tokens=162, cached_input_tokens=1280, reasoning_tokens=1024
    )
    assert cost.total_tokens == payload["usage"]["total_tokens"]


def test_anthropic_usage_keeps_its_already_disjoint_counts() -> None:
    payload = _recorded("anthropic.json")
    cost = Cost.from_usage(payload["usage"], "anthropic")
    assert cost == Cost(
        input_tokens=21, output_tokens=393, cached_input_tokens=12416, cache_write_tokens=1888
    )


@pytest.mark.parametrize(
    ("name", "provider", "dollars"),
    [
        # 86 x 1.10 + 1920 x 0.55 + (108 + 192) x 4.40, per million
        ("openai_chat.json", "openai", 2470.6e-6),
        # 242 x 1.10 + 1280 x 0.275 + (162 + 1024) x 4.40, per million
        ("openai_responses.json", "openai", 5836.6e-6),
        # 21 x 3 + 1888 x 3.75 + 12416 x 0.30 + 393 x 15, per million
        ("anthropic.json", "anthropic", 16762.8e-6),
    ],
)
def test_recorded_payloads_cost_what_the_price_pages_say(
    name: str, provider: str, dollars: float
) -> None:
    payload = _recorded(name)
    price = load_prices(PRICES)[payload["model"]]
    cost = Cost.from_usage(payload["usage"], provider)
    assert price.dollars(cost) == pytest.approx(dollars, rel=1e-12)


@pytest.mark.parametrize(
    ("name", "provider"),
    [
        ("openai_chat.json", "openai"),
        ("openai_responses.json", "openai"),
        ("anthropic.json", "anthropic"),
    ],
)
def test_sdk_objects_with_attributes_read_like_dicts(name: str, provider: str) -> None:
    usage = _recorded(name)["usage"]
    assert Cost.from_usage(_as_attributes(usage), provider) == Cost.from_usage(usage, provider)


def test_missing_or_none_details_count_as_zero() -> None:
    chat = {"prompt_tokens": 10, "completion_tokens": 5, "prompt_tokens_details": None}
    assert Cost.from_usage(chat, "openai") == Cost(input_tokens=10, output_tokens=5)
    responses = SimpleNamespace(
        input_tokens=7, output_tokens=3, input_tokens_details=None, output_tokens_details=None
    )
    assert Cost.from_usage(responses, "openai") == Cost(input_tokens=7, output_tokens=3)
    partial = {"input_tokens": 4, "output_tokens": 2, "output_tokens_details": {}}
    assert Cost.from_usage(partial, "openai") == Cost(input_tokens=4, output_tokens=2)
    anthropic = {"input_tokens": 4, "output_tokens": 2, "cache_read_input_tokens": None}
    assert Cost.from_usage(anthropic, "anthropic") == Cost(input_tokens=4, output_tokens=2)


def test_cached_tokens_beyond_the_prompt_are_an_error() -> None:
    usage = {
        "prompt_tokens": 10,
        "completion_tokens": 1,
        "prompt_tokens_details": {"cached_tokens": 11},
    }
    with pytest.raises(InvalidObservationError, match="cached_tokens"):
        Cost.from_usage(usage, "openai")
    usage = {
        "input_tokens": 1,
        "output_tokens": 2,
        "output_tokens_details": {"reasoning_tokens": 3},
    }
    with pytest.raises(InvalidObservationError, match="reasoning_tokens"):
        Cost.from_usage(usage, "openai")


@pytest.mark.parametrize(
    ("usage", "provider", "match"),
    [
        ({"total_tokens": 3}, "openai", "prompt_tokens"),
        ({}, "anthropic", "input_tokens"),
        ({"input_tokens": 1}, "gemini", "provider"),
        ({"prompt_tokens": -1, "completion_tokens": 0}, "openai", "prompt_tokens"),
        ({"input_tokens": 1.5, "output_tokens": 0}, "anthropic", "input_tokens"),
        (
            {
                "input_tokens": 1,
                "output_tokens": 1,
                "input_tokens_details": {"cached_tokens": "1"},
            },
            "openai",
            "cached_tokens",
        ),
    ],
)
def test_malformed_usage_is_an_error(usage: object, provider: str, match: str) -> None:
    with pytest.raises(InvalidObservationError, match=match):
        Cost.from_usage(usage, provider)


# -- Episode -------------------------------------------------------------------------------


def test_episode_defaults_and_normalization(tmp_path: Path) -> None:
    meta = {"seed": 1}
    episode = Episode("t1", trajectory=["a", "b"], workspace=str(tmp_path), meta=meta)
    assert episode.trajectory == ("a", "b")
    assert episode.workspace == tmp_path
    assert episode.cost == Cost()
    assert episode.success is None
    assert episode.model is None
    meta["seed"] = 2
    assert episode.meta == {"seed": 1}
    with pytest.raises(FrozenInstanceError):
        episode.output = "x"  # type: ignore[misc]


def test_episode_has_no_gold() -> None:
    assert "gold" not in Episode.__dataclass_fields__


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"task_id": ""}, "task_id"),
        ({"task_id": 3}, "task_id"),
        ({"task_id": "t", "cost": 3}, "cost"),
        ({"task_id": "t", "success": 1}, "success"),
        ({"task_id": "t", "model": ""}, "model"),
        ({"task_id": "t", "meta": [1]}, "meta"),
        ({"task_id": "t", "trajectory": "abc"}, "trajectory"),
        ({"task_id": "t", "workspace": 3}, "workspace"),
    ],
)
def test_episode_rejects_bad_fields(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidObservationError, match=match):
        Episode(**kwargs)
