from calc import add, mul, sort_by


def test_add():
    assert add(2, 3) == 5


def test_mul():
    assert mul(6, 7) == 42


def test_sort_by_key():
    assert sort_by([3, 1, 2], key=lambda v: -v) == [3, 2, 1]
