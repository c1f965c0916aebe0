"""Moved to :mod:`pytest_ldd.report.terminal`; this import path stays for existing code."""

from pytest_ldd.report.terminal import *  # noqa: F403
from pytest_ldd.report.terminal import __all__ as __all__
