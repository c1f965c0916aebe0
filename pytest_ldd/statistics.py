"""Moved to :mod:`pytest_ldd.model.statistics`; this import path stays for existing code."""

from pytest_ldd.model.statistics import *  # noqa: F403
from pytest_ldd.model.statistics import __all__ as __all__
