"""The session's corpus of graded episodes: :func:`grade` one, :class:`CorpusTally` them all.

A tally keeps counts and sums only, per ``(group, task)`` cell, so tallies from many
tests, workers or sessions merge into exactly the tally of the whole corpus.  Dollars
are summed as whole picodollars (10^-12 USD): integer sums do not depend on the order
of additions, so a corpus split across xdist workers reports the same digits as the
same corpus run serially.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, final

from pytest_ldd.agents.checkers import Checker, resolve_checker, run_check
from pytest_ldd.agents.episode import Episode
from pytest_ldd.agents.metrics import wilson_interval
from pytest_ldd.agents.prices import ModelPrice, episode_dollars
from pytest_ldd.agents.trials import pass_at_k, pass_hat_k
from pytest_ldd.errors import InvalidObservationError

__all__ = ["SCHEMA_VERSION", "CorpusTally", "GradedEpisode", "grade"]

#: Version of the :meth:`CorpusTally.to_dict` document.
SCHEMA_VERSION = 1

_PICO = 10**12

_CELL_KEYS = ("group", "task_id", "n", "successes", "priced", "picodollars")


@final
@dataclass(frozen=True, slots=True)
class GradedEpisode:
    """One episode after grading: did it succeed, what did it cost, and why.

    ``dollars`` is None when no price information was given.
    """

    task_id: str
    success: bool
    dollars: float | None
    detail: str


def grade(
    episode: Episode,
    gold: Any,
    *,
    check: str | Checker,
    price: ModelPrice | None = None,
    prices: Mapping[str, ModelPrice] | None = None,
    model: str | None = None,
    base_dir: str | os.PathLike[str] | None = None,
    isolation: str | None = None,
) -> GradedEpisode:
    """Grade one episode with *check* and price it.

    The model priced is ``episode.model``, else *model*.  With *prices*, an unknown
    model is a :class:`~pytest_ldd.errors.PriceError` naming it; with neither *price*
    nor *prices* the dollars are None.  Prices are checked before the checker runs,
    so a bad catalog fails before any (possibly slow) hidden tests.  A checker that
    raises is not caught.  *base_dir* resolves a relative ``"hidden_tests:PATH"``,
    *isolation* is its sandbox's isolation.
    """
    given: object = episode
    if not isinstance(given, Episode):
        msg = f"'episode' must be an Episode (got {given!r})"
        raise InvalidObservationError(msg)
    dollars = episode_dollars(episode, price=price, prices=prices, model=model)
    checker = resolve_checker(check, base_dir=base_dir, isolation=isolation)
    result = run_check(checker, episode, gold)
    return GradedEpisode(episode.task_id, result.passed, dollars, result.detail)


@dataclass(slots=True)
class _Cell:
    """Counts of one task within one group."""

    n: int = 0
    successes: int = 0
    priced: int = 0
    picodollars: int = 0

    def absorb(self, other: _Cell) -> None:
        self.n += other.n
        self.successes += other.successes
        self.priced += other.priced
        self.picodollars += other.picodollars


def _json_float(value: float) -> float | str:
    # JSON has no infinity; "inf" is what float() reads back.
    return "inf" if math.isinf(value) else value


def _picodollars(dollars: float) -> int:
    return round(dollars * _PICO)


def _summarize(cells: Iterable[tuple[str, _Cell]]) -> dict[str, Any]:
    """The corpus figures of ``(task_id, cell)`` pairs (tasks may repeat)."""
    tasks: dict[str, _Cell] = {}
    for task_id, cell in cells:
        tasks.setdefault(task_id, _Cell()).absorb(cell)
    total = _Cell()
    for cell in tasks.values():
        total.absorb(cell)
    n, successes = total.n, total.successes
    all_priced = n > 0 and total.priced == n
    dollars = total.picodollars / _PICO
    summary: dict[str, Any] = {
        "n": n,
        "successes": successes,
        "success_rate": successes / n if n else None,
        "success_interval": list(wilson_interval(successes, n)) if n else None,
        "tasks": len(tasks),
        "priced": total.priced,
        "total_dollars": dollars if all_priced else None,
        "cost_per_success": None,
        "cost_per_success_per_task": None,
        "pass_at_k": {},
        "pass_hat_k": {},
    }
    if all_priced:
        summary["cost_per_success"] = _json_float(dollars / successes if successes else math.inf)
        per_task = [
            cell.picodollars / _PICO / cell.successes if cell.successes else math.inf
            for cell in tasks.values()
        ]
        summary["cost_per_success_per_task"] = _json_float(math.fsum(per_task) / len(per_task))
    if any(cell.n > 1 for cell in tasks.values()):
        trials = {
            task_id: [True] * cell.successes + [False] * (cell.n - cell.successes)
            for task_id, cell in tasks.items()
        }
        ks = range(1, min(cell.n for cell in tasks.values()) + 1)
        summary["pass_at_k"] = {str(k): pass_at_k(trials, k) for k in ks}
        summary["pass_hat_k"] = {str(k): pass_hat_k(trials, k) for k in ks}
    return summary


class CorpusTally:
    """A mergeable, JSON-serializable accumulator of graded episodes.

    Feed it with :meth:`add` from each test (``group`` is the test's name), ship it as
    :meth:`to_json`, combine tallies with :meth:`merge`, and read the corpus figures
    with :meth:`summary` (JSON-safe) or :meth:`aggregates` (floats, for gates).  Every
    figure is a ratio of sums over the whole corpus, so how the corpus was split
    never changes it.
    """

    __slots__ = ("_cells",)

    def __init__(self) -> None:
        self._cells: dict[tuple[str, str], _Cell] = {}

    def __repr__(self) -> str:
        return f"<CorpusTally n={self.n} groups={len({g for g, _ in self._cells})}>"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CorpusTally):
            return NotImplemented
        return self._cells == other._cells

    __hash__ = None  # type: ignore[assignment]  # mutable

    @property
    def n(self) -> int:
        """How many episodes were added."""
        return sum(cell.n for cell in self._cells.values())

    def add(self, *, task_id: str, success: bool, dollars: float | None, group: str) -> None:
        """Count one graded episode of *task_id* under *group* (the test's name).

        *dollars* is None for an episode that could not be priced.
        """
        for name, value in (("task_id", task_id), ("group", group)):
            if not isinstance(value, str) or not value:
                msg = f"CorpusTally.add {name!r} must be a non-empty str (got {value!r})"
                raise InvalidObservationError(msg)
        flag: object = success
        amount: object = dollars
        if not isinstance(flag, bool):
            msg = f"CorpusTally.add 'success' must be a bool (got {flag!r})"
            raise InvalidObservationError(msg)
        if amount is not None and (
            isinstance(amount, bool)
            or not isinstance(amount, (int, float))
            or not math.isfinite(amount)
            or amount < 0
        ):
            msg = f"CorpusTally.add 'dollars' must be None or finite and >= 0 (got {amount!r})"
            raise InvalidObservationError(msg)
        cell = self._cells.setdefault((group, task_id), _Cell())
        cell.n += 1
        cell.successes += success
        if dollars is not None:
            cell.priced += 1
            cell.picodollars += _picodollars(dollars)

    def add_graded(self, graded: GradedEpisode, *, group: str) -> None:
        """Count a :class:`GradedEpisode` under *group*."""
        self.add(
            task_id=graded.task_id, success=graded.success, dollars=graded.dollars, group=group
        )

    def merge(self, other: CorpusTally) -> None:
        """Add every episode counted by *other* to this tally (in place)."""
        given: object = other
        if not isinstance(given, CorpusTally):
            msg = f"CorpusTally.merge needs a CorpusTally (got {given!r})"
            raise TypeError(msg)
        for key, cell in list(given._cells.items()):
            self._cells.setdefault(key, _Cell()).absorb(cell)

    # -- reading --------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """The corpus figures as a JSON-safe dict.

        Keys: ``n``, ``successes``, ``success_rate``, ``success_interval`` ([low,
        high], 95% Wilson), ``tasks``, ``priced`` (episodes with dollars),
        ``total_dollars``, ``cost_per_success`` (pooled ``sum(dollars) /
        sum(successes)``), ``cost_per_success_per_task`` (mean over tasks of each
        task's cost per success), ``pass_at_k`` and ``pass_hat_k`` (``{"1": ..,
        "2": ..}`` for k up to the fewest trials of any task, empty unless some task
        was tried more than once) and ``groups`` (the same figures per group, without
        ``groups``).  Rates are None for an empty tally; dollar figures are None unless
        every episode was priced; an infinite cost (nothing succeeded) is the string
        ``"inf"``, which ``float()`` reads back.
        """
        summary = _summarize((task_id, cell) for (_, task_id), cell in self._cells.items())
        groups: dict[str, list[tuple[str, _Cell]]] = {}
        for (group, task_id), cell in sorted(self._cells.items()):
            groups.setdefault(group, []).append((task_id, cell))
        summary["groups"] = {group: _summarize(cells) for group, cells in groups.items()}
        return summary

    def aggregates(self) -> dict[str, float]:
        """The corpus metrics as floats: ``task_success`` and ``cost_per_success``.

        A figure that is undefined (empty tally, unpriced episodes) is left out;
        ``cost_per_success`` is ``inf`` when nothing succeeded.
        """
        summary = _summarize((task_id, cell) for (_, task_id), cell in self._cells.items())
        out: dict[str, float] = {}
        if summary["success_rate"] is not None:
            out["task_success"] = summary["success_rate"]
        if summary["cost_per_success"] is not None:
            out["cost_per_success"] = float(summary["cost_per_success"])
        return out

    # -- serialization --------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe document of the tally (cells sorted by group, then task)."""
        return {
            "schema_version": SCHEMA_VERSION,
            "cells": [
                {
                    "group": group,
                    "task_id": task_id,
                    "n": cell.n,
                    "successes": cell.successes,
                    "priced": cell.priced,
                    "picodollars": cell.picodollars,
                }
                for (group, task_id), cell in sorted(self._cells.items())
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CorpusTally:
        """Rebuild a tally from :meth:`to_dict`; anything malformed is an error naming it."""
        if not isinstance(data, Mapping) or data.get("schema_version") != SCHEMA_VERSION:
            got = data.get("schema_version") if isinstance(data, Mapping) else data
            msg = f"corpus tally 'schema_version' must be {SCHEMA_VERSION} (got {got!r})"
            raise InvalidObservationError(msg)
        cells = data.get("cells")
        if not isinstance(cells, list):
            msg = f"corpus tally 'cells' must be a list (got {cells!r})"
            raise InvalidObservationError(msg)
        tally = cls()
        for index, raw in enumerate(cells):
            where = f"corpus tally cell {index}"
            if not isinstance(raw, Mapping) or sorted(raw) != sorted(_CELL_KEYS):
                msg = f"{where} must have exactly the keys {', '.join(_CELL_KEYS)} (got {raw!r})"
                raise InvalidObservationError(msg)
            for name in ("group", "task_id"):
                if not isinstance(raw[name], str) or not raw[name]:
                    msg = f"{where} {name!r} must be a non-empty str (got {raw[name]!r})"
                    raise InvalidObservationError(msg)
            for name in ("n", "successes", "priced", "picodollars"):
                value = raw[name]
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    msg = f"{where} {name!r} must be an int >= 0 (got {value!r})"
                    raise InvalidObservationError(msg)
            if raw["n"] == 0:
                msg = f"{where} 'n' must be >= 1 (got 0)"
                raise InvalidObservationError(msg)
            for name in ("successes", "priced"):
                if raw[name] > raw["n"]:
                    msg = f"{where} {name!r} must be <= n={raw['n']} (got {raw[name]!r})"
                    raise InvalidObservationError(msg)
            if raw["priced"] == 0 and raw["picodollars"] != 0:
                got = raw["picodollars"]
                msg = f"{where} 'picodollars' must be 0 when nothing was priced (got {got!r})"
                raise InvalidObservationError(msg)
            key = (raw["group"], raw["task_id"])
            if key in tally._cells:
                msg = f"{where} repeats group {key[0]!r} task {key[1]!r}"
                raise InvalidObservationError(msg)
            tally._cells[key] = _Cell(
                raw["n"], raw["successes"], raw["priced"], raw["picodollars"]
            )
        return tally

    def to_json(self) -> str:
        """:meth:`to_dict` as a compact JSON string."""
        return json.dumps(self.to_dict(), separators=(",", ":"), allow_nan=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> CorpusTally:
        """Rebuild a tally from :meth:`to_json`."""
        try:
            data = json.loads(text)
        except ValueError as err:
            msg = f"corpus tally is not valid JSON: {err}"
            raise InvalidObservationError(msg) from err
        return cls.from_dict(data)
