from calc import add


def test_own_add():
    assert add(1, 1) == 2
