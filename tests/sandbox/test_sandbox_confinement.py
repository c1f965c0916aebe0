"""Tests of the kernel confinement of the sandbox (Landlock) and of the hidden tests'
integrity at import.

Confinement is irreversible, so nothing here confines the test process itself: every
denial is observed in a child process, as root (Landlock binds root too) and as the
unprivileged user ``nobody`` (through ``setpriv`` when the suite runs as root), each
against a control run without confinement that shows the same attempt succeeding.
Landlock cases skip only where the kernel lacks it, never under ``CI=true`` on Linux.
The shipped real suites (tests/data/suites) prove that the allow-list never changes
an honest outcome: each runs under plain pytest, then confined as the sandbox confines
its test process, and every test id must have the same outcome.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from realsuites import SUITES, plain_outcomes, stage_suite
from sandbox_support import write_tree
from unprivileged import as_unprivileged_user, nobody_folder, unprivileged_python

from pytest_ldd import sandbox as sandbox_module
from pytest_ldd._sandbox import confinement, integrity
from pytest_ldd._sandbox.confinement import abi_version, plan
from pytest_ldd.errors import SandboxError
from pytest_ldd.sandbox import hidden_tests, run_hidden_tests

ABI, WHY = abi_version()
MODULE = Path(confinement.__file__)
SECURITY_DOC = Path(__file__).parent.parent.parent / "docs" / "security.md"
ON_CI_LINUX = os.environ.get("CI") == "true" and sys.platform.startswith("linux")


@pytest.fixture
def landlock() -> int:
    """The kernel's Landlock ABI; a skip where it has none, a failure under CI on Linux."""
    if ABI:
        return ABI
    if ON_CI_LINUX:
        pytest.fail(f"CI runs on Linux, where Landlock must be there: {WHY}")
    pytest.skip(f"the kernel lacks Landlock: {WHY}")


def test_landlock_is_there_wherever_ci_runs_on_linux() -> None:
    if ON_CI_LINUX:
        assert ABI >= 1, WHY
    else:
        assert (ABI >= 1) is (WHY == "")


# -- the plan: an allow-list that leaves out what is denied ---------------------------


def _tree(root: Path) -> Path:
    return write_tree(
        root,
        {
            "lib/a.py": "a",
            "lib/pkg/b.py": "b",
            "project/src/mod.py": "m",
            "project/hidden/test_x.py": "x",
            "project/hidden/data/d.json": "d",
            "project/README": "r",
            "project/deep/er/hidden2/t.py": "t",
            "project/deep/er/keep.py": "k",
        },
    )


def _covered(path: str, rules: list[confinement.Rule]) -> bool:
    return any(path == rule.path or path.startswith(rule.path + "/") for rule in rules)


def test_a_denied_folder_inside_a_granted_tree_is_left_out_and_its_siblings_kept(
    tmp_path: Path,
) -> None:
    root = _tree(tmp_path.resolve())
    denied = [root / "project" / "hidden", root / "project" / "deep" / "er" / "hidden2"]
    rules = plan([(str(root / "lib"), "read"), (str(root / "project"), "read")], map(str, denied))
    for path in root.rglob("*"):
        if path.is_file():
            inside = any(path.is_relative_to(d) for d in denied)
            assert _covered(str(path), rules) is not inside, path
    assert all(rule.kind == "read" for rule in rules)
    # the tree without a denied folder stays one rule; the other is split to siblings
    assert confinement.Rule(str(root / "lib"), "read") in rules
    assert confinement.Rule(str(root / "project"), "read") not in rules


def test_links_are_granted_by_their_targets_never_into_a_denied_folder(tmp_path: Path) -> None:
    root = _tree(tmp_path.resolve())
    (root / "project" / "to_hidden").symlink_to(root / "project" / "hidden")
    (root / "project" / "to_lib").symlink_to(root / "lib")
    (root / "project" / "dangling").symlink_to(root / "nowhere")
    rules = plan([(str(root / "project"), "read")], [str(root / "project" / "hidden")])
    assert not _covered(str(root / "project" / "hidden" / "test_x.py"), rules)
    assert _covered(str(root / "lib" / "a.py"), rules)  # the link's target
    assert not any("to_hidden" in rule.path or "dangling" in rule.path for rule in rules)


def test_rules_inside_denied_paths_and_missing_paths_are_dropped_the_widest_kind_stays(
    tmp_path: Path,
) -> None:
    root = _tree(tmp_path.resolve())
    rules = plan(
        [
            (str(root / "project" / "hidden" / "data"), "write"),
            (str(root / "missing"), "read"),
            (str(root / "lib"), "read"),
            (str(root / "lib"), "write"),
            (str(root / "lib"), "read"),
        ],
        [str(root / "project" / "hidden")],
    )
    assert rules == [confinement.Rule(str(root / "lib"), "write")]


def test_a_plan_past_its_rule_budget_is_refused(tmp_path: Path) -> None:
    root = write_tree(tmp_path.resolve(), {f"wide/f{i}": "" for i in range(30)})
    (root / "wide" / "secret").mkdir()
    with pytest.raises(ValueError, match="more than 10 rules"):
        plan([(str(root / "wide"), "read")], [str(root / "wide" / "secret")], limit=10)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from("abc"), min_size=1, max_size=4).map("/".join),
        min_size=1,
        max_size=12,
    ),
    st.data(),
)
def test_every_file_is_granted_exactly_when_no_denied_path_holds_it(
    files: list[str], data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve() / "t"
        made = []
        for rel in files:
            path = root / rel / "f"
            if any(p.is_file() for p in [*path.parents, path]):
                continue  # a file where a folder would go
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("")
            made.append(path)
        folders = sorted(
            {str(p.relative_to(root)) for m in made for p in m.parents if p.is_relative_to(root)}
            - {"."}
        )
        denied = data.draw(st.lists(st.sampled_from(folders), max_size=3)) if folders else []
        rules = plan([(str(root), "read")], [str(root / d) for d in denied])
        for path in made:
            inside = any(path.is_relative_to(root / d) for d in denied)
            assert _covered(str(path), rules) is not inside


# -- the kernel denies: a child confines itself and tries --------------------------------

_PROBE = r"""
import errno, json, os, socket, subprocess, sys
args = json.loads(sys.argv[1])
namespace = {"__name__": "_ldd_confinement"}
with open(args["module"], encoding="utf-8") as handle:
    exec(compile(handle.read(), args["module"], "exec"), namespace)
# Started before the confinement: a process outside the confined domain.
sleeper = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(30)"],
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
)
report = namespace["confine"](args["policy"]) if args["policy"] else {"level": "none"}
results = {}

def attempt(name, action):
    try:
        action()
    except subprocess.CalledProcessError:
        results[name] = "denied"
    except OSError as exc:
        denied = exc.errno in (errno.EACCES, errno.EPERM)
        results[name] = "denied" if denied else f"errno {exc.errno}"
    else:
        results[name] = "allowed"

def read(path):
    with open(path, "rb") as handle:
        handle.read()

def write(path):
    with open(path, "w") as handle:
        handle.write("x")

def own_socket():
    name = "\0" + args["abstract"] + "-own"
    server = socket.socket(socket.AF_UNIX)
    server.bind(name)
    server.listen(1)
    socket.socket(socket.AF_UNIX).connect(name)

attempt("read_denied", lambda: read(args["denied_file"]))
attempt("list_denied", lambda: os.listdir(args["denied"]))
attempt("read_sibling", lambda: read(args["sibling_file"]))
attempt("write_readable", lambda: write(args["sibling_file"] + ".new"))
attempt("write_writable", lambda: write(os.path.join(args["writable"], "new")))
attempt("rename_writable", lambda: os.replace(
    os.path.join(args["writable"], "new"), os.path.join(args["writable"], "sub", "moved")))
attempt("write_outside", lambda: write(args["outside_file"]))
attempt("child_reads_denied", lambda: subprocess.run(
    ["cat", args["denied_file"]], check=True, capture_output=True))
attempt("signal_outside", lambda: os.kill(sleeper.pid, 0))
attempt("abstract_outside", lambda: socket.socket(socket.AF_UNIX).connect("\0" + args["abstract"]))
attempt("abstract_own", own_socket)
if args["as_root"]:
    attempt("read_shadow", lambda: read("/etc/shadow"))
print(json.dumps({"report": report, "results": results, "sleeper": sleeper.pid}))
"""


def _probe_layout(folder: Path) -> dict[str, Any]:
    tree = write_tree(
        folder / "tree",
        {"secret/answers.txt": "42", "public/notes.txt": "n", "public/more/x": "x"},
    )
    (folder / "writable" / "sub").mkdir(parents=True)
    (folder / "outside").mkdir()
    module = folder / "confinement.py"
    shutil.copyfile(MODULE, module)
    return {
        "module": str(module),
        "denied": str(tree / "secret"),
        "denied_file": str(tree / "secret" / "answers.txt"),
        "sibling_file": str(tree / "public" / "notes.txt"),
        "writable": str(folder / "writable"),
        "outside_file": str(folder / "outside" / "file"),
        "abstract": f"ldd-confinement-test-{uuid.uuid4().hex}",
        "policy": {
            "mode": "landlock",
            "write": [str(folder / "writable")],
            "read": [str(tree)],
            "deny": [str(tree / "secret")],
        },
    }


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.socket(socket.AF_UNIX)
    yield server
    server.close()


def _probe(python: str, args: dict[str, Any], *, as_nobody: bool) -> dict[str, Any]:
    text = json.dumps(args)
    if as_nobody:
        done = as_unprivileged_user(python, _PROBE, text)
    else:
        done = subprocess.run(
            [python, "-c", _PROBE, text], capture_output=True, text=True, timeout=120, check=False
        )
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, Any] = json.loads(done.stdout)
    subprocess.run(["kill", "-9", str(found["sleeper"])], check=False, capture_output=True)
    return found


def _chown_to_nobody(folder: Path) -> None:
    if os.geteuid() != 0:
        return
    import pwd

    nobody = pwd.getpwnam("nobody")
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, nobody.pw_uid, nobody.pw_gid, follow_symlinks=False)


@pytest.mark.parametrize("as_nobody", [False, True], ids=["root-or-self", "nobody"])
def test_the_kernel_denies_what_the_policy_leaves_out(
    landlock: int, as_nobody: bool, listener: socket.socket
) -> None:
    as_root = os.geteuid() == 0 and not as_nobody
    with nobody_folder("ldd-confine-") as folder:
        python = unprivileged_python(folder) if as_nobody else sys.executable
        args = {**_probe_layout(folder), "as_root": as_root}
        _chown_to_nobody(folder)
        listener.bind("\0" + args["abstract"])
        listener.listen(8)
        control = _probe(python, {**args, "policy": None}, as_nobody=as_nobody)
        confined = _probe(python, args, as_nobody=as_nobody)
    # Without confinement every attempt succeeds: the denials below are Landlock's.
    expected_control = dict.fromkeys(control["results"], "allowed")
    if as_root:
        expected_control["read_shadow"] = "allowed"
    assert control["results"] == expected_control
    assert confined["report"]["level"] == "landlock", confined["report"]
    assert confined["report"]["abi"] == landlock
    scoped = "denied" if landlock >= 6 else "allowed"
    expected = {
        "read_denied": "denied",
        "list_denied": "denied",
        "read_sibling": "allowed",
        "write_readable": "denied",
        "write_writable": "allowed",
        "rename_writable": "allowed",
        "write_outside": "denied",
        "child_reads_denied": "denied",
        "signal_outside": scoped,
        "abstract_outside": scoped,
        "abstract_own": "allowed",
    }
    if as_root:
        expected["read_shadow"] = "denied"
    assert confined["results"] == expected


_REPORT = """
import json, sys, threading, time
sys.path.insert(0, sys.argv[1])
import confinement
if sys.argv[3] == "thread":
    threading.Thread(target=time.sleep, args=(2,), daemon=True).start()
print(json.dumps(confinement.confine(json.loads(sys.argv[2]))))
"""


def _report(policy: object, *, thread: bool = False) -> dict[str, Any]:
    """What ``confine(policy)`` reports in a fresh child (never in this process)."""
    done = subprocess.run(
        [
            *(sys.executable, "-I", "-c", _REPORT, str(MODULE.parent)),
            *(json.dumps(policy), "thread" if thread else "alone"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def test_confine_reports_none_with_the_reason_and_never_raises(landlock: int) -> None:
    assert _report({"mode": "none"}) == {
        "level": "none",
        "abi": 0,
        "detail": "turned off by confinement='none'",
    }
    assert _report(None)["level"] == "none"
    # A policy that cannot even be read is a report, not an exception.
    broken = _report({"mode": "auto", "write": 5})
    assert broken["level"] == "none"
    assert "could not be applied: TypeError" in broken["detail"]
    # Landlock confines the calling thread only: with another one running, it refuses.
    threaded = _report({"mode": "auto", "write": [], "read": [], "deny": []}, thread=True)
    assert threaded == {
        "level": "none",
        "abi": landlock,
        "detail": "the process runs more than one thread: Landlock not applied",
    }
    alone = _report({"mode": "auto", "write": [], "read": [], "deny": []})
    assert alone["level"] == "landlock"
    assert alone["detail"].startswith(f"Landlock ABI {landlock}: ")


# -- in the sandbox: the workspace's process tries the same -------------------------------

_PROBE_MODULE = '''
import errno, os, socket


def attempt(kind, target):
    """What the kernel lets this process do: "allowed", "denied" or the errno."""
    try:
        if kind == "read":
            with open(target, "rb") as handle:
                handle.read()
        elif kind == "list":
            os.listdir(target)
        elif kind == "write":
            with open(target, "w") as handle:
                handle.write("x")
        elif kind == "signal":
            os.kill(os.getppid() if target == "parent" else int(target), 0)
        elif kind == "memory":  # what a debugger opens to read a process's memory
            os.close(os.open(f"/proc/{os.getppid()}/mem", os.O_RDONLY))
        elif kind == "connect":
            socket.socket(socket.AF_UNIX).connect("\\0" + target)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM):
            return "denied"
        return f"errno {exc.errno}"
    return "allowed"
'''

_PROBE_TESTS = """
import json
import os
from pathlib import Path

from probe import attempt

EXPECT = json.loads(os.environ["LDD_PROBE_EXPECT"])
ROOT = Path.cwd().parents[1]  # the working folder is the run's ws/<name>


def test_the_original_hidden_tests():
    assert attempt("read", os.environ["LDD_PROBE_ORIGINAL"]) == EXPECT["original"]


def test_a_file_outside_the_run():
    assert attempt("write", os.environ["LDD_PROBE_OUTSIDE"]) == EXPECT["outside"]


def test_the_staged_hidden_tests():
    assert attempt("list", str(ROOT / "suite")) == EXPECT["read_staged"]
    assert attempt("read", str(ROOT / "runner" / "runner.py")) == EXPECT["read_staged"]
    assert attempt("write", str(ROOT / "suite" / "planted.py")) == EXPECT["write_staged"]


def test_the_grader_and_the_parent():
    assert attempt("signal", os.environ["LDD_PROBE_GRADER"]) == EXPECT["signal"]
    assert attempt("signal", "parent") == EXPECT["signal"]
    assert attempt("connect", os.environ["LDD_PROBE_ABSTRACT"]) == EXPECT["signal"]


def test_the_parents_memory():
    found = attempt("memory", "parent")
    if EXPECT["memory"] is not None:  # unconfined and not root: up to the kernel's rules
        assert found == EXPECT["memory"]


def test_its_own_folders():
    for folder in (os.getcwd(), os.environ["HOME"], os.environ["TMPDIR"]):
        assert attempt("write", os.path.join(folder, "mine.txt")) == "allowed"
"""

# Grades the probing workspace in each isolation, confined and not, and prints the
# verdicts; run as root or as nobody.  The grader's own abstract socket is outside.
_GRADE = """
import json, os, socket, sys
from pytest_ldd.sandbox import run_hidden_tests
args = json.loads(sys.argv[1])
server = socket.socket(socket.AF_UNIX)
server.bind("\\0" + args["abstract"])
server.listen(8)
found = {}
for isolation in ("inprocess", "process"):
    for mode in ("auto", "none"):
        confined = mode == "auto"
        expect = {
            "original": "denied" if confined else "allowed",
            "outside": "denied" if confined else "allowed",
            "read_staged": "denied" if confined and isolation == "process" else "allowed",
            "write_staged": "denied" if confined else "allowed",
            "signal": "denied" if confined and args["scoped"] else "allowed",
            # Landlock denies tracing a process outside the domain, root's included.
            "memory": "denied" if confined else "allowed" if os.geteuid() == 0 else None,
        }
        env = {
            "LDD_PROBE_EXPECT": json.dumps(expect),
            "LDD_PROBE_ORIGINAL": args["original"],
            "LDD_PROBE_OUTSIDE": args["outside"],
            "LDD_PROBE_GRADER": str(os.getpid()),
            "LDD_PROBE_ABSTRACT": args["abstract"],
        }
        verdict = run_hidden_tests(
            args["workspace"], args["hidden"], env=env, isolation=isolation,
            confinement=mode, timeout=60,
        )
        found[f"{isolation}-{mode}"] = {
            "passed": verdict.passed, "confinement": verdict.confinement,
            "tampered": verdict.tampered, "outcomes": dict(verdict.outcomes),
            "reason": verdict.reason, "tail": verdict.output_tail[-2500:],
        }
print(json.dumps(found))
"""


@pytest.mark.parametrize("as_nobody", [False, True], ids=["root-or-self", "nobody"])
def test_the_workspace_process_is_denied_in_both_isolations(
    landlock: int, as_nobody: bool
) -> None:
    with nobody_folder("ldd-confine-") as folder:
        python = unprivileged_python(folder) if as_nobody else sys.executable
        workspace = write_tree(folder / "ws", {"probe.py": _PROBE_MODULE})
        hidden = write_tree(folder / "hidden", {"test_probe.py": _PROBE_TESTS})
        (folder / "outside").mkdir()
        (folder / "system-tmp").mkdir()
        args = {
            "workspace": str(workspace),
            "hidden": str(hidden),
            "original": str(hidden / "test_probe.py"),
            "outside": str(folder / "outside" / "written.txt"),
            "abstract": f"ldd-grader-{uuid.uuid4().hex}",
            "scoped": landlock >= 6,
        }
        _chown_to_nobody(folder)
        text = json.dumps(args)
        if as_nobody:
            done = as_unprivileged_user(python, _GRADE, text, timeout=300)
        else:
            done = subprocess.run(
                [python, "-c", _GRADE, text], capture_output=True, text=True, timeout=300
            )
    assert done.returncode == 0, done.stderr[-3000:]
    for name, verdict in json.loads(done.stdout).items():
        # Each probe passes only where its attempt met the expectation: denied where
        # confined, allowed in the control run (where the file planted in the staged
        # suite is then found after the run, as tampering).
        detail = f"{name}: {verdict['reason']}\n{verdict['tail']}"
        assert set(verdict["outcomes"].values()) == {"passed"}, detail
        assert len(verdict["outcomes"]) == 6, detail
        if name.endswith("auto"):
            assert verdict["passed"], detail
            assert verdict["confinement"] == "landlock"
        else:
            assert verdict["tampered"], detail
            assert "files of the sandbox were modified during the run: suite/planted.py" in detail
            assert verdict["confinement"] == "none"


# -- honest suites: identical outcomes under the allow-list --------------------------------


@pytest.mark.parametrize("name", sorted(SUITES))
def test_a_real_suite_has_the_same_outcomes_confined_as_under_plain_pytest(
    landlock: int, name: str, tmp_path: Path, plain_suite: Callable[[str], dict[str, str]]
) -> None:
    workspace, hidden = stage_suite(SUITES[name], tmp_path / "staged")
    plain = plain_suite(name)
    scratch = [tmp_path / "home", tmp_path / "tmp"]
    for folder in scratch:
        folder.mkdir()
    # As the sandbox confines its in-process test process: its workspace copy and
    # scratch folders writable, the hidden tests (and here the collector plugin beside
    # them) readable, the shipped originals denied.
    policy = {
        "mode": "landlock",
        "write": [*map(str, scratch), str(workspace)],
        "read": [str(hidden), str(hidden.parent / "plain-collector")],
        "deny": [str(SUITES[name].folder)],
    }
    confined = plain_outcomes(workspace, hidden, confine=policy)
    assert len(plain) > 40
    assert confined == plain


# -- what the verdict says -----------------------------------------------------------------


@pytest.fixture
def task(tmp_path: Path) -> tuple[Path, Path]:
    workspace = write_tree(tmp_path / "ws", {"calc.py": "def mul(a, b):\n    return a * b\n"})
    hidden = write_tree(
        tmp_path / "hidden",
        {
            "test_calc.py": (
                "from calc import mul\n\n\ndef test_mul():\n    assert mul(6, 7) == 42\n"
            )
        },
    )
    return workspace, hidden


@pytest.mark.parametrize("isolation", ["inprocess", "process"])
def test_the_verdict_names_landlock_where_it_was_applied(
    landlock: int, isolation: str, task: tuple[Path, Path]
) -> None:
    verdict = run_hidden_tests(*task, isolation=isolation)
    assert verdict.passed, verdict.reason
    assert verdict.confinement == "landlock"
    assert verdict.reason == "all 1 hidden tests passed"
    required = run_hidden_tests(*task, isolation=isolation, confinement="landlock")
    assert required.passed
    assert required.confinement == "landlock"


@pytest.mark.parametrize("isolation", ["inprocess", "process"])
def test_an_unconfined_verdict_says_so_in_its_reason(
    isolation: str, task: tuple[Path, Path]
) -> None:
    verdict = run_hidden_tests(*task, isolation=isolation, confinement="none")
    assert verdict.passed
    assert verdict.confinement == "none"
    assert verdict.reason == (
        "all 1 hidden tests passed (not confined by the kernel: turned off by confinement='none')"
    )


# Runs the sandbox's child as asked, with Landlock out of its reach: the interpreter
# given as python= is this shim, which breaks ctypes for the runner it then runs.
_NO_LANDLOCK = (
    "import ctypes, runpy, sys\n"
    "ctypes.CDLL = None\n"
    "sys.dont_write_bytecode = True\n"  # what -B would have said
    "sys.path = [p for p in sys.path if p]\n"  # and -I
    "script = sys.argv[-1]\n"
    "sys.argv = [script]\n"
    "runpy.run_path(script, run_name='__main__')\n"
)


def test_landlock_asked_for_and_not_applied_is_inconclusive(
    landlock: int, task: tuple[Path, Path]
) -> None:
    wrapper = [sys.executable, "-c", _NO_LANDLOCK]
    verdict = run_hidden_tests(
        *task, isolation="inprocess", confinement="landlock", python=wrapper
    )
    assert not verdict.passed
    assert verdict.inconclusive
    assert not verdict.tampered
    assert verdict.confinement == "none"
    assert verdict.reason.startswith("confinement='landlock' was asked but not applied")
    assert "could not be applied" in verdict.reason
    auto = run_hidden_tests(*task, isolation="inprocess", python=wrapper)
    assert auto.passed
    assert auto.confinement == "none"
    assert "(not confined by the kernel: Landlock could not be applied" in auto.reason


def test_landlock_required_on_a_kernel_without_it_is_a_setup_error(
    task: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(confinement, "abi_version", lambda: (0, "the kernel lacks Landlock"))
    with pytest.raises(SandboxError, match="confinement='landlock' needs a kernel with Landlock"):
        run_hidden_tests(*task, confinement="landlock")


@pytest.mark.parametrize("bad", ["strict", "", None, 1])
def test_the_confinement_option_is_validated(bad: object, task: tuple[Path, Path]) -> None:
    expected = "'confinement' must be one of 'auto', 'landlock', 'none'"
    with pytest.raises(SandboxError, match=expected):
        run_hidden_tests(*task, confinement=bad)  # type: ignore[arg-type]
    with pytest.raises(SandboxError, match="'confinement' must be one of"):
        hidden_tests(task[1], confinement=bad)  # type: ignore[arg-type]


def test_the_checker_repr_names_a_confinement_other_than_the_default(
    task: tuple[Path, Path],
) -> None:
    assert "confinement" not in repr(hidden_tests(task[1]))
    assert "confinement='none'" in repr(hidden_tests(task[1], confinement="none"))
    assert sandbox_module.CONFINEMENT_MODES == ("auto", "landlock", "none")


# -- the hidden tests' integrity at import --------------------------------------------------


def _guard(tmp_path: Path, files: dict[str, str]) -> tuple[integrity.Guard, list[Any]]:
    import hashlib

    suite = write_tree(tmp_path / "run" / "suite", files)
    manifest = {}
    for path in suite.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            rel = path.relative_to(suite).as_posix()
            manifest[rel] = [len(data), hashlib.sha256(data).hexdigest()]
    reports: list[Any] = []
    guard = integrity.Guard(
        str(suite),
        manifest,
        lambda path, detail: reports.append((path, detail)),
        run=str(tmp_path / "run"),
        refuse=[str(tmp_path / "run" / "ws")],
    )
    return guard, reports


def test_a_staged_module_is_compiled_from_the_bytes_that_were_checked(tmp_path: Path) -> None:
    guard, reports = _guard(tmp_path, {"hidden/test_a.py": "A = 1\n"})
    path = tmp_path / "run" / "suite" / "hidden" / "test_a.py"
    assert guard.source(str(path)) == b"A = 1\n"
    assert guard.source(str(tmp_path / "elsewhere.py")) is None  # not the guard's business
    assert reports == []


@pytest.mark.parametrize(
    ("change", "detail"),
    [
        ("rewrite", "its bytes differ from the ones the sandbox staged"),
        ("grow", "its bytes differ from the ones the sandbox staged"),
        ("link", "not the regular file the sandbox staged"),
        ("fifo", "not the regular file the sandbox staged"),
        ("new", "a module file the sandbox never staged"),
    ],
)
def test_a_changed_swapped_or_unstaged_module_is_refused_and_reported(
    tmp_path: Path, change: str, detail: str
) -> None:
    guard, reports = _guard(tmp_path, {"hidden/test_a.py": "A = 1\n"})
    path = tmp_path / "run" / "suite" / "hidden" / "test_a.py"
    if change == "rewrite":
        path.write_text("A = 2\n")
    elif change == "grow":
        path.write_text("A = 1\nB = 2\n")
    elif change == "link":
        (tmp_path / "same.py").write_text("A = 1\n")
        path.unlink()
        path.symlink_to(tmp_path / "same.py")
    elif change == "fifo":
        path.unlink()
        os.mkfifo(path)
    else:
        path = path.with_name("helpers.py")
        path.write_text("B = 1\n")
    with pytest.raises(ImportError, match="refused"):
        guard.source(str(path))
    assert reports == [(f"hidden/{path.name}", detail)]


def test_modules_from_a_folder_the_workspace_can_write_are_never_imported(
    tmp_path: Path,
) -> None:
    guard, reports = _guard(tmp_path, {"hidden/test_a.py": "A = 1\n"})
    with pytest.raises(ImportError, match="the workspace's process can write there"):
        guard.source(str(tmp_path / "run" / "ws" / "solution.py"))
    assert reports == []  # not tampering: the judge simply never runs workspace code


def test_the_judge_never_imports_the_workspace_even_when_a_test_puts_it_on_sys_path(
    tmp_path: Path,
) -> None:
    workspace = write_tree(
        tmp_path / "ws",
        {
            "solution.py": "import os\nWHERE = os.getpid()\n",
            "sub/inner.py": "import os\nWHERE = os.getpid()\n",
        },
    )
    test = (
        "import os\nimport sys\n\n\n"
        "def test_direct():\n"
        "    sys.path.insert(0, os.path.join(os.getcwd(), {folder!r}))\n"
        "    try:\n"
        "        import {module}\n"
        "    finally:\n"
        "        del sys.path[0]\n"
        "    assert {module}.WHERE != os.getpid()\n"
    )
    hidden = write_tree(
        tmp_path / "hidden",
        {
            # A top-level name of the workspace: its stand-in, served by the subject.
            "test_top.py": test.format(folder="", module="solution"),
            # A module the judge would find only on the path the test added: refused.
            "test_nested.py": test.format(folder="sub", module="inner"),
        },
    )
    verdict = run_hidden_tests(workspace, hidden, isolation="process")
    assert verdict.outcomes == {
        "test_nested.py::test_direct": "failed",
        "test_top.py::test_direct": "passed",
    }, verdict.reason
    assert "the workspace's process can write there" in verdict.output_tail
    assert not verdict.tampered


# -- the bubblewrap recipe of docs/security.md, an extra layer -------------------------------


def _recipe() -> str:
    blocks = re.findall(r"```python\n(.*?)```", SECURITY_DOC.read_text(encoding="utf-8"), re.S)
    (block,) = [block for block in blocks if '"--unshare-all"' in block]
    return block


def test_the_bubblewrap_recipe_runs_from_a_venv_under_the_temporary_folder(
    tmp_path: Path,
) -> None:
    """The recipe keeps the interpreter visible wherever it lives (a newcomer's venv
    under /tmp was hidden by a tmpfs over the temporary folder)."""
    if shutil.which("bwrap") is None:
        if ON_CI_LINUX:
            pytest.fail("CI installs bubblewrap (.ci/run): the recipe must be tested there")
        pytest.skip("bubblewrap is not installed")
    venv = Path(tempfile.mkdtemp(prefix="ldd-newcomer-venv-"))
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        site_dir = next((venv / "lib").glob("python*/site-packages"))
        # This interpreter's packages (pytest, pytest-ldd), as an install would bring them.
        purelib = sysconfig.get_paths()["purelib"]
        (site_dir / "packages.pth").write_text(f"import site; site.addsitedir({purelib!r})\n")
        script = _recipe() + (
            "\nassert bwrap, 'bubblewrap is installed'"
            "\nassert sys.prefix.startswith(tempfile.gettempdir()), sys.prefix"
            "\nprint(verdict.confinement, verdict.reason)\n"
        )
        done = subprocess.run(
            [str(venv / "bin" / "python"), "-c", script],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    finally:
        shutil.rmtree(venv, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    expected = "landlock" if ABI else "none"
    assert done.stdout.startswith(f"{expected} all 1 hidden tests passed"), done.stdout


def test_the_judges_sys_path_holds_no_folder_the_subject_can_write(tmp_path: Path) -> None:
    """pytest's default import mode inserts test folders and package roots; in process
    isolation all of them lie in the staged suite, which the subject cannot write."""
    workspace = write_tree(tmp_path / "ws", {"calc.py": "def one():\n    return 1\n"})
    hidden = write_tree(
        tmp_path / "hidden",
        {
            "tests/__init__.py": "",
            "tests/test_path.py": (
                "import os\nimport sys\nfrom pathlib import Path\n\nfrom calc import one\n\n\n"
                "def test_path():\n"
                "    root = Path.cwd().parents[1].resolve()\n"
                "    staged = root / 'suite'\n"
                "    ours = [Path(p).resolve() for p in sys.path if p and os.path.isabs(p)]\n"
                "    ours = [p for p in ours if p.is_relative_to(root)]\n"
                "    assert ours, sys.path\n"
                "    assert [p for p in ours if not p.is_relative_to(staged)] == []\n"
                "    assert one() == 1\n"
            ),
        },
    )
    verdict = run_hidden_tests(workspace, hidden, isolation="process")
    assert verdict.passed, verdict.reason + verdict.output_tail[-3000:]


def test_the_bubblewrap_recipe_wraps_the_subject_in_process_isolation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same recipe as python= for process isolation: only the subject is wrapped,
    and it confines itself inside the wrapper's namespaces (its pid is not the one the
    judge started)."""
    if shutil.which("bwrap") is None:
        if ON_CI_LINUX:
            pytest.fail("CI installs bubblewrap (.ci/run): the recipe must be tested there")
        pytest.skip("bubblewrap is not installed")
    verdicts: list[Any] = []
    original = sandbox_module.run_hidden_tests

    def in_process_isolation(*args: Any, **kwargs: Any) -> Any:
        verdicts.append(original(*args, isolation="process", **kwargs))
        return verdicts[-1]

    monkeypatch.setattr(sandbox_module, "run_hidden_tests", in_process_isolation)
    monkeypatch.chdir(tmp_path)
    exec(compile(_recipe(), str(SECURITY_DOC), "exec"), {"__name__": "recipe"})
    (verdict,) = verdicts
    assert verdict.passed, verdict.reason
    assert verdict.confinement == ("landlock" if ABI else "none")
