"""Honest equalities that look at a part of the other side, as ordered-set and mpmath do."""


class KeySet:
    """A set of keys; against a mapping it compares the mapping's keys, as set(d) does."""

    def __init__(self, items):
        self.items = list(items)

    def __eq__(self, other):
        try:
            return set(self.items) == set(other)
        except TypeError:
            return NotImplemented

    __hash__ = None


def keys_of(mapping):
    return KeySet(mapping)


class Exact:
    """An exact integer, equal to the int it holds, however large."""

    def __init__(self, value):
        self.value = int(value)

    def __eq__(self, other):
        if isinstance(other, Exact):
            other = other.value
        if isinstance(other, int):
            return self.value == other
        return NotImplemented

    __hash__ = None


def power(base, exponent):
    return Exact(base**exponent)


class Bits:
    """A bit string; against a sequence each item counts as a bit by its truth (pyasn1)."""

    def __init__(self, text):
        self.text = text

    def __eq__(self, other):
        if isinstance(other, (tuple, list)):
            other = "".join("1" if bit else "0" for bit in other)
        return self.text == other

    __hash__ = None


def bits(text):
    return Bits(text)
