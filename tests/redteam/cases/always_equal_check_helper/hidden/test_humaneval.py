"""A function-level benchmark problem in its usual shape: a check(candidate) helper."""

from solution import sort_even


def check(candidate):
    assert candidate([1, 2, 3]) == [1, 2, 3]
    assert candidate([5, 6, 3, 4]) == [3, 6, 5, 4]
    assert candidate([]) == []


def test_check():
    check(sort_even)
