"""The pytest plugin (the ``pytest11`` module ``ldd``): options, hooks and fixtures.

``-p no:ldd`` turns it off.  This module stays small, because every pytest session
with pytest-ldd installed loads it: its hooks hand the work to the session object
(:mod:`~pytest_ldd.plugin.session`), which imports what a job needs when the job
comes.  The modules of the package, by job:

- :mod:`~pytest_ldd.plugin.options`: the command line, the ini setting, the marker line;
- :mod:`~pytest_ldd.plugin.session`: one session, started only when it is used, and
  its jobs: :mod:`~pytest_ldd.plugin.startup`, :mod:`~pytest_ldd.plugin.markers`,
  :mod:`~pytest_ldd.plugin.routing`, :mod:`~pytest_ldd.plugin.held_warnings`,
  :mod:`~pytest_ldd.plugin.ending`, :mod:`~pytest_ldd.plugin.reports`,
  :mod:`~pytest_ldd.plugin.integrations` (GitHub annotations, pytest-html,
  pytest-json-report);
- :mod:`~pytest_ldd.plugin.fixture`: what the ``ldd`` fixtures return;
- :mod:`~pytest_ldd.plugin.yield_tests`, :mod:`~pytest_ldd.plugin.hypothesis_examples`
  and :mod:`~pytest_ldd.plugin.phases`: generator tests, ``@given`` tests, gate
  failures per phase;
- :mod:`~pytest_ldd.plugin.recorder`, :mod:`~pytest_ldd.plugin.payload` and
  :mod:`~pytest_ldd.plugin.ledger`: what a test records, hands over, and how the
  session writes it (pure: no pytest import);
- :mod:`~pytest_ldd.plugin.hookspecs`: the hooks pytest-ldd calls;
  :mod:`~pytest_ldd.plugin.vcs`: the git commit a session ran on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from pytest_ldd.plugin.options import (
    HTML_OPTION,
    JUNIT_INI,
    LDD_DIR_OPTION,
    LDD_STORE_OPTION,
    MARKER_LINE,
    OFF_OPTION,
    RECORD_OPTION,
    REPORT_OPTION,
    SUMMARY_MD_OPTION,
    SUMMARY_OPTION,
    add_options,
)
from pytest_ldd.plugin.session import LddSession
from pytest_ldd.plugin.stash import SESSION
from pytest_ldd.plugin.yield_tests import collect_generator

if TYPE_CHECKING:
    from pytest_ldd.plugin.fixture import LddFixture

__all__ = [
    "HTML_OPTION",
    "JUNIT_INI",
    "LDD_DIR_OPTION",
    "LDD_STORE_OPTION",
    "OFF_OPTION",
    "RECORD_OPTION",
    "REPORT_OPTION",
    "SUMMARY_MD_OPTION",
    "SUMMARY_OPTION",
    "LddFixture",
]

#: The plugins a session may register beside this module (unregistered at the end).
_SESSION_PLUGINS = (
    "ldd-session",
    "ldd-yield",
    "ldd-gates",
    "ldd-current",
    "ldd-hypothesis",
    "ldd-inconclusive",
    "ldd-junit-inconclusive",
    "ldd-annotations",
    "ldd-report-plugins",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_ldd.plugin import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_LINE)
    # Registered as a plugin (its per-session and per-test hooks) only once started:
    # a session that does not use pytest-ldd does not pay for them.
    config.stash[SESSION] = LddSession(config)
    if getattr(config.option, "xmlpath", None):
        from pytest_ldd.plugin.inconclusive import register_junit

        register_junit(config)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[SESSION].start_session()


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    config.stash[SESSION].collected(config, items)


def pytest_unconfigure(config: pytest.Config) -> None:
    if SESSION in config.stash:
        del config.stash[SESSION]
    for name in _SESSION_PLUGINS:
        plugin = config.pluginmanager.get_plugin(name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(
    collector: pytest.Module | pytest.Class, name: str, obj: object
) -> list[pytest.Function] | None:
    """Collect generator test functions, which pytest alone refuses."""
    return collect_generator(collector, name, obj)


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report: pytest.TestReport) -> tuple[str, str, str] | None:
    """An episode graded inconclusive is an error of its test (see plugin.inconclusive)."""
    if not hasattr(report, "ldd_inconclusive"):
        return None
    from pytest_ldd.plugin.inconclusive import teststatus

    return teststatus(report)


@pytest.fixture
def ldd(request: pytest.FixtureRequest) -> LddFixture:
    """Record metric observations and agent episodes from inside a test."""
    from pytest_ldd.plugin.fixture import ldd_fixture

    return ldd_fixture(request)


@pytest.fixture(scope="session")
def ldd_session(request: pytest.FixtureRequest) -> LddFixture:
    """The ``ldd`` fixture for fixtures of any scope (module, class, session).

    Each observation belongs to the test running when it is made: a load-bearing
    breach in a module fixture's teardown is an error in the teardown of the
    module's last test, as pytest reports that fixture's own teardown errors.
    """
    from pytest_ldd.plugin.fixture import ldd_session_fixture

    return ldd_session_fixture(request)


def __getattr__(name: str) -> Any:
    # The fixture's class, for type hints (`def test_x(ldd: LddFixture)`), is looked
    # up on first use: a session that does not use pytest-ldd never imports it.
    if name == "LddFixture":
        from pytest_ldd.plugin.fixture import LddFixture

        return LddFixture
    msg = f"module 'pytest_ldd.plugin' has no attribute {name!r}"
    raise AttributeError(msg)
