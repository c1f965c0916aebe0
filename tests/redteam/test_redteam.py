"""The red-team suite: every attack case, run against the real sandbox.

Each folder under ``cases/`` is an agent workspace whose honest answer fails the
hidden tests (``hidden/``, or the case's own), plus an attack; its ``case.toml`` says
what the sandbox must conclude (``expect_passed``, ``expect_tampered``, fragments of
the ``reason``) and how to run it (``timeout``, ``[limits]``, ``[env]`` for the
child, ``[calling_env]`` for the calling process).  Cases marked ``fools_naive`` are
also run through a naive harness (hidden tests copied into the workspace, pytest's
exit code trusted) to show that the attack is real.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_ldd.sandbox import Limits, run_hidden_tests

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
}


@dataclass(frozen=True)
class Case:
    """One red-team case, as its ``case.toml`` describes it."""

    name: str
    path: Path
    attack: str
    expect_passed: bool
    expect_tampered: bool
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

    @property
    def workspace(self) -> Path:
        return self.path / "workspace"


def _load(path: Path) -> Case:
    data: dict[str, Any] = tomllib.loads((path / "case.toml").read_text(encoding="utf-8"))
    hidden = data.pop("hidden", None)
    return Case(
        name=path.name,
        path=path,
        hidden=path / "hidden" if hidden == "own" else SHARED_HIDDEN,
        reason=tuple(data.pop("reason")),
        pythonpath=tuple(data.pop("pythonpath", (".",))),
        **data,
    )


CASES = [_load(p) for p in sorted(CASES_DIR.iterdir()) if (p / "case.toml").is_file()]
NAIVE = [case for case in CASES if case.fools_naive]


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


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_sandbox_sees_through_the_attack(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in _fill(case.calling_env, case, tmp_path).items():
        monkeypatch.setenv(name, value)
    started = time.monotonic()
    verdict = run_hidden_tests(
        case.workspace,
        case.hidden,
        timeout=case.timeout,
        env=_fill(case.env, case, tmp_path),
        pythonpath=case.pythonpath,
        limits=Limits(**case.limits),
    )
    elapsed = time.monotonic() - started
    got = {"passed": verdict.passed, "tampered": verdict.tampered}
    want = {"passed": case.expect_passed, "tampered": case.expect_tampered}
    assert got == want, f"{case.attack}: {verdict.reason}\n{verdict.output_tail[-3000:]}"
    for fragment in case.reason:
        assert fragment in verdict.reason
    assert elapsed < case.max_seconds
    assert len(verdict.output_tail) <= Limits(**case.limits).tail_bytes
    if case.check_pids:
        pids = [int(line) for line in (tmp_path / "pids").read_text().split()]
        assert len(pids) >= 50  # the storm really happened (as root, all 300 of it)
        deadline = time.monotonic() + 10
        while any(map(_alive, pids)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in pids if _alive(pid)], "children outlived the run"


@pytest.mark.parametrize("case", NAIVE, ids=lambda case: case.name)
def test_attack_fools_a_naive_harness(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attack is real: copying the hidden tests in and trusting the exit code fails."""
    fooled = int(pytest.__version__.split(".")[0]) >= case.naive_needs_pytest
    work = tmp_path / "ws"
    shutil.copytree(case.workspace, work)
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
