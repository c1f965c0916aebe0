def test_add():
    pass


def test_sub():
    pass


def test_mul():
    pass
