from calc import add, mul, sub


def test_add():
    assert add(2, 3) == 5


def test_sub():
    assert sub(7, 4) == 3


def test_mul():
    assert mul(6, 7) == 42
