"""Wrong: one value of each result is an object equal to everything, hidden away."""

import collections
import dataclasses
import types


class _Always:
    def __eq__(self, other):
        return True

    def __hash__(self):
        return 5

    def __repr__(self):
        return "5"


@dataclasses.dataclass
class Point:
    x: object
    y: object


class Box:
    def __init__(self, content):
        self.content = content

    def __eq__(self, other):
        return isinstance(other, Box) and self.content == other.content

    __hash__ = None


def in_deque():
    return collections.deque([_Always(), 2])


def in_ordered_dict():
    return collections.OrderedDict(a=_Always())


def in_namespace():
    return types.SimpleNamespace(a=_Always(), b=2)


def in_dataclass():
    return Point(_Always(), 2)


def in_box():
    return Box([_Always(), 2])


def nested(depth):
    value = _Always()
    for _ in range(depth):
        value = [value]
    return value


def table(n):
    return [[_Always()]] + [[i] * 10 for i in range(n)]
