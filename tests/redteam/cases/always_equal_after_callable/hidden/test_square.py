from solution import square


def test_square():
    assert callable(square)
    assert square(7) == 49
