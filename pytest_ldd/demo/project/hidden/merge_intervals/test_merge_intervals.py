"""Hidden tests of the ``merge_intervals`` task: the agent never sees these."""

from __future__ import annotations

import pytest
from merge_intervals import merge_intervals  # the agent's module


def test_overlapping_are_merged() -> None:
    assert merge_intervals([(1, 3), (2, 6), (8, 10)]) == [(1, 6), (8, 10)]


def test_touching_are_merged() -> None:
    assert merge_intervals([(1, 2), (2, 4)]) == [(1, 4)]


def test_unsorted_input() -> None:
    assert merge_intervals([(8, 10), (1, 3), (2, 6)]) == [(1, 6), (8, 10)]


def test_nested_and_empty() -> None:
    assert merge_intervals([(1, 10), (2, 3)]) == [(1, 10)]
    assert merge_intervals([]) == []


def test_reversed_interval_is_rejected() -> None:
    with pytest.raises(ValueError, match="start must be <= end"):
        merge_intervals([(5, 1)])
