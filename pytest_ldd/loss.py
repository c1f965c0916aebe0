"""Moved to :mod:`pytest_ldd.model.loss`; this import path stays for existing code."""

from pytest_ldd.model.loss import *  # noqa: F403
from pytest_ldd.model.loss import __all__ as __all__
