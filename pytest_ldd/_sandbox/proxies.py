"""The judge's side of ``isolation="process"``: the workspace as proxies, never as code.

The judge process runs pytest on the hidden tests and never imports, executes or
unpickles anything of the workspace.  A meta-path finder, last on ``sys.meta_path``
(so the standard library, installed modules and the hidden folder's own modules
always resolve first and normally), answers imports of modules that live in the
workspace's ``pythonpath`` folders with a :class:`ProxyModule`.  Every use of a
workspace object is a request to the subject process (:mod:`subject`), and what
comes back is data (:mod:`wire`) or a stand-in (:mod:`stubs`).

A :class:`Connection` is one conversation with one subject.  It is made of
:class:`boot.Boot` (the process, its handshake, its deadlines), a
:class:`handles.HandleTable` (numbers both ways, lifetimes), the stand-in maker and
:class:`calls.Calls` (requests, answers and errors on the wire), and it adds what is
the judge's alone: the lock that keeps one request in flight, the policy of what the
subject may do with the judge's objects (:class:`JudgePolicy`), and the record of
failures and limits the guard plugin turns into outcomes.  The state one process
would share between the tests and the workspace (the environment, the loggers,
``random``) is kept alike by :mod:`sync`; what the tests change on the judge's side
only is noted by :mod:`watching`.

Judge objects handed to workspace code -- callables, generators and iterators,
instances of the tests' classes, mocks, exceptions -- cross as handles the subject
uses through requests; :class:`JudgePolicy` refuses what would hand it more than the
object it was given (a module, a frame, ``__globals__``, pytest's own objects, a
function that opens files or runs code).  What cannot cross is a *limit*: the test
that met it makes the verdict inconclusive.  A subject that dies, hangs past the
verdict's deadline, floods or breaks the protocol raises :class:`SubjectError` and
fails the test.  Both errors derive from ``BaseException``, so a test's ``except
Exception`` or ``pytest.raises(Exception)`` cannot swallow them.

Like the runner, this file imports only the standard library (and pytest, in the
plugin hooks); the judge loads it from a file.
"""

from __future__ import annotations

import ast
import builtins
import enum
import gc
import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import threading
import types
import unittest
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_ldd._sandbox import boot, calls, handles, stubs, sync, watching, wire
else:

    def _sibling(name: str) -> Any:
        return sys.modules.get(f"_ldd_{name}") or importlib.import_module(
            f"pytest_ldd._sandbox.{name}"
        )

    wire, handles, stubs, calls, boot, sync, watching = map(
        _sibling, ("wire", "handles", "stubs", "calls", "boot", "sync", "watching")
    )

IsolationError = calls.IsolationError
SubjectError = calls.SubjectError
Proxy = stubs.Proxy


def watch_identities(suite: str, connection: Connection) -> None:
    """``id()`` of a stand-in, taken by the hidden tests, is a limit of the test.

    The judge holds a stand-in only while something refers to it, so that the object
    it stands for dies when one process would let it die; a stand-in made again for
    the same object may get another address.  ``id(mod.thing)`` taken twice can thus
    differ where one process gives one number (``is`` holds while both are referred
    to).  Only calls from the hidden tests' own files count: the standard library's
    (``copy.deepcopy``'s memo) and pytest's uses of ``id`` are not the test's.
    """
    identity = builtins.id
    getframe = sys._getframe
    kinds = (stubs.Proxy, stubs.ValueProxy)

    def id(obj: Any, /) -> int:
        if isinstance(obj, kinds) and getframe(1).f_code.co_filename.startswith(suite):
            connection.limit(_IDENTITY)
        return identity(obj)

    id.__doc__ = identity.__doc__
    builtins.id = id


_IDENTITY = (
    "the test took the id() of a workspace object: its stand-in in the judge may be"
    " made anew between two uses, with another address"
)


def watch_collector(suite: str, connection: Connection) -> None:
    """A hidden test that counts the judge's objects with ``gc`` counts stand-ins.

    ``len(gc.get_objects())`` around making and dropping a workspace object (as
    sortedcontainers' ``test_ref_counts`` takes it) counts the judge's stand-ins and
    descriptions, which outlive the object until their release is sent: the test is
    inconclusive if it fails, never failed.  Only calls from the hidden tests' files
    count.
    """
    getframe = sys._getframe

    def watched(original: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if getframe(1).f_code.co_filename.startswith(suite):
                connection.doubt(_COLLECTOR)
            return original(*args, **kwargs)

        call.__name__ = original.__name__
        call.__doc__ = original.__doc__
        return call

    for name in ("get_objects", "get_referrers", "get_referents"):
        setattr(gc, name, watched(getattr(gc, name)))


# The audit events of starting another program.
_PROCESS_EVENTS = frozenset(
    {"subprocess.Popen", "os.posix_spawn", "os.exec", "os.spawn", "os.system"}
)
_STARTED = (
    "starting {program!r}: only the subject process runs workspace code, so a program"
    " the judge starts cannot import the workspace (in-process isolation can)"
)


def watch_processes(connection: Connection) -> None:
    """A hidden test that starts a program (``python -m pkg``) meets a limit if it fails.

    Where its authors run the suite, the package is installed, and a ``python`` it
    starts imports it.  A process the judge starts must not run workspace code (it
    would run unconfined, beside the judge), so the test is inconclusive if it fails,
    never failed.
    """

    getframe = sys._getframe

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event not in _PROCESS_EVENTS:
            return
        frame: types.FrameType | None = getframe(1)
        while frame is not None:
            if frame.f_globals.get("__name__") in _OWN_STARTERS:
                return  # the judge starting its subject
            frame = frame.f_back
        program = args[0] if args else None
        name = os.path.basename(os.fsdecode(program)) if isinstance(program, str | bytes) else "?"
        connection.doubt(_STARTED.format(program=name))

    sys.addaudithook(hook)


# The modules of the judge's own that start processes (the subject, its template).
_OWN_STARTERS = frozenset({"_ldd_boot"})


_COLLECTOR = (
    "looking at the judge's objects through gc: workspace objects are stand-ins there,"
    " held until their release reaches the subject, and the subject's own objects are"
    " not among them"
)


def identity_watch(connection: Connection) -> Callable[[Any, Any], None]:
    """What a false ``a is b`` of a hidden test tells ``connection``.

    An exception that crossed is a copy on the other side, and so are the exceptions
    chained to it there (``__cause__``, ``__context__``, a group's members): a test
    that asks whether one is the very object it raised, caught or was handed (as
    exceptiongroup's own suite does) gets an answer that one process would not give.
    """

    def crossed(value: Any) -> bool:
        return (
            isinstance(value, BaseException) and connection.stand_ins.number_of(value) is not None
        )

    def watch(left: Any, right: Any) -> None:
        if crossed(left) or crossed(right):
            connection.limit(_EXCEPTION_IDENTITY)
        elif _stand_in_type(left) != _stand_in_type(right) and (
            isinstance(left, type) and isinstance(right, type)
        ):
            # Reported only if the test fails: `type(x) is not int` stays a pass.
            connection.doubt(_TYPE_IDENTITY)

    return watch


def _stand_in_type(value: Any) -> bool:
    """Whether ``value`` is the class of a stand-in (``type(proxy)``)."""
    return isinstance(value, type) and (
        type.__subclasscheck__(stubs.Proxy, value)
        or type.__subclasscheck__(stubs.ValueProxy, value)
    )


def watch_subclassing() -> None:
    """A class statement of the tests that names a workspace class as a base is a limit.

    ``RemoteMeta`` refuses it when it is the new class's metaclass; beside a base of
    another metaclass (``class Foo(mod.Base, typing.Protocol)``) Python would stop at
    the metaclass conflict before any of it runs, so the judge's ``__build_class__``
    refuses it first.
    """
    build = builtins.__build_class__

    def __build_class__(func: Any, name: str, /, *bases: Any, **keywords: Any) -> Any:
        for base in bases:
            if isinstance(base, stubs.RemoteMeta):
                raise stubs.subclass_refused(base, name)
        return build(func, name, *bases, **keywords)

    __build_class__.__doc__ = build.__doc__
    builtins.__build_class__ = __build_class__


def is_stand_in(value: Any) -> bool:
    """Whether ``value`` stands for a workspace object: its comparisons run in the subject.

    Proxies, value mirrors (an ``IntEnum`` member, a named tuple, a ``str`` subclass of
    the workspace) and stand-in classes are; a mirrored exception is not (its
    comparisons are the exception's own).
    """
    kind = type(value)
    return (
        type.__subclasscheck__(stubs.Proxy, kind)
        or type.__subclasscheck__(stubs.ValueProxy, kind)
        or isinstance(value, stubs.RemoteMeta)
    )


__all__ = [
    "Connection",
    "IsolationError",
    "JudgePolicy",
    "Proxy",
    "ProxyModule",
    "SubjectError",
    "WorkspaceFinder",
    "is_stand_in",
    "isolation_guard",
]

_MEMORY = (
    "the test measures memory with tracemalloc in the judge, where workspace objects"
    " are stand-ins: what the subject allocates is not counted"
)
_READ_AHEAD = (
    "a workspace iterator was read in a batch ahead of a consumer that stopped early:"
    " its state may differ from what one process would show"
)
_TYPE_IDENTITY = (
    "comparing the type of a workspace object with another class by identity:"
    " the judge holds a stand-in, whose type is its own (`type(f) is types.FunctionType`"
    " is false for a workspace function)"
)
# Top-level packages that are no installed library of the tests: pytest's own (they
# are refused outright) and the sandbox's.
_NOT_INSTALLED = frozenset({"pytest", "_pytest", "pluggy", "pytest_ldd"})
# Where an interpreter's installed libraries live.
_INSTALLED_FOLDERS = frozenset({"site-packages", "dist-packages"})
_SUITE_IMPORT = (
    "workspace code imported {name!r}, a module of the hidden tests' folder: the"
    " subject process may not read that folder (jinja2's PackageLoader of its tests'"
    " res package)"
)
_INSTALLED = (
    "handing workspace code an object of {name}, a class of an installed library: in"
    " the subject process it is a stand-in, no instance of that library's class there"
)
_COPIED = (
    "handing workspace code a {kind}, which crosses as a copy: what workspace code"
    " changes in it does not reach the test's"
)
_ENUM_CLASS = (
    "handing workspace code an Enum class of the test: in the subject process it is a"
    " stand-in, which is no subclass of enum.Enum there (voluptuous asks)"
)
_EXCEPTION_IDENTITY = (
    "the test asked whether an exception that crossed between the processes is the"
    " very object it compares it with: a crossed exception, and what is chained to it,"
    " is a copy on the other side"
)
# Bytes the subject may send during one test (or collection) before it counts as
# flooding; a long suite of honest tests sends far more than this in all.
BUDGET_BYTES = 512 * 1024 * 1024
_LIFETIME = (
    "the test watches an object it lent to workspace code through a weak reference:"
    " the subject's stand-in keeps it alive until its release reaches the judge, later"
    " than one process would free it"
)
_CONCURRENT = (
    "threads of the test used workspace objects at the same time: the judge talks to"
    " the subject one request at a time, so they ran one after another"
)
_REASON_CHARS = 2000
_LIMITS_PER_TEST = 1000


# -- what the subject may do with the judge's objects --------------------------------------

# Modules whose functions and classes touch the file system, processes, the
# interpreter, code or other objects' attributes: the subject may not call them in the
# judge, nor even hold them.
_CLOSED_MODULES = frozenset(
    {
        "os", "posix", "nt", "posixpath", "ntpath", "sys", "gc", "subprocess",
        "_posixsubprocess", "shutil", "importlib", "_imp", "zipimport", "ctypes", "_ctypes",
        "pickle", "_pickle", "copyreg", "marshal", "io", "_io", "socket", "_socket",
        "signal", "_signal", "pty", "fcntl", "mmap", "resource", "multiprocessing",
        "runpy", "code", "codeop", "pdb", "bdb", "inspect", "linecache", "tokenize",
        "tempfile", "pathlib", "glob", "zipfile", "tarfile", "atexit", "faulthandler",
        "tracemalloc", "sysconfig", "site", "webbrowser", "urllib", "http", "ftplib",
        "smtplib", "_thread", "threading", "asyncio", "concurrent", "types", "string",
        "unittest", "_pytest", "pytest", "pluggy", "py", "_ldd",
    }
)  # fmt: skip
# Objects of these modules stay the judge's, whatever their class: its machinery.
_JUDGE_MACHINERY = frozenset({"_pytest", "pytest", "pluggy", "py", "_ldd"})
# Builtin functions the subject may have: those that do not reach beyond their arguments.
_OPEN_BUILTINS = frozenset(
    {
        "abs", "all", "any", "ascii", "bin", "callable", "chr", "divmod", "format", "hash",
        "hex", "id", "isinstance", "issubclass", "iter", "len", "max", "min", "next", "oct",
        "ord", "pow", "repr", "round", "sorted", "sum", "aiter", "anext",
    }
)  # fmt: skip
# Methods of builtin types that read arbitrary attributes of their arguments.
_REFLECTIVE_METHODS = frozenset(
    {
        "format",
        "format_map",
        "__getattribute__",
        "__setattr__",
        "__delattr__",
        "__init__",
        "__new__",
        "__subclasses__",
        "__reduce__",
        "__reduce_ex__",
        "__init_subclass__",
    }
)
# The types of methods of builtin types taken from the class (``str.format``).
_UNBOUND = (
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.ClassMethodDescriptorType,
)
# Classes of open modules that still read or run what their arguments name.
_CLOSED_CLASSES = frozenset(
    {
        ("operator", "attrgetter"),
        ("operator", "methodcaller"),
        ("functools", "singledispatchmethod"),
        ("string", "Formatter"),
        ("dataclasses", "make_dataclass"),
    }
)
# Attributes of judge objects the subject may read, among the dunder names: what
# introspection and the protocols read, never a way into the judge's globals, frames,
# code or other objects.
_READABLE = frozenset(
    {
        "__name__", "__qualname__", "__module__", "__doc__", "__annotations__",
        "__wrapped__", "__dict__", "__defaults__", "__kwdefaults__", "__text_signature__",
        "__isabstractmethod__", "__func__", "__mro__", "__bases__", "__dataclass_fields__",
        "__dataclass_params__", "__attrs_attrs__", "__slots__", "__match_args__",
        "__members__", "__origin__", "__args__", "__parameters__", "__orig_bases__",
        "__class_getitem__", "__version__", "__all__", "__fields__", "__notes__",
        "__cause__", "__context__", "__suppress_context__", "__getstate__",
    }
    | handles.SPECIAL_NAMES
)  # fmt: skip
_SETTABLE = frozenset(
    {"__doc__", "__name__", "__qualname__", "__module__", "__wrapped__", "__signature__"}
)
# Operations the subject may ask of judge objects (not imports, nor module namespaces).
_SERVED = frozenset(calls.OPS)
# Operations that only compare or print a class, which any class may be asked.
_ON_ANY_CLASS = frozenset({"repr", "str", "format", "hash", "eq", "ne", "bool", "dir"})
# Operations that run the target's own code, as a call does (the descriptor protocol
# binds a function, runs a property's getter or setter).
_CALLING = frozenset({"call", "callsync", "callhandling", "get", "set", "delete", "set_name"})


class Withheld:
    """What the judge takes for a class of its own the subject named but may not use."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<a class of the judge that workspace code may not use>"


def _top(module: Any) -> str:
    name = module if type(module) is str else ""
    top = name.partition(".")[0]
    return "_ldd" if top.startswith("_ldd_") else top


def _module_of_class(cls: type) -> str:
    module = type.__dict__["__module__"].__get__(cls)
    return module if type(module) is str else ""


class JudgePolicy:
    """What the subject may receive from the judge, and do with what it received.

    The subject may use what a test handed it as the test could: call it, iterate it,
    read its attributes, compare it.  It may not reach *through* it, even with crafted
    requests naming any handle it was ever given (the classes of the objects it got
    included):

    - no module, frame, traceback, code object or cell crosses, nor any object of
      pytest's or the runner's, nor a function or class of a module that opens files,
      runs processes or code, or reads attributes by name (:data:`_CLOSED_MODULES`);
    - no dunder attribute is read outside the introspection ones (``__globals__``,
      ``__closure__``, ``__code__``, ``__self__``, ``__class__`` are not);
    - a class is called, or its attributes read, only when it is neither a builtin
      type nor one of a closed module (so ``type(f)(code, globals)`` cannot be
      built in the judge);
    - no attribute of a class, a module or a test class's instance is set, and no
      dunder attribute outside a function's name and docs, or one only a function's
      own namespace can hold (click's ``__click_params__``; never pytest's).

    A refusal is an :class:`IsolationError`: a limit of the isolation, which makes the
    verdict inconclusive, never a failure of the workspace.
    """

    def __init__(
        self,
        limit: Callable[[str], None] = lambda reason: None,
        doubt: Callable[[str], None] = lambda reason: None,
    ) -> None:
        self._by_type: dict[type, str | None] = {}
        self._limit = limit
        self._doubt = doubt
        self._installed: dict[type, str | None] = {}
        # The hidden tests' folder (set with the connection's): its classes are the
        # tests' own, not an installed library's.
        self.suite_root: str | None = None

    # -- lending ------------------------------------------------------------------------
    def check_lend(self, obj: Any) -> bool:
        """Whether ``obj`` crosses as a handle; :class:`IsolationError` if not at all.

        A class crosses always, since the subject needs it to make the type of the
        objects it gets; but one it may not use (a builtin type, a closed module's) is
        only described, and naming it back in a request is refused.
        """
        if isinstance(obj, type):
            if type.__subclasscheck__(enum.Enum, obj):
                self._doubt(_ENUM_CLASS)
            return self._class_refusal(obj) is None
        reason = self.refusal(obj)
        if reason is not None:
            msg = (
                f"isolation='process' cannot pass {reason} to workspace code;"
                " use isolation='inprocess'"
            )
            raise IsolationError(msg)
        installed = self._installed_class(type(obj))
        if installed is not None:
            self._doubt(_INSTALLED.format(name=installed))
        if weakref.getweakrefcount(obj) and not callable(obj):
            # more-itertools' lifecycle tests watch their elements die as the
            # workspace's iterator moves on (functions and classes are left out: caches
            # hold weak references to them, and nobody watches them die).
            self._limit(_LIFETIME)
        return True

    def _installed_class(self, cls: type) -> str | None:
        """``module.Class`` where ``cls`` is a class of an installed library, else None.

        Neither the standard library's, nor the hidden tests' (their files are in the
        suite's folder), nor pytest's or the sandbox's: a library the judge imported
        from a ``site-packages`` folder, as the subject imports its own copy.
        """
        if cls in self._installed:
            return self._installed[cls]
        found = None
        module = getattr(cls, "__module__", None)
        top = module.partition(".")[0] if type(module) is str else ""
        loaded = sys.modules.get(top)
        where = getattr(loaded, "__file__", None)
        if (
            top
            and top not in sys.stdlib_module_names
            and top not in _NOT_INSTALLED
            and isinstance(where, str)
            and _INSTALLED_FOLDERS.intersection(Path(where).parts)
            and not (self.suite_root and os.path.realpath(where).startswith(self.suite_root))
            and not isinstance(loaded, ProxyModule)
        ):
            found = f"{module}.{cls.__qualname__}"
        self._installed[cls] = found
        return found

    def check_copy(self, value: Any) -> None:
        """A defaultdict, OrderedDict, Counter, deque or ast node of the test crosses as a copy.

        What workspace code changes in it stays in the subject (jsonpointer fills a
        ``defaultdict``): a test that fails after handing one over cannot be judged.
        """
        kind = type(value).__name__
        if isinstance(value, ast.AST):
            kind = f"ast.{kind} node"
        self._doubt(_COPIED.format(kind=kind))

    def described_only(self, number: int) -> Any:
        """A :class:`Withheld` placeholder for a class the subject may not use, and a limit."""
        self._limit(
            "isolation='process' does not let workspace code use a class of the judge"
            " it only knows as the type of an object (a builtin type, or one that reaches"
            " the file system or code)"
        )
        return Withheld()

    def refusal(self, obj: Any) -> str | None:
        """Why ``obj`` may not cross, or None."""
        if handles.named_stdlib(obj) is not None:
            # The subject's own of that name arrives (a module, a class, getattr()):
            # asked of a judge object there, it makes requests the judge answers or refuses.
            return None
        if isinstance(obj, type):
            return self._class_refusal(obj)
        cls = type(obj)
        try:
            known = self._by_type[cls]
        except KeyError:
            known = self._by_type[cls] = self._instance_refusal(cls)
        if known is not None:
            return known
        if cls is types.FunctionType or cls is types.BuiltinFunctionType:
            return self._function_refusal(obj)
        if cls is types.MethodType:
            return self.refusal(obj.__func__)
        if cls in _UNBOUND and getattr(obj, "__name__", None) in _REFLECTIVE_METHODS:
            # str.format(spec, obj) reads the attributes the spec names, of any object.
            return f"the method {getattr(obj, '__qualname__', '?')}"
        return None

    @staticmethod
    def _instance_refusal(cls: type) -> str | None:
        kinds = (types.ModuleType, types.FrameType, types.TracebackType, types.CodeType,
                 types.CellType)  # fmt: skip
        if issubclass(cls, kinds):
            return f"a {cls.__name__} object"
        module = _module_of_class(cls)
        name = f"{module}.{cls.__qualname__}"
        if issubclass(cls, BaseException):
            return None
        if _top(module) in _JUDGE_MACHINERY:
            return f"an object of the judge's own machinery ({name})"
        if _top(module) == "unittest" and not module.startswith("unittest.mock"):
            return f"an object of the test runner ({name})"
        return None

    @staticmethod
    def _function_refusal(function: Any) -> str | None:
        owner = getattr(function, "__self__", None)
        name = getattr(function, "__qualname__", None) or getattr(function, "__name__", "?")
        module: Any = None
        if isinstance(function, types.BuiltinFunctionType):
            if isinstance(owner, types.ModuleType):
                module = owner.__name__
                if module == "builtins":
                    # (getattr() and the others named in handles crossed by name above.)
                    short = function.__name__
                    return None if short in _OPEN_BUILTINS else f"the builtin {short}()"
            elif isinstance(owner, type) and function.__name__ in _REFLECTIVE_METHODS:
                return f"the method {name}"
            else:
                return None  # a method of an object the test handed over
        else:
            module = getattr(function, "__module__", None)
        if _top(module) in _CLOSED_MODULES and not str(module).startswith("unittest.mock"):
            return f"the function {module}.{name}"
        return None

    @staticmethod
    def _class_refusal(cls: type) -> str | None:
        """Why the subject may not call ``cls``, read its attributes or name it, or None."""
        module = _module_of_class(cls)
        qualname = type.__dict__["__qualname__"].__get__(cls)
        if module == "builtins":
            # Builtin types cross by name; the others (function, code, generator, ...)
            # only describe their instances and are never used in the judge.
            return f"the builtin type {qualname}"
        top = _top(module)
        closed = top in _CLOSED_MODULES and not module.startswith("unittest.mock")
        if closed or (module, qualname) in _CLOSED_CLASSES or (top, qualname) in _CLOSED_CLASSES:
            return f"the class {module}.{qualname}"
        return None

    # -- serving ------------------------------------------------------------------------
    def check_op(self, op: str, args: tuple[Any, ...]) -> None:
        """Raise :class:`IsolationError` when the subject may not ask ``op`` of the judge."""
        if op not in _SERVED:
            msg = f"the subject may not ask the judge to {op!r:.40}"
            raise IsolationError(msg)
        target = args[0] if args else None
        if isinstance(target, type) and op not in _ON_ANY_CLASS:
            reason = self._class_refusal(target)
            if reason is not None:
                msg = f"isolation='process' does not let workspace code use {reason} in the judge"
                raise IsolationError(msg)
        if op in _CALLING:
            reason = self.refusal(target)
            if reason is not None:
                msg = f"isolation='process' does not let workspace code call {reason} in the judge"
                raise IsolationError(msg)
        if op in ("getattr", "setattr", "delattr"):
            if len(args) < 2 or type(args[1]) is not str:
                msg = "an attribute request without a name"
                raise IsolationError(msg)
            self._check_name(op, target, args[1])

    @staticmethod
    def _check_name(op: str, obj: Any, name: str) -> None:
        dunder = name.startswith("__") and name.endswith("__")
        if dunder and _own_dunder(obj, name):
            return
        if name.startswith("_ldd_") or (dunder and name not in _READABLE):
            msg = f"isolation='process' does not let workspace code read {name} of a judge object"
            raise IsolationError(msg)
        if op == "getattr":
            return
        if (
            isinstance(obj, (type, types.ModuleType, unittest.TestCase))
            or type(obj).__name__.startswith("Test")
            or (dunder and name not in _SETTABLE)
        ):
            msg = (
                f"isolation='process' does not let workspace code change {name} of"
                f" {type(obj).__qualname__} in the judge; use isolation='inprocess'"
            )
            raise IsolationError(msg)


# Names a function's own namespace may hold that the judge's machinery reads: pytest's
# collection (``__test__``, ``__pytest_wrapped__``) and ``copy``, which looks for its
# hooks on the object itself.
_MACHINERY_DUNDERS = frozenset({"__test__", "__copy__", "__deepcopy__"})


def _own_dunder(obj: Any, name: str) -> bool:
    """Whether ``name`` is a dunder only a judge function's own namespace can hold.

    click's decorators, applied in the tests, keep their parameters in
    ``f.__click_params__``: a name no function type defines (so never ``__globals__``,
    ``__code__`` or ``__reduce_ex__``) is the function's data, read and written like
    any other attribute of it.
    """
    return (
        type(obj) is types.FunctionType
        and not hasattr(types.FunctionType, name)
        and name not in _MACHINERY_DUNDERS
        and not name.startswith("__pytest")
        and not name.startswith("__ldd")
    )


# -- the connection ------------------------------------------------------------------


def _subject_settings(
    pythonpath: Sequence[str], confine: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The settings line a subject reads first: its ``pythonpath`` and confinement policy."""
    return {"pythonpath": list(pythonpath), "confine": dict(confine or {"mode": "none"})}


def _is_hello(payload: Any) -> bool:
    """``("hello", pid, (level, detail))``: the subject's first message.

    The pid is the subject's own view: in a wrapper's PID namespace it is not the one
    the judge started.
    """
    return (
        type(payload) is tuple
        and len(payload) == 3
        and payload[0] == "hello"
        and type(payload[1]) is int
        and type(payload[2]) is tuple
        and len(payload[2]) == 2
        and payload[2][0] in ("landlock", "none")
        and type(payload[2][1]) is str
    )


def _working_folder() -> str | None:
    """``os.getcwd()``, or None where the folder was removed under the process."""
    try:
        return os.getcwd()
    except OSError:
        return None


class Connection:
    """The judge's end of the conversation with one subject process."""

    def __init__(self, boot_: boot.Boot, workspace: Sequence[str] = ()) -> None:
        self.boot = boot_
        self.failures: list[str] = []
        self.limits: list[str] = []
        self.lock = threading.RLock()
        # The hidden tests' folder (``folder/``), when the paths into it are watched.
        self.suite_root: str | None = None
        # The hidden tests' entries linked into the working folder (the workspace copy):
        # a relative path that starts with one of them leads into the hidden tests too.
        self.suite_links: frozenset[str] = frozenset()
        self.suite_paths: list[str] = []
        self.started = False
        self.table = handles.HandleTable(names_modules=True)
        self.stand_ins = JudgeStandIns(self, self.table, may_import=False)
        self.drains = stubs.Drains(self)
        self.random = sync.RandomSync(self)
        self.policy = JudgePolicy(self.limit, self.doubt)
        self.calls = calls.Calls(
            own=b"J",
            other=b"H",
            table=self.table,
            stand_ins=self.stand_ins,
            ops=calls.OPS,
            policy=self.policy,
            read_fd=boot_.read_fd,
            write_fd=boot_.write_fd,
            wait=boot_.wait,
            budget=BUDGET_BYTES,
            lock=self.lock,
        )
        self.calls.on_error = self._raised
        self.environment = sync.EnvironmentSync(self)
        self.logging = sync.LoggingSync(self)
        self.told_argv: tuple[Any, list[str]] = (None, [])
        # The working folder the subject was last told of: the judge's at the start,
        # which the subject shares (both start in the run's working folder).
        self.told_cwd = _working_folder()
        # sys.stdin as the running test found it (see isolation_guard), else None.
        self.stdin: Any = None
        self.tzset = False  # the tests called time.tzset() since the last message
        # Limits of the running test that count only if it fails (see doubt).
        self.doubts: list[str] = []
        # The subject's stand-ins bind a judge function's arguments (stubs._FunctionCall);
        # the judge's stand-ins of workspace functions call as they are.
        self.arity_calls: dict[int, Any] = {}
        self.calls.also_before_send = self._before_send
        self.peer = self.calls.peer
        self.peer.on_output = self._output
        self.peer.on_released = self.table.release
        self.peer.on_cannot_cross = self.refuse
        self.calls.containers.on_limit = self.limit
        self.remote_errors: dict[int, BaseException] = {}
        # (module number, name) -> the stand-in that ``module.name`` gave; the subject
        # says when one changes (see subject.ModuleWatch).
        self.module_attributes: dict[tuple[int, str], Any] = {}

    @classmethod
    def start(
        cls,
        argv: Sequence[str],
        *,
        cwd: str,
        sources: dict[str, bytes],
        pythonpath: Sequence[str],
        deadline: float,
        confine: Mapping[str, Any] | None = None,
        hash_seed: str | None = None,
        code: dict[str, bytes] | None = None,
    ) -> Connection:
        """Start the subject and send it its code (it boots while the judge imports pytest).

        ``sources`` holds ``confinement`` and the modules of ``boot.SUBJECT_MODULES``;
        the subject applies ``confine`` (a :mod:`confinement` policy) before it runs
        anything else.  Never blocks: what the pipe does not take now, :meth:`hello`
        sends.  ``hash_seed`` is the judge's own PYTHONHASHSEED, which the subject
        starts with; ``code``, ``sources`` compiled (``boot.compiled``), spares the
        subject compiling them.
        """
        started = boot.Boot.start(
            argv,
            cwd=cwd,
            sources=sources,
            settings=_subject_settings(pythonpath, confine),
            deadline=deadline,
            hash_seed=hash_seed,
            code=code,
        )
        return cls(started)

    @classmethod
    def fork(
        cls,
        template: boot.Template,
        *,
        cwd: str,
        pythonpath: Sequence[str],
        deadline: float,
        limits: Mapping[str, Any],
        confine: Mapping[str, Any] | None = None,
    ) -> Connection:
        """A subject forked from ``template`` (a warm judge's), as :meth:`start` starts one.

        ``limits`` are this judge's own resource limits, which a started subject would
        inherit.  Raises :class:`boot.BootError` when the template cannot serve.
        """
        settings = _subject_settings(pythonpath, confine)
        return cls(
            template.fork(cwd=cwd, settings=settings, limits=dict(limits), deadline=deadline)
        )

    def hello(self) -> str | None:
        """Send the subject its code and wait for its hello; the reason it failed, or None."""
        try:
            message = self.boot.hello(self.peer.receive)
        except (OSError, wire.WireError) as exc:
            return self._break(f"the subject process did not start: {exc}")
        if message[:2] != ("r", -1) or not _is_hello(message[2]):
            return self._break(f"the subject process did not start: {message!r:.200}")
        # Sent before the subject imported anything of the workspace: trustworthy.
        _, _, report = message[2]
        self.confinement = {"level": report[0], "detail": report[1][:500]}
        self.started = True
        return None

    confinement: Mapping[str, str] = types.MappingProxyType(
        {"level": "none", "detail": "not started"}
    )

    @property
    def broken(self) -> str | None:
        """Why the subject was ended, or None while it serves."""
        return self.boot.broken

    def _break(self, reason: str) -> str:
        already = self.boot.broken is not None
        text = self.boot.kill(reason)
        if not already:
            self.failures.append(text)
        return text

    def close(self) -> None:
        """End the subject."""
        self.boot.close()

    # -- what proxies ask ----------------------------------------------------------------
    def request(self, op: str, *args: Any, isolate: bool = True) -> Any:
        """One request to the subject; its answer, or its exception raised here."""
        if self.boot.broken is not None:
            msg = f"process isolation: the subject is gone: {self.boot.broken}"
            self.failures.append(msg)  # this test fails too, whatever it catches
            raise SubjectError(msg)
        if not self.lock.acquire(blocking=False):
            # Another thread of the test is in a conversation with the subject: this one
            # waits its turn, where in one process both would run at once (and a thread
            # that waits in the subject for what this one would do never sees it).
            self.limit(_CONCURRENT)
            self.lock.acquire()
        try:
            return self._request(op, args, isolate)
        finally:
            self.lock.release()

    def _request(self, op: str, args: tuple[Any, ...], isolate: bool) -> Any:
        """One request, with the lock held: its answer, or its exception raised here."""
        # Read without importing, and safely while another thread is importing it.
        tracing = getattr(sys.modules.get("tracemalloc"), "is_tracing", None)
        if tracing is not None and tracing():
            self.limit(_MEMORY)
        if self.suite_root is not None:
            self._note_suite_paths(args)
        if self.stdin is not None and sys.stdin is not self.stdin:
            # Workspace code reads the subject's standard input, not the test's.
            watching.note_judge_side("sys.stdin")
        try:
            return self.calls.request(op, args)
        except wire.CannotCross as exc:
            # What the test handed over cannot be encoded: this test's limit.
            reason = f"isolation='process' cannot carry what was handed over: {exc}"
            raise self.refuse(reason) from None
        except wire.WireError as exc:
            reason = self._break(str(exc))
            msg = f"process isolation: {reason}"
            raise SubjectError(msg) from None
        except IsolationError as exc:
            if isolate:
                self.limit(str(exc))
            raise
        except RecursionError as exc:
            if id(exc) in self.remote_errors:
                raise  # the workspace's own, raised in the subject: the test's to see
            reason = self._break("requests nested too deep between judge and subject")
            raise SubjectError(reason) from None

    def _note_suite_paths(self, args: tuple[Any, ...]) -> None:
        """Note a path into the hidden tests' folder handed to workspace code.

        The subject may not read that folder (its data may be a test's expected
        answers): a test that fails after handing one over met a limit.
        """
        root = self.suite_root
        assert root is not None
        for value in _shallow(args):
            # The judge's own strings and paths only: a stand-in's __fspath__ would
            # be one more request.
            if type(value) is str or isinstance(value, PurePath):
                text = str(value)
                into = text.startswith(root) or (
                    self.suite_links and text.replace("\\", "/").split("/")[0] in self.suite_links
                )
                if into and len(self.suite_paths) < _LIMITS_PER_TEST:
                    self.suite_paths.append(text)

    def binary(self, op: str, left: Any, right: Any) -> Any:
        try:
            return self.request(op, left, right, isolate=False)
        except IsolationError:
            return NotImplemented

    def getattr(self, obj: Any, name: str) -> Any:
        """``getattr`` in the subject.

        Once the subject is gone, a special name reads as missing: ``hasattr`` probes of
        pytest's own reporting (``inspect.getmodule`` asks every module for ``__file__``)
        must not turn into an internal error.  The test in progress fails all the same,
        since the guard saw the failure.
        """
        try:
            if name == "__signature__":
                return calls.signature_from(self.request("signature", obj))
            return self.request("getattr", obj, name)
        except SubjectError:
            if name.startswith("__") and name.endswith("__"):
                raise AttributeError(name) from None
            raise

    def protocol(self, reason: str) -> BaseException:
        """The error for an answer that breaks the protocol: the subject is ended."""
        return SubjectError(f"process isolation: {self._break(reason)}")

    def refuse(self, reason: str) -> BaseException:
        """The error for what cannot cross: a limit of the isolation for this test."""
        self.limit(reason)
        return IsolationError(reason)

    def limit(self, reason: str) -> None:
        """This test met a limit of the isolation: the verdict cannot vouch for it.

        Bounded per test, never per run: a test that meets the same limit on each of
        ten thousand requests (memory traced in a loop) must not use up what later
        tests need to report theirs (the list is cleared when a test ends).
        """
        if len(self.limits) < _LIMITS_PER_TEST:
            self.limits.append(reason[:_REASON_CHARS])

    def doubt(self, reason: str) -> None:
        """Note what makes the running test inconclusive if it fails (never if it passes)."""
        if reason not in self.doubts and len(self.doubts) < _LIMITS_PER_TEST:
            self.doubts.append(reason)

    def _before_send(self) -> None:
        self.random.before_send()
        self.environment.before_send()
        self.logging.before_send()
        self._sync_argv()
        self._sync_cwd()
        if self.tzset:  # after the environment: TZ first, then time.tzset()
            self.tzset = False
            self.peer.outbox.append((14, 0))

    def _sync_argv(self) -> None:
        """``sys.argv`` as the tests set it, in the subject too (only plain strings)."""
        argv = sys.argv
        told, value = self.told_argv
        if argv is told and argv == value:
            return
        if type(argv) is list and all(type(arg) is str for arg in argv):
            self.told_argv = (argv, list(argv))
            self.peer.outbox.append((13, list(argv)))

    def _sync_cwd(self) -> None:
        """The working folder as the tests set it (``monkeypatch.chdir``), in the subject too."""
        now = _working_folder()
        if now is not None and now != self.told_cwd:
            self.told_cwd = now
            self.peer.outbox.append((15, now))

    def _raised(self, exc: BaseException) -> BaseException:
        """An exception the subject reported, before the test sees it."""
        if isinstance(exc, ModuleNotFoundError) and self._of_the_suite(exc.name):
            self.doubt(_SUITE_IMPORT.format(name=exc.name))
        if self.stand_ins.number_of(exc) is None:
            # The judge's own, raised again by workspace code (a generator of the test
            # that raised it, as jsonpointer's join() passes KeyboardInterrupt on):
            # the very object, as in one process.  Workspace code cannot make one.
            return exc
        if isinstance(exc, SystemExit):
            # As in one process: pytest.raises(SystemExit) catches it (a CLI's
            # argparse error), and pytest fails the test it escapes from.
            return SystemExit(*exc.args)
        if isinstance(exc, KeyboardInterrupt):
            # It would abort the judge's session: the test that met it fails instead.
            reason = f"workspace code raised {type(exc).__name__}{exc.args!r:.200}"
            self.failures.append(reason)
            return SubjectError(f"process isolation: {reason}")
        self.remote_errors[id(exc)] = exc
        if len(self.remote_errors) > 1000:
            self.remote_errors.pop(next(iter(self.remote_errors)))
        return exc

    def _of_the_suite(self, name: Any) -> bool:
        """Whether the judge finds module ``name`` in the hidden tests' folder."""
        if type(name) is not str or not name or self.suite_root is None:
            return False
        top = name.partition(".")[0]
        try:
            spec = importlib.machinery.PathFinder.find_spec(top)
        except (ImportError, ValueError):
            return False
        origins = [spec.origin, *(spec.submodule_search_locations or ())] if spec else []
        return any(
            isinstance(origin, str) and os.path.realpath(origin).startswith(self.suite_root)
            for origin in origins
        )

    def _output(self, stream: int, payload: Any) -> None:
        if stream == 4:
            self.limit(payload)
        elif stream == 5:
            self.module_attributes.pop(payload, None)
        elif stream == 7:
            self.random.said()
        elif stream == 11:
            sync.logged(payload)
        elif stream not in (9, 10, 12, 13):  # the judge says these, never the subject
            sync.printed(stream, payload)

    def end_of_test(self) -> None:
        """Forget what only the test that ended could still hold (its limits are reported)."""
        self.peer.received = 0
        self.limits.clear()
        # What crossed during the test is no longer the same object on both sides.
        self.calls.containers.forget()
        self.calls.values.forget()
        if self.started and self.boot.broken is None:
            self.peer.outbox.append((9, 0))
        if self.drains.leftovers():
            self.limit(_READ_AHEAD)
        self.remote_errors.clear()
        self.calls.tracebacks.clear()
        self.table.sweep()


class JudgeStandIns(stubs.StandIns):
    """The judge's stand-ins: the subject's modules too, as :class:`ProxyModule`."""

    def module(self, number: int, extra: Any) -> Any:
        if type(extra) is not tuple or len(extra) != 2 or type(extra[0]) is not str:
            msg = "a malformed module handle"
            raise wire.WireError(msg)
        module = ProxyModule(extra[0], number, extra[1] is True, self.link)
        self.table.keep(number, module, forever=True)
        return module


# -- modules -------------------------------------------------------------------------

_LOCAL = frozenset(
    ("__name__", "__spec__", "__loader__", "__path__", "__package__", "__file__",
     "__cached__", "__builtins__", "__doc__", "_ldd_id", "_ldd_link")
)  # fmt: skip


_READ_REMOTELY = frozenset(("__file__", "__cached__", "__doc__"))


class _RemoteNamespace(Mapping[str, Any]):
    """A workspace module's ``__dict__``, read in the subject entry by entry."""

    def __init__(self, module: ProxyModule) -> None:
        self._module = module

    def __getitem__(self, name: str) -> Any:
        return self._module._ldd_link.request("lookup", self._module, name)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._module._ldd_link.request("keys", self._module)))

    def __len__(self) -> int:
        return len(list(self))


class ProxyModule(types.ModuleType):
    """A workspace module: its attributes live in the subject."""

    _ldd_link: Any

    @property
    def __dict__(self) -> Mapping[str, Any]:  # type: ignore[override]
        return _RemoteNamespace(self)

    # The module's docstring is the subject's: ModuleType's own None in this instance's
    # namespace would answer first (``'tlz' in tlz.__doc__``).
    __doc__ = property(
        lambda self: object.__getattribute__(self, "_ldd_link").getattr(self, "__doc__"),
        doc="A workspace module: its attributes live in the subject.",
    )

    def __init__(self, name: str, number: int, is_package: bool, link: Any) -> None:
        super().__init__(name)
        object.__setattr__(self, "_ldd_id", number)
        object.__setattr__(self, "_ldd_link", link)
        if is_package:
            object.__setattr__(self, "__path__", [])
        # What the import system sets in one process (the judge's spec cannot know
        # whether the subject's module is a package: tlz's tests read it).
        package = name if is_package else name.rpartition(".")[0]
        object.__setattr__(self, "__package__", package)

    def __getattr__(self, name: str) -> Any:
        # __path__ above all stays local: the subject's folders must never reach the
        # judge's import system.  __file__ is read remotely (a path is only data).
        if name == "__builtins__":
            # What an imported module holds in one process: the builtins' namespace
            # (the judge's own; the subject's is the same).
            return builtins.__dict__
        if name.startswith("_ldd_") or (name in _LOCAL and name not in _READ_REMOTELY):
            raise AttributeError(name)
        link = object.__getattribute__(self, "_ldd_link")
        if name == "__all__":
            try:
                return link.request("getattr", self, name)
            except AttributeError:
                return link.request("public", self)
        if name.startswith("__") and name.endswith("__"):
            return link.getattr(self, name)
        key = (object.__getattribute__(self, "_ldd_id"), name)
        found = link.module_attributes.get(key)
        if found is not None:
            return found
        value = link.request("modattr", self, name)
        if link.stand_ins.number_of(value) is not None:
            link.module_attributes[key] = value
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _LOCAL:
            object.__setattr__(self, name, value)
            watching.note_local(self, name)
        elif (
            isinstance(value, ProxyModule)
            and object.__getattribute__(value, "__name__") == f"{self.__name__}.{name}"
        ):
            # The import system binding a submodule the judge imported to its parent:
            # the subject bound it when it imported it, and the package may have put
            # something else under that name since (tenacity's ``retry`` function
            # replaces its ``retry`` submodule).  One process never binds it again.
            return
        else:
            self._ldd_link.module_attributes.pop((self._ldd_id, name), None)
            self._ldd_link.request("setattr", self, name, value)

    def __delattr__(self, name: str) -> None:
        if name in _LOCAL:
            object.__delattr__(self, name)
            watching.note_local(self, name)
        else:
            self._ldd_link.module_attributes.pop((self._ldd_id, name), None)
            self._ldd_link.request("delattr", self, name)

    def __dir__(self) -> list[str]:
        return list(self._ldd_link.request("dir", self))

    def __repr__(self) -> str:
        return f"<module {self.__name__!r} (in the subject process)>"


class WorkspaceFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """First on ``sys.meta_path``: workspace modules become proxies, nothing else is touched.

    The workspace's names are found where plain pytest finds them, with the workspace
    on ``pythonpath``: after the hidden tests' own folders (pytest prepends those),
    before the installed libraries (a workspace ``packaging`` is graded, not the copy
    pytest depends on), and never for ``protected`` names -- the standard library's
    and what the judge imported before the workspace came, as in the in-process
    runner's import guard.
    """

    def __init__(
        self,
        roots: Sequence[str],
        connection: Connection,
        *,
        protected: frozenset[str] = frozenset(),
        suite: str | None = None,
    ) -> None:
        self.roots = [Path(root) for root in roots]
        self.connection = connection
        self.protected = protected
        self.suite = os.path.join(os.path.realpath(suite), "") if suite else None

    def _in_suite(self, name: str) -> bool:
        """Whether a folder of the hidden tests on ``sys.path`` holds ``name``."""
        if self.suite is None:
            return False
        entries: list[Any] = list(sys.path)  # a test may put anything there
        for entry in entries:
            if not isinstance(entry, str):
                continue
            real = os.path.join(os.path.realpath(entry or os.curdir), "")
            if real.startswith(self.suite) and (
                os.path.isdir(os.path.join(real, name))
                or os.path.isfile(os.path.join(real, f"{name}.py"))
            ):
                return True
        return False

    def _where(self, name: str) -> str | None:
        """Where the workspace's folders hold ``name`` first: ``""`` for a module of the
        workspace, the staged hidden tests' folder for an entry of theirs linked there,
        None when no folder holds it."""
        for root in self.roots:
            if (root / name).is_dir() or (root / f"{name}.py").is_file():
                return self._linked_to_suite(root, name) or ""
            try:
                if any(
                    entry.name.startswith(f"{name}.") and entry.name.endswith((".so", ".pyd"))
                    for entry in os.scandir(root)
                ):
                    return ""
            except OSError:
                continue
        return None

    def _linked_to_suite(self, root: Path, name: str) -> str | None:
        """The folder of the hidden tests that ``name`` in a workspace folder resolves
        into, or None: the staged copy is then imported, never the link."""
        if self.suite is None:
            return None
        for found in (root / name, root / f"{name}.py"):
            real = os.path.realpath(found)
            if os.path.lexists(found) and real.startswith(self.suite):
                return os.path.dirname(real)
        return None

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        parent, _, _ = fullname.rpartition(".")
        if parent:
            if not isinstance(sys.modules.get(parent), ProxyModule):
                return None
        elif fullname in self.protected or self._in_suite(fullname):
            return None
        else:
            where = self._where(fullname)
            if where is None:
                return None
            if where:
                # An entry of the hidden tests linked into a workspace folder is found
                # there, as plain pytest run from the repository's root finds it: the
                # judge imports it itself, from the staged copy the link leads to.
                return importlib.machinery.PathFinder.find_spec(fullname, [where])
        return importlib.machinery.ModuleSpec(fullname, self, origin="ldd-subject")

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = self.connection.request("import", spec.name)
        if not isinstance(module, ProxyModule):
            msg = f"the subject answered the import of {spec.name!r} with something else"
            raise SubjectError(msg)
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        # Imported: from now on its import attributes are the judge's copies only.
        object.__setattr__(module, "_ldd_imported", True)


def _shallow(args: tuple[Any, ...]) -> Iterator[Any]:
    """The arguments of a request, and the items of plain lists, tuples and dicts among
    them, three levels down (a call's arguments are a tuple in the request, and a CLI's
    ``main([path, "-r"])`` puts its paths in a list in that); at most _SHALLOW_ITEMS
    values in all, so a long list handed over costs no more than a short one."""
    level: list[Any] = list(args[:_SHALLOW_ITEMS])
    budget = _SHALLOW_ITEMS
    for _ in range(3):
        below: list[Any] = []
        for value in level[:budget]:
            yield value
            if type(value) in (list, tuple):
                below.extend(value[:budget])
            elif type(value) is dict:
                below.extend(list(value.values())[:budget])
        budget -= min(budget, len(level))
        if not budget or not below:
            return
        level = below


_SHALLOW_ITEMS = 256


def _of_workspace(value: Any) -> bool:
    """Whether ``value`` is a workspace module or stands for a workspace object."""
    return isinstance(value, ProxyModule) or is_stand_in(value)


def _linked_into(folder: str, suite: str) -> frozenset[str]:
    """The entries of ``folder`` that are links to the same entry of ``suite``.

    Read before any test runs, so before workspace code could add one of its own.
    """
    try:
        names = os.listdir(suite)
    except OSError:
        return frozenset()
    return frozenset(
        name
        for name in names
        if os.path.islink(os.path.join(folder, name))
        and os.path.realpath(os.path.join(folder, name)) == os.path.join(suite, name)
    )


def isolation_guard(
    pytest: Any, connection: Connection, channel: Any = None, suite: str | None = None
) -> Any:
    """The judge's pytest plugin: isolation failures fail the test, limits are reported.

    A test during which the subject failed never passes.  A test (or a collected
    module) during which something could not cross is reported to the parent as a
    ``inconclusive`` record: the verdict cannot vouch for it.  So is a test that
    failed after patching a module or class of the judge (``suite``: the hidden
    tests' folder, whose own modules are not the judge's).
    """
    patched: list[str] = []
    sync.forward_tzset(connection)
    sync.forward_codecs(connection)
    if suite is not None:
        connection.suite_root = os.path.join(os.path.realpath(suite), "")
        connection.policy.suite_root = connection.suite_root
        connection.suite_links = _linked_into(os.getcwd(), connection.suite_root)
        patched = watching.watch_patches(pytest, connection.suite_root, _of_workspace)

    class IsolationGuard:
        def __init__(self) -> None:
            self.seen = 0
            self.limits_seen = 0
            self.limits_reported = 0
            self.failed = False
            self.limited_fixtures: list[tuple[Any, BaseException, str]] = []

        @pytest.hookimpl(hookwrapper=True)  # type: ignore[untyped-decorator]
        def pytest_make_collect_report(self, collector: Any) -> Any:
            before = len(connection.limits)
            yield
            self._report_limits(collector.nodeid, before)

        @pytest.hookimpl(hookwrapper=True)  # type: ignore[untyped-decorator]
        def pytest_fixture_setup(self, fixturedef: Any, request: Any) -> Any:
            before = len(connection.limits)
            outcome = yield
            exc = outcome.exception
            met = connection.limits[before:]
            if isinstance(exc, Exception) and met:
                # pytest raises this very exception again for every later test that
                # uses the fixture (within its scope): those met the same limit.
                self.limited_fixtures.append((fixturedef, exc, "; ".join(dict.fromkeys(met))))

        def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
            self.seen = len(connection.failures)
            self.limits_seen = len(connection.limits)
            self.failed = False
            patched.clear()
            connection.suite_paths.clear()
            connection.doubts.clear()
            connection.stdin = sys.stdin
            if suite is not None:
                watching.watch_new_modules()

        @pytest.hookimpl(hookwrapper=True)  # type: ignore[untyped-decorator]
        def pytest_runtest_makereport(self, item: Any, call: Any) -> Any:
            outcome = yield
            report = outcome.get_result()
            failures = connection.failures[self.seen :]
            self.failed = self.failed or report.outcome == "failed"
            if failures and report.outcome == "passed" and not self.failed:
                self.failed = True
                report.outcome = "failed"
                report.longrepr = "process isolation failed during this test: " + "; ".join(
                    failures
                )
            if call.when == "setup" and call.excinfo is not None:
                self._cached_limit(item, call.excinfo.value)
            if report.outcome == "failed" and patched:
                names = ", ".join(dict.fromkeys(patched))
                connection.limit(
                    f"the test failed after patching the judge's {names}: workspace code"
                    " in the subject process reads its own, unpatched"
                )
            if report.outcome == "failed" and connection.suite_paths:
                connection.limit(
                    f"the test failed after handing workspace code the path"
                    f" {connection.suite_paths[0]!r} in the hidden tests' folder, which"
                    " the subject process may not read"
                )
            # Each of these begins with judge.FAILED_AFTER: a canary that fails by
            # design is not made inconclusive by them.
            if report.outcome == "failed" and connection.doubts:
                connection.limit("the test failed after " + "; ".join(connection.doubts))
            if report.outcome == "failed" and connection.calls.tracebacks:
                text = "\n".join(connection.calls.tracebacks[-3:])
                report.sections.append(("traceback in the subject process", text))

        def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
            self._report_limits(nodeid, self.limits_seen)
            connection.end_of_test()
            self.limits_seen = len(connection.limits)

        def _cached_limit(self, item: Any, exc: BaseException) -> None:
            """A fixture of this test failed on a limit in an earlier test: this one met it."""
            for fixturedef, raised, reason in self.limited_fixtures:
                cached = fixturedef.cached_result
                if (
                    raised is exc
                    and fixturedef.argname in item.fixturenames
                    and cached is not None
                    and cached[2] is not None
                    and cached[2][0] is exc
                ):
                    connection.limit(reason)
                    return

        def _report_limits(self, nodeid: str, before: int) -> None:
            met = connection.limits[before:]
            if met and channel is not None:
                detail = "; ".join(dict.fromkeys(met))[:2000]
                channel.send("inconclusive", id=nodeid, detail=detail)
            self.limits_reported = max(self.limits_reported, len(connection.limits))

        def after_run(self) -> None:
            """Report the limits no test or collector reported: the run's own.

            A ``conftest.py`` pytest loads before it collects anything (the hidden
            folder's own) that meets a limit ends pytest with a usage error before any
            hook of this plugin ran: the run as a whole could not be judged.
            """
            self._report_limits("", self.limits_reported)

    return IsolationGuard()
