"""What tokens cost: :class:`ModelPrice`, :func:`per_million` and :func:`load_prices`.

Rates are USD per token.  Because a :class:`~pytest_ldd.agents.Cost` counts every token
in exactly one field, ``price.dollars(cost)`` is a plain sum of count x rate.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

from pytest_ldd.agents.episode import Cost, Episode
from pytest_ldd.errors import PriceError

__all__ = ["ModelPrice", "episode_dollars", "load_prices", "per_million"]

_MILLION = 1_000_000.0

# Without a published cached rate, cache reads cost a tenth of input (the common discount).
_CACHED_DISCOUNT = 0.1

# [models."name"] keys of the TOML catalog, mapped to ModelPrice fields.
_TOML_KEYS = {
    "input_per_million": "input",
    "output_per_million": "output",
    "cached_input_per_million": "cached_input",
    "cache_write_per_million": "cache_write",
    "reasoning_per_million": "reasoning",
}

# LiteLLM's model_prices_and_context_window.json keys (USD per token).
_LITELLM_KEYS = {
    "input_cost_per_token": "input",
    "output_cost_per_token": "output",
    "cache_read_input_token_cost": "cached_input",
    "cache_creation_input_token_cost": "cache_write",
    "output_cost_per_reasoning_token": "reasoning",
}

# LiteLLM documents its schema in an entry of this name; it is not a model.
_LITELLM_SAMPLE = "sample_spec"


def _rate(where: str, name: str, value: object, *, scale: float = 1.0) -> float:
    """Validate one price (finite, >= 0, a real number) and return it per token."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        msg = f"{where}: {name!r} must be a number (got {value!r})"
        raise PriceError(msg)
    if not math.isfinite(value) or value < 0:
        msg = f"{where}: {name!r} must be finite and >= 0 (got {value!r})"
        raise PriceError(msg)
    return float(value) / scale


@final
@dataclass(frozen=True, slots=True)
class ModelPrice:
    """USD per token for one model.

    Missing rates fall back: cached input costs 0.1 x input, a cache write costs the
    input rate, a reasoning token costs the output rate.
    """

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None
    reasoning: float | None = None

    def __post_init__(self) -> None:
        for name in ("input", "output", "cached_input", "cache_write", "reasoning"):
            value = getattr(self, name)
            if value is not None or name in ("input", "output"):
                object.__setattr__(self, name, _rate("ModelPrice", name, value))

    @property
    def cached_input_rate(self) -> float:
        """USD per cached input token (the published rate, else 0.1 x input)."""
        return self.input * _CACHED_DISCOUNT if self.cached_input is None else self.cached_input

    @property
    def cache_write_rate(self) -> float:
        """USD per token written to the prompt cache (the published rate, else input)."""
        return self.input if self.cache_write is None else self.cache_write

    @property
    def reasoning_rate(self) -> float:
        """USD per reasoning token (the published rate, else output)."""
        return self.output if self.reasoning is None else self.reasoning

    def dollars(self, cost: Cost) -> float:
        """What *cost* comes to in USD."""
        given: object = cost
        if not isinstance(given, Cost):
            msg = f"'cost' must be a Cost (got {given!r})"
            raise TypeError(msg)
        return math.fsum(
            (
                cost.input_tokens * self.input,
                cost.output_tokens * self.output,
                cost.cached_input_tokens * self.cached_input_rate,
                cost.cache_write_tokens * self.cache_write_rate,
                cost.reasoning_tokens * self.reasoning_rate,
            )
        )


def per_million(
    input: float,
    output: float,
    *,
    cached_input: float | None = None,
    cache_write: float | None = None,
    reasoning: float | None = None,
) -> ModelPrice:
    """A :class:`ModelPrice` from USD-per-million-token rates, as price pages quote them."""
    where = "per_million"
    return ModelPrice(
        input=_rate(where, "input", input, scale=_MILLION),
        output=_rate(where, "output", output, scale=_MILLION),
        cached_input=None
        if cached_input is None
        else _rate(where, "cached_input", cached_input, scale=_MILLION),
        cache_write=None
        if cache_write is None
        else _rate(where, "cache_write", cache_write, scale=_MILLION),
        reasoning=None
        if reasoning is None
        else _rate(where, "reasoning", reasoning, scale=_MILLION),
    )


def load_prices(
    source: str | os.PathLike[str] | Mapping[str, Any],
) -> dict[str, ModelPrice]:
    """Load a ``{model: ModelPrice}`` catalog.

    *source* is a ``.toml`` file (``[models."name"]`` tables with ``input_per_million``,
    ``output_per_million`` and optional ``cached_input_per_million``,
    ``cache_write_per_million``, ``reasoning_per_million``), a LiteLLM-style ``.json``
    catalog (``input_cost_per_token``, ...; ``sample_spec`` and entries without an input
    and an output price are skipped), or a mapping of model names to :class:`ModelPrice`
    objects or to dicts in either style.  Any bad price raises :class:`PriceError` naming
    the model and the field; so does a catalog that holds no priced model at all.
    """
    given: object = source
    if isinstance(given, Mapping):
        return _from_entries(given, "prices")
    if not isinstance(given, (str, os.PathLike)):
        msg = f"'source' must be a path or a mapping (got {source!r})"
        raise PriceError(msg)
    path = Path(os.fspath(given))
    suffix = path.suffix.lower()
    if suffix not in (".toml", ".json"):
        msg = f"price file {str(path)!r} must end in .toml or .json (got {path.suffix!r})"
        raise PriceError(msg)
    try:
        raw = path.read_bytes()
    except OSError as err:
        msg = f"cannot read price file {str(path)!r}: {err.strerror or err}"
        raise PriceError(msg) from err
    if suffix == ".json":
        return _from_entries(_parse_json(path, raw), str(path))
    document = _parse_toml(path, raw)
    models = document.get("models")
    if not isinstance(models, dict):
        msg = f"price file {str(path)!r} must have a [models] table (got {models!r})"
        raise PriceError(msg)
    for model, entry in models.items():
        if not isinstance(entry, dict) or not any(key in _TOML_KEYS for key in entry):
            # In TOML there is one style only: a table that names no known key is a typo.
            msg = (
                f"{str(path)!r}: model {model!r} must be a table with 'input_per_million'"
                f" and 'output_per_million' (got {entry!r})"
            )
            raise PriceError(msg)
    return _from_entries(models, str(path))


def _parse_json(path: Path, raw: bytes) -> Any:
    try:
        document = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as err:
        msg = f"price file {str(path)!r} is not valid JSON: {err}"
        raise PriceError(msg) from err
    if not isinstance(document, dict):
        msg = f"price file {str(path)!r} must hold a JSON object of models (got {document!r})"
        raise PriceError(msg)
    return document


def _parse_toml(path: Path, raw: bytes) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]
    try:
        document: dict[str, Any] = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        msg = f"price file {str(path)!r} is not valid TOML: {err}"
        raise PriceError(msg) from err
    return document


def _from_entries(entries: Mapping[Any, Any], where: str) -> dict[str, ModelPrice]:
    """Build the catalog from one entry per model, in whichever style each entry uses."""
    catalog: dict[str, ModelPrice] = {}
    for model, entry in entries.items():
        if not isinstance(model, str) or not model:
            msg = f"{where}: model names must be non-empty str (got {model!r})"
            raise PriceError(msg)
        if isinstance(entry, ModelPrice):
            catalog[model] = entry
            continue
        if not isinstance(entry, Mapping):
            msg = f"{where}: model {model!r} must map to a ModelPrice or a dict (got {entry!r})"
            raise PriceError(msg)
        if _is_toml_style(entry):
            catalog[model] = _toml_style(model, entry, where)
        elif model != _LITELLM_SAMPLE:
            price = _litellm_style(model, entry, where)
            if price is not None:
                catalog[model] = price
    if not catalog:
        msg = f"{where}: no priced model found (got {len(entries)} entries)"
        raise PriceError(msg)
    return catalog


def _is_toml_style(entry: Mapping[Any, Any]) -> bool:
    return any(isinstance(key, str) and key.endswith("_per_million") for key in entry)


def _toml_style(model: str, entry: Mapping[Any, Any], where: str) -> ModelPrice:
    """A strict ``*_per_million`` entry: unknown keys and missing rates are errors."""
    context = f"{where}: model {model!r}"
    unknown = sorted(str(key) for key in entry if key not in _TOML_KEYS)
    if unknown:
        msg = f"{context}: unknown key {unknown[0]!r} (expected one of {', '.join(_TOML_KEYS)})"
        raise PriceError(msg)
    for key in ("input_per_million", "output_per_million"):
        if key not in entry:
            msg = f"{context}: {key!r} is required"
            raise PriceError(msg)
    rates = {
        field: _rate(context, key, entry[key], scale=_MILLION)
        for key, field in _TOML_KEYS.items()
        if key in entry
    }
    return ModelPrice(**rates)


def _litellm_style(model: str, entry: Mapping[Any, Any], where: str) -> ModelPrice | None:
    """A LiteLLM entry; None when it is not priced per token (images, audio, ...)."""
    if entry.get("input_cost_per_token") is None or entry.get("output_cost_per_token") is None:
        return None
    context = f"{where}: model {model!r}"
    rates = {
        field: _rate(context, key, entry[key])
        for key, field in _LITELLM_KEYS.items()
        if entry.get(key) is not None
    }
    return ModelPrice(**rates)


def episode_dollars(
    episode: Episode,
    *,
    price: ModelPrice | None = None,
    prices: Mapping[str, ModelPrice] | None = None,
    model: str | None = None,
) -> float | None:
    """What *episode* cost in USD, or None when no price information was given.

    The model is ``episode.model``, else *model*.  With *prices* and a model, the
    model's entry is used (an unknown model is a :class:`PriceError` naming it);
    otherwise *price* applies to every episode.  *prices* without any model and
    without *price* is a :class:`PriceError` too: the cost cannot be known.
    """
    name = episode.model if episode.model is not None else model
    if prices is not None and name is not None:
        try:
            chosen = prices[name]
        except KeyError:
            known = ", ".join(sorted(prices)[:8]) or "none"
            msg = f"no price for model {name!r} of task {episode.task_id!r} (known: {known})"
            raise PriceError(msg) from None
        return chosen.dollars(episode.cost)
    if price is not None:
        return price.dollars(episode.cost)
    if prices is not None:
        msg = (
            f"episode of task {episode.task_id!r} has no 'model' to look up in the price"
            " catalog (set Episode.model, a default model, or a single 'price')"
        )
        raise PriceError(msg)
    return None
