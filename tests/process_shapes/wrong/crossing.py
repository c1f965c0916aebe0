"""A wrong answer to every shape of test_crossing.py."""

import collections
import dataclasses
import datetime
import random
import decimal
import enum
import fractions
import pathlib
import re
import uuid


def total(numbers):
    return sum(numbers) + 1


def first_two(iterable):
    iterator = iter(iterable)
    next(iterator)
    return [next(iterator), next(iterator)]


def describe(item):
    return item.name


def discount(item, amount):
    return None


def call(function, *args):
    return None


def describe_error(error):
    return "an error"


def raise_it(error):
    raise RuntimeError("not it")


def wrap(error):
    raise RuntimeError("wrapped")


class ParseError(ValueError):
    pass


def parse(text):
    raise ParseError(text)


def counts(text):
    return dict(collections.Counter(text))


def groups(words):
    grouped = {}
    for word in words:
        grouped.setdefault(word[0], []).append(word)
    return grouped


def ordered():
    return collections.OrderedDict([("a", 2), ("b", 1)])


def window(items):
    return collections.deque(items)


def zeros():
    return collections.defaultdict(lambda: 1)


class Color(enum.IntEnum):
    RED = 3
    GREEN = 4


class Shape(enum.Enum):
    SQUARE = "square"


def flags():
    return re.IGNORECASE


def identity(value):
    return int(value)


def double(value):
    return value * 3


def point(x, y):
    return (x, y)


class Point:
    pass


def pair(left, right):
    return (left, right)


def shout(word):
    return word.lower()


def moment():
    return datetime.datetime(2024, 3, 1, 12, 0, tzinfo=datetime.timezone.utc)


def money():
    return decimal.Decimal("2.10")


def ratio():
    return fractions.Fraction(1, 4)


def ident():
    return uuid.UUID(int=6)


def where():
    return pathlib.PurePosixPath("a/c")


def frozen():
    return {1, 2}


def raw():
    return b"ab", b"cd"


def span():
    return range(2, 10)


def cut():
    return slice(1, None)


def add(a, b=1):
    """Adds."""
    return a + b


class Box:
    """A box."""


def decorated(n):
    return n * 2


def _wrapper(n):
    return n


decorated = _wrapper


class Pair:
    def __init__(self, left, right):
        self.left = left
        self.right = right


class Suppressing:
    def __init__(self, kind):
        self.caught = None

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        return False


class Log:
    def __init__(self):
        self.lines = []


class annotating:  # noqa: N801 - the name the tests use
    def __init__(self, name):
        self.log = Log()

    def __enter__(self):
        return self.log

    def __exit__(self, *exc):
        return False


def keyed(first, /, *args, **kwargs):
    return first, args, sorted(kwargs)


class Keywords:
    def __init__(this, **kwargs):
        this.given = []

    def take(this, **kwargs):
        return list(kwargs)[:1]


def choice_of(choice=random.choice):
    return random.sample
