from solution import square


def test_square():
    assert square(7) == 49
    assert square(12) == 144
