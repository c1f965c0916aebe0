from solution import square


def test_square():
    assert True, "square is defined"
    assert square(7) == 49
    assert square(-3) == 9
