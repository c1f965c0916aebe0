"""``python -m pytest_ldd``: the ``ldd`` command."""

from __future__ import annotations

from pytest_ldd.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
