"""The red-team suite: every attack case, run against the real sandbox.

Each folder under ``cases/`` is an agent workspace whose honest answer fails the
hidden tests (``hidden/``, or the case's own), plus an attack; its ``case.toml`` says
what the sandbox must conclude (``expect_passed``, ``expect_tampered``, fragments of
the ``reason``) and how to run it (``timeout``, ``[limits]``, ``[env]`` for the
child, ``[calling_env]`` for the calling process).  Cases marked ``fools_naive`` are
also run through a naive harness (hidden tests copied into the workspace, pytest's
exit code trusted) to show that the attack is real.  A case may hold a
``prepare.py``, run on a copy of its workspace first (for what git cannot hold:
bytecode, FIFOs, links), an ``outside`` file the attack aims at, which must be
unchanged afterwards, and ``unprivileged = true``: it is also run as an unprivileged
user (with ``setpriv`` when the suite runs as root, as CI does), where permissions
mean something.  After every case the system temporary folder the sandbox used must
be empty and no warning may have been issued.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from unprivileged import as_unprivileged_user, drop_root, nobody_folder, unprivileged_python

from pytest_ldd._sandbox import warm as zygotes
from pytest_ldd._sandbox.confinement import abi_version
from pytest_ldd.sandbox import COLD_START, Limits, grade_many, run_hidden_tests

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

HERE = Path(__file__).parent
CASES_DIR = HERE / "cases"
SHARED_HIDDEN = HERE / "hidden"
SECURITY_DOC = HERE.parent.parent / "docs" / "security.md"

# Every attack the suite must cover, by case folder.
REQUIRED = {
    "honest",
    "genuinely_failing",
    "setup_error",
    "conftest_makereport",  # 1
    "conftest_everywhere",  # 2
    "config_pytest_ini",  # 3
    "config_pyproject",
    "config_tox_ini",
    "config_setup_cfg",
    "calling_env",  # 4
    "entry_point_plugin",  # 5
    "site_customize",  # 6
    "package_init_patch",  # 7
    "os_exit_at_import",  # 8
    "sys_exit_at_import",
    "os_exit_in_code",
    "sys_exit_in_code",
    "forged_summary",  # 9
    "planted_hidden_paths",  # 10
    "infinite_loop",  # 11
    "sleep_past_timeout",
    "process_storm",  # 12
    "memory_hog",
    "output_flood",
    "fake_report_files",  # 13
    "agent_tests_pytest_plugins",  # 14
    "indirect_patch",  # 15
    # issue 11: what the run leaves behind, the runner's weak spots
    "leftover_fifo",
    "leftover_fifo_in_suite",
    "leftover_dev_zero_link",
    "leftover_sparse_files",
    "leftover_sparse_in_suite",
    "leftover_deep_tree",
    "leftover_mode_000",
    "leftover_chmod_link_trap",
    "planted_rewrite_pyc",
    "bytecode_symlinked_pycache",
    "stdlib_shadow",
    "honest_cmd_module",
    "honest_locked_tmp_path",
    "liar_int_subclass",
    "liar_builtin_subclasses",
    "honest_builtin_like_results",
    "targeted_rewrite_by_code",
    "targeted_rewrite_by_call",
    "targeted_rewrite_channel",
    "always_equal_object",
    "frame_reader",
    "file_reader",
    "always_equal_check_helper",
    "signed_fatal",
    "signed_deep_record",
    # confinement and the integrity of the hidden tests at import
    "neutered_then_restored",
    "helper_swapped_then_restored",
    "original_hidden_reader",
    # universal bounds: honest in sorting code, a lie at a subtraction
    "honest_universal_bound",
    "sub_returns_bound",
}


@dataclass(frozen=True)
class Case:
    """One red-team case, as its ``case.toml`` describes it."""

    name: str
    path: Path
    attack: str
    expect_passed: bool
    # None: the verdict fails either way, and only some draws of the probes' order
    # give the proof (a liar that spends its one honest answer on a probe breaks the
    # test's own first assertion instead).
    expect_tampered: bool | None
    reason: tuple[str, ...]
    fools_naive: bool
    timeout: float = 30.0
    max_seconds: float = 30.0
    hidden: Path = SHARED_HIDDEN
    check_pids: bool = False
    # The naive harness is fooled only from this pytest major version on (older
    # versions do not read the attack's config file at all).
    naive_needs_pytest: int = 0
    pythonpath: tuple[str, ...] = (".",)
    limits: dict[str, int] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    calling_env: dict[str, str] = field(default_factory=dict)
    outside: str = ""
    unprivileged: bool = False
    # What the sandbox concludes where the test process is not confined (the kernel
    # lacks Landlock, or confinement="none"), when that differs: keys expect_passed,
    # expect_tampered and reason.
    without_confinement: dict[str, Any] | None = None

    @property
    def workspace(self) -> Path:
        return self.path / "workspace"

    def expected(self, confined: bool) -> tuple[dict[str, bool | None], tuple[str, ...]]:
        """The verdict's ``passed`` / ``tampered`` and the reason's fragments."""
        if confined or self.without_confinement is None:
            want = {"passed": self.expect_passed, "tampered": self.expect_tampered}
            return want, self.reason
        other = self.without_confinement
        want = {"passed": other["expect_passed"], "tampered": other["expect_tampered"]}
        return want, tuple(other["reason"])

    def prepared(self, tmp: Path) -> Path:
        """The workspace to grade: a copy that ``prepare.py`` completed, if there is one."""
        script = self.path / "prepare.py"
        if not script.is_file():
            return self.workspace
        copy = tmp / "prepared" / "workspace"
        shutil.copytree(self.workspace, copy, symlinks=True)
        subprocess.run([sys.executable, str(script), str(copy)], check=True, timeout=60)
        return copy


def _load(path: Path) -> Case:
    data: dict[str, Any] = tomllib.loads((path / "case.toml").read_text(encoding="utf-8"))
    hidden = data.pop("hidden", None)
    return Case(
        name=path.name,
        path=path,
        hidden=path / "hidden" if hidden == "own" else SHARED_HIDDEN,
        reason=tuple(data.pop("reason")),
        expect_tampered=data.pop("expect_tampered", None),
        pythonpath=tuple(data.pop("pythonpath", (".",))),
        **data,
    )


CASES = [_load(p) for p in sorted(CASES_DIR.iterdir()) if (p / "case.toml").is_file()]
NAIVE = [case for case in CASES if case.fools_naive]
UNCONFINED = [case for case in CASES if case.without_confinement is not None]
# Where the kernel has Landlock, the default ("auto") confines every run with it.
LANDLOCK = abi_version()[0] > 0
CONFINEMENT = "landlock" if LANDLOCK else "none"


def _fill(values: dict[str, str], case: Case, tmp: Path) -> dict[str, str]:
    return {name: value.format(case=case.path, tmp=tmp) for name, value in values.items()}


def _alive(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    if stat.parent.parent.is_dir() and Path("/proc/self").exists():
        try:
            state = stat.read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return False
        return state not in ("Z", "X")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _outside_file(case: Case, tmp: Path) -> Path | None:
    if not case.outside:
        return None
    path = Path(case.outside.format(case=case.path, tmp=tmp))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("the grader's own file\n")
    path.chmod(0o640)
    return path


def _assert_unchanged(path: Path | None) -> None:
    if path is not None:
        assert stat.S_IMODE(path.stat().st_mode) == 0o640, "a file outside the sandbox changed"
        assert path.read_text() == "the grader's own file\n"


def _caught_in_a_canary(fragment: str) -> str:
    """The fragment as it reads when a canary met the liar before the test it names.

    Canaries call the workspace like the hidden test does and run in a drawn order, so
    the probe may catch a liar in a canary first: the same proof, another place.
    """
    return re.sub(r"(lied about a comparison in )\S*?(::\S*)?(?=: |$)", r"\1a canary", fragment)


def _check(
    case: Case,
    got: dict[str, Any],
    reason: str,
    elapsed: float,
    detail: str,
    *,
    confined: bool = LANDLOCK,
) -> None:
    want, fragments = case.expected(confined)
    if want["tampered"] is None:
        got = {**got, "tampered": None}
    assert got == want, f"{case.attack}: {reason}\n{detail}"
    for fragment in fragments:
        assert fragment in reason or _caught_in_a_canary(fragment) in reason, reason
    assert elapsed < case.max_seconds


@pytest.mark.parametrize("start", ["cold", "warm"])
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_sandbox_sees_through_the_attack(
    case: Case, start: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every case, started cold (``run_hidden_tests``) and forked from a zygote
    (``grade_many``): the warm start must hold against every attack too."""
    _see_through(case, tmp_path, monkeypatch, confinement="auto", warm=start == "warm")


@pytest.mark.parametrize("case", UNCONFINED, ids=lambda case: case.name)
def test_without_confinement_the_attack_is_detected_or_open(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the case's ``[without_confinement]`` says: detection, or an open attack."""
    _see_through(case, tmp_path, monkeypatch, confinement="none")


def _see_through(
    case: Case,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    confinement: str,
    warm: bool = False,
) -> None:
    for name, value in _fill(case.calling_env, case, tmp_path).items():
        monkeypatch.setenv(name, value)
    workspace = case.prepared(tmp_path)
    outside = _outside_file(case, tmp_path)
    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(system_tmp))
    started = time.monotonic()
    options: dict[str, Any] = {
        "timeout": case.timeout,
        "env": _fill(case.env, case, tmp_path),
        "pythonpath": case.pythonpath,
        "limits": Limits(**case.limits),
        "isolation": "inprocess",
        "confinement": confinement,
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if warm:
            # A zygote of this test's own, made in its temporary folder and stopped
            # before the folder is checked: no zygote serves two cases.
            zygotes.shutdown()
            try:
                ((_, verdict),) = grade_many([(workspace, case.hidden)], **options)
                assert len(zygotes._all) == 1, "the run did not start warm"
            finally:
                zygotes.shutdown()
            assert COLD_START not in verdict.reason, verdict.reason
        else:
            verdict = run_hidden_tests(workspace, case.hidden, **options)
    elapsed = time.monotonic() - started
    confined = confinement == "auto" and LANDLOCK
    assert verdict.confinement == ("landlock" if confined else "none")
    got = {"passed": verdict.passed, "tampered": verdict.tampered}
    _check(case, got, verdict.reason, elapsed, verdict.output_tail[-3000:], confined=confined)
    assert len(verdict.output_tail) <= Limits(**case.limits).tail_bytes
    assert [str(w.message) for w in caught] == []
    assert list(system_tmp.iterdir()) == [], "the sandbox folder outlived the run"
    _assert_unchanged(outside)
    if case.check_pids:
        # The attack prints its children's ids in a failing test's captured output.
        shown = [line for line in verdict.output_tail.splitlines() if "REDTEAM_PIDS:" in line]
        assert shown, verdict.output_tail[-3000:]
        pids = [int(pid) for pid in shown[-1].split("REDTEAM_PIDS:", 1)[1].split()]
        assert len(pids) >= 50  # the storm really happened (as root, all 300 of it)
        deadline = time.monotonic() + 10
        while any(map(_alive, pids)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in pids if _alive(pid)], "children outlived the run"


UNPRIVILEGED = [case for case in CASES if case.unprivileged]
_AS_USER = """
import json, sys, tempfile, time, warnings
from pathlib import Path
from pytest_ldd.sandbox import run_hidden_tests
args = json.loads(sys.argv[1])
tempfile.tempdir = args["system_tmp"]
started = time.monotonic()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    verdict = run_hidden_tests(
        args["workspace"], args["hidden"], env=args["env"], python=args["python"],
        isolation="inprocess",
    )
print(json.dumps({
    "passed": verdict.passed, "tampered": verdict.tampered, "reason": verdict.reason,
    "tail": verdict.output_tail[-2000:], "elapsed": time.monotonic() - started,
    "warnings": [str(w.message) for w in caught],
    "left": sorted(p.name for p in Path(args["system_tmp"]).iterdir()),
}))
"""


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A folder the unprivileged user owns (root's ``tmp_path`` is closed to others)."""
    with nobody_folder("ldd-redteam-") as folder:
        yield folder


@pytest.mark.parametrize("case", UNPRIVILEGED, ids=lambda case: case.name)
def test_unprivileged_sandbox_sees_through_the_attack(case: Case, shared_tmp: Path) -> None:
    python = unprivileged_python(shared_tmp)
    for folder in ("work", "system-tmp"):
        subprocess.run([*drop_root(), "mkdir", str(shared_tmp / folder)], check=True)
    work = shared_tmp / "work"
    outside = Path(case.outside.format(case=case.path, tmp=work)) if case.outside else None
    if outside is not None:
        # The outside file belongs to the grader's user, as the grader's own files would.
        script = (
            "import sys; from pathlib import Path; p = Path(sys.argv[1]);"
            " p.parent.mkdir(parents=True); p.write_text(sys.argv[2]); p.chmod(0o640)"
        )
        done = as_unprivileged_user(python, script, str(outside), "the grader's own file\n")
        assert done.returncode == 0, done.stderr
    args = {
        "workspace": str(case.workspace),
        "hidden": str(case.hidden),
        "env": _fill(case.env, case, work),
        "system_tmp": str(shared_tmp / "system-tmp"),
        "python": python,
    }
    done = as_unprivileged_user(python, _AS_USER, json.dumps(args))
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    got = {"passed": result["passed"], "tampered": result["tampered"]}
    _check(case, got, result["reason"], result["elapsed"], result["tail"])
    assert result["warnings"] == []
    assert result["left"] == [], "the sandbox folder outlived the run"
    _assert_unchanged(outside)


@pytest.mark.parametrize("case", NAIVE, ids=lambda case: case.name)
def test_attack_fools_a_naive_harness(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attack is real: copying the hidden tests in and trusting the exit code fails."""
    fooled = int(pytest.__version__.split(".")[0]) >= case.naive_needs_pytest
    work = tmp_path / "ws"
    shutil.copytree(case.prepared(tmp_path), work)
    (work / "tests").mkdir(exist_ok=True)
    for path in case.hidden.glob("test_*.py"):
        shutil.copyfile(path, work / "tests" / path.name)
    env = {**os.environ, "PYTHONPATH": str(work), **_fill(case.calling_env, case, tmp_path)}
    env.pop("PYTEST_CURRENT_TEST", None)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (result.returncode == 0) is fooled, result.stdout[-3000:]


def test_every_required_attack_has_a_case() -> None:
    assert {case.name for case in CASES} >= REQUIRED


def test_every_case_is_in_the_security_doc() -> None:
    text = SECURITY_DOC.read_text(encoding="utf-8")
    assert [case.name for case in CASES if f"`{case.name}`" not in text] == []


def test_no_case_code_was_loaded_into_this_process() -> None:
    # The cases attack whatever pytest run loads them; this one must not have.
    loaded = [
        name
        for name, module in list(sys.modules.items())
        if Path(getattr(module, "__file__", None) or "/").resolve().is_relative_to(CASES_DIR)
    ]
    assert loaded == []
