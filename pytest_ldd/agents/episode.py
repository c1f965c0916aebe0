"""What an agent run leaves behind: its :class:`Episode` and the :class:`Cost` it spent.

Token counts in a :class:`Cost` are *disjoint*: every token is counted in exactly one
field, so pricing a cost is a plain dot product of counts and per-token rates.  Provider
usage objects are not disjoint (OpenAI's prompt tokens include the cached ones, its
completion tokens include the reasoning ones); :meth:`Cost.from_usage` takes them apart.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, final

from pytest_ldd.errors import InvalidObservationError

__all__ = ["Cost", "Episode"]

_TOKEN_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)

_PROVIDERS = ("anthropic", "openai")


def _count(owner: str, name: str, value: object) -> int:
    """Return *value* if it is a non-negative int (bools are not counts)."""
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"{owner} {name!r} must be an int >= 0 (got {value!r})"
        raise InvalidObservationError(msg)
    if value < 0:
        msg = f"{owner} {name!r} must be >= 0 (got {value!r})"
        raise InvalidObservationError(msg)
    return value


@final
@dataclass(frozen=True, slots=True)
class Cost:
    """What one episode spent, in disjoint token counts, retries and wall time.

    ``input_tokens`` excludes cached and cache-write tokens; ``output_tokens`` excludes
    reasoning tokens.  Costs add up with ``+`` and ``sum()``.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    retries: int = 0
    latency_s: float = 0.0

    def __post_init__(self) -> None:
        for name in (*_TOKEN_FIELDS, "retries"):
            _count("Cost", name, getattr(self, name))
        latency = self.latency_s
        if (
            isinstance(latency, bool)
            or not isinstance(latency, (int, float))
            or not math.isfinite(latency)
            or latency < 0
        ):
            msg = f"Cost 'latency_s' must be a finite number >= 0 (got {latency!r})"
            raise InvalidObservationError(msg)
        object.__setattr__(self, "latency_s", float(latency))

    @property
    def total_tokens(self) -> int:
        """Every token of the episode, each counted once."""
        return sum(getattr(self, name) for name in _TOKEN_FIELDS)

    def __add__(self, other: object) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        )

    def __radd__(self, other: object) -> Cost:
        # sum() starts from the int 0.
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self
        return NotImplemented

    @classmethod
    def from_usage(cls, usage: object, provider: str) -> Cost:
        """Convert a provider's usage object (a dict or an SDK object) into disjoint counts.

        ``provider`` is ``"openai"`` (chat-completions usage with ``prompt_tokens`` /
        ``completion_tokens``, or responses usage with ``input_tokens`` /
        ``output_tokens``) or ``"anthropic"``.  Missing or ``None`` fields count as 0.
        """
        if provider == "openai":
            if _has_any(usage, "prompt_tokens", "completion_tokens"):
                return _openai(usage, "prompt_tokens", "completion_tokens", "prompt", "completion")
            if _has_any(usage, "input_tokens", "output_tokens"):
                return _openai(usage, "input_tokens", "output_tokens", "input", "output")
            msg = (
                "OpenAI usage must have 'prompt_tokens'/'completion_tokens' (chat completions)"
                f" or 'input_tokens'/'output_tokens' (responses) (got {usage!r})"
            )
            raise InvalidObservationError(msg)
        if provider == "anthropic":
            if not _has_any(usage, "input_tokens", "output_tokens"):
                msg = f"Anthropic usage must have 'input_tokens'/'output_tokens' (got {usage!r})"
                raise InvalidObservationError(msg)
            # Anthropic already reports input_tokens without the cache reads and writes.
            # Thinking tokens are inside output_tokens and not reported apart, so they are
            # priced as output (the default reasoning rate).
            return cls(
                input_tokens=_usage_count(usage, "input_tokens"),
                output_tokens=_usage_count(usage, "output_tokens"),
                cached_input_tokens=_usage_count(usage, "cache_read_input_tokens"),
                cache_write_tokens=_usage_count(usage, "cache_creation_input_tokens"),
            )
        msg = f"'provider' must be one of {', '.join(map(repr, _PROVIDERS))} (got {provider!r})"
        raise InvalidObservationError(msg)


def _get(obj: object, name: str) -> Any:
    """Read *name* from a mapping or an attribute object; missing is None."""
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _has_any(usage: object, *names: str) -> bool:
    return any(_get(usage, name) is not None for name in names)


def _usage_count(usage: object, name: str, details: str | None = None) -> int:
    """The count at ``usage.name`` or ``usage.details.name``; missing or None is 0."""
    holder = _get(usage, details) if details else usage
    value = _get(holder, name)
    if value is None:
        return 0
    return _count("usage", f"{details}.{name}" if details else name, value)


def _openai(usage: object, inp: str, out: str, inp_word: str, out_word: str) -> Cost:
    """OpenAI usage in either shape: input includes cached, output includes reasoning."""
    total_in = _usage_count(usage, inp)
    total_out = _usage_count(usage, out)
    cached = _usage_count(usage, "cached_tokens", f"{inp_word}_tokens_details")
    reasoning = _usage_count(usage, "reasoning_tokens", f"{out_word}_tokens_details")
    if cached > total_in:
        msg = f"usage cached_tokens must be <= {inp!r} (got {cached} > {total_in})"
        raise InvalidObservationError(msg)
    if reasoning > total_out:
        msg = f"usage reasoning_tokens must be <= {out!r} (got {reasoning} > {total_out})"
        raise InvalidObservationError(msg)
    return Cost(
        input_tokens=total_in - cached,
        output_tokens=total_out - reasoning,
        cached_input_tokens=cached,
        reasoning_tokens=reasoning,
    )


@final
@dataclass(frozen=True, slots=True)
class Episode:
    """One run of an agent on one task: what it answered, the state it left, what it cost.

    An episode never holds the gold answer; the gold is given to the checker apart, so
    nothing the agent produced can see or overwrite it.
    """

    task_id: str
    output: Any = None
    final_state: Any = None
    workspace: str | os.PathLike[str] | None = None
    trajectory: Sequence[Any] = ()
    cost: Cost = field(default_factory=Cost)
    success: bool | None = None
    model: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Read as plain objects: the annotations say what is valid, not what was passed.
        task_id: object = self.task_id
        workspace: object = self.workspace
        trajectory: object = self.trajectory
        cost: object = self.cost
        success: object = self.success
        model: object = self.model
        meta: object = self.meta
        if not isinstance(task_id, str) or not task_id:
            msg = f"Episode 'task_id' must be a non-empty str (got {task_id!r})"
            raise InvalidObservationError(msg)
        if workspace is not None:
            if not isinstance(workspace, (str, os.PathLike)):
                msg = f"Episode 'workspace' must be a path or None (got {workspace!r})"
                raise InvalidObservationError(msg)
            # Stored as a Path whatever was given, so verifiers can rely on one type.
            object.__setattr__(self, "workspace", Path(os.fspath(workspace)))
        if isinstance(trajectory, (str, bytes)) or not isinstance(trajectory, Iterable):
            msg = f"Episode 'trajectory' must be a sequence of steps (got {trajectory!r})"
            raise InvalidObservationError(msg)
        object.__setattr__(self, "trajectory", tuple(trajectory))
        if not isinstance(cost, Cost):
            msg = f"Episode 'cost' must be a Cost (got {cost!r})"
            raise InvalidObservationError(msg)
        if success is not None and not isinstance(success, bool):
            msg = f"Episode 'success' must be a bool or None (got {success!r})"
            raise InvalidObservationError(msg)
        if model is not None and (not isinstance(model, str) or not model):
            msg = f"Episode 'model' must be a non-empty str or None (got {model!r})"
            raise InvalidObservationError(msg)
        if not isinstance(meta, Mapping):
            msg = f"Episode 'meta' must be a mapping (got {meta!r})"
            raise InvalidObservationError(msg)
        # A copy, so that mutating the caller's dict later cannot change a recorded episode.
        object.__setattr__(self, "meta", dict(meta))
