"""Generator tests: collected (pytest alone refuses them) and run, each yield an observation.

A test that yields an ``Observation``, an ``Episode`` or a number records it, the
same as calling the ``ldd`` fixture.  Collection makes the items the way pytest makes
any test's (parametrize, fixtures and marks apply); running them needs per-test
hooks, so :class:`YieldTests` is registered (as ``ldd-yield``) only once collection
made a yield test: a project without any does not pay for them.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Generator
from types import FunctionType
from typing import Any

import pytest

from pytest_ldd.plugin.stash import YIELD_TESTS

__all__ = [
    "YIELD_PLUGIN",
    "YieldTests",
    "collect_generator",
    "is_generator_function",
    "is_unittest_generator",
    "run_yielded",
]

YIELD_PLUGIN = "ldd-yield"


def is_generator_function(obj: object) -> bool:
    """Whether ``obj`` is a generator function (a plain function answered fast)."""
    # Asked of every name in every test module and of every test run: a plain
    # function is answered from its code flags, anything else by inspect.
    if type(obj) is FunctionType:
        return bool(obj.__code__.co_flags & inspect.CO_GENERATOR)
    return inspect.isgeneratorfunction(obj)


def is_unittest_generator(item: pytest.Item) -> bool:
    """Whether ``item`` is a generator method of a ``unittest.TestCase``."""
    cls = getattr(item, "cls", None)
    # Not imported here: where nothing imported unittest, no class is a TestCase
    # (and a session without unittest tests does not pay for importing it).
    unittest = sys.modules.get("unittest")
    return (
        cls is not None
        and unittest is not None
        and issubclass(cls, unittest.TestCase)
        and is_generator_function(getattr(cls, item.name, None))
    )


def collect_generator(
    collector: pytest.Module | pytest.Class, name: str, obj: object
) -> list[pytest.Function] | None:
    """The items of a generator test function (None for anything else)."""
    func = getattr(obj, "__func__", obj)
    if inspect.isasyncgenfunction(func) and collector.istestfunction(obj, name):
        # pytest-asyncio marks an async generator test xfail and runs nothing: a
        # test whose observations silently vanish.  Refused, with what to do instead.
        msg = (
            f"{collector.nodeid}::{name} is an async generator: pytest-ldd runs "
            "generator tests, not async ones; write an async def test that observes "
            "through the ldd fixture (ldd.observe(...)) instead of yielding"
        )
        raise pytest.Collector.CollectError(msg)
    if not is_generator_function(func) or not getattr(func, "__test__", True):
        return None
    if not collector.istestfunction(obj, name):
        return None
    # _genfunctions is how pytest itself turns a test function into items: it applies
    # parametrize, fixtures and marks, so yield tests behave like any other test.
    collector.config.stash[YIELD_TESTS] = True
    return list(collector._genfunctions(name, func))


class YieldTests:
    """Runs generator tests; registered (as ``ldd-yield``) once collection made one."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> bool | None:
        """Run a generator test, treating each yielded value as an observation."""
        testfunction = pyfuncitem.obj
        if not is_generator_function(testfunction):
            return None
        funcargs = pyfuncitem.funcargs
        testargs = {arg: funcargs[arg] for arg in pyfuncitem._fixtureinfo.argnames}
        run_yielded(pyfuncitem, testfunction(**testargs))
        return True

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> None:
        """Run a generator method of a ``unittest.TestCase`` the same way.

        unittest calls the method and drops the generator it returns, so nothing
        after the first ``yield`` would run: the item gets a method that runs it.
        """
        if not isinstance(item, pytest.Function) or not is_unittest_generator(item):
            return
        method = item.obj

        def run_generator_method() -> None:
            __tracebackhide__ = True
            run_yielded(item, method())

        # pytest calls item.obj in place of the instance's method (its tracing hook
        # for --pdb --trace wraps it the same way).
        item.obj = run_generator_method


def run_yielded(item: pytest.Item, generator: Generator[Any, None, None]) -> None:
    """Treat each value a yield test yields as an observation."""
    __tracebackhide__ = True
    from pytest_ldd.plugin.fixture import fixture_for

    fixture = fixture_for(item)
    try:
        for value in generator:
            fixture.take_yielded(value)
    finally:
        generator.close()
