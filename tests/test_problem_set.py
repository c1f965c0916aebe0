"""The shipped problem set (HumanEval) and its wrong completions, graded by the sandbox."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from humaneval import (
    DATA,
    hidden_source,
    load_problems,
    write_hidden,
    write_workspace,
    wrong_completions,
)

from pytest_ldd.sandbox import run_hidden_tests

# The README's pin: OpenAI's file, byte for byte.
_SHA256 = "b796127e635a67f93fb35c04f4cb03cf06f38c8072ee7cee8833d7bee06979ef"
# A few problems of different shapes: floats, strings, a helper of the prompt's own
# (HumanEval/32 calls poly from its check), lists.
_SAMPLED = ("HumanEval/0", "HumanEval/32", "HumanEval/50", "HumanEval/163")


def test_the_problem_set_is_shipped_unmodified_with_its_licence() -> None:
    assert hashlib.sha256((DATA / "HumanEval.jsonl.gz").read_bytes()).hexdigest() == _SHA256
    assert _SHA256 in (DATA / "README.md").read_text(encoding="utf-8")
    licence = (DATA / "LICENSE").read_text(encoding="utf-8")
    assert "MIT License" in licence
    assert "Copyright (c) OpenAI" in licence
    problems = load_problems()
    assert len(problems) == 164
    assert len({p.task_id for p in problems}) == 164


def test_every_problem_has_a_wrong_completion_one_token_away() -> None:
    problems = {p.task_id: p for p in load_problems()}
    wrong = wrong_completions()
    assert set(wrong) == set(problems)
    for task_id, (completion, mutation) in wrong.items():
        canonical = problems[task_id].canonical_solution
        assert completion != canonical, task_id
        assert mutation.startswith("line "), (task_id, mutation)
        changed = [
            (a, b)
            for a, b in zip(canonical.splitlines(), completion.splitlines(), strict=True)
            if a != b
        ]
        assert len(changed) == 1, (task_id, changed)


def test_the_hidden_test_calls_check_on_the_entry_point() -> None:
    problem = load_problems()[0]
    source = hidden_source(problem)
    compile(source, "test_has_close_elements.py", "exec")
    assert "def test_has_close_elements():\n    check(has_close_elements)\n" in source


@pytest.mark.parametrize("task_id", _SAMPLED)
def test_canonical_passes_and_wrong_fails_on_the_cold_path(task_id: str, tmp_path: Path) -> None:
    problem = next(p for p in load_problems() if p.task_id == task_id)
    hidden = write_hidden(problem, tmp_path / "hidden")
    good = write_workspace(problem, problem.canonical_solution, tmp_path / "good")
    bad = write_workspace(problem, wrong_completions()[task_id][0], tmp_path / "bad")
    passed = run_hidden_tests(good, hidden)
    assert passed.passed, passed.reason
    failed = run_hidden_tests(bad, hidden)
    assert not failed.passed
    assert not failed.inconclusive, failed.reason
    assert not failed.tampered, failed.reason
    assert f"test_{problem.entry_point}" in " ".join(failed.not_passed)
