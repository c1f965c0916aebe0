"""Honest results that are not plain values: they must keep their own meaning."""

import enum
from collections import Counter, OrderedDict, namedtuple
from dataclasses import dataclass

Point = namedtuple("Point", "x y")


@dataclass(frozen=True)
class Size:
    width: int
    height: int


class Color(enum.IntEnum):
    RED = 1
    GREEN = 2


class Third:
    """A Fraction-like number of its own, which may equal 1."""

    def __init__(self, numerator, denominator=1):
        self.numerator, self.denominator = numerator, denominator

    def __mul__(self, other):
        return Third(self.numerator * other, self.denominator)

    def __eq__(self, other):
        return self.numerator == other * self.denominator

    __hash__ = None


class Label(str):
    """A str with a method of its own; equality is str's."""

    def shout(self):
        return self.upper()


def ordered():
    return OrderedDict([("a", 1), ("b", 2)])


def counts(text):
    return Counter(text)


def third():
    return Third(1, 3)


def label():
    return Label("calc")
