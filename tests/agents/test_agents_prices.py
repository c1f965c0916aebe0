"""ModelPrice, per_million and load_prices (TOML, LiteLLM JSON, mappings, every error)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from pytest_ldd.agents import Cost, Episode, ModelPrice, episode_dollars, load_prices, per_million
from pytest_ldd.errors import PriceError

DATA = Path(__file__).parent.parent / "data" / "prices"


# -- ModelPrice ----------------------------------------------------------------------------


def test_rates_fall_back_as_documented() -> None:
    price = ModelPrice(input=1e-6, output=4e-6)
    assert price.cached_input_rate == pytest.approx(1e-7)
    assert price.cache_write_rate == 1e-6
    assert price.reasoning_rate == 4e-6


def test_published_rates_win_over_fallbacks() -> None:
    price = ModelPrice(
        input=1e-6, output=4e-6, cached_input=5e-7, cache_write=2e-6, reasoning=8e-6
    )
    assert price.cached_input_rate == 5e-7
    assert price.cache_write_rate == 2e-6
    assert price.reasoning_rate == 8e-6


def test_dollars_price_each_disjoint_count_once() -> None:
    price = per_million(2.0, 8.0, cached_input=0.5, cache_write=2.5, reasoning=10.0)
    cost = Cost(
        input_tokens=1000,
        output_tokens=100,
        cached_input_tokens=4000,
        cache_write_tokens=200,
        reasoning_tokens=50,
    )
    # 1000 x 2 + 100 x 8 + 4000 x 0.5 + 200 x 2.5 + 50 x 10 = 5800 per million
    assert price.dollars(cost) == pytest.approx(0.0058, rel=1e-12)
    assert price.dollars(Cost()) == 0.0


def test_dollars_with_fallback_rates() -> None:
    price = per_million(1.0, 2.0)
    cost = Cost(cached_input_tokens=1_000_000, cache_write_tokens=1_000_000, reasoning_tokens=10)
    # cached at 0.1 x input, writes at input, reasoning at output
    assert price.dollars(cost) == pytest.approx(0.1 + 1.0 + 20e-6, rel=1e-12)


def test_the_seed_example_costs_two_dollars() -> None:
    price = per_million(2.0, 6.0)
    assert round(price.dollars(Cost(input_tokens=1_000_000)), 4) == 2.0


def test_dollars_needs_a_cost() -> None:
    with pytest.raises(TypeError, match="Cost"):
        per_million(1.0, 1.0).dollars(3)  # type: ignore[arg-type]


@pytest.mark.parametrize("field", ["input", "output", "cached_input", "cache_write", "reasoning"])
@pytest.mark.parametrize("bad", [-1e-6, math.inf, math.nan, True, "1e-6"])
def test_model_price_rejects_bad_rates(field: str, bad: object) -> None:
    rates: dict[str, Any] = {"input": 1e-6, "output": 1e-6, field: bad}
    with pytest.raises(PriceError, match=field):
        ModelPrice(**rates)


def test_model_price_needs_input_and_output() -> None:
    with pytest.raises(PriceError, match="input"):
        ModelPrice(input=None, output=1e-6)  # type: ignore[arg-type]


@pytest.mark.parametrize("field", ["input", "output", "cached_input", "cache_write", "reasoning"])
def test_per_million_names_the_bad_rate(field: str) -> None:
    rates: dict[str, Any] = {"input": 1.0, "output": 1.0, field: -2.0}
    with pytest.raises(PriceError, match=f"'{field}' must be finite and >= 0"):
        per_million(**rates)


# -- load_prices ---------------------------------------------------------------------------


def test_load_toml_catalog() -> None:
    prices = load_prices(DATA / "prices.toml")
    assert sorted(prices) == [
        "claude-sonnet-4-20250514",
        "house-model",
        "o3-mini-2025-01-31",
        "o4-mini-2025-04-16",
    ]
    assert prices["claude-sonnet-4-20250514"] == ModelPrice(
        input=3e-6, output=15e-6, cached_input=0.3e-6, cache_write=3.75e-6
    )
    house = prices["house-model"]
    assert house.cached_input is None
    assert house.cached_input_rate == pytest.approx(1e-7)
    assert house.reasoning == pytest.approx(3e-6)


def test_load_toml_accepts_a_str_path() -> None:
    assert load_prices(str(DATA / "prices.toml")) == load_prices(DATA / "prices.toml")


def test_load_litellm_catalog_skips_sample_spec_and_unpriced_entries() -> None:
    prices = load_prices(DATA / "litellm.json")
    # dall-e-3 (per pixel), whisper-1 (per second), the moderation model (no output
    # price) and sample_spec are not per-token chat prices.
    assert sorted(prices) == [
        "claude-sonnet-4-20250514",
        "o3-mini-2025-01-31",
        "text-embedding-3-small",
    ]
    assert prices["o3-mini-2025-01-31"] == ModelPrice(
        input=1.1e-6, output=4.4e-6, cached_input=5.5e-7
    )
    assert prices["claude-sonnet-4-20250514"].cache_write == 3.75e-6


def test_toml_and_litellm_agree_on_shared_models() -> None:
    toml = load_prices(DATA / "prices.toml")
    litellm = load_prices(DATA / "litellm.json")
    for model in ("o3-mini-2025-01-31", "claude-sonnet-4-20250514"):
        for field in ("input", "output", "cached_input", "cache_write"):
            want, got = getattr(toml[model], field), getattr(litellm[model], field)
            assert (want is None and got is None) or want == pytest.approx(got, rel=1e-12)


def test_load_mapping_in_every_style() -> None:
    given = ModelPrice(input=1e-6, output=2e-6)
    prices = load_prices(
        {
            "a": given,
            "b": {"input_per_million": 1.0, "output_per_million": 2.0},
            "c": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6, "mode": "chat"},
            "sample_spec": {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0},
            "image": {"input_cost_per_pixel": 1e-8},
        }
    )
    assert sorted(prices) == ["a", "b", "c"]
    assert prices["a"] is given
    for field in ("input", "output"):
        assert getattr(prices["b"], field) == pytest.approx(getattr(given, field))
        assert getattr(prices["c"], field) == getattr(given, field)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('[models."m"]\ninput_per_million = -1.0\noutput_per_million = 1.0\n', r"'m'.*input"),
        ('[models."m"]\ninput_per_million = 1.0\noutput_per_million = inf\n', r"'m'.*output"),
        ('[models."m"]\ninput_per_million = nan\noutput_per_million = 1.0\n', r"'m'.*input"),
        ('[models."m"]\ninput_per_million = "1"\noutput_per_million = 1.0\n', r"'m'.*number"),
        ('[models."m"]\ninput_per_million = true\noutput_per_million = 1.0\n', r"'m'.*number"),
        ('[models."m"]\ninput_per_million = 1.0\n', r"'m'.*'output_per_million' is required"),
        (
            '[models."m"]\ninput_per_million = 1.0\noutput_per_million = 1.0\n'
            "cached_per_million = 0.1\n",
            r"'m'.*unknown key 'cached_per_million'",
        ),
        (
            '[models."m"]\ninput_per_million = 1.0\noutput_per_million = 1.0\n'
            "cache_write_per_million = -0.1\n",
            r"'m'.*cache_write_per_million",
        ),
        ('[models."m"]\ninput = 1.0\noutput = 1.0\n', r"'m' must be a table with"),
        ("[models]\nm = 3\n", r"'m' must be a table with"),
        ("[prices]\n", r"must have a \[models\] table"),
        ("[models]\n", "no priced model"),
        ("[models\n", "not valid TOML"),
    ],
)
def test_toml_errors_name_the_model_and_field(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(PriceError, match=match):
        load_prices(_write(tmp_path, "prices.toml", text))


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('{"m": {"input_cost_per_token": -1e-6, "output_cost_per_token": 1e-6}}', r"'m'.*input"),
        ('{"m": {"input_cost_per_token": 1e-6, "output_cost_per_token": NaN}}', r"'m'.*output"),
        (
            '{"m": {"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-6,'
            ' "cache_read_input_token_cost": Infinity}}',
            r"'m'.*cache_read_input_token_cost",
        ),
        (
            '{"m": {"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-6,'
            ' "output_cost_per_reasoning_token": "x"}}',
            r"'m'.*output_cost_per_reasoning_token",
        ),
        ('{"m": 3}', r"'m' must map to a ModelPrice or a dict"),
        ("[1, 2]", "JSON object of models"),
        ('{"sample_spec": {}}', "no priced model"),
        ("{", "not valid JSON"),
    ],
)
def test_json_errors_name_the_model_and_field(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(PriceError, match=match):
        load_prices(_write(tmp_path, "catalog.json", text))


@pytest.mark.parametrize(
    ("source", "match"),
    [
        ({"m": {"input_per_million": -1.0, "output_per_million": 1.0}}, r"'m'.*input"),
        ({"m": {"input_per_million": 1.0}}, r"'m'.*'output_per_million' is required"),
        ({"": ModelPrice(1e-6, 1e-6)}, "model names"),
        ({3: ModelPrice(1e-6, 1e-6)}, "model names"),
        ({"m": [1e-6, 1e-6]}, r"'m' must map to a ModelPrice or a dict"),
        ({}, "no priced model"),
        (3, "'source' must be a path or a mapping"),
    ],
)
def test_mapping_errors(source: Any, match: str) -> None:
    with pytest.raises(PriceError, match=match):
        load_prices(source)


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(PriceError, match=r"must end in \.toml or \.json"):
        load_prices(_write(tmp_path, "prices.yaml", "m: 1"))
    with pytest.raises(PriceError, match="cannot read price file"):
        load_prices(tmp_path / "missing.toml")


# -- pricing episodes ----------------------------------------------------------------------


def test_episode_dollars_rules() -> None:
    cheap, dear = per_million(1.0, 1.0), per_million(10.0, 10.0)
    cost = Cost(input_tokens=1_000_000)
    named = Episode("t", cost=cost, model="dear")
    anonymous = Episode("t", cost=cost)
    catalog = {"dear": dear, "cheap": cheap}
    assert episode_dollars(named, prices=catalog) == pytest.approx(10.0)
    assert episode_dollars(named, price=cheap) == pytest.approx(1.0)
    assert episode_dollars(anonymous, price=cheap, prices=catalog) == pytest.approx(1.0)
    assert episode_dollars(anonymous, prices=catalog, model="cheap") == pytest.approx(1.0)
    assert episode_dollars(named, prices=catalog, model="cheap") == pytest.approx(10.0)
    assert episode_dollars(anonymous) is None
    with pytest.raises(PriceError, match="'gpt-x'"):
        episode_dollars(Episode("t", model="gpt-x"), prices=catalog)
    with pytest.raises(PriceError, match="no 'model'"):
        episode_dollars(anonymous, prices=catalog)
