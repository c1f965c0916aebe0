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

#: Version of the :meth:`CorpusTally.to_dict` document.  Version 1 (without the
#: inconclusive and confinement counts) is still read: its counts are zero.
SCHEMA_VERSION = 2

_PICO = 10**12

_COUNTS_V1 = ("n", "successes", "priced", "picodollars")
_COUNTS = (*_COUNTS_V1, "inconclusive", "verdicts", "unconfined")
_CELL_KEYS = {1: ("group", "task_id", *_COUNTS_V1), 2: ("group", "task_id", *_COUNTS)}


@final
@dataclass(frozen=True, slots=True)
class GradedEpisode:
    """One episode after grading: did it succeed, what did it cost, and why.

    ``dollars`` is None when no price information was given.  ``inconclusive`` says
    the checker could not grade it (then ``success`` is False and means nothing);
    ``confinement`` is how the agent's code was confined while graded by hidden tests
    (``"landlock"`` or ``"none"``), None for checkers that ran none of it.
    """

    task_id: str
    success: bool
    dollars: float | None
    detail: str
    inconclusive: bool = False
    confinement: str | None = None


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
    return GradedEpisode(
        episode.task_id,
        result.passed,
        dollars,
        result.detail,
        inconclusive=result.inconclusive,
        confinement=result.confinement,
    )


@dataclass(slots=True)
class _Cell:
    """Counts of one task within one group.

    ``n`` counts the graded episodes (successes, priced and dollars are among them);
    ``inconclusive`` the episodes the checker could not grade, apart from ``n``;
    ``verdicts`` the hidden-test verdicts among all of them and ``unconfined`` those
    whose agent code ran without kernel confinement.
    """

    n: int = 0
    successes: int = 0
    priced: int = 0
    picodollars: int = 0
    inconclusive: int = 0
    verdicts: int = 0
    unconfined: int = 0

    def absorb(self, other: _Cell) -> None:
        for name in _COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))


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
    # A task none of whose episodes could be graded has no rate and no cost of its own.
    tasks = {task_id: cell for task_id, cell in tasks.items() if cell.n}
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
        "inconclusive": total.inconclusive,
        "verdicts": total.verdicts,
        "unconfined": total.unconfined,
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
        """How many graded episodes were added (inconclusive ones are not among them)."""
        return sum(cell.n for cell in self._cells.values())

    def add(
        self,
        *,
        task_id: str,
        success: bool,
        dollars: float | None,
        group: str,
        inconclusive: bool = False,
        confinement: str | None = None,
    ) -> None:
        """Count one graded episode of *task_id* under *group* (the test's name).

        *dollars* is None for an episode that could not be priced.  An *inconclusive*
        episode (the checker could not grade it; *success* must be False) is counted
        apart: neither its success nor its dollars enter any figure.  *confinement*
        (``"landlock"``, ``"none"``) is given for episodes graded by hidden tests.
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
        doubt: object = inconclusive
        if not isinstance(doubt, bool) or (doubt and success):
            msg = (
                "CorpusTally.add 'inconclusive' must be a bool, False when 'success' is True"
                f" (got {doubt!r} with success={success!r})"
            )
            raise InvalidObservationError(msg)
        how: object = confinement
        if how is not None and not (isinstance(how, str) and how):
            msg = f"CorpusTally.add 'confinement' must be a non-empty str or None (got {how!r})"
            raise InvalidObservationError(msg)
        cell = self._cells.setdefault((group, task_id), _Cell())
        if confinement is not None:
            cell.verdicts += 1
            cell.unconfined += confinement == "none"
        if inconclusive:
            cell.inconclusive += 1
            return
        cell.n += 1
        cell.successes += success
        if dollars is not None:
            cell.priced += 1
            cell.picodollars += _picodollars(dollars)

    def add_graded(self, graded: GradedEpisode, *, group: str) -> None:
        """Count a :class:`GradedEpisode` under *group*."""
        self.add(
            task_id=graded.task_id,
            success=graded.success,
            dollars=graded.dollars,
            group=group,
            inconclusive=graded.inconclusive,
            confinement=graded.confinement,
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
        was tried more than once), ``inconclusive`` (episodes the checker could not
        grade: in none of the figures above, not even ``n``), ``verdicts`` (episodes
        graded by hidden tests, inconclusive ones included), ``unconfined`` (those of
        them whose agent code ran without kernel confinement) and ``groups`` (the same
        figures per group, without ``groups``).  Rates are None when nothing was
        graded; dollar figures are None unless every graded episode was priced; an
        infinite cost (nothing succeeded) is the string ``"inf"``, which ``float()``
        reads back.
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
                    **{name: getattr(cell, name) for name in _COUNTS},
                }
                for (group, task_id), cell in sorted(self._cells.items())
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CorpusTally:
        """Rebuild a tally from :meth:`to_dict`; anything malformed is an error naming it."""
        version = data.get("schema_version") if isinstance(data, Mapping) else data
        if type(version) is not int or version not in _CELL_KEYS:
            known = " or ".join(map(str, _CELL_KEYS))
            msg = f"corpus tally 'schema_version' must be {known} (got {version!r})"
            raise InvalidObservationError(msg)
        keys = _CELL_KEYS[version]
        counts = keys[2:]
        cells = data.get("cells")
        if not isinstance(cells, list):
            msg = f"corpus tally 'cells' must be a list (got {cells!r})"
            raise InvalidObservationError(msg)
        tally = cls()
        for index, raw in enumerate(cells):
            where = f"corpus tally cell {index}"
            if not isinstance(raw, Mapping) or sorted(raw) != sorted(keys):
                msg = f"{where} must have exactly the keys {', '.join(keys)} (got {raw!r})"
                raise InvalidObservationError(msg)
            for name in ("group", "task_id"):
                if not isinstance(raw[name], str) or not raw[name]:
                    msg = f"{where} {name!r} must be a non-empty str (got {raw[name]!r})"
                    raise InvalidObservationError(msg)
            for name in counts:
                value = raw[name]
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    msg = f"{where} {name!r} must be an int >= 0 (got {value!r})"
                    raise InvalidObservationError(msg)
            cell = _Cell(**{name: raw[name] for name in counts})
            if cell.n + cell.inconclusive == 0:
                msg = f"{where} 'n' must be >= 1 unless 'inconclusive' is (got 0)"
                raise InvalidObservationError(msg)
            for name in ("successes", "priced"):
                if raw[name] > raw["n"]:
                    msg = f"{where} {name!r} must be <= n={raw['n']} (got {raw[name]!r})"
                    raise InvalidObservationError(msg)
            if cell.unconfined > cell.verdicts or cell.verdicts > cell.n + cell.inconclusive:
                msg = (
                    f"{where} must have unconfined <= verdicts <= n + inconclusive"
                    f" (got {cell.unconfined}, {cell.verdicts}, {cell.n} + {cell.inconclusive})"
                )
                raise InvalidObservationError(msg)
            if raw["priced"] == 0 and raw["picodollars"] != 0:
                got = raw["picodollars"]
                msg = f"{where} 'picodollars' must be 0 when nothing was priced (got {got!r})"
                raise InvalidObservationError(msg)
            key = (raw["group"], raw["task_id"])
            if key in tally._cells:
                msg = f"{where} repeats group {key[0]!r} task {key[1]!r}"
                raise InvalidObservationError(msg)
            tally._cells[key] = cell
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
