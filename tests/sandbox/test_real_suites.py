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

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from realsuites import SUITES, plain_outcomes, stage_suite

from pytest_ldd._sandbox import staging
from pytest_ldd.sandbox import Verdict, grade_many, run_hidden_tests

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


@pytest.mark.parametrize("name", IN_CI)
def test_a_real_suite_gets_plain_pytests_outcomes_in_the_default_isolation(
    name: str, tmp_path: Path, plain_suite: PlainSuite
) -> None:
    workspace, hidden = stage_suite(SUITES[name], tmp_path)
    plain = plain_suite(name)
    verdict = run_hidden_tests(workspace, hidden, timeout=600, isolation="inprocess")
    detail = f"{verdict.reason}\n{verdict.output_tail[-3000:]}"
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


RELATIVE = {
    "tests/__init__.py": "",
    "tests/numbers.txt": "1 2 3\n",
    # A helper of the tests' own, imported through their package: test code, however
    # it reaches the working folder, never the workspace's.
    "tests/helpers.py": (
        "class AnyList:\n    def __eq__(self, other):\n        return isinstance(other, list)\n"
    ),
    "tests/test_files.py": """from pathlib import Path

from calc import read_numbers
from tests.helpers import AnyList


def test_reads_its_data_relative_to_the_working_folder():
    assert Path("tests/numbers.txt").read_text(encoding="utf-8").split() == ["1", "2", "3"]


def test_lists_the_working_folder():
    assert Path("tests").is_dir()
    assert "test_files.py" in {path.name for path in Path("tests").iterdir()}


def test_hands_the_workspace_a_relative_path():
    assert read_numbers("tests/numbers.txt") == [1, 2, 3]


def test_compares_with_a_helper_of_its_own():
    assert read_numbers("tests/numbers.txt") == AnyList()
""",
}
READ = (
    "def read_numbers(path):\n"
    "    with open(path, encoding='utf-8') as handle:\n"
    "        return [int(x) for x in handle.read().split()]\n"
)
HANDED = ("tests/test_files.py::test_hands_the_workspace_a_relative_path",
          "tests/test_files.py::test_compares_with_a_helper_of_its_own")  # fmt: skip


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _graded(workspace: Path, hidden: Path, start: str, isolation: str) -> Verdict:
    """The verdict of one run, started cold or warm (grade_many's zygote)."""
    if start == "warm":
        ((_, verdict),) = grade_many([(workspace, hidden)], timeout=120, isolation=isolation)
        return verdict
    return run_hidden_tests(workspace, hidden, timeout=120, isolation=isolation)


def _as_plain_pytest(
    tmp_path: Path, calc: str, files: dict[str, str], isolation: str = "inprocess"
) -> tuple[dict[str, str], Verdict]:
    """Plain pytest's outcomes of a suite and its verdict, which must agree, unaccused."""
    workspace = _tree(tmp_path / "workspace", {"calc.py": calc})
    hidden = _tree(tmp_path / "hidden", files)
    plain = plain_outcomes(workspace, hidden)
    verdict = run_hidden_tests(workspace, hidden, timeout=120, isolation=isolation)
    detail = f"{verdict.reason}\n{verdict.output_tail[-3000:]}"
    assert not verdict.tampered, detail
    assert not verdict.inconclusive, detail
    assert dict(verdict.outcomes) == plain, detail
    return plain, verdict


def _relative_task(
    tmp_path: Path, workspace_files: dict[str, str], *, package: bool = True
) -> tuple[Path, Path]:
    workspace, hidden = tmp_path / "workspace", tmp_path / "hidden"
    tests = {rel: text for rel, text in RELATIVE.items() if package or "__init__" not in rel}
    _tree(workspace, {"calc.py": READ, **workspace_files})
    _tree(hidden, tests)
    return workspace, hidden


@pytest.mark.parametrize(("start", "package"), [("cold", True), ("warm", True), ("cold", False)])
@pytest.mark.parametrize("isolation", ["inprocess", "process"])
def test_a_test_finds_its_folder_relative_to_the_working_folder_as_in_its_repository(
    isolation: str, start: str, package: bool, tmp_path: Path
) -> None:
    # pyparsing's testParseFile opens "tests/parsefiletest_input_file.txt": its authors
    # run pytest from the repository's root, where tests/ sits beside the package.
    # Without tests/__init__.py, "from tests.helpers import ..." finds tests/ there too
    # (python -m pytest puts the working folder on sys.path).
    workspace, hidden = _relative_task(tmp_path, {}, package=package)
    plain = plain_outcomes(workspace, hidden)
    assert set(plain.values()) == {"passed"}
    verdict = _graded(workspace, hidden, start, isolation)
    detail = f"{verdict.reason}\n{verdict.output_tail[-3000:]}"
    assert not verdict.tampered, detail
    assert not (workspace / "tests").exists()  # the agent's folder is never touched
    if isolation == "inprocess":
        assert dict(verdict.outcomes) == plain, detail
        assert verdict.passed, detail
        return
    # The subject may not read the hidden tests' files: a workspace handed a path into
    # them cannot be judged, never failed; the test code itself reads them as plain.
    assert verdict.inconclusive, detail
    for test_id, outcome in plain.items():
        assert verdict.outcomes[test_id] == outcome or test_id in HANDED, detail
    for test_id in HANDED:
        if verdict.outcomes[test_id] != "passed":
            assert f"{test_id} could not be judged: the test failed after handing" in detail
    # A twin that met the limit too is its original's, never named by its own id.
    named = re.findall(r"(?:^|; )(\S+) could not be judged", verdict.reason)
    assert named
    assert set(named) <= set(plain), verdict.reason


@pytest.mark.parametrize("isolation", ["inprocess", "process"])
def test_a_workspace_entry_of_the_hidden_tests_name_is_the_workspaces(
    isolation: str, tmp_path: Path
) -> None:
    # The workspace's own tests/ is never replaced: its file is what a relative path
    # reads, and after the run it is as the agent left it.
    workspace, hidden = _relative_task(tmp_path, {"tests/numbers.txt": "7 8 9\n"})
    verdict = run_hidden_tests(workspace, hidden, timeout=120, isolation=isolation)
    detail = f"{verdict.reason}\n{verdict.output_tail[-3000:]}"
    assert not verdict.tampered, detail
    for name in ("reads_its_data_relative_to_the_working_folder", "lists_the_working_folder"):
        assert verdict.outcomes[f"tests/test_files.py::test_{name}"] == "failed", detail
    assert (workspace / "tests" / "numbers.txt").read_text(encoding="utf-8") == "7 8 9\n"


STARTS_PYTHON = {
    "test_cli.py": """import subprocess
import sys


def test_the_package_runs_as_a_module(tmp_path):
    done = subprocess.run([sys.executable, "-m", "greet", "Ada"], capture_output=True,
                          text=True, check=False, cwd=tmp_path)
    assert done.stdout == "hello Ada\\n", done.stderr


def test_a_child_imports_the_package(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = "import greet; print(greet.hello('Bo'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert done.stdout == "hello Bo\\n", done.stderr
""",
}
GREET = {
    "greet/__init__.py": "def hello(name):\n    return f'hello {name}'\n",
    "greet/__main__.py": "import sys\n\nfrom greet import hello\n\nprint(hello(sys.argv[1]))\n",
}


@pytest.mark.parametrize("start", ["cold", "warm"])
@pytest.mark.parametrize("isolation", ["inprocess", "process"])
def test_a_python_the_tests_start_imports_the_workspace_as_where_it_is_installed(
    isolation: str, start: str, tmp_path: Path
) -> None:
    # python-dotenv's CLI tests run ``python -m dotenv`` in a temporary folder: where
    # its authors test it, the package is installed, and under plain pytest here it is
    # on PYTHONPATH.
    workspace, hidden = tmp_path / "workspace", tmp_path / "hidden"
    _tree(workspace, GREET)
    _tree(hidden, STARTS_PYTHON)
    plain = plain_outcomes(workspace, hidden)
    assert set(plain.values()) == {"passed"}
    verdict = _graded(workspace, hidden, start, isolation)
    detail = f"{verdict.reason}\n{verdict.output_tail[-3000:]}"
    assert not verdict.tampered, detail
    if isolation == "inprocess":
        assert dict(verdict.outcomes) == plain, detail
        assert verdict.passed, detail
        return
    # A program the judge starts may not run workspace code (it would run beside the
    # judge, unconfined): such a test that fails cannot be judged, never failed.
    assert verdict.inconclusive, detail
    for test_id in plain:
        assert f"{test_id} could not be judged: the test failed after starting" in detail


MADE_FROM_FILES = """import os

from calc import double

HERE = os.path.join(os.path.dirname(__file__), "cases")


class TestCases:
    pass


def _case(path):
    def check(self):
        with open(path, encoding="utf-8") as handle:
            assert double(int(handle.read())) == 4

    return check


# One test per data file, made at import time, as markdown's LegacyTestMeta does.
for name in sorted(os.listdir(HERE)):
    stem = os.path.splitext(name)[0].replace("-", "_")
    setattr(TestCases, f"test_{stem}", _case(os.path.join(HERE, name)))


def test_plain():
    assert double(3) == 6
"""


def test_no_canary_is_named_like_a_test_the_suite_makes_of_its_files(tmp_path: Path) -> None:
    # A data file for every name the canaries and twins could draw from the words they
    # use: a canary named like one of those tests was taken for a canary copy, and
    # an honest suite was called tampered (markdown's legacy tests, 1 run in 3).
    words = staging._FALLBACK_WORDS
    stems = [*words, *(f"{a}-{b}" for a in words for b in words if a != b)]
    workspace, hidden = tmp_path / "workspace", tmp_path / "hidden"
    (workspace).mkdir()
    (workspace / "calc.py").write_text("def double(n):\n    return 2 * n\n", encoding="utf-8")
    (hidden / "tests" / "cases").mkdir(parents=True)
    (hidden / "tests" / "test_made.py").write_text(MADE_FROM_FILES, encoding="utf-8")
    for stem in stems:
        (hidden / "tests" / "cases" / f"{stem}.txt").write_text("2", encoding="utf-8")
    plain = plain_outcomes(workspace, hidden)
    assert len(plain) == len(stems) + 1
    assert set(plain.values()) == {"passed"}
    verdict = run_hidden_tests(workspace, hidden, timeout=300)
    detail = f"{verdict.reason}\n{verdict.output_tail[-3000:]}"
    assert not verdict.tampered, detail
    assert dict(verdict.outcomes) == plain, detail
    assert verdict.passed, detail


SUITE_SETTINGS = {
    "pyproject.toml": """[tool.pytest.ini_options]
addopts = ["-ra", "--strict-markers", "-W", "error::UserWarning"]
xfail_strict = true
filterwarnings = ["error::DeprecationWarning"]
markers = ["slow: a slow test"]
""",
    "tests/test_settings.py": """import warnings

import pytest

from calc import double, old_double


def test_a_deprecation_is_an_error_here():
    with pytest.raises(DeprecationWarning):
        old_double(2)


def test_an_unexpected_warning_fails():
    warnings.warn("surprise", UserWarning)
    assert double(2) == 4


@pytest.mark.xfail(reason="strict: a pass fails")
def test_an_unexpected_pass():
    assert double(2) == 4


@pytest.mark.slow
def test_a_registered_marker():
    assert double(3) == 6
""",
}
SETTINGS_CALC = (
    "import warnings\n\n\n"
    "def double(n):\n    return 2 * n\n\n\n"
    "def old_double(n):\n"
    "    warnings.warn('use double', DeprecationWarning, stacklevel=2)\n"
    "    return 2 * n\n"
)


@pytest.mark.parametrize("isolation", ["inprocess", "process"])
def test_the_suites_own_settings_that_decide_outcomes_apply(
    isolation: str, tmp_path: Path
) -> None:
    # A library's pyproject.toml beside its tests/: its filterwarnings, xfail_strict,
    # markers and --strict-markers decide outcomes under plain pytest, so they do here.
    # In process isolation a warning the subject forwards becomes the judge's error
    # when the call returns (it once broke the conversation mid-request).
    plain, _ = _as_plain_pytest(tmp_path, SETTINGS_CALC, SUITE_SETTINGS, isolation)
    assert plain == {
        "tests/test_settings.py::test_a_deprecation_is_an_error_here": "passed",
        "tests/test_settings.py::test_an_unexpected_warning_fails": "failed",
        "tests/test_settings.py::test_an_unexpected_pass": "failed",
        "tests/test_settings.py::test_a_registered_marker": "passed",
    }


LEFT_OUT = {
    "tests/conftest.py": (
        'collect_ignore = ["testdata"]\nif True:\n    collect_ignore_glob = ["golden/*_test.py"]\n'
    ),
    "tests/testdata/sample_test.py": "def test_data():\n    return 1\n",
    "tests/golden/other_test.py": "def test_other():\n    assert False\n",
    "tests/test_reads.py": """from pathlib import Path

from calc import double

HERE = Path(__file__).parent


def test_a_data_file_that_looks_like_tests_is_as_written():
    text = (HERE / "testdata" / "sample_test.py").read_text(encoding="utf-8")
    assert text == "def test_data():\\n    return 1\\n"


def test_a_golden_file_is_as_written():
    text = (HERE / "golden" / "other_test.py").read_text(encoding="utf-8")
    assert text == "def test_other():\\n    assert False\\n"
    assert double(2) == 4
""",
}


def test_a_file_the_suites_conftest_leaves_out_is_its_data(tmp_path: Path) -> None:
    # asttokens reads testdata/astroid/clientmodule_test.py as a fixture, and its
    # conftest.py leaves testdata out of the collection: nothing may be planted there.
    workspace, hidden = tmp_path / "workspace", tmp_path / "hidden"
    workspace.mkdir()
    (workspace / "calc.py").write_text("def double(n):\n    return 2 * n\n", encoding="utf-8")
    for rel, text in LEFT_OUT.items():
        (hidden / rel).parent.mkdir(parents=True, exist_ok=True)
        (hidden / rel).write_text(text, encoding="utf-8")
    plain = plain_outcomes(workspace, hidden)
    assert set(plain.values()) == {"passed"}
    assert len(plain) == 2
    verdict = run_hidden_tests(workspace, hidden, timeout=120)
    detail = f"{verdict.reason}\n{verdict.output_tail[-3000:]}"
    assert not verdict.tampered, detail
    assert dict(verdict.outcomes) == plain, detail
    assert verdict.passed, detail


COLLECTED = {
    "pyproject.toml": (
        "[tool.pytest.ini_options]\n"
        'norecursedirs = ["tests/typing_cases", ".*"]\n'
        'python_files = ["test_*.py", "checks.py"]\n'
        'python_classes = ["*Checks", "Test*"]\n'
    ),
    # Typing examples for a type checker: they fail when imported by pytest.
    "tests/typing_cases/test_registry.py": "from calc import registry\nregistry.get('missing')\n",
    "tests/checks.py": "from calc import double\n\n\ndef test_checks_file():\n"
    "    assert double(4) == 8\n",
    "tests/test_calc.py": "from calc import double\n\n\ndef test_double():\n"
    "    assert double(2) == 4\n\n\nclass DoubleChecks:\n    def test_twice(self):\n"
    "        assert double(double(1)) == 4\n\n\nclass Helpers:\n"
    "    def test_never_collected(self):\n        assert False\n",
    "tests/check_not_a_test.py": "def test_never_collected():\n    assert False\n",
}


@pytest.mark.parametrize("isolation", ["inprocess", "process"])
def test_the_suites_own_choice_of_test_files_applies(isolation: str, tmp_path: Path) -> None:
    # marshmallow keeps tests/mypy_test_cases out with norecursedirs (its files raise on
    # import), decorator names its test file test.py with python_files, mako its test
    # classes *Test with python_classes: plain pytest collects by them, so the staging
    # plants and expects by them too.
    calc = "registry = {}\n\n\ndef double(n):\n    return 2 * n\n"
    plain, verdict = _as_plain_pytest(tmp_path, calc, COLLECTED, isolation)
    assert plain == {
        "tests/checks.py::test_checks_file": "passed",
        "tests/test_calc.py::test_double": "passed",
        "tests/test_calc.py::DoubleChecks::test_twice": "passed",
    }
    assert verdict.passed, verdict.reason
    lax = _tree(tmp_path / "lax", {"calc.py": calc.replace("2 * n", "n")})
    wrong = run_hidden_tests(lax, tmp_path / "hidden", timeout=120, isolation=isolation)
    assert not wrong.passed, wrong.reason
    assert not wrong.tampered, wrong.reason
    assert wrong.outcomes["tests/checks.py::test_checks_file"] == "failed"


STRESS = {
    "pyproject.toml": (
        "[tool.pytest.ini_options]\n"
        'markers = ["stress: many iterations"]\n'
        "addopts = \"--strict-markers -m 'not stress'\"\n"
    ),
    "tests/test_cli.py": """import pytest

from calc import double


def test_double():
    assert double(2) == 4


@pytest.mark.stress
@pytest.mark.parametrize("n", range(3))
def test_stress(n):
    raise AssertionError("never run: its authors deselect it")


@pytest.mark.stress
class TestStress:
    def test_in_a_class(self):
        raise AssertionError("never run either")
""",
    "tests/test_races.py": """import pytest

pytestmark = [pytest.mark.stress]


def test_race():
    raise AssertionError("a whole file left out")
""",
}


def test_the_suites_marker_expression_deselects_as_under_plain_pytest(tmp_path: Path) -> None:
    # click's addopts = "-m 'not stress'" leaves out 10,000 stress tests; run, they
    # took the verdict past its timeout.
    calc = "def double(n):\n    return 2 * n\n"
    plain, verdict = _as_plain_pytest(tmp_path, calc, STRESS)
    assert plain == {"tests/test_cli.py::test_double": "passed"}
    assert verdict.passed, verdict.reason


PLUGGED = {
    "tests/test_plugged.py": """import asyncio

from calc import double


def test_with_mocker(mocker):
    spy = mocker.spy(asyncio, "sleep")
    assert double(2) == 4
    assert spy.call_count == 0


async def test_a_coroutine():
    await asyncio.sleep(0)
    assert double(3) == 6
""",
}
PLUGINS_NAMED = (
    '[tool.pytest.ini_options]\nrequired_plugins = ["pytest-mock"]\nasyncio_mode = "auto"\n'
)


def test_the_plugins_the_suite_names_are_loaded(tmp_path: Path) -> None:
    # Plugin autoload stays off in the sandbox; what the suite's configuration names
    # (required_plugins, -p, pytest-asyncio's asyncio_mode) loads as under plain pytest.
    workspace = _tree(tmp_path / "workspace", {"calc.py": "def double(n):\n    return 2 * n\n"})
    named = _tree(tmp_path / "named", {**PLUGGED, "pyproject.toml": PLUGINS_NAMED})
    verdict = run_hidden_tests(workspace, named, timeout=120)
    assert verdict.passed, verdict.reason
    assert dict(verdict.outcomes) == {
        "tests/test_plugged.py::test_with_mocker": "passed",
        "tests/test_plugged.py::test_a_coroutine": "passed",
    }
    unnamed = _tree(tmp_path / "unnamed", PLUGGED)
    without = run_hidden_tests(workspace, unnamed, timeout=120)
    assert without.outcomes["tests/test_plugged.py::test_with_mocker"] == "error"
