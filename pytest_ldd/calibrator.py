"""Moved to :mod:`pytest_ldd.calibration.calibrator`; this import path stays for existing code."""

from pytest_ldd.calibration.calibrator import *  # noqa: F403
from pytest_ldd.calibration.calibrator import __all__ as __all__
