"""Tests of pytest_ldd._sandbox.judge: proof, the workspace's fault and the grader's.

Each test builds what a run reported (a channel log, the process's end) by hand and
checks the three answers: tampered only with proof, inconclusive only with evidence
against the grader, failed for everything the workspace's code could have caused.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from pytest_ldd._sandbox.channel import ChannelLog
from pytest_ldd._sandbox.judge import Judgement, _base, judge
from pytest_ldd._sandbox.process import ChildRun
from pytest_ldd._sandbox.staging import HiddenSuite

SUITE = HiddenSuite(
    root=Path("/nowhere"),
    files=(Path("/nowhere/test_a.py"), Path("/nowhere/test_b.py")),
    expected=("test_a.py::test_x", "test_a.py::test_y", "test_b.py::test_z"),
    must_fail=frozenset({"test_a.py::test_edge", "test_b.py::test_fail"}),
    must_pass=frozenset({"test_a.py::test_round", "test_b.py::test_pass"}),
    twins={"test_a.py::test_x_values": "test_a.py::test_x"},
    twin_changes={"test_a.py::test_x_values": "42 -> 57"},
    twin_lines={"test_a.py::test_x_values": (30, 31)},
)
CLEAN = {
    "test_a.py::test_x": "passed",
    "test_a.py::test_y[1]": "passed",
    "test_a.py::test_y[2]": "passed",
    "test_a.py::test_edge": "failed",
    "test_a.py::test_round": "passed",
    "test_a.py::test_x_values": "failed",
    "test_b.py::test_z": "passed",
    "test_b.py::test_fail": "failed",
    "test_b.py::test_pass": "passed",
}
LINES = {"test_a.py::test_x_values": 30, "test_a.py::test_edge": 12, "test_b.py::test_fail": 3}


def _judged(
    tests: dict[str, str] | None = None,
    *,
    returncode: int = 1,
    isolation: str = "inprocess",
    suite: HiddenSuite = SUITE,
    lines: dict[str, int] = LINES,
    **log_fields: Any,
) -> Judgement:
    tests = dict(CLEAN if tests is None else tests)
    log = ChannelLog(
        hello=True,
        collected=log_fields.pop("collected", set(CLEAN) | set(tests)),
        modules=log_fields.pop("modules", {"test_a.py", "test_b.py"}),
        tests=tests,
        lines=dict(lines),
        finish=log_fields.pop("finish", 1),
        **log_fields,
    )
    run = ChildRun(returncode, False, False, False, b"", "", 0.1)
    return judge(
        suite=suite,
        log=log,
        run=run,
        modified=(),
        timeout=60.0,
        output_bytes=100,
        isolation=isolation,
    )


def _state(judgement: Judgement) -> str:
    if judgement.tampered:
        return "tampered"
    if judgement.inconclusive:
        return "inconclusive"
    return "passed" if judgement.passed else "failed"


def test_a_clean_run_passes_and_counts_the_twin_that_failed_at_its_check() -> None:
    judgement = _judged()
    assert _state(judgement) == "passed"
    assert judgement.reason == "all 4 hidden tests passed"
    assert (judgement.twins_tested, judgement.twins_untested) == (1, 0)
    assert "test_a.py::test_x_values" not in judgement.outcomes


def test_a_twin_that_failed_elsewhere_proves_nothing_either_way() -> None:
    twin = "test_a.py::test_x_values"
    others = {k: v for k, v in LINES.items() if k != twin}
    for outcome, line in (("failed", 12), ("failed", None), ("error", None), ("skipped", None)):
        lines = {**others, twin: line} if line else others
        judgement = _judged({**CLEAN, twin: outcome}, lines=lines)
        assert _state(judgement) == "passed", (outcome, line)
        assert (judgement.twins_tested, judgement.twins_untested) == (0, 1)


def test_a_twin_that_passed_is_proof_next_to_a_passing_original_only() -> None:
    passed_twin = {**CLEAN, "test_a.py::test_x_values": "passed"}
    judgement = _judged(passed_twin)
    assert _state(judgement) == "tampered"
    assert "twin canary of test_a.py::test_x passed" in judgement.reason
    wrong = _judged({**passed_twin, "test_a.py::test_x": "failed"})
    assert _state(wrong) == "failed"
    assert wrong.reason.startswith("1 of 4 hidden tests did not pass: test_a.py::test_x")
    assert "test_a.py::test_x (42 -> 57) passed where the hidden test did not" in wrong.reason


@pytest.mark.parametrize(
    ("change", "state", "fragment"),
    [
        (
            {"collect_errors": {"test_a.py": "In test_x_values: ids must match the rows"}},
            "inconclusive",
            "the twin canaries made test_a.py fail to collect",
        ),
        (
            {"collect_errors": {"test_a.py": "ImportError: cannot import name 'mul'"}},
            "failed",
            "collection error in test_a.py",
        ),
        (
            {
                "finish": 3,
                "returncode": 3,
                "internal_error": "ValueError: ours",
                "internal_error_by_grader": True,
            },
            "inconclusive",
            "pytest exited with code 3 (internal error): ValueError: ours",
        ),
        (
            {"finish": 3, "returncode": 3, "internal_error": "SystemExit: 0"},
            "failed",
            "pytest exited with code 3 (internal error)",
        ),
        (
            {"finish": 4, "returncode": 4},
            "inconclusive",
            "pytest exited with code 4 (usage error)",
        ),
        (
            {"inconclusive": [("test_b.py::test_z", "a generator cannot cross")]},
            "inconclusive",
            "test_b.py::test_z could not be judged: a generator cannot cross",
        ),
        (
            {
                "collect_errors": {"test_a.py": "TypeError: cannot pass a module object"},
                "inconclusive": [("test_a.py", "cannot pass a module object")],
            },
            "inconclusive",
            "test_a.py could not be judged: cannot pass a module object",
        ),
        (
            {
                "collect_errors": {"test_a.py": "ImportError: cannot import name 'mul'"},
                "inconclusive": [("test_b.py", "cannot pass a module object")],
            },
            "failed",
            "collection error in test_a.py",
        ),
    ],
)
def test_only_evidence_against_the_grader_makes_a_verdict_inconclusive(
    change: dict[str, Any], state: str, fragment: str
) -> None:
    change = dict(change)
    returncode = change.pop("returncode", 1)
    tests = dict(CLEAN)
    if "collect_errors" in change:
        tests = {k: v for k, v in tests.items() if not k.startswith("test_a.py")}
        change.update(collected=set(tests), modules={"test_b.py"})
    if "inconclusive" in change and "collect_errors" not in change:
        tests["test_b.py::test_z"] = "failed"
    judgement = _judged(tests, returncode=returncode, **change)
    assert _state(judgement) == state, judgement.reason
    assert fragment in judgement.reason


def test_any_internal_error_of_the_judge_of_process_isolation_is_the_graders() -> None:
    change = {"finish": 3, "internal_error": "KeyError: 'x'"}
    assert _state(_judged(returncode=3, isolation="process", **change)) == "inconclusive"
    assert _state(_judged(returncode=3, isolation="inprocess", **change)) == "failed"


def test_proof_wins_over_the_workspaces_fault_which_wins_over_the_graders() -> None:
    carried = [("test_b.py::test_z", "cannot cross")]
    tests = {**CLEAN, "test_b.py::test_z": "failed", "test_a.py::test_y[1]": "failed"}
    judgement = _judged(tests, inconclusive=carried)
    assert _state(judgement) == "failed"  # test_y failed on its own
    assert "1 of 4 hidden tests did not pass: test_a.py::test_y[1] (failed)" in judgement.reason
    assert "could not be judged" in judgement.reason
    lying = _judged(tests, inconclusive=carried, liars=[("test_a.py::test_y[1]", "lie")])
    assert _state(lying) == "tampered"


def test_a_file_left_out_by_the_suites_own_configuration_is_not_expected() -> None:
    tests = {k: v for k, v in CLEAN.items() if not k.startswith("test_b.py")}
    log: dict[str, Any] = {"collected": set(tests), "modules": {"test_a.py"}}
    judgement = judge(
        suite=SUITE,
        log=ChannelLog(hello=True, tests=tests, lines=LINES, finish=1, **log),
        run=ChildRun(1, False, False, False, b"", "", 0.1),
        modified=(),
        timeout=60.0,
        output_bytes=100,
    )
    assert _state(judgement) == "passed"
    assert "test_b.py::test_z" not in judgement.outcomes
    crashed = judge(
        suite=SUITE,
        log=ChannelLog(hello=True, tests=tests, lines=LINES, finish=None, **log),
        run=ChildRun(9, False, False, False, b"", "", 0.1),
        modified=(),
        timeout=60.0,
        output_bytes=100,
    )
    assert _state(crashed) == "failed"
    assert "1 of 4 hidden tests not reported: test_b.py::test_z" in crashed.reason


def test_a_file_collected_without_its_canaries_was_replaced_unless_they_were_deselected() -> None:
    tests = {
        k: v for k, v in CLEAN.items() if k not in ("test_b.py::test_fail", "test_b.py::test_pass")
    }
    log = ChannelLog(
        hello=True,
        collected=set(tests),
        modules={"test_a.py", "test_b.py"},
        tests=tests,
        lines=LINES,
        finish=1,
    )
    run = ChildRun(1, False, False, False, b"", "", 0.1)
    replaced = judge(suite=SUITE, log=log, run=run, modified=(), timeout=60, output_bytes=1)
    assert replaced.tampered
    assert "test_b.py collected without its canary tests" in replaced.reason
    deselected = dataclasses.replace(
        log, deselected={"test_b.py::test_fail", "test_b.py::test_pass"}
    )
    judgement = judge(
        suite=SUITE, log=deselected, run=run, modified=(), timeout=60, output_bytes=1
    )
    assert not judgement.tampered


def test_a_skipped_canary_is_no_evidence() -> None:
    assert _state(_judged({**CLEAN, "test_a.py::test_edge": "skipped"})) == "passed"
    assert _state(_judged({**CLEAN, "test_a.py::test_round": "skipped"})) == "passed"
    assert _state(_judged({**CLEAN, "test_a.py::test_round": "failed"})) == "failed"


def test_a_parameter_id_may_hold_colons_and_brackets() -> None:
    assert _base("tests/test_u.py::test_x[https://[::1]:80/]") == "tests/test_u.py::test_x"
    assert _base("test_u.py::Class::test_y[a::b]") == "test_u.py::Class::test_y"
    assert _base("test_u.py::test_z") == "test_u.py::test_z"


def test_the_hidden_tests_own_limits_are_named_before_a_canarys() -> None:
    carried = [
        ("test_a.py::test_x_values", "a twin met it"),
        ("test_a.py::test_round", "a canary met it"),
        ("test_b.py::test_z", "a generator cannot cross"),
    ]
    judgement = _judged({**CLEAN, "test_b.py::test_z": "failed"}, inconclusive=carried)
    assert _state(judgement) == "inconclusive"
    assert judgement.reason.startswith(
        "test_b.py::test_z could not be judged: a generator cannot cross;"
    )
