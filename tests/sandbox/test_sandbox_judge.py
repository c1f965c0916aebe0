"""Tests of pytest_ldd._sandbox.judge: proof, the workspace's fault and the grader's.

Each test builds what a run reported (a channel log, the process's end) by hand and
checks the three answers: tampered only with proof, inconclusive only with evidence
against the grader, failed for everything the workspace's code could have caused.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_ldd._sandbox.channel import ChannelLog
from pytest_ldd._sandbox.judge import Judgement, _base, _expected_side, _state_moved, judge
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


def test_the_hidden_tests_own_limits_are_named_and_a_canarys_never() -> None:
    carried = [
        ("test_a.py::test_x_values", "a twin met it"),
        ("test_a.py::test_round", "a canary met it"),
        ("test_b.py::test_z", "a generator cannot cross"),
    ]
    judgement = _judged({**CLEAN, "test_b.py::test_z": "failed"}, inconclusive=carried)
    assert _state(judgement) == "inconclusive"
    assert judgement.reason.startswith(
        "test_b.py::test_z could not be judged: a generator cannot cross"
    )
    # A canary's id is the grader's secret, and a twin fails by design.
    assert "test_x_values" not in judgement.reason
    assert "test_round" not in judgement.reason
    # Where only canaries met a limit, the run still could not be judged whole.
    judgement = _judged(dict(CLEAN), inconclusive=carried[:2])
    assert _state(judgement) == "inconclusive"
    assert judgement.reason.startswith("a canary test could not be judged: a twin met it")
    assert "test_x_values" not in judgement.reason


# Which side of a failed original's ``==`` is the expected value: read from the staged
# file, which the run may have replaced with anything.
SIDES = {
    "assert f(x) == 5": 1,
    "assert 5 == f(x)": 0,
    "assert calc.unique_id(*case) == expected": 1,
    "assert obj.value == (1, 'a')": 1,
    "assert -3 == items[0]": 0,
    "assert result == expected": None,  # two names: nothing is read into it
    "assert f(x) == g(y)": None,
    "assert f(x) == [1, y]": None,  # a display holding a name
    "assert f(x) != 5": None,
    "assert f(x) == 5 == g(x)": None,
}


@pytest.mark.parametrize(("line", "side"), list(SIDES.items()), ids=list(SIDES))
def test_the_expected_side_is_read_from_the_assertions_syntax(
    tmp_path: Path, line: str, side: int | None
) -> None:
    path = tmp_path / "test_t.py"
    path.write_text(f"import calc\n\n\ndef test_t():\n    {line}\n", encoding="utf-8")
    assert _expected_side(path, 5, 5) == side
    assert _expected_side(path, 1, 4) is None  # no assertion there


@pytest.mark.parametrize("kind", ["link to /dev/zero", "fifo", "too large", "not python"])
def test_a_staged_file_the_run_replaced_is_never_read_into(tmp_path: Path, kind: str) -> None:
    """Never blocks, never reads without bound: the answer is None."""
    path = tmp_path / "test_t.py"
    if kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "too large":
        path.write_text("assert f(x) == 5\n" + "#" * (5 * 1024 * 1024), encoding="utf-8")
    else:
        path.write_bytes(b"\xff\xfe def (")
    assert _expected_side(path, 1, 1) is None


def test_state_moved_only_when_a_twin_computed_what_the_original_expects() -> None:
    # pydash's unique_id, twin first: the twin computed '1' and 'foo2', the original '3'.
    twins = [(16, "1", "8"), (16, "foo2", "ldy7")]
    assert _state_moved((24, "3", "1"), twins, 1)
    assert _state_moved((24, "foo4", "foo2"), twins, 1)
    # The expected value on the left: the same reading, mirrored.
    assert _state_moved((24, "1", "3"), [(16, "8", "1")], 0)
    # A constant: the original computed what a twin computed too.
    assert not _state_moved((24, "1", "foo2"), [(16, "1", "8"), (16, "1", "ldy7")], 1)
    # Never what the original expects.
    assert not _state_moved((24, "0", "1"), [(16, "0", "8"), (16, "foo0", "ldy7")], 1)
    # Equal but not the same type: 1 is not True, nor '1'.
    assert not _state_moved((24, 3, 1), [(16, True, 8)], 1)
    assert not _state_moved((24, 3, 1), [(16, "1", 8)], 1)
    # A twin run that reported nothing: no evidence.
    assert not _state_moved((24, "3", "1"), [(16, "1", "8"), None], 1)
    assert not _state_moved((24, "3", "1"), [], 1)
