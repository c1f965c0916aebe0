"""A correct answer to every shape of test_crossing.py."""

import collections
import contextlib
import dataclasses
import datetime
import random
import decimal
import enum
import fractions
import functools
import math
import pathlib
import re
import typing
import uuid


def total(numbers):
    return sum(numbers)


def first_two(iterable):
    iterator = iter(iterable)
    return [next(iterator), next(iterator)]


def describe(item):
    return item.label()


def discount(item, amount):
    item.price = item.price - amount


def call(function, *args):
    return function(*args)


def describe_error(error):
    return f"{type(error).__name__} {error.args}"


def raise_it(error):
    raise error


def wrap(error):
    raise RuntimeError(f"wrapped: {error}") from error


class ParseError(ValueError):
    def __init__(self, text):
        super().__init__(f"cannot parse {text!r}")
        self.text = text


def parse(text):
    try:
        return int(text)
    except ValueError as exc:
        raise ParseError(text) from exc


def counts(text):
    return collections.Counter(text)


def groups(words):
    grouped = collections.defaultdict(list)
    for word in words:
        grouped[word[0]].append(word)
    return grouped


def ordered():
    return collections.OrderedDict([("b", 1), ("a", 2)])


def window(items):
    return collections.deque(items, maxlen=2)


def zeros():
    return collections.defaultdict(lambda: 0)


class Color(enum.IntEnum):
    RED = 1
    GREEN = 2


class Shape(enum.Enum):
    ROUND = "round"


def flags():
    return re.IGNORECASE | re.MULTILINE


def identity(value):
    return value


def double(value):
    return value * 2


class Point(typing.NamedTuple):
    x: int
    y: int

    def norm(self):
        return math.hypot(self.x, self.y)


def point(x, y):
    return Point(x, y)


Pair2 = collections.namedtuple("Pair2", "left right")


def pair(left, right):
    return Pair2(left, right)


class Loud(str):
    def exclaim(self):
        return self + "!"


def shout(word):
    return Loud(word.upper())


def moment():
    return datetime.datetime(2024, 2, 29, 12, 0, tzinfo=datetime.timezone.utc)


def money():
    return decimal.Decimal("1.10")


def ratio():
    return fractions.Fraction(1, 3)


def ident():
    return uuid.UUID(int=5)


def where():
    return pathlib.PurePosixPath("a/b")


def frozen():
    return frozenset({1, 2})


def raw():
    return b"ab", bytearray(b"cd")


def span():
    return range(2, 10, 3)


def cut():
    return slice(1, None, 2)


def add(a, b=0) -> "int":
    """The sum of a and b."""
    return a + b


class Box:
    """Holds things."""

    def __init__(self):
        self.things = []

    def __len__(self):
        return len(self.things)

    def __iter__(self):
        return iter(self.things)


def doubling(function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        return function(*args, **kwargs)

    return wrapper


@doubling
def decorated(n):
    """Decorated, still documented."""
    return n * 2


@dataclasses.dataclass
class Pair:
    left: int
    right: int


class Suppressing:
    def __init__(self, kind):
        self.kind = kind
        self.caught = None

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if value is not None:
            self.caught = (type(value).__name__, value.args)
        return kind is not None and issubclass(kind, self.kind) and isinstance(value, self.kind)


class Log:
    def __init__(self):
        self.lines = []


@contextlib.contextmanager
def annotating(name):
    log = Log()
    log.lines.append(f"enter {name}")
    try:
        yield log
    except ValueError as exc:
        raise RuntimeError(f"{name} failed") from exc
    log.lines.append(f"exit {name}")


def keyed(first, /, *args, **kwargs):
    return first, args, sorted(kwargs.items())


class Keywords:
    def __init__(this, **kwargs):
        this.given = sorted(kwargs)

    def take(this, **kwargs):
        return sorted(kwargs)


def choice_of(choice=random.choice):
    return choice
