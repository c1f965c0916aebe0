from solution import square


def test_square():
    result = square(7)
    assert result != 0
    assert result == 49
