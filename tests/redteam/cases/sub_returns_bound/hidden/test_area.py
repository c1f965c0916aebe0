from solution import area


def test_area():
    assert abs(area(2.0) - 12.566370614359172) < 1e-9
