"""Real libraries graded by their own suites: the hardened verdict agrees with plain pytest.

Each shipped suite (``tests/data/suites``, with its licence) is graded as an agent's
work would be: the library is the workspace, its own test folder the hidden tests.
The code is honest and nobody here wrote it, so the verdict must be what plain pytest
says of the same files -- every test id with the same outcome -- and never a
tampering accusation.  Plain pytest's outcomes are folded by ``realsuites`` from
pytest's own reports, independently of the verifier's runner.

In ``inprocess`` isolation (the default) the outcomes must be identical.  Process
isolation's grading of the same suites is in ``test_real_suites_process.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from realsuites import SUITES, plain_outcomes, stage_suite

from pytest_ldd.sandbox import Verdict, run_hidden_tests

# more_itertools' plain run alone takes ~17 s on a loaded machine: the others keep
# CI's share of this file near a minute and a half on two workers, and span a plugin
# system (pluggy), class-heavy code with a tuple subclass of its own equality (boltons),
# a dataclass library with its own comparison machinery (attrs), a parser (iniconfig),
# tests of process state such as lazy imports (six), caches whose test classes inherit
# their tests from a mixin in another file (cachetools), tests that compare tracebacks
# of themselves (exceptiongroup), versions whose equality ignores build metadata
# (semver) and honest universal bounds that order after everything (packaging's
# ``Infinity``).
IN_CI = (
    "attrs", "boltons", "cachetools", "exceptiongroup", "iniconfig", "packaging", "pluggy",
    "semver", "six",
)  # fmt: skip
PlainSuite = Callable[[str], dict[str, str]]


def _differences(plain: dict[str, str], graded: dict[str, str]) -> dict[str, tuple[str, str]]:
    ids = set(plain) | set(graded)
    return {
        test_id: (plain.get(test_id, "missing"), graded.get(test_id, "missing"))
        for test_id in sorted(ids)
        if plain.get(test_id) != graded.get(test_id)
    }


def _graded(
    name: str, tmp_path: Path, isolation: str, plain_suite: PlainSuite
) -> tuple[dict[str, str], Verdict, str]:
    """Plain pytest's outcomes of a suite, its verdict, and what to show if they differ."""
    workspace, hidden = stage_suite(SUITES[name], tmp_path)
    plain = plain_suite(name)
    verdict = run_hidden_tests(workspace, hidden, timeout=600, isolation=isolation)
    return plain, verdict, f"{verdict.reason}\n{verdict.output_tail[-3000:]}"


@pytest.mark.parametrize("name", IN_CI)
def test_a_real_suite_gets_plain_pytests_outcomes_in_the_default_isolation(
    name: str, tmp_path: Path, plain_suite: PlainSuite
) -> None:
    plain, verdict, detail = _graded(name, tmp_path, "inprocess", plain_suite)
    assert len(plain) > 40
    assert not verdict.tampered, detail
    assert not verdict.inconclusive, detail
    assert _differences(plain, dict(verdict.outcomes)) == {}, detail
    assert verdict.passed == (set(plain.values()) == {"passed"}), detail


SUBTESTS = """import unittest

from calc import double


class DoubleTests(unittest.TestCase):
    def test_failed_subtest(self):
        for n in range(4):
            with self.subTest(n=n):
                self.assertEqual(double(n), 2 * n)

    def test_skipped_subtest(self):
        for n in range(3):
            with self.subTest(n=n):
                if n == 1:
                    self.skipTest("one is not interesting")
                self.assertEqual(double(n) % 2, 0)

    def test_plain(self):
        self.assertEqual(double(0), 0)
"""


@pytest.mark.parametrize("isolation", ["inprocess", "process"])
def test_a_failed_subtest_fails_its_test_and_a_skipped_one_does_not_skip_it(
    isolation: str, tmp_path: Path
) -> None:
    # pytest 9 reports a unittest test whose subTest failed as passed, after the
    # subtest's own failed report: the verdict must not read that as a pass.
    workspace = tmp_path / "workspace"
    hidden = tmp_path / "hidden"
    workspace.mkdir()
    hidden.mkdir()
    (workspace / "calc.py").write_text(
        "def double(n):\n    return 2 * n if n != 3 else 7\n", encoding="utf-8"
    )
    (hidden / "test_double.py").write_text(SUBTESTS, encoding="utf-8")
    plain = plain_outcomes(workspace, hidden)
    verdict = run_hidden_tests(workspace, hidden, timeout=120, isolation=isolation)
    detail = f"{verdict.reason}\n{verdict.output_tail[-3000:]}"
    assert plain["test_double.py::DoubleTests::test_failed_subtest"] == "failed"
    assert dict(verdict.outcomes) == plain, detail
    assert not verdict.passed
    assert not verdict.tampered, detail


INHERITED = {
    "test_base.py": """import pytest

from calc import double


class TestDouble:
    @pytest.mark.parametrize("n", [1, 2, 3])
    def test_value(self, n):
        assert double(n) == 2 * n

    def test_known(self):
        assert double(21) == 42

    def test_text(self):
        assert double("ab") == "abab"


def test_module_level():
    assert double(5) == 10
""",
    # Imports the class (collected here too) and subclasses it: pytest runs the
    # inherited tests, twins included, under this file's ids as well.
    "test_more.py": """from test_base import *  # noqa: F403
from test_base import TestDouble


class TestDoubleAgain(TestDouble):
    def test_zero(self):
        assert double(0) == 0
""",
}


@pytest.mark.parametrize("isolation", ["inprocess", "process"])
def test_canaries_collected_again_elsewhere_are_canaries_there_too(
    isolation: str, tmp_path: Path
) -> None:
    # itsdangerous' test_timed.py imports TestSerializer from test_serializer.py and
    # subclasses it: the twins planted in TestSerializer ran under test_timed.py's ids,
    # failed as twins do, and failed an honest workspace.
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "calc.py").write_text("def double(n):\n    return n * 2\n", encoding="utf-8")
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    for name, text in INHERITED.items():
        (hidden / name).write_text(text, encoding="utf-8")
    plain = plain_outcomes(workspace, hidden)
    assert "test_more.py::TestDoubleAgain::test_known" in plain
    assert "test_more.py::test_module_level" in plain
    for _ in range(3):
        verdict = run_hidden_tests(workspace, hidden, timeout=120, isolation=isolation)
        detail = f"{verdict.reason}\n{verdict.output_tail[-3000:]}"
        assert not verdict.tampered, detail
        assert not verdict.inconclusive, detail
        assert dict(verdict.outcomes) == plain, detail
        assert verdict.passed, detail
    # A lie is still caught through the copies.
    (workspace / "calc.py").write_text(
        "class _Any:\n    def __eq__(self, other):\n        return True\n    __hash__ = None\n\n\n"
        "def double(n):\n    return _Any()\n",
        encoding="utf-8",
    )
    verdict = run_hidden_tests(workspace, hidden, timeout=120, isolation=isolation)
    assert verdict.tampered, verdict.reason
    assert not verdict.passed
