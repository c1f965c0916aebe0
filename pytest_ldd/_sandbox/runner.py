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
6. decides every comparison of the hidden test files (after pytest's assertion
   rewriting) that a builtin subclass claims true by the builtin base's own operation
   on the underlying value as well: where the two disagree, the test fails and a
   ``liar`` record is sent;
7. leaves with ``os._exit``, so nothing the code under test registered to run at exit
   can change the exit status after pytest reported it.

It imports only the standard library and pytest (and the two files staged beside it),
because the interpreter under test need not have pytest-ldd installed.  The parent
never imports it.
"""

from __future__ import annotations

import ast
import collections
import contextlib
import hashlib
import hmac
import importlib.machinery
import importlib.util
import json
import operator
import os
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

_AUTOLOAD_OFF = "PYTEST_DISABLE_PLUGIN_AUTOLOAD"
_SCRUBBED_PREFIXES = ("PYTEST_", "PYTHON")
_IDS_PER_RECORD = 200
_DETAIL_CHARS = 2000


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
        return {"failed": "failed", "skipped": "skipped"}.get(outcome, "passed")
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


def install_import_guard() -> None:
    """Put the guard first on ``sys.meta_path``, protecting what is importable now."""
    imported = {name.partition(".")[0] for name in list(sys.modules)}
    stdlib: frozenset[str] = getattr(sys, "stdlib_module_names", frozenset())
    protected = frozenset(stdlib | imported) - {"__main__", "__mp_main__"}
    sys.meta_path.insert(0, ImportGuard(protected, [p for p in sys.path if p]))


# -- comparisons decided by the builtin base ------------------------------------------

_SCALARS = frozenset({int, float, complex, str, bytes, bool, type(None)})
_BASES = (bool, int, float, str, bytes, tuple, list, dict, frozenset, set)
# Subclasses of builtins from the standard library whose own equality is legitimate.
_OWN_EQUALITY = frozenset({collections.OrderedDict, collections.Counter, collections.defaultdict})
_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "in": lambda a, b: a in b,
    "not in": lambda a, b: a not in b,
}
_AST_OPS = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.In: "in", ast.NotIn: "not in",
}  # fmt: skip
_BYTES_SLOT: Callable[[bytes], bytes] | None = getattr(bytes, "__bytes__", None)
_PLAIN_BUDGET = 10_000
_PLAIN_DEPTH = 32
_SHOWN = 120


def _base_of(cls: type) -> type | None:
    if cls in _SCALARS:
        return cls
    for base in _BASES:
        # issubclass on a builtin consults the real MRO: the class cannot lie about it.
        if type.__subclasscheck__(base, cls):
            return base
    return None


class _Plain:
    """Turns a value into builtin values, through the builtin bases' own slots."""

    def __init__(self) -> None:
        self.budget = _PLAIN_BUDGET
        self.liar: type | None = None

    def __call__(self, value: Any, depth: int = 0) -> tuple[Any, bool]:
        cls = type(value)
        if cls in _SCALARS:
            return value, False
        base = _base_of(cls)
        if base is None or depth > _PLAIN_DEPTH or self.budget <= 0:
            return value, False  # a class of its own keeps its own equality
        self.budget -= 1
        changed = cls is not base and cls not in _OWN_EQUALITY
        if changed and self.liar is None:
            self.liar = cls
        if base is int:
            return int.__int__(value), changed
        if base is float:
            return float.__float__(value), changed
        if base is str:
            return str.__str__(value), changed
        if base is bytes:
            if _BYTES_SLOT is not None:  # Python 3.11+: the base's own slot
                return _BYTES_SLOT(value), changed
            return bytes(memoryview(value)), changed
        if base is dict:
            pairs = [(self(k, depth + 1), self(v, depth + 1)) for k, v in dict.items(value)]
            if not changed and not any(k[1] or v[1] for k, v in pairs):
                return value, False
            return {k[0]: v[0] for k, v in pairs}, True
        items = [self(item, depth + 1) for item in base.__iter__(value)]  # type: ignore[attr-defined]
        if not changed and not any(item[1] for item in items):
            return value, False
        return base(item[0] for item in items), True


def _short(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # a repr of the code under test may raise anything
        return "<unrepresentable>"
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _type_name(cls: type) -> str:
    module = type.__dict__["__module__"].__get__(cls)
    qualname = type.__dict__["__qualname__"].__get__(cls)
    return f"{module}.{qualname}" if isinstance(module, str) else str(qualname)


class Comparisons:
    """``compare(op, a, b)``: what ``a op b`` gives, failing where a look-alike lies."""

    def __init__(self, report: Callable[[str], None]) -> None:
        self._report = report

    def compare(self, op: str, left: Any, right: Any) -> Any:
        __tracebackhide__ = True
        result = _OPERATORS[op](left, right)
        if type(left) in _SCALARS and type(right) in _SCALARS:
            return result
        plain = _Plain()
        plain_left, left_changed = plain(left)
        plain_right, right_changed = plain(right)
        if not (left_changed or right_changed) or plain.liar is None:
            return result
        try:
            if not result:
                return result
        except Exception:  # a result without a truth value: not our business
            return result
        try:
            base_says = bool(_OPERATORS[op](plain_left, plain_right))
        except Exception:  # the builtin values cannot even be compared
            base_says = False
        if base_says:
            return result
        liar = plain.liar
        base = _base_of(liar)
        base_name = base.__name__ if base is not None else "builtin"
        article = "an" if base_name[0] in "aeiou" else "a"
        subject, other = (plain_left, plain_right) if left_changed else (plain_right, plain_left)
        if type(left if left_changed else right) is liar:
            detail = (
                f"result of type {_type_name(liar)} ({article} {base_name} subclass) claims"
                f" {op} {_short(other)}; its {base_name} value is {_short(subject)}"
            )
        else:
            detail = (
                f"result holding type {_type_name(liar)} ({article} {base_name} subclass)"
                f" claims {op} {_short(other)}; by builtin values it is {_short(subject)}"
            )
        self._report(detail)
        raise AssertionError(detail)


_COMPARE_MODULE = "_ldd_compare"
_COMPARE_ALIAS = "@ldd_compare"


class _CompareRewriter(ast.NodeTransformer):
    """``a op b`` (one operator, not ``is``) -> ``@ldd_compare.compare("op", a, b)``."""

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        if len(node.ops) != 1 or type(node.ops[0]) not in _AST_OPS:
            return node
        right = node.comparators[0]
        if (  # pytest's own "name in @py_builtins.locals()" checks
            isinstance(node.left, ast.Constant)
            and isinstance(right, ast.Call)
            and isinstance(right.func, ast.Attribute)
            and isinstance(right.func.value, ast.Name)
            and right.func.value.id.startswith("@py")
        ):
            return node
        name = ast.copy_location(ast.Name(_COMPARE_ALIAS, ast.Load()), node)
        func = ast.copy_location(ast.Attribute(value=name, attr="compare", ctx=ast.Load()), node)
        op = ast.copy_location(ast.Constant(_AST_OPS[type(node.ops[0])]), node)
        call = ast.Call(func=func, args=[op, node.left, right], keywords=[])
        return ast.copy_location(call, node)


def guard_comparisons(suite: str, report: Callable[[str], None]) -> None:
    """Route the hidden test files' comparisons through :class:`Comparisons`."""
    from _pytest.assertion import rewrite

    module = types.ModuleType(_COMPARE_MODULE)
    module.compare = Comparisons(report).compare  # type: ignore[attr-defined]
    sys.modules[_COMPARE_MODULE] = module
    original = rewrite.rewrite_asserts
    prefix = os.path.join(os.path.realpath(suite), "")

    def rewrite_asserts(
        mod: ast.Module, source: bytes, module_path: Any = None, config: Any = None
    ) -> None:
        original(mod, source, module_path, config)
        if module_path is None or not os.path.realpath(str(module_path)).startswith(prefix):
            return
        position = 0
        for index, node in enumerate(mod.body):
            if isinstance(node, ast.Import) and any(
                a.asname == "@py_builtins" for a in node.names
            ):
                position = index + 1
                break
        else:
            return  # nothing was rewritten (PYTEST_DONT_REWRITE): leave the module alone
        _CompareRewriter().visit(mod)
        line = getattr(mod.body[position - 1], "lineno", 1)
        at = {"lineno": line, "col_offset": 0, "end_lineno": line, "end_col_offset": 0}
        alias = ast.alias(_COMPARE_MODULE, _COMPARE_ALIAS, **at)
        mod.body.insert(position, ast.Import([alias], **at))

    rewrite.rewrite_asserts = rewrite_asserts


class Reporter:
    """The pytest plugin of the sandbox: reports collection and per-test outcomes."""

    def __init__(self, channel: Channel, pythonpath: list[str]) -> None:
        self.current = ""  # the node id of the test running now
        self._channel = channel
        self._pythonpath = pythonpath
        self._outcomes: dict[str, str] = {}

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

    def pytest_collection_finish(self, session: Any) -> None:
        ids = [item.nodeid for item in session.items]
        for start in range(0, len(ids), _IDS_PER_RECORD):
            self._channel.send("collected", ids=ids[start : start + _IDS_PER_RECORD])

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.current = nodeid

    def pytest_runtest_logreport(self, report: Any) -> None:
        before = self._outcomes.get(report.nodeid)
        self._outcomes[report.nodeid] = _phase_outcome(report.when, report.outcome, before)

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self._channel.send("test", id=nodeid, outcome=self._outcomes.pop(nodeid, "error"))


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


def _scrub_environment() -> None:
    for name in list(os.environ):
        if name.startswith(_SCRUBBED_PREFIXES):
            del os.environ[name]
    os.environ[_AUTOLOAD_OFF] = "1"


def load_sibling(name: str) -> types.ModuleType:
    """A module staged beside this file (``runner/``), loaded by its path as ``_ldd_<name>``."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_ldd_{name}", path)
    if spec is None or spec.loader is None:  # pragma: no cover - a file we staged
        msg = f"cannot load the sandbox's {path!r}"
        raise ImportError(msg)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def guard_suite(
    settings: dict[str, Any], channel: Channel, *, refuse: Sequence[str] = ()
) -> Callable[[Any], None]:
    """Check the staged hidden tests' module files at import (:mod:`integrity`).

    Returns what to call with ``_pytest.assertion.rewrite`` once pytest is imported,
    so that its rewriter reads the test files through the same check.
    """
    integrity = load_sibling("integrity")
    checker = integrity.guard(
        str(settings["staged"]),
        settings["manifest"],
        lambda path, detail: channel.send("integrity", path=path, detail=detail),
        run=str(settings["run"]),
        refuse=refuse,
    )
    return lambda rewrite: integrity.guard_rewrite(rewrite, checker)


def main() -> int:
    """Run the hidden tests as the parent's settings say; return pytest's exit code."""
    settings = json.loads(sys.stdin.buffer.readline())
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    _apply_limits(settings["limits"])
    _scrub_environment()
    fd = int(settings["fd"])
    # The code under test shares this process, but the processes it starts do not
    # inherit the pipe.
    os.set_inheritable(fd, False)
    channel = Channel(fd, bytes.fromhex(settings.pop("key")))
    # Confined before pytest is imported, so everything that runs here is; the
    # report goes out before any workspace code could have the key.
    confined = load_sibling("confinement").confine(settings.get("confine"))
    channel.send("confinement", level=confined["level"], detail=confined["detail"])
    guard_rewrite = guard_suite(settings, channel)
    try:
        import pytest
    except ImportError as exc:
        channel.send("fatal", detail=f"pytest cannot be imported: {exc}")
        return 3
    from _pytest.assertion import rewrite

    guard_rewrite(rewrite)
    channel.send("hello", pytest=pytest.__version__, pid=os.getpid())
    reporter = Reporter(channel, list(settings["pythonpath"]))
    guard_comparisons(
        str(settings["suite"]),
        lambda detail: channel.send("liar", id=reporter.current, detail=detail),
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
