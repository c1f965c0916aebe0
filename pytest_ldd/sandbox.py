"""Hidden-test verifier: grade an agent's workspace by tests it never saw, hardened.

The workspace was written by the agent under test, so nothing in it is trusted: not
its ``conftest.py`` files, not its pytest configuration, not what it prints.  Each
run copies the workspace and the hidden tests into a fresh folder of its own, runs
only the hidden tests (with canary tests planted among them: a twin of each hidden
test with perturbed expected values, and two templates per file) in an isolated
interpreter under resource limits, confined by the kernel (Linux Landlock) so that it
writes only its own copies and reads nothing it should not, and takes the results from
an authenticated pipe
of the parent's, cross-checked against the exit code, the expected test ids, the
canaries and the staged files, which it checks (and then removes) treating what the
run left behind as hostile.  See ``docs/security.md`` for the threat model.

>>> verdict = run_hidden_tests("agent_workspace/", "hidden/")   # doctest: +SKIP
>>> verdict.passed, verdict.reason                                # doctest: +SKIP
(False, '1 of 5 hidden tests did not pass: test_calc.py::test_mul (failed)')
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import random
import secrets
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Sized
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any, TypeVar, final

from pytest_ldd._sandbox import confinement
from pytest_ldd._sandbox import warm as zygotes
from pytest_ldd._sandbox.channel import OUTCOMES, ChannelLog, read_channel
from pytest_ldd._sandbox.isolation import (
    JUDGE_FILES,
    check_isolation,
    new_hash_seed,
    stage_judge,
)
from pytest_ldd._sandbox.judge import judge
from pytest_ldd._sandbox.leftovers import Snapshot, compare, remove_tree, snapshot
from pytest_ldd._sandbox.limits import Limits
from pytest_ldd._sandbox.precompiled import copy_module
from pytest_ldd._sandbox.process import ChildRun, run_child
from pytest_ldd._sandbox.staging import (
    HiddenSuite,
    check_extra_environment,
    child_environment,
    copy_workspace,
    overlay_hidden,
    stage_hidden,
    workspace_modules,
)
from pytest_ldd._sandbox.suite_config import Collection, collection, suite_configuration, suite_ini
from pytest_ldd.errors import LddWarning, SandboxError

__all__ = [
    "COLD_START",
    "CONFINEMENTS",
    "HiddenTests",
    "Limits",
    "Verdict",
    "grade_many",
    "hidden_tests",
    "run_hidden_tests",
]

_SANDBOX_DIR = Path(__file__).with_name("_sandbox")
# The runner's files, staged in every run: the bootstrap and the modules it loads.
_RUNNER_FILES = ("runner.py", "confinement.py", "integrity.py", "probes.py")
_SPEC_PREFIX = "hidden_tests:"
_KEY_BYTES = 32
# What the sandbox staged and the run must leave as it was.
_STAGED = ("suite", "runner")
_SANDBOX_FIELD = "{sandbox}"
# How the kernel confined the process that ran the workspace's code: by Linux Landlock,
# or not at all (an older kernel, another system, or turned off).
CONFINEMENTS = ("landlock", "none")
# What the ``confinement`` option asks: Landlock where the kernel has it ("auto"),
# Landlock or an inconclusive verdict ("landlock"), or none.
CONFINEMENT_MODES = confinement.MODES
# Where a run asked to start warm started cold, its reason ends with "(COLD_START why)".
COLD_START = "started cold:"
# What one grading in a corpus gives: a verdict (or, ahead of time, the set-up error).
_Graded = TypeVar("_Graded")
# The checks after the run (of what it left behind) get this long beyond the timeout.
POST_RUN_GRACE_S = 10.0


@final
@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of one hidden-test run.

    ``outcomes`` maps each hidden test id, relative to the hidden tests' folder
    (``"test_math.py::test_add"``), to ``"passed"``, ``"failed"``, ``"error"`` or
    ``"skipped"``; canary tests are not in it.  A verdict gives one of three honest
    answers: ``passed`` (a clean run in which every hidden test passed); failed (the
    workspace is wrong, or ``tampered`` -- the evidence proves the run was
    manipulated); or ``inconclusive`` (the grader could not grade: its own fault, or a
    limit of the isolation), which is neither a pass nor a failure of the workspace.
    ``confinement`` names how the kernel confined the process that ran the
    workspace's code (one of :data:`CONFINEMENTS`; ``"none"`` where it could not).
    ``reason`` says why in words, ``output_tail`` is the end of the test process's
    output.
    """

    passed: bool
    outcomes: Mapping[str, str] = field(hash=False)
    tampered: bool
    inconclusive: bool
    confinement: str
    reason: str
    duration_s: float
    output_tail: str = field(default="", repr=False)

    def __post_init__(self) -> None:
        for name in ("passed", "tampered", "inconclusive"):
            if not isinstance(getattr(self, name), bool):
                msg = f"Verdict {name!r} must be a bool (got {getattr(self, name)!r})"
                raise SandboxError(msg)
        outcomes = dict(self.outcomes)
        for test_id, outcome in outcomes.items():
            if not isinstance(test_id, str) or outcome not in OUTCOMES:
                msg = (
                    f"Verdict 'outcomes' must map test ids to one of {sorted(OUTCOMES)}"
                    f" (got {test_id!r}: {outcome!r})"
                )
                raise SandboxError(msg)
        if self.passed and self.tampered:
            msg = "Verdict 'passed' must be False when 'tampered' is True (got both True)"
            raise SandboxError(msg)
        if self.inconclusive and (self.passed or self.tampered):
            msg = (
                "Verdict 'inconclusive' must be False when 'passed' or 'tampered' is True"
                f" (got passed={self.passed}, tampered={self.tampered})"
            )
            raise SandboxError(msg)
        if self.confinement not in CONFINEMENTS:
            msg = (
                f"Verdict 'confinement' must be one of {list(CONFINEMENTS)}"
                f" (got {self.confinement!r})"
            )
            raise SandboxError(msg)
        if self.passed and (not outcomes or set(outcomes.values()) != {"passed"}):
            msg = f"Verdict 'passed' needs every outcome 'passed' (got {outcomes!r})"
            raise SandboxError(msg)
        duration = self.duration_s
        if (
            isinstance(duration, bool)
            or not isinstance(duration, (int, float))
            or not (math.isfinite(duration) and duration >= 0)
        ):
            msg = f"Verdict 'duration_s' must be a finite number >= 0 (got {duration!r})"
            raise SandboxError(msg)
        object.__setattr__(self, "outcomes", MappingProxyType(outcomes))
        object.__setattr__(self, "duration_s", float(duration))

    @property
    def not_passed(self) -> tuple[str, ...]:
        """The ids of the hidden tests that did not pass, sorted."""
        return tuple(sorted(i for i, o in self.outcomes.items() if o != "passed"))


@dataclass(frozen=True, slots=True)
class _Options:
    """The validated options shared by :func:`run_hidden_tests` and :func:`hidden_tests`."""

    timeout: float = 60.0
    python: tuple[str, ...] | None = None
    env: tuple[tuple[str, str], ...] = ()
    pythonpath: tuple[str, ...] = (".",)
    plugins: tuple[str, ...] = ()
    limits: Limits = field(default_factory=Limits)
    isolation: str = "inprocess"
    confinement: str = "auto"

    @classmethod
    def build(
        cls,
        *,
        timeout: float = 60.0,
        python: str | os.PathLike[str] | Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        pythonpath: Sequence[str] = (".",),
        plugins: Sequence[str] = (),
        limits: Limits | None = None,
        isolation: str = "inprocess",
        confinement: str = "auto",
    ) -> _Options:
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, (int, float))
            or not (math.isfinite(timeout) and timeout > 0)
        ):
            msg = f"'timeout' must be a finite number of seconds > 0 (got {timeout!r})"
            raise SandboxError(msg)
        return cls(
            timeout=float(timeout),
            python=_python_argv(python),
            env=tuple(sorted(check_extra_environment(env or {}).items())),
            pythonpath=_pythonpath(pythonpath),
            plugins=_plugins(plugins),
            limits=_limits(limits),
            isolation=check_isolation(isolation),
            confinement=_confinement(confinement),
        )

    def interpreter(self) -> tuple[str, ...]:
        if self.python is not None:
            return self.python
        if not sys.executable:
            msg = "'python' must be given: this interpreter does not know its own executable"
            raise SandboxError(msg)
        return (sys.executable,)


def _python_argv(python: object) -> tuple[str, ...] | None:
    if python is None:
        return None
    if isinstance(python, (str, os.PathLike)):
        argv: tuple[Any, ...] = (os.fspath(python),)
    elif isinstance(python, Sequence):
        argv = tuple(python)
    else:
        argv = ()
    if not argv or not all(isinstance(part, str) and part for part in argv):
        msg = (
            "'python' must be an interpreter path or a non-empty sequence of strings"
            f" (a wrapper command ending with the interpreter) (got {python!r})"
        )
        raise SandboxError(msg)
    return argv


def _pythonpath(entries: object) -> tuple[str, ...]:
    if isinstance(entries, str):
        entries = (entries,)
    if not isinstance(entries, Sequence):
        msg = f"'pythonpath' must be a sequence of folder names (got {entries!r})"
        raise SandboxError(msg)
    checked = []
    for entry in entries:
        if not isinstance(entry, str) or not entry:
            msg = f"'pythonpath' entries must be non-empty strings (got {entry!r})"
            raise SandboxError(msg)
        pure = PurePosixPath(entry.replace("\\", "/"))
        if pure.is_absolute() or ".." in pure.parts:
            msg = (
                f"'pythonpath' entries must be relative paths inside the workspace (got {entry!r})"
            )
            raise SandboxError(msg)
        checked.append(pure.as_posix())
    return tuple(checked)


def _plugins(plugins: object) -> tuple[str, ...]:
    if isinstance(plugins, str):
        plugins = (plugins,)
    if not isinstance(plugins, Sequence):
        msg = f"'plugins' must be a sequence of module names (got {plugins!r})"
        raise SandboxError(msg)
    for name in plugins:
        if not isinstance(name, str) or not all(part.isidentifier() for part in name.split(".")):
            msg = f"'plugins' must be importable module names (got {name!r})"
            raise SandboxError(msg)
    return tuple(plugins)


def _confinement(mode: object) -> str:
    if not isinstance(mode, str) or mode not in CONFINEMENT_MODES:
        msg = (
            f"'confinement' must be one of {', '.join(map(repr, CONFINEMENT_MODES))}"
            f" (got {mode!r})"
        )
        raise SandboxError(msg)
    return mode


def _limits(limits: object) -> Limits:
    if limits is None:
        return Limits()
    if not isinstance(limits, Limits):
        msg = f"'limits' must be a Limits or None (got {limits!r})"
        raise SandboxError(msg)
    return limits


def _resolve_tests(tests: object) -> Path:
    """The hidden tests as an absolute path (relative to the current folder)."""
    if not isinstance(tests, (str, os.PathLike)):
        msg = f"'tests' must be a path to the hidden tests (got {tests!r})"
        raise SandboxError(msg)
    path = Path(os.fspath(tests)).absolute()
    if not path.exists():
        msg = f"'tests' must be an existing folder or test file (got {str(path)!r})"
        raise SandboxError(msg)
    return path


def _user_processes() -> int | None:
    """How many processes this user runs now (Linux), for RLIMIT_NPROC headroom."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    uid = os.getuid()
    count = 0
    for entry in os.scandir(proc):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += 1
            except OSError:
                continue
    return count


def run_hidden_tests(
    workspace: str | os.PathLike[str],
    tests: str | os.PathLike[str],
    *,
    timeout: float = 60.0,
    python: str | os.PathLike[str] | Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    pythonpath: Sequence[str] = (".",),
    plugins: Sequence[str] = (),
    limits: Limits | None = None,
    isolation: str = "inprocess",
    confinement: str = "auto",
) -> Verdict:
    """Run the hidden ``tests`` against a fresh copy of ``workspace``; return the verdict.

    ``tests`` is a folder of hidden tests (or one test file), relative to the current
    folder or absolute; it must not lie inside the workspace.  ``python`` is the
    interpreter (default: this one), or a wrapper command ending with it such as a
    container runner; ``{sandbox}`` in its arguments stands for the run's own folder
    (so a wrapper can make that folder, and nothing else, writable).  ``env`` adds
    variables to the child's environment (it cannot set ``PYTEST_*``, ``PYTHON*``,
    ``HOME`` or the temporary folder).  ``pythonpath``
    lists folders of the workspace put on ``sys.path``, as pytest's own ``pythonpath``
    setting would.  ``plugins`` names trusted pytest plugins the hidden tests need
    (plugin autoload is off).  ``isolation`` is ``"inprocess"`` (the hidden tests and
    the workspace share one confined interpreter: full pytest fidelity) or
    ``"process"`` (pytest runs in a judge process that never runs workspace code, the
    workspace in a subject process it talks to: for function-level tasks whose
    results are data).  ``confinement`` says how the process that runs the
    workspace's code is confined by the kernel: ``"auto"`` (Linux Landlock where the
    kernel has it, else none, stated in the verdict), ``"landlock"`` (required: a
    kernel without it is a :class:`SandboxError`, a run that could not apply it is
    inconclusive) or ``"none"``.  Set-up problems raise :class:`SandboxError`;
    everything the workspace does, and what the run leaves behind, is a
    :class:`Verdict`.
    """
    options = _Options.build(
        timeout=timeout,
        python=python,
        env=env,
        pythonpath=pythonpath,
        plugins=plugins,
        limits=limits,
        isolation=isolation,
        confinement=confinement,
    )
    return _run(workspace, _resolve_tests(tests), options)


def _run(workspace: object, tests: Path, options: _Options, *, warm: bool = False) -> Verdict:
    started = time.monotonic()
    if os.name != "posix":
        msg = (
            f"the sandbox needs a POSIX system (process groups, rlimits); got os.name {os.name!r}"
        )
        raise SandboxError(msg)
    if not isinstance(workspace, (str, os.PathLike)):
        msg = f"'workspace' must be a path to a folder (got {workspace!r})"
        raise SandboxError(msg)
    if options.confinement == "landlock":
        abi, why = confinement.abi_version()
        if not abi:
            msg = f"confinement='landlock' needs a kernel with Landlock: {why}"
            raise SandboxError(msg)
    try:
        source = Path(os.fspath(workspace)).resolve()
        hidden = tests.resolve()
    except (OSError, RuntimeError, ValueError) as exc:
        msg = f"'workspace' and 'tests' must be resolvable paths ({workspace!r}, {tests!r}): {exc}"
        raise SandboxError(msg) from exc
    if not source.is_dir():
        msg = f"'workspace' must be an existing folder (got {str(source)!r})"
        raise SandboxError(msg)
    if hidden.is_relative_to(source) or source.is_relative_to(hidden):
        msg = (
            "'tests' must not lie inside the workspace, nor the workspace inside the"
            f" hidden tests (got workspace {str(source)!r}, tests {str(hidden)!r})"
        )
        raise SandboxError(msg)
    try:
        root = Path(tempfile.mkdtemp(prefix="ldd-sandbox-"))
    except OSError as exc:
        msg = f"cannot create the sandbox folder in {tempfile.gettempdir()!r}: {exc}"
        raise SandboxError(msg) from exc
    try:
        return _run_in(root, source, hidden, options, started, warm)
    except _Regrade as lost:
        again = _run(workspace, tests, options, warm=False)
        return replace(again, reason=f"{again.reason} ({COLD_START} {lost})")
    finally:
        _remove(root)


def _remove(root: Path) -> None:
    """Delete the run's folder; what cannot be removed is a warning, never an error."""
    try:
        left = remove_tree(root)
    except Exception as exc:  # remove_tree handles OSError itself; anything else is named
        left = [f". ({type(exc).__name__})"]
    if left:
        shown = ", ".join(repr(str(root / name)) for name in left[:3])
        more = f" and {len(left) - 3} more" if len(left) > 3 else ""
        message = f"the sandbox folder could not be removed whole: {shown}{more} remain"
        # Under a filter that turns warnings into errors, still never raise from here.
        with contextlib.suppress(Warning):
            warnings.warn(LddWarning(message), stacklevel=4)


@dataclass(frozen=True, slots=True)
class _Staged:
    """One run laid out in its folder, ready to start."""

    suite: HiddenSuite
    snapshot: Snapshot
    argv: list[str]
    cwd: Path
    env: dict[str, str]
    settings: dict[str, Any]
    # Staged files whose bytes changed after they were announced to a running child.
    changed: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Layout:
    """One run's folder, runner and command, before the hidden tests are staged in it."""

    root: Path
    hidden: Path
    suite_root: Path
    modules: frozenset[str]
    argv: list[str]
    cwd: Path
    env: dict[str, str]
    settings: dict[str, Any]
    collection: Collection

    def stage(self, send: Callable[[dict[str, Any]], None] | None = None) -> _Staged:
        """Stage the hidden tests and their canaries; snapshot everything staged.

        With ``send``, each staged file's hash goes to the child as soon as the file is
        final (``{"manifest": {...}, "more": True}``), so that it can import the first
        ones while the rest are staged; the snapshot taken afterwards must agree.
        """
        rng = random.Random(secrets.randbits(64))
        announced: dict[str, list[Any]] = {}
        announce = None
        if send is not None:

            def announce(entries: dict[str, tuple[int, str]]) -> None:
                named = {f"{self.suite_root.name}/{rel}": list(e) for rel, e in entries.items()}
                announced.update(named)
                send({"manifest": named, "more": True})

        suite = stage_hidden(
            self.hidden,
            self.suite_root,
            rng,
            workspace_modules=self.modules,
            collection=self.collection,
            announce=announce,
        )
        staged = snapshot(self.root, _STAGED)
        # What the hidden tests' module files must hash to when they are imported.
        manifest = {
            rel.partition("/")[2]: [size, digest.hex()]
            for rel, (size, digest) in staged.files.items()
            if rel.startswith("suite/")
        }
        changed: tuple[str, ...] = ()
        if send is not None:
            # Announced while the child ran: a file that differs now, or one staging
            # never announced, changed under it.
            changed = tuple(
                f"suite/{rel}"
                for rel in sorted(set(manifest) | set(announced))
                if manifest.get(rel) != announced.get(rel)
            )
        settings = {**self.settings, "manifest": manifest}
        return _Staged(suite, staged, self.argv, self.cwd, self.env, settings, changed)


def _staged(layout: _Layout, send: Callable[[dict[str, Any]], None] | None = None) -> _Staged:
    """:meth:`_Layout.stage`; a failure that is not the caller's is the set-up's."""
    try:
        return layout.stage(send)
    except SandboxError:
        raise
    except Exception as exc:
        msg = f"cannot stage the run in {str(layout.root)!r}: {exc!r}"
        raise SandboxError(msg) from exc


def _lay_out(root: Path, copy: Path, hidden: Path, options: _Options) -> _Layout:
    """The run's runner, folders, command and settings; the hidden tests come later."""
    limits = options.limits
    suite_root = root / "suite" / (hidden.name if hidden.is_dir() else "hidden")
    # The suite's folder exists from the start: the child's confinement names it.
    suite_root.parent.mkdir()
    modules = workspace_modules([copy / entry for entry in options.pythonpath])
    # After the workspace's modules are listed: the links are the hidden tests', never
    # the workspace's (they lead to the staged copy, which is filled in a moment).
    overlay_hidden(copy, hidden, suite_root)
    runner_dir = root / "runner"
    runner_dir.mkdir()
    for name in _RUNNER_FILES:
        copy_module(_SANDBOX_DIR / name, runner_dir / name)
    # Our configuration file: given with -c, it makes pytest ignore every pytest.ini,
    # pytest.toml, pyproject.toml, tox.ini and setup.cfg of the workspace, addopts
    # included.  The hidden suite's own settings that decide outcomes (filterwarnings,
    # xfail_strict, markers) and which tests there are (python_files, norecursedirs,
    # python_classes, python_functions, -m) join it; the staging plants and counts by
    # the latter too.  Its plugins load beside those the caller names.
    taken_over, plugins = suite_configuration(hidden, options.plugins)
    ini = suite_ini(taken_over)
    (runner_dir / "pytest.ini").write_text(ini, encoding="utf-8")
    for name in ("home", "tmp"):
        (root / name).mkdir()
    args = [
        "-c", str(runner_dir / "pytest.ini"),
        "--rootdir", str(suite_root),
        "--confcutdir", str(suite_root),
        "--basetemp", str(root / "tmp" / "pytest"),
        "-p", "no:cacheprovider",
        "--continue-on-collection-errors",
        # One line per failure: a twin fails for honest code, and a full traceback per
        # failure would cost a source parse each and push the hidden tests' own
        # failures out of the output's tail.
        "-q", "--tb=line", "-rfE", "--color=no",
    ]  # fmt: skip
    for plugin in plugins:
        args += ["-p", plugin]
    # The folder, not its files: the hidden suite's own collect_ignore and
    # pytest_ignore_collect then apply, as under plain pytest.
    args.append(str(suite_root))
    pythonpath = [str((copy / entry).resolve()) for entry in options.pythonpath]
    escaped = [p for p in pythonpath if not Path(p).is_relative_to(copy.resolve())]
    if escaped:
        msg = f"'pythonpath' entries must stay inside the workspace (got {escaped!r})"
        raise SandboxError(msg)
    is_root = hasattr(os, "geteuid") and os.geteuid() == 0
    writable = [str(copy), str(root / "home"), str(root / "tmp")]
    settings = {
        "args": args,
        "pythonpath": pythonpath,
        "workspace": str(copy.resolve()),
        "suite": str(suite_root),
        "staged": str(root / "suite"),
        "run": str(root),
        "writable": writable,
        "limits": limits.rlimits(
            options.timeout, is_root=is_root, user_processes=None if is_root else _user_processes()
        ),
        # In process, the hidden tests and the runner are read by the very process that
        # runs the workspace's code; only the original hidden tests stay out of reach.
        "confine": _policy(
            options, writable, read=[str(root / s) for s in _STAGED], deny=[str(hidden)]
        ),
    }
    env = child_environment(os.environ, dict(options.env), home=root / "home", tmp=root / "tmp")
    # A wrapper binds only this run's folder: "{sandbox}" in its arguments names it.
    wrapper = [part.replace(_SANDBOX_FIELD, str(root)) for part in options.interpreter()]
    argv = [*wrapper, "-I", "-B", "-X", "utf8", str(runner_dir / "runner.py")]
    if options.isolation == "process":
        # The judge runs on this interpreter, unconfined; the wrapper and confinement
        # apply to the subject alone, which may read nothing staged for the judge.
        # Its files are staged before the snapshot, so changing them is tampering too.
        subject_policy = _policy(
            options, writable, read=[], deny=[str(hidden), *(str(root / s) for s in _STAGED)]
        )
        argv, settings = stage_judge(
            runner_dir,
            settings,
            subject_python=wrapper,
            workspace=copy,
            timeout=options.timeout,
            confine=subject_policy,
        )
        # A cold judge hashes with a seed of this run's, and gives it to its subject; a
        # judge forked from a zygote has its zygote's (see warm.Zygote).
        env["PYTHONHASHSEED"] = new_hash_seed()
    return _Layout(
        root, hidden, suite_root, modules, argv, copy, env, settings, collection(taken_over)
    )


def _policy(
    options: _Options, writable: Sequence[str], *, read: Sequence[str], deny: Sequence[str]
) -> dict[str, Any]:
    """The confinement policy of the process that runs the workspace's code."""
    return {
        "mode": options.confinement,
        "write": list(writable),
        "read": list(read),
        "deny": list(deny),
    }


def _run_in(
    root: Path, source: Path, hidden: Path, options: _Options, started: float, warm: bool
) -> Verdict:
    limits = options.limits
    copy = root / "ws" / source.name
    try:
        refused = copy_workspace(
            source, copy, max_bytes=limits.workspace_bytes, max_files=limits.workspace_files
        )
    except Exception as exc:  # the agent wrote the workspace: a verdict, never a crash
        refused = f"the workspace cannot be copied: {type(exc).__name__}: {str(exc)[:300]}"
    if refused is not None:
        return Verdict(False, {}, False, False, "none", refused, time.monotonic() - started)
    try:
        layout = _lay_out(root, copy, hidden, options)
    except SandboxError:
        raise
    except Exception as exc:  # every failure before the child starts is the set-up's
        msg = f"cannot stage the run in {str(root)!r}: {exc!r}"
        raise SandboxError(msg) from exc
    key = secrets.token_bytes(_KEY_BYTES)
    staged: _Staged | None = None
    run, cold = None, _cold_because(options) if warm else None
    if warm and cold is None:
        staged = _staged(layout)
        run, cold = _run_warm(root, staged, {"key": key.hex(), **staged.settings}, options)
    if run is None:
        settings: dict[str, Any] = {"key": key.hex(), **layout.settings}
        then = None
        if staged is not None or options.isolation != "inprocess":
            staged = staged or _staged(layout)
            settings.update(staged.settings)
        else:
            # The child starts (interpreter, confinement, pytest) while the hidden tests
            # are staged here; it reads what each file hashes to before it imports it,
            # and may import the first ones while the others are staged.
            settings["staging"] = True

            def then(send: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
                nonlocal staged
                staged = _staged(layout, send)
                return {"manifest": {}, "more": False}  # every file was announced

        try:
            run = run_child(
                layout.argv,
                cwd=layout.cwd,
                env=layout.env,
                settings=settings,
                timeout=options.timeout,
                output_bytes=limits.output_bytes,
                tail_bytes=limits.tail_bytes,
                then=then,
            )
        except SandboxError:
            raise
        except Exception as exc:  # pipes, processes: the machine's problem, not the agent's
            msg = f"cannot run the test interpreter {layout.argv[0]!r}: {exc!r}"
            raise SandboxError(msg) from exc
    assert staged is not None  # staged before the run, or by it
    try:
        verdict = _grade(root, staged, run, key, options, started)
        if cold is not None:
            verdict = replace(verdict, reason=f"{verdict.reason} ({COLD_START} {cold})")
        return verdict
    except SandboxError:
        raise
    except Exception as exc:  # what the run left made the grader fail: a verdict, not a crash
        reason = f"the run could not be graded: {type(exc).__name__}: {str(exc)[:300]}"
        return Verdict(
            False, {}, False, True, "none", reason, time.monotonic() - started, run.output_tail
        )


def _cold_because(options: _Options) -> str | None:
    """Why a run asked to start warm starts cold, or None: it can start warm."""
    why = zygotes.unavailable()
    if why is not None:
        return why
    if options.python is not None:
        return "an interpreter or wrapper of the caller's starts cold"
    return None


def _run_warm(
    root: Path, staged: _Staged, settings: dict[str, Any], options: _Options
) -> tuple[ChildRun | None, str | None]:
    """The run forked from a zygote of this process; (None, why) where it could not be.

    A zygote that cannot start is a cold start of the same staging.  One that dies
    or refuses while it serves the run is discarded and :class:`_Regrade` raised:
    the run is graded again, cold, in a folder staged afresh (the lost child may
    have written in this one), never lost.
    """
    # Process isolation forks its judge (never agent code); the judge starts the subject.
    files: tuple[str, ...] = _RUNNER_FILES
    kind = "runner"
    if options.isolation == "process":
        files, kind = (*_RUNNER_FILES, *JUDGE_FILES), "judge"
    try:
        zygote = zygotes.acquire(options.interpreter()[0], files, kind)
    except (OSError, zygotes.ZygoteLost) as exc:
        return None, f"the zygote could not start: {exc}"
    try:
        run = zygote.run(
            cwd=staged.cwd,
            env=staged.env,
            runner=root / "runner",
            settings=settings,
            timeout=options.timeout,
            output_bytes=options.limits.output_bytes,
            tail_bytes=options.limits.tail_bytes,
        )
    except (OSError, zygotes.ZygoteLost) as exc:
        zygotes.release(zygote, healthy=False)
        raise _Regrade(f"the zygote was lost during a warm run ({exc}), graded again") from exc
    zygotes.release(zygote, healthy=True)
    return run, None


class _Regrade(Exception):
    """A warm run whose zygote was lost: the run is graded again, cold, in a fresh folder."""


def _grade(
    root: Path, staged: _Staged, run: ChildRun, key: bytes, options: _Options, started: float
) -> Verdict:
    """From the finished child to the verdict: the channel, the leftovers, the judge."""
    argv = staged.argv
    log = read_channel(run.channel, key)
    if log.fatal is not None:
        msg = f"the test interpreter {argv[0]!r} cannot run the hidden tests: {log.fatal}"
        raise SandboxError(msg)
    if not log.hello and not run.timed_out:
        msg = (
            f"the test interpreter {argv[0]!r} did not start the sandbox runner"
            f" (exit code {run.returncode}); its output ends with: {run.output_tail[-500:]!r}"
        )
        raise SandboxError(msg)
    modified, incomplete = _check_leftovers(root, staged.snapshot)
    modified += [
        f"{path} (changed while the rest of the suite was staged)" for path in staged.changed
    ]
    # A hidden module refused at import is a staged file that did not stay as staged.
    modified += [f"suite/{path} ({detail})" for path, detail in log.integrity]
    judgement = judge(
        suite=staged.suite,
        log=log,
        run=run,
        modified=modified,
        timeout=options.timeout,
        output_bytes=options.limits.output_bytes,
        unchecked=incomplete,
        isolation=options.isolation,
    )
    level, detail = _confinement_of(log)
    passed, inconclusive, reason = judgement.passed, judgement.inconclusive, judgement.reason
    if level == "none":
        if options.confinement == "landlock" and not judgement.tampered:
            # Asked for and not applied: the run says nothing about the workspace.
            passed, inconclusive = False, True
            reason = f"confinement='landlock' was asked but not applied ({detail}); {reason}"
        else:
            reason = f"{reason} (not confined by the kernel: {detail})"
    return Verdict(
        passed=passed,
        outcomes=judgement.outcomes,
        tampered=judgement.tampered,
        inconclusive=inconclusive,
        confinement=level,
        reason=reason,
        duration_s=time.monotonic() - started,
        output_tail=run.output_tail,
    )


def _confinement_of(log: ChannelLog) -> tuple[str, str]:
    """How the process that ran the workspace's code was confined, and why not."""
    if log.confinement is None:
        return "none", "the test process did not report its confinement"
    return log.confinement


def _check_leftovers(root: Path, staged: Snapshot) -> tuple[list[str], str | None]:
    """The staged entries the run changed (or added), and why the check stopped short.

    Bounded by :data:`POST_RUN_GRACE_S` and by the entries the sandbox staged; every
    isolation mode calls it once its subject process is gone.
    """
    found = compare(
        root,
        staged,
        deadline=time.monotonic() + POST_RUN_GRACE_S,
        max_entries=staged.entries + 64,
    )
    return found.changed, found.incomplete


def grade_many(
    items: Iterable[tuple[str | os.PathLike[str], str | os.PathLike[str]]],
    *,
    workers: int = 1,
    warm: bool = True,
    progress: bool | None = None,
    timeout: float = 60.0,
    python: str | os.PathLike[str] | Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    pythonpath: Sequence[str] = (".",),
    plugins: Sequence[str] = (),
    limits: Limits | None = None,
    isolation: str = "inprocess",
    confinement: str = "auto",
) -> Iterator[tuple[tuple[Any, Any], Verdict]]:
    """Grade many ``(workspace, tests)`` pairs, ``workers`` at a time; yield as they finish.

    Yields ``(item, verdict)``, ``item`` the pair as given, in the order the verdicts
    complete.  Each verdict is exactly what :func:`run_hidden_tests` with the same
    options gives, and keeps its own ``timeout``: a workspace that hangs or eats
    memory holds up one worker, never the others.  With ``warm`` (the default) each
    run is forked from a zygote of this process that imported pytest and the runner
    once (one zygote per worker and isolation, made when first needed, reused,
    stopped at exit; in ``isolation="process"`` the judge is forked, and it starts a
    fresh subject for the workspace's code); where that cannot be (not Linux, a
    ``python`` of the caller's, a zygote that does not start) the run starts cold and
    its reason ends with ``"(started cold: why)"``; a zygote lost during a run is
    replaced and that run graded again, cold.  ``progress`` draws a progress line on standard error
    (default: only when it is a terminal).  A set-up problem of one item (a missing
    tests folder) raises :class:`SandboxError` when its turn to be yielded comes.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        msg = f"'workers' must be an int >= 1 (got {workers!r})"
        raise SandboxError(msg)
    start: object = warm
    if not isinstance(start, bool):
        msg = f"'warm' must be a bool (got {start!r})"
        raise SandboxError(msg)
    options = _Options.build(
        timeout=timeout,
        python=python,
        env=env,
        pythonpath=pythonpath,
        plugins=plugins,
        limits=limits,
        isolation=isolation,
        confinement=confinement,
    )
    total = len(items) if isinstance(items, Sized) else None
    return _grade_many(
        iter(items),
        workers,
        functools.partial(_grade_one, options=options, warm=warm),
        _progress(progress, total),
    )


def _progress(progress: bool | None, total: int | None) -> _Progress | None:
    shown = sys.stderr.isatty() if progress is None else bool(progress)
    return _Progress(total) if shown else None


def _grade_one(item: object, *, options: _Options, warm: bool) -> Verdict:
    if not isinstance(item, Sequence) or isinstance(item, (str, bytes)) or len(item) != 2:
        msg = f"'items' must hold (workspace, tests) pairs (got {item!r})"
        raise SandboxError(msg)
    workspace, tests = item
    return _run(workspace, _resolve_tests(tests), options, warm=warm)


def _grade_many(
    items: Iterator[Any],
    workers: int,
    grade: Callable[[Any], _Graded],
    progress: _Progress | None,
) -> Iterator[tuple[Any, _Graded]]:
    # Threads are enough: a run's time is spent in its child process; the zygotes are
    # separate interpreters started by fork and exec, so this process may be threaded.
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ldd-grade")
    running: dict[Future[_Graded], Any] = {}
    try:
        for item in items:
            # A bounded number in flight: a corpus of millions is not staged at once.
            while len(running) >= 2 * workers:
                yield from _collect(running, progress)
            running[pool.submit(grade, item)] = item
        while running:
            yield from _collect(running, progress)
    finally:
        for future in running:
            future.cancel()
        pool.shutdown(wait=True)
        if progress is not None:
            progress.close()


def _collect(
    running: dict[Future[_Graded], Any], progress: _Progress | None
) -> Iterator[tuple[Any, _Graded]]:
    done, _ = wait(running, return_when=FIRST_COMPLETED)
    for future in done:
        item = running.pop(future)
        graded = future.result()
        if progress is not None:
            progress.add(graded)
        yield item, graded


# Verdicts graded ahead of time by :func:`graded_ahead`, keyed by the checker's id and
# the workspace as given; ``verdict_for`` answers from here first.  A context variable:
# another thread (an xdist worker's, a user's) never sees this evaluation's verdicts.
_AHEAD: ContextVar[Mapping[tuple[int, str], Verdict | SandboxError]] = ContextVar(
    "_AHEAD", default=MappingProxyType({})
)


@contextlib.contextmanager
def graded_ahead(
    checkers: Iterable[HiddenTests],
    episodes: Iterable[object],
    *,
    workers: int = 1,
    progress: bool | None = None,
) -> Iterator[None]:
    """Grade every episode's workspace with each checker now, in parallel and warm.

    Within the block, each checker's :meth:`HiddenTests.verdict_for` answers from these
    verdicts (a set-up problem of one workspace is raised there, for that episode, as
    it would have been); outside it, nothing is kept.  An episode without a workspace
    is left to ``verdict_for``, which says so.  This is how
    :func:`pytest_ldd.agents.evaluate` grades a corpus: what it yields is exactly
    what grading each episode alone would give, only sooner.
    """
    unique = list({id(checker): checker for checker in checkers}.values())
    given = list(episodes)
    found: dict[tuple[int, str], Verdict | SandboxError] = dict(_AHEAD.get())
    for checker in unique:
        todo: dict[str, tuple[int, str]] = {}
        for episode in given:
            workspace = getattr(episode, "workspace", None)
            if isinstance(workspace, (str, os.PathLike)):
                key = (id(checker), os.fspath(workspace))
                if key not in found:
                    todo.setdefault(key[1], key)
        if not todo:
            continue
        graded = _grade_many(
            iter(todo),
            workers,
            functools.partial(_grade_or_error, checker=checker),
            _progress(progress, len(todo)),
        )
        for workspace, verdict in graded:
            found[todo[workspace]] = verdict
    token = _AHEAD.set(MappingProxyType(found))
    try:
        yield
    finally:
        _AHEAD.reset(token)


def _grade_or_error(workspace: str, *, checker: HiddenTests) -> Verdict | SandboxError:
    try:
        return _run(workspace, _resolve_tests(checker.tests), checker.options, warm=checker.warm)
    except SandboxError as exc:
        return exc


class _Progress:
    """One line on standard error, redrawn per verdict: graded, failed, inconclusive."""

    def __init__(self, total: int | None) -> None:
        self.total = total
        self.counts = {"passed": 0, "failed": 0, "inconclusive": 0}
        self.started = time.monotonic()

    def add(self, graded: object) -> None:
        # A set-up error graded ahead of time counts with those nothing is known of.
        kind = "inconclusive"
        if isinstance(graded, Verdict) and not graded.inconclusive:
            kind = "passed" if graded.passed else "failed"
        self.counts[kind] += 1
        done = sum(self.counts.values())
        rate = done / max(time.monotonic() - self.started, 1e-9)
        of = f"/{self.total}" if self.total is not None else ""
        line = (
            f"\rgraded {done}{of}: {self.counts['passed']} passed, {self.counts['failed']} failed,"
            f" {self.counts['inconclusive']} inconclusive ({rate:.1f}/s)"
        )
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(line)
            sys.stderr.flush()

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write("\n")
            sys.stderr.flush()


@final
@dataclass(frozen=True, slots=True)
class HiddenTests:
    """A checker ``(episode, gold) -> bool`` grading ``episode.workspace`` by hidden tests.

    Built by :func:`hidden_tests`.  The hidden tests are the gold, so ``gold`` is
    ignored.  :meth:`verdict_for` returns the whole :class:`Verdict` (reason,
    per-test outcomes, tampering) where a bare bool is not enough.
    """

    tests: Path
    options: _Options = field(default_factory=_Options)
    warm: bool = True

    def __call__(self, episode: object, gold: object = None) -> bool:
        """True iff the hidden tests pass on the episode's workspace."""
        return self.verdict_for(episode).passed

    def verdict_for(self, episode: object) -> Verdict:
        """Run the hidden tests on ``episode.workspace`` and return the verdict."""
        workspace = getattr(episode, "workspace", None)
        if workspace is None:
            msg = (
                "hidden_tests needs the episode's 'workspace', the folder the agent"
                f" wrote (got None on {episode!r})"
            )
            raise SandboxError(msg)
        if isinstance(workspace, (str, os.PathLike)):
            ahead = _AHEAD.get().get((id(self), os.fspath(workspace)))
            if isinstance(ahead, SandboxError):
                raise ahead
            if ahead is not None:
                return ahead
        return self.run(workspace)

    def run(self, workspace: str | os.PathLike[str]) -> Verdict:
        """Run the hidden tests on a workspace folder and return the verdict."""
        return _run(workspace, _resolve_tests(self.tests), self.options, warm=self.warm)

    @classmethod
    def from_spec(cls, spec: str, *, base: str | os.PathLike[str] | None = None) -> HiddenTests:
        """Build the checker from a configuration string ``"hidden_tests:PATH"``.

        A relative PATH is taken from ``base`` (e.g. the project folder), else from
        the current folder.
        """
        if not isinstance(spec, str) or not spec.startswith(_SPEC_PREFIX) or spec == _SPEC_PREFIX:
            msg = f"checker spec must look like 'hidden_tests:PATH' (got {spec!r})"
            raise SandboxError(msg)
        path = Path(spec[len(_SPEC_PREFIX) :])
        if base is not None and not path.is_absolute():
            path = Path(os.fspath(base)) / path
        return hidden_tests(path)

    def __repr__(self) -> str:
        defaults = _Options()
        parts = [repr(str(self.tests))]
        names = ("timeout", "python", "env", "pythonpath", "plugins", "limits", "isolation")
        for name in (*names, "confinement"):
            value = getattr(self.options, name)
            if value != getattr(defaults, name):
                parts.append(f"{name}={dict(value) if name == 'env' else value!r}")
        if not self.warm:
            parts.append("warm=False")
        return f"hidden_tests({', '.join(parts)})"


def hidden_tests(
    tests: str | os.PathLike[str],
    *,
    timeout: float = 60.0,
    python: str | os.PathLike[str] | Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    pythonpath: Sequence[str] = (".",),
    plugins: Sequence[str] = (),
    limits: Limits | None = None,
    isolation: str = "inprocess",
    confinement: str = "auto",
    warm: bool = True,
) -> HiddenTests:
    """The checker that grades ``episode.workspace`` with :func:`run_hidden_tests`.

    ``tests`` is resolved against the current folder now and must exist; the other
    options are those of :func:`run_hidden_tests`.  With ``warm`` (the default) each
    verdict is forked from this process's zygote, as :func:`grade_many` does (a
    session grading many episodes imports pytest once, once per xdist worker), and
    starts cold where that cannot be, saying so in its reason; the verdicts are
    those of a cold start.  Use it as ``TaskSuccessMetric(check=hidden_tests("hidden/"))``
    or in a ``metric`` marker.
    """
    start: object = warm
    if not isinstance(start, bool):
        msg = f"'warm' must be a bool (got {start!r})"
        raise SandboxError(msg)
    options = _Options.build(
        timeout=timeout,
        python=python,
        env=env,
        pythonpath=pythonpath,
        plugins=plugins,
        limits=limits,
        isolation=isolation,
        confinement=confinement,
    )
    return HiddenTests(_resolve_tests(tests), options, warm)
