"""Probes: a comparison a workspace value claims, checked against values nobody could know.

A hidden test's comparison that holds proves nothing by itself when one side is an
object of the workspace: its ``__eq__`` may say yes to anything.  So, where the
comparison runs, every operand that is a workspace value (a *target*) is also
compared with *probes* -- values no honest ``__eq__``, ``__lt__`` or ``__sub__`` can
know -- and a claim about a probe is proof that the object lies:

- an **opaque** probe, a fresh instance of a class made for the run: no honest value
  is equal to it, ordered against it, or computes a number from it;
- a **look-alike** of the other operand: the same type and shape, drawn from the same
  distribution (sign, magnitude, roundness, length, character classes; often another
  literal of the hidden tests), never equal to it.  A value equal to ``42`` is not
  equal to ``57`` as well; one ordered ``< 57`` is not also ``>= 57``; ``w - 42`` and
  ``w - 57`` are not the same number.  A container's look-alike has *every* element
  redrawn: an honest ``__eq__`` may ignore a part of what it is compared with (a
  version's build metadata), so one changed element would prove nothing.

Which operands are targets is the caller's rule: in the test process, a value whose
class (or a class of its MRO) was defined by a module loaded from the workspace
(:class:`WorkspaceTypes`); in the judge of process isolation, every proxy.  Plain
builtin values, the hidden tests' own objects and the installed libraries' (a
``mock.ANY``, a ``pytest.approx``, a test's always-equal helper) are never probed:
they are honest test code.  Values inside plain lists, tuples, dicts and sets are
searched for targets, within a budget.

A probe runs before the comparison or after it, with even odds, so an object that
answers its first question honestly and lies afterwards (or the reverse) is caught
half the time per lie.  A claim is ``True`` (or a non-zero ``int``): an object that
answers with something else (an expression object, an array) claims nothing.  An
exception while probing is no claim either.

The test process loads this file from the run's folder (it imports only the standard
library); the parent imports it from the package for :func:`draw_like`.
"""

from __future__ import annotations

import ast
import collections
import contextlib
import itertools
import math
import operator
import os
import random
import string
import sys
import types
from collections.abc import Callable, Container, Mapping, Sequence
from typing import Any, NoReturn

__all__ = [
    "Comparisons",
    "ProbeError",
    "WorkspaceTypes",
    "draw_like",
    "guard_comparisons",
    "shape_of",
]

_SCALARS = frozenset({int, float, complex, str, bytes, bool, type(None)})
_CONTAINERS = frozenset({list, tuple, dict, set, frozenset})
_BUILTIN_BASES = (bool, int, float, complex, str, bytes, tuple, list, dict, frozenset, set)

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
# An ordering and its complement: an honest value never claims both against one value.
# What an honest order never claims next to each relation, of the same two values.
_EXCLUSIVE = {"<": (">=", ">"), "<=": (">",), ">": ("<=", "<"), ">=": ("<",)}
_ARITHMETIC: dict[str, Callable[[Any, Any], Any]] = {"+": operator.add, "-": operator.sub}
_AST_COMPARE = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.In: "in", ast.NotIn: "not in",
}  # fmt: skip
_AST_ARITHMETIC = {ast.Add: "+", ast.Sub: "-"}

# Bounds on the work one comparison may cost.
MAX_TARGETS = 4
SCAN_BUDGET = 10_000
SCAN_DEPTH = 32
# Once a comparison held: the values looked at past the bounded scan before it.
DEEP_BUDGET = 1_000_000
# A container look-alike redraws every element; a longer one gets none.
MAX_REDRAWN = 256
_DRAW_ATTEMPTS = 64
_SHOWN = 120
# Literals of the hidden tests kept as look-alike candidates, per shape and in all.
_POOL_PER_SHAPE = 32
_POOL_SIZE = 4096
_BIG_INT_BITS = 4000


# Literals of the hidden tests by shape (see :func:`shape_of`): look-alike candidates.
Pool = Mapping[Any, Sequence[Any]]
_NO_POOL: Pool = {}


class ProbeError(AssertionError):
    """A workspace value claimed something about a probe: the comparison was a lie."""


# -- look-alike values ----------------------------------------------------------------


def shape_of(value: Any) -> tuple[Any, ...] | None:
    """What a look-alike of ``value`` keeps: type, sign and digits, or length."""
    kind = type(value)
    if kind is int:
        if value.bit_length() > _BIG_INT_BITS:
            return None
        return (int, value < 0, len(str(abs(value))))
    if kind is float:
        if not math.isfinite(value) or value == 0:
            return (float, value)
        return (float, value < 0, math.floor(math.log10(abs(value))))
    if kind in (str, bytes):
        return (kind, len(value))
    return None


def draw_like(
    value: Any,
    rng: random.Random,
    pool: Pool = _NO_POOL,
    *,
    min_distance: float = 0.0,
    depth: int = 0,
) -> Any:
    """Another value of the same type and shape as ``value``, never equal to it, or None.

    Numbers keep their sign, their number of digits and their trailing zeros (``42``
    -> ``57``, ``300`` -> ``700``, ``3.14`` -> ``7.82``, ``1e-06`` -> ``4e-06``) and
    differ by at least 10% and by more than ``min_distance``; strings and bytes keep
    their length and the class of each character (letters, digits, case, the rest),
    every letter and digit changed; a list, tuple, dict or set gets every element (a
    dict every value and every key) drawn like that -- an honest ``__eq__`` may ignore
    a part of what it is compared with, never all of it -- up to :data:`MAX_REDRAWN`
    elements.  With even odds a number or string
    comes from ``pool`` instead (literals of the hidden tests with the same shape),
    so that a drawn value looks as natural as the real one.  None where there is no
    such value (None, NaN, a class of its own), or where drawing one failed: the
    grader's own error never fails a test.
    """
    try:
        return _draw_like(value, rng, pool, min_distance=min_distance, depth=depth)
    except Exception:
        return None


def _draw_like(
    value: Any, rng: random.Random, pool: Pool, *, min_distance: float, depth: int
) -> Any:
    kind = type(value)
    if kind is int and value == 1 and min_distance < 1:
        # A bit's other value: an honest __eq__ may read an int as a bit (pyasn1's
        # BitString equals (1, 1) and any other all-true tuple), never 1 as 0.
        return 0
    if kind in (int, float, str, bytes):
        borrowed = _from_pool(value, rng, pool, min_distance)
        if borrowed is not None:
            return borrowed
    if kind is bool:
        return not value
    if kind is int:
        return _int_like(value, rng, min_distance)
    if kind is float:
        return _float_like(value, rng, min_distance)
    if kind is str:
        return _text_like(value, rng)
    if kind is bytes:
        text = _text_like(value.decode("latin-1"), rng)
        return None if text is None else text.encode("latin-1")
    if depth >= SCAN_DEPTH:
        return None
    if kind in (list, tuple):
        return _sequence_like(value, rng, pool, depth)
    if kind is dict:
        return _mapping_like(value, rng, pool, depth)
    if kind in (set, frozenset):
        return _set_like(value, rng, depth)
    return None


def _from_pool(value: Any, rng: random.Random, pool: Pool, min_distance: float) -> Any:
    if not pool or rng.random() < 0.5:
        return None
    shape = shape_of(value)
    if shape is None:
        return None
    candidates = [c for c in pool.get(shape, ()) if c != value and _far(value, c)]
    if type(value) in (int, float):
        candidates = [c for c in candidates if abs(c - value) > min_distance]
    return rng.choice(candidates) if candidates else None


def _far(value: Any, other: Any) -> bool:
    """Whether ``other`` differs enough from ``value`` for no lenient equality to join them."""
    if type(value) in (int, float):
        try:
            if type(value) is int and type(other) is int:
                # In integers: past 2**1024 a float cannot hold them.
                return abs(other - value) * 10 >= abs(value)
            return bool(abs(other - value) >= 0.1 * abs(value))
        except (OverflowError, TypeError, ValueError):
            return False
    if type(value) is str:
        return _folded(value) != _folded(other)
    return True


def _folded(text: str) -> str:
    return "".join(text.split()).casefold()


def _int_like(value: int, rng: random.Random, min_distance: float) -> int | None:
    if value.bit_length() > _BIG_INT_BITS:
        return None
    sign = -1 if value < 0 else 1
    text = str(abs(value))
    if text == "0":
        for _ in range(_DRAW_ATTEMPTS):
            drawn = rng.randrange(1, 10)
            if drawn > min_distance:
                return drawn
        return None
    core = text.rstrip("0")
    zeros = len(text) - len(core)
    for attempt in range(_DRAW_ATTEMPTS):
        # Past half the attempts, one more digit: a tolerance wider than the value.
        width = len(core) + (attempt >= _DRAW_ATTEMPTS // 2)
        digits = [rng.choice("123456789")]
        digits += [rng.choice(string.digits) for _ in range(width - 1)]
        if width > 1:
            digits[-1] = rng.choice("123456789")
        drawn = sign * int("".join(digits) + "0" * zeros)
        if drawn != value and _far(value, drawn) and abs(drawn - value) > min_distance:
            return drawn
    return None


def _float_like(value: float, rng: random.Random, min_distance: float) -> float | None:
    if not math.isfinite(value):
        return None
    if value == 0:
        for _ in range(_DRAW_ATTEMPTS):
            drawn = rng.randrange(1, 10) / 10
            if drawn > min_distance:
                return drawn
        return None
    sign = -1.0 if value < 0 else 1.0
    mantissa, e, exponent = repr(abs(value)).partition("e")
    nonzero = [i for i, c in enumerate(mantissa) if c in "123456789"]
    first, last = nonzero[0], nonzero[-1]
    for attempt in range(_DRAW_ATTEMPTS):
        chars = list(mantissa)
        # Leading and trailing zeros stay: "0.001" -> "0.007", "100.0" -> "700.0".
        for i in range(first, last + 1):
            if chars[i].isdigit():
                chars[i] = rng.choice("123456789" if i in (first, last) else string.digits)
        scale = 10.0 if attempt >= _DRAW_ATTEMPTS // 2 else 1.0
        drawn = sign * float("".join(chars) + e + exponent) * scale
        if (
            math.isfinite(drawn)
            and drawn != 0  # a subnormal's look-alike may round to nothing
            and _far(value, drawn)
            and abs(drawn - value) > min_distance
        ):
            return drawn
    return None


def _text_like(value: str, rng: random.Random) -> str | None:
    if not value:
        return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randrange(1, 4)))
    for _ in range(_DRAW_ATTEMPTS):
        out = []
        for ch in value:
            if ch in string.ascii_lowercase or (ch.isalpha() and not ch.isupper()):
                out.append(rng.choice(string.ascii_lowercase.replace(ch.lower(), "")))
            elif ch.isalpha():
                out.append(rng.choice(string.ascii_uppercase.replace(ch.upper(), "")))
            elif ch.isdigit():
                out.append(rng.choice(string.digits.replace(ch, "")))
            else:
                out.append(ch)
        drawn = "".join(out)
        if drawn == value:  # nothing but spaces and punctuation: change one of them
            at = rng.randrange(len(value))
            other = rng.choice(string.punctuation.replace(value[at], ""))
            drawn = value[:at] + other + value[at + 1 :]
        if _far(value, drawn):
            return drawn
    return None


def _sequence_like(
    value: list[Any] | tuple[Any, ...], rng: random.Random, pool: Pool, depth: int
) -> Any:
    kind = type(value)
    if not value:
        return kind([rng.randrange(1, 10)])
    if len(value) > MAX_REDRAWN:
        return None
    items = [draw_like(item, rng, pool, depth=depth + 1) for item in value]
    if all(item is None for item in items):
        return None
    return kind(old if new is None else new for old, new in zip(value, items, strict=True))


def _mapping_like(value: dict[Any, Any], rng: random.Random, pool: Pool, depth: int) -> Any:
    if not value:
        return {_text_like("key", rng): rng.randrange(1, 10)}
    if len(value) > MAX_REDRAWN:
        return None
    # Every value and every key drawn anew: an honest result may compare with a part of
    # a dict (an ordered set equals a dict with its keys, whatever the values).
    changed: dict[Any, Any] = {}
    originals = [item for item in value.values() if type(item) in _SCALARS]
    for key, item in value.items():
        # No value becomes another's: the values of {1: 1, 2: 2} redrawn as 2 and 1
        # would be the same values to a result that compares them alone.
        if type(item) in _SCALARS:
            new_item = _draw_avoiding(item, rng, (originals,), pool, depth + 1)
        else:
            new_item = draw_like(item, rng, pool, depth=depth + 1)
        new_key = _draw_avoiding(key, rng, (value, changed), _NO_POOL, depth + 1)
        changed[key if new_key is None else new_key] = item if new_item is None else new_item
    unchanged = changed.keys() == value.keys() and all(changed[key] is value[key] for key in value)
    return None if unchanged else changed


# Mappings whose == is dict's own, value by value: one compared with a look-alike that
# keeps every key is proof of a lie where any value claims its stranger.
_DICT_EQUALITY = (dict, collections.OrderedDict, collections.defaultdict)


def look_alike(target: Any, other: Any, rng: random.Random, pool: Pool = _NO_POOL) -> Any:
    """A look-alike of ``other`` to compare ``target`` with, as :func:`draw_like` draws.

    Where ``target`` compares as a dict does (value by value), a dict's look-alike keeps
    its keys and redraws its values against ``target``'s own, so a value of ``target``
    that equals any plausible number is caught; elsewhere every key is redrawn too, since
    an honest ``__eq__`` may look at the keys alone (an ordered set).  Lists and tuples
    of the same length are walked element by element.
    """
    try:
        return _look_alike(target, other, rng, pool, 0)
    except Exception:
        return None


def _look_alike(target: Any, other: Any, rng: random.Random, pool: Pool, depth: int) -> Any:
    kind = type(other)
    if depth < SCAN_DEPTH and kind is dict and type(target) in _DICT_EQUALITY and other:
        if len(other) > MAX_REDRAWN or target.keys() != other.keys():
            return draw_like(other, rng, pool, depth=depth)
        items = {
            key: _look_alike(target[key], item, rng, pool, depth + 1)
            for key, item in other.items()
        }
        if all(item is None for item in items.values()):
            return draw_like(other, rng, pool, depth=depth)
        return {key: other[key] if new is None else new for key, new in items.items()}
    if (
        depth < SCAN_DEPTH
        and kind in (list, tuple)
        and type(target) is kind
        and 0 < len(other) == len(target) <= MAX_REDRAWN
    ):
        drawn = [
            _look_alike(t, o, rng, pool, depth + 1) for t, o in zip(target, other, strict=True)
        ]
        if all(item is None for item in drawn):
            return None
        return kind(old if new is None else new for old, new in zip(other, drawn, strict=True))
    return draw_like(other, rng, pool, depth=depth)


def _set_like(value: set[Any] | frozenset[Any], rng: random.Random, depth: int) -> Any:
    kind = type(value)
    if not value:
        return kind({rng.randrange(1, 10)})
    if len(value) > MAX_REDRAWN:
        return None
    items: set[Any] = set()
    for item in value:
        # None of the set's own members, nor one drawn already: a set equal in part
        # to the original would be a look-alike an honest subset check could pass.
        new = _draw_avoiding(item, rng, (value, items), _NO_POOL, depth + 1)
        items.add(item if new is None else new)
    return kind(items) if items != value and len(items) == len(value) else None


def _draw_avoiding(
    value: Any, rng: random.Random, avoid: Sequence[Container[Any]], pool: Pool, depth: int
) -> Any:
    """A look-alike of the scalar ``value`` in none of ``avoid``; None for other values."""
    for _ in range(_DRAW_ATTEMPTS if type(value) in _SCALARS else 0):
        drawn = draw_like(value, rng, pool, depth=depth)
        if drawn is not None and not any(drawn in taken for taken in avoid):
            return drawn
    return None


# -- which values are the workspace's --------------------------------------------------

_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made at run time, not by C code
_COMPARISON_SLOTS = (
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__contains__",
    "__add__", "__radd__", "__sub__", "__rsub__",
)  # fmt: skip


def _class_dict(cls: type) -> Mapping[str, Any]:
    # Read through ``type`` itself: a metaclass of the workspace cannot answer instead.
    namespace: Mapping[str, Any] = type.__dict__["__dict__"].__get__(cls)
    return namespace


def _mro(cls: type) -> tuple[type, ...]:
    mro: tuple[type, ...] = type.__dict__["__mro__"].__get__(cls)
    return mro


def _module_name(cls: type) -> Any:
    # The descriptor of ``type``: a static type's module is in its C name, not its dict.
    return type.__dict__["__module__"].__get__(cls)


def _qualname(cls: type) -> str:
    name: str = type.__dict__["__qualname__"].__get__(cls)
    return name


def _lookup(cls: type, name: str) -> Any:
    for klass in _mro(cls):
        namespace = _class_dict(klass)
        if name in namespace:
            return namespace[name]
    return None


def _builtin_base(cls: type) -> type | None:
    """The builtin type ``cls`` strictly derives from, if any (read from its real MRO)."""
    base = next((b for b in _BUILTIN_BASES if type.__subclasscheck__(b, cls)), None)
    return None if base is cls else base


def type_name(cls: type) -> str:
    """``module.Qualname`` of a class, read without running any of its code."""
    module = _module_name(cls)
    qualname = _qualname(cls)
    return f"{module}.{qualname}" if isinstance(module, str) else qualname


class SuiteCode:
    """The code objects compiled from the hidden test files (and their ``conftest.py``).

    pytest compiles those files itself, from the bytes the integrity guard checked;
    :meth:`guard` keeps each module's code objects, nested ones included, by identity.
    A function is the suite's when its code is one of them and it runs in the globals
    of the module that code was compiled for: the hidden tests' own class (typing's
    ``NamedTuple`` with an ``__add__`` that returns 0) is honest test code.
    """

    def __init__(self, suite: str) -> None:
        self._prefix = os.path.join(os.path.realpath(suite), "")
        self._codes: dict[int, tuple[types.CodeType, str]] = {}  # id -> (code, file)

    def guard(self, rewrite: Any) -> None:
        """Keep the code of every suite file ``rewrite._rewrite_test`` compiles."""
        compile_file = rewrite._rewrite_test

        def _rewrite_test(fn: Any, config: Any) -> Any:
            compiled = compile_file(fn, config)
            path = os.path.realpath(str(fn))
            code = compiled[-1] if isinstance(compiled, tuple) and compiled else None
            if isinstance(code, types.CodeType) and path.startswith(self._prefix):
                self._add(code, path)
            return compiled

        rewrite._rewrite_test = _rewrite_test

    def _add(self, code: types.CodeType, path: str) -> None:
        stack = [code]
        while stack:
            current = stack.pop()
            self._codes[id(current)] = (current, path)
            stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))

    def owns(self, function: types.FunctionType) -> bool:
        """Whether ``function`` is code of the hidden suite, run where it was written."""
        code = function.__code__
        known = self._codes.get(id(code))
        if known is None or known[0] is not code:
            return False
        namespace = function.__globals__
        module = sys.modules.get(namespace.get("__name__", ""))
        if not isinstance(module, types.ModuleType):
            return False
        if object.__getattribute__(module, "__dict__") is not namespace:
            return False
        origin = namespace.get("__file__")
        return isinstance(origin, str) and os.path.realpath(origin) == known[1]


class WorkspaceTypes:
    """Whether a value is the workspace's: its class, or one of its MRO, came from there.

    A class is the workspace's when the module it names was loaded from a file under
    one of ``roots`` (the workspace copy), or when that module is not loaded, or is
    neither a file nor part of the standard library.  A class of a trusted module that
    this module does not hold under its qualified name -- local to a function, made at
    run time (a ``Mock``'s subclass of its own), or a workspace class borrowing a
    trusted module's name -- is the workspace's when a function it defines was
    compiled from a file under ``roots``.  A builtin subclass that overrides a comparison in Python
    is probed whatever its origin: that its equality differs from its base value's is
    legitimate, and a reason to look, never a verdict; unless each such function is the
    hidden suite's own code (``suite_code``).  Answers are kept per class.
    """

    def __init__(self, roots: Sequence[str], *, suite_code: SuiteCode | None = None) -> None:
        self._roots = tuple(os.path.join(os.path.realpath(root), "") for root in roots)
        self._known: dict[int, tuple[type, bool]] = {}
        self._suite_code = suite_code

    def __call__(self, value: Any) -> bool:
        cls = type(value)
        known = self._known.get(id(cls))
        if known is not None and known[0] is cls:
            return known[1]
        answer = self.decide(cls)
        self._known[id(cls)] = (cls, answer)
        return answer

    def decide(self, cls: type) -> bool:
        """The answer for one class, uncached."""
        for klass in _mro(cls):
            if klass is object or klass in _BUILTIN_BASES:
                continue
            if self._foreign(klass):
                return True
        if _builtin_base(cls) is None:
            return False
        return any(
            isinstance(function, types.FunctionType) and not self._suites(function)
            for function in (_lookup(cls, name) for name in _COMPARISON_SLOTS)
        )

    def _suites(self, function: types.FunctionType) -> bool:
        return self._suite_code is not None and self._suite_code.owns(function)

    def _in_workspace(self, path: str) -> bool:
        return os.path.realpath(path).startswith(self._roots)

    def _foreign(self, klass: type) -> bool:
        module_name = _module_name(klass)
        if not isinstance(module_name, str):
            return True
        if module_name == "builtins" and not klass.__flags__ & _HEAPTYPE:
            return False  # a type of the interpreter itself
        module = sys.modules.get(module_name)
        if not isinstance(module, types.ModuleType):
            return True
        namespace: dict[str, Any] = object.__getattribute__(module, "__dict__")
        spec = namespace.get("__spec__")
        origin = getattr(spec, "origin", None) if spec is not None else namespace.get("__file__")
        if isinstance(origin, str) and os.path.isabs(origin):
            if self._in_workspace(origin):
                return True
        elif module_name.partition(".")[0] not in sys.stdlib_module_names:
            return True
        found: Any = module
        for part in _qualname(klass).split("."):
            holder = namespace if found is module else _class_dict(found)
            found = holder.get(part)
            if not isinstance(found, type):
                break
        if found is klass:
            return False
        # Local, made at run time (a Mock's own subclass), or borrowing the name:
        # the workspace's when a function it defines was compiled from its files.
        return any(
            self._in_workspace(value.__code__.co_filename)
            for value in _class_dict(klass).values()
            if isinstance(value, types.FunctionType)
        )


def opaque_probe(*, crossing: bool = False) -> Callable[[], Any]:
    """Makes fresh instances of a class made for this run, which no honest value knows.

    ``crossing``: the instances are callable (a callable is what process isolation
    lets cross to the subject, as a reference it can only call).
    """
    rng = random.Random()
    name = rng.choice(("Token", "Marker", "Entry", "Record", "Item", "Value", "Node"))
    namespace: dict[str, Any] = {"__slots__": (), "__module__": "__main__"}
    if crossing:
        namespace["__call__"] = lambda self, *args, **kwargs: None
    return type(name, (), namespace)


# -- comparisons with probes ---------------------------------------------------------


def _claims(result: Any, *compared: Any) -> bool:
    """Whether an operator's answer claims the relation, as ``assert`` reads it: true.

    Any answer ``assert`` takes for yes is a claim, not only True: a comparison that
    answers ``"yes"`` or ``[1]`` passes the test just the same.  An answer whose truth
    cannot be told (a NumPy array of several elements) claims nothing, and neither
    does a builtin container that holds one of the ``compared`` values: an expression
    built from it (a query builder's column), not an answer.
    """
    if result is True:
        return True
    if result is False or result is None or result is NotImplemented:
        return False
    if compared and type(result) in _EXPRESSIONS:
        items = itertools.chain(result.keys(), result.values()) if type(result) is dict else result
        for item in itertools.islice(items, _EXPRESSION_ITEMS):
            if any(item is value for value in compared):
                return False
    try:
        return bool(result)
    except Exception:  # an answer with no truth makes no assertion pass either
        return False


_EXPRESSIONS = (tuple, list, dict, set, frozenset)
_EXPRESSION_ITEMS = 64


def _container_base(cls: type) -> type | None:
    """The container type whose own methods read what an instance of ``cls`` holds:
    ``dict``, ``list``, ``tuple``, ``set``, ``frozenset`` or ``deque``; None for none."""
    if cls in _CONTAINERS:
        return cls
    base = _builtin_base(cls)
    if base in _CONTAINERS:
        return base
    return collections.deque if type.__subclasscheck__(collections.deque, cls) else None


def _held(value: Any) -> tuple[Sequence[Any], ...] | None:
    """What a container holds, read through its container base's own methods (never an
    override of the value's class), or None for what is no container."""
    cls = type(value)
    base = _container_base(cls)
    if base is None:
        return None
    try:
        if base is dict:
            return (tuple(dict.keys(value)), tuple(dict.values(value)))
        if base is cls and base is not collections.deque:
            return (value,)  # a builtin container of its own: read as it is
        iterate: Any = base.__iter__  # type: ignore[attr-defined]
        return (tuple(iterate(value)),)
    except Exception:  # a container that cannot be read holds nothing here
        return ()


_SEQUENCES = frozenset({list, tuple, set, frozenset})
_FLAT_LEVELS = 64


def _flatten(group: Sequence[Any], pending: list[Any], left: list[int]) -> None:
    """Put what ``group`` holds on ``pending``, but for plain values and the lists,
    tuples and sets nested in it, which are walked a level at a time at C speed."""
    level: list[Any] = [group]
    for depth in range(_FLAT_LEVELS):
        flat = group if depth == 0 else list(itertools.chain.from_iterable(level))
        left[0] -= len(flat)
        kinds = set(map(type, flat))
        if kinds <= _SCALARS or left[0] <= 0:
            return
        others = kinds - _SCALARS - _SEQUENCES
        if others:
            pending.extend(item for item in flat if type(item) in others)
        if not kinds & _SEQUENCES:
            return
        level = [item for item in flat if type(item) in _SEQUENCES]
    pending.extend(level)  # deeper still (or a list that holds itself): one by one


_HOLDERS: dict[int, tuple[type, bool]] = {}


def _may_hold(value: Any) -> bool:
    """Whether ``value`` may hold other values the scan must see: a container (a
    builtin's subclass, a ``deque``) or a plain record; decided once per class."""
    cls = type(value)
    known = _HOLDERS.get(id(cls))
    if known is not None and known[0] is cls:
        return known[1]
    answer = _container_base(cls) is not None or _plain_record(value)
    if len(_HOLDERS) < 4096:
        _HOLDERS[id(cls)] = (cls, answer)
    return answer


def _plain_record(value: Any) -> bool:
    """A simple namespace or a dataclass instance: an object that is its attributes."""
    cls = type(value)
    return cls is types.SimpleNamespace or _lookup(cls, "__dataclass_fields__") is not None


def _attributes(value: Any) -> tuple[Sequence[Any], ...]:
    """The attribute values of an object of this process: its instance dictionary (the
    real one, not a property of its class), its slots and a dataclass's fields."""
    cls = type(value)
    known = _LAYOUTS.get(id(cls))
    if known is None or known[0] is not cls:
        known = (cls, *_layout(cls))
        if len(_LAYOUTS) < 4096:
            _LAYOUTS[id(cls)] = known
    _, link, getter, slots = known
    if link:
        # A stand-in of process isolation: its attributes live at its owner, and a
        # request for them all might not cross (nor should probing cost requests).
        return ()
    held: list[Any] = []
    for member in slots:
        with contextlib.suppress(Exception):  # a slot never set
            held.append(member.__get__(value, cls))
    if getter is not None:
        with contextlib.suppress(Exception):  # no instance dictionary after all
            namespace = getter.__get__(value, cls)
            if type(namespace) is dict:
                held.extend(dict.values(namespace))
    fields = _lookup(cls, "__dataclass_fields__")
    if type(fields) is dict:
        for name in list(fields)[:64]:
            if type(name) is str:
                with contextlib.suppress(Exception):  # a field that cannot be read
                    held.append(getattr(value, name))
    return (tuple(held),)


def _layout(cls: type) -> tuple[bool, Any, tuple[Any, ...]]:
    """Where a class keeps its instances' attributes, read from its classes once: whether
    it is a stand-in, the real ``__dict__`` getter, and its slots' descriptors."""
    if _lookup(cls, "_ldd_link") is not None:
        return True, None, ()
    getter: Any = None
    slots: list[Any] = []
    for klass in _mro(cls):
        members = _class_dict(klass)
        candidate: Any = members.get("__dict__")
        if getter is None and type(candidate) in _DICT_GETTERS:
            getter = candidate
        # A slot (``__slots__``, attrs' slotted classes), read by its descriptor.
        slots += [
            member
            for name, member in list(members.items())
            if type(member) is types.MemberDescriptorType and name not in _NOT_SLOTS
        ]
    return False, getter, tuple(slots[:_SLOTS_READ])


# Per class: the class, whether it is a stand-in, its __dict__ getter, its slots.
_LAYOUTS: dict[int, tuple[type, bool, Any, tuple[Any, ...]]] = {}
_DICT_GETTERS = (types.GetSetDescriptorType, types.MemberDescriptorType)
_NOT_SLOTS = frozenset({"__dict__", "__weakref__"})
_SLOTS_READ = 64


def _approximates(value: Any) -> bool:
    """Whether ``value`` is a ``pytest.approx`` (decided by its class, never by asking it)."""
    pytest = sys.modules.get("pytest")
    base = getattr(pytest, "Approx", None)  # pytest 9
    if base is None:
        base = getattr(sys.modules.get("_pytest.python_api"), "ApproxBase", None)
    return isinstance(base, type) and type.__subclasscheck__(base, type(value))


def _short(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # a repr of the code under test may raise anything
        return "<unrepresentable>"
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _plain_number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def _quantity(value: Any) -> bool:
    """Whether ``value`` claims an order or equality with 0, or its ``abs()`` is a number."""
    for compare in (operator.eq, operator.lt, operator.gt):
        try:
            if _claims(compare(value, 0), 0):
                return True
        except Exception:  # refusing to compare is honest
            pass
    try:
        return type(abs(value)) in (int, float, complex)
    except Exception:  # refusing is honest
        return False


class Comparisons:
    """``a op b`` for the hidden tests, probing every workspace value it involves.

    ``workspace_like(value)`` says which operands are targets; ``opaque()`` makes a
    fresh opaque probe; ``report(detail)`` is told every lie before the comparison
    raises :class:`ProbeError` (so the test fails, naming it).  ``pool`` holds literals
    of the hidden tests by shape, for look-alikes.
    """

    def __init__(
        self,
        report: Callable[[str], None],
        *,
        workspace_like: Callable[[Any], bool],
        opaque: Callable[[], Any],
        rng: random.Random | None = None,
    ) -> None:
        self._report = report
        self._workspace_like = workspace_like
        self._opaque = opaque
        self._rng = rng if rng is not None else random.Random()
        self.pool: dict[Any, list[Any]] = {}
        # The unittest assertions nest (assertEqual calls assertListEqual): outermost only.
        self.depth = 0
        self.mismatch: tuple[int, Any, Any] | None = None
        self.exhaustive = True
        # What a unittest assertion's target said to look-alikes before it ran.
        self._said: list[str] = []

    def early(self) -> bool:
        """Even odds: probe before the comparison (else after it, if it held)."""
        return self._rng.random() < 0.5

    def compare(self, op: str, left: Any, right: Any) -> Any:
        """What ``left op right`` gives; :class:`ProbeError` where a target lied."""
        __tracebackhide__ = True
        if type(left) in _SCALARS and type(right) in _SCALARS:
            result = _OPERATORS[op](left, right)
            if not result and op == "==":
                # The test's last unequal pair of plain values and its line: what a
                # failed original saw (see judge._order_dependent).
                self.mismatch = (sys._getframe(1).f_lineno, left, right)
            return result
        targets = self.targets(left, right)
        if not targets:
            result = _OPERATORS[op](left, right)
            if not self.exhaustive and _claims(result, left, right):
                self._probe_hidden(op, left, right, targets)
            return result
        early = self.early()
        said: list[str] = []
        if early:
            self._probe(op, left, right, targets, blind=True, claimed=False)
            said = self._look_alikes_first(op, left, right, targets)
        result = _OPERATORS[op](left, right)
        if _claims(result, left, right):
            self._claimed_before(said)
            self._probe(op, left, right, targets, blind=not early, claimed=True)
            if not self.exhaustive:
                self._probe_hidden(op, left, right, targets)
            if op == "==" and (_approximates(left) or _approximates(right)):
                self._probe_difference(targets)
        return result

    def _probe_hidden(self, op: str, left: Any, right: Any, probed: list[tuple[int, Any]]) -> None:
        """Once a comparison held, probe the workspace values its operands hold where the
        bounded scan before it does not look: past its budget or depth, in a container
        of the standard library (a ``deque``, an ``OrderedDict``) or a builtin's
        subclass, in the attributes of a simple namespace, a dataclass instance or a
        workspace object.  What such a value claims made the comparison hold as much
        as a value in a list does."""
        __tracebackhide__ = True
        known = [value for _, value in probed]
        hidden = [
            (2, value)
            for value in self._reachable((left, right))
            if not any(value is seen for seen in known)
        ]
        if hidden:
            self._probe(op, left, right, hidden[:MAX_TARGETS], blind=True, claimed=True)

    def _reachable(self, roots: tuple[Any, ...]) -> list[Any]:
        """The workspace values reachable from ``roots`` through what they hold.

        Lists, tuples and sets nested in one another are flattened a level at a time at
        C speed (a million plain values cost milliseconds); a dict, a standard-library
        container, a builtin's subclass and an object with attributes are looked at
        one by one, once each.
        """
        found: list[Any] = []
        seen: set[int] = set()
        pending = list(roots)
        left = [DEEP_BUDGET]
        kinds: dict[type, tuple[bool, bool]] = {}  # class -> (a target, may hold values)
        while pending and len(found) <= MAX_TARGETS and left[0] > 0:
            item = pending.pop()
            cls = type(item)
            if cls in _SCALARS or id(item) in seen:
                continue
            seen.add(id(item))
            left[0] -= 1
            kind = kinds.get(cls)
            if kind is None:
                target = cls not in _CONTAINERS and self._is_target(item)
                kind = kinds[cls] = (target, not target and _may_hold(item))
            if not (kind[0] or kind[1]):
                continue
            if kind[0] and not any(item is root for root in roots):
                found.append(item)
            groups = _held(item)
            if groups is None:
                groups = _attributes(item)
            for group in groups or ():
                _flatten(group, pending, left)
        return found

    def _look_alikes_first(
        self, op: str, left: Any, right: Any, targets: list[tuple[int, Any]]
    ) -> list[str]:
        """Ask each target, before the comparison, whether it equals a look-alike of
        what it is compared with; the lies that ``yes`` makes once the comparison held.

        Asked only after it, a look-alike meets a result that spent its one yes on the
        comparison (a liar that says yes to the first plain value it meets): asked
        first, half the time, such a liar gives its yes to the look-alike and breaks
        the comparison.  A yes here proves nothing alone: the look-alike might be the
        value an honest result has (and then the comparison fails).
        """
        if op != "==":
            return []
        said = []
        for side, target in targets:
            if side == 2:
                continue
            other = right if side == 0 else left
            twin = look_alike(target, other, self._rng, self.pool)
            if twin is not None and self._holds("==", side, target, twin):
                name = type_name(type(target))
                said.append(
                    f"a result of type {name} claims == {_short(other)} and == {_short(twin)}"
                )
        return said

    def _claimed_before(self, said: list[str]) -> None:
        __tracebackhide__ = True
        if said:
            self._accuse(said[0])

    def _accuse(self, detail: str) -> NoReturn:
        """Report a lie, then fail the comparison that met it."""
        __tracebackhide__ = True
        self._report(detail)
        raise ProbeError(detail)

    def _probe_difference(self, targets: list[tuple[int, Any]]) -> None:
        """``pytest.approx`` held: it decides by ``abs(expected - actual)``, so each
        target must not compute a difference with a fresh object, either way round."""
        __tracebackhide__ = True
        for _, target in targets:
            for side in (1, 0):
                detail = self._arith_lie("-", side, target, None, None)
                if detail is not None:
                    self._accuse(detail)

    def arith(self, op: str, left: Any, right: Any) -> Any:
        """What ``left op right`` (``+`` or ``-``) gives; a target computing a lie is named."""
        __tracebackhide__ = True
        if type(left) in _SCALARS and type(right) in _SCALARS:
            return _ARITHMETIC[op](left, right)
        targets = [
            (side, value)
            for side, value in ((0, left), (1, right))
            if type(value) not in _SCALARS
            and type(value) not in _CONTAINERS
            and self._is_target(value)
        ]
        if not targets:
            return _ARITHMETIC[op](left, right)
        early = self.early()
        if early:
            self._probe_arith(op, left, right, targets)
        result = _ARITHMETIC[op](left, right)
        if not early:
            self._probe_arith(op, left, right, targets, result)
        return result

    def held(self, op: str, left: Any, right: Any, *, blind: bool, claimed: bool) -> None:
        """Probe a comparison made elsewhere (a unittest assertion; ``~``: almost equal).

        ``blind``: the probes that need no answer (a fresh object, an ordering against
        a look-alike and its complement); ``claimed``: the comparison held, so those
        that need it too (equal to a look-alike as well).
        """
        __tracebackhide__ = True
        # What the target said before the assertion counts only at that assertion:
        # asked before it (``claimed`` False), taken after it (``blind`` False then).
        said, self._said = self._said, []
        probed = "==" if op == "~" else op
        targets = self.targets(left, right)
        if claimed and not self.exhaustive:
            self._probe_hidden(probed, left, right, targets)
        if not targets:
            return
        if not claimed:
            self._said = self._look_alikes_first(op, left, right, targets)
        elif not blind:
            self._claimed_before(said)
        self._probe(probed, left, right, targets, blind=blind, claimed=claimed)
        if op == "~" and blind:
            self._probe_arith("-", left, right, [t for t in targets if t[0] < 2])

    # -- targets ------------------------------------------------------------------------

    def _is_target(self, value: Any) -> bool:
        try:
            return bool(self._workspace_like(value))
        except Exception:  # a class that breaks introspection is looked at
            return True

    def targets(self, left: Any, right: Any) -> list[tuple[int, Any]]:
        """The workspace values among the operands: (0 left, 1 right, 2 inside one), value.

        Sets :attr:`exhaustive`: whether the walk saw everything the operands hold (no
        bound reached, and nothing but plain values and builtin containers in them).
        """
        found: list[tuple[int, Any]] = []
        budget = [SCAN_BUDGET]
        self.exhaustive = True
        for side, value in ((0, left), (1, right)):
            kind = type(value)
            if kind in _SCALARS:
                continue
            if kind in _CONTAINERS:
                self._scan(value, found, budget)
            elif self._is_target(value):
                found.append((side, value))
                self.exhaustive = False
            elif _may_hold(value):
                self.exhaustive = False
        return found[:MAX_TARGETS]

    def _scan(self, value: Any, found: list[tuple[int, Any]], budget: list[int]) -> None:
        stack = [(value, 0)]
        while stack and len(found) < MAX_TARGETS and budget[0] > 0:
            item, depth = stack.pop()
            groups = (dict.keys(item), dict.values(item)) if type(item) is dict else (item,)
            for group in groups:
                budget[0] -= len(group)
                if set(map(type, group)) <= _SCALARS:  # C speed: most containers end here
                    continue
                for child in group:
                    kind = type(child)
                    if kind in _SCALARS:
                        continue
                    if kind in _CONTAINERS:
                        if depth < SCAN_DEPTH:
                            stack.append((child, depth + 1))
                        else:
                            self.exhaustive = False
                    elif self._is_target(child):
                        found.append((2, child))
                        self.exhaustive = False
                        if len(found) >= MAX_TARGETS:
                            return
                    elif _may_hold(child):
                        self.exhaustive = False
        if stack:
            self.exhaustive = False

    # -- probing ------------------------------------------------------------------------

    def _holds(self, op: str, side: int, target: Any, probe: Any) -> bool:
        left, right = (probe, target) if side == 1 else (target, probe)
        try:
            return _claims(_OPERATORS[op](left, right), probe)
        except Exception:  # refusing to compare is honest
            return False

    def _exclusive(
        self, relations: tuple[str, ...], side: int, target: Any, probe: Any
    ) -> str | None:
        """The first of ``relations`` that also holds between ``target`` and ``probe``."""
        return next((op for op in relations if self._holds(op, side, target, probe)), None)

    def _lie(
        self, op: str, side: int, target: Any, other: Any, *, blind: bool, claimed: bool
    ) -> str | None:
        who = "a value inside a result" if side == 2 else "a result"
        name = type_name(type(target))
        opaque = self._opaque()
        if blind and self._holds("==", side, target, opaque):
            return (
                f"{who} of type {name} claims == a fresh object made for this run,"
                " which no honest value equals"
            )
        if side == 2:
            return None
        if blind and op in ("in", "not in") and side == 1:
            # Membership is probed only for a builtin container's subclass: an honest
            # container of its own may contain everything (a complement set).
            base = _builtin_base(type(target))
            if base is not None and self._holds("in", 1, target, opaque):
                return (
                    f"{who} of type {name} (a {base.__name__} subclass) claims to contain a"
                    " fresh object made for this run"
                )
        if claimed and op == "==":
            # Only once ``target == other`` held: an honest value equal to ``other``
            # equals no look-alike of it (before, the look-alike might be its value).
            twin = look_alike(target, other, self._rng, self.pool)
            if twin is not None and self._holds("==", side, target, twin):
                return f"{who} of type {name} claims == {_short(other)} and == {_short(twin)}"
        exclusive = _EXCLUSIVE.get(op)
        if blind and exclusive is not None:
            if self._holds(op, side, target, opaque):
                # A universal bound (packaging's ``Infinity``) honestly orders after
                # everything, a fresh object too: only a claim both ways is a lie, or
                # one from a builtin's subclass, whose base value orders no stranger.
                both = self._exclusive(exclusive, side, target, opaque)
                if both is not None:
                    return (
                        f"{who} of type {name} claims {op} a fresh object made for this"
                        f" run and {both} it too"
                    )
                base = _builtin_base(type(target))
                if base is not None:
                    return (
                        f"{who} of type {name} (a {base.__name__} subclass) claims {op} a"
                        " fresh object made for this run, which its base value cannot order"
                    )
            twin = draw_like(other, self._rng, self.pool)
            if twin is not None and self._holds(op, side, target, twin):
                both = self._exclusive(exclusive, side, target, twin)
                if both is not None:
                    shown = _short(twin)
                    return f"{who} of type {name} claims both {op} {shown} and {both} {shown}"
        return None

    def _probe(
        self,
        op: str,
        left: Any,
        right: Any,
        targets: list[tuple[int, Any]],
        *,
        blind: bool,
        claimed: bool,
    ) -> None:
        __tracebackhide__ = True
        for side, target in targets:
            other = right if side == 0 else left
            detail = self._lie(op, side, target, other, blind=blind, claimed=claimed)
            if detail is not None:
                self._accuse(detail)

    def _computes(self, op: str, side: int, target: Any, probe: Any) -> Any:
        left, right = (probe, target) if side == 1 else (target, probe)
        try:
            return _ARITHMETIC[op](left, right)
        except Exception:  # refusing to compute is honest
            return None

    def _arith_lie(self, op: str, side: int, target: Any, other: Any, result: Any) -> str | None:
        name = type_name(type(target))
        computed = self._computes(op, side, target, self._opaque())
        shown = f"w {op} a fresh object" if side == 0 else f"a fresh object {op} w"
        if type(computed) in (int, float, complex):
            return (
                f"a result of type {name} computed {_short(computed)} as {shown} made for this"
                " run, which no honest value can compute with"
            )
        if computed is not None and computed is not NotImplemented and _quantity(computed):
            # An expression built from a stranger (a query builder's ``column - x``)
            # is honest; one that then orders among numbers, or whose ``abs()`` is
            # one, computed a quantity it cannot know.
            return (
                f"a result of type {name} computed {_short(computed)} as {shown} made for this"
                " run, a value that orders among numbers"
            )
        if not _plain_number(other):
            return None
        twin = draw_like(other, self._rng, self.pool)
        if twin is None:
            return None
        first = result if result is not None else self._computes(op, side, target, other)
        second = self._computes(op, side, target, twin)
        if not (_plain_number(first) and _plain_number(second)) or first != second:
            return None
        scale = 2 * max(abs(first), abs(other), abs(twin), 1e-300)
        if type(first) is float and abs(other - twin) <= 8 * math.ulp(scale):
            return None  # rounding may join them
        one, two = (
            f"w {op} {_short(v)}" if side == 0 else f"{_short(v)} {op} w" for v in (other, twin)
        )
        return f"a result of type {name} gives {_short(first)} for both {one} and {two}"

    def _probe_arith(
        self,
        op: str,
        left: Any,
        right: Any,
        targets: list[tuple[int, Any]],
        result: Any = None,
    ) -> None:
        __tracebackhide__ = True
        for side, target in targets:
            detail = self._arith_lie(op, side, target, right if side == 0 else left, result)
            if detail is not None:
                self._accuse(detail)


# -- where the hidden tests compare ----------------------------------------------------

_COMPARE_MODULE = "_ldd_compare"
_COMPARE_ALIAS = "@ldd_compare"


class _Rewriter:
    """``a op b`` -> ``@ldd_compare.compare("op", a, b)``; ``a + b`` -> ``...arith("+", a, b)``.

    Single comparisons only (a chain, ``is`` and ``is not`` are left alone); the
    literals met on the way join the look-alike pool.  An operation whose value is
    thrown away or called (``(tester + tester)(2)``) is left as written: its answer
    is no claim, and the object may look at the frame that runs it (executing's tests
    find the calling node from the test's own frame).  A walk of its own rather than
    an ``ast.NodeTransformer``: it runs on every hidden test file at each verdict, and
    dispatching every node by name costs three times as much.
    """

    def __init__(self, pool: dict[Any, list[Any]], *, identity: bool = False) -> None:
        self.pool = pool
        self.pooled = sum(map(len, pool.values()))
        # ``a is b`` -> ``@ldd_compare.identical(a, b)`` too (process isolation's watch).
        self.identity = identity

    def visit(self, node: ast.AST, *, keep: bool = False) -> ast.AST:
        """Rewrite below ``node``, children first; return what replaces ``node``
        (``keep``: ``node`` itself stays, whatever it is)."""
        fields = node._fields
        if type(node) is ast.If and _explains_a_failure(node):
            fields = ("test", "orelse")
        for name in fields:
            value = getattr(node, name, None)
            if type(value) is list:
                for index, item in enumerate(value):
                    if isinstance(item, ast.AST):
                        new = self.visit(item)
                        if new is not item:
                            value[index] = new
            elif isinstance(value, ast.AST):
                unused = (type(node) is ast.Expr and name == "value") or (
                    type(node) is ast.Call and name == "func"
                )
                new = self.visit(value, keep=unused)
                if new is not value:
                    setattr(node, name, new)
        kind = type(node)
        if keep and kind in (ast.Compare, ast.BinOp):
            return node
        if kind is ast.Compare:
            return self._compare(node)  # type: ignore[arg-type]
        if kind is ast.BinOp:
            return self._arith(node)  # type: ignore[arg-type]
        if kind is ast.Constant:
            self._pool(node)  # type: ignore[arg-type]
        return node

    def _call(
        self, method: str, symbol: str, left: ast.expr, right: ast.expr, at: ast.AST
    ) -> ast.AST:
        name = ast.copy_location(ast.Name(_COMPARE_ALIAS, ast.Load()), at)
        func = ast.copy_location(ast.Attribute(value=name, attr=method, ctx=ast.Load()), at)
        op = ast.copy_location(ast.Constant(symbol), at)
        return ast.copy_location(ast.Call(func=func, args=[op, left, right], keywords=[]), at)

    def _pool(self, node: ast.Constant) -> None:
        if self.pooled < _POOL_SIZE:
            shape = shape_of(node.value)
            if shape is not None:
                kept = self.pool.setdefault(shape, [])
                if len(kept) < _POOL_PER_SHAPE and node.value not in kept:
                    kept.append(node.value)
                    self.pooled += 1

    def _compare(self, node: ast.Compare) -> ast.AST:
        if len(node.ops) != 1:
            return node
        right = node.comparators[0]
        if type(node.ops[0]) is ast.Is:
            if not self.identity or any(type(s) is ast.Constant for s in (node.left, right)):
                return node  # ``x is None`` and the like: singletons cross as themselves
            name = ast.copy_location(ast.Name(_COMPARE_ALIAS, ast.Load()), node)
            func = ast.copy_location(ast.Attribute(name, "identical", ast.Load()), node)
            return ast.copy_location(ast.Call(func, [node.left, right], []), node)
        if type(node.ops[0]) not in _AST_COMPARE:
            return node
        if (  # pytest's own "name in @py_builtins.locals()" checks
            isinstance(node.left, ast.Constant)
            and isinstance(right, ast.Call)
            and isinstance(right.func, ast.Attribute)
            and isinstance(right.func.value, ast.Name)
            and right.func.value.id.startswith("@py")
        ):
            return node
        return self._call("compare", _AST_COMPARE[type(node.ops[0])], node.left, right, node)

    def _arith(self, node: ast.BinOp) -> ast.AST:
        symbol = _AST_ARITHMETIC.get(type(node.op))
        if symbol is None:
            return node
        return self._call("arith", symbol, node.left, node.right, node)


_POSITIONS = ("lineno", "col_offset", "end_lineno", "end_col_offset")
# Per node type: its fields (what may hold nodes), and which of the positions it has.
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}
_POSITIONS_OF: dict[type, tuple[str, ...]] = {}


def fill_positions_fast(rewrite: Any) -> None:
    """Have pytest's rewriter give its generated nodes their assertion's position faster.

    pytest's ``visit_Assert`` ends by walking every statement it made (``traverse_node``,
    two generators per node) and calling ``ast.copy_location(node, assert_)`` on each
    node without a line number: two thirds of its time on a suite of many assertions.
    Here its walk finds nothing, and the same positions are filled in afterwards in
    one pass (:func:`fill_positions`): the module compiled is the same to the byte.
    Nothing changes where pytest's rewriter is not shaped so (another pytest).
    """
    rewriter: Any = getattr(rewrite, "AssertionRewriter", None)
    walk = getattr(rewrite, "traverse_node", None)
    original = getattr(rewriter, "visit_Assert", None)
    if not (callable(walk) and callable(original)) or getattr(original, "_ldd_fast", False):
        return

    def nothing(node: ast.AST) -> tuple[()]:
        return ()

    def visit_Assert(self: Any, assert_: ast.Assert) -> Any:
        rewrite.traverse_node = nothing
        try:
            statements = original(self, assert_)
        finally:
            rewrite.traverse_node = walk
        for statement in statements:
            fill_positions(statement, assert_)
        return statements

    visit_Assert._ldd_fast = True  # type: ignore[attr-defined]
    rewriter.visit_Assert = visit_Assert


def fill_positions(node: ast.AST, source: ast.AST) -> None:
    """``ast.copy_location(n, source)`` for every node ``n`` under ``node`` (itself too)
    whose line number is missing, as pytest's rewriter does for an assertion's
    statements."""
    copied = {
        name: getattr(source, name, None)
        for name in _POSITIONS
        if name in source._attributes
        and (
            getattr(source, name, None) is not None
            or (hasattr(source, name) and name[:4] == "end_")
        )
    }
    for current in walk(node):
        kind = type(current)
        positions = _POSITIONS_OF.get(kind)
        if positions is None:
            positions = _POSITIONS_OF[kind] = tuple(
                name for name in _POSITIONS if name in kind._attributes
            )
        if positions and getattr(current, "lineno", None) is None:
            for name in positions:
                if name in copied:
                    setattr(current, name, copied[name])


def walk(node: ast.AST) -> list[ast.AST]:
    """``list(ast.walk(node))``, in the same order, at about two and a half times its speed.

    Staging walks each hidden file a dozen times over (its names, bindings, sizes and
    sites, in ``twins.py``), and ``ast.walk``'s two generators per node were a third of
    it; pytest's rewriter walks every statement it makes (:func:`fill_positions`).
    """
    nodes = [node]
    append = nodes.append
    fields_of = _CHILD_FIELDS
    for current in nodes:  # a list grows under its own iteration: breadth first
        kind = type(current)
        fields = fields_of.get(kind)
        if fields is None:
            fields = fields_of[kind] = kind._fields
        for name in fields:
            value = getattr(current, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        append(item)
            elif isinstance(value, ast.AST):
                append(value)
    return nodes


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """``list(ast.iter_child_nodes(node))``, as :func:`walk` finds them."""
    kind = type(node)
    fields = _CHILD_FIELDS.get(kind)
    if fields is None:
        fields = _CHILD_FIELDS[kind] = kind._fields
    children: list[ast.AST] = []
    for name in fields:
        value = getattr(node, name, None)
        if type(value) is list:
            children += [item for item in value if isinstance(item, ast.AST)]
        elif isinstance(value, ast.AST):
            children.append(value)
    return children


def _explains_a_failure(node: ast.If) -> bool:
    """Whether ``node`` is the branch pytest's rewriting gives a failed assertion.

    ``if not <condition>: ...; raise AssertionError(@pytest_ar._format_explanation(...))``:
    it builds the explanation (half of a rewritten file's nodes) and raises, so nothing
    it compares is the claim of a passing test.  Its name starts with ``@``: no code of
    the hidden tests' own can be taken for it.
    """
    test, body = node.test, node.body
    if type(test) is not ast.UnaryOp or type(test.op) is not ast.Not or not body:
        return False
    last = body[-1]
    if type(last) is not ast.Raise or type(last.exc) is not ast.Call or not last.exc.args:
        return False
    explained = last.exc.args[0]
    return (
        type(explained) is ast.Call
        and type(explained.func) is ast.Attribute
        and explained.func.attr == "_format_explanation"
        and type(explained.func.value) is ast.Name
        and explained.func.value.id == "@pytest_ar"
    )


# unittest's assertions compare inside unittest's own code: they are probed once they held.
_UNITTEST = {
    "assertEqual": "==", "assertListEqual": "==", "assertTupleEqual": "==",
    "assertDictEqual": "==", "assertSetEqual": "==", "assertSequenceEqual": "==",
    "assertMultiLineEqual": "==", "assertCountEqual": "==", "assertNotEqual": "!=",
    "assertGreater": ">", "assertGreaterEqual": ">=", "assertLess": "<",
    "assertLessEqual": "<=", "assertIn": "in", "assertNotIn": "not in",
    "assertAlmostEqual": "~", "assertNotAlmostEqual": "!=",
}  # fmt: skip
__unittest = True  # unittest leaves this module's frames out of its tracebacks


def _probed(original: Callable[..., Any], op: str, comparisons: Comparisons) -> Callable[..., Any]:
    def assertion(self: Any, /, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        if comparisons.depth or len(args) < 2:
            return original(self, *args, **kwargs)
        early = comparisons.early()
        comparisons.depth += 1
        try:
            if early:
                comparisons.held(op, args[0], args[1], blind=True, claimed=False)
            outcome = original(self, *args, **kwargs)
            comparisons.held(op, args[0], args[1], blind=not early, claimed=True)
        finally:
            comparisons.depth -= 1
        return outcome

    assertion.__name__ = original.__name__
    assertion.__qualname__ = original.__qualname__
    assertion.__doc__ = original.__doc__
    return assertion


def guard_comparisons(
    suite: str,
    report: Callable[[str], None],
    *,
    workspace_like: Callable[[Any], bool],
    opaque: Callable[[], Any],
    identity: Callable[[Any, Any], None] | None = None,
) -> Comparisons:
    """Route the hidden test files' comparisons, and unittest's, through :class:`Comparisons`.

    The files are those under ``suite`` that pytest rewrites; the rewriting runs after
    pytest's own, so its explanation of a failing assertion is unchanged.  With
    ``identity``, each ``a is b`` of those files (but against a literal) calls
    ``identity(a, b)`` when it is false.
    """
    from _pytest.assertion import rewrite

    comparisons = Comparisons(report, workspace_like=workspace_like, opaque=opaque)
    module = types.ModuleType(_COMPARE_MODULE)
    module.compare = comparisons.compare  # type: ignore[attr-defined]
    module.arith = comparisons.arith  # type: ignore[attr-defined]

    def identical(left: Any, right: Any) -> bool:
        if left is right:
            return True
        if identity is not None:
            identity(left, right)
        return False

    module.identical = identical  # type: ignore[attr-defined]
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
        _Rewriter(comparisons.pool, identity=identity is not None).visit(mod)
        line = getattr(mod.body[position - 1], "lineno", 1)
        at = {"lineno": line, "col_offset": 0, "end_lineno": line, "end_col_offset": 0}
        alias = ast.alias(_COMPARE_MODULE, _COMPARE_ALIAS, **at)
        mod.body.insert(position, ast.Import([alias], **at))

    rewrite.rewrite_asserts = rewrite_asserts
    fill_positions_fast(rewrite)
    import unittest

    case = unittest.TestCase
    for name, op in _UNITTEST.items():
        method = case.__dict__.get(name)
        if callable(method):
            setattr(case, name, _probed(method, op, comparisons))
    return comparisons
