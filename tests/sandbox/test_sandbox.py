"""Tests of pytest_ldd.sandbox: the verdict, the options, staging, the channel, the judge,
and real runs that look at the child from the inside (its environment, sys.path, flags).
Runs use the default, confined in-process isolation (those that inspect the in-process
child also name it); tests/sandbox/test_sandbox_process.py covers what is specific to
``isolation="process"``, tests/sandbox/test_sandbox_confinement.py the kernel confinement.

The attacks themselves are in tests/redteam/.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import hmac
import json
import os
import random
import re
import stat
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ldd import sandbox as sandbox_module
from pytest_ldd._sandbox import leftovers, runner
from pytest_ldd._sandbox.channel import ChannelLog, read_channel
from pytest_ldd._sandbox.judge import judge
from pytest_ldd._sandbox.process import ChildRun
from pytest_ldd._sandbox.staging import (
    HiddenSuite,
    child_environment,
    copy_workspace,
    plant_canaries,
    stage_hidden,
)
from pytest_ldd.agents import Episode
from pytest_ldd.errors import LddError, LddWarning, SandboxError
from pytest_ldd.sandbox import HiddenTests, Limits, Verdict, hidden_tests, run_hidden_tests

CALC = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
HIDDEN = (
    "import pytest\n\nfrom calc import add, mul\n\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n\n\n"
    "@pytest.mark.parametrize('a, b, c', [(2, 3, 6), (4, 5, 20)])\n"
    "def test_mul(a, b, c):\n    assert mul(a, b) == c\n\n\n"
    "class TestZero:\n    def test_zero(self):\n        assert mul(0, 5) == 0\n"
)


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def task(tmp_path: Path) -> SimpleNamespace:
    """A correct workspace, a wrong one, and hidden tests for them."""
    return SimpleNamespace(
        good=_write(tmp_path / "good", {"calc.py": CALC}),
        bad=_write(tmp_path / "bad", {"calc.py": CALC.replace("a * b", "a + b")}),
        hidden=_write(tmp_path / "hidden", {"test_calc.py": HIDDEN}),
        root=tmp_path,
    )


# -- real runs ----------------------------------------------------------------------------


def test_a_correct_workspace_passes_with_every_test_named(task: SimpleNamespace) -> None:
    verdict = run_hidden_tests(task.good, task.hidden)
    assert verdict.passed
    assert not verdict.tampered
    assert dict(verdict.outcomes) == {
        "test_calc.py::TestZero::test_zero": "passed",
        "test_calc.py::test_add": "passed",
        "test_calc.py::test_mul[2-3-6]": "passed",
        "test_calc.py::test_mul[4-5-20]": "passed",
    }
    assert verdict.reason == "all 4 hidden tests passed"
    assert 0 < verdict.duration_s < 60
    assert "passed" in verdict.output_tail


def test_a_wrong_workspace_fails_naming_the_failing_tests(task: SimpleNamespace) -> None:
    verdict = run_hidden_tests(task.bad, task.hidden)
    assert not verdict.passed
    assert not verdict.tampered
    assert verdict.not_passed == (
        "test_calc.py::TestZero::test_zero",
        "test_calc.py::test_mul[2-3-6]",
        "test_calc.py::test_mul[4-5-20]",
    )
    assert verdict.reason.startswith("3 of 4 hidden tests did not pass: ")
    assert "test_calc.py::test_mul[2-3-6] (failed)" in verdict.reason


def test_a_relative_tests_path_is_taken_from_the_current_folder(
    task: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(task.root)
    assert run_hidden_tests("good", "hidden").passed


def test_a_single_hidden_test_file_works(task: SimpleNamespace) -> None:
    verdict = run_hidden_tests(task.good, task.hidden / "test_calc.py")
    assert verdict.passed
    assert "test_calc.py::test_add" in verdict.outcomes


def test_hidden_tests_in_subfolders_keep_their_relative_ids(task: SimpleNamespace) -> None:
    hidden = _write(
        task.root / "nested",
        {
            "unit/test_add.py": (
                "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
            ),
            "test_top.py": "def test_top():\n    assert True\n",
        },
    )
    verdict = run_hidden_tests(task.good, hidden)
    assert verdict.passed
    assert set(verdict.outcomes) == {"unit/test_add.py::test_add", "test_top.py::test_top"}


def test_a_skipped_hidden_test_fails_the_verdict(task: SimpleNamespace) -> None:
    hidden = _write(
        task.root / "skips",
        {
            "test_s.py": "import pytest\n\n\n@pytest.mark.skip(reason='later')\n"
            "def test_later():\n    pass\n\n\ndef test_now():\n    pass\n"
        },
    )
    verdict = run_hidden_tests(task.good, hidden)
    assert not verdict.passed
    assert not verdict.tampered
    assert verdict.outcomes["test_s.py::test_later"] == "skipped"
    assert "test_s.py::test_later (skipped)" in verdict.reason


def test_a_module_skipped_at_collection_fails_without_claiming_tampering(
    task: SimpleNamespace,
) -> None:
    hidden = _write(
        task.root / "modskip",
        {
            "test_ok.py": "def test_ok():\n    pass\n",
            "test_needs.py": "import pytest\n\npytest.importorskip('no_such_module_here')\n\n\n"
            "def test_needs():\n    pass\n",
        },
    )
    verdict = run_hidden_tests(task.good, hidden)
    assert not verdict.passed
    assert not verdict.tampered
    assert not verdict.inconclusive
    # As under plain pytest, a file skipped at collection reports no test of its own.
    assert dict(verdict.outcomes) == {"test_ok.py::test_ok": "passed"}
    assert verdict.reason == (
        "1 hidden tests were skipped with their file at collection: test_needs.py"
    )


def test_an_error_in_teardown_fails_the_verdict(task: SimpleNamespace) -> None:
    hidden = _write(
        task.root / "teardown",
        {
            "test_t.py": "import pytest\n\n\n@pytest.fixture\ndef res():\n    yield 1\n"
            "    raise RuntimeError('cleanup broke')\n\n\n"
            "def test_uses(res):\n    assert res == 1\n"
        },
    )
    verdict = run_hidden_tests(task.good, hidden)
    assert not verdict.passed
    assert verdict.outcomes == {"test_t.py::test_uses": "error"}


def test_a_collection_error_marks_that_files_tests_as_errors(task: SimpleNamespace) -> None:
    hidden = _write(
        task.root / "collect",
        {
            "test_ok.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 1) == 2\n",
            "test_broken.py": "from calc import missing\n\n\ndef test_missing():\n    pass\n",
        },
    )
    verdict = run_hidden_tests(task.good, hidden)
    assert not verdict.passed
    assert not verdict.tampered
    assert dict(verdict.outcomes) == {
        "test_broken.py::test_missing": "error",
        "test_ok.py::test_add": "passed",
    }
    assert "collection error in test_broken.py" in verdict.reason


def test_the_hidden_tests_own_conftest_is_used(task: SimpleNamespace) -> None:
    hidden = _write(
        task.root / "withconf",
        {
            "conftest.py": "import pytest\n\n\n@pytest.fixture\ndef pair():\n    return (2, 3)\n",
            "test_f.py": (
                "from calc import add\n\n\ndef test_pair(pair):\n    assert add(*pair) == 5\n"
            ),
        },
    )
    assert run_hidden_tests(task.good, hidden).passed


def test_plugins_load_trusted_plugins_the_hidden_tests_need(task: SimpleNamespace) -> None:
    hidden = _write(
        task.root / "needs_plugin",
        {"test_p.py": "def test_uses_pytester(pytester):\n    assert pytester.path.is_dir()\n"},
    )
    without = run_hidden_tests(task.good, hidden)
    assert without.outcomes == {"test_p.py::test_uses_pytester": "error"}
    assert run_hidden_tests(task.good, hidden, plugins=["pytester"]).passed


def test_pythonpath_makes_a_src_layout_importable(task: SimpleNamespace) -> None:
    src = _write(task.root / "srclayout", {"src/calc.py": CALC})
    assert not run_hidden_tests(src, task.hidden).passed
    assert run_hidden_tests(src, task.hidden, pythonpath=["src"]).passed


def test_the_child_is_isolated_and_scrubbed(
    task: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(task.root))
    monkeypatch.setenv("PYTEST_ADDOPTS", "-x")
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "")
    monkeypatch.setenv("LD_PRELOAD", "/nonexistent.so")
    monkeypatch.setenv("SECRET_TOKEN", "do-not-leak")
    probe = """
import os
import sys
from pathlib import Path

import calc


def test_environment():
    leaked = sorted(n for n in os.environ if n.startswith(("PYTHON", "PYTEST_"))
                    and n not in ("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_CURRENT_TEST",
                                  "PYTEST_VERSION", "PYTHONPATH"))
    assert leaked == []
    # The caller's PYTHONPATH is gone; the workspace's folder is there for the
    # processes the tests start.
    assert os.environ["PYTHONPATH"] == os.getcwd()
    assert os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] == "1"
    assert "LD_PRELOAD" not in os.environ and "SECRET_TOKEN" not in os.environ
    assert os.environ["GIVEN"] == "yes"


def test_interpreter_flags():
    assert sys.flags.isolated == 1
    assert sys.flags.dont_write_bytecode == 1
    assert sys.flags.no_user_site == 1


def test_paths():
    home, tmp = Path(os.environ["HOME"]), Path(os.environ["TMPDIR"])
    assert home.parent == tmp.parent and home.name == "home"
    assert Path.cwd().name == "good"
    assert Path(calc.__file__).parent == Path.cwd()
    assert "" not in sys.path and os.getcwd() in sys.path
    assert str(Path(__file__).parent) in sys.path


def test_limits():
    import resource

    assert resource.getrlimit(resource.RLIMIT_AS)[0] == 3 * 1024 ** 3
    assert resource.getrlimit(resource.RLIMIT_FSIZE)[0] == 64 * 1024 ** 2
    assert resource.getrlimit(resource.RLIMIT_CPU)[0] == 31
    assert resource.getrlimit(resource.RLIMIT_CORE) == (0, 0)
"""
    hidden = _write(task.root / "probe", {"test_probe.py": probe})
    limits = Limits(memory_bytes=3 * 1024**3, file_bytes=64 * 1024**2)
    verdict = run_hidden_tests(
        task.good, hidden, env={"GIVEN": "yes"}, timeout=30, limits=limits, isolation="inprocess"
    )
    assert verdict.passed, verdict.reason + verdict.output_tail


def test_the_run_uses_a_fresh_copy_and_leaves_nothing_behind(task: SimpleNamespace) -> None:
    hidden = _write(
        task.root / "writer",
        {
            "test_w.py": "import os\nfrom pathlib import Path\n\n\ndef test_write():\n"
            "    Path('calc.py').write_text('broken')\n\n\n"
            # The run may write nothing outside its folder: its folder is shown instead.
            "def test_where():\n    assert os.getcwd() == 'shown'\n"
        },
    )
    verdict = run_hidden_tests(task.good, hidden)
    assert dict(verdict.outcomes) == {
        "test_w.py::test_write": "passed",
        "test_w.py::test_where": "failed",
    }
    assert (task.good / "calc.py").read_text() == CALC
    shown = r"\+ (/\S*/ldd-sandbox-[^/\s]+)/ws/good$"  # the diff pytest shows
    found = re.search(shown, verdict.output_tail, re.M)
    assert found, verdict.output_tail
    sandbox = Path(found.group(1))
    assert sandbox.name.startswith("ldd-sandbox-")
    assert not sandbox.exists()


def test_an_interpreter_wrapper_command_is_accepted(task: SimpleNamespace) -> None:
    env = "/usr/bin/env"
    if not Path(env).exists():  # pragma: no cover - every POSIX system has it
        env = "env"
    assert run_hidden_tests(task.good, task.hidden, python=[env, sys.executable]).passed


def test_workspace_limits_fail_the_verdict_without_running(task: SimpleNamespace) -> None:
    verdict = run_hidden_tests(task.good, task.hidden, limits=Limits(workspace_files=1))
    assert verdict.passed  # one file: within the limit
    _write(task.good, {"extra.py": "x = 1\n"})
    refused = run_hidden_tests(task.good, task.hidden, limits=Limits(workspace_files=1))
    assert not refused.passed
    assert not refused.tampered
    assert refused.reason == "the workspace holds more than 1 files and folders: not copied"
    assert refused.outcomes == {}
    big = run_hidden_tests(task.good, task.hidden, limits=Limits(workspace_bytes=10))
    assert big.reason == "the workspace is larger than 10 bytes: not copied"


def test_a_workspace_that_cannot_be_read_fails_the_verdict(
    task: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The agent controls its files' permissions: an unreadable file is a verdict, not a crash.
    def denied(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", "calc.py")

    monkeypatch.setattr("pytest_ldd._sandbox.staging._copy_file", denied)
    verdict = run_hidden_tests(task.good, task.hidden)
    assert not verdict.passed
    assert not verdict.tampered
    assert verdict.reason == (
        "the workspace cannot be copied: [Errno 13] Permission denied: 'calc.py'"
    )


# -- set-up errors ------------------------------------------------------------------------


def test_missing_paths_are_sandbox_errors(task: SimpleNamespace) -> None:
    with pytest.raises(SandboxError, match="'tests' must be an existing folder"):
        run_hidden_tests(task.good, task.root / "nope")
    with pytest.raises(SandboxError, match="'workspace' must be an existing folder"):
        run_hidden_tests(task.root / "nope", task.hidden)
    with pytest.raises(SandboxError, match="'tests' must be an existing folder"):
        hidden_tests(task.root / "nope")
    assert issubclass(SandboxError, LddError)


def test_hidden_tests_inside_the_workspace_are_refused(task: SimpleNamespace) -> None:
    inside = _write(task.good / "hidden", {"test_x.py": "def test_x():\n    pass\n"})
    with pytest.raises(SandboxError, match="must not lie inside the workspace"):
        run_hidden_tests(task.good, inside)
    with pytest.raises(SandboxError, match="must not lie inside the workspace"):
        run_hidden_tests(inside, task.good)


def test_hidden_tests_without_test_files_or_that_do_not_parse(task: SimpleNamespace) -> None:
    """No test file is the caller's mistake; one that does not parse is pytest's to judge."""
    empty = _write(task.root / "empty", {"helpers.py": "x = 1\n"})
    with pytest.raises(SandboxError, match="must hold test files named test_"):
        run_hidden_tests(task.good, empty)
    # A file that does not parse is pytest's to judge, as under plain pytest: a
    # collection error, unless a conftest.py leaves it out (syntax of a newer Python).
    fine = "def test_a():\n    assert True\n"
    broken = _write(task.root / "broken", {"test_b.py": "def test_b(:\n", "test_a.py": fine})
    verdict = run_hidden_tests(task.good, broken)
    assert not verdict.passed
    assert not verdict.tampered
    assert "collection error in test_b.py" in verdict.reason
    ignored = _write(
        task.root / "ignored",
        {
            "conftest.py": "collect_ignore = ['test_newer.py']\n",
            "test_newer.py": "type Point = tuple[float, float\n",
            "test_a.py": fine,
        },
    )
    verdict = run_hidden_tests(task.good, ignored)
    assert verdict.passed, verdict.reason
    assert dict(verdict.outcomes) == {"test_a.py::test_a": "passed"}


def test_an_interpreter_that_cannot_run_the_runner(task: SimpleNamespace) -> None:
    with pytest.raises(SandboxError, match="cannot start the test interpreter"):
        run_hidden_tests(
            task.good, task.hidden, python=str(task.root / "no-python"), isolation="inprocess"
        )
    with pytest.raises(SandboxError, match="did not start the sandbox runner"):
        run_hidden_tests(
            task.good,
            task.hidden,
            python=["/bin/sh", "-c", "exit 0", "sh"],
            isolation="inprocess",
        )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"timeout": 0}, "'timeout' must be a finite number of seconds > 0 (got 0)"),
        ({"timeout": float("nan")}, "'timeout' must be a finite number"),
        ({"timeout": True}, "'timeout' must be a finite number"),
        ({"env": {"PYTHONPATH": "/x"}}, "'env' must not set 'PYTHONPATH'"),
        ({"env": {"PYTEST_ADDOPTS": "-x"}}, "'env' must not set 'PYTEST_ADDOPTS'"),
        ({"env": {"HOME": "/x"}}, "'env' must not set 'HOME'"),
        ({"env": {"A": 1}}, "'env' value of 'A' must be a string"),
        ({"env": {"A=B": "1"}}, "'env' names must be non-empty strings"),
        ({"pythonpath": ["/abs"]}, "'pythonpath' entries must be relative paths"),
        ({"pythonpath": ["../up"]}, "'pythonpath' entries must be relative paths"),
        ({"pythonpath": [""]}, "'pythonpath' entries must be non-empty strings"),
        ({"plugins": ["no:cacheprovider"]}, "'plugins' must be importable module names"),
        ({"python": []}, "'python' must be an interpreter path or a non-empty sequence"),
        ({"python": 3}, "'python' must be an interpreter path"),
        ({"limits": {"memory_bytes": 1}}, "'limits' must be a Limits or None"),
    ],
)
def test_bad_options_are_named(
    task: SimpleNamespace, options: dict[str, object], message: str
) -> None:
    with pytest.raises(SandboxError, match=re.escape(message)):
        run_hidden_tests(task.good, task.hidden, **options)  # type: ignore[arg-type]
    with pytest.raises(SandboxError, match=re.escape(message)):
        hidden_tests(task.hidden, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "value"),
    [("memory_bytes", 0), ("output_bytes", None), ("tail_bytes", -1), ("processes", True)],
)
def test_limits_are_validated(field: str, value: object) -> None:
    with pytest.raises(SandboxError, match=f"Limits '{field}' must be an int > 0"):
        Limits(**{field: value})  # type: ignore[arg-type]


def test_rlimits_derive_cpu_from_the_timeout_and_skip_nproc_for_root() -> None:
    limits = Limits(memory_bytes=None)
    user = limits.rlimits(7.2, is_root=False, user_processes=40)
    assert user["RLIMIT_CPU"] == (9, 10)
    assert user["RLIMIT_NPROC"] == (296, 296)
    assert "RLIMIT_AS" not in user
    root = limits.rlimits(7.2, is_root=True, user_processes=40)
    assert "RLIMIT_NPROC" not in root
    assert Limits(cpu_seconds=3).rlimits(60, is_root=True, user_processes=None)["RLIMIT_CPU"] == (
        3,
        4,
    )


# -- Verdict ------------------------------------------------------------------------------


def test_verdict_is_frozen_and_keeps_an_immutable_copy() -> None:
    outcomes = {"t.py::a": "failed"}
    verdict = Verdict(
        False, outcomes, False, False, "none", "1 of 1 hidden tests did not pass", 0.5
    )
    outcomes["t.py::b"] = "passed"
    assert dict(verdict.outcomes) == {"t.py::a": "failed"}
    with pytest.raises(TypeError):
        verdict.outcomes["t.py::a"] = "passed"  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.passed = True  # type: ignore[misc]
    assert verdict.not_passed == ("t.py::a",)
    assert "output_tail" not in repr(verdict)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((True, {"a": "passed"}, True, False, "none", "", 0.0), "'passed' must be False when"),
        ((True, {"a": "failed"}, False, False, "none", "", 0.0), "'passed' needs every outcome"),
        ((True, {}, False, False, "none", "", 0.0), "'passed' needs every outcome 'passed'"),
        ((False, {"a": "weird"}, False, False, "none", "", 0.0), "'outcomes' must map test ids"),
        ((False, {}, False, False, "none", "", -1.0), "'duration_s' must be a finite number"),
        ((1, {}, False, False, "none", "", 0.0), "'passed' must be a bool"),
        ((False, {}, False, 1, "none", "", 0.0), "'inconclusive' must be a bool"),
        ((True, {"a": "passed"}, False, True, "none", "", 0.0), "'inconclusive' must be False"),
        ((False, {}, True, True, "none", "", 0.0), "'inconclusive' must be False when"),
        ((False, {}, False, False, "seccomp", "", 0.0), "'confinement' must be one of"),
    ],
)
def test_verdict_rejects_impossible_values(args: tuple[object, ...], message: str) -> None:
    with pytest.raises(SandboxError, match=message):
        Verdict(*args)  # type: ignore[arg-type]


# -- the checker --------------------------------------------------------------------------


def test_hidden_tests_grades_an_episode_workspace(task: SimpleNamespace) -> None:
    check = hidden_tests(task.hidden, timeout=30)
    assert check(Episode("calc", workspace=task.good), None) is True
    assert check(SimpleNamespace(workspace=task.bad), None) is False
    verdict = check.verdict_for(Episode("calc", workspace=task.bad))
    assert "test_calc.py::test_mul[2-3-6] (failed)" in verdict.reason
    with pytest.raises(SandboxError, match="needs the episode's 'workspace'"):
        check(Episode("calc"), None)


def test_hidden_tests_is_frozen_with_a_readable_repr(
    task: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(task.root)
    check = hidden_tests("hidden", timeout=30, env={"A": "1"})
    assert isinstance(check, HiddenTests)
    assert check.tests == task.hidden
    assert repr(check) == f"hidden_tests({str(task.hidden)!r}, timeout=30.0, env={{'A': '1'}})"
    assert repr(hidden_tests("hidden")) == f"hidden_tests({str(task.hidden)!r})"
    with pytest.raises(dataclasses.FrozenInstanceError):
        check.tests = task.root  # type: ignore[misc]
    assert check == hidden_tests(task.hidden, timeout=30, env={"A": "1"})


def test_hidden_tests_from_a_configuration_string(task: SimpleNamespace) -> None:
    check = HiddenTests.from_spec("hidden_tests:hidden", base=task.root)
    assert check.tests == task.hidden
    assert (
        HiddenTests.from_spec(f"hidden_tests:{task.hidden}", base="/elsewhere").tests
        == task.hidden
    )
    for bad in ("hidden_tests:", "hidden:x", ""):
        with pytest.raises(SandboxError, match="must look like 'hidden_tests:PATH'"):
            HiddenTests.from_spec(bad)


# -- staging ------------------------------------------------------------------------------


def test_the_copy_drops_escaping_links_specials_bytecode_and_setid_bits(tmp_path: Path) -> None:
    outside = _write(tmp_path / "outside", {"secret.txt": "s"})
    ws = _write(tmp_path / "ws", {"pkg/mod.py": "x = 1\n", "pkg/__pycache__/mod.cpython.pyc": "x"})
    (ws / "stale.pyc").write_bytes(b"\0")
    (ws / "inside_link").symlink_to("pkg/mod.py")
    (ws / "abs_inside").symlink_to(ws / "pkg")
    (ws / "escape").symlink_to(outside)
    (ws / "dangling").symlink_to(tmp_path / "missing")
    os.mkfifo(ws / "fifo")
    tool = ws / "tool.sh"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o4755)
    copy = tmp_path / "copy"
    assert copy_workspace(ws, copy, max_bytes=None, max_files=None) is None
    names = {p.relative_to(copy).as_posix() for p in copy.rglob("*")}
    assert names == {"pkg", "pkg/mod.py", "inside_link", "abs_inside", "tool.sh"}
    assert (copy / "inside_link").resolve() == (copy / "pkg" / "mod.py").resolve()
    assert (copy / "abs_inside").resolve() == (copy / "pkg").resolve()
    assert stat.S_IMODE((copy / "tool.sh").stat().st_mode) == 0o755


def test_staging_plants_two_canaries_per_file_and_finds_the_expected_ids(tmp_path: Path) -> None:
    src = _write(
        tmp_path / "h",
        {
            "test_a.py": HIDDEN,
            "sub/test_b.py": "def test_b():\n    pass\n",
            "sub/helpers.py": "def test_not_collected():\n    pass\n",
            "test_off.py": "__test__ = False\n\n\ndef test_off():\n    pass\n",
            ".hidden/test_dot.py": "def test_dot():\n    pass\n",
            "__pycache__/test_a.cpython-311.pyc": "junk",
        },
    )
    suite = stage_hidden(src, tmp_path / "staged", random.Random(1))
    assert [p.relative_to(suite.root).as_posix() for p in suite.files] == [
        "test_a.py",
        "test_off.py",
        "sub/test_b.py",
    ]
    assert suite.expected == (
        "test_a.py::test_add",
        "test_a.py::test_mul",
        "test_a.py::TestZero::test_zero",
        "sub/test_b.py::test_b",
    )
    assert {c.split("::")[0] for c in suite.must_fail} == {"test_a.py", "sub/test_b.py"}
    assert {c.split("::")[0] for c in suite.must_pass} == {"test_a.py", "sub/test_b.py"}
    assert not (suite.root / "__pycache__").exists()
    assert (
        suite.root / "test_off.py"
    ).read_text() == "__test__ = False\n\n\ndef test_off():\n    pass\n"


def test_expected_ids_skip_what_pytest_would_not_collect(tmp_path: Path) -> None:
    source = """
import pytest

@pytest.fixture
def test_data():
    return 1

class TestWithInit:
    def __init__(self):
        pass
    def test_never(self):
        pass

class TestOff:
    __test__ = False
    def test_off(self):
        pass

class TestOuter:
    class TestInner:
        def test_deep(self):
            pass
    @classmethod
    def test_cls(cls):
        pass
    def helper(self):
        pass

class Helper:
    def test_not_a_test_class(self):
        pass

if True:
    def test_conditional():
        pass

async def test_async():
    pass

def test_twice():
    pass

def test_twice():
    pass
"""
    src = _write(tmp_path / "h", {"test_x.py": source})
    suite = stage_hidden(src, tmp_path / "staged", random.Random(2))
    assert suite.expected == (
        "test_x.py::TestOuter::TestInner::test_deep",
        "test_x.py::test_async",
        "test_x.py::test_twice",
    )


_NAMES = st.lists(
    st.from_regex(r"test_[a-z]{1,8}(_[a-z]{1,6})?", fullmatch=True), min_size=0, max_size=6
)


@settings(max_examples=200, deadline=None)
@given(names=_NAMES, classes=st.integers(0, 2), seed=st.integers(0, 2**32), crlf=st.booleans())
def test_canaries_are_fresh_top_level_tests_and_keep_the_file_intact(
    names: list[str], classes: int, seed: int, crlf: bool
) -> None:
    parts = ['"""Doc."""', "import os"]
    parts += [f"@decorator\ndef {name}(x=(1,\n        2)):\n    assert x" for name in names]
    parts += [f"class TestC{i}:\n    def test_m(self):\n        pass" for i in range(classes)]
    text = "\n\n\n".join(parts) + ("" if seed % 2 else "\n")
    source = text.replace("\n", "\r\n").encode() if crlf else text.encode()
    tree = ast.parse(source)
    planted, fail_name, pass_name = plant_canaries(source, tree, names, random.Random(seed))
    new = ast.parse(planted)
    top = [node.name for node in new.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))]
    assert fail_name != pass_name
    assert fail_name.startswith("test_")
    assert pass_name.startswith("test_")
    for name in (fail_name, pass_name):
        assert re.search(rb"\b" + name.encode() + rb"\b", source) is None
    assert sorted(top) == sorted(
        [*names, *(f"TestC{i}" for i in range(classes)), fail_name, pass_name]
    )
    # The original definitions keep their order around the canaries.
    assert [n for n in top if n not in (fail_name, pass_name)] == [
        node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))
    ]
    namespace: dict[str, object] = {"decorator": lambda f: f}
    exec(compile(new, "<canary>", "exec"), namespace)
    namespace[pass_name]()  # type: ignore[operator]
    with pytest.raises(AssertionError):
        namespace[fail_name]()  # type: ignore[operator]


def test_the_child_environment_keeps_only_locale_and_path(tmp_path: Path) -> None:
    calling = {
        "PATH": "/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "PYTHONPATH": "/evil",
        "PYTEST_PLUGINS": "evil",
        "HOME": "/root",
        "LD_PRELOAD": "x.so",
    }
    env = child_environment(calling, {"EXTRA": "1"}, home=tmp_path / "h", tmp=tmp_path / "t")
    assert env == {
        "PATH": "/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "EXTRA": "1",
        "HOME": str(tmp_path / "h"),
        "TMPDIR": str(tmp_path / "t"),
        "TEMP": str(tmp_path / "t"),
        "TMP": str(tmp_path / "t"),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }


# -- the channel --------------------------------------------------------------------------


class _Pipe:
    """Captures what runner.Channel writes, through a real pipe."""

    def __init__(self, key: bytes) -> None:
        self.read_fd, self.write_fd = os.pipe()
        self.channel = runner.Channel(self.write_fd, key)

    def data(self) -> bytes:
        os.close(self.write_fd)
        with os.fdopen(self.read_fd, "rb") as stream:
            return stream.read()


def _records(key: bytes, *records: dict[str, object]) -> bytes:
    pipe = _Pipe(key)
    for record in records:
        fields = dict(record)
        pipe.channel.send(str(fields.pop("kind")), **fields)
    return pipe.data()


def test_the_runner_channel_round_trips_through_the_parser() -> None:
    key = os.urandom(32)
    data = _records(
        key,
        {"kind": "hello"},
        {"kind": "collected", "ids": ["t.py::a", "t.py::b"]},
        {"kind": "collect_error", "id": "u.py", "detail": "ImportError"},
        {"kind": "test", "id": "t.py::a", "outcome": "passed"},
        {"kind": "test", "id": "t.py::b", "outcome": "failed"},
        {"kind": "finish", "exit": 1},
    )
    log = read_channel(data, key)
    assert log.problems == []
    assert log.hello
    assert log.collected == {"t.py::a", "t.py::b"}
    assert log.collect_errors == {"u.py": "ImportError"}
    assert log.tests == {"t.py::a": "passed", "t.py::b": "failed"}
    assert log.finish == 1


@pytest.mark.parametrize(
    ("seen", "kept"),
    [
        ([24, "3", "1"], (24, "3", "1")),
        ([7, 2, None], (7, 2, None)),
        ([7, 2.5, True], (7, 2.5, True)),
        ([0, "3", "1"], None),  # no such line
        ([24, "3"], None),
        ([24, "3", "1", "x"], None),
        (["24", "3", "1"], None),
        ([24, ["3"], "1"], None),
        ([24, {"a": 1}, "1"], None),
        ([24, "x" * 201, "1"], None),
        ("24 3 1", None),
    ],
)
def test_a_failed_tests_last_unequal_values_are_kept_only_as_the_runner_sends_them(
    seen: object, kept: object
) -> None:
    """Plain values, bounded; anything else is no evidence (never an error)."""
    key = os.urandom(32)
    data = _records(
        key,
        {"kind": "hello"},
        {"kind": "test", "id": "t.py::a", "outcome": "failed", "line": 24, "seen": seen},
        {"kind": "test", "id": "t.py::b", "outcome": "passed", "seen": [24, "3", "1"]},
        {"kind": "finish", "exit": 1},
    )
    log = read_channel(data, key)
    assert log.problems == []
    assert log.tests == {"t.py::a": "failed", "t.py::b": "passed"}
    assert log.seen == ({} if kept is None else {"t.py::a": kept})


def test_forged_reordered_late_and_duplicate_records_are_problems() -> None:
    key = os.urandom(32)
    good = _records(
        key,
        {"kind": "hello"},
        {"kind": "test", "id": "t.py::a", "outcome": "failed"},
        {"kind": "test", "id": "t.py::a", "outcome": "passed"},
        {"kind": "finish", "exit": 1},
        {"kind": "test", "id": "t.py::z", "outcome": "passed"},
    )
    forged = b"0" * 64 + b' {"seq": 1, "kind": "test", "id": "t.py::a", "outcome": "passed"}\n'
    log = read_channel(forged + good + b"torn half-line", key)
    assert log.problems[0] == "1 report record(s) failed authentication: forged results suspected"
    assert "1 report record(s) arrived after pytest finished" in log.problems
    assert log.tests == {"t.py::a": "failed"}
    assert log.duplicates == ["t.py::a"]
    swapped = b"\n".join(reversed(good.split(b"\n")[:2])) + b"\n"
    assert any("out of sequence" in p for p in read_channel(swapped, key).problems)
    other_key = read_channel(good, os.urandom(32))
    assert other_key.tests == {}
    assert other_key.problems[0].startswith("5 report record(s) failed authentication")


def test_unknown_kinds_and_outcomes_are_problems() -> None:
    key = os.urandom(32)

    def signed(payload: dict[str, object]) -> bytes:
        body = json.dumps(payload).encode()
        return hmac.new(key, body, hashlib.sha256).hexdigest().encode() + b" " + body + b"\n"

    data = (
        signed({"seq": 0, "kind": "boast"})
        + signed({"seq": 1, "kind": "test", "id": "t.py::a", "outcome": "great"})
        + signed({"seq": 2, "kind": "test"})
    )
    log = read_channel(data, key)
    assert log.problems == [
        "a report record had the unknown kind 'boast'",
        "a report record had the unknown outcome 'great'",
        "a 'test' report record was malformed",
    ]


# -- the judge ----------------------------------------------------------------------------

_SUITE = HiddenSuite(
    root=Path("/nowhere"),
    files=(Path("/nowhere/test_a.py"),),
    expected=("test_a.py::test_x", "test_a.py::test_y"),
    must_fail=frozenset({"test_a.py::test_edge"}),
    must_pass=frozenset({"test_a.py::test_round"}),
)
_CLEAN_TESTS = {
    "test_a.py::test_x": "passed",
    "test_a.py::test_y[1]": "passed",
    "test_a.py::test_y[2]": "passed",
    "test_a.py::test_edge": "failed",
    "test_a.py::test_round": "passed",
}


def _judged(
    tests: dict[str, str] | None = None,
    *,
    returncode: int = 1,
    finish: int | None = 1,
    modified: tuple[str, ...] = (),
    **run: bool,
) -> tuple[bool, bool, str, dict[str, str]]:
    tests = dict(_CLEAN_TESTS if tests is None else tests)
    collected = set(_CLEAN_TESTS) | set(tests)
    log = ChannelLog(hello=True, collected=collected, tests=tests, finish=finish)
    child = ChildRun(
        returncode=returncode,
        timed_out=run.get("timed_out", False),
        output_capped=run.get("output_capped", False),
        channel_capped=run.get("channel_capped", False),
        channel=b"",
        output_tail="",
        wall_s=0.1,
    )
    result = judge(
        suite=_SUITE, log=log, run=child, modified=modified, timeout=60.0, output_bytes=100
    )
    return result.passed, result.tampered, result.reason, result.outcomes


def test_a_clean_run_passes_and_hides_the_canaries() -> None:
    passed, tampered, reason, outcomes = _judged()
    assert (passed, tampered) == (True, False)
    assert reason == "all 3 hidden tests passed"
    assert set(outcomes) == {"test_a.py::test_x", "test_a.py::test_y[1]", "test_a.py::test_y[2]"}


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (
            {"tests": {**_CLEAN_TESTS, "test_a.py::test_edge": "passed"}},
            "canary test reported passed: outcome rewriting suspected",
        ),
        ({"returncode": 0, "finish": None}, "exit status forged"),
        ({"returncode": 0, "finish": 0}, "exit status forged"),
        (
            {"returncode": 2, "finish": 1},
            "exit code 2 disagrees with the status pytest reported (1)",
        ),
        (
            {"tests": {k: v for k, v in _CLEAN_TESTS.items() if k != "test_a.py::test_round"}},
            "canary test not reported although pytest finished",
        ),
        (
            {"modified": ("hidden/test_a.py",)},
            "files of the sandbox were modified during the run: hidden/test_a.py",
        ),
        ({"channel_capped": True, "returncode": -9}, "the report channel was flooded"),
    ],
)
def test_evidence_of_manipulation_sets_tampered(change: dict[str, object], fragment: str) -> None:
    passed, tampered, reason, _ = _judged(**change)  # type: ignore[arg-type]
    assert (passed, tampered) == (False, True)
    assert fragment in reason


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"timed_out": True, "returncode": -9, "finish": None}, "timed out after 60 s"),
        ({"output_capped": True, "returncode": -9, "finish": None}, "output exceeded 100 bytes"),
        ({"returncode": -11, "finish": None}, "the test process was killed by SIGSEGV"),
        (
            {"returncode": 1, "finish": None},
            "the test run ended before pytest finished (exit code 1)",
        ),
        ({"returncode": 3, "finish": 3}, "pytest exited with code 3 (internal error)"),
        (
            {"tests": {k: v for k, v in _CLEAN_TESTS.items() if k != "test_a.py::test_x"}},
            "1 of 3 hidden tests not reported: test_a.py::test_x",
        ),
        (
            {"tests": {**_CLEAN_TESTS, "test_a.py::test_x": "error"}},
            "1 of 3 hidden tests did not pass: test_a.py::test_x (error)",
        ),
        (
            {"tests": {**_CLEAN_TESTS, "test_a.py::test_round": "failed"}},
            "a canary test that must pass reported failed",
        ),
        (
            {"tests": {**_CLEAN_TESTS, "test_a.py::test_edge": "error"}},
            "a canary test that must fail reported error",
        ),
    ],
)
def test_doubt_fails_without_claiming_tampering(change: dict[str, object], fragment: str) -> None:
    passed, tampered, reason, _ = _judged(**change)  # type: ignore[arg-type]
    assert (passed, tampered) == (False, False)
    assert fragment in reason


def test_results_for_uncollected_tests_and_duplicates_are_tampering() -> None:
    key = os.urandom(32)
    data = _records(
        key,
        {"kind": "hello"},
        {"kind": "collected", "ids": sorted(_CLEAN_TESTS)},
        *({"kind": "test", "id": i, "outcome": o} for i, o in _CLEAN_TESTS.items()),
        {"kind": "test", "id": "test_a.py::test_x", "outcome": "passed"},
        {"kind": "test", "id": "test_a.py::test_ghost", "outcome": "passed"},
        {"kind": "finish", "exit": 1},
    )
    log = read_channel(data, key)
    child = ChildRun(1, False, False, False, b"", "", 0.1)
    result = judge(suite=_SUITE, log=log, run=child, modified=(), timeout=60, output_bytes=100)
    assert result.tampered
    assert not result.passed
    assert "tests reported more than once: test_a.py::test_x" in result.reason
    assert "results reported for tests never collected: test_a.py::test_ghost" in result.reason


# -- bounded records ----------------------------------------------------------------------


def _signed(key: bytes, payload: bytes) -> bytes:
    return hmac.new(key, payload, hashlib.sha256).hexdigest().encode() + b" " + payload + b"\n"


def test_deep_and_huge_signed_records_are_refused_before_parsing() -> None:
    key = os.urandom(32)
    deep = b'{"seq":1,"kind":"test","x":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    huge = b'{"seq":1,"kind":"collected","ids":["' + b"x" * (2 * 1024 * 1024) + b'"]}'
    strings = b'{"seq":1,"kind":"collected","ids":["[[[[[[[[[[[[{{{{{{{{{{{"]}'
    for payload, problem in (
        (deep, "larger or deeper"),
        (huge, "larger or deeper"),
        (b'{"seq":1,"kind":"finish","exit":1e999}', "'finish' report record was malformed"),
        (b'{"seq":"1","kind":"hello"}', "malformed"),
    ):
        data = _records(key, {"kind": "hello"}) + _signed(key, payload)
        log = read_channel(data, key)
        assert any(problem in p for p in log.problems), log.problems
    log = read_channel(_records(key, {"kind": "hello"}) + _signed(key, strings), key)
    assert log.problems == []  # brackets inside strings are not nesting
    assert log.collected == {"[[[[[[[[[[[[{{{{{{{{{{{"}


def test_a_signed_fatal_record_after_hello_is_tampering_not_a_setup_error(
    task: SimpleNamespace,
) -> None:
    key = os.urandom(32)
    log = read_channel(_records(key, {"kind": "hello"}, {"kind": "fatal", "detail": "x"}), key)
    assert log.fatal is None
    assert any("'fatal' report record arrived after pytest had started" in p for p in log.problems)
    first = read_channel(_records(key, {"kind": "fatal", "detail": "no pytest"}), key)
    assert first.fatal == "no pytest"
    assert first.problems == []


# -- what the run leaves behind ---------------------------------------------------------------


def test_the_staged_files_check_finds_changes_and_new_entries_without_following_links(
    tmp_path: Path,
) -> None:
    root = _write(tmp_path / "run", {"suite/h/test_a.py": "x = 1\n", "runner/runner.py": "r\n"})
    staged = leftovers.snapshot(root, ("suite", "runner"))
    assert staged.entries == 5
    clean = leftovers.compare(root, staged, deadline=time.monotonic() + 10, max_entries=100)
    assert (clean.changed, clean.incomplete) == ([], None)
    (root / "suite" / "h" / "__pycache__").mkdir()
    os.mkfifo(root / "runner" / "trap")
    (root / "suite" / "h" / "test_a.py").unlink()
    (root / "suite" / "h" / "test_a.py").symlink_to("/dev/zero")
    found = leftovers.compare(root, staged, deadline=time.monotonic() + 10, max_entries=100)
    assert sorted(found.changed) == ["runner/trap", "suite/h/__pycache__", "suite/h/test_a.py"]
    bounded = leftovers.compare(root, staged, deadline=time.monotonic() + 10, max_entries=2)
    assert bounded.incomplete is not None
    assert "within the bound" in bounded.incomplete


def test_removal_is_iterative_and_never_changes_what_links_point_to(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("mine\n")
    outside.chmod(0o640)
    outside_dir = tmp_path / "outside_dir"
    outside_dir.mkdir()
    outside_dir.chmod(0o750)
    root = tmp_path / "run"
    fd = os.open(root.parent, os.O_RDONLY)
    name = "run"
    for _ in range(1500):  # deeper than any recursion limit, with long names
        os.mkdir(name, dir_fd=fd)
        nxt = os.open(name, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd, name = nxt, "n" * 200
    os.close(fd)
    (root / "locked").mkdir()
    (root / "locked" / "link").symlink_to(outside)
    (root / "locked" / "dir_link").symlink_to(outside_dir)
    os.mkfifo(root / "locked" / "fifo")
    (root / "locked").chmod(0)
    (root / "top_link").symlink_to(outside)
    assert leftovers.remove_tree(root) == []
    assert not root.exists()
    assert stat.S_IMODE(outside.stat().st_mode) == 0o640
    assert stat.S_IMODE(outside_dir.stat().st_mode) == 0o750
    assert outside.read_text() == "mine\n"
    assert leftovers.remove_tree(root) == []  # gone already: nothing to do


def test_what_cannot_be_removed_is_a_warning_naming_it(
    task: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    roots: list[Path] = []

    def stuck(root: Path) -> list[str]:
        roots.append(root)
        return ["ws/stuck"]

    monkeypatch.setattr(sandbox_module, "remove_tree", stuck)
    try:
        with pytest.warns(LddWarning, match=r"could not be removed whole: .*ws/stuck"):
            assert run_hidden_tests(task.good, task.hidden).passed
    finally:
        # The run's real folder, which the stand-in above left in place.
        for root in roots:
            assert leftovers.remove_tree(root) == []
    assert roots


def test_a_grader_failure_after_the_run_is_a_failed_verdict(
    task: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise MemoryError

    monkeypatch.setattr(sandbox_module, "compare", broken)
    verdict = run_hidden_tests(task.good, task.hidden)
    assert not verdict.passed
    assert verdict.reason == "the run could not be graded: MemoryError: "


def test_links_are_remade_only_to_what_passed_the_filters(tmp_path: Path) -> None:
    ws = _write(tmp_path / "ws", {"pkg/__init__.py": "", "store/blob.bin": "pyc", "a.py": ""})
    (ws / "store" / "mod.cpython-311.pyc").symlink_to("blob.bin")
    (ws / "pkg" / "__pycache__").symlink_to("../store")
    (ws / "fast.pyc").symlink_to("store/blob.bin")
    os.mkfifo(ws / "fifo")
    (ws / "to_fifo").symlink_to("fifo")
    (ws / "to_a").symlink_to("a.py")
    (ws / "cache").mkdir()
    (ws / "cache" / "x.pyc").write_bytes(b"\0")
    (ws / "to_pyc").symlink_to("cache/x.pyc")
    copy = tmp_path / "copy"
    assert copy_workspace(ws, copy, max_bytes=None, max_files=None) is None
    names = {p.relative_to(copy).as_posix() for p in copy.rglob("*")}
    assert names == {"pkg", "pkg/__init__.py", "store", "store/blob.bin", "a.py", "cache", "to_a"}


def test_a_twin_that_passes_next_to_a_failing_original_is_a_wrong_value_not_tampering() -> None:
    suite = dataclasses.replace(
        _SUITE,
        twins={"test_a.py::test_x_values": "test_a.py::test_x"},
        twin_changes={"test_a.py::test_x_values": "== 5 -> == 3187"},
    )
    log_tests = {**_CLEAN_TESTS, "test_a.py::test_x_values": "passed"}
    for original, tampered in (("passed", True), ("failed", False)):
        tests = {**log_tests, "test_a.py::test_x": original}
        log = ChannelLog(hello=True, collected=set(tests), tests=tests, finish=1)
        run = ChildRun(1, False, False, False, b"", "", 0.1)
        result = judge(suite=suite, log=log, run=run, modified=(), timeout=60.0, output_bytes=1)
        assert not result.passed
        assert result.tampered is tampered
        if tampered:
            assert "twin canary of test_a.py::test_x passed: results are not what" in result.reason
        else:
            assert "passed where the hidden test did not" in result.reason
            assert "== 5 -> == 3187" in result.reason
    failing_twin = {**_CLEAN_TESTS, "test_a.py::test_x_values": "failed"}
    log = ChannelLog(hello=True, collected=set(failing_twin), tests=failing_twin, finish=1)
    run = ChildRun(1, False, False, False, b"", "", 0.1)
    result = judge(suite=suite, log=log, run=run, modified=(), timeout=60.0, output_bytes=1)
    assert (result.passed, result.tampered) == (True, False)
    assert "test_a.py::test_x_values" not in result.outcomes


def test_a_wrapper_may_name_the_runs_own_folder(task: SimpleNamespace) -> None:
    hidden = _write(
        task.root / "where",
        {
            "test_where.py": "import os\nfrom pathlib import Path\n\n\ndef test_folder():\n"
            "    assert os.environ['LDD_RUN_FOLDER'] == str(Path.cwd().parent.parent)\n"
            "    assert Path(os.environ['LDD_RUN_FOLDER']).name.startswith('ldd-sandbox-')\n"
        },
    )
    wrapper = ["/usr/bin/env", "LDD_RUN_FOLDER={sandbox}", sys.executable]
    verdict = run_hidden_tests(task.good, hidden, python=wrapper, isolation="inprocess")
    assert verdict.passed, verdict.reason + verdict.output_tail


def test_a_workspace_path_in_a_link_loop_is_a_sandbox_error(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    hidden = _write(tmp_path / "hidden", {"test_x.py": "def test_x():\n    pass\n"})
    with pytest.raises(SandboxError, match="'workspace'"):
        run_hidden_tests(tmp_path / "loop" / "ws", hidden)


def test_removal_stops_at_its_time_limit_and_names_what_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _write(tmp_path / "run", {"a/b/c.txt": "x", "d/e.txt": "y"})
    monkeypatch.setattr(leftovers, "REMOVAL_LIMIT_S", -1.0)
    left = leftovers.remove_tree(root)
    assert left
    assert root.exists()
    monkeypatch.setattr(leftovers, "REMOVAL_LIMIT_S", 60.0)
    assert leftovers.remove_tree(root) == []
    assert not root.exists()


# -- staged while the child starts --------------------------------------------------------


def _announcing(
    monkeypatch: pytest.MonkeyPatch, after_first: Any
) -> list[dict[str, tuple[int, str]]]:
    """Record what staging announces; call ``after_first(dst)`` once it announced once."""
    seen: list[dict[str, tuple[int, str]]] = []
    real = sandbox_module.stage_hidden

    def stage(src: Path, dst: Path, rng: random.Random, **kwargs: Any) -> Any:
        announce = kwargs.pop("announce")
        assert announce is not None  # a cold in-process run streams what it stages

        def relayed(entries: dict[str, tuple[int, str]]) -> None:
            seen.append(dict(entries))
            announce(entries)
            if len(seen) == 1:
                after_first(dst)

        return real(src, dst, rng, announce=relayed, **kwargs)

    monkeypatch.setattr(sandbox_module, "stage_hidden", stage)
    return seen


def test_a_cold_run_announces_each_staged_file_once_and_its_final_bytes(
    task: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = os.urandom(5 << 19)  # larger than a chunk of the hashing
    (task.hidden / "data.bin").write_bytes(data)
    (task.hidden / "conftest.py").write_text("")
    seen = _announcing(monkeypatch, lambda dst: None)
    verdict = run_hidden_tests(task.good, task.hidden)
    assert verdict.passed, verdict.reason
    announced = [rel for entries in seen for rel in entries]
    assert sorted(announced) == ["conftest.py", "data.bin", "test_calc.py"]
    assert seen[0]["data.bin"] == (len(data), hashlib.sha256(data).hexdigest())
    # The files staging leaves as copied come first, at once; the test file once planted.
    assert sorted(seen[0]) == ["conftest.py", "data.bin"]
    planted = seen[1]["test_calc.py"]
    assert planted[0] > len(HIDDEN.encode())  # its canaries and twins are in


@pytest.mark.parametrize("change", ["rewritten", "added"])
def test_a_staged_file_changed_after_its_announcement_is_tampering(
    task: SimpleNamespace, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    # What code of the workspace could do where the kernel does not confine it: the
    # child imports the first files while the others are staged.
    (task.hidden / "data.txt").write_text("6\n")

    def meddle(dst: Path) -> None:
        if change == "rewritten":
            (dst / "data.txt").write_text("7\n")
        else:
            (dst / "helpers.py").write_text("ANSWER = 42\n")

    _announcing(monkeypatch, meddle)
    verdict = run_hidden_tests(task.good, task.hidden, confinement="none")
    assert verdict.tampered, verdict.reason
    name = "data.txt" if change == "rewritten" else "helpers.py"
    assert f"{name} (changed while the rest of the suite was staged)" in verdict.reason
