"""Moved to :mod:`pytest_ldd.model.estimator`; this import path stays for existing code."""

from pytest_ldd.model.estimator import *  # noqa: F403
from pytest_ldd.model.estimator import __all__ as __all__
