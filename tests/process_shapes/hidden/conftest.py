import pytest


@pytest.fixture
def numbers():
    return [3, 1, 2]
