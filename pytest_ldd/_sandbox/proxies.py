"""The judge's side of ``isolation="process"``: the workspace as proxies, never as code.

The judge process runs pytest on the hidden tests and never imports, executes or
unpickles anything of the workspace.  A meta-path finder, last on ``sys.meta_path``
(so the standard library, installed modules and the hidden folder's own modules
always resolve first and normally), answers imports of modules that live in the
workspace's ``pythonpath`` folders with a :class:`ProxyModule`.  Every attribute
read, call, operator, iteration and comparison on a proxy is a request to the
subject process (:mod:`subject`); the answer is data (:mod:`wire`) or a handle the
judge wraps in a proxy again:

- an object becomes a :class:`Proxy` of a class made for its remote type, with
  exactly the special methods the remote type has (so ``callable``, ``len``,
  ``iter`` and the ``collections.abc`` checks see what the workspace defined);
- a class becomes a :class:`RemoteClass`: calling it constructs remotely, and
  ``isinstance(obj, mod.Cls)`` is decided from the remote MRO the subject reported;
- an exception class becomes a judge-side exception type with the same qualified
  name, mirroring its workspace bases down to the builtin ones, so
  ``pytest.raises(mod.ParseError)``, ``pytest.raises(ValueError)`` and
  ``except KeyError`` behave as in-process; builtin exceptions are re-raised as
  themselves, the subject's traceback chained as their cause.

Judge callables passed to workspace code (a ``key=`` function, a monkeypatched
fake, a mock) cross as references the subject can only call.  Any other judge
object cannot cross: :class:`IsolationError`.  A subject that dies, hangs past the
verdict's deadline, floods or breaks the protocol raises :class:`SubjectError`; both
derive from ``BaseException``, so a test's ``except Exception`` or
``pytest.raises(Exception)`` cannot swallow them, and the judge's plugin fails the
test whatever it catches.

Like the runner, this file imports only the standard library (and pytest, in the
plugin hooks); the judge loads it from a file.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib.abc
import importlib.machinery
import os
import select
import subprocess
import sys
import threading
import time
import traceback
import types
import weakref
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

if "_ldd_wire" in sys.modules:  # loaded from a file by the judge's runner
    wire: Any = sys.modules["_ldd_wire"]
else:  # imported from the package (tests, the parent)
    from pytest_ldd._sandbox import wire

__all__ = [
    "Connection",
    "IsolationError",
    "Proxy",
    "ProxyModule",
    "RemoteClass",
    "SubjectError",
    "WorkspaceFinder",
    "isolation_guard",
]

# Bytes the subject may send over the whole run before it counts as flooding.
BUDGET_BYTES = 512 * 1024 * 1024
_TEXT_CHARS = 20_000
_HELLO_S = 30.0


class SubjectError(BaseException):
    """The subject process died, hung, flooded or sent something that is not the protocol."""


class IsolationError(BaseException):
    """Something the hidden tests asked for cannot cross between the judge and the subject."""


class RemoteTraceback(Exception):
    """The subject's traceback of an exception, chained as the judge-side exception's cause."""

    def __str__(self) -> str:
        return "\n" + str(self.args[0] if self.args else "")


_CONNECTION: Connection | None = None


def _conn() -> Connection:
    if _CONNECTION is None:
        msg = "process isolation: no subject process is connected"
        raise SubjectError(msg)
    return _CONNECTION


def _not_crossable(obj: Any) -> IsolationError:
    cls = type(obj)
    name = f"{cls.__module__}.{cls.__qualname__}"
    msg = (
        f"isolation='process' cannot pass a judge object of type {name} to workspace code"
        " (only data, workspace objects and callables cross); use isolation='inprocess'"
    )
    return IsolationError(msg)


# -- proxies -------------------------------------------------------------------------


class Proxy:
    """A workspace object that lives in the subject; every use of it is a request there."""

    __slots__ = ("__weakref__", "_ldd_id")
    _ldd_mro: frozenset[int] = frozenset()
    _ldd_name = "object"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_ldd_"):
            raise AttributeError(name)
        return _remote_attribute(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_ldd_"):
            object.__setattr__(self, name, value)
        else:
            _conn().request("setattr", self, name, value)

    def __delattr__(self, name: str) -> None:
        _conn().request("delattr", self, name)

    def __dir__(self) -> list[str]:
        return list(_conn().request("dir", self))

    def __repr__(self) -> str:
        return str(_conn().request("repr", self))

    def __str__(self) -> str:
        return str(_conn().request("str", self))

    def __format__(self, spec: str) -> str:
        return str(_conn().request("format", self, spec))

    def __eq__(self, other: object) -> Any:
        return _binary("eq", self, other)

    def __ne__(self, other: object) -> Any:
        return _binary("ne", self, other)

    def __lt__(self, other: object) -> Any:
        return _binary("lt", self, other)

    def __le__(self, other: object) -> Any:
        return _binary("le", self, other)

    def __gt__(self, other: object) -> Any:
        return _binary("gt", self, other)

    def __ge__(self, other: object) -> Any:
        return _binary("ge", self, other)

    def __hash__(self) -> int:
        value = _conn().request("hash", self)
        if type(value) is not int:
            raise _conn().protocol(f"the subject answered hash() with {type(value).__name__}")
        return value

    def __copy__(self) -> Any:
        return _conn().request("copy", self)

    def __deepcopy__(self, memo: Any) -> Any:
        return _conn().request("deepcopy", self)

    def __reduce_ex__(self, protocol: Any) -> Any:
        msg = (
            f"isolation='process' cannot pickle the workspace object {self._ldd_name}: it"
            " lives in the subject process; use isolation='inprocess'"
        )
        raise IsolationError(msg)

    def __del__(self) -> None:
        connection = _CONNECTION
        if connection is not None and not connection.broken:
            connection.released(self._ldd_id)


def _remote_attribute(obj: Any, name: str) -> Any:
    """``getattr`` in the subject.

    Once the subject is gone, a special name reads as missing: ``hasattr`` probes of
    pytest's own reporting (``inspect.getmodule`` asks every module for ``__file__``)
    must not turn into an internal error.  The test in progress fails all the same,
    since the guard saw the failure.
    """
    try:
        return _conn().request("getattr", obj, name)
    except SubjectError:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name) from None
        raise


def _binary(op: str, left: Any, right: Any) -> Any:
    try:
        return _conn().request(op, left, right, isolate=False)
    except IsolationError:
        return NotImplemented


def _method(op: str, arity: int) -> Any:
    if arity == 0:

        def unary(self: Proxy) -> Any:
            return _conn().request(op, self)

        return unary
    if arity == 1:

        def binary(self: Proxy, other: Any) -> Any:
            return _binary(op, self, other)

        return binary

    def many(self: Proxy, *args: Any) -> Any:
        return _conn().request(op, self, *args)

    return many


def _reflected(op: str) -> Any:
    def method(self: Proxy, other: Any) -> Any:
        return _binary(op, other, self)

    return method


_MUTABLE = (list, dict, set)


def _call(self: Any, *args: Any, **kwargs: Any) -> Any:
    """Call remotely; lists, dicts and sets passed as arguments get the callee's changes.

    The containers cross as copies, so a workspace function that sorts or fills its
    argument in place would otherwise change only its copy.
    """
    positions = tuple(i for i, arg in enumerate(args) if type(arg) in _MUTABLE)
    names = tuple(name for name, arg in kwargs.items() if type(arg) in _MUTABLE)
    if not positions and not names:
        return _conn().request("call", self, args, kwargs)
    answer = _conn().request("callsync", self, args, kwargs, positions, names)
    given = [args[i] for i in positions] + [kwargs[name] for name in names]
    if type(answer) is not tuple or len(answer) != 2 or type(answer[1]) is not tuple:
        raise _conn().protocol("the subject answered a call in the wrong shape")
    result, states = answer
    if len(states) != len(given):
        raise _conn().protocol("the subject answered a call with the wrong arguments")
    for original, state in zip(given, states, strict=True):
        if type(state) is not type(original):
            raise _conn().protocol("the subject changed the type of an argument")
        if state != original:
            if type(original) is list:
                original[:] = state
            else:
                original.clear()
                original.update(state)
    return result


def _len(self: Proxy) -> int:
    value = _conn().request("len", self)
    if type(value) is not int:
        raise _conn().protocol(f"the subject answered len() with {type(value).__name__}")
    return value


def _bool(self: Proxy) -> bool:
    return _conn().request("bool", self) is True


def _contains(self: Proxy, item: Any) -> bool:
    return _conn().request("contains", self, item) is True


def _exit(self: Proxy, cls: Any, exc: Any, tb: Any) -> Any:
    kind = cls if cls is None or cls.__module__ == "builtins" else Exception
    return _conn().request("exit", self, kind, None, None)


_NUMERIC = (
    "add",
    "sub",
    "mul",
    "truediv",
    "floordiv",
    "mod",
    "pow",
    "matmul",
    "lshift",
    "rshift",
    "and",
    "or",
    "xor",
)


def _special_methods() -> dict[str, Any]:
    table: dict[str, Any] = {
        "__call__": _call,
        "__len__": _len,
        "__bool__": _bool,
        "__contains__": _contains,
        "__iter__": _method("iter", 0),
        "__next__": _method("next", 0),
        "__reversed__": _method("reversed", 0),
        "__getitem__": _method("getitem", 2),
        "__setitem__": _method("setitem", 2),
        "__delitem__": _method("delitem", 2),
        "__enter__": _method("enter", 0),
        "__exit__": _exit,
        "__round__": _method("round", 2),
    }
    for name in _NUMERIC:
        table[f"__{name}__"] = _method(name, 1)
        table[f"__r{name}__"] = _reflected(name)
    for name in ["iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ior", "iand", "ixor"]:
        table[f"__{name}__"] = _method(name, 1)
    for name in ["neg", "pos", "abs", "invert", "int", "float", "index", "complex"]:
        table[f"__{name}__"] = _method(name, 0)
    return table


_SPECIAL = _special_methods()
# The special methods a subject may report for its types (``subject.SPECIAL``).
SPECIAL_NAMES = frozenset(_SPECIAL)


class RemoteClass(Proxy):
    """A workspace class: calling it constructs in the subject; ``isinstance`` works."""

    __slots__ = ()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _call(self, *args, **kwargs)

    def __instancecheck__(self, obj: Any) -> bool:
        mro = getattr(type(obj), "_ldd_mro", None)
        return mro is not None and self._ldd_id in mro

    def __subclasscheck__(self, cls: Any) -> bool:
        if isinstance(cls, RemoteClass):
            record = _conn().classes.get(cls._ldd_id)
            return record is not None and self._ldd_id in record.mro
        mro = getattr(cls, "_ldd_mro", None)
        return mro is not None and self._ldd_id in mro

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        record = _conn().classes.get(self._ldd_id)
        name = record.qualname if record else "?"
        msg = (
            f"isolation='process' cannot subclass the workspace class {name} in the hidden"
            " tests: it lives in the subject process; use isolation='inprocess'"
        )
        raise IsolationError(msg)


class _ExceptionMeta(type):
    """The metaclass of judge-side workspace exception types: handles count as instances."""

    def __instancecheck__(cls, obj: Any) -> bool:
        if type.__instancecheck__(cls, obj):
            return True
        mro = getattr(type(obj), "_ldd_mro", None)
        own = cls.__dict__.get("_ldd_id")
        return mro is not None and own is not None and own in mro


def _exception_str(self: BaseException) -> str:
    text = self.__dict__.get("_ldd_text")
    return str(text) if text is not None else BaseException.__str__(self)


def _exception_getattr(self: BaseException, name: str) -> Any:
    ref = self.__dict__.get("_ldd_ref")
    if ref is None or name.startswith(("_ldd_", "__")):
        raise AttributeError(name)
    return getattr(ref, name)


class _ClassRecord:
    """What the subject reported about one of its classes."""

    __slots__ = (
        "bases",
        "builtin",
        "hashable",
        "is_exception",
        "judge_class",
        "module",
        "mro",
        "qualname",
        "special",
    )  # fmt: skip

    def __init__(self, raw: Any, classes: dict[int, _ClassRecord]) -> None:
        if type(raw) is not tuple or len(raw) != 7:
            msg = "a malformed class record"
            raise wire.WireError(msg)
        module, qualname, bases, special, builtin, hashable, is_exception = raw
        if type(module) is not str or type(qualname) is not str or type(bases) is not tuple:
            msg = "a malformed class record"
            raise wire.WireError(msg)
        if not all(type(b) is int and b in classes for b in bases):
            msg = "a class record names bases the subject never described"
            raise wire.WireError(msg)
        if type(special) is not tuple or not set(special) <= SPECIAL_NAMES:
            msg = "a class record lists unknown special methods"
            raise wire.WireError(msg)
        self.module = module[:200]
        self.qualname = qualname[:200]
        self.bases = bases
        self.special = frozenset(special)
        self.builtin = builtin if type(builtin) is str else None
        self.hashable = hashable is True
        self.is_exception = is_exception is True
        mro: set[int] = set()
        for base in bases:
            mro |= classes[base].mro
        self.mro: frozenset[int] = frozenset(mro)
        self.judge_class: Any = None


# -- the connection ------------------------------------------------------------------


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


class Connection:
    """The judge's end of the conversation with one subject process."""

    def __init__(self, proc: subprocess.Popen[bytes], deadline: float) -> None:
        assert proc.stdin is not None
        assert proc.stdout is not None
        self.proc = proc
        self.deadline = deadline
        self.broken: str | None = None
        self.failures: list[str] = []
        self.classes: dict[int, _ClassRecord] = {}
        self.proxy_types: dict[int, type] = {}
        self.objects: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
        self.strong: dict[int, Any] = {}
        self.judge_objects: dict[int, Any] = {}
        self.judge_ids: dict[int, int] = {}
        self.pending_release: set[int] = set()
        self.lock = threading.RLock()
        self.started = False
        read_fd, write_fd = proc.stdout.fileno(), proc.stdin.fileno()
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)
        self.peer = wire.Peer(
            read_fd,
            write_fd,
            encoder=wire.Encoder(self._reference),
            decoder=wire.Decoder({b"H": self._resolve, b"J": self._judge_object}),
            serve=self._serve,
            fail=self._fail,
            raise_error=self._raise_error,
            wait=self._wait,
            budget=BUDGET_BYTES,
            spin_s=wire.SPIN_S,
        )
        self.peer.on_output = _printed

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
    ) -> Connection:
        """Start the subject and send it its code (it boots while the judge imports pytest).

        ``sources`` holds ``confinement``, ``wire`` and ``subject``, sent in that order;
        the subject applies ``confine`` (a :mod:`confinement` policy) before it runs
        anything else.  Never blocks: what the pipe does not take now, :meth:`hello`
        sends.
        """
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=cwd,
            close_fds=True,
        )
        connection = cls(proc, deadline)
        settings: dict[str, Any] = {
            "pythonpath": list(pythonpath),
            "confine": dict(confine or {"mode": "none"}),
        }
        settings |= {k: len(v) for k, v in sources.items()}
        head = (wire_json(settings) + "\n").encode("utf-8")
        boot = head + sources["confinement"] + sources["wire"] + sources["subject"]
        # As much of its code as the pipe takes now, so that it compiles while the
        # judge imports pytest; hello() sends the rest.
        with contextlib.suppress(BlockingIOError, BrokenPipeError):
            boot = boot[os.write(connection.peer.write_fd, boot) :]
        connection._boot = boot
        return connection

    def hello(self) -> str | None:
        """Send the subject its code and wait for its hello; the reason it failed, or None."""
        deadline = min(self.deadline, time.monotonic() + _HELLO_S)
        data = memoryview(self._boot)
        try:
            while data:
                self._wait(self.peer.write_fd, True, deadline)
                try:
                    data = data[os.write(self.peer.write_fd, data) :]
                except BlockingIOError:
                    continue
            self._hello_deadline = deadline
            message = self.peer.receive()
        except (OSError, wire.WireError) as exc:
            return self._break(f"the subject process did not start: {exc}")
        finally:
            self._hello_deadline = None
        if message[:2] != ("r", -1) or not _is_hello(message[2]):
            return self._break(f"the subject process did not start: {message!r:.200}")
        # Sent before the subject imported anything of the workspace: trustworthy.
        _, _, report = message[2]
        self.confinement = {"level": report[0], "detail": report[1][:500]}
        self.started = True
        return None

    _hello_deadline: float | None = None
    _boot: bytes = b""
    confinement: Mapping[str, str] = types.MappingProxyType(
        {"level": "none", "detail": "not started"}
    )

    def _wait(self, fd: int, for_write: bool, deadline: float | None = None) -> None:
        limit = deadline or self._hello_deadline or self.deadline
        poller = select.poll()
        poller.register(fd, select.POLLOUT if for_write else select.POLLIN)
        while True:
            left = limit - time.monotonic()
            if left <= 0:
                msg = "the subject process did not answer within the verdict's timeout"
                raise wire.WireError(msg)
            if poller.poll(min(left, 1.0) * 1000):
                return

    def _break(self, reason: str) -> str:
        if self.broken is None:
            self.broken = reason
            self.failures.append(reason)
            try:
                self.proc.kill()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
            code = self.proc.returncode
            if code is not None:
                status = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
                self.broken = f"{reason} (subject {status})"
        return self.broken

    def close(self) -> None:
        """End the subject: close its pipe, then kill what is left."""
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def protocol(self, reason: str) -> SubjectError:
        """The error for an answer that breaks the protocol: the subject is ended."""
        return SubjectError(f"process isolation: {self._break(reason)}")

    def released(self, number: int) -> None:
        self.pending_release.add(number)

    def request(self, op: str, *args: Any, isolate: bool = True) -> Any:
        """One request to the subject; its answer, or its exception raised here."""
        if self.broken is not None:
            msg = f"process isolation: the subject is gone: {self.broken}"
            self.failures.append(msg)  # this test fails too, whatever it catches
            raise SubjectError(msg)
        with self.lock:
            if self.pending_release:
                self.peer.released.extend(self.pending_release)
                self.pending_release.clear()
            try:
                return self.peer.request(op, args)
            except wire.WireError as exc:
                reason = self._break(str(exc))
                msg = f"process isolation: {reason}"
                raise SubjectError(msg) from None
            except IsolationError as exc:
                if isolate:
                    self.failures.append(str(exc))
                raise
            except RecursionError as exc:
                if isinstance(exc.__cause__, RemoteTraceback):
                    raise  # the workspace's own, raised in the subject: the test's to see
                reason = self._break("requests nested too deep between judge and subject")
                raise SubjectError(reason) from None

    # -- references -------------------------------------------------------------
    def _reference(self, obj: Any) -> tuple[bytes, Any]:
        if isinstance(obj, (Proxy, ProxyModule)):
            return b"H", object.__getattribute__(obj, "_ldd_id")
        own = (
            type.__dict__["__dict__"].__get__(obj).get("_ldd_id")
            if isinstance(obj, type)
            else None
        )
        if type(own) is int:  # a judge-side stand-in of a workspace exception class
            return b"H", own
        if isinstance(obj, BaseException):
            ref = obj.__dict__.get("_ldd_ref") if hasattr(obj, "__dict__") else None
            if ref is not None:
                return b"H", object.__getattribute__(ref, "_ldd_id")
            return b"J", self._judge_ref(obj)
        if callable(obj):
            return b"J", self._judge_ref(obj)
        raise _not_crossable(obj)

    def _judge_ref(self, obj: Any) -> int:
        known = self.judge_ids.get(id(obj))
        if known is not None and self.judge_objects.get(known) is obj:
            return known
        number = len(self.judge_objects) + 1
        self.judge_objects[number] = obj
        self.judge_ids[id(obj)] = number
        return number

    def _judge_object(self, payload: Any) -> Any:
        if type(payload) is not int or payload not in self.judge_objects:
            msg = f"the subject named a judge object it was never given ({payload!r:.40})"
            raise wire.WireError(msg)
        return self.judge_objects[payload]

    def _resolve(self, payload: Any) -> Any:
        if type(payload) is not tuple or not payload or payload[0] not in ("o", "c", "m"):
            msg = f"a malformed handle {payload!r:.80}"
            raise wire.WireError(msg)
        kind = payload[0]
        if kind == "m":
            if len(payload) != 4 or type(payload[1]) is not int or type(payload[2]) is not str:
                msg = "a malformed module handle"
                raise wire.WireError(msg)
            return self._module(payload[1], payload[2], payload[3] is True)
        if kind == "c":
            if len(payload) != 3 or type(payload[1]) is not int:
                msg = "a malformed class handle"
                raise wire.WireError(msg)
            self._records(payload[2])
            return self._class(payload[1])
        if len(payload) != 4 or type(payload[1]) is not int or type(payload[2]) is not int:
            msg = "a malformed object handle"
            raise wire.WireError(msg)
        self._records(payload[3])
        number = payload[1]
        self.pending_release.discard(number)
        found = self.objects.get(number)
        if found is not None:
            return found
        proxy: Any = object.__new__(self._proxy_type(payload[2]))
        object.__setattr__(proxy, "_ldd_id", number)
        self.objects[number] = proxy
        return proxy

    def _records(self, records: Any) -> None:
        if type(records) is not tuple:
            msg = "malformed class records"
            raise wire.WireError(msg)
        for entry in records:
            if type(entry) is not tuple or len(entry) != 2 or type(entry[0]) is not int:
                msg = "a malformed class record"
                raise wire.WireError(msg)
            number, raw = entry
            if number in self.classes:
                continue
            record = _ClassRecord(raw, self.classes)
            record.mro = record.mro | {number}
            self.classes[number] = record

    def _record(self, number: int) -> _ClassRecord:
        record = self.classes.get(number)
        if record is None:
            msg = f"a handle of a class the subject never described ({number})"
            raise wire.WireError(msg)
        return record

    def _proxy_type(self, number: int) -> type:
        found = self.proxy_types.get(number)
        if found is not None:
            return found
        record = self._record(number)
        namespace: dict[str, Any] = {
            name: _SPECIAL[name] for name in record.special if name in _SPECIAL
        }
        namespace["__slots__"] = ()
        namespace["_ldd_mro"] = record.mro
        namespace["_ldd_name"] = record.qualname
        if not record.hashable:
            namespace["__hash__"] = None
        name = record.qualname.rpartition(".")[2]
        proxy_type = type(name if name.isidentifier() else "Proxy", (Proxy,), namespace)
        proxy_type.__qualname__ = record.qualname
        proxy_type.__module__ = record.module
        self.proxy_types[number] = proxy_type
        return proxy_type

    def _class(self, number: int) -> Any:
        record = self._record(number)
        if record.judge_class is not None:
            return record.judge_class
        if record.builtin is not None and record.builtin in wire.BUILTIN_TYPES:
            record.judge_class = getattr(builtins, record.builtin)
        elif record.is_exception:
            record.judge_class = self._exception_class(number, record)
        else:
            remote = object.__new__(RemoteClass)
            object.__setattr__(remote, "_ldd_id", number)
            record.judge_class = remote
        self.strong[number] = record.judge_class
        return record.judge_class

    def _exception_class(self, number: int, record: _ClassRecord) -> type:
        known = _stdlib_exception(record)
        if known is not None:
            return known
        bases = []
        for base in record.bases:
            judged = self._class(base)
            if isinstance(judged, type) and issubclass(judged, BaseException):
                bases.append(judged)
        if not bases:
            bases = [Exception]
        namespace = {
            "_ldd_id": number,
            "__module__": record.module,
            "__qualname__": record.qualname,
            "__str__": _exception_str,
            "__getattr__": _exception_getattr,
        }
        name = record.qualname.rpartition(".")[2]
        name = name if name.isidentifier() else "WorkspaceError"
        try:
            return _ExceptionMeta(name, tuple(bases), namespace)
        except TypeError:  # the builtin bases' layouts conflict: keep the nearest one
            return _ExceptionMeta(name, (bases[0],), namespace)

    def _module(self, number: int, name: str, is_package: bool) -> ProxyModule:
        found = self.strong.get(number)
        if isinstance(found, ProxyModule):
            return found
        module = ProxyModule(name, number, is_package)
        self.strong[number] = module
        return module

    # -- serving callbacks and errors ----------------------------------------------
    def _serve(self, op: str, args: Any) -> Any:
        if op != "call" or type(args) is not tuple or len(args) != 3:
            msg = "the subject may only call judge callables back"
            raise IsolationError(msg)
        function, call_args, kwargs = args
        if type(call_args) is not tuple or type(kwargs) is not dict:
            msg = "a malformed callback"
            raise IsolationError(msg)
        if not any(function is obj for obj in self.judge_objects.values()) or not callable(
            function
        ):
            msg = "the subject called back something that is not a judge callable"
            raise IsolationError(msg)
        if not all(type(key) is str for key in kwargs):
            msg = "a callback with keyword names that are not strings"
            raise IsolationError(msg)
        return function(*call_args, **kwargs)

    def _fail(self, exc: BaseException) -> Any:
        cls = type(exc)
        builtin = cls if getattr(builtins, cls.__name__, None) is cls else None
        args: Any = exc.args
        try:
            self.peer.encoder.encode(args)
        except BaseException:
            args = tuple(_safe_text(a) for a in exc.args)
        tb = "".join(traceback.format_exception(exc))[-_TEXT_CHARS:]
        return (builtin, args, _safe_text(exc), tb, exc)

    def _raise_error(self, error: Any) -> BaseException:
        if type(error) is not tuple or len(error) != 5:
            msg = "a malformed error report"
            raise wire.WireError(msg)
        cls, args, text, tb, ref = error
        if isinstance(ref, BaseException):
            return ref  # a judge exception that went through workspace code and back
        if type(args) is not tuple or type(text) is not str or type(tb) is not str:
            msg = "a malformed error report"
            raise wire.WireError(msg)
        if not (isinstance(cls, type) and issubclass(cls, BaseException)):
            msg = f"an error report whose class is not an exception ({type(cls).__name__})"
            raise wire.WireError(msg)
        exc: BaseException
        if issubclass(cls, _PROCESS_CONTROL):
            # These steer the process that raises them: here they would end or abort
            # the judge's session, so the test that met them fails instead.
            reason = f"workspace code raised {cls.__name__}{args!r:.200}"
            self.failures.append(reason)
            return SubjectError(f"process isolation: {reason}")
        if "_ldd_id" in cls.__dict__:
            exc = cls.__new__(cls)
            exc.args = args
            exc.__dict__["_ldd_text"] = text[:_TEXT_CHARS]
            if isinstance(ref, Proxy):
                exc.__dict__["_ldd_ref"] = ref
        else:
            try:
                exc = cls(*args)
            except Exception:
                exc = cls.__new__(cls)
                exc.args = args
        exc.__cause__ = RemoteTraceback(f"in the subject process:\n{tb[-_TEXT_CHARS:]}")
        return exc


_PROCESS_CONTROL = (SystemExit, KeyboardInterrupt)


def _printed(stream: int, payload: Any) -> None:
    """What workspace code printed or warned, issued here as the test's own would be.

    Printed text goes where the test's prints go (pytest's capture), a warning through
    ``warnings.warn_explicit`` (so ``pytest.warns`` and the warning filters see it).
    """
    if stream != 3:
        (sys.stdout if stream == 1 else sys.stderr).write(payload)
        return
    import warnings

    category, text, filename, lineno = payload
    if not (isinstance(category, type) and issubclass(category, Warning)):
        category = UserWarning
    if type(text) is not str or type(filename) is not str or type(lineno) is not int:
        msg = "a malformed warning"
        raise wire.WireError(msg)
    warnings.warn_explicit(text, category, filename, lineno)


def _safe_text(obj: Any) -> str:
    try:
        return str(obj)[:_TEXT_CHARS]
    except Exception:
        return f"<{type(obj).__name__}>"


def _stdlib_exception(record: _ClassRecord) -> type | None:
    """The judge's own class for an exception of an already imported stdlib module."""
    top = record.module.partition(".")[0]
    if top not in sys.stdlib_module_names or record.module not in sys.modules:
        return None
    found: Any = sys.modules[record.module]
    for part in record.qualname.split("."):
        found = getattr(found, part, None)
    if isinstance(found, type) and issubclass(found, BaseException):
        return found
    return None


def wire_json(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"))


# -- modules -------------------------------------------------------------------------

_LOCAL = frozenset(
    ("__name__", "__spec__", "__loader__", "__path__", "__package__", "__file__",
     "__cached__", "__builtins__", "__doc__", "_ldd_id")
)  # fmt: skip


_READ_REMOTELY = frozenset(("__file__", "__cached__"))


class _RemoteNamespace(Mapping[str, Any]):
    """A workspace module's ``__dict__``, read in the subject entry by entry."""

    def __init__(self, module: ProxyModule) -> None:
        self._module = module

    def __getitem__(self, name: str) -> Any:
        return _conn().request("lookup", self._module, name)

    def __iter__(self) -> Iterator[str]:
        return iter(list(_conn().request("keys", self._module)))

    def __len__(self) -> int:
        return len(list(self))


class ProxyModule(types.ModuleType):
    """A workspace module: its attributes live in the subject."""

    @property
    def __dict__(self) -> Mapping[str, Any]:  # type: ignore[override]
        return _RemoteNamespace(self)

    def __init__(self, name: str, number: int, is_package: bool) -> None:
        super().__init__(name)
        object.__setattr__(self, "_ldd_id", number)
        if is_package:
            object.__setattr__(self, "__path__", [])

    def __getattr__(self, name: str) -> Any:
        # __path__ above all stays local: the subject's folders must never reach the
        # judge's import system.  __file__ is read remotely (a path is only data).
        if name.startswith("_ldd_") or (name in _LOCAL and name not in _READ_REMOTELY):
            raise AttributeError(name)
        if name == "__all__":
            try:
                return _conn().request("getattr", self, name)
            except AttributeError:
                return _conn().request("public", self)
        return _remote_attribute(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _LOCAL:
            object.__setattr__(self, name, value)
        else:
            _conn().request("setattr", self, name, value)

    def __delattr__(self, name: str) -> None:
        if name in _LOCAL:
            object.__delattr__(self, name)
        else:
            _conn().request("delattr", self, name)

    def __dir__(self) -> list[str]:
        return list(_conn().request("dir", self))

    def __repr__(self) -> str:
        return f"<module {self.__name__!r} (in the subject process)>"


class WorkspaceFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on ``sys.meta_path``: workspace modules become proxies, nothing else is touched."""

    def __init__(self, roots: Sequence[str]) -> None:
        self.roots = [Path(root) for root in roots]

    def _in_workspace(self, name: str) -> bool:
        for root in self.roots:
            if (root / name).is_dir() or (root / f"{name}.py").is_file():
                return True
            try:
                if any(
                    entry.name.startswith(f"{name}.") and entry.name.endswith((".so", ".pyd"))
                    for entry in os.scandir(root)
                ):
                    return True
            except OSError:
                continue
        return False

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        parent, _, _ = fullname.rpartition(".")
        if parent:
            if not isinstance(sys.modules.get(parent), ProxyModule):
                return None
        elif not self._in_workspace(fullname):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, origin="ldd-subject")

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _conn().request("import", spec.name)
        if not isinstance(module, ProxyModule):
            msg = f"the subject answered the import of {spec.name!r} with something else"
            raise SubjectError(msg)
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def isolation_guard(pytest: Any, connection: Connection) -> Any:
    """The judge's pytest plugin: a test during which isolation failed never passes."""

    class IsolationGuard:
        def __init__(self) -> None:
            self.seen = 0
            self.failed = False

        def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
            self.seen = len(connection.failures)
            self.failed = False

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

    return IsolationGuard()
