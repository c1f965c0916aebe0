"""Moved to :mod:`pytest_ldd.calibration.registry`; this import path stays for existing code."""

from pytest_ldd.calibration.registry import *  # noqa: F403
from pytest_ldd.calibration.registry import __all__ as __all__
