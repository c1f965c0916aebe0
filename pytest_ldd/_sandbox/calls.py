"""Call mapping: one side's requests to the other, and its answers to the other's requests.

A request names an operation and its arguments (``getattr``, ``call``, ``iter``,
``eq``, ...: :data:`OPS`); values cross as data, objects as handles (:mod:`handles`),
and handles of the other side's objects come back as stand-ins (:mod:`stubs`).  The
answer is a value, or an exception: ``("e", seq, (exception, traceback text))``,
where the exception crosses like any object, so the receiver raises a real exception
of the mirrored class, with its arguments, cause and context.

:class:`Calls` is that mapping for one side.  What a side may be asked is its
``ops`` table, narrowed by its ``policy`` (the judge's refuses what would hand the
subject more than the object it was given; the subject's allows everything of its
own).  Both sides load this module from a file; it imports only the standard library.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import operator
import sys
import traceback
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pytest_ldd._sandbox import containers, handles, stubs, wire
else:
    wire = sys.modules.get("_ldd_wire") or importlib.import_module("pytest_ldd._sandbox.wire")
    containers = sys.modules.get("_ldd_containers") or importlib.import_module(
        "pytest_ldd._sandbox.containers"
    )
    handles = sys.modules.get("_ldd_handles") or importlib.import_module(
        "pytest_ldd._sandbox.handles"
    )
    stubs = sys.modules.get("_ldd_stubs") or importlib.import_module("pytest_ldd._sandbox.stubs")

__all__ = [
    "OPS",
    "Calls",
    "IsolationError",
    "Policy",
    "SubjectError",
    "signature_data",
    "signature_from",
]

_TRACEBACK_CHARS = 20_000
_MOST_DRAINED = 1 << 16
# Requests and callbacks nested deeper than this end the conversation: each level
# costs a dozen frames on both sides, and the interpreter's recursion limit must stay
# out of the protocol's way.
MAX_NESTING = 30
_FRAMES = 30


class SubjectError(BaseException):
    """The subject process died, hung, flooded or sent something that is not the protocol."""


class IsolationError(Exception):
    """Something the hidden tests asked for cannot cross between the judge and the subject.

    An ``Exception``, unlike :class:`SubjectError`: pytest caches what a fixture raised
    only when it is one (a ``BaseException`` left a session fixture half set up, and
    every later test that used it errored on pytest's own assertion, with no limit to
    explain it).  A test that swallows it gains nothing: the limit is recorded for the
    test whatever the test caught.
    """


class Policy(Protocol):
    """What a side refuses to lend or to do for the other side."""

    def check_lend(self, obj: Any) -> bool:
        """Whether ``obj`` crosses as a handle the other side may name in requests.

        False: a class that is only described (the type of objects that cross).  Raise
        :class:`IsolationError` when it may not cross at all.
        """

    def check_op(self, op: str, args: tuple[Any, ...]) -> None:
        """Raise :class:`IsolationError` when the other side may not ask ``op``."""

    def described_only(self, number: int) -> Any:
        """What stands for a class this side only described, named back by the other side.

        Never the class: raising here would leave the other side's request unanswered.
        """

    def check_copy(self, value: Any) -> None:
        """``value``, a mutable stdlib container or an ``ast`` node, crosses as a copy."""


class OpenPolicy:
    """The subject's: every object of its own may cross, every operation may be asked."""

    def check_lend(self, obj: Any) -> bool:
        return True

    def check_op(self, op: str, args: tuple[Any, ...]) -> None:
        return None

    def described_only(self, number: int) -> Any:
        msg = f"a class this side never lent as a handle ({number})"
        raise wire.WireError(msg)

    def check_copy(self, value: Any) -> None:
        return None


# -- the operations --------------------------------------------------------------------


def _call(function: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if type(args) is not tuple or type(kwargs) is not dict:
        msg = "a malformed call"
        raise wire.WireError(msg)
    return function(*args, **kwargs)


def _call_handling(
    function: Any, args: tuple[Any, ...], kwargs: dict[str, Any], handling: Any
) -> Any:
    """A call made while the caller handled ``handling``: here too, as in one process.

    A bare ``raise`` in ``function`` re-raises it (exceptiongroup's ``catch`` calls its
    handlers in its ``except`` clause), and what ``function`` raises is chained to it.
    """
    if not isinstance(handling, BaseException):
        return _call(function, args, kwargs)
    # Raising it here would chain it to what this side is handling at the moment (the
    # test's own exception, passed to a workspace __exit__): that is undone.
    context, traceback = handling.__context__, handling.__traceback__
    try:
        raise handling
    except BaseException:
        handling.__context__ = context
        handling.__traceback__ = traceback
        return _call(function, args, kwargs)


def _call_sync(
    function: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    positions: tuple[int, ...],
    names: tuple[str, ...],
) -> Any:
    result = _call(function, args, kwargs)
    return result, tuple(args[i] for i in positions) + tuple(kwargs[n] for n in names)


def _dir(obj: Any) -> list[str]:
    return [str(name) for name in dir(obj)]


def _exit(obj: Any, cls: Any, exc: Any, line: Any) -> Any:
    tb = None
    if isinstance(exc, BaseException) and type(line) is int:
        # A traceback of this side that points at the line the exception came from.
        frame = sys._getframe()
        tb = types.TracebackType(None, frame, frame.f_lasti, line)
        if exc.__traceback__ is None:
            exc.__traceback__ = tb
    return obj.__exit__(cls, exc, tb)


def signature_data(obj: Any) -> tuple[Any, ...]:
    """``obj.__signature__`` read for the other side: ``inspect.signature(obj)`` as data.

    Defaults and annotations cross as handles.  Where ``obj`` has a ``__signature__``
    that is no signature (a class whose instances compute theirs in a property: the
    class's is the property object; toolz asks ``hasattr(f.__signature__, '__get__')``),
    that object itself, alone in the tuple.
    """
    own = getattr(obj, "__signature__", None)
    if own is not None and not isinstance(own, inspect.Signature):
        return (own,)
    signature = own if own is not None else inspect.signature(obj)
    params = tuple(
        (p.name, int(p.kind), p.default, p.annotation) for p in signature.parameters.values()
    )
    return (params, signature.return_annotation)


# The flags of a code object that say it takes ``*args`` and ``**kwargs``.
_VARARGS, _VARKEYWORDS = inspect.CO_VARARGS, inspect.CO_VARKEYWORDS


def arity_data(function: Any) -> tuple[str, str, tuple[tuple[str, int, bool], ...]] | None:
    """How a plain function binds its arguments: its names and its code's parameters.

    ``(name, qualname, ((parameter, kind, has_default), ...))``, the kinds those of
    :class:`inspect.Parameter`, read from the code and its defaults (what binding
    uses; never ``__signature__`` nor ``__wrapped__``); None for anything else.
    """
    if type(function) is not types.FunctionType:
        return None
    code = function.__code__
    names = code.co_varnames
    positional, only = code.co_argcount, code.co_posonlyargcount
    keyword_only = code.co_kwonlyargcount
    first_default = positional - len(function.__defaults__ or ())
    keyword_defaults = function.__kwdefaults__ or {}
    params: list[tuple[str, int, bool]] = [
        (names[i], 0 if i < only else 1, i >= first_default) for i in range(positional)
    ]
    at = positional + keyword_only
    if code.co_flags & _VARARGS:
        params.append((names[at], 2, False))
        at += 1
    params += [(name, 3, name in keyword_defaults) for name in names[positional:][:keyword_only]]
    if code.co_flags & _VARKEYWORDS:
        params.append((names[at], 4, False))
    return (code.co_name, function.__qualname__, tuple(params))


def signature_from(data: Any) -> Any:
    """The :class:`inspect.Signature` that :func:`signature_data` describes.

    Or the object the owner's ``__signature__`` holds where it is no signature.
    """
    if type(data) is tuple and len(data) == 1:
        return data[0]
    try:
        params, returns = data
        parameters = [
            inspect.Parameter(name, inspect._ParameterKind(kind), default=default, annotation=ann)
            for name, kind, default, ann in params
        ]
        return inspect.Signature(parameters, return_annotation=returns)
    except (TypeError, ValueError) as exc:
        msg = f"a malformed signature ({exc})"
        raise wire.WireError(msg) from None


_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
_BINARY = (
    *_COMPARISONS, "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul",
    "lshift", "rshift", "and", "or", "xor", "divmod",
)  # fmt: skip


def _slot(name: str) -> Callable[[Any, Any], Any]:
    def call(obj: Any, other: Any) -> Any:
        method = getattr(type(obj), name, None)
        return NotImplemented if method is None else method(obj, other)

    call.__name__ = name
    return call


def _length_hint(obj: Any) -> int:
    return operator.length_hint(obj)


def _drain(iterator: Any, size: Any) -> tuple[tuple[Any, ...], bool, BaseException | None]:
    """Up to ``size`` items of ``iterator``; whether it ended, and with which exception.

    An exception ends the batch after the items that came before it, as it would
    end the consumer's loop after them (see ``stubs.Drains``).
    """
    if type(size) is not int or not 0 < size <= _MOST_DRAINED:
        msg = f"a drain of {size!r:.20} items"
        raise wire.WireError(msg)
    items: list[Any] = []
    try:
        for _ in range(size):
            items.append(next(iterator))
    except StopIteration:
        return tuple(items), True, None
    except Exception as exc:
        return tuple(items), True, exc
    return tuple(items), False, None


def _instancecheck(cls: Any, obj: Any) -> bool:
    return isinstance(obj, cls)


OPS: dict[str, Callable[..., Any]] = {
    "instancecheck": _instancecheck,
    "getattr": getattr, "setattr": setattr, "delattr": delattr,
    "call": _call, "callsync": _call_sync, "callhandling": _call_handling, "dir": _dir,
    "repr": repr, "str": str, "format": format, "len": len, "iter": iter, "next": next,
    "hash": hash, "bool": bool, "copy": copy.copy, "deepcopy": copy.deepcopy,
    "signature": signature_data, "arity": arity_data, "length_hint": _length_hint,
    "drain": _drain,
    "fspath": lambda o: o.__fspath__(),
    "bytes": lambda o: type(o).__bytes__(o),
    "await": lambda o: type(o).__await__(o),
    "aiter": lambda o: type(o).__aiter__(o),
    "anext": lambda o: type(o).__anext__(o),
    "contains": operator.contains,
    "getitem": operator.getitem, "setitem": operator.setitem, "delitem": operator.delitem,
    "reversed": reversed, "round": round,
    "neg": operator.neg, "pos": operator.pos, "abs": abs, "invert": operator.invert,
    "int": int, "float": float, "index": operator.index, "complex": complex,
    "trunc": lambda o: o.__trunc__(), "floor": lambda o: o.__floor__(),
    "ceil": lambda o: o.__ceil__(),
    "enter": lambda obj: obj.__enter__(), "exit": _exit,
    # The descriptor protocol, for an object kept in a class of the other side.
    "get": lambda obj, instance, owner: type(obj).__get__(obj, instance, owner),
    "set": lambda obj, instance, value: type(obj).__set__(obj, instance, value),
    "delete": lambda obj, instance: type(obj).__delete__(obj, instance),
    "set_name": lambda obj, owner, name: type(obj).__set_name__(obj, owner, name),
}  # fmt: skip
# Binary operators call one special method of the object asked, never the whole
# operator protocol: its reflected half is the asker's own to try, with its own
# objects.  (Two stand-ins of each other's objects would otherwise pass ``==`` back
# and forth forever.)
for _name in _BINARY:
    OPS[_name] = _slot(f"__{_name}__")
    if _name not in _COMPARISONS:
        OPS[f"r{_name}"] = _slot(f"__r{_name}__")
        OPS[f"i{_name}"] = _slot(f"__i{_name}__")
del _name


def _where(exc: BaseException) -> str:
    """Where ``exc`` was raised, frame by frame, without reading source files.

    Sent with every exception the subject reports (``StopIteration`` ends every
    iteration, ``AttributeError`` answers every ``hasattr``), so it must be cheap: the
    lines of code are left out.
    """
    try:
        frames = traceback.StackSummary.extract(
            traceback.walk_tb(exc.__traceback__), limit=_FRAMES, lookup_lines=False
        )
        lines = [f'  File "{f.filename}", line {f.lineno}, in {f.name}' for f in frames]
        return "\n".join(lines)[-_TRACEBACK_CHARS:]
    except Exception:
        return ""


# -- one side's mapping ------------------------------------------------------------------


class Calls:
    """One side's end of the conversation: encoding, decoding, serving, errors.

    ``own`` and ``other`` are the wire tags of this side's objects and of the other
    side's (``J`` and ``H`` for the judge).  ``on_error(exc)`` may replace an exception
    the other side reported before it is raised here (the judge turns a ``SystemExit``
    into a failure of the test).
    """

    def __init__(
        self,
        *,
        own: bytes,
        other: bytes,
        table: handles.HandleTable,
        stand_ins: stubs.StandIns,
        ops: dict[str, Callable[..., Any]],
        policy: Policy,
        read_fd: int,
        write_fd: int,
        wait: Callable[[int, bool], None] | None,
        budget: int | None = None,
        spin_s: float = wire.SPIN_S,
        lock: Any = None,
    ) -> None:
        self.own = own
        self.other = other
        self.table = table
        self.stand_ins = stand_ins
        self.ops = ops
        self.policy = policy
        self.tracebacks: list[str] = []
        # How many requests this side asked: stand-ins tell what came right after what.
        self.count = 0
        self.on_error: Callable[[BaseException], BaseException] | None = None
        # The lists, dicts and sets that crossed during the test, both ways.
        self.containers = containers.Containers()
        # The strings (and bytes, frozensets) that crossed during the test, both ways.
        self.values = containers.Values()
        self.peer = wire.Peer(
            read_fd,
            write_fd,
            encoder=wire.Encoder(
                self.reference,
                begin=table.begin,
                end=table.end,
                mark=self.containers.mark,
                mark_value=self.values.mark,
                copied=policy.check_copy,
            ),
            decoder=wire.Decoder(
                {other: stand_ins.resolve, own: self.lent},
                marked=self.containers.marked,
                marked_value=self.values.marked,
            ),
            serve=self.serve,
            fail=self.fail,
            raise_error=self.raise_error,
            wait=wait,
            budget=budget,
            spin_s=spin_s,
            lock=lock,
            max_nesting=MAX_NESTING,
        )
        self.peer.before_send = self._before_send
        # More to do before each message this side sends (see subject.ModuleWatch).
        self.also_before_send: Callable[[], None] | None = None

    def _before_send(self) -> None:
        released = self.table.releases()
        if released:
            # With every message, not only requests: an object the other side lent
            # dies when the last of its stand-ins here does, as in one process.
            self.peer.outbox.append((6, released))
        changed = self.containers.changed()
        if changed:
            # Sent again, they update the other side's copies (or originals) in place.
            self.peer.outbox.append((8, changed))
        if self.also_before_send is not None:
            self.also_before_send()

    # -- values and handles -------------------------------------------------------------
    def reference(self, obj: Any) -> tuple[bytes, Any]:
        """The encoder's hook: a stand-in goes back as its number, this side's as a handle."""
        number = self.stand_ins.number_of(obj)
        if number is not None:
            return self.other, number
        nameable = self.policy.check_lend(obj)
        return self.own, self.table.lend(obj, nameable=nameable)

    def lent(self, payload: Any) -> Any:
        """The decoder's hook for this side's own objects, named by their numbers."""
        if type(payload) is int and payload < 0:
            return self.policy.described_only(payload)
        return self.table.exported(payload)

    # -- requests -----------------------------------------------------------------------
    def request(self, op: str, args: tuple[Any, ...]) -> Any:
        """Ask the other side (releasing the stand-ins that died); its answer or exception."""
        with self.peer.lock:
            self.count += 1
            return self.peer.request(op, args)

    # -- serving ------------------------------------------------------------------------
    def serve(self, op: str, args: Any) -> Any:
        """Answer one request of the other side, within this side's ops and policy."""
        function = self.ops.get(op)
        if function is None or type(args) is not tuple:
            msg = f"unknown request {op!r:.40}"
            raise wire.WireError(msg)
        self.policy.check_op(op, args)
        return function(*args)

    def fail(self, exc: BaseException) -> Any:
        """The error payload for an exception raised while serving: it crosses as itself."""
        if self.own == b"J":
            return (exc, "")  # the judge's tracebacks would show the hidden tests' source
        return (exc, _where(exc))

    def raise_error(self, error: Any) -> BaseException:
        """The exception to raise for the other side's error payload."""
        if type(error) is not tuple or len(error) != 2 or type(error[1]) is not str:
            msg = "a malformed error report"
            raise wire.WireError(msg)
        exc, text = error
        if not isinstance(exc, BaseException):
            msg = f"an error report that is not an exception ({type(exc).__name__})"
            raise wire.WireError(msg)
        if text:
            self.tracebacks.append(text[-_TRACEBACK_CHARS:])
            del self.tracebacks[:-20]
        if self.on_error is not None:
            return self.on_error(exc)
        return exc
