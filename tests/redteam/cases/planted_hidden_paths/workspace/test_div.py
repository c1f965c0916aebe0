def test_div():
    pass


def test_div_by_zero():
    pass
