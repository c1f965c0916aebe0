"""Tests of pytest_ldd._sandbox.runner's reporting plugin, run by a real pytest in a
fresh interpreter: the line a failed test left its file at, a report pytest cannot
format, an internal error raised by the runner's own code; and the settings the
runner reads in two lines, the second made while it starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sandbox_support import write_tree

from pytest_ldd import sandbox as sandbox_module
from pytest_ldd._sandbox import precompiled
from pytest_ldd._sandbox import runner as runner_module
from pytest_ldd._sandbox.process import run_child
from pytest_ldd.errors import SandboxError

# Runs pytest with the runner's Reporter on a folder; prints the records it sent.
_DRIVER = """
import json, sys
import pytest
from pytest_ldd._sandbox import runner

records = []

class Channel:
    def send(self, kind, **fields):
        records.append({"kind": kind, **fields})

reporter = runner.Reporter(Channel(), [])
if "--break-runner" in sys.argv:  # fails inside the runner's own hook
    def broken(*args):
        raise ValueError("the runner itself broke")
    runner._phase_outcome = broken
if "--break-elsewhere" in sys.argv:  # fails in a plugin that is not the runner
    class Elsewhere:
        def pytest_runtest_logfinish(self, nodeid):
            raise ValueError("a plugin broke")
    plugins = [reporter, Elsewhere()]
else:
    plugins = [reporter]
code = pytest.main(["-q", "-p", "no:cacheprovider", "--tb=line", sys.argv[1]], plugins=plugins)
print("RECORDS" + json.dumps({"code": int(code), "records": records}))
"""


def _run(folder: Path, *flags: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", _DRIVER, str(folder), *flags],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("RECORDS")), None)
    assert line is not None, done.stdout[-3000:] + done.stderr[-3000:]
    found: dict[str, Any] = json.loads(line[len("RECORDS") :])
    return found


def _tests(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["id"].split("::", 1)[1]: r for r in records if r["kind"] == "test"}


FAILING = """import unittest

import pytest


def check(value):
    assert value == 2


def test_plain():
    x = 1
    assert x == 2


def test_in_helper():
    check(1)


def test_in_raises():
    with pytest.raises(KeyError):
        raise ValueError("not a key")


def test_raises_not_raised():
    with pytest.raises(KeyError):
        pass


def test_passes():
    assert True


class Cases(unittest.TestCase):
    def test_equal(self):
        self.assertEqual(1, 2)
"""


def test_a_failed_test_reports_the_line_of_its_file_where_it_failed(tmp_path: Path) -> None:
    folder = write_tree(tmp_path / "t", {"test_lines.py": FAILING})
    tests = _tests(_run(folder)["records"])
    lines = {name: record.get("line") for name, record in tests.items()}
    assert lines == {
        "test_plain": 12,
        "test_in_helper": 7,  # the helper's line: the innermost frame of the test file
        "test_in_raises": 21,  # the exception escaped from that line of the block
        "test_raises_not_raised": 25,  # raised leaving the ``with``: its own line
        "test_passes": None,
        "Cases::test_equal": 35,
    }
    assert {name: record["outcome"] for name, record in tests.items()} == {
        **dict.fromkeys(lines, "failed"),
        "test_passes": "passed",
    }


def test_a_report_pytest_cannot_format_is_a_plain_failure_not_an_internal_error(
    tmp_path: Path,
) -> None:
    # An exception whose traceback formatting itself raises inside pytest: the
    # exception's ``__str__`` raises SystemError (the shape of a CPython parser bug
    # seen formatting a real suite's failure).
    folder = write_tree(
        tmp_path / "t",
        {
            "conftest.py": "import pytest\n\n\n"
            "@pytest.hookimpl(wrapper=True)\n"
            "def pytest_runtest_makereport(item, call):\n"
            "    report = yield\n"
            "    if call.when == 'call' and item.name == 'test_breaks':\n"
            "        raise SystemError('AST constructor recursion depth mismatch')\n"
            "    return report\n",
            "test_report.py": "def test_breaks():\n    assert 1 == 2\n\n\n"
            "def test_after():\n    assert True\n",
        },
    )
    found = _run(folder)
    assert found["code"] == 1  # not 3: the session went on
    tests = _tests(found["records"])
    assert tests["test_breaks"]["outcome"] == "failed"
    assert tests["test_after"]["outcome"] == "passed"
    assert not [r for r in found["records"] if r["kind"] == "internal_error"]


def test_an_internal_error_names_whether_the_runner_raised_it(tmp_path: Path) -> None:
    folder = write_tree(tmp_path / "t", {"test_ok.py": "def test_ok():\n    pass\n"})
    for flag, text, grader in (
        ("--break-runner", "the runner itself broke", True),
        ("--break-elsewhere", "a plugin broke", False),
    ):
        found = _run(folder, flag)
        assert found["code"] == 3
        (error,) = [r for r in found["records"] if r["kind"] == "internal_error"]
        assert text in error["detail"]
        assert error["grader"] is grader


# -- the settings in two lines: the child starts while the hidden tests are staged ------

# Reads the first line, says so in a file, then reads the second and prints both.
_TWO_LINES = """
import os, sys
first = sys.stdin.buffer.readline()
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
second = sys.stdin.buffer.readline()
print("FIRST", first.decode().strip())
print("SECOND", second.decode().strip())
"""


def _started(marker: Path) -> int:
    """The child's pid, once it has read its first line (the test fails after 60 s)."""
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert time.monotonic() < deadline, "the child never read its first line"
        time.sleep(0.01)
    return int(marker.read_text())


def _two_line_child(marker: Path, then: Any) -> Any:
    return run_child(
        [sys.executable, "-c", _TWO_LINES, str(marker)],
        cwd=marker.parent,
        env={"PATH": os.environ.get("PATH", "")},
        settings={"a": 1},
        timeout=60,
        output_bytes=1 << 20,
        tail_bytes=1 << 16,
        then=then,
    )


def test_the_second_line_is_made_while_the_child_runs_and_follows_the_first(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "started"
    seen: list[int] = []

    def then(send: Any) -> dict[str, Any]:
        seen.append(_started(marker))  # the child has its first line before this returns
        return {"b": 2}

    run = _two_line_child(marker, then)
    assert run.returncode == 0, run.output_tail
    first, second = (
        line for line in run.output_tail.splitlines() if line.startswith(("FIRST ", "SECOND "))
    )
    assert json.loads(first.split(" ", 1)[1])["a"] == 1
    assert json.loads(second.split(" ", 1)[1]) == {"b": 2}
    assert len(seen) == 1


_LINES = """
import json, os, sys, time
lines = [sys.stdin.buffer.readline()]
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
deadline = time.monotonic() + 10
while not os.path.exists(sys.argv[1] + ".go") and time.monotonic() < deadline:
    time.sleep(0.01)
open(sys.argv[1] + ".reading", "w").close()
while True:
    lines.append(sys.stdin.buffer.readline())
    if not lines[-1] or json.loads(lines[-1]).get("last"):
        break
print("LINES", json.dumps([line.decode().strip() for line in lines]))
"""


def test_lines_sent_while_the_child_runs_reach_it_in_order_however_many_the_pipe_holds(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "started"
    # Far more than a pipe holds (64 KiB here): what it cannot take waits in memory,
    # since a child busy elsewhere may not read for a while.
    padding = "x" * 1000

    def then(send: Any) -> dict[str, Any]:
        _started(marker)
        for number in range(300):
            send({"n": number, "pad": padding})
        # Sent without waiting for the child, which reads only once told to.
        assert not Path(f"{marker}.reading").exists()
        Path(f"{marker}.go").touch()
        return {"last": True}

    run = run_child(
        [sys.executable, "-c", _LINES, str(marker)],
        cwd=tmp_path,
        env={"PATH": os.environ.get("PATH", "")},
        settings={"a": 1},
        timeout=60,
        output_bytes=1 << 24,
        tail_bytes=1 << 22,
        then=then,
    )
    assert run.returncode == 0, run.output_tail[-2000:]
    printed = next(line for line in run.output_tail.splitlines() if line.startswith("LINES "))
    lines = [json.loads(line) for line in json.loads(printed.split(" ", 1)[1])]
    assert lines[0]["a"] == 1
    assert [line["n"] for line in lines[1:-1]] == list(range(300))
    assert lines[-1] == {"last": True}


def test_what_the_second_line_raises_ends_the_child_and_reaches_the_caller(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "started"
    pids: list[int] = []
    fds_before = set(os.listdir("/proc/self/fd"))

    def then(send: Any) -> dict[str, Any]:
        pids.append(_started(marker))
        send({"manifest": {}, "more": True})
        raise SandboxError("hidden test file 'test_b.py' does not parse")

    with pytest.raises(SandboxError, match="does not parse"):
        _two_line_child(marker, then)
    with pytest.raises(ProcessLookupError):  # killed and reaped: not even a zombie
        os.kill(pids[0], 0)
    assert set(os.listdir("/proc/self/fd")) <= fds_before


# -- the sandbox's own modules, compiled once -------------------------------------------

SIBLING = """def where():
    return (lambda: __file__)()


class Kept:
    def name(self):
        return "compiled from the source"
"""


def _load_in_child(path: Path) -> dict[str, Any]:
    """Load ``path`` with the runner's loader in a fresh interpreter; what it reports."""
    program = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(Path(runner_module.__file__).parent)!r})\n"
        "import runner\n"
        "module = runner.load_file('_ldd_sibling', sys.argv[1])\n"
        "code = module.Kept.name.__code__\n"
        "print(json.dumps({'name': module.Kept().name(), 'file': code.co_filename,"
        " 'where': module.where()}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", program, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_copied_module_runs_the_code_compiled_for_its_copy(tmp_path: Path) -> None:
    source = _written(tmp_path / "src" / "sibling.py", SIBLING)
    copy = tmp_path / "runner" / "sibling.py"
    copy.parent.mkdir()
    precompiled.copy_module(source, copy)
    assert copy.read_bytes() == source.read_bytes()
    assert _load_in_child(copy)["name"] == "compiled from the source"
    # The code beside the copy is what runs, not its source: compiled from another
    # text, that text's answer shows.
    precompiled.copy_module(
        _written(tmp_path / "other" / "sibling.py", SIBLING.replace("source", "code")), copy
    )
    copy.write_text(SIBLING)
    seen = _load_in_child(copy)
    assert seen["name"] == "compiled from the code"
    # Named after the copy, nested code too: tracebacks, and the runner's test of
    # whether a frame is its own, read it.
    assert seen["file"] == str(copy)
    assert seen["where"] == str(copy)


@pytest.mark.parametrize("damage", ["tag", "optimize", "blob", "missing"])
def test_code_another_interpreter_compiled_or_damaged_code_is_never_run(
    tmp_path: Path, damage: str
) -> None:
    copy = tmp_path / "runner" / "sibling.py"
    copy.parent.mkdir()
    precompiled.copy_module(
        _written(tmp_path / "other" / "sibling.py", SIBLING.replace("source", "code")), copy
    )
    copy.write_text(SIBLING)
    code_file = copy.with_suffix(".code")
    first, _, blob = code_file.read_bytes().partition(b"\n")
    if damage == "tag":
        code_file.write_bytes(first.replace(b"cpython", b"pypy") + b"\n" + blob)
    elif damage == "optimize":
        code_file.write_bytes(first[:-1] + b"2\n" + blob)
    elif damage == "blob":
        code_file.write_bytes(first + b"\n" + blob[: len(blob) // 2])
    else:
        code_file.unlink()
    assert _load_in_child(copy)["name"] == "compiled from the source"


def _written(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


_TEST_MUL = "from calc import mul\n\n\ndef test_mul():\n    assert mul(6, 7) == 42\n"


def test_a_cold_run_stages_its_modules_with_their_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = write_tree(tmp_path / "ws", {"calc.py": "def mul(a, b):\n    return a * b\n"})
    hidden = write_tree(
        tmp_path / "hidden",
        {"test_calc.py": _TEST_MUL},
    )
    staged: list[str] = []
    real = precompiled.copy_module

    def recording(source: Path, destination: Path) -> None:
        real(source, destination)
        staged.extend(p.name for p in destination.parent.iterdir())

    monkeypatch.setattr(sandbox_module, "copy_module", recording)
    verdict = sandbox_module.run_hidden_tests(workspace, hidden)
    assert verdict.passed, verdict.reason
    for name in ("runner", "confinement", "integrity", "probes"):
        assert f"{name}.code" in staged
