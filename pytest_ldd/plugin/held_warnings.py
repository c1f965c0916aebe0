"""Warnings of store work done inside a hook, held back and reissued through pytest.

A torn log line is an ``LddWarning``.  Under warnings-as-errors (``-W error``,
``filterwarnings = ["error"]``) a warning raised inside a hook would abort the hook
half-way: an INTERNALERROR, records lost.  Held back (:meth:`HeldWarnings.kept`), the
work completes; reissued through pytest's filters, a warning they turn into an error
is kept in :attr:`HeldWarnings.errors` (the session ends with a named usage error,
exit status 4, once everything recorded is written), and any other warning lands in
the warnings summary.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

__all__ = ["HeldWarnings"]


class HeldWarnings:
    """The warnings of one session's store work (see the module)."""

    __slots__ = ("config", "errors")

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        #: Warnings the filters made errors, as messages for the session's end.
        self.errors: list[str] = []

    @contextmanager
    def kept(self) -> Iterator[None]:
        """Hold back the warnings of the ``with`` block, then reissue them."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                yield
            finally:
                held = list(caught)
        for message in held:
            warning = message.message
            if not isinstance(warning, Warning):
                warning = message.category(str(warning))
            try:
                self.config.issue_config_time_warning(warning, stacklevel=2)
            except Warning as exc:
                self.errors.append(
                    f"{type(exc).__name__}: {exc} (a warning, made an error by the "
                    "warning filters: -W / filterwarnings)"
                )
