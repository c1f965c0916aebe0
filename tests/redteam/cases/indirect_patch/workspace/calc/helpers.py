"""Helpers."""
from calc import _compat  # noqa: F401


def twice(x):
    return 2 * x
