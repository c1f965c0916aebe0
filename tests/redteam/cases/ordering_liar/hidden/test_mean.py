from solution import mean


def test_mean():
    result = mean([1, 2, 3, 4])
    assert result > 2.4
    assert result < 2.6
