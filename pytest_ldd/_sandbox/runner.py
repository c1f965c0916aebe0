"""Child side of the hidden-test sandbox: the trusted bootstrap of the test process.

The parent copies this file into a folder of its own and runs it as
``python -I -B -X utf8 runner.py`` (isolated: no ``PYTHON*`` variables, no user site,
neither the current folder nor the script's folder on ``sys.path``).  It then

1. reads its settings from one line of standard input -- never from argv or the
   environment, which a calling shell could have set and the code under test can read
   back more easily -- and points standard input at ``/dev/null``;
2. applies the resource limits and scrubs ``PYTEST_*`` / ``PYTHON*`` once more;
3. confines itself with Landlock (``confinement.py``, staged beside it) before it
   imports pytest, and reports what was applied; from then on it writes only the
   workspace copy and its scratch folders, and never reads the original hidden tests;
4. checks every module file of the staged hidden tests as it is imported, from the
   bytes that get compiled (``integrity.py``), and never reads bytecode there;
5. runs ``pytest.main`` with a reporting plugin that writes one authenticated JSON
   line per event to a pipe inherited from the parent (HMAC-SHA256 under a per-run
   key, numbered in sequence), and puts the workspace copy on ``sys.path`` only once
   pytest's plugins are loaded (as pytest's ``pythonpath`` setting does), behind an
   import guard: a workspace module never replaces a standard-library module, nor
   one that is imported already (``pdb``, ``cmd``, ``getpass`` stay the real ones);
6. probes every comparison of the hidden test files (after pytest's assertion
   rewriting) and of unittest's assertions that involves a value of the workspace
   (``probes.py``): a claim no honest value can make fails the test, and a ``liar``
   record is sent;
7. reports, for a failed test, the line of its test file where it failed, and turns
   a report pytest cannot format into a plain failure rather than an internal error;
8. leaves with ``os._exit``, so nothing the code under test registered to run at exit
   can change the exit status after pytest reported it.

It imports only the standard library and pytest (and the files staged beside it),
because the interpreter under test need not have pytest-ldd installed.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import importlib.machinery
import importlib.util
import json
import marshal
import math
import os
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
_AUTOLOAD_OFF = "PYTEST_DISABLE_PLUGIN_AUTOLOAD"
_SCRUBBED_PREFIXES = ("PYTEST_", "PYTHON")
_IDS_PER_RECORD = 200
_DETAIL_CHARS = 2000
# Frames walked in a traceback, to find the test file's line or the grader's frames.
_TRACEBACK_DEPTH = 10_000


class Channel:
    """Writes numbered, authenticated records to the parent's pipe."""

    def __init__(self, fd: int, key: bytes) -> None:
        self._fd = fd
        self._key = key
        self._seq = 0
        self.broken = False

    def send(self, kind: str, **fields: Any) -> None:
        """Send one record; a closed or broken pipe silences the channel for good."""
        if self.broken:
            return
        payload = json.dumps(
            {"seq": self._seq, "kind": kind, **fields}, separators=(",", ":"), ensure_ascii=True
        ).encode("ascii")
        mac = hmac.new(self._key, payload, hashlib.sha256).hexdigest().encode("ascii")
        data = mac + b" " + payload + b"\n"
        self._seq += 1
        try:
            while data:
                data = data[os.write(self._fd, data) :]
        except OSError:
            self.broken = True


def _phase_outcome(when: str, outcome: str, before: str | None) -> str:
    """Fold the outcome of one phase (setup, call, teardown) into the test's outcome."""
    if when == "setup":
        return {"failed": "error", "skipped": "skipped"}.get(outcome, "passed")
    if when == "call":
        # A test's subtests report before it, in the call phase: a failed one fails the
        # test, whatever the test's own report says after it (pytest 9 reports a
        # unittest test whose ``subTest`` failed as passed); a skipped one does not
        # make the test skipped.
        if outcome == "failed" or before == "failed":
            return "failed"
        return "skipped" if outcome == "skipped" else "passed"
    # teardown: a failure there is an error, unless the test itself had failed already
    if outcome == "failed":
        return "failed" if before == "failed" else "error"
    return before if before is not None else "error"


class ImportGuard:
    """A meta-path finder that keeps protected top-level names off the workspace.

    Standard-library names and every top-level module already imported when the
    workspace goes on ``sys.path`` are found on the path as it was then, or not at
    all: a workspace ``cmd.py`` can neither run when pytest imports ``pdb`` nor
    replace a module pytest or the runner imports later.
    """

    def __init__(self, protected: frozenset[str], path: Sequence[str]) -> None:
        self._protected = protected
        self._path = list(path)

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if path is not None or name not in self._protected:
            return None
        for finder in (importlib.machinery.BuiltinImporter, importlib.machinery.FrozenImporter):
            if finder.find_spec(name) is not None:
                return None  # the finders after this one take it
        spec = importlib.machinery.PathFinder.find_spec(name, self._path)
        if spec is None:
            msg = f"No module named {name!r}"
            raise ModuleNotFoundError(msg, name=name)
        return spec


def protected_names() -> frozenset[str]:
    """The top-level names the workspace may not provide: the standard library's, and
    every module imported now."""
    imported = {name.partition(".")[0] for name in list(sys.modules)}
    stdlib: frozenset[str] = getattr(sys, "stdlib_module_names", frozenset())
    return frozenset(stdlib | imported) - {"__main__", "__mp_main__"}


def install_import_guard() -> None:
    """Put the guard first on ``sys.meta_path``, protecting what is importable now."""
    sys.meta_path.insert(0, ImportGuard(protected_names(), [p for p in sys.path if p]))


def _failure_line(tb: Any, path: str, real: Callable[[str], str]) -> int | None:
    """The line of the test file ``path`` where an exception left it last (innermost).

    ``real`` resolves a frame's file name as ``os.path.realpath`` does.
    """
    line = None
    depth = 0
    while tb is not None and depth < _TRACEBACK_DEPTH:
        if real(tb.tb_frame.f_code.co_filename) == path:
            line = tb.tb_lineno
        tb = tb.tb_next
        depth += 1
    return line


class Reporter:
    """The pytest plugin of the sandbox: reports collection and per-test outcomes.

    A failed test's record names the line of its test file where it failed, for
    every failure alike.  A test whose report pytest could not format (an error while
    rendering the failure) is reported as a plain failure rather than ending the
    session with an internal error.
    """

    def __init__(self, channel: Channel, pythonpath: list[str]) -> None:
        import pytest  # imported already: the runner's plugin needs its hook marker

        self.current = ""  # the node id of the test running now
        # The comparisons of the hidden tests (probes.Comparisons), once guarded.
        self.comparisons: Any = None
        self._channel = channel
        self._pythonpath = pythonpath
        self._outcomes: dict[str, str] = {}
        self._lines: dict[str, int] = {}
        self._real: dict[str, str] = {}  # file name -> os.path.realpath, once per name
        self._exit = pytest.exit.Exception
        if not hasattr(Reporter.pytest_runtest_makereport, "pytest_impl"):
            # Outermost: what any other wrapper raises is caught too.
            pytest.hookimpl(wrapper=True, tryfirst=True)(Reporter.pytest_runtest_makereport)

    def pytest_load_initial_conftests(self) -> None:
        # Runs after plugins named with -p were imported, before any conftest.py or
        # test module is: the workspace cannot shadow them, and is importable by all.
        install_import_guard()
        for path in reversed(self._pythonpath):
            sys.path.insert(0, path)

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            detail = str(report.longrepr)[-_DETAIL_CHARS:]
            self._channel.send("collect_error", id=report.nodeid, detail=detail)
        elif report.skipped:  # a module-level skip, e.g. pytest.importorskip(...)
            self._channel.send("collect_skip", id=report.nodeid)
        elif report.nodeid.endswith(".py") and "::" not in report.nodeid:
            self._channel.send("module", id=report.nodeid)

    def pytest_deselected(self, items: Any) -> None:
        ids = [item.nodeid for item in items]
        for start in range(0, len(ids), _IDS_PER_RECORD):
            self._channel.send("deselected", ids=ids[start : start + _IDS_PER_RECORD])

    def pytest_collection_finish(self, session: Any) -> None:
        ids = [item.nodeid for item in session.items]
        for start in range(0, len(ids), _IDS_PER_RECORD):
            self._channel.send("collected", ids=ids[start : start + _IDS_PER_RECORD])

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.current = nodeid
        if self.comparisons is not None:
            self.comparisons.mismatch = None

    def pytest_runtest_makereport(self, item: Any, call: Any) -> Any:
        try:
            report = yield
        except BaseException as exc:
            if isinstance(exc, (KeyboardInterrupt, SystemExit, self._exit)):
                raise
            report = _plain_report(item, call, exc)
        if call.when == "call" and report.failed and call.excinfo is not None:
            path = self._realpath(str(item.path))
            line = _failure_line(call.excinfo.tb, path, self._realpath)
            if line is not None:
                self._lines[item.nodeid] = line
        return report

    def _realpath(self, name: str) -> str:
        # A twin fails for honest code, and each failure walks its whole traceback.
        real = self._real.get(name)
        if real is None:
            real = self._real[name] = os.path.realpath(name)
        return real

    def pytest_runtest_logreport(self, report: Any) -> None:
        before = self._outcomes.get(report.nodeid)
        self._outcomes[report.nodeid] = _phase_outcome(report.when, report.outcome, before)

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        outcome = self._outcomes.pop(nodeid, "error")
        line = self._lines.pop(nodeid, None)
        if outcome == "failed" and line is not None:
            seen = _seen(self.comparisons)
            self._channel.send("test", id=nodeid, outcome=outcome, line=line, seen=seen)
        else:
            self._channel.send("test", id=nodeid, outcome=outcome)

    def pytest_internalerror(self, excrepr: Any, excinfo: Any) -> None:
        tb = getattr(excinfo, "tb", None)
        grader = False
        depth = 0
        while tb is not None and depth < _TRACEBACK_DEPTH:
            grader = grader or os.path.dirname(tb.tb_frame.f_code.co_filename) == _HERE
            tb = tb.tb_next
            depth += 1
        detail = str(excrepr)[-_DETAIL_CHARS:]
        self._channel.send("internal_error", detail=detail, grader=grader)


def _seen(comparisons: Any) -> list[Any] | None:
    """The failed test's last unequal pair of plain values, as JSON: ``[line, left, right]``.

    Strings up to :data:`_SEEN_CHARS` characters, ints, floats (finite), bools and None.
    """
    mismatch = getattr(comparisons, "mismatch", None)
    if mismatch is None:
        return None
    line, left, right = mismatch
    for value in (left, right):
        if type(value) not in _SEEN_TYPES or (type(value) is str and len(value) > _SEEN_CHARS):
            return None
        if type(value) is float and not math.isfinite(value):
            return None
        if type(value) is int and value.bit_length() > 64:
            return None
    return [line, left, right]


_SEEN_TYPES = (str, int, float, bool, type(None))
_SEEN_CHARS = 200


def _plain_report(item: Any, call: Any, error: BaseException) -> Any:
    """The report of a test whose own report could not be made: its outcome, plainly."""
    from _pytest.outcomes import Skipped
    from _pytest.reports import TestReport

    excinfo = call.excinfo
    try:
        text = excinfo.exconly() if excinfo is not None else ""
    except Exception:  # the exception's own text is what failed to render
        text = f"<an exception of type {type(excinfo.value).__name__}>"
    note = f"(pytest could not format this report: {type(error).__name__}: {error!s:.300})"
    longrepr: Any = None
    outcome: Any = "passed"
    if excinfo is not None and isinstance(excinfo.value, Skipped):
        outcome = "skipped"
        longrepr = (str(item.path), 0, text[:_DETAIL_CHARS])
    elif excinfo is not None:
        outcome = "failed"
        longrepr = f"{text[-_DETAIL_CHARS:]}\n{note}"
    return TestReport(
        item.nodeid,
        item.location,
        {},
        outcome,
        longrepr,
        call.when,
        duration=call.duration,
        start=call.start,
        stop=call.stop,
    )


def _apply_limits(limits: dict[str, list[int]]) -> None:
    try:
        import resource
    except ImportError:  # pragma: no cover - not a POSIX system
        return
    for name, (soft, hard) in limits.items():
        which = getattr(resource, name, None)
        if which is None:
            continue
        _, current_hard = resource.getrlimit(which)
        if current_hard != resource.RLIM_INFINITY:
            hard = min(hard, current_hard)
            soft = min(soft, hard)
        try:
            resource.setrlimit(which, (soft, hard))
        except (ValueError, OSError):
            # A limit the OS refuses is left as it was; the timeout and the process
            # group still contain the run.
            continue


def _scrub_environment(pythonpath: Sequence[str] = ()) -> None:
    """Drop the caller's ``PYTEST_*`` / ``PYTHON*`` variables; name the workspace's folders.

    ``PYTHONPATH`` then holds the workspace's ``pythonpath`` folders alone, so that a
    ``python`` the tests start (``subprocess.run([sys.executable, "-m", "pkg"])``)
    imports the workspace as it does where its authors installed it.  That process is
    confined as this one is.
    """
    for name in list(os.environ):
        if name.startswith(_SCRUBBED_PREFIXES):
            del os.environ[name]
    os.environ[_AUTOLOAD_OFF] = "1"
    if pythonpath:
        os.environ["PYTHONPATH"] = os.pathsep.join(pythonpath)


def load_sibling(name: str) -> types.ModuleType:
    """A module staged beside this file (``runner/``), loaded by its path as ``_ldd_<name>``."""
    return load_file(f"_ldd_{name}", os.path.join(_HERE, f"{name}.py"))


def load_file(module_name: str, path: str | os.PathLike[str]) -> types.ModuleType:
    """A module of the sandbox's, staged at ``path``, loaded as ``module_name``.

    Its code compiled by the sandbox (``<name>.code`` beside it, see ``precompiled.py``)
    is run where this interpreter can load it; the source is compiled otherwise.
    """
    path = os.fspath(path)
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:  # pragma: no cover - a file we staged
        msg = f"cannot load the sandbox's {path!r}"
        raise ImportError(msg)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    code = _precompiled(path)
    if code is None:
        spec.loader.exec_module(module)
    else:
        exec(code, vars(module))  # the sandbox's own module, compiled by the sandbox
    return module


def _precompiled(path: str) -> types.CodeType | None:
    """The code the sandbox compiled for the module at ``path``; None: compile its source."""
    try:
        with open(path[: -len(".py")] + ".code", "rb") as file:
            data = file.read()
    except OSError:
        return None
    magic = importlib.util.MAGIC_NUMBER.hex()
    expected = f"{sys.implementation.cache_tag}:{magic}:{sys.flags.optimize}".encode()
    first, _, blob = data.partition(b"\n")
    if first != expected:
        return None
    try:
        code = marshal.loads(blob)
    except (EOFError, ValueError, TypeError):
        return None
    return code if isinstance(code, types.CodeType) else None


def _manifest_line(inbox: Any) -> dict[str, Any] | None:
    """The parent's next line of staged files' hashes; None: none came, or not one."""
    try:
        line = json.loads(inbox.readline() or b"null")
    except (OSError, ValueError):
        return None
    if not isinstance(line, dict) or not isinstance(line.get("manifest"), dict):
        return None
    return line


def guard_suite(
    settings: dict[str, Any],
    channel: Channel,
    *,
    refuse: Sequence[str] = (),
    more: Callable[[], dict[str, Any] | None] | None = None,
) -> Callable[[Any], None]:
    """Check the staged hidden tests' module files at import (:mod:`integrity`).

    Returns what to call with ``_pytest.assertion.rewrite`` once pytest is imported,
    so that its rewriter reads the test files through the same check.  ``more`` reads
    the parent's next line of hashes, for a file still being staged.
    """
    integrity = load_sibling("integrity")
    checker = integrity.guard(
        str(settings["staged"]),
        settings["manifest"],
        lambda path, detail: channel.send("integrity", path=path, detail=detail),
        run=str(settings["run"]),
        refuse=refuse,
        more=more,
    )
    return lambda rewrite: integrity.guard_rewrite(rewrite, checker)


def _close_stdin() -> None:
    """Nothing more comes on standard input: the tests read an empty one."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)


def main() -> int:
    """Run the hidden tests as the parent's settings say; return pytest's exit code."""
    # The parent's lines come on a descriptor of our own: standard input is the tests'
    # (empty), and a reader of it must not take the staged files' hashes.
    inbox = os.fdopen(os.dup(0), "rb")
    settings = json.loads(inbox.readline())
    # "staging": the parent stages the hidden tests while this process starts, and
    # sends what each file must hash to as soon as it is staged, on lines of their
    # own: a file is imported only once its line came.
    staging = settings.pop("staging", False) is True
    _close_stdin()
    if not staging:
        inbox.close()
    _apply_limits(settings["limits"])
    _scrub_environment([str(entry) for entry in settings["pythonpath"]])
    fd = int(settings["fd"])
    # The code under test shares this process, but the processes it starts do not
    # inherit the pipe.
    os.set_inheritable(fd, False)
    channel = Channel(fd, bytes.fromhex(settings.pop("key")))
    # Confined before pytest is imported, so everything that runs here is; the
    # report goes out before any workspace code could have the key.
    confined = load_sibling("confinement").confine(settings.get("confine"))
    channel.send("confinement", level=confined["level"], detail=confined["detail"])
    if not staging:
        guard_rewrite = guard_suite(settings, channel)
    try:
        import pytest
    except ImportError as exc:
        channel.send("fatal", detail=f"pytest cannot be imported: {exc}")
        return 3
    from _pytest.assertion import rewrite

    if staging:
        staged = _manifest_line(inbox)
        if staged is None:
            channel.send("fatal", detail="the staged suite's manifest never arrived")
            return 3
        settings["manifest"] = staged["manifest"]
        more = None if staged.get("more") is not True else (lambda: _manifest_line(inbox))
        guard_rewrite = guard_suite(settings, channel, more=more)
    guard_rewrite(rewrite)
    channel.send("hello", pytest=pytest.__version__, pid=os.getpid())
    reporter = Reporter(channel, list(settings["pythonpath"]))
    roots = settings.get("workspace") or settings["pythonpath"]
    probes = load_sibling("probes")
    suite_code = probes.SuiteCode(str(settings["suite"]))
    suite_code.guard(rewrite)
    reporter.comparisons = probes.guard_comparisons(
        str(settings["suite"]),
        lambda detail: channel.send("liar", id=reporter.current, detail=detail),
        workspace_like=probes.WorkspaceTypes(
            [roots] if isinstance(roots, str) else roots, suite_code=suite_code
        ),
        opaque=probes.opaque_probe(),
    )
    code = int(pytest.main(list(settings["args"]), plugins=[reporter]))
    channel.send("finish", exit=code)
    return code


if __name__ == "__main__":
    status = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)
