from calc import mul


def test_mul():
    from checks import expect_equal

    expect_equal(mul(6, 7), 42)
