"""Handles: the objects one side of process isolation lends the other, by number.

The judge and the subject each keep one :class:`HandleTable`:

- **exports** -- this side's objects the other side holds handles to, by number.
  They stay alive until the other side releases them.  Numbers are never reused, so
  a stale or forged number is an unknown handle, never somebody else's object.
- **imports** -- the stand-ins this side made for the other side's objects, by the
  other side's number: one stand-in per remote object, so ``is`` holds across calls.
  Stand-ins that support weak references are held weakly, and a stand-in that dies
  is released with the next request.  The others (the instances of ``int``, ``tuple``
  or ``bytes`` subclasses, and builtin exceptions) are held until :meth:`sweep` finds
  that only this table still refers to them.
- **class records** -- what this side said about each of its classes, sent once per
  class (:func:`class_record`), and what the other side said about its own, checked
  as hostile (:class:`ClassRecord`).

A handle crosses as a *description* from the side that owns the object (``lend``),
and as its bare number when it goes back to its owner (``number_of``).  Both sides
load this module from a file (the subject gets it over its pipe); it imports only
the standard library.
"""

from __future__ import annotations

import builtins
import enum
import importlib
import sys
import types
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_ldd._sandbox import wire
else:
    wire = sys.modules.get("_ldd_wire") or importlib.import_module("pytest_ldd._sandbox.wire")

__all__ = [
    "SPECIAL",
    "ClassRecord",
    "HandleTable",
    "class_record",
    "named_stdlib",
    "resolve_named",
]

# The special methods a stand-in may have; a class record lists those its class has.
SPECIAL = (
    "__call__", "__len__", "__iter__", "__next__", "__getitem__", "__setitem__",
    "__delitem__", "__contains__", "__bool__", "__enter__", "__exit__", "__reversed__",
    "__length_hint__", "__fspath__", "__bytes__", "__copy__", "__deepcopy__",
    "__await__", "__aiter__", "__anext__",
    "__get__", "__set__", "__delete__", "__set_name__",
    "__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__", "__pow__",
    "__matmul__", "__lshift__", "__rshift__", "__and__", "__or__", "__xor__",
    "__divmod__", "__radd__", "__rsub__", "__rmul__", "__rtruediv__", "__rfloordiv__",
    "__rmod__", "__rpow__", "__rmatmul__", "__rlshift__", "__rrshift__", "__rand__",
    "__ror__", "__rxor__", "__rdivmod__",
    "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__",
    "__ior__", "__iand__", "__ixor__",
    "__neg__", "__pos__", "__abs__", "__invert__", "__int__", "__float__", "__index__",
    "__complex__", "__round__", "__trunc__", "__floor__", "__ceil__",
)  # fmt: skip
# Every stand-in compares, hashes and prints through its owner; a value mirror (see
# stubs) only where its class overrides what its builtin base does.
OBJECT_PROTOCOL = (
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__repr__",
    "__str__", "__format__",
)  # fmt: skip
SPECIAL_NAMES = frozenset(SPECIAL + OBJECT_PROTOCOL)
ORDERINGS = ("__lt__", "__le__", "__gt__", "__ge__")

# Class record flags.
HASHABLE, EXCEPTION, METACLASS, OWN_DOC, ITER_SELF = 1, 2, 4, 8, 16
NO_ITER, NO_CONTAINS, NO_REVERSED = 32, 64, 128
# An enum class (not a value mirror's: an IntEnum is an int): its members' stand-ins
# claim an enum class, so that ``isinstance(member, enum.Enum)`` holds on either side.
ENUM = 256
# A special method the class sets to None: the operation is not available, and Python
# does not fall back to another (``__iter__ = None`` beside ``__getitem__``: not
# iterable).  The stand-in sets it to None too.
REFUSED = ((NO_ITER, "__iter__"), (NO_CONTAINS, "__contains__"), (NO_REVERSED, "__reversed__"))
_FLAGS = (
    HASHABLE
    | EXCEPTION
    | METACLASS
    | OWN_DOC
    | ITER_SELF
    | NO_ITER
    | NO_CONTAINS
    | NO_REVERSED
    | ENUM
)
_NAME_CHARS = 200
_DOC_CHARS = 20_000
_MAX_FIELDS = 1000
_MAX_ATTRS = 64
_TEXT_CHARS = 20_000
# How many held stand-ins (see sweep) make a request sweep before it is sent.
SWEEP_AT = 4096


def _defined(cls: type, name: str) -> bool:
    """Whether instances of ``cls`` have the special method (its MRO, not its metaclass)."""
    for klass in type.__dict__["__mro__"].__get__(cls):
        if name in klass.__dict__:
            return klass.__dict__[name] is not None
    return False


def _refused(cls: type, name: str) -> bool:
    """Whether ``cls`` sets the special method ``name`` to None (its MRO, not its metaclass)."""
    for klass in type.__dict__["__mro__"].__get__(cls):
        if name in klass.__dict__:
            return klass.__dict__[name] is None
    return False


def _slot(cls: type, name: str) -> bool:
    """Whether ``name`` of ``cls`` is a builtin type's own slot (not Python code)."""
    for klass in type.__dict__["__mro__"].__get__(cls):
        if name in klass.__dict__:
            return type(klass.__dict__[name]) is types.WrapperDescriptorType
    return False


def _overrides(cls: type, base: type, name: str) -> bool:
    """Whether a class before ``base`` in the MRO of ``cls`` defines ``name``."""
    for klass in type.__dict__["__mro__"].__get__(cls):
        if klass is base:
            return False
        if name in klass.__dict__:
            return True
    return False


def _namedtuple_fields(cls: type) -> tuple[str, ...] | None:
    """The field names of a named tuple class, read from the class dicts of its MRO."""
    if not type.__subclasscheck__(tuple, cls):
        return None
    for klass in type.__dict__["__mro__"].__get__(cls):
        fields = klass.__dict__.get("_fields")
        if fields is not None:
            if type(fields) is tuple and all(type(f) is str for f in fields):
                return fields[:_MAX_FIELDS]
            return None
    return None


# The standard library's abstract base classes a class may be registered with (or
# derive from) without its special methods saying so; the receiver registers its
# stand-in with its own copy of each.
ABSTRACT = (
    ("collections.abc", "Sequence"), ("collections.abc", "MutableSequence"),
    ("collections.abc", "Set"), ("collections.abc", "MutableSet"),
    ("collections.abc", "Mapping"), ("collections.abc", "MutableMapping"),
    ("collections.abc", "MappingView"), ("collections.abc", "KeysView"),
    ("collections.abc", "ItemsView"), ("collections.abc", "ValuesView"),
    ("numbers", "Number"), ("numbers", "Complex"), ("numbers", "Real"),
    ("numbers", "Rational"), ("numbers", "Integral"),
    ("io", "IOBase"), ("io", "RawIOBase"), ("io", "BufferedIOBase"), ("io", "TextIOBase"),
    ("datetime", "tzinfo"),
)  # fmt: skip
# Of those, the ones C code checks by type, not by registration: the stand-in derives
# from the receiver's own (``datetime(..., tzinfo=mod.Eastern)`` needs a real tzinfo).
NATIVE = frozenset({"datetime.tzinfo"})
ABSTRACT_NAMES = frozenset(f"{module}.{name}" for module, name in ABSTRACT)
RECORD_FIELDS = 13
# The mutable builtin types a class may derive from: its stand-in claims a class of
# that base as its ``__class__``, so ``isinstance(obj, dict)`` holds (see stubs).
CONTAINERS = (dict, list, set, bytearray)


def _container_base(klass: type) -> str | None:
    for base in CONTAINERS:
        if type.__subclasscheck__(base, klass):
            return base.__name__
    return None


def _abcs(klass: type) -> tuple[str, ...]:
    found = []
    for module, name in ABSTRACT:
        abc_class = getattr(sys.modules.get(module), name, None)
        try:
            if abc_class is not None and issubclass(klass, abc_class):
                found.append(f"{module}.{name}")
        except Exception:
            continue
    return tuple(found)


def abstract_class(name: str) -> Any:
    """This side's own abstract base class of that name (from :data:`ABSTRACT_NAMES`)."""
    module, _, short = name.rpartition(".")
    return getattr(importlib.import_module(module), short)


def _text(value: Any, limit: int) -> str | None:
    return value[:limit] if type(value) is str else None


def class_record(klass: type) -> tuple[Any, ...]:
    """What the other side needs to know about one of this side's classes.

    Data, except the bases and the metaclass, which are classes: they cross as
    handles of their own (described once each).
    """
    mro = type.__dict__["__mro__"].__get__(klass)
    bases = type.__dict__["__bases__"].__get__(klass)
    meta = type(klass)
    name = type.__dict__["__name__"].__get__(klass)
    builtin = name if getattr(builtins, name, None) is klass else None
    base = wire.value_base(klass)
    if base is not None and builtin is None:
        # A value mirror has its builtin base's methods; it forwards only overrides.
        special = tuple(n for n in SPECIAL + OBJECT_PROTOCOL if _overrides(klass, base, n))
    else:
        special = tuple(n for n in SPECIAL if _defined(klass, n))
        # The orderings the class has beyond object's: ``functools.total_ordering``
        # and its kin read them off the class.
        special += tuple(n for n in ORDERINGS if _overrides(klass, object, n))
        if type.__subclasscheck__(BaseException, klass) and _overrides(
            klass, BaseException, "__repr__"
        ):
            special += ("__repr__",)  # an exception's own repr (validators' ValidationError)
    flags = HASHABLE if _defined(klass, "__hash__") else 0
    if type.__subclasscheck__(BaseException, klass):
        flags |= EXCEPTION
    if type.__subclasscheck__(type, klass):
        flags |= METACLASS
    if type.__subclasscheck__(enum.Enum, klass):
        flags |= ENUM
    for flag, refused in REFUSED:
        if _refused(klass, refused):
            flags |= flag
    if _slot(klass, "__iter__") and _slot(klass, "__next__"):
        # A builtin iterator type (generators, map, itertools): iter() gives the object.
        flags |= ITER_SELF
    # Functions, modules and their kin carry a __doc__ and a __module__ of their own:
    # the class's entry for them is a descriptor, not a string.
    for owner in mro:
        if "__doc__" in owner.__dict__:
            if hasattr(type(owner.__dict__["__doc__"]), "__get__"):
                flags |= OWN_DOC
            break
    doc = None if builtin else klass.__dict__.get("__doc__")
    return (
        _text(type.__dict__["__module__"].__get__(klass), _NAME_CHARS) or "?",
        _text(type.__dict__["__qualname__"].__get__(klass), _NAME_CHARS) or "?",
        bases,
        # A class that is its own metaclass (h11's sentinels set ``__class__`` to
        # themselves) cannot be described before itself: the plain one stands in.
        None if meta is type or meta is klass else meta,
        special,
        builtin,
        flags,
        wire.value_base_name(base) if base is not None and builtin is None else None,
        _text(doc, _DOC_CHARS),
        _namedtuple_fields(klass),
        _abcs(klass),
        _container_base(klass) if builtin is None else None,
        _overridden(klass, base) if base is not None and builtin is None else (),
    )


_BASE_METHODS: dict[type, tuple[str, ...]] = {}


def _overridden(klass: type, base: type) -> tuple[str, ...]:
    """The public methods of the value base ``base`` that ``klass`` defines again."""
    names = _BASE_METHODS.get(base)
    if names is None:
        names = _BASE_METHODS[base] = tuple(n for n in dir(base) if not n.startswith("_"))
    return tuple(n for n in names if _overrides(klass, base, n))


class ClassRecord:
    """A class of the other side, as its record said; checked field by field."""

    __slots__ = (
        "abcs",
        "bases",
        "builtin",
        "container",
        "doc",
        "fields",
        "flags",
        "meta",
        "methods",
        "module",
        "mro",
        "qualname",
        "special",
        "value",
    )  # fmt: skip
    mro: frozenset[int]

    def __init__(self, number: int, raw: Any, known: dict[int, ClassRecord]) -> None:
        if type(raw) is not tuple or len(raw) != RECORD_FIELDS:
            msg = "a malformed class record"
            raise wire.WireError(msg)
        module, qualname, bases, meta, special, builtin, flags, value, doc, fields, abcs = raw[:11]
        container, methods = raw[11], raw[12]
        if type(methods) is not tuple or not all(
            type(m) is str and m.isidentifier() for m in methods[:_MAX_FIELDS]
        ):
            msg = "a class record with malformed overridden methods"
            raise wire.WireError(msg)
        # The methods of the value base the class overrides (a value mirror asks for them).
        self.methods: tuple[str, ...] = methods[:_MAX_FIELDS]
        if container is not None and container not in {b.__name__ for b in CONTAINERS}:
            msg = f"a class record with an unknown container base {container!r:.40}"
            raise wire.WireError(msg)
        self.container: type | None = getattr(builtins, container) if container else None
        if type(abcs) is not tuple or not ABSTRACT_NAMES.issuperset(abcs):
            msg = "a class record names unknown abstract base classes"
            raise wire.WireError(msg)
        self.abcs: tuple[str, ...] = abcs
        if type(module) is not str or type(qualname) is not str or type(bases) is not tuple:
            msg = "a malformed class record"
            raise wire.WireError(msg)
        if not all(type(b) is int and b in known for b in bases) or not (
            meta is None or (type(meta) is int and meta in known)
        ):
            msg = "a class record names bases the subject never described"
            raise wire.WireError(msg)
        if type(special) is not tuple or not SPECIAL_NAMES.issuperset(special):
            msg = "a class record lists unknown special methods"
            raise wire.WireError(msg)
        if type(flags) is not int or flags & ~_FLAGS:
            msg = "a class record with unknown flags"
            raise wire.WireError(msg)
        if value is not None and value not in wire.VALUE_BASE_NAMES:
            msg = f"a class record with an unknown value base {value!r:.40}"
            raise wire.WireError(msg)
        if fields is not None and (
            type(fields) is not tuple
            or len(fields) > _MAX_FIELDS
            or not all(type(f) is str and f.isidentifier() for f in fields)
        ):
            msg = "a class record with malformed fields"
            raise wire.WireError(msg)
        self.module = module[:_NAME_CHARS]
        self.qualname = qualname[:_NAME_CHARS]
        self.bases: tuple[int, ...] = bases
        self.meta: int | None = meta
        self.special = frozenset(special)
        self.builtin = builtin if type(builtin) is str and builtin in wire.BUILTIN_TYPES else None
        self.flags = flags
        self.value: type | None = wire.VALUE_BASE_NAMES[value] if value is not None else None
        self.doc = doc[:_DOC_CHARS] if type(doc) is str else None
        self.fields: tuple[str, ...] | None = fields
        mro = {number}
        for base in bases:
            mro |= known[base].mro
        self.mro = frozenset(mro)

    @classmethod
    def of_builtin(cls, klass: type) -> ClassRecord:
        """This side's own record of one of its builtin types (no remote MRO)."""
        raw = class_record(klass)
        return cls(0, (*raw[:2], (), None, *raw[4:]), {})

    @property
    def name(self) -> str:
        """The class's own name (the last part of its qualified name)."""
        name = self.qualname.rpartition(".")[2]
        return name if name.isidentifier() else "Remote"


class HandleTable:
    """One side's numbered objects: those it lent, and stand-ins of those it borrowed."""

    def __init__(self, *, names_modules: bool = False) -> None:
        # The judge's table lends the pure modules of the standard library by name (the
        # subject gets its own ``json``); the subject's never does: a module it lends
        # stays its own, a stand-in whose functions run there (the judge's own
        # ``pickle`` would load what the workspace wrote).
        self.names_modules = names_modules
        self._exports: dict[int, Any] = {}
        self._export_ids: dict[int, int] = {}
        self._next = 1
        self.described: set[int] = set()
        self._fresh: list[list[int]] = []
        self._lending: set[int] = set()
        self._descriptions: dict[int, Any] = {}
        self._description_ids: dict[int, int] = {}
        self.records: dict[int, ClassRecord] = {}
        # number -> weakref.ref, or a one-item list holding the stand-in strongly
        self._by_number: dict[int, Any] = {}
        self._by_id: dict[int, int] = {}
        self._held: dict[int, int] = {}  # number -> id, the strongly held ones sweep checks
        self._pending: set[int] = set()
        self._sweep_at = SWEEP_AT

    # -- exports -----------------------------------------------------------------------
    def export(self, obj: Any) -> tuple[int, bool]:
        """The number of this side's ``obj``, and whether it is lent for the first time."""
        known = self._export_ids.get(id(obj))
        if known is not None and self._exports.get(known) is obj:
            return known, False
        number = self._next
        self._next += 1
        self._exports[number] = obj
        self._export_ids[id(obj)] = number
        return number, True

    def exported(self, number: Any) -> Any:
        """This side's object lent as ``number``; :class:`wire.WireError` when it never was."""
        if type(number) is not int or number not in self._exports:
            msg = (
                f"the other side named an object it was never given, or released ({number!r:.40})"
            )
            raise wire.WireError(msg)
        return self._exports[number]

    def release(self, numbers: Any) -> None:
        """The other side no longer holds these of this side's objects."""
        if type(numbers) is not tuple:
            return
        for number in numbers:
            obj = self._exports.pop(number, None) if type(number) is int else None
            if obj is not None and self._export_ids.get(id(obj)) == number:
                del self._export_ids[id(obj)]

    def exports(self) -> int:
        """How many objects this side has lent and not got back."""
        return len(self._exports)

    # -- imports -----------------------------------------------------------------------
    def borrowed(self, number: int) -> Any:
        """The stand-in made for the other side's object ``number``, or None."""
        self._pending.discard(number)  # lent again before its release was sent
        entry = self._by_number.get(number)
        if entry is None:
            return None
        return entry() if type(entry) is weakref.ref else entry[0]

    def keep(self, number: int, stand_in: Any, *, forever: bool = False) -> None:
        """Remember ``stand_in`` for the other side's object ``number``.

        ``forever`` keeps it for the whole run (classes).  Otherwise it is held weakly
        where it can be, and else until :meth:`sweep` finds it unused.  Stand-ins are
        told apart by identity only: their ``__eq__`` and ``__hash__`` are requests.
        """
        key = id(stand_in)
        if forever:
            self._by_number[number] = [stand_in]
        else:
            try:
                self._by_number[number] = weakref.ref(stand_in, self._died(number, key))
            except TypeError:
                self._by_number[number] = [stand_in]
                self._held[number] = key
        self._by_id[key] = number

    def _died(self, number: int, key: int) -> Callable[[Any], None]:
        def callback(ref: Any) -> None:
            if self._by_number.get(number) is ref:
                del self._by_number[number]
                self._pending.add(number)
            if self._by_id.get(key) == number:
                del self._by_id[key]

        return callback

    def number_of(self, obj: Any) -> int | None:
        """The other side's number for a stand-in this side holds, or None."""
        number = self._by_id.get(id(obj))
        if number is None or self.borrowed_quietly(number) is not obj:
            return None
        return number

    def borrowed_quietly(self, number: int) -> Any:
        """Like :meth:`borrowed`, leaving a pending release pending."""
        entry = self._by_number.get(number)
        if entry is None:
            return None
        return entry() if type(entry) is weakref.ref else entry[0]

    def sweep(self, refcount: Callable[[Any], int] = sys.getrefcount) -> None:
        """Release the held stand-ins nothing but this table refers to any more."""
        for number in list(self._held):
            entry = self._by_number[number]
            # The referrers while counting: the holder list and refcount's argument.
            if refcount(entry[0]) <= 2:
                key = self._held.pop(number)
                del self._by_number[number]
                self._by_id.pop(key, None)
                self._pending.add(number)
            del entry

    def releases(self) -> tuple[int, ...]:
        """The numbers to release with the next request (and forget them here)."""
        if len(self._held) >= self._sweep_at:
            self.sweep()
            # What survived is in use: sweep again only when as much again is held.
            self._sweep_at = max(SWEEP_AT, 2 * len(self._held))
        if not self._pending:
            return ()
        numbers, self._pending = tuple(self._pending), set()
        return numbers

    def held(self) -> int:
        """How many stand-ins this table holds strongly until they are swept."""
        return len(self._held)

    # -- class records -----------------------------------------------------------------
    def take_records(self, records: Any) -> None:
        """Check and keep the other side's class records ``((number, record), ...)``."""
        if type(records) is not tuple:
            msg = "malformed class records"
            raise wire.WireError(msg)
        for entry in records:
            if type(entry) is not tuple or len(entry) != 2 or type(entry[0]) is not int:
                msg = "a malformed class record"
                raise wire.WireError(msg)
            number, raw = entry
            if number not in self.records:
                self.records[number] = ClassRecord(number, raw, self.records)

    def record(self, number: Any) -> ClassRecord:
        """The other side's record of class ``number``."""
        record = self.records.get(number) if type(number) is int else None
        if record is None:
            msg = f"a handle of a class the subject never described ({number!r:.40})"
            raise wire.WireError(msg)
        return record

    # -- lending ------------------------------------------------------------------------
    def lend(self, obj: Any, *, nameable: bool = True) -> tuple[Any, ...]:
        """The description of this side's ``obj``: ``(kind, number, class, extra)``.

        ``kind`` is ``c`` (a class: ``class`` is its metaclass, ``extra`` its record the
        first time), ``e`` (an exception: its state), ``v`` (a value mirror: the value
        its builtin base holds), ``n`` (a standard-library enum member or sentinel: its
        name) or ``o`` (any other object).  The class and what ``extra`` holds cross
        as values or handles of their own.

        A class lent with ``nameable=False`` is only described: its number is
        negative, never an export, so the other side can build the type of its
        instances but never name the class back in a request.
        """
        number = self.export(obj)[0] if nameable else self._described_only(obj)
        sentinel = _sentinel_name(obj)
        if sentinel is not None and (self.names_modules or sentinel[1]):
            return ("n", number, type(obj), sentinel)
        if isinstance(obj, type):
            if number in self.described:
                return ("c", number, None, None)
            self.described.add(number)
            if self._fresh:
                self._fresh[-1].append(number)
            record = class_record(obj)
            return ("c", number, record[3], record)
        cls = type(obj)
        if isinstance(obj, types.ModuleType):
            name = obj.__name__
            return (
                "m",
                number,
                None,
                (name if type(name) is str else "?", hasattr(obj, "__path__")),
            )
        if isinstance(obj, BaseException):
            return ("e", number, cls, self._exception_state(obj))
        named = named_stdlib(obj)
        if named is not None:
            return ("n", number, cls, named)
        base = wire.value_base(cls)
        if base is not None:
            return ("v", number, cls, wire.base_value(base, obj))
        return ("o", number, cls, None)

    def _described_only(self, cls: Any) -> int:
        known = self._description_ids.get(id(cls))
        if known is not None and self._descriptions[known] is cls:
            return known
        number = -len(self._descriptions) - 1
        self._descriptions[number] = cls
        self._description_ids[id(cls)] = number
        return number

    def _exception_state(self, exc: BaseException) -> tuple[Any, ...]:
        # An exception chained to itself (rare, but Python allows it) is cut there.
        self._lending.add(id(exc))
        try:
            cause = exc.__cause__ if id(exc.__cause__) not in self._lending else None
            context = exc.__context__ if id(exc.__context__) not in self._lending else None
        finally:
            self._lending.discard(id(exc))
        try:
            text = str(exc)[:_TEXT_CHARS]
        except Exception:
            text = f"<{type(exc).__name__}: str() failed>"
        try:
            own = dict(vars(exc)) if hasattr(exc, "__dict__") else {}
        except Exception:
            own = {}
        attrs = {
            k: v for k, v in list(own.items())[:_MAX_ATTRS] if type(k) is str and k[:5] != "_ldd_"
        }
        # The names the builtin exceptions keep in slots of their own, not in
        # ``__dict__`` (``ModuleNotFoundError(name="fast").name``, which code checks
        # before it falls back to another module): strings only, never an object
        # (``AttributeError.obj`` may be one that may not cross).
        for base, names in _EXCEPTION_SLOTS:
            if isinstance(exc, base):
                for name in names:
                    value = base.__dict__[name].__get__(exc)
                    if type(value) is str:
                        attrs.setdefault(name, value)
        args = exc.args if type(exc.args) is tuple else ()
        return (args, cause, context, bool(exc.__suppress_context__), text, attrs)

    def begin(self) -> None:
        """A message starts: classes described from here on are undone if it fails."""
        self._fresh.append([])

    def end(self, *, sent: bool) -> None:
        """The message was encoded (``sent``) or failed: keep or undo its descriptions."""
        fresh = self._fresh.pop()
        if not sent:
            self.described.difference_update(fresh)


# The builtin exceptions' attributes kept in slots: read through the base's own
# descriptor, whatever a subclass defines.
_EXCEPTION_SLOTS: tuple[tuple[type[BaseException], tuple[str, ...]], ...] = (
    (ImportError, ("name", "path")),
    (AttributeError, ("name",)),
    (NameError, ("name",)),
)


# -- objects both sides know by name ------------------------------------------------------

# Module-level objects of the standard library that cross by name, as the receiver's
# own: sentinels that ``dataclasses`` and ``inspect`` compare by identity, and the
# functions of ``re`` that code compares by identity (``func in (re.match,
# re.search)``), which touch nothing but their arguments.  So do ``functools.partial``
# and ``reduce``, ``operator``'s getter classes, the builtins and the functions of
# ``operator`` below: a test hands ``max``, ``operator.add`` or ``partial`` to workspace
# code, which may compare it (toolz keeps signatures of builtins by identity); never
# one that reads files, runs code, prints, or looks into frames.  A class that crosses
# so is the receiver's own: its instances made there are the receiver's, and an
# instance of the other side's stays a handle, used through requests.
_PURE_BUILTINS = (
    "abs", "all", "any", "ascii", "bin", "callable", "chr", "divmod", "format",
    "getattr", "hasattr", "hash", "hex", "isinstance", "issubclass", "iter", "len",
    "max", "min", "next", "oct", "ord", "pow", "repr", "round", "sorted", "sum",
)  # fmt: skip
_PURE_OPERATORS = (
    "abs", "add", "and_", "concat", "contains", "countOf", "eq", "floordiv", "ge",
    "getitem", "gt", "index", "indexOf", "inv", "invert", "is_", "is_not", "le",
    "length_hint", "lshift", "lt", "matmul", "mod", "mul", "ne", "neg", "not_", "or_",
    "pos", "pow", "rshift", "sub", "truediv", "truth", "xor",
)  # fmt: skip
# Modules of the standard library that touch nothing but their arguments, named by
# ``(name, "")``: a test hands ``pickle`` or ``json`` to workspace code as a serializer
# (itsdangerous' ``Serializer(secret, serializer=pickle)``), and the subject gets its
# own.  Only the judge lends a module so (see HandleTable).
_PURE_MODULES = (
    "json", "pickle", "marshal", "math", "cmath", "operator", "string", "re",
    "decimal", "fractions", "base64", "binascii", "zlib", "gzip", "bz2", "lzma",
    "hashlib", "hmac", "struct", "copy", "statistics", "textwrap", "unicodedata",
    "html", "itertools", "functools", "collections", "datetime", "numbers",
)  # fmt: skip
_SINGLETONS = frozenset({
    ("dataclasses", "MISSING"), ("dataclasses", "KW_ONLY"), ("dataclasses", "_FIELD"),
    ("dataclasses", "_FIELD_CLASSVAR"), ("dataclasses", "_FIELD_INITVAR"),
    ("inspect", "_empty"), ("inspect", "Parameter.empty"), ("inspect", "_void"),
    ("re", "match"), ("re", "search"), ("re", "fullmatch"), ("re", "compile"),
    ("re", "sub"), ("re", "subn"), ("re", "split"), ("re", "findall"),
    ("re", "finditer"), ("re", "escape"), ("functools", "partial"), ("functools", "reduce"),
    ("operator", "itemgetter"), ("operator", "attrgetter"), ("operator", "methodcaller"),
    *(("builtins", name) for name in _PURE_BUILTINS),
    *(("operator", name) for name in _PURE_OPERATORS),
    *((name, "") for name in _PURE_MODULES),
})  # fmt: skip


def _lookup(module: str, qualname: str, *, may_import: bool) -> Any:
    top = module.partition(".")[0]
    if top not in sys.stdlib_module_names:
        return None
    found: Any = sys.modules.get(module)
    if found is None:
        if not may_import:
            return None
        try:
            found = importlib.import_module(module)
        except ImportError:
            return None
    if qualname == "":
        return found  # the module itself (see resolve_named)
    for part in qualname.split("."):
        if not part.isidentifier():
            return None
        found = getattr(found, part, None)
    return found


def named_stdlib(obj: Any) -> tuple[Any, ...] | None:
    """How the other side finds its own copy of a standard-library enum member or sentinel.

    ``(module, class qualname, value)`` for an enum member (composite flags
    included), ``(module, qualname)`` for a sentinel; None for anything else.
    """
    cls = type(obj)
    # By type: a stand-in claims an enum class as its __class__, and is not a member here.
    if type.__subclasscheck__(enum.Enum, cls):
        module, qualname = cls.__module__, cls.__qualname__
        if _lookup(module, qualname, may_import=False) is not cls:
            return None
        value = obj.value
        if type(value) not in (int, str, float, bytes, bool, type(None)):
            return None
        return module, qualname, value
    return _sentinel_name(obj)


_SENTINELS: dict[int, tuple[Any, tuple[str, str]]] = {}
_SENTINELS_SEEN = [0]  # len(sys.modules) when the sentinels were last looked up


def _sentinel_name(obj: Any) -> tuple[str, str] | None:
    """``(module, qualname)`` when ``obj`` is one of the sentinels of :data:`_SINGLETONS`."""
    if len(sys.modules) != _SENTINELS_SEEN[0]:  # their modules may have been imported since
        _SENTINELS_SEEN[0] = len(sys.modules)
        for module, qualname in _SINGLETONS:
            if module in sys.modules:
                value = _lookup(module, qualname, may_import=False)
                if value is not None:
                    _SENTINELS[id(value)] = (value, (module, qualname))
    found = _SENTINELS.get(id(obj))
    return found[1] if found is not None and found[0] is obj else None


def resolve_named(name: Any, *, may_import: bool) -> Any:
    """The receiver's own standard-library enum member or sentinel, or None.

    A name that leads anywhere else -- a class, a module, a function but the pure ones
    listed -- resolves to None: only inert values may be named.
    """
    if type(name) is not tuple or len(name) not in (2, 3):
        return None
    module, qualname = name[:2]
    if type(module) is not str or type(qualname) is not str:
        return None
    found = _lookup(module, qualname, may_import=may_import)
    if len(name) == 3:
        if not (isinstance(found, type) and issubclass(found, enum.Enum)):
            return None
        try:
            return found(name[2])
        except (ValueError, TypeError):
            return None
    if qualname == "" and not may_import:
        return None  # only the subject takes a module by name (see HandleTable)
    if (module, qualname) in _SINGLETONS:
        return found
    return None
