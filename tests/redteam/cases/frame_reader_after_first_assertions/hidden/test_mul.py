from calc import add, mul


def test_mul():
    assert True, "mul is defined"
    assert callable(mul)
    assert isinstance(mul(2, 2), int)
    assert add(2, 3) == 5
    assert mul(6, 7) == 42
    assert mul(3, 5) == 15
