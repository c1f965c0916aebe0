"""Shared fixtures of the pytest-ldd test suite."""

from __future__ import annotations

pytest_plugins = ["pytester"]
