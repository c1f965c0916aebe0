from collections import Counter, OrderedDict

from calc import Color, Point, Size, Third, counts, label, ordered, third


def test_namedtuple():
    assert Point(1, 2) == (1, 2)
    assert Point(1, 2) != (2, 1)


def test_dataclass():
    assert Size(3, 4) == Size(3, 4)
    assert Size(3, 4) != Size(4, 3)


def test_int_enum():
    assert Color.RED == 1
    assert Color.GREEN > Color.RED


def test_ordered_dict():
    assert ordered() == OrderedDict([("a", 1), ("b", 2)])
    assert ordered() != OrderedDict([("b", 2), ("a", 1)])


def test_counter():
    assert counts("abca") == Counter(a=2, b=1, c=1)


def test_own_class_equal_to_one():
    assert third() * 3 == 1
    assert Third(1) == 1


def test_str_subclass_without_override():
    assert label() == "calc"
    assert "al" in label()
