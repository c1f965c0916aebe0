"""Tests of pytest_ldd._sandbox.suite_config: which of the hidden suite's settings the
sandbox's configuration takes over, read from the file pytest itself would read.
"""

from __future__ import annotations

from pathlib import Path

import iniconfig
import pytest

from pytest_ldd._sandbox.suite_config import (
    Collection,
    collection,
    suite_configuration,
    suite_ini,
    suite_plugins,
    suite_settings,
)


def _write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param(
            {"pytest.ini": "[pytest]\nxfail_strict = true\ntestpaths = tests\nlog_level = INFO\n"},
            {"xfail_strict": "true", "log_level": "INFO"},
            id="pytest.ini",
        ),
        pytest.param(
            {
                "pyproject.toml": "[tool.pytest.ini_options]\n"
                'filterwarnings = ["error", "ignore::ResourceWarning"]\n'
                'addopts = ["-ra", "--strict-markers", "-W", "error::UserWarning"]\n'
            },
            {
                "filterwarnings": "error\nignore::ResourceWarning\nerror::UserWarning",
                "addopts": "--strict-markers",
            },
            id="pyproject.toml, addopts as a list",
        ),
        pytest.param(
            {"tox.ini": "[tox]\nenvlist = py\n[pytest]\naddopts = -x -Werror --strict\n"},
            {"filterwarnings": "error", "addopts": "--strict-markers"},
            id="tox.ini: -x and the like are never taken",
        ),
        pytest.param(
            {"setup.cfg": "[tool:pytest]\nmarkers =\n    slow: slow\n    net\n"},
            {"markers": "slow: slow\nnet"},
            id="setup.cfg",
        ),
        pytest.param(
            {
                "pytest.ini": "[pytest]\nusefixtures = clean\n",
                "pyproject.toml": "[tool.pytest.ini_options]\nxfail_strict = true\n",
            },
            {"usefixtures": "clean"},
            id="pytest.ini before pyproject.toml",
        ),
        pytest.param(
            {
                "pyproject.toml": "[tool.black]\nline-length = 88\n",
                "tox.ini": "[pytest]\nxfail_strict = true\n",
            },
            {"xfail_strict": "true"},
            id="a pyproject.toml without pytest's table is passed over",
        ),
        pytest.param({"pyproject.toml": "[tool.pytest.ini_options\nbroken"}, {}, id="unparsable"),
        pytest.param(
            {
                "pyproject.toml": "[tool.pytest.ini_options]\n"
                'python_files = ["check_*.py"]\nnorecursedirs = ["data"]\n'
                'testpaths = ["tests"]\npython_functions = ["check_"]\n'
            },
            {"python_files": "check_*.py", "norecursedirs": "data"},
            id="python_functions that would not collect test_* names is not taken",
        ),
        pytest.param(
            {
                "setup.cfg": "[tool:pytest]\npython_classes = *Test Test*\n"
                "python_functions = test_ check_*\n"
            },
            {"python_classes": "*Test Test*", "python_functions": "test_ check_*"},
            id="how tests are named is taken where it collects test_* functions",
        ),
        pytest.param(
            {
                "pyproject.toml": "[tool.pytest]\nminversion = '9.0'\nxfail_strict = true\n"
                'filterwarnings = ["error"]\npython_files = ["tests.py", "test_*.py"]\n'
            },
            {
                "xfail_strict": "true",
                "filterwarnings": "error",
                "python_files": "tests.py\ntest_*.py",
            },
            id="pytest 9's [tool.pytest] with native values",
        ),
        pytest.param(
            {
                "pytest.toml": "[pytest]\nxfail_strict = true\n",
                "pytest.ini": "[pytest]\nusefixtures = clean\n",
            },
            {"xfail_strict": "true"},
            id="pytest.toml before pytest.ini",
        ),
        pytest.param(
            {".pytest.toml": "[tool.other]\nx = 1\n", "tox.ini": "[pytest]\nxfail_strict = 1\n"},
            {},
            id="a pytest.toml is the configuration even without a [pytest] table",
        ),
        pytest.param(
            {"pyproject.toml": "[tool.pytest.ini_options]\naddopts = \"-ra -m 'not stress'\"\n"},
            {"addopts": "-m 'not stress'"},
            id="a marker expression that keeps unmarked tests",
        ),
        pytest.param(
            {"pytest.ini": "[pytest]\naddopts = --strict -m slow -mnot\\ slow\n"},
            {"addopts": "--strict-markers -m 'not slow'"},
            id="the last marker expression, as pytest takes it",
        ),
        pytest.param(
            {"pytest.ini": "[pytest]\naddopts = -m smoke\n"},
            {},
            id="one that would deselect the canaries is not taken",
        ),
        pytest.param(
            {"pytest.ini": "[pytest]\naddopts = -m 'not (slow'\n"},
            {},
            id="one pytest cannot read is not taken",
        ),
        pytest.param(
            {"pytest.ini": "[pytest]\naddopts = -W=error -m=not\\ slow\n"},
            {"filterwarnings": "error", "addopts": "-m 'not slow'"},
            id="-W=error as argparse reads it",
        ),
        pytest.param({}, {}, id="no configuration"),
    ],
)
def test_the_settings_taken_over(
    files: dict[str, str], expected: dict[str, str], tmp_path: Path
) -> None:
    assert suite_settings(_write(tmp_path, files)) == expected


def test_pytest_asyncios_settings_only_where_the_plugin_runs(tmp_path: Path) -> None:
    hidden = _write(tmp_path, {"pytest.ini": "[pytest]\nasyncio_mode = auto\n"})
    assert suite_settings(hidden) == {}
    assert suite_settings(hidden, ["pytest_asyncio.plugin"]) == {"asyncio_mode": "auto"}


def test_a_value_never_starts_a_setting_of_its_own(tmp_path: Path) -> None:
    # Lines of a value are indented in the sandbox's file: a value that holds a line
    # such as "addopts = -p evil" stays part of that value.
    hidden = _write(
        tmp_path,
        {"pyproject.toml": '[tool.pytest.ini_options]\nmarkers = ["a\\naddopts = -p evil"]\n'},
    )
    written = tmp_path / "sandbox.ini"
    written.write_text(suite_ini(suite_settings(hidden)), encoding="utf-8")
    parsed = iniconfig.IniConfig(str(written))
    assert dict(parsed["pytest"].items()) == {"markers": "a\naddopts = -p evil"}


@pytest.mark.parametrize(
    ("settings", "path", "is_test", "entered"),
    [
        ({}, "/s/tests/test_a.py", True, True),
        ({}, "/s/tests/a_test.py", True, True),
        ({}, "/s/tests/check_a.py", False, True),
        ({}, "/s/tests/build", False, False),
        ({}, "/s/tests/.hidden", False, False),
        ({"python_files": "check_*.py test.py"}, "/s/tests/check_a.py", True, True),
        ({"python_files": "check_*.py test.py"}, "/s/tests/test.py", True, True),
        ({"python_files": "check_*.py test.py"}, "/s/tests/test_a.py", False, True),
        ({"norecursedirs": "tests/mypy_cases"}, "/s/tests/mypy_cases", False, False),
        ({"norecursedirs": "tests/mypy_cases"}, "/s/other/mypy_cases", False, True),
        ({"norecursedirs": "tests/mypy_cases"}, "/s/tests/build", False, True),
        ({"norecursedirs": "data*"}, "/s/tests/data_v2", False, False),
        ({"python_files": "'unbalanced"}, "/s/tests/test_a.py", True, True),
    ],
)
def test_which_files_are_tests_and_which_folders_are_entered(
    settings: dict[str, str], path: str, is_test: bool, entered: bool
) -> None:
    # As pytest matches: a pattern without a slash against the name, one with a slash
    # against the path's end; a setting replaces pytest's default, never adds to it.
    found = collection(settings)
    assert found.is_test_file(Path(path)) is is_test
    assert found.enters(Path(path)) is entered


def test_a_folder_with_a_virtual_environment_is_never_entered(tmp_path: Path) -> None:
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    assert not Collection().enters(tmp_path / "env")
    assert Collection().enters(tmp_path)


@pytest.mark.parametrize(
    ("settings", "name", "is_class", "is_function"),
    [
        ({}, "TestParse", True, False),
        ({}, "ParseTest", False, False),
        ({}, "test_parse", False, True),
        ({}, "testparse", False, True),
        ({"python_classes": "*Test Test*"}, "ParseTest", True, False),
        ({"python_classes": "*Test Test*"}, "TestParse", True, False),
        ({"python_classes": "Check"}, "TestParse", False, False),
        ({"python_functions": "test_ check_*"}, "check_parse", False, True),
        ({"python_functions": "test_ check_*"}, "testparse", False, False),
        ({"python_functions": "check_"}, "test_parse", False, True),
        ({"python_functions": "check_"}, "check_parse", False, False),
    ],
)
def test_which_classes_and_functions_are_tests(
    settings: dict[str, str], name: str, is_class: bool, is_function: bool
) -> None:
    # A prefix, or a glob where the pattern has one, as pytest matches; a
    # python_functions that leaves test_* functions out keeps pytest's default.
    found = collection(settings)
    assert found.is_test_class(name) is is_class
    assert found.is_test_function(name) is is_function


@pytest.mark.parametrize(
    ("addopts", "marks", "selected"),
    [
        ("-m 'not stress'", {"stress"}, False),
        ("-m 'not stress'", {"slow"}, True),
        ("-m 'not stress'", set(), True),
        ("--strict-markers -m 'not (slow or stress)'", {"slow", "parametrize"}, False),
        ("-ra", {"stress"}, True),
    ],
)
def test_a_marker_expression_selects_as_pytest_reads_it(
    addopts: str, marks: set[str], selected: bool
) -> None:
    assert collection({"addopts": addopts}).selects(frozenset(marks)) is selected


def test_the_plugins_a_suite_names_are_loaded_where_installed(tmp_path: Path) -> None:
    hidden = _write(
        tmp_path,
        {
            "pyproject.toml": "[tool.pytest.ini_options]\n"
            'required_plugins = ["pytest-mock>=3", "not-installed-anywhere"]\n'
            'asyncio_mode = "auto"\n'
            'addopts = "-p no:warnings -p xdist.plugin -pnot-a-module"\n'
        },
    )
    assert suite_plugins(hidden) == ("xdist.plugin", "pytest_mock", "pytest_asyncio.plugin")
    # pytest-asyncio's settings are taken where its plugin runs.
    assert suite_settings(hidden, suite_plugins(hidden)) == {"asyncio_mode": "auto"}
    (tmp_path / "none").mkdir()
    assert suite_plugins(_write(tmp_path / "none", {})) == ()


def test_pytest_asyncios_mode_on_the_command_line_loads_it(tmp_path: Path) -> None:
    # tqdm: addopts = "... --asyncio-mode=strict"
    hidden = _write(tmp_path, {"pytest.ini": "[pytest]\naddopts = -v --asyncio-mode=auto\n"})
    assert suite_plugins(hidden) == ("pytest_asyncio.plugin",)
    assert suite_settings(hidden, suite_plugins(hidden)) == {"asyncio_mode": "auto"}
    assert suite_settings(hidden) == {}


def test_one_reading_gives_the_settings_and_the_callers_plugins_then_the_suites(
    tmp_path: Path,
) -> None:
    hidden = _write(
        tmp_path,
        {"pytest.ini": "[pytest]\naddopts = -p xdist.plugin\nasyncio_mode = auto\n"},
    )
    settings, plugins = suite_configuration(hidden, ["pytest_asyncio.plugin", "xdist.plugin"])
    assert plugins == ("pytest_asyncio.plugin", "xdist.plugin")
    assert settings == {"asyncio_mode": "auto"}
    assert suite_configuration(hidden) == (settings, ("xdist.plugin", "pytest_asyncio.plugin"))
