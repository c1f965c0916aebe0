"""A correct answer to every shape of the compatibility suite."""

import time
from collections import namedtuple

Point = namedtuple("Point", "x y")


class ParseError(ValueError):
    pass


def add(a, b):
    return a + b


def parse(text):
    if not text.isdigit():
        raise ParseError(f"not a number: {text!r}")
    return int(text)


def lookup(table, key):
    return table[key]


def count_up(n):
    yield from range(n)


def squares(n):
    return iter([i * i for i in range(n)])


def descend(n):
    return descend(n + 1)


def sort_by(items, key):
    return sorted(items, key=key)


def now():
    return time.time()


def stamp():
    return f"at {now():.0f}"


def mean(xs):
    return sum(xs) / len(xs)


def write_report(path, lines):
    path.write_text("\n".join(lines))
    return path


def origin():
    return Point(0, 0)


class Stack:
    def __init__(self):
        self._items = []

    def push(self, item):
        self._items.append(item)

    def pop(self):
        return self._items.pop()

    def __len__(self):
        return len(self._items)


def greet(name):
    print(f"hello {name}")


def sort_in_place(nums, seen):
    nums.sort()
    seen["count"] = len(nums)


class SolutionWarning(UserWarning):
    pass


def old_api():
    import warnings

    warnings.warn("old_api is deprecated", DeprecationWarning, stacklevel=2)
    warnings.warn("and unloved", SolutionWarning, stacklevel=2)
    return 1
