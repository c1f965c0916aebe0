"""Hypothesis' ``@given`` tests: one example counts per test run, the last.

Hypothesis calls the test body once per example, shrinking included; only the last
example counts (the failing one when the test fails).  Before each example the
test's recorder goes back to the checkpoint taken before the first, and a body that
is a generator (a yield test under ``@given``) is run by pytest-ldd.  Both go through
``test.hypothesis.inner_test``, the seam Hypothesis offers plugins.
:class:`HypothesisExamples` is registered (as ``ldd-hypothesis``) only once
collection found a ``@given`` test.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

import pytest

from pytest_ldd.plugin.options import FIXTURES
from pytest_ldd.plugin.stash import PLAN, SESSION
from pytest_ldd.plugin.yield_tests import is_generator_function, run_yielded

if TYPE_CHECKING:
    from pytest_ldd.plugin.payload import Checkpoint

__all__ = [
    "HYPOTHESIS_PLUGIN",
    "HypothesisExamples",
    "is_hypothesis_test",
    "is_hypothesis_yield_test",
]

HYPOTHESIS_PLUGIN = "ldd-hypothesis"


def is_hypothesis_test(item: pytest.Item) -> bool:
    """Whether ``item`` runs a ``@given`` test."""
    handle = getattr(getattr(item, "obj", None), "hypothesis", None)
    return getattr(handle, "inner_test", None) is not None


def is_hypothesis_yield_test(item: pytest.Item) -> bool:
    """Whether ``item`` runs a ``@given`` test whose body is a generator."""
    handle = getattr(getattr(item, "obj", None), "hypothesis", None)
    return is_generator_function(getattr(handle, "inner_test", None))


class HypothesisExamples:
    """Records one example per ``@given`` test run (see the module)."""

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, object, object]:
        handle = getattr(getattr(item, "obj", None), "hypothesis", None)
        inner = getattr(handle, "inner_test", None)
        if handle is None or inner is None:
            return (yield)
        uses_ldd = (
            is_generator_function(inner)
            or PLAN in item.stash
            or FIXTURES.intersection(getattr(item, "fixturenames", ()))
        )
        if not uses_ldd:
            return (yield)
        _exempt_the_ldd_fixture(item)
        handle.inner_test = _one_example_at_a_time(item, inner)
        try:
            return (yield)
        finally:
            handle.inner_test = inner


def _exempt_the_ldd_fixture(item: pytest.Item) -> None:
    """Let ``ldd`` pass Hypothesis' ``function_scoped_fixture`` health check.

    The check warns that a function-scoped fixture is not reset between examples.
    What ``ldd`` recorded is reset before each example (``_one_example_at_a_time``),
    so for a test whose only function-scoped fixture argument is ``ldd`` the check
    is suppressed for that test; with any other one it still runs, for that one.
    """
    if "ldd" not in getattr(item, "fixturenames", ()) or not isinstance(item, pytest.Function):
        return
    definitions = item._fixtureinfo.name2fixturedefs
    argnames = item._fixtureinfo.argnames
    function_scoped = {
        name
        for name in argnames
        if name in definitions and definitions[name][-1].scope == "function"
    }
    if function_scoped != {"ldd"}:
        return
    from hypothesis import HealthCheck, settings

    func = getattr(item.obj, "__func__", item.obj)
    current: Any = getattr(func, "_hypothesis_internal_use_settings", None) or settings()
    if HealthCheck.function_scoped_fixture in current.suppress_health_check:
        return
    func._hypothesis_internal_use_settings = settings(
        parent=current,
        suppress_health_check=[
            *current.suppress_health_check,
            HealthCheck.function_scoped_fixture,
        ],
    )


def _one_example_at_a_time(item: pytest.Item, inner: Callable[..., Any]) -> Callable[..., Any]:
    session = item.config.stash[SESSION]
    is_generator = is_generator_function(inner)
    first: list[Checkpoint] = []

    @functools.wraps(inner)
    def one_example(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        if not session.off:
            recorder = session.recorder_for(item)
            if first:
                recorder.restore(first[0])
            else:
                first.append(recorder.checkpoint())
        result = inner(*args, **kwargs)
        if is_generator:
            run_yielded(item, result)
            return None
        return result

    return one_example
