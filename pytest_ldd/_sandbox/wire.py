"""The data that crosses between the judge and the subject: a strict, bounded, tagged codec.

Neither pickle nor marshal: both run or build arbitrary things from hostile bytes.
A value is one tag byte and its payload:

=====  ======================================================================
``N``  None; ``T`` / ``F`` True / False; ``E`` Ellipsis; ``K`` NotImplemented
``i``  int in 8 bytes (signed); ``I`` any int: 4-byte length, signed bytes
``f``  float (8 bytes, nan and inf too); ``c`` complex (16 bytes)
``s``  str: 4-byte length, UTF-8 (lone surrogates kept); ``b`` bytes;
       ``y`` bytearray
``t``  tuple, ``l`` list, ``S`` set, ``Z`` frozenset: 4-byte count, items
``d``  dict: 4-byte count, key and value pairs
``r``  range: start, stop, step; ``L`` slice: start, stop, step (any values)
``x``  a stdlib value type: one kind byte (path, datetime, date, time, timedelta,
       Decimal, Fraction, UUID, OrderedDict, Counter, defaultdict, deque, a
       generic alias such as ``list[int]``, a union such as ``Optional[int]`` or
       ``int | None``, a compiled regular expression, a form of ``typing`` such as
       ``Literal['a']`` or ``List[int]``, a read-only memoryview of bytes, a node of
       ``ast``) and the value's parts as data
``B``  a builtin type, by name (``int``, ``ValueError``)
``R``  a module-level function of ``random`` (``random.choice``), by name: the two
       sides keep their generators in step (``rng.py``), so each side's
       ``random.choice`` stands for the other's, and ``f is random.choice`` holds
``H``  an object that lives in the subject; ``J`` one that lives in the judge:
       each followed by one data value the side's resolver interprets
``m``  the sender's own list, dict, set or bytearray number *n* (8 bytes), then
       its value; ``M`` the receiver's own number *n* coming back, then its value
       (see ``containers.Containers``: the same container is the same object); the
       same for a str, bytes or frozenset (``containers.Values``: its identity)
=====  ======================================================================

Only values of exactly these types are data.  An instance of a *subclass* of any
of them (an ``IntEnum`` member, a named tuple, a ``str`` with methods of its own, a
``dict`` subclass) goes to the ``other`` hook of the :class:`Encoder`, like every
other object: the sides make it a handle that keeps its class, and
:func:`base_value` gives them the value its builtin base holds, read through the
base type itself (``int.__int__``, ``str.__str__``, ``tuple.__getitem__``), never
through a method the subclass could override.

Bounds: every message is at most ``max_bytes`` long and ``max_depth`` deep; a count
can never exceed the bytes left.  Decoding bad bytes raises :class:`WireError` and
never anything else.

This module imports only the standard library: the subject and the judge load it
from a file, the interpreter under test need not have pytest-ldd installed.
"""

from __future__ import annotations

import ast
import builtins
import collections
import datetime
import decimal
import fractions
import functools
import gc
import operator
import os
import pathlib
import random
import re
import struct
import threading
import time
import types
import typing
import uuid
from collections.abc import Callable
from typing import Any

__all__ = ["MAX_BYTES", "MAX_DEPTH", "SPIN_S", "CannotCross", "Decoder", "Encoder", "WireError"]

MAX_BYTES = 32 * 1024 * 1024
#: A warning's file when its ``stacklevel`` reached past the workspace code into the
#: subject's serving loop: the line is then how many frames past it (1: the caller), to
#: be found among the judge's callers, where the call came from (see ``sync.printed``).
WARNED_AT_CALLER = "<ldd-caller>"
MAX_DEPTH = 100
# How long a side retries a read before it blocks (see Peer: "Waiting").
SPIN_S = 200e-6

_Q = struct.Struct(">q")
_D = struct.Struct(">d")
_DD = struct.Struct(">dd")
_L = struct.Struct(">I")
_SMALL_MIN = -(2**63)
_SMALL_MAX = 2**63 - 1

_PATHS = {
    pathlib.PurePosixPath: 0,
    pathlib.PosixPath: 1,
    pathlib.PureWindowsPath: 2,
}
_PATH_TYPES = {number: kind for kind, number in _PATHS.items()}
_X_PATH, _X_DATETIME, _X_DATE, _X_TIME, _X_TIMEDELTA = 0, 1, 2, 3, 4
_X_DECIMAL, _X_FRACTION, _X_UUID = 5, 6, 7
# OrderedDict compares order-sensitively and Counter has its own equality: as plain
# dicts they would compare differently, so the exact stdlib types cross as themselves.
_X_ORDERED_DICT, _X_COUNTER = 8, 9
# A defaultdict keeps its factory (data, a builtin type or a handle) and a deque its
# maxlen.
_X_DEFAULTDICT, _X_DEQUE = 10, 11
# ``list[int]``: its origin and arguments cross as values or handles.
_X_ALIAS = 12
# ``typing.Optional[int]``, ``typing.Union[a, b]`` and ``int | None``: the arguments,
# ``None`` for NoneType (which has no builtin name).
_X_TYPING_UNION, _X_UNION = 13, 14
# A compiled regular expression: its pattern (str or bytes) and flags.
_X_PATTERN = 15
# A form of ``typing`` with arguments (``Literal['a', 1]``, ``List[int]``,
# ``Callable[[int], str]``, ``Annotated[int, 'unit']``): its name in ``typing`` and
# its arguments, the form rebuilt from them (``typing.get_args`` reads them there).
_X_TYPING_FORM = 16
# A read-only one-dimensional memoryview of bytes (``memoryview(b"...")``): its bytes
# and format, a view of a copy there.  A writable view writes into the sender's
# buffer, so it stays a handle.
_X_MEMORYVIEW = 17
_VIEW_FORMATS = frozenset({"B", "b", "c"})
# A node of the standard library's ``ast`` (a tree the tests parsed and hand to a
# linter): its class's name and its fields and position attributes, a copy there of
# the receiver's own ``ast`` classes (``type(tree) is ast.Module`` holds).
_X_AST = 18
_AST_CLASSES = {
    name: cls
    for name, cls in vars(ast).items()
    if isinstance(cls, type) and issubclass(cls, ast.AST) and cls.__module__ == "ast"
}
_AST_TYPES = frozenset(_AST_CLASSES.values())
_MAX_PATTERN = 100_000

# The builtin types that may cross by name: the types themselves, never functions.
BUILTIN_TYPES = frozenset(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and not name.startswith("_")
)
# The module-level functions of ``random`` (methods of its generator), which cross by
# name: ``RRCache(choice=random.choice).choice is random.choice`` in cachetools' tests.
RANDOM_FUNCTIONS = frozenset(
    name
    for name in dir(random.Random)
    if not name.startswith("_") and callable(vars(random).get(name))
)


_METHOD_TYPES = (types.MethodType, types.BuiltinMethodType)


def _random_name(value: Any) -> str | None:
    """The name of ``random``'s module-level function that ``value`` is, or None."""
    name = getattr(value, "__name__", None)
    if name in RANDOM_FUNCTIONS and vars(random).get(name) is value:
        return str(name)
    return None


# The builtin types whose instances hold an immutable value: a subclass instance keeps
# that value (see base_value), whatever its own methods say.
# The standard library's immutable value types are among them (a ``datetime`` subclass
# such as freezegun's or pendulum's), ``datetime`` before ``date``, its base.
VALUE_BASES: tuple[type, ...] = (
    int,
    float,
    complex,
    str,
    bytes,
    tuple,
    frozenset,
    datetime.datetime,
    datetime.date,
    datetime.time,
    datetime.timedelta,
)
# Each by the name a class record gives it.
VALUE_BASE_NAMES: dict[str, type] = {}


class WireError(Exception):
    """Bytes that are not a well-formed message within the bounds, or a value that cannot cross."""


class CannotCross(WireError):
    """A value of this side that the encoding cannot carry: too deep, too large, unknown.

    A limit of the isolation, not a broken conversation: a cyclic list or a deep tree
    in one process is honest code, so the side that tried to send it refuses the one
    request or answer (``Peer.on_cannot_cross``) and the conversation goes on.
    """


def _builtin_name(cls: type) -> str | None:
    name = getattr(cls, "__name__", None)
    if type(name) is str and name in BUILTIN_TYPES and getattr(builtins, name) is cls:
        return name
    return None


class Encoder:
    """Encodes values; ``other(obj)`` returns ``(tag, payload)`` for what is not data."""

    def __init__(
        self,
        other: Callable[[Any], tuple[bytes, Any]],
        *,
        max_bytes: int = MAX_BYTES,
        begin: Callable[[], None] | None = None,
        end: Callable[..., None] | None = None,
        mark: Callable[[Any], tuple[bytes, int] | None] | None = None,
        mark_value: Callable[[Any], tuple[bytes, int] | None] | None = None,
        copied: Callable[[Any], None] | None = None,
    ) -> None:
        self._other = other
        self._max_bytes = max_bytes
        self._begin = begin
        self._end = end
        # ``mark(container)``: the tag and number that say which container it is, or None.
        self._mark = mark
        # ``mark_value(value)``: the same for a str, bytes or frozenset (its identity).
        self._mark_value = mark_value
        # ``copied(value)``: a mutable stdlib container (a defaultdict, OrderedDict,
        # Counter or deque) is about to cross as a copy.
        self._copied = copied

    def encode(self, value: Any) -> bytes:
        """One message body; raises :class:`WireError` when it is too deep or too large.

        ``begin()`` and ``end(sent=...)`` bracket it, so that what the ``other`` hook
        recorded as told to the other side is undone when the message fails.
        """
        if self._begin is not None:
            self._begin()
        sent = False
        try:
            out: list[bytes] = []
            self._put(value, out, 0)
            data = b"".join(out)
            if len(data) > self._max_bytes:
                msg = f"a message of {len(data)} bytes exceeds the limit of {self._max_bytes}"
                raise CannotCross(msg)
            sent = True
            return data
        finally:
            if self._end is not None:
                self._end(sent=sent)

    def _put(self, value: Any, out: list[bytes], depth: int) -> None:
        if depth > MAX_DEPTH:
            msg = f"a value nested deeper than {MAX_DEPTH} levels cannot cross"
            raise CannotCross(msg)
        cls = type(value)
        if value is None:
            out.append(b"N")
        elif value is True:
            out.append(b"T")
        elif value is False:
            out.append(b"F")
        elif cls is int:
            self._int(value, out)
        elif cls is str:
            # One character or none: the same object in both interpreters already.
            if self._mark_value is not None and len(value) > 1:
                found = self._mark_value(value)
                if found is not None:
                    out += (found[0], _Q.pack(found[1]))
            data = value.encode("utf-8", "surrogatepass")
            out += (b"s", _L.pack(len(data)), data)
        elif cls is float:
            out += (b"f", _D.pack(value))
        elif cls is tuple or cls is list or cls is set or cls is frozenset:
            if self._mark is not None and (cls is list or cls is set):
                self._marked(value, out, self._mark)
            elif self._mark_value is not None and cls is frozenset:
                self._marked(value, out, self._mark_value)
            out += (_SEQ_TAGS[cls], _L.pack(len(value)))  # type: ignore[index]
            for item in value:
                self._put(item, out, depth + 1)
        elif cls is dict:
            if self._mark is not None:
                self._marked(value, out, self._mark)
            out += (b"d", _L.pack(len(value)))
            for key, item in value.items():
                self._put(key, out, depth + 1)
                self._put(item, out, depth + 1)
        elif cls is bytes or cls is bytearray:
            if self._mark is not None and cls is bytearray:
                self._marked(value, out, self._mark)
            elif self._mark_value is not None and cls is bytes:
                self._marked(value, out, self._mark_value)
            out += (b"b" if cls is bytes else b"y", _L.pack(len(value)), bytes(value))
        elif cls is complex:
            out += (b"c", _DD.pack(value.real, value.imag))
        elif cls is range:
            out.append(b"r")
            for part in (value.start, value.stop, value.step):
                self._int(part, out)
        elif cls is slice:
            out.append(b"L")
            for part in (value.start, value.stop, value.step):
                self._put(part, out, depth + 1)
        elif value is Ellipsis or value is NotImplemented:
            out.append(b"E" if value is Ellipsis else b"K")
        elif cls in _AST_TYPES:
            if self._copied is not None:
                self._copied(value)
            out += (b"x", bytes((_X_AST,)))
            self._put(_ast_parts(value), out, depth + 1)
        elif cls is memoryview and (view := _view_parts(value)) is not None:
            out += (b"x", bytes((_X_MEMORYVIEW,)))
            self._put(view, out, depth + 1)
        elif cls in _TYPING_FORMS and (form := typing_form_parts(value)) is not None:
            out += (b"x", bytes((_X_TYPING_FORM,)))
            self._put(form, out, depth + 1)
        elif cls in _STDLIB:
            if self._mark_value is not None and cls in _DATETIMES:
                self._marked(value, out, self._mark_value)
            elif self._copied is not None and cls in COPIED_CONTAINERS:
                self._copied(value)
            out += (b"x", bytes((_STDLIB[cls],)))
            self._put(_stdlib_parts(value), out, depth + 1)
        elif issubclass(cls, type) and _builtin_name(value) is not None:
            name = value.__name__.encode("ascii")
            out += (b"B", _L.pack(len(name)), name)
        elif cls in _METHOD_TYPES and _random_name(value) is not None:
            name = value.__name__.encode("ascii")
            out += (b"R", _L.pack(len(name)), name)
        else:
            tag, payload = self._other(value)
            out.append(tag)
            self._put(payload, out, depth + 1)

    @staticmethod
    def _marked(
        value: Any, out: list[bytes], mark: Callable[[Any], tuple[bytes, int] | None]
    ) -> None:
        found = mark(value)
        if found is not None:
            out += (found[0], _Q.pack(found[1]))

    @staticmethod
    def _int(value: int, out: list[bytes]) -> None:
        if _SMALL_MIN <= value <= _SMALL_MAX:
            out += (b"i", _Q.pack(value))
        else:
            data = value.to_bytes((value.bit_length() + 8) // 8, "big", signed=True)
            out += (b"I", _L.pack(len(data)), data)


# The mutable containers, which cross by value with a mark that says which they are,
# and the immutable values that do so to keep their identity.
_MARKABLE = frozenset({list, dict, set, bytearray})
# The datetime types keep their identity on a round trip too (dateutil's
# ``resolve_imaginary(dt) is dt``).
_DATETIMES = frozenset({datetime.datetime, datetime.date, datetime.time, datetime.timedelta})
_IDENTIFIED = frozenset({str, bytes, frozenset}) | _DATETIMES
_SEQ_TAGS = {tuple: b"t", list: b"l", set: b"S", frozenset: b"Z"}
# The class of ``typing.Optional[int]`` (the typing form, not ``int | None``'s).
_TYPING_UNION = type(typing.Union[int, str])  # noqa: UP007
_STDLIB: dict[type, int] = {
    **dict.fromkeys(_PATHS, _X_PATH),
    datetime.datetime: _X_DATETIME,
    datetime.date: _X_DATE,
    datetime.time: _X_TIME,
    datetime.timedelta: _X_TIMEDELTA,
    decimal.Decimal: _X_DECIMAL,
    fractions.Fraction: _X_FRACTION,
    uuid.UUID: _X_UUID,
    collections.OrderedDict: _X_ORDERED_DICT,
    collections.Counter: _X_COUNTER,
    collections.defaultdict: _X_DEFAULTDICT,
    collections.deque: _X_DEQUE,
    types.GenericAlias: _X_ALIAS,
    _TYPING_UNION: _X_TYPING_UNION,
    types.UnionType: _X_UNION,
    re.Pattern: _X_PATTERN,
}


_UNIONS = (_TYPING_UNION, types.UnionType)
# The mutable containers of the standard library: they cross as copies, so what the
# receiver changes in one stays there.
COPIED_CONTAINERS = frozenset(
    {collections.defaultdict, collections.OrderedDict, collections.Counter, collections.deque}
)

# The classes of ``typing``'s subscripted forms (private to ``typing``, so looked up
# from instances): ``Literal[1]``, ``List[int]``, ``Callable[[int], str]``,
# ``Annotated[int, 0]``.  A generic class of code's own (``Box[int]``) is of the first
# kind too, but has no name in ``typing``: it stays a handle.  The bare forms
# (``typing.Literal``, ``typing.Union``, ``typing.List``, ``typing.Tuple``,
# ``typing.Callable``) cross by their name, with no arguments.
_BARE_FORMS = frozenset(
    type(getattr(typing, name)) for name in ("Literal", "Union", "List", "Tuple", "Callable")
)
_TYPING_FORMS = _BARE_FORMS | frozenset(
    type(form)
    for form in (
        typing.Literal[1],
        typing.List[int],  # noqa: UP006 - the typing form itself
        typing.Callable[[int], int],
        typing.Annotated[int, 0],
    )
)
# The values a ``Literal`` (or an ``Annotated``'s metadata) may hold here: plain
# scalars.  Building a form hashes its arguments, and a handle's hash would be a call
# to the other side in the middle of decoding.
_LITERAL_ARGS = (type(None), bool, int, float, str, bytes)


def _form_arguments_ok(name: str, args: tuple[Any, ...]) -> bool:
    """Whether ``args`` are what a form of this side may be built from while decoding."""
    if name == "Literal":
        return all(type(arg) in _LITERAL_ARGS for arg in args)
    if name == "Annotated":
        return _is_type_argument(args[0]) and _form_arguments_ok("Literal", args[1:])
    return all(_is_type_argument(arg) for arg in args)


def _is_type_argument(arg: Any) -> bool:
    # A class (a stand-in class is one, and hashes as itself), None, ``...``, or a
    # form already built from such arguments.
    cls = type(arg)
    return (
        arg is None
        or arg is Ellipsis
        or type.__subclasscheck__(type, cls)
        or cls in _TYPING_FORMS
        or cls in _UNIONS
        or cls is types.GenericAlias
    )


def _ast_parts(node: ast.AST) -> tuple[str, tuple[tuple[str, Any], ...]]:
    """The class name of an ``ast`` node, and the fields and attributes it has set."""
    cls = type(node)
    names = (*cls._fields, *cls._attributes)
    present = tuple((name, getattr(node, name)) for name in names if hasattr(node, name))
    return (cls.__name__, present)


def _ast_node(parts: Any) -> ast.AST:
    if type(parts) is not tuple or len(parts) != 2:
        msg = "a malformed ast node"
        raise WireError(msg)
    name, present = parts
    cls = _AST_CLASSES.get(name) if type(name) is str else None
    if cls is None or type(present) is not tuple:
        msg = f"no ast node class {name!r:.40}"
        raise WireError(msg)
    allowed = {*cls._fields, *cls._attributes}
    node = cls()
    for item in present:
        if type(item) is not tuple or len(item) != 2 or item[0] not in allowed:
            msg = f"an ast.{name} field it does not have"
            raise WireError(msg)
        setattr(node, item[0], item[1])
    return node


def _view_parts(view: memoryview) -> tuple[bytes, str] | None:
    """``(bytes, format)`` of a read-only 1-D byte view, or None (it stays a handle)."""
    try:
        if view.readonly and view.ndim == 1 and view.format in _VIEW_FORMATS:
            return (view.tobytes(), view.format)
    except ValueError:  # released
        pass
    return None


def _typing_form_name(value: Any) -> str | None:
    if type(value) is type(typing.Literal[1]):
        return "Literal"
    if type(value) is type(typing.Annotated[int, 0]):
        return "Annotated"
    name = getattr(value, "_name", None)
    if name is None:
        # ``ClassVar[int]``, ``Final[int]``: named by their origin, a special form.
        name = getattr(getattr(value, "__origin__", None), "_name", None)
    return name if type(name) is str else None


def typing_form_parts(value: Any) -> tuple[str, tuple[Any, ...]] | None:
    """``(name, arguments)`` of a ``typing`` form that rebuilds equal from them, or None.

    A bare form (``typing.Literal`` itself) has no arguments: it is ``typing``'s own.
    """
    if type(value) in _BARE_FORMS:
        name = getattr(value, "_name", None)
        if type(name) is str and name in typing.__all__ and vars(typing).get(name) is value:
            return (name, ())
        return None
    name = _typing_form_name(value)
    if name is None:
        return None
    if name == "Annotated":
        args: tuple[Any, ...] = (value.__origin__, *value.__metadata__)
    else:
        args = value.__args__
    if type(args) is not tuple or not args or not _form_arguments_ok(name, args):
        return None
    try:
        same = typing_form(name, args) == value
    except Exception:  # a form that cannot be rebuilt stays a handle
        return None
    return (name, args) if same else None


def typing_form(name: str, args: tuple[Any, ...]) -> Any:
    """The ``typing`` form ``name`` with ``args``: what typing_form_parts took apart."""
    form: Any = getattr(typing, name, None) if name in typing.__all__ else None
    if args == () and type(form) in _BARE_FORMS:
        return form
    usable = form is not None and (name == "Annotated" or not isinstance(form, type))
    if not usable or not args or not _form_arguments_ok(name, args):
        msg = f"no typing form {name!r:.40} with {len(args)} arguments"
        raise WireError(msg)
    if name == "Callable":
        # ``Callable[[a, b], r]`` holds ``(a, b, r)``; ``Callable[..., r]`` ``(..., r)``.
        parameters = ... if args[0] is Ellipsis and len(args) == 2 else list(args[:-1])
        return form[parameters, args[-1]]
    return form[args if len(args) > 1 else args[0]]


def value_base(cls: type) -> type | None:
    """The immutable builtin type ``cls`` derives from, by its real MRO (never ``__class__``)."""
    for base in VALUE_BASES:
        if type.__subclasscheck__(base, cls):
            return base
    return None


def value_base_name(base: type) -> str:
    """The name a class record gives the value base ``base`` (see VALUE_BASE_NAMES)."""
    return base.__name__ if base.__module__ == "builtins" else f"{base.__module__}.{base.__name__}"


VALUE_BASE_NAMES.update((value_base_name(base), base) for base in VALUE_BASES)


def base_value(base: type, value: Any) -> Any:
    """The value an instance of a subclass of ``base`` (one of VALUE_BASES) holds.

    Read through the base type's own slots, so an override of ``__int__``, ``__str__``,
    ``__iter__`` or ``__getitem__`` in the subclass does not change it.
    """
    if base is int:
        return int.__int__(value)
    if base is float:
        return float.__float__(value)
    if base is complex:
        return complex(complex.real.__get__(value), complex.imag.__get__(value))
    if base is str:
        return str.__str__(value)
    if base is bytes or base is tuple:
        return base.__getitem__(value, slice(None))
    if base is frozenset:
        return frozenset(frozenset.__iter__(value))
    fields = _DATETIME_FIELDS[base]
    parts = [fields[name].__get__(value) for name in _VALUE_PARTS[base]]
    if base is datetime.timedelta or base is datetime.date:
        return base(*parts)
    fold = fields["fold"].__get__(value)
    return base(*parts, fold=fold)


def value_of_class(base: type, cls: type, value: Any) -> Any:
    """An instance of ``cls`` (a subclass of ``base``) holding ``value`` (of ``base``)."""
    if base not in _VALUE_PARTS:
        return base.__new__(cls, value)
    parts = [getattr(value, name) for name in _VALUE_PARTS[base]]
    if base is datetime.datetime or base is datetime.time:
        return base.__new__(cls, *parts, fold=value.fold)
    return base.__new__(cls, *parts)


_VALUE_PARTS: dict[type, tuple[str, ...]] = {
    datetime.datetime: (
        "year", "month", "day", "hour", "minute", "second", "microsecond", "tzinfo"
    ),
    datetime.date: ("year", "month", "day"),
    datetime.time: ("hour", "minute", "second", "microsecond", "tzinfo"),
    datetime.timedelta: ("days", "seconds", "microseconds"),
}  # fmt: skip


def _own_descriptors(base: type) -> dict[str, Any]:
    """The base's own descriptors of its fields: a subclass's property is not read."""
    names = (*_VALUE_PARTS[base], "fold")
    found = {}
    for name in names:
        for owner in base.__mro__:
            if name in owner.__dict__:
                found[name] = owner.__dict__[name]
                break
    return found


_DATETIME_FIELDS = {base: _own_descriptors(base) for base in _VALUE_PARTS}


def _tz_parts(tz: datetime.tzinfo | None) -> Any:
    if tz is None:
        return None
    if type(tz) is datetime.timezone:
        offset = tz.utcoffset(None)
        name = tz.tzname(None)
        return ("offset", offset.days, offset.seconds, offset.microseconds, name)
    key = getattr(tz, "key", None)
    if type(tz).__module__ == "zoneinfo" and type(key) is str:
        return ("zone", key)
    # A time zone of code's own (the workspace's or the tests'): the object itself,
    # which crosses as a handle (the receiver's stand-in is a real tzinfo).
    return ("object", tz)


def _stdlib_parts(value: Any) -> Any:
    cls = type(value)
    if cls in _PATHS:
        return (_PATHS[cls], str(value))
    if cls is datetime.datetime:
        v = value
        parts = (v.year, v.month, v.day, v.hour, v.minute, v.second, v.microsecond, v.fold)
        return (*parts, _tz_parts(v.tzinfo))
    if cls is datetime.date:
        return (value.year, value.month, value.day)
    if cls is datetime.time:
        v = value
        return (v.hour, v.minute, v.second, v.microsecond, v.fold, _tz_parts(v.tzinfo))
    if cls is datetime.timedelta:
        return (value.days, value.seconds, value.microseconds)
    if cls is decimal.Decimal:
        return str(value)
    if cls is fractions.Fraction:
        return (value.numerator, value.denominator)
    if cls is collections.OrderedDict:
        # The exact stdlib type (checked above): its own order, not the dict's storage.
        return tuple(collections.OrderedDict.items(value))
    if cls is collections.Counter or cls is collections.defaultdict:
        items = tuple(dict.items(value))
        return items if cls is collections.Counter else (value.default_factory, items)
    if cls is collections.deque:
        return (tuple(collections.deque.__iter__(value)), value.maxlen)
    if cls is types.GenericAlias:
        return (value.__origin__, value.__args__)
    if cls is re.Pattern:
        return (value.pattern, value.flags)
    if cls in _UNIONS:
        return tuple(None if arg is type(None) else arg for arg in value.__args__)
    return value.bytes


class Decoder:
    """Decodes message bodies; ``refs[tag](payload)`` resolves ``H`` / ``J`` references."""

    def __init__(
        self,
        refs: dict[bytes, Callable[[Any], Any]],
        marked: Callable[[bytes, int, Any], Any] | None = None,
        marked_value: Callable[[bytes, int, Any], Any] | None = None,
    ) -> None:
        self._refs = refs
        # ``marked(tag, number, value)``: the container to use for a marked value;
        # ``marked_value``: the str, bytes or frozenset to use.
        self._marked = marked
        self._marked_value = marked_value

    def decode(self, data: bytes) -> Any:
        """The value of one message body; :class:`WireError` for anything malformed."""
        if len(data) > MAX_BYTES:
            msg = f"a message of {len(data)} bytes exceeds the limit of {MAX_BYTES}"
            raise WireError(msg)
        view = memoryview(data)
        try:
            value, end = self._get(view, 0, 0)
        except WireError:
            raise
        except (ValueError, TypeError, ArithmeticError, IndexError, KeyError, struct.error) as exc:
            msg = f"a malformed message ({type(exc).__name__}: {exc})"
            raise WireError(msg) from None
        except RecursionError:
            msg = "a message nested too deep"
            raise WireError(msg) from None
        if end != len(data):
            msg = f"{len(data) - end} stray bytes after the message"
            raise WireError(msg)
        return value

    def _get(self, data: memoryview, pos: int, depth: int) -> tuple[Any, int]:
        if depth > MAX_DEPTH:
            msg = f"a message nested deeper than {MAX_DEPTH} levels"
            raise WireError(msg)
        if pos >= len(data):
            msg = "a message ends in the middle of a value"
            raise WireError(msg)
        tag = data[pos : pos + 1].tobytes()
        pos += 1
        if tag == b"N":
            return None, pos
        if tag == b"T":
            return True, pos
        if tag == b"F":
            return False, pos
        if tag == b"i":
            return _Q.unpack_from(data, pos)[0], pos + 8
        if tag == b"s":
            raw, pos = _chunk(data, pos)
            return str(raw, "utf-8", "surrogatepass"), pos
        if tag == b"f":
            return _D.unpack_from(data, pos)[0], pos + 8
        if tag in (b"t", b"l", b"S", b"Z"):
            count, pos = _count(data, pos)
            items = []
            for _ in range(count):
                item, pos = self._get(data, pos, depth + 1)
                items.append(item)
            return _MAKERS[tag](items), pos
        if tag == b"d":
            count, pos = _count(data, pos, per_item=2)
            result = {}
            for _ in range(count):
                key, pos = self._get(data, pos, depth + 1)
                result[key], pos = self._get(data, pos, depth + 1)
            return result, pos
        if tag == b"b":
            raw, pos = _chunk(data, pos)
            return raw, pos
        if tag == b"I":
            raw, pos = _chunk(data, pos)
            return int.from_bytes(raw, "big", signed=True), pos
        if tag == b"c":
            real, imag = _DD.unpack_from(data, pos)
            return complex(real, imag), pos + 16
        if tag == b"x":
            kind = data[pos]
            parts, pos = self._get(data, pos + 1, depth + 1)
            return _stdlib_value(kind, parts), pos
        if tag == b"y":
            raw, pos = _chunk(data, pos)
            return bytearray(raw), pos
        if tag == b"r":
            parts = []
            for _ in range(3):
                part, pos = self._get(data, pos, depth + 1)
                parts.append(part)
            start, stop, step = _ints(tuple(parts), 3)
            return range(start, stop, step), pos
        if tag == b"L":
            parts = []
            for _ in range(3):
                part, pos = self._get(data, pos, depth + 1)
                parts.append(part)
            return slice(*parts), pos
        if tag == b"E":
            return Ellipsis, pos
        if tag == b"K":
            return NotImplemented, pos
        if tag == b"B":
            raw, pos = _chunk(data, pos)
            name = raw.decode("ascii")
            if name not in BUILTIN_TYPES:
                msg = f"{name!r} is not a builtin type"
                raise WireError(msg)
            return getattr(builtins, name), pos
        if tag == b"R":
            raw, pos = _chunk(data, pos)
            name = raw.decode("ascii", "replace")
            if name not in RANDOM_FUNCTIONS:
                msg = f"{name!r:.40} is not a function of the random module"
                raise WireError(msg)
            return getattr(random, name), pos
        if tag in self._refs:
            payload, pos = self._get(data, pos, depth + 1)
            return self._refs[tag](payload), pos
        if (tag == b"m" or tag == b"M") and self._marked is not None:
            number = _Q.unpack_from(data, pos)[0]
            value, pos = self._get(data, pos + 8, depth)
            marked_type = type(value)
            if marked_type in _MARKABLE:
                return self._marked(tag, number, value), pos
            if marked_type in _IDENTIFIED and self._marked_value is not None:
                return self._marked_value(tag, number, value), pos
            msg = f"a mark on a {marked_type.__name__}"
            raise WireError(msg)
        msg = f"an unknown tag {tag!r}"
        raise WireError(msg)


_MAKERS: dict[bytes, Callable[[list[Any]], Any]] = {
    b"t": tuple,
    b"l": list,
    b"S": set,
    b"Z": frozenset,
}


def _count(data: memoryview, pos: int, per_item: int = 1) -> tuple[int, int]:
    (count,) = _L.unpack_from(data, pos)
    pos += 4
    if count * per_item > len(data) - pos:
        msg = f"a count of {count} items exceeds the bytes left"
        raise WireError(msg)
    return count, pos


def _chunk(data: memoryview, pos: int) -> tuple[bytes, int]:
    (size,) = _L.unpack_from(data, pos)
    pos += 4
    if size > len(data) - pos:
        msg = f"a length of {size} bytes exceeds the bytes left"
        raise WireError(msg)
    return data[pos : pos + size].tobytes(), pos + size


def _ints(parts: Any, count: int) -> tuple[int, ...]:
    if type(parts) is not tuple or len(parts) != count or not all(type(p) is int for p in parts):
        msg = f"expected {count} ints (got {parts!r:.80})"
        raise WireError(msg)
    return parts


# The datetime classes, held in a dict: freezegun replaces module attributes that are
# the real classes (``datetime.datetime`` itself, and any module's alias of it), and a
# value this side decodes is the real type whatever a test froze.
_REAL_DT: dict[str, type[Any]] = {
    name: getattr(datetime, name) for name in ("datetime", "date", "time", "timedelta")
}


_REAL_TIMEZONE = datetime.timezone  # freezegun leaves timezone alone


def _tz_value(parts: Any) -> datetime.tzinfo | None:
    if parts is None:
        return None
    if type(parts) is tuple and len(parts) == 5 and parts[0] == "offset":
        days, seconds, micro = _ints(parts[1:4], 3)
        name = parts[4]
        offset = _REAL_DT["timedelta"](days, seconds, micro)
        if name is None or type(name) is not str:
            return _REAL_TIMEZONE(offset)
        return _REAL_TIMEZONE(offset, name)
    if type(parts) is tuple and len(parts) == 2 and parts[0] == "zone" and type(parts[1]) is str:
        import zoneinfo

        try:
            return zoneinfo.ZoneInfo(parts[1])
        except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
            msg = f"an unknown time zone {parts[1]!r:.80}"
            raise WireError(msg) from exc
    object_zone = type(parts) is tuple and len(parts) == 2 and parts[0] == "object"
    if object_zone and isinstance(parts[1], datetime.tzinfo):
        return parts[1]
    msg = "a malformed time zone"
    raise WireError(msg)


def _pairs(parts: Any, kind: int) -> dict[Any, Any]:
    if type(parts) is not tuple or not all(type(p) is tuple and len(p) == 2 for p in parts):
        msg = f"a malformed mapping of kind {kind}"
        raise WireError(msg)
    try:
        return dict(parts)
    except TypeError as exc:  # an unhashable key
        msg = f"a mapping of kind {kind} with an unhashable key"
        raise WireError(msg) from exc


def _stdlib_value(kind: int, parts: Any) -> Any:
    if kind == _X_PATH:
        if type(parts) is not tuple or len(parts) != 2 or type(parts[1]) is not str:
            msg = "a malformed path"
            raise WireError(msg)
        cls = _PATH_TYPES.get(parts[0])
        if cls is None:
            msg = f"an unknown path kind {parts[0]!r:.20}"
            raise WireError(msg)
        return cls(parts[1])
    if kind == _X_DATETIME and type(parts) is tuple and len(parts) == 9:
        year, month, day, hour, minute, second, micro = _ints(parts[:7], 7)
        (fold,) = _ints(parts[7:8], 1)
        tz = _tz_value(parts[8])
        return _REAL_DT["datetime"](year, month, day, hour, minute, second, micro, tz, fold=fold)
    if kind == _X_DATE:
        return _REAL_DT["date"](*_ints(parts, 3))
    if kind == _X_TIME and type(parts) is tuple and len(parts) == 6:
        hour, minute, second, micro = _ints(parts[:4], 4)
        (fold,) = _ints(parts[4:5], 1)
        return _REAL_DT["time"](hour, minute, second, micro, _tz_value(parts[5]), fold=fold)
    if kind == _X_TIMEDELTA:
        return _REAL_DT["timedelta"](*_ints(parts, 3))
    if kind == _X_DECIMAL and type(parts) is str and len(parts) < 10_000:
        try:
            return decimal.Decimal(parts)
        except decimal.InvalidOperation as exc:
            msg = f"a malformed Decimal {parts!r:.40}"
            raise WireError(msg) from exc
    if kind == _X_FRACTION:
        numerator, denominator = _ints(parts, 2)
        return fractions.Fraction(numerator, denominator)
    if kind == _X_UUID and type(parts) is bytes and len(parts) == 16:
        return uuid.UUID(bytes=parts)
    if kind == _X_DEFAULTDICT and type(parts) is tuple and len(parts) == 2:
        factory, items = parts
        if factory is not None and not callable(factory):
            msg = "a defaultdict whose factory cannot be called"
            raise WireError(msg)
        return collections.defaultdict(factory, _pairs(items, kind))
    if kind == _X_DEQUE and type(parts) is tuple and len(parts) == 2:
        items, maxlen = parts
        if type(items) is not tuple or not (maxlen is None or type(maxlen) is int):
            msg = "a malformed deque"
            raise WireError(msg)
        return collections.deque(items, maxlen)
    if kind == _X_ALIAS and type(parts) is tuple and len(parts) == 2 and type(parts[1]) is tuple:
        return types.GenericAlias(parts[0], parts[1])
    if kind in (_X_TYPING_UNION, _X_UNION) and type(parts) is tuple and len(parts) > 1:
        try:
            if kind == _X_TYPING_UNION:
                return typing.Union[parts]  # noqa: UP007 - the typing form itself
            return functools.reduce(operator.or_, parts)
        except TypeError as exc:
            msg = "a union of arguments that are not types"
            raise WireError(msg) from exc
    if kind == _X_PATTERN and type(parts) is tuple and len(parts) == 2:
        pattern, flags = parts
        if type(pattern) in (str, bytes) and len(pattern) <= _MAX_PATTERN and type(flags) is int:
            try:
                return re.compile(pattern, flags)
            except (re.error, ValueError, OverflowError) as exc:
                msg = f"a malformed regular expression {pattern!r:.40}"
                raise WireError(msg) from exc
    if kind == _X_AST:
        return _ast_node(parts)
    if kind == _X_MEMORYVIEW and type(parts) is tuple and len(parts) == 2:
        data, view_format = parts
        if type(data) is bytes and type(view_format) is str and view_format in _VIEW_FORMATS:
            return memoryview(data).cast(view_format)  # type: ignore[call-overload]
    if kind == _X_TYPING_FORM and type(parts) is tuple and len(parts) == 2:
        name, args = parts
        if type(name) is str and type(args) is tuple:
            try:
                return typing_form(name, args)
            except (TypeError, ValueError) as exc:
                msg = f"a typing form {name!r:.40} of arguments it does not take"
                raise WireError(msg) from exc
    if kind == _X_ORDERED_DICT:
        return collections.OrderedDict(_pairs(parts, kind))
    if kind == _X_COUNTER:
        return collections.Counter(_pairs(parts, kind))
    msg = f"a malformed stdlib value of kind {kind}"
    raise WireError(msg)


_FRAME = struct.Struct(">I")
_READ_CHUNK = 1 << 16


class PeerClosed(WireError):
    """The other side closed its end: it exited or was killed."""


class Peer:
    """One side of the conversation: framed messages over a pipe pair, re-entrant requests.

    A message is a 4-byte length and an encoded tuple: ``("q", seq, op, args, released)``
    asks, ``("r", seq, value)`` answers, ``("e", seq, error)`` reports an exception,
    ``("o", 1 or 2, text)`` carries what the served code printed, ``("o", 3,
    warning)`` a warning it issued, ``("o", 4, text)`` a note that something
    happened the isolation cannot reproduce faithfully and ``("o", 5, (module,
    name))`` that a module attribute the other side keeps changed, ``("o", 6,
    numbers)`` the handles it no longer needs and ``("o", 7, state)`` the state of
    the global random generator (all sent before the next message, so they reach
    the test that caused them, and in order).
    While a request waits for its answer the other side may ask requests of its own
    (callbacks); they are served in place, nested at most ``max_nesting`` deep.  A
    request may also start inside another's wait without being asked: a finalizer
    (``__del__``) that the collector runs there, or a signal handler.  The answer to
    the outer request can then reach the inner one first; it is kept for the outer
    one.  An exception that ends a wait (a signal handler's) leaves its answer to come:
    it is dropped when it does.  A message is read whole with the cyclic collector
    held off, so that no finalizer reads from the pipe in the middle of a message.
    ``serve(op, args)`` answers them; ``fail(exc)`` turns an exception into the error
    payload, ``raise_error(error)`` turns a received one back into an exception.
    ``wait(fd, for_write)`` may block until ``fd`` is ready (a bounded wait) or
    raise; without it reads and writes block.  ``lock`` (an ``RLock`` by default) is
    held by the thread that talks: a request holds it until its answer came, a served
    request only while its answer is encoded and sent.

    Waiting.  A side reads without blocking first; while nothing is there it retries
    for up to ``spin_s``, yielding the core between tries, and only then calls
    ``wait``.  An answer usually comes within tens of microseconds, but a process put
    to sleep in ``poll`` on an idle machine runs again only 100 microseconds or more
    after its data arrived (its core went idle, and waking a virtual machine's core
    is a trip through the hypervisor): on a 2-core VM the median round trip is about
    180 microseconds without the spin and about 35 with it.  The spin is bounded, so
    a slow answer costs at most ``spin_s`` of processor time per message.  Writes go
    first too, and wait only when the pipe is full.
    """

    def __init__(
        self,
        read_fd: int,
        write_fd: int,
        *,
        encoder: Encoder,
        decoder: Decoder,
        serve: Callable[[str, Any], Any],
        fail: Callable[[BaseException], Any],
        raise_error: Callable[[Any], BaseException],
        wait: Callable[[int, bool], None] | None = None,
        max_bytes: int = MAX_BYTES,
        budget: int | None = None,
        max_nesting: int = 50,
        spin_s: float = 0.0,
        lock: Any = None,
    ) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.encoder = encoder
        self.decoder = decoder
        self._serve = serve
        self._fail = fail
        self._raise_error = raise_error
        self._wait = wait
        self._max_bytes = max_bytes
        self._budget = budget
        self._max_nesting = max_nesting
        self._spin_s = spin_s
        self.lock = lock if lock is not None else threading.RLock()
        self._buffer = bytearray()
        self._seq = 0
        self._nesting = 0
        # Requests of this side still waiting (the talking thread's, nested), answers
        # that reached a request nested inside the one they answer, and the requests
        # an exception ended before their answer came (theirs is dropped when it does).
        self._pending: set[int] = set()
        self._early: dict[int, tuple[Any, ...]] = {}
        self._abandoned: set[int] = set()
        self.received = 0
        self.released: list[Any] = []
        # What to send before the next message: (1 or 2, printed text) pairs,
        # (3, (category, text, filename, lineno)) for a warning, (4, text) for a note,
        # (5, (module number, name)) for a module attribute that changed.
        self.outbox: list[tuple[int, Any]] = []
        self.on_output: Callable[[int, Any], None] | None = None
        # Told the handles the other side no longer needs (by the side that lent them).
        self.on_released: Callable[[Any], None] = lambda released: None
        # Run before each message is sent (the subject adds what changed to the outbox).
        self.before_send: Callable[[], None] | None = None
        # The error to answer instead of a value that cannot cross (the side notes a limit).
        self.on_cannot_cross: Callable[[str], BaseException] = CannotCross

    def send(self, message: tuple[Any, ...]) -> None:
        """Encode and write one message whole."""
        self._send_body(self.encoder.encode(message))

    def _fill(self, need: int) -> None:
        spin_until = 0.0
        while len(self._buffer) < need:
            try:
                chunk = os.read(self.read_fd, max(_READ_CHUNK, need - len(self._buffer)))
            except BlockingIOError:
                now = time.perf_counter()
                if not spin_until:
                    spin_until = now + self._spin_s
                if now < spin_until:
                    os.sched_yield()
                elif self._wait is not None:
                    self._wait(self.read_fd, False)
                continue
            except OSError as exc:
                msg = f"the pipe broke ({exc.strerror})"
                raise PeerClosed(msg) from None
            if not chunk:
                msg = "the other side closed the pipe"
                raise PeerClosed(msg)
            self.received += len(chunk)
            if self._budget is not None and self.received > self._budget:
                msg = f"more than {self._budget} bytes received: flooding"
                raise WireError(msg)
            self._buffer += chunk

    def receive(self) -> tuple[Any, ...]:
        """Read and decode one message; it must be a tuple starting with a kind and a seq."""
        collecting = gc.isenabled()
        gc.disable()  # no finalizer may read from the pipe between the length and the body
        try:
            self._fill(4)
            (size,) = _FRAME.unpack_from(self._buffer)
            if size > self._max_bytes:
                msg = (
                    f"a message of {size} bytes announced, more than the limit of "
                    f"{self._max_bytes}"
                )
                raise WireError(msg)
            self._fill(4 + size)
            body = bytes(self._buffer[4 : 4 + size])
            del self._buffer[: 4 + size]
        finally:
            if collecting:
                gc.enable()
        message = self.decoder.decode(body)
        if (
            type(message) is not tuple
            or len(message) < 3
            or message[0] not in ("q", "r", "e", "o")
            or type(message[1]) is not int
            or (message[0] == "q" and (len(message) != 5 or type(message[2]) is not str))
            or (message[0] != "q" and len(message) != 3)
        ):
            msg = f"a message of the wrong shape: {message!r:.200}"
            raise WireError(msg)
        return message

    def request(self, op: str, args: Any) -> Any:
        """Ask the other side; serve its own requests meanwhile; return or raise its answer.

        The side's ``lock`` is held throughout: one thread at a time talks.
        """
        with self.lock:
            seq = self._seq
            self._seq += 1
            released, self.released = tuple(self.released), []
            self.send(("q", seq, op, args, released))
            self._pending.add(seq)
            try:
                message = self._converse(seq)
            except BaseException:
                if seq not in self._pending:  # its answer came: the error is the answer's
                    raise
                self._pending.discard(seq)
                self._early.pop(seq, None)
                self._abandoned.add(seq)
                raise
            if message[0] == "r":
                return message[2]
            error = self._raise_error(message[2])
            # Chained where it was raised, not again to what this side handles
            # now (a test's exception passed to a workspace __exit__).
            context = error.__context__
            try:
                raise error
            finally:
                error.__context__ = context

    def _converse(self, seq: int) -> tuple[Any, ...]:
        """Serve and take in what comes until request ``seq``'s answer; return it."""
        # What handling the other side's output raised (a warning it forwarded,
        # which a filter of this side turns into an error): raised once the answer
        # is in, so that the conversation stays in step.
        raised: Exception | None = None
        while True:
            message = self._early.pop(seq, None) or self.receive()
            if message[0] == "q":
                self.serve_one(message)
                continue
            if message[0] == "o":
                try:
                    self.output(message)
                except WireError:
                    raise
                except Exception as exc:  # raised below, in step
                    if raised is None:  # never its truth: a stand-in's is a request
                        raised = exc
                continue
            if message[1] != seq:
                if message[1] in self._pending:  # an outer request's: kept for it
                    self._early[message[1]] = message
                    continue
                if message[1] in self._abandoned:
                    self._abandoned.discard(message[1])
                    continue
                msg = f"an answer to request {message[1]} arrived while {seq} was pending"
                raise WireError(msg)
            self._pending.discard(seq)
            if raised is not None:
                # The first thing to go wrong, as in one process: the warning that
                # became an error ended the call there.
                raise raised
            return message

    def serve_one(self, message: tuple[Any, ...]) -> None:
        """Answer one request of the other side.

        The served code runs without the side's ``lock`` when this thread does not hold
        it already (the subject's serving loop), so that other threads of the served
        code may ask requests of their own meanwhile; the answer is sent under it.
        """
        _, seq, op, args, released = message
        with self.lock:
            if self._nesting >= self._max_nesting:
                msg = f"requests nested more than {self._max_nesting} deep"
                raise WireError(msg)
            self._nesting += 1
            self.on_released(released)
        # What the answer names stays alive until it is sent: the releases gathered
        # before it is written must not include an object it names (an error of a test's
        # own exception class, raised by workspace code, names that class).
        answer: Any = None
        try:
            try:
                answer = self._serve(op, args)
                with self.lock:
                    try:
                        body = self.encoder.encode(("r", seq, answer))
                    except CannotCross as exc:
                        reason = f"isolation='process' cannot carry the answer to {op!r}: {exc}"
                        raise self.on_cannot_cross(reason) from None
            except BaseException as exc:
                answer = exc
                with self.lock:
                    body = self._error_body(seq, exc)
            with self.lock:
                self._send_body(body)
        finally:
            del answer  # no cycle through the traceback of an error it held
            with self.lock:
                self._nesting -= 1

    def _error_body(self, seq: int, exc: BaseException) -> bytes:
        try:
            return self.encoder.encode(("e", seq, self._fail(exc)))
        except BaseException as again:
            fallback = WireError(f"an error that cannot cross: {type(again).__name__}")
            return self.encoder.encode(("e", seq, self._fail(fallback)))

    def _send_body(self, body: bytes) -> None:
        if self.before_send is not None:
            self.before_send()
        if self.outbox:  # what the served code printed goes first, in order
            pending, self.outbox = self.outbox, []
            frames = b"".join(
                _FRAME.pack(len(chunk)) + chunk
                for chunk in (self.encoder.encode(("o", stream, text)) for stream, text in pending)
            )
            self._write(frames)
        self._write(_FRAME.pack(len(body)) + body)

    def _write(self, frames: bytes) -> None:
        data = memoryview(frames)
        while data:
            try:
                written = os.write(self.write_fd, data)
            except BlockingIOError:
                if self._wait is not None:
                    self._wait(self.write_fd, True)
                continue
            except OSError as exc:
                msg = f"the other side stopped reading ({exc.strerror})"
                raise PeerClosed(msg) from None
            data = data[written:]

    def output(self, message: tuple[Any, ...]) -> None:
        """Take one ``o`` message: printed text, a warning, a note, releases, a state."""
        _, stream, payload = message
        printed = stream in (1, 2, 4) and type(payload) is str
        warned = stream == 3 and type(payload) is tuple and len(payload) == 4
        changed = (
            stream == 5
            and type(payload) is tuple
            and len(payload) == 2
            and type(payload[0]) is int
            and type(payload[1]) is str
        )
        released = stream == 6 and type(payload) is tuple
        if released:
            self.on_released(payload)
            return
        state = stream == 7 and type(payload) is tuple
        # Containers that changed since they crossed: decoding them updated them here.
        synced = stream == 8 and type(payload) is tuple
        if synced:
            return
        forget = stream == 9 and payload == 0 and type(payload) is int
        environment = stream == 10 and type(payload) is dict
        # A log record of the subject (11), the levels the judge's loggers took (12).
        logged = stream in (11, 12) and type(payload) is dict
        argv = stream == 13 and type(payload) is list  # the judge's sys.argv
        tzset = stream == 14 and payload == 0 and type(payload) is int  # time.tzset()
        folder = stream == 15 and type(payload) is str  # the judge's working folder
        said = (environment, logged, argv, tzset, folder)
        if not (printed or warned or changed or state or forget or any(said)):
            msg = f"a malformed output message: {message!r:.100}"
            raise WireError(msg)
        if self.on_output is not None:
            self.on_output(stream, payload)
