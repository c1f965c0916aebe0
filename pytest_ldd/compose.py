"""Moved to :mod:`pytest_ldd.model.compose`; this import path stays for existing code."""

from pytest_ldd.model.compose import *  # noqa: F403
from pytest_ldd.model.compose import __all__ as __all__
