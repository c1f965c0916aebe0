"""A wrong answer to every shape of the compatibility suite."""

from collections import namedtuple

Point = namedtuple("Point", "x y")


class ParseError(ValueError):
    pass


def add(a, b):
    return a - b


def parse(text):
    return len(text)


def lookup(table, key):
    return table.get(key)


def count_up(n):
    yield from range(1, n + 1)


def squares(n):
    return iter([i + i for i in range(n)])


def descend(n):
    return n


def sort_by(items, key):
    return list(items)


def now():
    return 0.0


def stamp():
    return "at noon"


def mean(xs):
    return sum(xs) / (len(xs) + 1)


def write_report(path, lines):
    path.write_text("")
    return path


def origin():
    return Point(1, 1)


class Stack:
    def __init__(self):
        self._items = []

    def push(self, item):
        self._items.append(item)

    def pop(self):
        return self._items.pop(0)

    def __len__(self):
        return 0


def greet(name):
    print("hello")


def sort_in_place(nums, seen):
    nums = sorted(nums)
    seen["count"] = 0


class SolutionWarning(UserWarning):
    pass


def old_api():
    return 1
