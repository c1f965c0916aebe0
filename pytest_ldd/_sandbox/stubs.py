"""Stand-ins: what one side of process isolation holds for the other side's objects.

Both the judge and the subject make them, from the other side's descriptions
(:mod:`handles`), with the same code:

- an **object** becomes a :class:`Proxy` of a type made for its class, with exactly the
  special methods the class has (so ``callable``, ``len``, ``iter`` and the
  ``collections.abc`` checks answer as they would in one process).  Every attribute
  read, call, operator and comparison on it is a request to the owner;
- an instance of a subclass of an immutable builtin (``int``, ``str``, ``tuple``, ...:
  an ``IntEnum`` member, a named tuple, a ``str`` with methods of its own) becomes a
  **value mirror**: a real instance of that builtin holding the value the base type
  holds, whose other attributes and overridden special methods are requests;
- a **class** becomes a real class (``inspect.isclass`` holds): calling it constructs
  at the owner, its attributes are read there, and ``isinstance`` is decided by the
  owner's MRO;
- an **exception** becomes a real exception of a mirrored class (or of the builtin or
  standard-library class itself) with its ``args``, ``__cause__``, ``__context__`` and
  attributes, which can be raised, caught and inspected;
- a standard-library enum member or sentinel (``re.IGNORECASE``,
  ``dataclasses.MISSING``) becomes the receiver's own.

What a stand-in asks goes through its type's *link* (the side's connection); no
module global holds one.  Neither side ever runs code the other sent: a stand-in's
methods are this module's, and what comes back is data or another stand-in.
"""

from __future__ import annotations

import builtins
import collections
import contextlib
import copy
import enum
import functools
import importlib
import keyword
import sys
import types
import typing
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from pytest_ldd._sandbox import handles, wire
else:
    wire = sys.modules.get("_ldd_wire") or importlib.import_module("pytest_ldd._sandbox.wire")
    handles = sys.modules.get("_ldd_handles") or importlib.import_module(
        "pytest_ldd._sandbox.handles"
    )

__all__ = ["Link", "Proxy", "RemoteMeta", "StandIns", "ValueProxy", "subclass_refused"]

_TEXT_CHARS = 20_000


class Link(Protocol):
    """What stand-ins need of the side that made them."""

    def request(self, op: str, *args: Any) -> Any:
        """Ask the other side; its answer, or its exception raised here."""

    def binary(self, op: str, left: Any, right: Any) -> Any:
        """An operator at the other side; NotImplemented when an operand cannot cross."""

    def getattr(self, obj: Any, name: str) -> Any:
        """An attribute of the other side's object."""

    def protocol(self, reason: str) -> BaseException:
        """The error for an answer that breaks the protocol."""

    @property
    def stand_ins(self) -> StandIns:
        """The side's maker of stand-ins."""

    @property
    def drains(self) -> Drains:
        """The side's batched reading of the other side's iterators."""

    def refuse(self, reason: str) -> BaseException:
        """The error for something that cannot cross (a limit of the isolation)."""

    @property
    def arity_calls(self) -> dict[int, Any]:
        """What :class:`_FunctionCall` made for each stand-in, by ``id``."""


def _link(obj: Any) -> Link:
    return type(obj)._ldd_link  # type: ignore[no-any-return]


# -- objects ---------------------------------------------------------------------------


class Proxy:
    """An object that lives on the other side; every use of it is a request there."""

    __slots__ = ("__weakref__", "_ldd_id")
    _ldd_link: Any = None
    _ldd_mro: frozenset[int] = frozenset()
    _ldd_name = "object"
    # The attributes read at the owner although the stand-in's type has its own: the
    # special methods of the class (stubs here, for Python's operators) and the
    # annotations (never those of this class's body).
    _ldd_owner_names: frozenset[str] = frozenset({"__annotations__"})

    def __getattribute__(self, name: str) -> Any:
        if name in _OWNER_NAMES and name in type.__getattribute__(type(self), "_ldd_owner_names"):
            return _link(self).getattr(self, name)
        return object.__getattribute__(self, name)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_ldd_"):
            raise AttributeError(name)
        return _link(self).getattr(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_ldd_"):
            object.__setattr__(self, name, value)
        else:
            _link(self).request("setattr", self, name, value)

    def __delattr__(self, name: str) -> None:
        _link(self).request("delattr", self, name)

    def __dir__(self) -> list[str]:
        return [str(name) for name in _link(self).request("dir", self)]

    def __repr__(self) -> str:
        return _text(_link(self), _link(self).request("repr", self), "repr")

    def __str__(self) -> str:
        return _text(_link(self), _link(self).request("str", self), "str")

    def __format__(self, spec: str) -> str:
        return _text(_link(self), _link(self).request("format", self, spec), "format")

    def __eq__(self, other: object) -> Any:
        return _link(self).binary("eq", self, other)

    def __ne__(self, other: object) -> Any:
        return _link(self).binary("ne", self, other)

    def __lt__(self, other: object) -> Any:
        return _link(self).binary("lt", self, other)

    def __le__(self, other: object) -> Any:
        return _link(self).binary("le", self, other)

    def __gt__(self, other: object) -> Any:
        return _link(self).binary("gt", self, other)

    def __ge__(self, other: object) -> Any:
        return _link(self).binary("ge", self, other)

    def __hash__(self) -> int:
        value = _link(self).request("hash", self)
        if type(value) is not int:
            raise _link(self).protocol(f"the subject answered hash() with {type(value).__name__}")
        return value

    def __reduce_ex__(self, protocol: Any) -> Any:
        msg = (
            f"isolation='process' cannot pickle the object {self._ldd_name}: it lives in"
            " the other process; use isolation='inprocess'"
        )
        raise _link(self).refuse(msg)

    def __getstate__(self) -> Any:
        # object has one since 3.11, so a call would not reach __getattr__: asked of
        # the owner, whose class may define its own (jinja2's LRUCache).
        return _link(self).getattr(self, "__getstate__")()

    def __del__(self) -> None:
        # The side's table holds one weak reference; any other is code's own, and it
        # now dies with the stand-in, where the object itself may live on.
        try:
            if weakref.getweakrefcount(self) > 1:
                _link(self).refuse(_WEAKLY_HELD)
        except Exception:  # a finalizer must not raise, even at shutdown
            pass


_WEAKLY_HELD = (
    "code held a weak reference to an object of the other process: its stand-in here"
    " died, where the object itself may live on"
)


class ValueProxy:
    """The mixin of value mirrors: a builtin value whose other uses are requests."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_ldd_"):
            raise AttributeError(name)
        return _link(self).getattr(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_ldd_"):
            object.__setattr__(self, name, value)
        else:
            _link(self).request("setattr", self, name, value)

    def __delattr__(self, name: str) -> None:
        _link(self).request("delattr", self, name)

    def __reduce_ex__(self, protocol: Any) -> Any:
        return Proxy.__reduce_ex__(self, protocol)  # type: ignore[arg-type]

    def __getstate__(self) -> Any:
        return Proxy.__getstate__(self)  # type: ignore[arg-type]


def _text(link: Link, value: Any, what: str) -> str:
    if type(value) is not str:
        raise link.protocol(f"the subject answered {what}() with {type(value).__name__}")
    return value


def _method(op: str, arity: int) -> Any:
    if arity == 0:

        def unary(self: Any) -> Any:
            return _link(self).request(op, self)

        return unary
    if arity == 1:

        def binary(self: Any, other: Any) -> Any:
            return _link(self).binary(op, self, other)

        return binary

    def many(self: Any, *args: Any) -> Any:
        return _link(self).request(op, self, *args)

    return many


def _reflected(op: str) -> Any:
    def method(self: Any, other: Any) -> Any:
        return _link(self).binary(f"r{op}", self, other)

    return method


_MUTABLE = (list, dict, set, bytearray)


def _call(self: Any, /, *args: Any, **kwargs: Any) -> Any:
    """Call at the owner; lists, dicts and sets passed as arguments get the callee's changes.

    The containers cross as copies, so a function that sorts or fills its argument in
    place would otherwise change only its copy.
    """
    link = _link(self)
    positions = tuple(i for i, arg in enumerate(args) if type(arg) in _MUTABLE)
    names = tuple(name for name, arg in kwargs.items() if type(arg) in _MUTABLE)
    if not positions and not names:
        handling = sys.exc_info()[1]
        if handling is not None and getattr(link, "forwards_handling", False):
            return link.request("callhandling", self, args, kwargs, handling)
        return link.request("call", self, args, kwargs)
    answer = link.request("callsync", self, args, kwargs, positions, names)
    given = [args[i] for i in positions] + [kwargs[name] for name in names]
    if type(answer) is not tuple or len(answer) != 2 or type(answer[1]) is not tuple:
        raise link.protocol("the subject answered a call in the wrong shape")
    result, states = answer
    if len(states) != len(given):
        raise link.protocol("the subject answered a call with the wrong arguments")
    for original, state in zip(given, states, strict=True):
        if type(state) is not type(original):
            raise link.protocol("the subject changed the type of an argument")
        if state != original:
            if type(original) in (list, bytearray):
                original[:] = state
            else:
                original.clear()
                original.update(state)
    return result


class _FunctionCall:
    """``__call__`` of the subject's stand-ins of the judge's plain functions.

    It is a function made with the parameters of the judge's own (:class:`_Arity`),
    so that a call with arguments it does not take fails as in one process: raised
    by the call itself, its traceback holds the caller's frame alone.  Code that
    tries several arities (pyparsing's parse actions) reads that traceback.  Where
    the parameters cannot be copied, the stand-in calls as any other.
    """

    def __get__(self, obj: Any, cls: Any = None) -> Any:
        if obj is None:
            return _call
        link = _link(obj)
        # The handle's number names one judge function for good (numbers are never
        # given twice): what it binds is asked once.
        number = object.__getattribute__(obj, "_ldd_id")
        arity = link.arity_calls.get(number)
        if arity is None:
            arity = _Arity.of(link.request("arity", obj)) or False
            if len(link.arity_calls) >= _MOST_ARITIES:
                link.arity_calls.clear()
            link.arity_calls[number] = arity
        if isinstance(arity, _Arity):
            return arity.bind(obj)
        return types.MethodType(_call, obj)


_MOST_ARITIES = 10_000
# The class of an object, set past any ``__class__`` its stand-in class claims.
_SET_CLASS = vars(object)["__class__"].__set__
# The parameter kinds of inspect.Parameter, by number.
_POSITIONAL_ONLY, _EITHER, _VAR_POSITIONAL, _KEYWORD_ONLY, _VAR_KEYWORD = range(5)
# A parameter left to its default: not passed, so that the owner's default applies.
_MISSING = object()


class _Arity:
    """The parameters of one function of the other side, as a function of this side's."""

    __slots__ = ("_code", "_lead", "_make", "_name", "_qualname")

    def __init__(self, make: Any, code: Any, lead: tuple[str, ...], name: str, qualname: str):
        self._make, self._code, self._lead = make, code, lead
        self._name, self._qualname = name, qualname

    @classmethod
    def of(cls, data: Any) -> _Arity | None:
        """What ``data`` (calls.arity_data) describes, or None where it cannot be copied."""
        if type(data) is not tuple or len(data) != 3:
            return None
        name, qualname, params = data
        if type(name) is not str or type(qualname) is not str or type(params) is not tuple:
            return None
        if not all(_parameter_ok(item) for item in params):
            return None
        if len({item[0] for item in params}) != len(params):
            return None
        source, lead = _signature_source(params)
        namespace: dict[str, Any] = {"_ldd_missing": _MISSING}
        try:
            exec(compile(source, f"<{name}>", "exec"), namespace)  # our own source
        except SyntaxError:
            return None
        make = namespace["_ldd_make"]
        code = make(None).__code__.replace(co_name=name)
        if hasattr(code, "co_qualname"):
            code = code.replace(co_qualname=qualname)
        return cls(make, code, lead, name, qualname)

    def bind(self, target: Any) -> Any:
        """The function that calls ``target`` with what it is given."""
        made = self._make(functools.partial(_forward, target, self._lead))
        made.__code__ = self._code
        made.__name__, made.__qualname__ = self._name, self._qualname
        return made


def _forward(
    target: Any,
    lead: tuple[str, ...],
    values: tuple[Any, ...],
    rest: tuple[Any, ...],
    keywords: dict[str, Any],
    extra: dict[str, Any],
) -> Any:
    """Call ``target`` with the arguments the made function bound."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    skipped = False
    for parameter, value in zip(lead, values, strict=True):
        if value is _MISSING:
            skipped = True  # a later one that was given goes by its name
        elif skipped:
            kwargs[parameter] = value
        else:
            args.append(value)
    kwargs.update((key, value) for key, value in keywords.items() if value is not _MISSING)
    kwargs.update(extra)
    return _call(target, *args, *rest, **kwargs)


def _parameter_ok(item: Any) -> bool:
    if type(item) is not tuple or len(item) != 3:
        return False
    parameter, kind, has_default = item
    return (
        type(parameter) is str
        and parameter.isidentifier()
        and not keyword.iskeyword(parameter)
        and not parameter.startswith("_ldd_")
        and type(kind) is int
        and _POSITIONAL_ONLY <= kind <= _VAR_KEYWORD
        and type(has_default) is bool
    )


def _signature_source(params: tuple[tuple[str, int, bool], ...]) -> tuple[str, tuple[str, ...]]:
    """``_ldd_make(forward)``, which defines a function of these parameters; its leading ones."""
    parts: list[str] = []
    lead = tuple(p for p, kind, _ in params if kind in (_POSITIONAL_ONLY, _EITHER))
    rest, keywords, extra = "()", [], "{}"
    previous = None
    for parameter, kind, has_default in params:
        if previous == _POSITIONAL_ONLY and kind != _POSITIONAL_ONLY:
            parts.append("/")
        if kind == _KEYWORD_ONLY and previous not in (_VAR_POSITIONAL, _KEYWORD_ONLY):
            parts.append("*")
        if kind == _VAR_POSITIONAL:
            parts.append(f"*{parameter}")
            rest = parameter
        elif kind == _VAR_KEYWORD:
            parts.append(f"**{parameter}")
            extra = parameter
        else:
            parts.append(parameter + ("=_ldd_missing" if has_default else ""))
            if kind == _KEYWORD_ONLY:
                keywords.append(parameter)
        previous = kind
    if previous == _POSITIONAL_ONLY:
        parts.append("/")
    values = "".join(f"{p}, " for p in lead)
    named = ", ".join(f"{p!r}: {p}" for p in keywords)
    source = (
        "def _ldd_make(_ldd_forward):\n"
        f"    def _ldd_made({', '.join(parts)}):\n"
        f"        return _ldd_forward(({values}), {rest}, {{{named}}}, {extra})\n"
        "    return _ldd_made\n"
    )
    return source, lead


def _len(self: Any) -> int:
    link = _link(self)
    value = link.request("len", self)
    if type(value) is not int:
        raise link.protocol(f"the subject answered len() with {type(value).__name__}")
    link.drains.hinted(self, asked=True)
    return value


def _iter(self: Any) -> Any:
    link = _link(self)
    iterator = link.request("iter", self)
    link.drains.iterated(self, iterator)
    return iterator


def _iter_self(self: Any) -> Any:
    # A builtin iterator type of the other side: iter() is the object, no request needed.
    _link(self).drains.iterated(self, self)
    return self


def _next(self: Any) -> Any:
    return _link(self).drains.next(self)


def _asked_hint(self: Any) -> Any:
    link = _link(self)
    value = link.request("length_hint", self)
    link.drains.hinted(self, asked=True)
    return value


def _remote_copy(self: Any) -> Any:
    return _link(self).request("copy", self)


def _remote_deepcopy(self: Any, memo: Any = None) -> Any:
    return _link(self).request("deepcopy", self)


def _copies(made: type) -> type:
    """Let ``copy.copy`` and ``copy.deepcopy`` copy at the owner, whatever the class has.

    Through the ``copy`` module's own dispatch, not a ``__copy__`` method: ``tee`` and
    others look for ``__copy__`` to decide how to treat an object, and a stand-in has
    it only where its class does.
    """
    copy._copy_dispatch[made] = _remote_copy  # type: ignore[attr-defined]
    copy._deepcopy_dispatch[made] = _remote_deepcopy  # type: ignore[attr-defined]
    return made


def _namespace_get(self: Any, key: Any, default: Any = None) -> Any:
    # A class namespace's get(): its default stays here (monkeypatch passes its own
    # ``notset`` sentinel, pytest's machinery, which may not cross); the item is asked.
    try:
        return self[key]
    except KeyError:
        return default


def _own_hint(self: Any) -> Any:
    # The remote type has no __length_hint__: neither has the object, in effect.
    _link(self).drains.hinted(self, asked=False)
    return NotImplemented


def _bool(self: Any) -> bool:
    value = _link(self).request("bool", self)
    if type(value) is not bool:
        raise _link(self).protocol(f"the subject answered bool() with {type(value).__name__}")
    return value


def _contains(self: Any, item: Any) -> bool:
    return _link(self).request("contains", self, item) is True


def _exit(self: Any, cls: Any, exc: Any, tb: Any) -> Any:
    # The real exception crosses (as a handle its owner keeps); the traceback as the
    # line it points at, which the other side turns into a traceback of its own.
    line = tb.tb_lineno if isinstance(tb, types.TracebackType) else None
    return _link(self).request("exit", self, cls, exc, line)


def _descriptor_get(self: Any, instance: Any, owner: Any = None) -> Any:
    return _link(self).request("get", self, instance, owner)


_NUMERIC = (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "lshift", "rshift",
    "and", "or", "xor", "divmod",
)  # fmt: skip


def _special_methods() -> dict[str, Any]:
    table: dict[str, Any] = {
        "__call__": _call,
        "__len__": _len,
        "__bool__": _bool,
        "__contains__": _contains,
        "__iter__": _iter,
        "__next__": _next,
        "__reversed__": _method("reversed", 0),
        "__length_hint__": _asked_hint,
        "__fspath__": _method("fspath", 0),
        "__bytes__": _method("bytes", 0),
        # ``await`` of the other side's coroutine: the iterator its ``__await__`` gives
        # is the other side's too, and ``send``/``throw`` are asked of it there.
        "__await__": _method("await", 0),
        "__aiter__": _method("aiter", 0),
        "__anext__": _method("anext", 0),
        "__getitem__": _method("getitem", 2),
        "__setitem__": _method("setitem", 2),
        "__delitem__": _method("delitem", 2),
        "__enter__": _method("enter", 0),
        "__exit__": _exit,
        "__copy__": _method("copy", 0),
        "__deepcopy__": _remote_deepcopy,
        "__round__": _method("round", 2),
        # A stand-in kept in a class of this side (a workspace decorator on a test
        # class's method) binds, caches and sets as its remote class says.
        "__get__": _descriptor_get,
        "__set__": _method("set", 2),
        "__delete__": _method("delete", 2),
        "__set_name__": _method("set_name", 2),
    }
    for name in _NUMERIC:
        table[f"__{name}__"] = _method(name, 1)
        table[f"__r{name}__"] = _reflected(name)
    for name in ["add", "sub", "mul", "truediv", "floordiv", "mod", "or", "and", "xor"]:
        table[f"__i{name}__"] = _method(f"i{name}", 1)
    for name in ["neg", "pos", "abs", "invert", "int", "float", "index", "complex"]:
        table[f"__{name}__"] = _method(name, 0)
    for name in ["trunc", "floor", "ceil"]:
        table[f"__{name}__"] = _method(name, 0)
    # Value mirrors forward these only where their class overrides the builtin's.
    for name in ["eq", "ne", "lt", "le", "gt", "ge"]:
        table[f"__{name}__"] = _method(name, 1)
    table["__hash__"] = Proxy.__hash__
    table["__repr__"] = Proxy.__repr__
    table["__str__"] = Proxy.__str__
    table["__format__"] = Proxy.__format__
    return table


SPECIAL = _special_methods()
if set(SPECIAL) != handles.SPECIAL_NAMES:  # pragma: no cover - a programming error
    msg = f"stand-ins and class records disagree: {set(SPECIAL) ^ handles.SPECIAL_NAMES}"
    raise AssertionError(msg)


# The builtin types that cannot cross by name, by their qualified name: a stand-in of
# one of their instances claims the receiver's own type as its ``__class__``, so that
# ``inspect.isfunction``, ``isgenerator``, ``isgeneratorfunction`` (through ``__code__``)
# and ``isinstance(obj, types.FunctionType)`` answer as in one process.  ``type(obj)``
# stays the stand-in's own type.
_CLAIMED = {
    "function": types.FunctionType,
    "method": types.MethodType,
    "builtin_function_or_method": types.BuiltinFunctionType,
    "method_descriptor": types.MethodDescriptorType,
    "wrapper_descriptor": types.WrapperDescriptorType,
    "method-wrapper": types.MethodWrapperType,
    "classmethod_descriptor": types.ClassMethodDescriptorType,
    "generator": types.GeneratorType,
    "coroutine": types.CoroutineType,
    "async_generator": types.AsyncGeneratorType,
    "code": types.CodeType,
    "mappingproxy": types.MappingProxyType,
}
# The iterators and views of the builtin containers, which ``reversed(x).__class__``
# and ``type(iter(x))`` name: claimed the same way.
_MADE: tuple[Any, ...] = (
    iter([]), reversed([]), iter(()), iter(range(0)), iter(range(2**64)), iter(set()),
    iter(""), iter("\u00e9"), iter(b""), iter(bytearray()), iter({}), iter({}.values()),
    iter({}.items()), reversed({}), reversed({}.values()), reversed({}.items()),
    {}.keys(), {}.values(), {}.items(), iter(int, 0),
)  # fmt: skip
_CLAIMED.update((type(made).__name__, type(made)) for made in _MADE)
# Classes of the standard library whose instances keep their identity as handles (a
# ``TypeVar`` is the same object wherever it is used), claimed by their module and name.
_CLAIMED_STDLIB = {("typing", "TypeVar"): typing.TypeVar}


def _claims(cls: type) -> property:
    return property(lambda self: cls)


def _enum_shadow(record: handles.ClassRecord) -> type:
    """An empty enum class named like the remote one, for its members' ``__class__``.

    ``isinstance(member, enum.Enum)`` then holds (pytest's parameter ids are an
    enum member's ``str()``), and ``issubclass`` of it still finds the stand-in's
    classes through ``_ldd_mro``.
    """
    make: Any = enum.Enum  # its functional form, with a name known at run time
    shadow: type = make(record.name, (), module=record.module, qualname=record.qualname)
    type.__setattr__(shadow, "_ldd_mro", record.mro)
    return shadow


_NATIVE_METHODS = {"tzinfo": ("utcoffset", "dst", "tzname", "fromutc")}


def _remote_method(name: str) -> Any:
    def method(self: Any, /, *args: Any, **kwargs: Any) -> Any:
        return _link(self).getattr(self, name)(*args, **kwargs)

    method.__name__ = name
    return method


class _InstanceDoc:
    """``__doc__`` of a stand-in class whose instances may carry their own.

    On an instance it is asked of the owner, where ``self.__doc__ = ...`` in
    ``__init__`` (funcy's ``cached_property`` copies its function's) sets one of the
    instance's own.  On the class it is the class's docstring, as described; where the
    class's ``__doc__`` is itself a descriptor (toolz's ``excepts``, whose instances
    describe their function), the class's is asked of the owner too, as Python asks
    that descriptor there.
    """

    __slots__ = ("ask_class", "doc")

    def __init__(self, doc: Any, *, ask_class: bool = False) -> None:
        self.doc = doc
        self.ask_class = ask_class

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is not None:
            return _link(obj).getattr(obj, "__doc__")
        if self.ask_class and isinstance(owner, RemoteMeta):
            return type.__getattribute__(owner, "_ldd_link").getattr(owner, "__doc__")
        return self.doc


class _InstanceModule(str):
    """``__module__`` of a stand-in class, which its instances may carry on their own.

    On the class it is the string described (``type`` hands back what the class's
    namespace holds, so it must be one); on an instance it is asked of the owner, where
    ``self.__module__ = func.__module__`` (toolz's ``curry``) sets one of its own.
    """

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self
        return _link(obj).getattr(obj, "__module__")


class _OwnMember:
    """A member a value class defines again, asked of its owner on the class too.

    A test's ``datetime`` subclass that overrides the classmethod ``today`` (parse's
    suite freezes the year so) is called as ``Frozen.today()`` by workspace code: read
    off the class, the member is the owner's classmethod bound to its class, not a
    property of the instances.
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return type.__getattribute__(owner, "_ldd_link").getattr(owner, self.name)
        return _link(obj).getattr(obj, self.name)


def _remote_attribute(name: str) -> property:
    def get(self: Any) -> Any:
        return _link(self).getattr(self, name)

    return property(get)


class _Batch:
    """What a drain brought of one remote iterator, and how it ended."""

    __slots__ = ("ended", "error", "items", "size")

    def __init__(self) -> None:
        self.items: collections.deque[Any] = collections.deque()
        self.ended = False
        self.error: BaseException | None = None
        self.size = Drains.FIRST


class Drains:
    """Reading a remote iterator in batches when its consumer reads it to the end.

    ``list(it)``, ``tuple(it)``, ``sorted(it)`` and ``"".join(it)`` take an iterator
    whole, in C, with nothing else between two items: they ask ``iter()`` and then a
    length hint (``__len__`` or ``__length_hint__``) of what they iterate, and then
    ``next()`` until it ends.  When a stand-in sees exactly that sequence -- the hint
    asked right after ``iter()``, with no request in between, and ``next()`` right
    after -- it asks for the items in batches (``drain``) instead of one request per
    item.  The callbacks the items need still run in order, inside the batch.

    Should the consumer stop before the end after all (code that asks for a length
    hint itself), the remote iterator was read ahead of it: :meth:`leftovers` says
    so, and the side reports a limit of the isolation, never a silent difference.
    """

    FIRST = 128
    MOST = 8192

    def __init__(self, link: Link) -> None:
        self.link = link
        self._iterated: tuple[int, Any, int] | None = None
        self._armed: tuple[Any, int] | None = None
        self._batches: dict[int, tuple[Any, _Batch]] = {}

    def _now(self) -> int:
        return self.link.calls.count  # type: ignore[attr-defined, no-any-return]

    def iterated(self, iterable: Any, iterator: Any) -> None:
        """``iter(iterable)`` gave ``iterator``."""
        self._iterated = (id(iterable), iterator, self._now())

    def hinted(self, proxy: Any, *, asked: bool) -> None:
        """A length hint of ``proxy`` was taken (``asked``: with a request of its own)."""
        now = self._now()
        iterated = self._iterated
        if iterated is not None and iterated[0] == id(proxy) and now - iterated[2] == asked:
            self._armed = (iterated[1], now)
        elif not asked and "__next__" in type.__getattribute__(type(proxy), "__dict__"):
            self._armed = (proxy, now)

    def next(self, proxy: Any) -> Any:
        """``next(proxy)``: from its batch, a new batch, or one request."""
        found = self._batches.get(id(proxy))
        if found is not None and found[0] is proxy:
            return self._take(proxy, found[1])
        armed, self._armed = self._armed, None
        if armed is not None and armed[0] is proxy and armed[1] == self._now():
            batch = _Batch()
            self._batches[id(proxy)] = (proxy, batch)
            return self._take(proxy, batch)
        return self.link.request("next", proxy)

    def _take(self, proxy: Any, batch: _Batch) -> Any:
        if not batch.items and not batch.ended:
            self._fill(proxy, batch)
        if batch.items:
            return batch.items.popleft()
        del self._batches[id(proxy)]
        if batch.error is not None:
            raise batch.error
        raise StopIteration

    def _fill(self, proxy: Any, batch: _Batch) -> None:
        answer = self.link.request("drain", proxy, batch.size)
        if (
            type(answer) is not tuple
            or len(answer) != 3
            or type(answer[0]) is not tuple
            or type(answer[1]) is not bool
            or not (answer[2] is None or isinstance(answer[2], BaseException))
            or len(answer[0]) > batch.size
            or (not answer[1] and len(answer[0]) < batch.size)
        ):
            raise self.link.protocol("the subject answered a drain in the wrong shape")
        items, batch.ended, batch.error = answer
        batch.items.extend(items)
        batch.size = min(self.MOST, 2 * batch.size)

    def leftovers(self) -> bool:
        """Whether an iterator was read ahead of a consumer that stopped; forget them."""
        found = any(batch.items or not batch.ended for _, batch in self._batches.values())
        self._batches.clear()
        self._armed = self._iterated = None
        return found


# -- classes ---------------------------------------------------------------------------


def _stand_in(obj: Any) -> bool:
    """Whether ``obj`` is a stand-in of the other side's object or class.

    Every stand-in's type has an ``_ldd_mro``, RemoteMeta (a stand-in class's) too.
    """
    return hasattr(type(obj), "_ldd_mro")


def _checked_at_owner(cls: Any, obj: Any) -> bool:
    """``isinstance`` of this side's ``obj`` as the owner of ``cls`` answers.

    What the isolation cannot carry, or an owner that is gone, answers False (a limit
    that was met is noted for the running test, as for any request).
    """
    try:
        return bool(type.__getattribute__(cls, "_ldd_link").request("instancecheck", cls, obj))
    except Exception:
        return False


class RemoteMeta(type):
    """The metaclass of stand-in classes: the class itself lives on the other side."""

    _ldd_link: Any = None
    # Whether the remote metaclass is one of its own (see StandIns._metaclass).
    _ldd_checks_at_owner = False
    _ldd_mro: frozenset[int] = frozenset()
    # The attributes read off the class at its owner (see __getattribute__).
    _ldd_owner_names: frozenset[str] = frozenset()

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> Any:
        # Stand-ins are made with type.__new__; this runs only for a class statement of
        # the tests that names a stand-in as its base.
        base = next((b for b in bases if isinstance(b, RemoteMeta)), None)
        raise subclass_refused(base, name)

    def __call__(cls, /, *args: Any, **kwargs: Any) -> Any:
        return _call(cls, *args, **kwargs)

    def __getattribute__(cls, name: str) -> Any:
        # A special method or the annotations read off the class are its owner's
        # (``Cls.__eq__.__doc__``, ``Cls.__annotations__``), where the stand-in keeps
        # stubs of its own for Python's operators and type's own annotations.
        if name in _OWNER_NAMES and name in type.__getattribute__(cls, "_ldd_owner_names"):
            return type.__getattribute__(cls, "_ldd_link").getattr(cls, name)
        return type.__getattribute__(cls, name)

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("_ldd_"):
            raise AttributeError(name)
        return cls._ldd_link.getattr(cls, name)

    def __setattr__(cls, name: str, value: Any) -> None:
        if name.startswith("_ldd_"):
            type.__setattr__(cls, name, value)
        else:
            cls._ldd_link.request("setattr", cls, name, value)

    def __delattr__(cls, name: str) -> None:
        cls._ldd_link.request("delattr", cls, name)

    def __instancecheck__(cls, obj: Any) -> bool:
        if type.__instancecheck__(cls, obj):
            return True
        own = type.__getattribute__(cls, "_ldd_class")
        if own in getattr(type(obj), "_ldd_mro", ()):
            return True
        if type(cls)._ldd_checks_at_owner and not _stand_in(obj):
            # glom's _AbstractIterable counts a test's class with __iter__ by its hook.
            return _checked_at_owner(cls, obj)
        return False

    def __subclasscheck__(cls, other: Any) -> bool:
        if not isinstance(other, type):
            return type.__subclasscheck__(cls, other)
        # Never asked of the owner: an abstract class of this side asks every subclass
        # it has, stand-ins too, while this side encodes a message (``isinstance(x,
        # Mapping)``), and a request then would cross that message.
        own = type.__getattribute__(cls, "_ldd_class")
        return own in getattr(other, "_ldd_mro", ()) or type.__subclasscheck__(cls, other)

    def __repr__(cls) -> str:
        return _text(cls._ldd_link, cls._ldd_link.request("repr", cls), "repr")

    def __dir__(cls) -> list[str]:
        return [str(name) for name in cls._ldd_link.request("dir", cls)]

    def __reduce_ex__(cls, protocol: Any) -> Any:
        return Proxy.__reduce_ex__(cls, protocol)  # type: ignore[arg-type]


def subclass_refused(base: Any, name: str) -> BaseException:
    """The error for a class statement that names the stand-in class ``base`` as a base."""
    shown = base.__qualname__ if base is not None else name
    msg = (
        f"isolation='process' cannot subclass the workspace class {shown} in the"
        " hidden tests: it lives in the subject process; use isolation='inprocess'"
    )
    link = type.__getattribute__(base, "_ldd_link") if base is not None else None
    if link is None:
        return TypeError(msg)
    return link.refuse(msg)  # type: ignore[no-any-return]


class _ExceptionMeta(RemoteMeta):
    """The metaclass of mirrored exception classes: instances cross as data.

    Calling the class (the tests may build a workspace exception to compare or raise)
    constructs at the owner, whose ``__init__`` and ``__str__`` may be its own
    (``NotCallableError(msg=..., value=...)``); the exception comes back as data, a
    real exception of this mirrored class.
    """


def _exception_str(self: BaseException) -> str:
    text = StandIns.text_of(self)
    return text if text is not None else BaseException.__str__(self)


def _exception_special(name: str) -> Any:
    """A special method of an exception's class, asked of its owner.

    Its truth and its repr are read by the reporting too (``traceback`` asks ``e and
    e.__cause__``): once the owner is gone, they are ``BaseException``'s, never an
    error where pytest formats the failure.
    """
    remote = SPECIAL[name]
    if name not in ("__bool__", "__repr__"):
        return remote

    def method(self: BaseException) -> Any:
        try:
            return remote(self)
        except Exception:
            return True if name == "__bool__" else BaseException.__repr__(self)

    method.__name__ = name
    return method


def _exception_getattr(self: BaseException, name: str) -> Any:
    link = type(self)._ldd_link  # type: ignore[attr-defined]
    number = link.stand_ins.number_of(self)
    if number is None or name.startswith(("_ldd_", "__")):
        raise AttributeError(name)
    return link.getattr(self, name)


# -- making and finding stand-ins -----------------------------------------------------------

_KINDS = frozenset("ovecmn")


class StandIns:
    """One side's maker of stand-ins for the other side's objects.

    ``resolve`` is the decoder hook for the other side's descriptions; ``number_of``
    tells whether an object is a stand-in, and which remote object it stands for.
    ``may_import`` lets the subject import a standard-library module to find its own
    copy of a named class or constant; the judge only uses what it imported already.
    """

    _texts: ClassVar[weakref.WeakKeyDictionary[BaseException, str]] = weakref.WeakKeyDictionary()

    def __init__(self, link: Link, table: handles.HandleTable, *, may_import: bool) -> None:
        self.link = link
        self.table = table
        self.may_import = may_import
        # Whether stand-ins of plain functions bind their arguments as the owner's do.
        self.binds_arity = bool(getattr(link, "binds_arity", False))
        # Keyed by the class object: stand-in classes compare by identity.
        self._instance_types: dict[type, type] = {}
        self._builtin_records: dict[type, handles.ClassRecord] = {}
        self._metaclasses: dict[int, type] = {}
        self._plain_meta = type("RemoteMeta", (RemoteMeta,), {"_ldd_link": link})
        self._exception_meta = type("ExceptionMeta", (_ExceptionMeta,), {"_ldd_link": link})

    @classmethod
    def text_of(cls, exc: BaseException) -> str | None:
        """What ``str()`` gave for a mirrored exception at its owner."""
        try:
            return cls._texts.get(exc)
        except TypeError:
            return None

    def number_of(self, obj: Any) -> int | None:
        """The other side's number for ``obj`` when it is one of this side's stand-ins."""
        return self.table.number_of(obj)

    # -- descriptions -----------------------------------------------------------------
    def resolve(self, payload: Any) -> Any:
        """The stand-in for one description of the other side's object."""
        if (
            type(payload) is not tuple
            or len(payload) != 4
            or payload[0] not in _KINDS
            or type(payload[1]) is not int
        ):
            msg = f"a malformed handle {payload!r:.80}"
            raise wire.WireError(msg)
        kind, number, cls, extra = payload
        found = self.table.borrowed(number)
        if found is not None:
            if kind in ("e", "o") and isinstance(cls, type):
                self._follow_class(found, cls)
            return found
        if kind == "c":
            return self._class(number, cls, extra)
        if kind == "m":
            return self.module(number, extra)
        if kind == "n":
            own = self._named(extra)
            if own is not None:
                return own
            kind = "o"
        if not isinstance(cls, type):
            msg = f"a handle whose class is not a class ({type(cls).__name__})"
            raise wire.WireError(msg)
        if kind == "e":
            return self._exception(number, cls, extra)
        record = self._record_of(cls)
        if kind == "v":
            return self._value(number, cls, record, extra)
        made: Any = object.__new__(self.instance_type(cls, record))
        object.__setattr__(made, "_ldd_id", number)
        self.table.keep(number, made)
        return made

    def _follow_class(self, found: Any, cls: type) -> None:
        """A known object whose class its owner changed (``self.__class__ = Other``).

        h11 re-raises a ``LocalProtocolError`` as a ``RemoteProtocolError`` that way,
        funcy's ``LazyObject`` becomes the class it wraps: the stand-in follows, where
        the layouts let it.
        """
        if isinstance(found, BaseException):
            wanted: Any = cls if issubclass(cls, BaseException) else None
        elif isinstance(found, Proxy):
            wanted = self.instance_type(cls, self._record_of(cls))
        else:
            return
        if wanted is None or type(found) is wanted:
            return
        with contextlib.suppress(TypeError):  # a layout the stand-in cannot take
            _SET_CLASS(found, wanted)

    def _record_of(self, cls: type) -> handles.ClassRecord:
        number = self.number_of(cls)
        if number is not None:
            return self.table.record(number)
        name = type.__dict__["__name__"].__get__(cls)
        if getattr(builtins, name, None) is cls or handles.named_stdlib(cls) is not None:
            # A builtin type (or ``functools.partial``) crossed by name: this side
            # describes its own copy.
            found = self._builtin_records.get(cls)
            if found is None:
                found = self._builtin_records[cls] = handles.ClassRecord.of_builtin(cls)
            return found
        msg = f"a handle of an instance of this side's own class {cls.__qualname__}"
        raise wire.WireError(msg)

    def _named(self, extra: Any) -> Any:
        return handles.resolve_named(extra, may_import=self.may_import)

    def module(self, number: int, extra: Any) -> Any:
        """A module of the other side (only the judge takes them; see proxies)."""
        msg = "a module handle where no module may cross"
        raise wire.WireError(msg)

    # -- classes ----------------------------------------------------------------------
    def _class(self, number: int, meta: Any, raw: Any) -> Any:
        if (
            type(raw) is not tuple
            or len(raw) != handles.RECORD_FIELDS
            or type(raw[2]) is not tuple
        ):
            msg = f"a handle of a class the subject never described ({number})"
            raise wire.WireError(msg)
        # The bases crossed as classes (stand-ins, or this side's own builtins); the
        # record keeps the numbers of those that stand in for the other side's.
        bases = raw[2]
        if not all(isinstance(base, type) for base in bases):
            msg = "a class record whose bases are not classes"
            raise wire.WireError(msg)
        numbers = tuple(n for n in map(self.number_of, bases) if n is not None)
        self.table.take_records(((number, (*raw[:2], numbers, None, *raw[4:])),))
        record = self.table.record(number)
        own = self._own_class(record)
        stand_in = own if own is not None else self._stand_in_class(number, record, bases, meta)
        if own is None:
            for name in record.abcs:
                if name not in handles.NATIVE:
                    handles.abstract_class(name).register(stand_in)
        self.table.keep(number, stand_in, forever=True)
        return stand_in

    def _own_class(self, record: handles.ClassRecord) -> type | None:
        """This side's own class for a builtin or standard-library exception class."""
        if record.builtin is not None:
            builtin = getattr(builtins, record.builtin)
            return builtin if isinstance(builtin, type) else None
        if not record.flags & handles.EXCEPTION:
            return None
        top = record.module.partition(".")[0]
        if top not in sys.stdlib_module_names:
            return None
        module = sys.modules.get(record.module)
        if module is None and self.may_import:
            try:
                module = importlib.import_module(record.module)
            except ImportError:
                return None
        found: Any = module
        for part in record.qualname.split("."):
            found = getattr(found, part, None)
        if isinstance(found, type) and issubclass(found, BaseException):
            return found
        return None

    def _stand_in_class(
        self, number: int, record: handles.ClassRecord, bases: tuple[Any, ...], meta: Any
    ) -> type:
        """The stand-in class: also the type of the stand-ins of its instances.

        So ``type(obj) is mod.Cls`` holds, and what Python looks up on the type of an
        object (``dataclasses.is_dataclass``, ``__instancecheck__``) finds it.
        """
        namespace = self._namespace(record)
        namespace["_ldd_class"] = number
        made: type
        if record.flags & handles.EXCEPTION:
            chosen = [b for b in bases if issubclass(b, BaseException)] or [Exception]
            namespace["__str__"] = _exception_str
            namespace["__getattr__"] = _exception_getattr
            # An exception returned as a value: validators' ValidationError is falsy.
            namespace.update(
                (name, _exception_special(name))
                for name in record.special
                if name in _EXCEPTION_VALUE
            )
            namespace["__weakref__"] = _remote_attribute("__weakref__")
            try:
                made = type.__new__(self._exception_meta, record.name, tuple(chosen), namespace)
            except TypeError:  # the builtin bases' layouts conflict: keep the nearest one
                made = type.__new__(self._exception_meta, record.name, (chosen[0],), namespace)
        elif record.value is not None:
            namespace.update(self._value_namespace(record))
            # Only what the class overrides: the builtin's own methods answer the rest.
            namespace["_ldd_owner_names"] = record.special | {"__annotations__"}
            root = (ValueProxy, record.value)
            made = type.__new__(self._metaclass(meta), record.name, root, namespace)
        else:
            namespace.update(self._proxy_namespace(record))
            if record.module == "builtins" and record.qualname == "function" and self.binds_arity:
                namespace["__call__"] = _FunctionCall()
            # The orderings the class lacks are object's, here as there.
            protocol = _ALWAYS_OWNER | (record.special & set(handles.ORDERINGS))
            namespace["_ldd_owner_names"] = record.special | protocol
            native = tuple(handles.abstract_class(n) for n in record.abcs if n in handles.NATIVE)
            for base in native:
                # The native base's methods would answer here: they are the remote's.
                for name in _NATIVE_METHODS.get(base.__name__, ()):
                    namespace.setdefault(name, _remote_method(name))
            self._own_text(namespace, record)
            made = type.__new__(self._metaclass(meta), record.name, (Proxy, *native), namespace)
        type.__setattr__(made, "__qualname__", record.qualname)
        return _copies(made) if not record.flags & handles.EXCEPTION else made

    def _metaclass(self, meta: Any) -> type:
        """A stand-in metaclass with the special methods of the remote metaclass."""
        number = self.number_of(meta) if isinstance(meta, type) else None
        if number is None or meta is type:
            return self._plain_meta
        found = self._metaclasses.get(number)
        if found is None:
            record = self.table.record(number)
            namespace: dict[str, Any] = {
                name: SPECIAL[name] for name in record.special if name not in _META_OWN
            }
            # A metaclass of its own (ABCMeta and a __subclasshook__, an enum's) may
            # count this side's objects among the instances: the owner is asked.
            namespace["_ldd_checks_at_owner"] = True
            found = type(record.name, (self._plain_meta,), namespace)
            self._metaclasses[number] = found
        return found

    def _namespace(self, record: handles.ClassRecord) -> dict[str, Any]:
        return {
            "__module__": record.module,
            "__doc__": record.doc,
            "_ldd_mro": record.mro,
            "_ldd_name": record.qualname,
            "_ldd_link": self.link,
        }

    @staticmethod
    def _proxy_namespace(record: handles.ClassRecord) -> dict[str, Any]:
        namespace: dict[str, Any] = {
            name: SPECIAL[name] for name in record.special if name not in _VALUE_ONLY
        }
        for name in handles.ORDERINGS:
            # An ordering the remote class lacks is object's here too: it answers
            # NotImplemented, and the other operand's reflected method is tried.
            if name not in record.special:
                namespace[name] = getattr(object, name)
        if "__next__" in namespace and "__length_hint__" not in namespace:
            namespace["__length_hint__"] = _own_hint
        if record.flags & handles.ITER_SELF and "__iter__" in namespace:
            namespace["__iter__"] = _iter_self
        if record.module == "builtins" and record.qualname in _CLAIMED:
            namespace["__class__"] = _claims(_CLAIMED[record.qualname])
            if record.qualname == "mappingproxy":
                namespace["get"] = _namespace_get
        elif (record.module, record.qualname) in _CLAIMED_STDLIB:
            namespace["__class__"] = _claims(_CLAIMED_STDLIB[record.module, record.qualname])
        elif record.container is not None:
            # A dict, list or set subclass of the other side: its stand-in holds no
            # items of its own, but claims a class of that base for isinstance().
            shadow = type(record.name, (record.container,), {"_ldd_mro": record.mro})
            type.__setattr__(shadow, "__qualname__", record.qualname)
            type.__setattr__(shadow, "__module__", record.module)
            namespace["__class__"] = _claims(shadow)
        elif record.flags & handles.ENUM:
            namespace["__class__"] = _claims(_enum_shadow(record))
        namespace["__slots__"] = ()
        # The weak references here are this side's table's, not the object's own.
        namespace["__weakref__"] = _remote_attribute("__weakref__")
        if not record.flags & handles.HASHABLE:
            namespace["__hash__"] = None
        for flag, name in handles.REFUSED:
            if record.flags & flag:
                namespace[name] = None
        return namespace

    @staticmethod
    def _own_text(namespace: dict[str, Any], record: handles.ClassRecord) -> None:
        """``__doc__`` and ``__module__`` of a proxy class: its own, and its instances'."""
        own = bool(record.flags & handles.OWN_DOC)
        namespace["__doc__"] = _InstanceDoc(None if own else record.doc, ask_class=own)
        namespace["__module__"] = _InstanceModule(record.module)

    @staticmethod
    def _value_namespace(record: handles.ClassRecord) -> dict[str, Any]:
        namespace: dict[str, Any] = {name: SPECIAL[name] for name in record.special}
        for name in record.methods:
            # A method the class defines again (``decode`` of a bytes subclass) is its
            # own, asked of the owner; the builtin's would answer from the value alone.
            namespace[name] = _OwnMember(name)
        if record.fields is not None:
            namespace["_fields"] = record.fields
            for index, field in enumerate(record.fields):
                namespace[field] = property(_field(index), doc=f"Alias for field number {index}")
        return namespace

    def instance_type(self, cls: type, record: handles.ClassRecord) -> type:
        """The type of the stand-ins of instances of the other side's class ``cls``.

        The stand-in class itself, unless ``cls`` is this side's own (a builtin type
        that crossed by name): then a proxy type made once for it.
        """
        if isinstance(cls, RemoteMeta):
            return cls
        found = self._instance_types.get(cls)
        if found is None:
            namespace = self._proxy_namespace(record)
            namespace.update(self._namespace(record))
            self._own_text(namespace, record)
            found = _copies(type(record.name, (Proxy,), namespace))
            type.__setattr__(found, "__qualname__", record.qualname)
            self._instance_types[cls] = found
        return found

    # -- values -----------------------------------------------------------------------
    def _value(self, number: int, cls: type, record: handles.ClassRecord, value: Any) -> Any:
        base = record.value
        if base is None or type(value) is not base or not issubclass(cls, base):
            msg = f"a value handle whose value is not its class's base ({type(value).__name__})"
            raise wire.WireError(msg)
        made = wire.value_of_class(base, cls, value)
        self.table.keep(number, made)
        return made

    # -- exceptions ---------------------------------------------------------------------
    def _exception(self, number: int, cls: type, state: Any) -> BaseException:
        if not issubclass(cls, BaseException):
            msg = f"an error report whose class is not an exception ({cls.__qualname__})"
            raise wire.WireError(msg)
        if type(state) is not tuple or len(state) != 6:
            msg = "a malformed exception"
            raise wire.WireError(msg)
        args, cause, context, suppress, text, attrs = state
        if (
            type(args) is not tuple
            or type(text) is not str
            or type(suppress) is not bool
            or type(attrs) is not dict
            or not all(type(k) is str for k in attrs)
        ):
            msg = "a malformed exception"
            raise wire.WireError(msg)
        for linked in (cause, context):
            if linked is not None and not isinstance(linked, BaseException):
                msg = "an exception chained to something that is not an exception"
                raise wire.WireError(msg)
        exc = _construct(cls, args)
        exc.__cause__ = cause
        exc.__context__ = context
        exc.__suppress_context__ = suppress
        for name, value in attrs.items():
            if not name.startswith("_ldd_"):
                try:
                    setattr(exc, name, value)
                except Exception:
                    continue
        if isinstance(type(exc), _ExceptionMeta):
            self._texts[exc] = text[:_TEXT_CHARS]
        self.table.keep(number, exc)
        return exc


def _construct(cls: type[BaseException], args: tuple[Any, ...]) -> BaseException:
    """An exception of ``cls`` with ``args``, built without running code of the other side."""
    exc: BaseException
    try:
        exc = type.__call__(cls, *args)  # never the owner's constructor: data only
    except Exception:
        exc = cls.__new__(cls)
    exc.args = args
    return exc


def _field(index: int) -> Callable[[Any], Any]:
    def get(self: Any) -> Any:
        return tuple.__getitem__(self, index)

    return get


# What a stand-in class may read at its owner instead of from its own namespace; a
# proxy's class always has these (they compare, hash and print at the owner).  Its
# finalizer is the stand-in's own, so ``Cls.__del__`` is read at the owner too: a
# class without one has none there (click tests that ``StreamMixer`` has no __del__).
_NOT_SPECIAL = frozenset({"__annotations__", "__dict__", "__del__"})
_OWNER_NAMES = handles.SPECIAL_NAMES | _NOT_SPECIAL
_ALWAYS_OWNER = frozenset(handles.OBJECT_PROTOCOL) - frozenset(handles.ORDERINGS) | _NOT_SPECIAL
# The special methods an exception class of the other side may define that its
# stand-in asks of the owner: what makes an exception a value (its truth, its items,
# its own repr).
_EXCEPTION_VALUE = frozenset(
    {"__bool__", "__len__", "__iter__", "__getitem__", "__contains__", "__reversed__",
     "__repr__"}
)  # fmt: skip
# Special methods of the metaclass that the stand-in metaclass keeps its own.
_META_OWN = frozenset({"__call__", "__repr__", "__str__", "__format__", "__hash__"})
# Comparison and text methods: a proxy has them always (as requests); a value mirror has
# them only where its class overrides the builtin's.
_VALUE_ONLY = frozenset(
    {"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__repr__",
     "__str__", "__format__"}
)  # fmt: skip

# The bases' annotations are for the type checker.  A stand-in class's own MRO holds
# Proxy, and typing.get_type_hints() of a remote class reads every base's namespace:
# it must find nothing there that the remote class does not have (toolz's ``Compose``).
for _base in (Proxy, ValueProxy, RemoteMeta):
    if "__annotations__" in _base.__dict__:
        type.__delattr__(_base, "__annotations__")
