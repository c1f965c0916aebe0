"""The red-team suite under ``isolation="process"``: no attack flips the verdict.

Every case of ``cases/`` (the in-process attacks) runs again with the judge and the
subject in separate processes and must reach the same ``passed``; the cases of
``process_cases/`` attack what is new in this mode: the judge's pytest reached from
workspace code, the channel key, builtin look-alikes, frame and stdlib tricks,
bytecode planted for a hidden test, and a subject that breaks the protocol on
purpose (``hostile_subject``, one run per variant).
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
from test_redteam import CASES, LANDLOCK, Case, _fill

from pytest_ldd._sandbox import warm as zygotes
from pytest_ldd.sandbox import COLD_START, Limits, grade_many, run_hidden_tests

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

HERE = Path(__file__).parent
PROCESS_CASES = HERE / "process_cases"
SHARED_HIDDEN = HERE / "hidden"
SECURITY_DOC = HERE.parent.parent / "docs" / "security.md"

REQUIRED = {
    "planted_judge_module",
    "staged_suite_reader",
    "report_patching",
    "key_stealing",
    "builtin_subclass_liar",
    "frame_reader",
    "stdlib_named_modules",
    "honest_cmd_module",
    "bytecode_poisoning",
    "hostile_subject",
}


@dataclass(frozen=True)
class ProcessCase:
    """One case of ``process_cases/``, with one of its variants."""

    name: str
    path: Path
    attack: str
    expect_passed: bool
    reason: tuple[str, ...]
    hidden: Path = SHARED_HIDDEN
    timeout: float = 30.0
    max_seconds: float = 40.0
    variant: str = ""
    variants: tuple[str, ...] = ()
    # A variant's own timeout, where it needs more time than the others.
    timeouts: dict[str, float] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    # None: the verdict's tampered flag is not what the case is about.
    expect_tampered: bool | None = None
    # What the sandbox concludes without confinement, where that differs.
    without_confinement: dict[str, Any] | None = None

    @property
    def workspace(self) -> Path:
        return self.path / "workspace"

    def expected(self, confined: bool) -> tuple[bool, bool | None, tuple[str, ...]]:
        """The verdict's ``passed`` and ``tampered`` (None: any) and the reason's fragments."""
        if confined or self.without_confinement is None:
            return self.expect_passed, self.expect_tampered, self.reason
        other = self.without_confinement
        return other["expect_passed"], other.get("expect_tampered"), tuple(other["reason"])


def _load(path: Path) -> list[ProcessCase]:
    data: dict[str, Any] = tomllib.loads((path / "case.toml").read_text(encoding="utf-8"))
    hidden = data.pop("hidden", None)
    variants = tuple(data.pop("variants", ()))
    case = ProcessCase(
        name=path.name,
        path=path,
        hidden=path / "hidden" if hidden == "own" else SHARED_HIDDEN,
        reason=tuple(data.pop("reason")),
        variants=variants,
        **data,
    )
    if not variants:
        return [case]
    return [
        ProcessCase(**{**case.__dict__, "variant": v, "env": {"LDD_ATTACK": v}}) for v in variants
    ]


PROCESS = [
    c for p in sorted(PROCESS_CASES.iterdir()) if (p / "case.toml").is_file() for c in _load(p)
]
PROCESS_UNCONFINED = [case for case in PROCESS if case.without_confinement is not None]


def _id(case: ProcessCase) -> str:
    return f"{case.name}-{case.variant}" if case.variant else case.name


@pytest.mark.parametrize("start", ["cold", "warm"])
@pytest.mark.parametrize("case", PROCESS, ids=_id)
def test_process_isolation_closes_the_attack(case: ProcessCase, start: str) -> None:
    """Every case, started cold (``run_hidden_tests``) and with its judge forked from a
    zygote (``grade_many``): the warm start must hold against every attack too."""
    _close(case, confinement="auto", warm=start == "warm")


@pytest.mark.parametrize("case", PROCESS_UNCONFINED, ids=_id)
def test_without_confinement_the_process_attack_is_detected(case: ProcessCase) -> None:
    _close(case, confinement="none")


def _close(case: ProcessCase, *, confinement: str, warm: bool = False) -> None:
    started = time.monotonic()
    timeout = case.timeouts.get(case.variant, case.timeout)
    options: dict[str, Any] = {
        "timeout": timeout,
        "env": case.env,
        "isolation": "process",
        "confinement": confinement,
    }
    if warm:
        # A zygote of this case's own, stopped after it: no zygote serves two cases.
        zygotes.shutdown()
        try:
            ((_, verdict),) = grade_many([(case.workspace, case.hidden)], **options)
            assert [z.kind for z in zygotes._all] == ["judge"], "the judge did not start warm"
        finally:
            zygotes.shutdown()
        assert COLD_START not in verdict.reason, verdict.reason
    else:
        verdict = run_hidden_tests(case.workspace, case.hidden, **options)
    elapsed = time.monotonic() - started
    confined = confinement == "auto" and LANDLOCK
    assert verdict.confinement == ("landlock" if confined else "none")
    passed, tampered, fragments = case.expected(confined)
    assert verdict.passed is passed, (
        f"{case.attack} [{case.variant}]: {verdict.reason}\n{verdict.output_tail[-3000:]}"
    )
    if tampered is not None:
        assert verdict.tampered is tampered, verdict.reason
    for fragment in fragments:
        assert fragment in verdict.reason
    if case.name == "hostile_subject":
        # the test the subject attacked fails with the reason; the others are unharmed
        assert HOSTILE_REASONS[case.variant] in verdict.output_tail, verdict.output_tail[-3000:]
        assert verdict.outcomes.get("test_calc.py::test_add") == "passed"
        if case.variant == "stall":
            # The judge outlived its subject: the verdict still says it timed out.
            assert f"timed out after {timeout:g} s" in verdict.reason, verdict.reason
    assert elapsed < max(case.max_seconds, 2 * timeout)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_every_in_process_attack_fails_in_process_isolation(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in _fill(case.calling_env, case, tmp_path).items():
        monkeypatch.setenv(name, value)
    verdict = run_hidden_tests(
        case.workspace,
        case.hidden,
        timeout=case.timeout,
        env=_fill(case.env, case, tmp_path),
        pythonpath=case.pythonpath,
        limits=Limits(**case.limits),
        isolation="process",
    )
    want, _ = case.expected(LANDLOCK)
    assert verdict.passed is want["passed"], f"{case.attack}: {verdict.reason}"
    if want["passed"]:
        assert not verdict.tampered


HOSTILE_REASONS = {
    "garbage": "process isolation",
    "bad_tag": "unknown tag",
    "wrong_seq": "while",
    "huge_frame": "announced",
    "unknown_base": "never described",
    "not_an_exception": "not an exception",
    "claims_skip": "Skipped",
    "claims_exit": "SystemExit",
    "forged_true": "test_mul",
    "stall": "did not answer",
    "flood": "flooding",
    "crafted_callbacks": "never given",
    "bad_sync": "wrong arguments",
    "reach_through": "reach_through: the judge refused every attempt",
}


def test_the_planted_bytecode_fools_plain_pytest(tmp_path: Path) -> None:
    """The bytecode attack is real: plain pytest runs the planted test code."""
    case = PROCESS_CASES / "bytecode_poisoning"
    work = tmp_path / "ws"
    shutil.copytree(case / "workspace", work)
    shutil.copytree(case / "hidden", work / "tests")
    env = {**os.environ, "PYTHONPATH": str(work)}
    env.pop("PYTEST_CURRENT_TEST", None)
    args = ["tests/test_a_first.py", "tests/test_b_mul.py"]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:]


def test_every_required_process_attack_has_a_case() -> None:
    assert {case.name for case in PROCESS} >= REQUIRED
    assert set(HOSTILE_REASONS) == set(
        next(c for c in PROCESS if c.name == "hostile_subject").variants
    )


def test_every_process_case_is_in_the_security_doc() -> None:
    text = SECURITY_DOC.read_text(encoding="utf-8")
    assert [c.name for c in PROCESS if f"`{c.name}`" not in text] == []


def test_no_process_case_code_was_loaded_into_this_process() -> None:
    ours = PROCESS_CASES / "conftest.py"  # keeps pytest from collecting the cases
    loaded = [
        name
        for name, module in list(sys.modules.items())
        if (path := Path(getattr(module, "__file__", None) or "/").resolve()) != ours
        and path.is_relative_to(PROCESS_CASES)
    ]
    assert loaded == []
