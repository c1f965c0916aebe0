"""grade() and CorpusTally: ratios of sums that no split of the corpus can change."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ldd.agents import (
    CorpusTally,
    Cost,
    Episode,
    FinalStateCheck,
    GradedEpisode,
    grade,
    pass_at_k,
    pass_hat_k,
    per_million,
    wilson_interval,
)
from pytest_ldd.errors import InvalidObservationError, PriceError

DOLLAR = per_million(1.0, 1.0)

# (task_id, success, dollars, group): one graded episode.
Record = tuple[str, bool, float, str]

records = st.tuples(
    st.sampled_from(["t1", "t2", "t3", "t4"]),
    st.booleans(),
    st.floats(0.0, 50.0, allow_nan=False, allow_infinity=False),
    st.sampled_from(["test_a", "test_b", "test_c"]),
)


def _tally(rows: list[Record]) -> CorpusTally:
    tally = CorpusTally()
    for task_id, success, dollars, group in rows:
        tally.add(task_id=task_id, success=success, dollars=dollars, group=group)
    return tally


# -- grade ---------------------------------------------------------------------------------


def test_grade_prices_and_checks_one_episode() -> None:
    episode = Episode("t1", output="42", cost=Cost(input_tokens=2_000_000))
    graded = grade(episode, "42", check="output", price=DOLLAR)
    assert graded == GradedEpisode("t1", True, pytest.approx(2.0), "passed")  # type: ignore[arg-type]
    assert grade(episode, "41", check="output").dollars is None
    assert grade(episode, "41", check="output").success is False


def test_grade_uses_the_default_model_and_names_unknown_ones() -> None:
    catalog = {"m": per_million(3.0, 3.0)}
    episode = Episode("t1", output="42", cost=Cost(input_tokens=1_000_000))
    assert grade(
        episode, "42", check="output", prices=catalog, model="m"
    ).dollars == pytest.approx(3.0)
    with pytest.raises(PriceError, match="'other'"):
        grade(episode, "42", check="output", prices=catalog, model="other")
    with pytest.raises(PriceError, match="'gpt-x'"):
        grade(Episode("t1", model="gpt-x"), "42", check="output", prices=catalog)


def test_grade_fails_on_prices_before_running_the_checker() -> None:
    calls: list[str] = []

    def slow_checker(episode: Episode, gold: Any) -> bool:
        calls.append(episode.task_id)
        return True

    with pytest.raises(PriceError):
        grade(Episode("t1", model="gpt-x"), None, check=slow_checker, prices={"m": DOLLAR})
    assert calls == []


def test_grade_carries_the_checker_detail() -> None:
    episode = Episode("t1", final_state={"orders": [{"status": "shipped"}]})
    graded = grade(episode, {"orders": [{"status": "pending"}]}, check="final_state")
    assert graded.success is False
    assert graded.detail == "final state differs at: orders.0.status ('shipped' != 'pending')"
    ok = grade(episode, {"orders": [{"status": "shipped"}]}, check=FinalStateCheck())
    assert ok.detail == "final state matches"


def test_grade_lets_checker_errors_through() -> None:
    with pytest.raises(InvalidObservationError, match="'success'"):
        grade(Episode("t1"), None, check="recorded")
    with pytest.raises(InvalidObservationError, match="Episode"):
        grade("t1", None, check="output")  # type: ignore[arg-type]


# -- CorpusTally figures -------------------------------------------------------------------


def test_summary_of_a_small_corpus() -> None:
    tally = _tally(
        [
            ("t1", True, 1.0, "test_a"),
            ("t1", False, 3.0, "test_a"),
            ("t2", True, 1.0, "test_b"),
            ("t2", True, 1.0, "test_b"),
        ]
    )
    summary = tally.summary()
    assert summary["n"] == 4
    assert summary["successes"] == 3
    assert summary["success_rate"] == 0.75
    assert summary["success_interval"] == list(wilson_interval(3, 4))
    assert summary["tasks"] == 2
    assert summary["priced"] == 4
    assert summary["total_dollars"] == pytest.approx(6.0)
    assert summary["cost_per_success"] == pytest.approx(2.0)
    # t1: $4 for 1 pass, t2: $2 for 2 passes -> mean(4, 1)
    assert summary["cost_per_success_per_task"] == pytest.approx(2.5)
    assert summary["pass_at_k"] == {
        "1": pytest.approx(0.75),
        "2": pytest.approx(pass_at_k({"t1": [True, False], "t2": [True, True]}, 2)),
    }
    assert summary["pass_hat_k"] == {"1": pytest.approx(0.75), "2": pytest.approx(0.5)}
    assert sorted(summary["groups"]) == ["test_a", "test_b"]
    group_a = summary["groups"]["test_a"]
    assert (group_a["n"], group_a["successes"], group_a["cost_per_success"]) == (
        2,
        1,
        pytest.approx(4.0),
    )
    assert "groups" not in group_a
    assert tally.aggregates() == {"task_success": 0.75, "cost_per_success": pytest.approx(2.0)}
    json.dumps(summary, allow_nan=False)


def test_pooled_cost_differs_from_a_mean_of_per_test_ratios() -> None:
    # test_a: $1 for 1 pass; test_b: $30 for 3 passes ($10 each).
    rows: list[Record] = [("a", True, 1.0, "test_a")] + [
        (f"b{i}", True, 10.0, "test_b") for i in range(3)
    ]
    summary = _tally(rows).summary()
    per_test = [group["cost_per_success"] for group in summary["groups"].values()]
    assert summary["cost_per_success"] == pytest.approx(31.0 / 4)
    assert sum(per_test) / len(per_test) == pytest.approx(5.5)
    assert summary["cost_per_success"] != pytest.approx(sum(per_test) / len(per_test))


def test_nothing_succeeded_costs_inf_in_json() -> None:
    tally = _tally([("t1", False, 1.0, "test_a"), ("t2", False, 0.5, "test_a")])
    summary = tally.summary()
    assert summary["cost_per_success"] == "inf"
    assert summary["cost_per_success_per_task"] == "inf"
    assert float(summary["cost_per_success"]) == math.inf
    assert summary["success_interval"] == [0.0, pytest.approx(wilson_interval(0, 2)[1])]
    assert tally.aggregates() == {"task_success": 0.0, "cost_per_success": math.inf}
    json.dumps(summary, allow_nan=False)


def test_unpriced_episodes_leave_dollar_figures_undefined() -> None:
    tally = CorpusTally()
    tally.add(task_id="t1", success=True, dollars=None, group="test_a")
    tally.add(task_id="t2", success=True, dollars=1.0, group="test_a")
    summary = tally.summary()
    assert summary["priced"] == 1
    assert summary["total_dollars"] is None
    assert summary["cost_per_success"] is None
    assert summary["cost_per_success_per_task"] is None
    assert tally.aggregates() == {"task_success": 1.0}


def test_an_empty_tally_has_no_rates() -> None:
    summary = CorpusTally().summary()
    assert summary["n"] == 0
    assert summary["success_rate"] is None
    assert summary["success_interval"] is None
    assert summary["cost_per_success"] is None
    assert summary["groups"] == {}
    assert CorpusTally().aggregates() == {}


def test_pass_k_needs_a_repeated_task_and_stops_at_the_fewest_trials() -> None:
    once = _tally([("t1", True, 0.0, "g"), ("t2", False, 0.0, "g")])
    assert once.summary()["pass_hat_k"] == {}
    assert once.summary()["pass_at_k"] == {}
    mixed = _tally([("t1", True, 0.0, "g"), ("t1", True, 0.0, "g"), ("t2", False, 0.0, "g")])
    assert list(mixed.summary()["pass_hat_k"]) == ["1"]
    three = _tally([(t, True, 0.0, "g") for t in ("t1", "t2") for _ in range(3)])
    assert three.summary()["pass_hat_k"] == {"1": 1.0, "2": 1.0, "3": 1.0}
    # tasks pool across groups: t1 tried once in each of two tests is tried twice
    across = _tally([("t1", True, 0.0, "g1"), ("t1", False, 0.0, "g2")])
    assert across.summary()["pass_hat_k"] == {
        "1": 0.5,
        "2": pytest.approx(pass_hat_k({"t1": [True, False]}, 2)),
    }


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"task_id": "", "success": True, "dollars": 1.0, "group": "g"}, "task_id"),
        ({"task_id": "t", "success": 1, "dollars": 1.0, "group": "g"}, "success"),
        ({"task_id": "t", "success": True, "dollars": -1.0, "group": "g"}, "dollars"),
        ({"task_id": "t", "success": True, "dollars": math.inf, "group": "g"}, "dollars"),
        ({"task_id": "t", "success": True, "dollars": True, "group": "g"}, "dollars"),
        ({"task_id": "t", "success": True, "dollars": 1.0, "group": ""}, "group"),
        (
            {"task_id": "t", "success": True, "dollars": 1.0, "group": "g", "inconclusive": True},
            "'inconclusive'",
        ),
        (
            {"task_id": "t", "success": False, "dollars": 1.0, "group": "g", "inconclusive": 1},
            "'inconclusive'",
        ),
        (
            {"task_id": "t", "success": False, "dollars": 1.0, "group": "g", "confinement": ""},
            "'confinement'",
        ),
    ],
)
def test_add_validates(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidObservationError, match=match):
        CorpusTally().add(**kwargs)


def test_add_graded_and_merge_errors() -> None:
    tally = CorpusTally()
    tally.add_graded(GradedEpisode("t1", True, 0.25, "passed"), group="test_a")
    assert tally.n == 1
    assert tally.summary()["total_dollars"] == 0.25
    with pytest.raises(TypeError, match="CorpusTally"):
        tally.merge({})  # type: ignore[arg-type]
    tally.merge(tally)
    assert tally.n == 2


class _Verdicts:
    """Hands out verdicts of the sandbox's shape, one per episode, in order."""

    def __init__(self, *verdicts: SimpleNamespace) -> None:
        self.verdicts = list(verdicts)

    def verdict_for(self, episode: Episode) -> SimpleNamespace:
        return self.verdicts.pop(0)


def _verdict(*, passed: bool, inconclusive: bool = False, confinement: str = "landlock") -> Any:
    reason = "the judge crashed" if inconclusive else "all passed" if passed else "1 failed"
    return SimpleNamespace(
        passed=passed,
        tampered=False,
        inconclusive=inconclusive,
        confinement=confinement,
        reason=reason,
    )


def test_an_inconclusive_episode_counts_in_no_rate_and_no_cost() -> None:
    verdicts = _Verdicts(
        _verdict(passed=True),
        _verdict(passed=False, inconclusive=True, confinement="none"),
        _verdict(passed=False, confinement="none"),
        _verdict(passed=False, inconclusive=True),
    )
    tally = CorpusTally()
    tasks = ("t1", "t1", "t2", "t3")
    episodes = [Episode(task, cost=Cost(input_tokens=1_000_000)) for task in tasks]
    graded = [grade(ep, None, check=verdicts, price=DOLLAR) for ep in episodes]
    assert [g.inconclusive for g in graded] == [False, True, False, True]
    assert [g.confinement for g in graded] == ["landlock", "none", "none", "landlock"]
    assert graded[1].detail == "inconclusive: the judge crashed"
    assert graded[1].success is False
    for one in graded:
        tally.add_graded(one, group="test_a")
    summary = tally.summary()
    # Two graded episodes (t1's first, t2), one success, their two dollars; t3 was never
    # graded, so it is no task of the rate or of the cost per task.
    assert (summary["n"], summary["successes"], summary["tasks"]) == (2, 1, 2)
    assert summary["success_rate"] == 0.5
    assert summary["total_dollars"] == pytest.approx(2.0)
    assert summary["cost_per_success"] == pytest.approx(2.0)
    assert summary["cost_per_success_per_task"] == "inf"
    assert (summary["inconclusive"], summary["verdicts"], summary["unconfined"]) == (2, 4, 2)
    assert summary["groups"]["test_a"]["inconclusive"] == 2
    assert tally.n == 2
    assert CorpusTally.from_json(tally.to_json()) == tally


def test_a_tally_of_inconclusive_episodes_only_has_no_rate() -> None:
    tally = CorpusTally()
    tally.add(task_id="t", success=False, dollars=1.0, group="g", inconclusive=True)
    summary = tally.summary()
    assert (summary["n"], summary["inconclusive"], summary["success_rate"]) == (0, 1, None)
    assert summary["total_dollars"] is None
    assert tally.aggregates() == {}
    assert CorpusTally.from_dict(tally.to_dict()).summary() == summary


# -- serialization -------------------------------------------------------------------------


def test_json_round_trip() -> None:
    tally = _tally([("t1", True, 0.1, "test_a"), ("t2", False, 0.2, "test_b")])
    text = tally.to_json()
    assert CorpusTally.from_json(text) == tally
    assert CorpusTally.from_json(text).summary() == tally.summary()
    assert CorpusTally.from_dict(json.loads(text)).to_dict() == tally.to_dict()
    assert tally.to_dict()["schema_version"] == 2


def test_a_version_1_document_is_read_with_no_inconclusive_and_no_verdicts() -> None:
    old = {"schema_version": 1, "cells": [_cell()]}
    tally = CorpusTally.from_dict(old)
    summary = tally.summary()
    assert (summary["n"], summary["successes"], summary["total_dollars"]) == (2, 1, 1e-11)
    assert (summary["inconclusive"], summary["verdicts"], summary["unconfined"]) == (0, 0, 0)
    assert tally.to_dict()["cells"] == [_cell(inconclusive=0, verdicts=0, unconfined=0)]


def _cell2(**changes: Any) -> dict[str, Any]:
    return _cell(**{"inconclusive": 1, "verdicts": 3, "unconfined": 1, **changes})


def _cell(**changes: Any) -> dict[str, Any]:
    cell: dict[str, Any] = {
        "group": "g",
        "task_id": "t",
        "n": 2,
        "successes": 1,
        "priced": 2,
        "picodollars": 10,
    }
    cell.update(changes)
    return cell


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"schema_version": 3, "cells": []}, "schema_version"),
        ({"schema_version": True, "cells": []}, "schema_version"),
        ({"schema_version": 2, "cells": [_cell()]}, "exactly the keys"),
        ({"schema_version": 1, "cells": [_cell2()]}, "exactly the keys"),
        ({"schema_version": 2, "cells": [_cell2(inconclusive=-1)]}, "'inconclusive'"),
        ({"schema_version": 2, "cells": [_cell2(unconfined=4)]}, "unconfined <= verdicts"),
        ({"schema_version": 2, "cells": [_cell2(verdicts=4)]}, "verdicts <= n"),
        (
            {
                "schema_version": 2,
                "cells": [_cell2(n=0, successes=0, priced=0, picodollars=0, inconclusive=0)],
            },
            "'n' must be >= 1 unless 'inconclusive'",
        ),
        ([], "schema_version"),
        ({"schema_version": 1, "cells": {}}, "'cells'"),
        ({"schema_version": 1, "cells": [{"group": "g"}]}, "exactly the keys"),
        ({"schema_version": 1, "cells": [_cell(extra=1)]}, "exactly the keys"),
        ({"schema_version": 1, "cells": [_cell(group="")]}, "'group'"),
        ({"schema_version": 1, "cells": [_cell(n=-1)]}, "'n'"),
        (
            {"schema_version": 1, "cells": [_cell(n=0, successes=0, priced=0, picodollars=0)]},
            "'n'",
        ),
        ({"schema_version": 1, "cells": [_cell(successes=3)]}, "'successes'"),
        ({"schema_version": 1, "cells": [_cell(priced=3)]}, "'priced'"),
        ({"schema_version": 1, "cells": [_cell(picodollars=1.5)]}, "'picodollars'"),
        ({"schema_version": 1, "cells": [_cell(priced=0)]}, "'picodollars'"),
        ({"schema_version": 1, "cells": [_cell(), _cell()]}, "repeats"),
    ],
)
def test_from_dict_rejects_malformed_documents(data: Any, match: str) -> None:
    with pytest.raises(InvalidObservationError, match=match):
        CorpusTally.from_dict(data)


def test_from_json_rejects_bad_json() -> None:
    with pytest.raises(InvalidObservationError, match="not valid JSON"):
        CorpusTally.from_json("{")


# -- the law: ratios of sums, whatever the split -------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    st.lists(records, min_size=1, max_size=40),
    st.data(),
)
def test_any_split_merges_into_the_ratio_of_sums(rows: list[Record], data: st.DataObject) -> None:
    parts_count = data.draw(st.integers(1, 6), label="parts")
    assignment = data.draw(
        st.lists(st.integers(0, parts_count - 1), min_size=len(rows), max_size=len(rows)),
        label="assignment",
    )
    order = data.draw(st.permutations(range(parts_count)), label="merge order")
    parts = [
        _tally([row for row, part in zip(rows, assignment, strict=True) if part == p])
        for p in range(parts_count)
    ]
    merged = CorpusTally()
    for index in order:
        # Each part travels as JSON, as from an xdist worker or an earlier session.
        merged.merge(CorpusTally.from_json(parts[index].to_json()))

    whole = _tally(rows)
    assert merged == whole
    assert merged.summary() == whole.summary()

    summary = merged.summary()
    successes = sum(success for _, success, _, _ in rows)
    dollars = math.fsum(d for _, _, d, _ in rows)
    assert summary["n"] == len(rows)
    assert summary["successes"] == successes
    assert summary["success_rate"] == successes / len(rows)
    # Dollars are kept in whole picodollars: at most half a picodollar off per episode.
    assert summary["total_dollars"] == pytest.approx(dollars, rel=1e-12, abs=len(rows) * 1e-12)
    if successes:
        assert summary["cost_per_success"] == pytest.approx(
            dollars / successes, rel=1e-12, abs=len(rows) * 1e-12
        )
    else:
        assert summary["cost_per_success"] == "inf"
    for group, figures in summary["groups"].items():
        mine = [row for row in rows if row[3] == group]
        assert figures["n"] == len(mine)
        assert figures["successes"] == sum(success for _, success, _, _ in mine)
