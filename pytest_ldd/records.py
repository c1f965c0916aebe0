"""Moved to :mod:`pytest_ldd.model.records`; this import path stays for existing code."""

from pytest_ldd.model.records import *  # noqa: F403
from pytest_ldd.model.records import __all__ as __all__
