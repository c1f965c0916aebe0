"""Checkers: output, GAIA quasi-exact, final state with diffs and ignore paths, recorded,
and resolving checker names (hidden tests through a stand-in sandbox)."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from pytest_ldd.agents import (
    CheckResult,
    Episode,
    FinalStateCheck,
    TaskSuccessMetric,
    final_state_diff,
    final_state_match,
    grade,
    output_match,
    quasi_exact_match,
    recorded_success,
    resolve_checker,
    run_check,
)
from pytest_ldd.errors import InvalidObservationError, InvalidSpecError


def _answer(output: Any) -> Episode:
    return Episode("t", output=output)


def _state(final_state: Any) -> Episode:
    return Episode("t", final_state=final_state)


# -- output ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "gold", "expected"),
    [
        ("Paris", "paris", True),
        ("  New   York\n", "new york", True),
        ("STRASSE", "straße", True),  # casefold, not lower
        ("cafe\u0301", "café", True),  # NFC: combining accent == precomposed
        ("Paris.", "Paris", False),  # punctuation matters here
        ("42", 42, False),  # a string is not a number
        (42, 42, True),
        ([1, 2], [1, 2], True),
        (None, None, True),
        (None, "", False),
    ],
)
def test_output_match(output: Any, gold: Any, expected: bool) -> None:
    assert output_match(_answer(output), gold) is expected


# -- quasi_exact (GAIA) --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "gold", "expected"),
    [
        # numbers: $ % , removed, compared as floats
        ("$1,000", 1000, True),
        ("$1,000", "1000", True),
        ("1000.0", "1000", True),
        ("17%", "17", True),
        ("1,000,000", "1e6", True),
        ("1000 dollars", "1000", False),
        ("999", "1000", False),
        ("abc", "inf", False),  # GAIA would say True (unparsable -> inf); it is not a number
        (3.0, 3, True),
        # lists: split on , or ; and compared element-wise
        ("a; b", "a,b", True),
        ("A , B", "a;b", True),
        ("1, 2,3", "1,2,3", True),
        ("$1, 2%", "1;2", True),
        ("a, b, c", "a,b", False),
        ("b, a", "a,b", False),  # order matters in a list
        ("a., b", "a,b", False),  # list elements keep their punctuation, as in GAIA
        ("x, 2.0", "x, 2", True),
        # strings: whitespace, case and punctuation removed
        ("Saint-Petersburg!", "saint petersburg", True),
        ("The  Beatles", "thebeatles", True),
        ("Rolling Stones", "beatles", False),
        (None, "None", True),  # GAIA reads a missing answer as the text "None"
        (None, "nothing", False),
    ],
)
def test_quasi_exact_match_follows_gaia(output: Any, gold: Any, expected: bool) -> None:
    assert quasi_exact_match(_answer(output), gold) is expected


# -- final_state ---------------------------------------------------------------------------

GOAL = {
    "orders": [
        {"id": 1, "status": "shipped"},
        {"id": 2, "status": "shipped"},
        {"id": 3, "status": "pending"},
    ],
    "tags": {"vip", "new"},
    "db": {"users": [{"name": "ada", "updated_at": "2024-01-01"}]},
}


def _reached(**changes: Any) -> dict[str, Any]:
    state: dict[str, Any] = {
        "db": {"users": [{"updated_at": "2025-06-01", "name": "ada"}]},
        "tags": {"new", "vip"},
        "orders": [
            {"status": "shipped", "id": 1},
            {"status": "shipped", "id": 2},
            {"status": "pending", "id": 3},
        ],
    }
    state.update(changes)
    return state


def test_dict_keys_and_sets_are_order_free_lists_are_not() -> None:
    assert final_state_diff({"a": 1, "b": {2, 3}}, {"b": {3, 2}, "a": 1}) == []
    assert final_state_diff([1, 2], [2, 1]) == ["0 (1 != 2)", "1 (2 != 1)"]
    assert final_state_diff((1, 2), [1, 2]) == []


def test_ignore_paths_leave_volatile_fields_out() -> None:
    reached = _reached()
    assert final_state_diff(reached, GOAL) == [
        "db.users.0.updated_at ('2025-06-01' != '2024-01-01')"
    ]
    assert final_state_diff(reached, GOAL, ignore=["db.users.0.updated_at"]) == []
    assert final_state_diff(reached, GOAL, ignore="db.users.*.updated_at") == []
    assert final_state_diff(reached, GOAL, ignore=["db"]) == []
    assert final_state_diff(reached, GOAL, ignore=["db.users.1.updated_at"]) != []
    assert final_state_match(_state(reached), GOAL, ignore=("db.users.0.updated_at",)) is True
    assert final_state_match(_state(reached), GOAL) is False


def test_every_kind_of_difference_is_named() -> None:
    reached = _reached(
        orders=[{"id": 1, "status": "shipped"}, {"id": 2, "status": "pending"}],
        tags={"vip"},
        extra=True,
    )
    assert final_state_diff(reached, GOAL, ignore=["db"]) == [
        "orders.1.status ('pending' != 'shipped')",
        "orders.2 (missing, expected {'id': 3, 'status': 'pending'})",
        "tags ({'vip'} != {'new', 'vip'})",
        "extra (unexpected True)",
    ]
    assert final_state_diff({"a": 1}, {"a": 1, "b": 2}) == ["b (missing, expected 2)"]
    assert final_state_diff([1, 2, 3], [1]) == ["1 (unexpected 2)", "2 (unexpected 3)"]
    assert final_state_diff({"a": [1]}, {"a": {"0": 1}}) == ["a ([1] != {'0': 1})"]
    assert final_state_diff(None, {"a": 1}) == ["<root> (None != {'a': 1})"]


def test_leaves_compare_like_json() -> None:
    assert final_state_diff({"on": True}, {"on": 1}) == ["on (True != 1)"]
    assert final_state_diff({"x": 1.0}, {"x": 1}) == []
    assert final_state_diff({"x": math.nan}, {"x": math.nan}) == []
    assert final_state_diff({"x": math.nan}, {"x": 1.0}) == ["x (nan != 1.0)"]


def test_ignored_missing_and_unexpected_keys_are_not_reported() -> None:
    assert final_state_diff({"a": 1, "t": 5}, {"a": 1}, ignore=["t"]) == []
    assert final_state_diff({"a": 1}, {"a": 1, "t": 5}, ignore=["t"]) == []
    assert final_state_diff([1, 9], [1], ignore=["1"]) == []


@pytest.mark.parametrize("bad", [[""], ["a..b"], [".a"], [3]])
def test_bad_ignore_paths_are_spec_errors(bad: list[Any]) -> None:
    with pytest.raises(InvalidSpecError, match="'ignore'"):
        final_state_diff({}, {}, ignore=bad)
    with pytest.raises(InvalidSpecError, match="'ignore'"):
        FinalStateCheck(ignore=tuple(bad))


def test_final_state_check_explains_the_mismatch() -> None:
    reached = _reached()
    reached["orders"][2]["status"] = "shipped"
    check = FinalStateCheck(ignore=("db.users.*.updated_at",))
    result = check(_state(reached), GOAL)
    assert result == CheckResult(
        False, "final state differs at: orders.2.status ('shipped' != 'pending')"
    )
    assert not result
    assert check(_state(_reached()), GOAL) == CheckResult(True, "final state matches")


def test_long_explanations_are_capped() -> None:
    check = FinalStateCheck()
    result = check(_state(list(range(15))), [-1] * 15)
    assert result.detail.count("!=") == 10
    assert result.detail.endswith("; and 5 more")


def test_task_success_score_detail_shows_the_differing_path() -> None:
    reached = _reached()
    reached["orders"][2]["status"] = "shipped"
    metric = TaskSuccessMetric(check=FinalStateCheck(ignore=["db.users.0.updated_at"]))
    score = metric(_state(reached), GOAL)
    assert score.value == 0.0
    assert score.detail == "final state differs at: orders.2.status ('shipped' != 'pending')"
    by_name = TaskSuccessMetric(check="final_state")(_state(reached), GOAL)
    assert "orders.2.status ('shipped' != 'pending')" in by_name.detail
    assert "db.users.0.updated_at" in by_name.detail


# -- recorded ------------------------------------------------------------------------------


def test_recorded_success() -> None:
    assert recorded_success(Episode("t", success=True), None) is True
    assert recorded_success(Episode("t", success=False), "ignored") is False
    with pytest.raises(InvalidObservationError, match=r"'t'.*'success'"):
        recorded_success(Episode("t"), None)


# -- run_check -----------------------------------------------------------------------------


def test_run_check_wraps_bools_and_rejects_other_results() -> None:
    episode = _answer("x")
    assert run_check(lambda ep, gold: True, episode, None) == CheckResult(True, "passed")
    assert run_check(lambda ep, gold: False, episode, None) == CheckResult(False, "failed")
    assert run_check(lambda ep, gold: CheckResult(False, "no"), episode, None).detail == "no"
    assert run_check(lambda ep, gold: CheckResult(False), episode, None).detail == "failed"
    with pytest.raises(InvalidObservationError, match="must return a bool"):
        run_check(lambda ep, gold: None, episode, None)  # type: ignore[arg-type]
    with pytest.raises(InvalidObservationError, match="must return a bool"):
        run_check(lambda ep, gold: 1, episode, None)  # type: ignore[arg-type]


def test_a_raising_checker_propagates_unchanged() -> None:
    def broken(episode: Episode, gold: Any) -> bool:
        raise ZeroDivisionError("checker bug")

    with pytest.raises(ZeroDivisionError, match="checker bug"):
        run_check(broken, _answer("x"), None)
    with pytest.raises(ZeroDivisionError, match="checker bug"):
        TaskSuccessMetric(check=broken)(_answer("x"), None)


def test_check_result_validates() -> None:
    with pytest.raises(InvalidObservationError, match="passed"):
        CheckResult(1)  # type: ignore[arg-type]
    with pytest.raises(InvalidObservationError, match="detail"):
        CheckResult(True, None)  # type: ignore[arg-type]


# -- resolve_checker -----------------------------------------------------------------------


def test_names_resolve_to_the_documented_checkers() -> None:
    assert resolve_checker("output") is output_match
    assert resolve_checker("quasi_exact") is quasi_exact_match
    assert resolve_checker("recorded") is recorded_success
    assert resolve_checker("final_state") == FinalStateCheck()
    assert resolve_checker(final_state_match) == FinalStateCheck()

    def mine(episode: Episode, gold: Any) -> bool:
        return True

    assert resolve_checker(mine) is mine


def test_unknown_names_list_the_known_ones() -> None:
    with pytest.raises(InvalidSpecError) as info:
        resolve_checker("exact")
    message = str(info.value)
    for name in ("'output'", "'quasi_exact'", "'final_state'", "'recorded'", "hidden_tests:PATH"):
        assert name in message
    assert "'exact'" in message
    with pytest.raises(InvalidSpecError, match="callable"):
        resolve_checker(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidSpecError, match="PATH"):
        resolve_checker("hidden_tests:")


class _FakeHiddenTests:
    """Stands in for pytest_ldd.sandbox.hidden_tests(...): counts its runs."""

    def __init__(self, tests: Path, verdict: Any) -> None:
        self.tests = tests
        self.verdict = verdict
        self.runs = 0

    def verdict_for(self, episode: Episode) -> Any:
        self.runs += 1
        return self.verdict

    def __call__(self, episode: Episode, gold: Any) -> bool:
        return bool(self.verdict_for(episode).passed)


def _fake_sandbox(monkeypatch: pytest.MonkeyPatch, verdict: Any) -> list[_FakeHiddenTests]:
    made: list[_FakeHiddenTests] = []

    def hidden_tests(tests: Path, **options: Any) -> _FakeHiddenTests:
        made.append(_FakeHiddenTests(tests, verdict))
        return made[-1]

    module = ModuleType("pytest_ldd.sandbox")
    module.hidden_tests = hidden_tests  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pytest_ldd.sandbox", module)
    return made


def test_hidden_tests_name_uses_the_sandbox_lazily(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    failing = SimpleNamespace(passed=False, tampered=False, reason="tests/hidden: 1 of 3 failed")
    made = _fake_sandbox(monkeypatch, failing)
    checker = resolve_checker("hidden_tests:hidden", base_dir=tmp_path)
    assert made[0].tests == tmp_path / "hidden"
    result = run_check(checker, Episode("t", workspace=tmp_path), None)
    assert result == CheckResult(False, "tests/hidden: 1 of 3 failed")
    assert made[0].runs == 1  # the verdict is computed once, not once per question

    resolve_checker(f"hidden_tests:{tmp_path}", base_dir="/elsewhere")
    assert made[1].tests == tmp_path

    graded = grade(Episode("t"), None, check="hidden_tests:hidden", base_dir=tmp_path)
    assert made[2].tests == tmp_path / "hidden"
    assert (graded.success, graded.detail) == (False, "tests/hidden: 1 of 3 failed")


def test_hidden_tests_detail_says_tampered(monkeypatch: pytest.MonkeyPatch) -> None:
    tampered = SimpleNamespace(passed=False, tampered=True, reason="canary test passed")
    made = _fake_sandbox(monkeypatch, tampered)
    score = TaskSuccessMetric(check="hidden_tests:tests/hidden")(Episode("t"), None)
    assert score.value == 0.0
    assert score.detail == "tampered: canary test passed"
    assert made[0].runs == 1


def test_a_hidden_tests_callable_is_wrapped_too(tmp_path: Path) -> None:
    passing = SimpleNamespace(passed=True, tampered=False, reason="")
    inner = _FakeHiddenTests(tmp_path, passing)
    result = run_check(resolve_checker(inner), Episode("t"), None)
    assert result == CheckResult(True, "hidden tests passed")
    assert inner.runs == 1


def test_hidden_tests_name_runs_the_real_sandbox(tmp_path: Path) -> None:
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "test_add.py").write_text(
        "from solution import add\n\ndef test_add():\n    assert add(2, 3) == 5\n",
        encoding="utf-8",
    )
    good, bad = tmp_path / "good", tmp_path / "bad"
    for workspace, body in ((good, "a + b"), (bad, "a - b")):
        workspace.mkdir()
        (workspace / "solution.py").write_text(
            f"def add(a, b):\n    return {body}\n", encoding="utf-8"
        )
    metric = TaskSuccessMetric(check=resolve_checker("hidden_tests:hidden", base_dir=tmp_path))
    assert metric(Episode("add", workspace=good), None).value == 1.0
    failed = metric(Episode("add", workspace=bad), None)
    assert failed.value == 0.0
    assert failed.detail


def test_an_inconclusive_verdict_is_an_inconclusive_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    doubt = SimpleNamespace(
        passed=False,
        tampered=False,
        inconclusive=True,
        confinement="none",
        reason="the judge process died (signal SIGKILL)",
    )
    _fake_sandbox(monkeypatch, doubt)
    checker = resolve_checker("hidden_tests:tests/hidden")
    result = run_check(checker, Episode("t"), None)
    assert result == CheckResult(
        False,
        "inconclusive: the judge process died (signal SIGKILL)",
        inconclusive=True,
        confinement="none",
    )
    assert not result
    score = TaskSuccessMetric(check=checker)(Episode("t"), None)
    assert (score.value, score.success, score.inconclusive) == (0.0, None, True)


def test_a_check_result_cannot_be_both_passed_and_inconclusive() -> None:
    with pytest.raises(InvalidObservationError, match="'passed' must be False"):
        CheckResult(True, "x", inconclusive=True)
    with pytest.raises(InvalidObservationError, match="'inconclusive' must be a bool"):
        CheckResult(False, "x", inconclusive=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidObservationError, match="'confinement'"):
        CheckResult(False, "x", confinement="")
    # A checker's own inconclusive result without a detail is named as such.
    assert run_check(lambda e, g: CheckResult(False, inconclusive=True), Episode("t"), None) == (
        CheckResult(False, "inconclusive", inconclusive=True)
    )
