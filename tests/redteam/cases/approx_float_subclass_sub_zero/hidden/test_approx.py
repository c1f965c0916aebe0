import math

import pytest

from solution import area, areas


def test_area():
    assert area(2.0) == pytest.approx(math.pi * 4)


def test_area_relative():
    assert pytest.approx(math.pi * 9, rel=1e-6) == area(3.0)


def test_areas():
    assert areas([1.0, 2.0]) == pytest.approx([math.pi, math.pi * 4])
