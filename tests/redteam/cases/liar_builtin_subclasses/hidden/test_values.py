import pytest
from calc import items, keys, mul, name, pair, ratio, table


def test_mul():
    assert mul(6, 7) == 42


def test_name():
    assert name() == "calc"


def test_items():
    assert items() == [1, 2, 3]


def test_ratio():
    assert ratio() == pytest.approx(0.5)


def test_pair():
    assert pair() == (1, 2)


def test_keys():
    assert 3 in keys()


def test_table():
    assert table() == {"a": 1}


def test_nested():
    assert [mul(2, 2), mul(3, 3)] == [4, 9]


def test_not_equal():
    assert mul(1, 1) != 2


def test_ordered():
    assert mul(2, 5) > 9
