"""pytest-ldd next to the plugins real projects run, each really installed (the test extra).

Every scenario runs a small project twice, without and with ``--ldd``: the outcomes
are the same, and with ``--ldd`` each test's values are recorded once.  pytest-timeout,
pytest-rerunfailures and faked clocks have files of their own (test_timeouts.py,
test_reruns.py, test_faked_clocks.py); pytest-html and pytest-json-report are in
tests/report/test_report_plugins.py.  docs/reference.md's "works with" table lists
the versions these ran with.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from plugin_support import PROJECT_ARGS, read_jsonl, run

METRIC = """
[tool.ldd.metrics.lat]
kind = "positive"
unit = "ms"
normalize_scale = 100
description = "latency of one call"
"""

SERIAL_AND_XDIST = pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])


def outcomes(result: pytest.RunResult) -> dict[str, int]:
    return {k: v for k, v in result.parseoutcomes().items() if not k.startswith("warning")}


def same_with_ldd(
    pytester: pytest.Pytester, *args: str, isolated: bool = False
) -> pytest.RunResult:
    """Run without and with ``--ldd``: the same outcomes; the recording run returned.

    ``isolated``: in a process of its own, for a plugin that configures something
    process-wide (pytest-django's settings would stay configured in this suite's own
    process, where its autouse fixtures then look for the project's settings module).
    """
    runner = run_isolated if isolated else run
    plain = runner(pytester, *args)
    recorded = runner(pytester, "--ldd", *args)
    assert outcomes(recorded) == outcomes(plain), recorded.stdout.str()
    assert recorded.ret == plain.ret
    return recorded


def run_isolated(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        *PROJECT_ARGS, "-p", "no:harvest", "-p", "no:rerunfailures", "-p", "no:randomly", *args
    )


def recorded(pytester: pytest.Pytester) -> list[tuple[str, float]]:
    """(test name, raw observed value) of every pair, sorted."""
    pairs = read_jsonl(pytester.path / ".ldd" / "metric_calibrations.jsonl")
    return sorted((p["nodeid"].rsplit("::", 1)[-1], p["raw_observed"]) for p in pairs)


def counts(pytester: pytest.Pytester) -> dict[str, int]:
    return read_jsonl(pytester.path / ".ldd" / "sessions.jsonl")[-1]["counts"]  # type: ignore[no-any-return]


# -- pytest-asyncio and anyio ------------------------------------------------------------


@SERIAL_AND_XDIST
@pytest.mark.parametrize("mode", ["strict", "auto"])
def test_pytest_asyncio(pytester: pytest.Pytester, mode: str, workers: list[str]) -> None:
    pytester.makepyprojecttoml(METRIC + f'[tool.pytest.ini_options]\nasyncio_mode = "{mode}"\n')
    pytester.makepyfile(
        test_async="""
        import asyncio
        import pytest
        import pytest_asyncio

        @pytest_asyncio.fixture
        async def client(ldd_session):
            await asyncio.sleep(0)
            yield "client"
            ldd_session.observe("lat", 3.0, predicted=3.0)   # in the async teardown

        @pytest.mark.asyncio
        async def test_call(ldd, client):
            await asyncio.sleep(0)
            ldd.observe("lat", 1.0, predicted=1.0)

        @pytest.mark.asyncio
        @pytest.mark.parametrize("value", [4.0, 5.0])
        async def test_many(ldd, value):
            ldd.observe("lat", value, predicted=value)
        """
    )
    result = same_with_ldd(pytester, "-W", "error", *workers)
    assert result.ret == 0, result.stdout.str()
    assert recorded(pytester) == [
        ("test_call", 1.0),
        ("test_call", 3.0),
        ("test_many[4.0]", 4.0),
        ("test_many[5.0]", 5.0),
    ]
    assert counts(pytester)["tests"] == 3


@SERIAL_AND_XDIST
def test_anyio(pytester: pytest.Pytester, workers: list[str]) -> None:
    pytester.makepyprojecttoml(METRIC)
    pytester.makepyfile(
        test_anyio="""
        import anyio
        import pytest

        @pytest.fixture
        def anyio_backend():
            return "asyncio"

        @pytest.mark.anyio
        async def test_call(ldd):
            await anyio.sleep(0)
            ldd.observe("lat", 2.0, predicted=2.0)
        """
    )
    result = same_with_ldd(pytester, "-W", "error", *workers)
    assert result.ret == 0, result.stdout.str()
    assert recorded(pytester) == [("test_call", 2.0)]


# -- pytest-cov, pytest-mock, syrupy, pytest-benchmark ------------------------------------


@SERIAL_AND_XDIST
def test_pytest_cov(pytester: pytest.Pytester, workers: list[str]) -> None:
    pytester.makepyprojecttoml(METRIC)
    pytester.makepyfile(
        shapes="def area(w, h):\n    return w * h\n",
        test_shapes="""
        from shapes import area

        def test_area(ldd):
            ldd.observe("lat", float(area(2, 3)), predicted=6.0)
        """,
    )
    result = same_with_ldd(pytester, "--cov=shapes", "--cov-report=term", *workers)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*coverage: *", "shapes.py * 100%*"])
    assert recorded(pytester) == [("test_area", 6.0)]


@SERIAL_AND_XDIST
def test_pytest_mock(pytester: pytest.Pytester, workers: list[str]) -> None:
    pytester.makepyprojecttoml(METRIC)
    pytester.makepyfile(
        test_mocked="""
        import os
        from pytest_ldd import Observation

        def test_yields_under_a_mock(mocker):
            mocker.patch("os.getcwd", return_value="/nowhere")
            spy = mocker.spy(os.path, "join")
            assert os.getcwd() == "/nowhere"
            os.path.join("a", "b")
            yield Observation("lat", float(spy.call_count), predicted=1.0)
        """
    )
    result = same_with_ldd(pytester, "-W", "error", *workers)
    assert result.ret == 0, result.stdout.str()
    assert recorded(pytester) == [("test_yields_under_a_mock", 1.0)]


def test_syrupy(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(METRIC)
    pytester.makepyfile(
        test_snap="""
        def test_snapshot(ldd, snapshot):
            result = {"answer": 42}
            ldd.observe("lat", 42.0, predicted=40.0)
            assert result == snapshot
        """
    )
    assert run(pytester, "--snapshot-update").ret == 0
    result = same_with_ldd(pytester, "-W", "error")
    assert result.ret == 0, result.stdout.str()
    assert recorded(pytester) == [("test_snapshot", 42.0)]
    # A snapshot that no longer matches fails the same way with --ldd.
    snap = next((pytester.path / "__snapshots__").iterdir())
    snap.write_text(snap.read_text().replace("42", "43"))
    result = same_with_ldd(pytester)
    assert result.ret == 1


def test_pytest_benchmark(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # pytest-benchmark turns itself off inside an xdist worker (this suite's own -n 2
    # run): the project here runs no workers.
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makepyprojecttoml(METRIC)
    pytester.makepyfile(
        test_bench="""
        def test_sorting(benchmark, ldd):
            benchmark(sorted, list(range(100, 0, -1)))
            # The benchmark's own figure becomes the metric's observation.
            ldd.observe("lat", benchmark.stats.stats.mean * 1000, predicted=0.01)
        """
    )
    result = same_with_ldd(pytester, "--benchmark-min-rounds=3", "--benchmark-max-time=0.05")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*benchmark: 1 tests*", "*test_sorting*"])
    ((test, value),) = recorded(pytester)
    assert test == "test_sorting"
    assert value > 0


# -- pytest-randomly and every --dist of pytest-xdist --------------------------------------

DECLARED_LATE = """
import pytest
from pytest_ldd import Observation

def test_refers_first(ldd):
    ldd.observe("score", 0.5, predicted=0.5)

@pytest.mark.parametrize("case", range(4))
def test_more(case):
    yield Observation("score", case / 10, predicted=case / 10)

@pytest.mark.metric("score", kind="bounded", description="share of checks passed")
def test_declares_last():
    yield Observation("score", 0.9, predicted=0.9)
"""

EXPECTED = [
    ("test_declares_last", 0.9),
    ("test_more[0]", 0.0),
    ("test_more[1]", 0.1),
    ("test_more[2]", 0.2),
    ("test_more[3]", 0.3),
    ("test_refers_first", 0.5),
]


@SERIAL_AND_XDIST
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_pytest_randomly(pytester: pytest.Pytester, seed: int, workers: list[str]) -> None:
    pytester.makepyfile(test_shuffled=DECLARED_LATE)
    args = ["-p", "randomly", f"--randomly-seed={seed}", *workers]
    result = same_with_ldd(pytester, "-W", "error", *args)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines([f"Using --randomly-seed={seed}"])
    assert recorded(pytester) == EXPECTED
    assert counts(pytester)["tests"] == 6


@pytest.mark.parametrize("dist", ["load", "loadscope", "loadfile", "loadgroup", "worksteal"])
def test_every_xdist_distribution(pytester: pytest.Pytester, dist: str) -> None:
    pytester.makepyfile(test_shuffled=DECLARED_LATE)
    result = same_with_ldd(pytester, "-W", "error", "-n", "2", f"--dist={dist}")
    assert result.ret == 0, result.stdout.str()
    assert recorded(pytester) == EXPECTED
    assert counts(pytester)["tests"] == 6


def test_xdist_each_runs_every_test_on_every_worker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_shuffled=DECLARED_LATE)
    result = same_with_ldd(pytester, "-W", "error", "-n", "2", "--dist=each")
    assert result.ret == 0, result.stdout.str()
    # Each worker ran each test: each value twice, each test counted twice.
    assert recorded(pytester) == sorted(EXPECTED * 2)
    assert counts(pytester)["tests"] == 12


# -- pytest-django -------------------------------------------------------------------------

DJANGO_SETTINGS = """
SECRET_KEY = "tests-only"
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth"]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
USE_TZ = True
"""


@SERIAL_AND_XDIST
def test_pytest_django_configured(pytester: pytest.Pytester, workers: list[str]) -> None:
    pytester.makepyprojecttoml(
        METRIC
        + '[tool.pytest.ini_options]\nDJANGO_SETTINGS_MODULE = "djsettings"\npythonpath = ["."]\n'
    )
    pytester.makepyfile(
        djsettings=DJANGO_SETTINGS,
        test_db="""
        import pytest
        from django.contrib.auth.models import User

        @pytest.mark.django_db
        def test_users(ldd):
            User.objects.create(username="ada")
            ldd.observe("lat", float(User.objects.count()), predicted=1.0)

        def test_without_the_database(ldd, settings):
            settings.USE_TZ = False
            ldd.observe("lat", 2.0, predicted=2.0)

        def test_refused_database():
            with pytest.raises(RuntimeError, match="Database access not allowed"):
                User.objects.count()
        """,
    )
    result = same_with_ldd(pytester, *workers, isolated=True)
    assert result.ret == 0, result.stdout.str()
    assert recorded(pytester) == [("test_users", 1.0), ("test_without_the_database", 2.0)]
    assert counts(pytester)["tests"] == 3


def test_pytest_django_unconfigured_does_nothing(pytester: pytest.Pytester) -> None:
    # No settings: pytest-django stays out of the way, with or without --ldd.
    pytester.makepyprojecttoml(METRIC)
    pytester.makepyfile(test_plain="def test_x(ldd):\n    ldd.observe('lat', 1.0)\n")
    result = same_with_ldd(pytester, "-W", "error", isolated=True)
    assert result.ret == 0, result.stdout.str()
    figures = counts(pytester)
    assert (figures["tests"], figures["observations"], figures["pairs"]) == (1, 1, 0)
    assert not (Path(pytester.path) / "db.sqlite3").exists()
