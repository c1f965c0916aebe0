"""Which list is which: the identity of containers and strings that cross by value.

A ``list``, ``dict``, ``set`` or ``bytearray`` crosses as a copy.  In one process the
test and the workspace would share the object itself, so each side keeps a
:class:`Containers` table for the test in progress, and the codec marks every such
container it sends (``wire``'s ``m`` and ``M`` tags):

- the sender's own container gets a number (``m n``), never reused; the receiver
  keeps its copy under that number, so the same container sent again arrives as the
  *same* copy (``f() is f()`` holds when ``f`` returns a list it keeps);
- a copy sent back to its owner names the owner's number (``M n``) and arrives as the
  original (``mod.setdefault(d, k, x) is x`` holds);
- before each message it sends, a side re-sends the containers that changed since
  they last crossed, and the receiver updates its copy (or the original) in place,
  so a list the test changes after handing it over, or one the workspace fills
  later, is seen changed on the other side as in one process.

Where both sides changed the same container between two crossings, no order of the
two changes is the one process's: that is a limit of the test (``on_limit``), and
the sender's version wins.  The tables are bounded: past :data:`MOST` containers in
one test no new ones are numbered (they cross as plain copies), and past
:data:`MOST_WATCHED` containers changes are no longer re-sent.  Both sides forget
their tables when the judge says a test ended.

A number the other side names that this side does not know (forgotten, or forged) is
a plain copy: a hostile side can make a container change only where it was handed
that container, as workspace code could in one process.

:class:`Values` does the same for the immutable values whose identity code tests
(``value is target``): a ``str``, ``bytes`` or ``frozenset`` (of such scalars)
crosses marked too, so the same one sent again is the same copy and a copy sent back
arrives as the original.  They never change, so nothing is re-sent; a number that
names a value of another type or content is a plain copy.  A hostile side can only
get back an object it was sent during the test, which workspace code in one process
could have kept as well.

Both sides load this module from a file; it imports only the standard library.
"""

from __future__ import annotations

import copy
import datetime
from collections.abc import Callable
from typing import Any

__all__ = ["MOST", "MOST_VALUES", "MOST_WATCHED", "Containers", "Values"]

# Containers numbered per test; beyond it they cross as plain copies.
MOST = 20_000
# Containers whose changes are re-sent before each message: the scan runs before
# every message, so it stays within about a tenth of a millisecond.
MOST_WATCHED = 128
# Items in all watched containers together, past which changes are no longer scanned.
MOST_WATCHED_ITEMS = 4096
_PLAIN = frozenset({int, float, str, bytes, bool, complex, type(None)})
# Immutable values numbered per test, each way; beyond it they cross as plain copies.
MOST_VALUES = 20_000


def _same_item(a: Any, b: Any) -> bool:
    """Whether two items are the same, without running either's own equality.

    Objects compare by identity (a stand-in's ``==`` would be a request); builtin
    scalars and tuples of them by value.
    """
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    if kind in _PLAIN:
        return bool(a == b)
    if kind is tuple:
        return len(a) == len(b) and all(_same_item(x, y) for x, y in zip(a, b, strict=True))
    return False


def same(a: Any, b: Any) -> bool:
    """Whether container ``a`` holds what ``b`` holds (items compared as :func:`_same_item`)."""
    if type(a) is not type(b) or len(a) != len(b):
        return False
    if type(a) is dict:
        return all(
            _same_item(k1, k2) and _same_item(v1, v2)
            for (k1, v1), (k2, v2) in zip(a.items(), b.items(), strict=True)
        )
    if type(a) is set:
        return bool(a == b)  # members were hashed when they crossed; equal ones match
    return all(_same_item(x, y) for x, y in zip(a, b, strict=True))


def _refill(target: Any, value: Any) -> None:
    """Make ``target`` hold what ``value`` holds, in place."""
    if type(target) is list or type(target) is bytearray:
        target[:] = value
    else:
        target.clear()
        target.update(value)


class Containers:
    """One side's containers of the test in progress: its own sent, and its copies."""

    __slots__ = ("_copies", "_copy_ids", "_next", "_own", "_own_ids", "on_limit")

    def __init__(self) -> None:
        # number -> [container, what it held when it last crossed]
        self._own: dict[int, list[Any]] = {}
        self._own_ids: dict[int, int] = {}  # id(container) -> number
        self._copies: dict[int, list[Any]] = {}
        self._copy_ids: dict[int, int] = {}
        self._next = 1
        self.on_limit: Callable[[str], None] = lambda reason: None

    def forget(self) -> None:
        """The test ended: what crossed during it is no longer tracked."""
        self._own.clear()
        self._own_ids.clear()
        self._copies.clear()
        self._copy_ids.clear()

    # -- sending ------------------------------------------------------------------------
    def mark(self, container: Any) -> tuple[bytes, int] | None:
        """The encoder's hook: ``M`` and the owner's number for a copy, ``m`` for one's own."""
        number = self._copy_ids.get(id(container))
        if number is not None and self._copies[number][0] is container:
            self._copies[number][1] = copy.copy(container)
            return b"M", number
        number = self._own_ids.get(id(container))
        if number is not None and self._own[number][0] is container:
            self._own[number][1] = copy.copy(container)
            return b"m", number
        if len(self._own) >= MOST:
            return None
        number, self._next = self._next, self._next + 1
        # Kept alive for the test, so that its id is never another container's.
        self._own[number] = [container, copy.copy(container)]
        self._own_ids[id(container)] = number
        return b"m", number

    def changed(self) -> tuple[Any, ...]:
        """The containers that changed since they last crossed (to send again)."""
        watched = len(self._own) + len(self._copies)
        if not watched or watched > MOST_WATCHED:
            return ()
        entries = [*self._own.values(), *self._copies.values()]
        if sum(len(entry[1]) for entry in entries) > MOST_WATCHED_ITEMS:
            return ()
        return tuple(entry[0] for entry in entries if not same(entry[0], entry[1]))

    # -- receiving ----------------------------------------------------------------------
    def marked(self, tag: bytes, number: int, value: Any) -> Any:
        """The decoder's hook: the container a marked value stands for."""
        if tag == b"M":
            entry = self._own.get(number)
        else:
            entry = self._copies.get(number)
            if entry is None:
                if len(self._copies) < MOST:
                    self._copies[number] = [value, copy.copy(value)]
                    self._copy_ids[id(value)] = number
                return value
        if entry is None or type(entry[0]) is not type(value):
            return value
        held, crossed = entry
        if not same(held, value):
            if same(value, crossed):
                # Only this side changed it since: the other side's copy is behind.
                self.on_limit(_BEHIND)
                return held
            if not same(held, crossed):
                self.on_limit(_BOTH)
            _refill(held, value)
        entry[1] = copy.copy(held)
        return held


_BEHIND = (
    "a container that crossed between the test and workspace code was sent back"
    " without a change made to it since: the sender held an old copy"
)
_BOTH = (
    "the test and workspace code both changed a container that crossed between them:"
    " each changed a copy, where one process would have changed one object"
)


class Values:
    """One side's ``str``, ``bytes`` and ``frozenset`` values of the test in progress.

    Its own that it sent, and the copies it received, each under the owner's number,
    so that the identity of a value that makes a round trip is kept.
    """

    __slots__ = ("_copies", "_copy_ids", "_next", "_own", "_own_ids")

    def __init__(self) -> None:
        # number -> value; id(value) -> number (the values are kept alive for the test,
        # so that an id is never another object's)
        self._own: dict[int, Any] = {}
        self._own_ids: dict[int, int] = {}
        self._copies: dict[int, Any] = {}
        self._copy_ids: dict[int, int] = {}
        self._next = 1

    def forget(self) -> None:
        """The test ended: what crossed during it is no longer tracked."""
        self._own.clear()
        self._own_ids.clear()
        self._copies.clear()
        self._copy_ids.clear()

    def mark(self, value: Any) -> tuple[bytes, int] | None:
        """The encoder's hook: ``M`` and the owner's number for a copy, ``m`` for one's own."""
        key = id(value)
        number = self._copy_ids.get(key)
        if number is not None and self._copies[number] is value:
            return b"M", number
        number = self._own_ids.get(key)
        if number is not None and self._own[number] is value:
            return b"m", number
        if len(self._own) >= MOST_VALUES or not _scalar_members(value):
            return None
        number, self._next = self._next, self._next + 1
        self._own[number] = value
        self._own_ids[key] = number
        return b"m", number

    def marked(self, tag: bytes, number: int, value: Any) -> Any:
        """The decoder's hook: the object a marked value stands for."""
        if tag == b"M":
            held = self._own.get(number)
        else:
            held = self._copies.get(number)
            if held is None:
                if len(self._copies) < MOST_VALUES and _scalar_members(value):
                    self._copies[number] = value
                    self._copy_ids[id(value)] = number
                return value
        # Never the other side's word alone: the very value this side holds, or a copy.
        if held is None or type(held) is not type(value) or not _scalar_members(value):
            return value
        return held if _same_value(held, value) else value


def _scalar_members(value: Any) -> bool:
    """Whether comparing ``value`` runs no code but the builtins' (a frozenset's members)."""
    return type(value) is not frozenset or all(type(member) in _PLAIN for member in value)


def _same_value(held: Any, value: Any) -> bool:
    """``held == value`` without running code of either side.

    An aware ``datetime`` or ``time`` would ask its zone (perhaps a stand-in) for its
    offset: those compare field by field, the zone by identity.
    """
    if type(value) in (datetime.datetime, datetime.time):
        fields: tuple[str, ...] = ("hour", "minute", "second", "microsecond", "fold")
        if type(value) is datetime.datetime:
            fields = ("year", "month", "day", *fields)
        return held.tzinfo is value.tzinfo and all(
            getattr(held, name) == getattr(value, name) for name in fields
        )
    return bool(held == value)
