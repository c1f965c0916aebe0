"""pytest hooks of pytest-ldd (being built)."""
