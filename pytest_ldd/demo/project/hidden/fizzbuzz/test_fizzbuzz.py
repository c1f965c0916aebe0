"""Hidden tests of the ``fizzbuzz`` task: the agent never sees these."""

from __future__ import annotations

import pytest
from fizzbuzz import fizzbuzz  # the agent's module


def test_first_fifteen() -> None:
    assert fizzbuzz(15) == [
        "1", "2", "Fizz", "4", "Buzz", "Fizz", "7", "8",
        "Fizz", "Buzz", "11", "Fizz", "13", "14", "FizzBuzz",
    ]  # fmt: skip


def test_zero_is_empty() -> None:
    assert fizzbuzz(0) == []


def test_length_is_n() -> None:
    assert len(fizzbuzz(100)) == 100


def test_negative_is_rejected() -> None:
    with pytest.raises(ValueError, match="n must be"):
        fizzbuzz(-1)
