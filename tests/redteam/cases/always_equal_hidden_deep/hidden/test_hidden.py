import collections
import types

from solution import Box, Point, in_box, in_dataclass, in_deque, in_namespace, in_ordered_dict
from solution import nested, table


def five():
    return int("5")


def test_deque():
    assert in_deque() == collections.deque([five(), 2])


def test_ordered_dict():
    assert in_ordered_dict() == collections.OrderedDict(a=five())


def test_namespace():
    assert in_namespace() == types.SimpleNamespace(a=five(), b=2)


def test_dataclass():
    assert in_dataclass() == Point(five(), 2)


def test_box():
    assert in_box() == Box([five(), 2])


def test_nested():
    expected = five()
    for _ in range(40):
        expected = [expected]
    assert nested(40) == expected


def test_table():
    assert table(2000) == [[five()]] + [[i] * 10 for i in range(2000)]
