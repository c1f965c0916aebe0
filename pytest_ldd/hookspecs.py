"""Moved to :mod:`pytest_ldd.plugin.hookspecs`; this import path stays for existing code."""

from pytest_ldd.plugin.hookspecs import *  # noqa: F403
from pytest_ldd.plugin.hookspecs import __all__ as __all__
