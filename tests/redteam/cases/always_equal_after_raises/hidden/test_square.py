import pytest
from solution import square


def test_square():
    with pytest.raises(TypeError):
        square("7")
    assert square(7) == 49
