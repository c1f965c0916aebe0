from solution import square


def test_square_of_2():
    assert square(2) == 4


def test_square_of_3():
    assert square(3) == 9


def test_square_of_5():
    assert square(5) == 25


def test_square_of_7():
    assert square(7) == 49


def test_square_of_9():
    assert square(9) == 81


def test_square_of_12():
    assert square(12) == 144


def test_computed_square_of_4():
    n = 4
    assert square(n) == n * n


def test_computed_square_of_6():
    n = 6
    assert square(n) == n * n


def test_computed_square_of_8():
    n = 8
    assert square(n) == n * n


def test_computed_square_of_11():
    n = 11
    assert square(n) == n * n


def test_computed_square_of_13():
    n = 13
    assert square(n) == n * n


def test_computed_square_of_15():
    n = 15
    assert square(n) == n * n
