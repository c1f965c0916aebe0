"""Load-bearing gate failures fail the phase of the test they happened in.

A value may be observed in any phase: in a fixture's setup, in the test (a function,
a yield test, a ``unittest.TestCase`` method), or in a fixture's teardown.  Each
phase is checked when it ends, so a breach fails the phase it happened in, the way
pytest reports any other failure there (a teardown breach is an error in the
teardown phase).

:class:`GateFailures` is registered (as ``ldd-gates``) only when some gate bound can
apply (``[tool.ldd.metrics]`` bounds or a marker's ``le``/``lt``/``ge``/``gt``): only
then can a test collect failures, and per-phase hooks cost every test.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_ldd.plugin.stash import SessionState

__all__ = ["GATES_PLUGIN", "GateFailures"]

GATES_PLUGIN = "ldd-gates"


class GateFailures:
    """Fails a phase whose load-bearing gates it breached (see the module)."""

    def __init__(self, session: SessionState) -> None:
        self.session = session

    def _phase(self, item: pytest.Item) -> Generator[None, object, object]:
        try:
            result = yield
        except BaseException:
            # The phase failed already: that failure is the one shown (the breach
            # stays in the summary), and it is not carried into the next phase.
            self._take(item)
            raise
        failures = self._take(item)
        if failures:
            pytest.fail("\n".join(failures), pytrace=False)
        return result

    def _take(self, item: pytest.Item) -> list[str]:
        recorder = self.session.live.get(item.nodeid)
        if recorder is None or not recorder.failures:
            return []
        failures, recorder.failures = recorder.failures, []
        return failures

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, object, object]:
        return (yield from self._phase(item))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, object, object]:
        return (yield from self._phase(item))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Generator[None, object, object]:
        return (yield from self._phase(item))
