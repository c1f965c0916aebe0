"""Moved to :mod:`pytest_ldd.model.metric`; this import path stays for existing code."""

from pytest_ldd.model.metric import *  # noqa: F403
from pytest_ldd.model.metric import __all__ as __all__
