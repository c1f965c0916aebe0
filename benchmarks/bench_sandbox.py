"""Verdict time of the hardened sandbox against a plain ``python -m pytest`` subprocess.

Both arms grade the same honest workspace with the same hidden tests:

- ``sandbox``: ``run_hidden_tests(workspace, hidden)`` -- copying the workspace and the
  hidden tests, planting the canaries, the isolated child under limits, the
  authenticated channel, the cross-checks -- timed from the call to the verdict;
- ``plain``: ``python -m pytest -p no:cacheprovider -q hidden/`` run in the workspace,
  timed from spawn to exit (what a naive harness does, trusting the exit code);
- ``plain_no_autoload``: the same with ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``.  The
  sandbox turns plugin autoload off, which saves the start-up of every installed
  plugin; this arm shows what the hardening itself costs (informational, no target).

Repetitions are interleaved in rotated rounds (A B C, B C A, ...) after a warm-up
round, and each arm is summarized by its median.  Target: ``sandbox / plain <= 1.25``.

``run(quick)`` returns the figures (the benchmark suite's ``run.py`` imports it);
``python benchmarks/bench_sandbox.py [--quick]`` prints them as JSON.  ``--isolation``
and ``--confinement`` print the figures of :func:`run_isolation` and
:func:`run_confinement` instead, ``--real-suites [--suite=NAME ...]`` those of
:func:`run_real_suites` (the shipped real libraries graded by their own suites, the
probes' cost per comparison, twins per test); ``--merge`` also writes the last two
into ``results.json`` as a run of their own.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Arm, child_env, interleave, pytest_command, run_child

from pytest_ldd.sandbox import run_hidden_tests

TARGET_RATIO = 1.25
FILES = 3
TESTS_PER_FILE = 20

_MODULE = '''"""A small honest solution: arithmetic and text helpers."""


def add(a, b):
    return a + b


def mul(a, b):
    return a * b


def clamp(x, low, high):
    return max(low, min(high, x))


def words(text):
    return text.split()
'''


def _hidden_file(index: int) -> str:
    cases = ", ".join(f"({i}, {i + index})" for i in range(TESTS_PER_FILE - 4))
    return f"""import pytest

from solution import add, clamp, mul, words


@pytest.mark.parametrize(("a", "b"), [{cases}])
def test_add_commutes(a, b):
    assert add(a, b) == add(b, a)


def test_mul_{index}():
    assert mul({index + 2}, 3) == {3 * (index + 2)}


def test_clamp_{index}():
    assert clamp({index + 50}, 0, 10) == 10


def test_words_{index}():
    assert words("a b  c") == ["a", "b", "c"]


class TestMore{index}:
    def test_zero(self):
        assert mul(0, {index}) == 0
"""


def _write_task(root: Path) -> tuple[Path, Path]:
    workspace = root / "workspace"
    (workspace / "solution").mkdir(parents=True)
    (workspace / "solution" / "__init__.py").write_text(_MODULE, encoding="utf-8")
    (workspace / "README.md").write_text("An honest solution.\n", encoding="utf-8")
    hidden = root / "hidden"
    hidden.mkdir()
    for index in range(FILES):
        (hidden / f"test_task_{index}.py").write_text(_hidden_file(index), encoding="utf-8")
    return workspace, hidden


def run(quick: bool) -> dict[str, Any]:
    """Measure both arms and return the figures, with the ratio as a target."""
    repetitions = 5 if quick else 15
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp:
        workspace, hidden = _write_task(Path(tmp))
        plain = pytest_command("-q", str(hidden))

        def sandbox_arm() -> float:
            start = time.perf_counter()
            verdict = run_hidden_tests(workspace, hidden)
            elapsed = time.perf_counter() - start
            if not verdict.passed:
                msg = f"the honest workspace must pass: {verdict.reason}"
                raise RuntimeError(msg)
            return elapsed

        def plain_arm() -> float:
            return run_child(plain, cwd=workspace).check(0).wall_s

        no_autoload = child_env({"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})

        def no_autoload_arm() -> float:
            return run_child(plain, cwd=workspace, env=no_autoload).check(0).wall_s

        arms = [
            Arm("sandbox", sandbox_arm),
            Arm("plain", plain_arm),
            Arm("plain_no_autoload", no_autoload_arm),
        ]
        comparison = interleave(arms, repetitions)
    ratio = comparison.ratio("sandbox", "plain")
    tests = FILES * TESTS_PER_FILE
    return {
        "what": "verdict time: run_hidden_tests vs a plain python -m pytest subprocess",
        "tests": tests,
        "repetitions": repetitions,
        "sandbox_median_s": comparison.median("sandbox"),
        "plain_median_s": comparison.median("plain"),
        "plain_no_autoload_median_s": comparison.median("plain_no_autoload"),
        "ratio": ratio,
        "ratio_vs_no_autoload": comparison.ratio("sandbox", "plain_no_autoload"),
        "arms": comparison.to_json("s"),
        "targets": [
            {
                "name": "verdict_time_ratio",
                "value": ratio,
                "limit": TARGET_RATIO,
                "unit": "x",
                "what": f"median sandbox / median plain pytest, {tests} hidden tests",
            }
        ],
    }


# --------------------------------------------------------------- isolation="process"

ISOLATION_TARGET_RATIO = 1.5
ROUND_TRIP_TARGET_US = 100.0
CALLS = 200
_DEMO = Path(__file__).resolve().parent.parent / "pytest_ldd" / "demo" / "project"

_CALLS_TEST = f"""import json
import os
import time

from solution import add


def test_{CALLS}_calls():
    times = []
    for i in range({CALLS}):
        start = time.perf_counter()
        result = add(i, 1)
        times.append(time.perf_counter() - start)
        assert result == i + 1
    with open(os.environ["LDD_BENCH_TIMES"], "w", encoding="utf-8") as handle:
        json.dump(times, handle)
"""


def _demo_workspaces(root: Path) -> list[tuple[Path, Path]]:
    """The demo's tasks, each with its correct draft written into a workspace."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_bench_demo_agent", _DEMO / "demo_agent.py")
    assert spec is not None
    assert spec.loader is not None
    agent = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = agent
    spec.loader.exec_module(agent)
    tasks = []
    for task in agent.TASKS:
        workspace = root / "demo" / task
        workspace.mkdir(parents=True)
        (workspace / f"{task}.py").write_text(agent.DRAFTS[task]["good"], encoding="utf-8")
        tasks.append((workspace, _DEMO / "hidden" / task))
    return tasks


def run_isolation(quick: bool) -> dict[str, Any]:
    """``isolation="process"`` beside ``"inprocess"``: demo verdicts and the round trip.

    - verdict time: grading the demo's four tasks (their correct drafts) one after
      the other, per isolation; target ``process / inprocess <= 1.5``;
    - round trip: a generated hidden test calls a workspace function 200 times and
      times each call in the judge; target: median <= 100 us.
    """
    import statistics

    repetitions = 3 if quick else 9
    with tempfile.TemporaryDirectory(prefix="bench-isolation-") as tmp:
        root = Path(tmp)
        tasks = _demo_workspaces(root)

        def demo_arm(isolation: str) -> Callable[[], float]:
            def measure() -> float:
                start = time.perf_counter()
                for workspace, hidden in tasks:
                    verdict = run_hidden_tests(workspace, hidden, isolation=isolation)
                    if not verdict.passed:
                        msg = f"the demo's correct draft must pass: {verdict.reason}"
                        raise RuntimeError(msg)
                return time.perf_counter() - start

            return measure

        comparison = interleave(
            [Arm("process", demo_arm("process")), Arm("inprocess", demo_arm("inprocess"))],
            repetitions,
        )
        workspace, _ = _write_task(root / "calls")
        hidden = root / "calls" / "hidden_calls"
        hidden.mkdir()
        (hidden / "test_calls.py").write_text(_CALLS_TEST, encoding="utf-8")
        out = root / "times.json"
        round_trips: list[float] = []
        for _ in range(repetitions):
            verdict = run_hidden_tests(
                workspace, hidden, isolation="process", env={"LDD_BENCH_TIMES": str(out)}
            )
            if not verdict.passed:
                msg = f"the {CALLS}-call hidden test must pass: {verdict.reason}"
                raise RuntimeError(msg)
            round_trips += json.loads(out.read_text(encoding="utf-8"))
    ratio = comparison.ratio("process", "inprocess")
    median_us = statistics.median(round_trips) * 1e6
    return {
        "what": "isolation='process' vs 'inprocess': demo verdict time, per-call round trip",
        "repetitions": repetitions,
        "demo_tasks": len(tasks),
        "demo_process_median_s": comparison.median("process"),
        "demo_inprocess_median_s": comparison.median("inprocess"),
        "ratio": ratio,
        "round_trip_median_us": median_us,
        "round_trip_p90_us": statistics.quantiles(round_trips, n=10)[-1] * 1e6,
        "round_trips": len(round_trips),
        "arms": comparison.to_json("s"),
        "targets": [
            {
                "name": "process_isolation_verdict_ratio",
                "value": ratio,
                "limit": ISOLATION_TARGET_RATIO,
                "unit": "x",
                "what": f"median process / inprocess verdict time, the demo's {len(tasks)} tasks",
            },
            {
                "name": "process_isolation_round_trip_us",
                "value": median_us,
                "limit": ROUND_TRIP_TARGET_US,
                "unit": "us",
                "what": f"median round trip of a workspace call, a {CALLS}-call hidden test",
            },
        ],
    }


# ------------------------------------------------------------------- confinement

CONFINEMENT_TARGET_RATIO = 1.05

# Times confine() alone in a fresh child, with the policy of an in-process run.
_APPLY = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
import confinement
policy = json.loads(sys.argv[2])
start = time.perf_counter()
report = confinement.confine(policy)
print(json.dumps({"s": time.perf_counter() - start, "report": report}))
"""


def _apply_cost(root: Path, repetitions: int) -> dict[str, Any]:
    """What planning and applying the allow-list costs the child, in milliseconds."""
    import statistics
    import subprocess

    from pytest_ldd._sandbox import confinement

    for name in ("ws", "home", "tmp", "suite", "runner", "hidden"):
        (root / "apply" / name).mkdir(parents=True, exist_ok=True)
    folder = root / "apply"
    policy = {
        "mode": "landlock",
        "write": [str(folder / n) for n in ("ws", "home", "tmp")],
        "read": [str(folder / n) for n in ("suite", "runner")],
        "deny": [str(folder / "hidden")],
    }
    module = str(Path(confinement.__file__).parent)
    times, report = [], {}
    for _ in range(repetitions):
        done = subprocess.run(
            [sys.executable, "-I", "-c", _APPLY, module, json.dumps(policy)],
            capture_output=True,
            text=True,
            check=True,
        )
        found = json.loads(done.stdout)
        times.append(found["s"] * 1e3)
        report = found["report"]
    return {"median_ms": statistics.median(times), "samples_ms": times, "report": report}


def _children_cpu_s() -> float:
    """CPU time (user + system) of the children waited for so far: the test processes."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_confinement(quick: bool) -> dict[str, Any]:
    """Confined against unconfined verdicts of the demo's tasks, in both isolations.

    Each arm grades the demo's four tasks (their correct drafts) one after the other:
    ``landlock`` with the default (``confinement="auto"``, Landlock where the kernel
    has it), ``none`` with ``confinement="none"``, in the default isolation
    (``"inprocess"``); ``process_landlock`` and ``process_none`` the same with
    ``isolation="process"`` (informational).  Target: ``landlock / none <= 1.05``,
    on wall time; the CPU time of the test processes (less sensitive to other load on
    the machine) is recorded beside it, and so is what ``confine()`` itself takes in
    a fresh child.
    """
    repetitions = 3 if quick else 9
    with tempfile.TemporaryDirectory(prefix="bench-confinement-") as tmp:
        root = Path(tmp)
        tasks = _demo_workspaces(root)

        def arm(
            isolation: str, confinement: str
        ) -> Callable[[], tuple[float, dict[str, float]]]:
            def measure() -> tuple[float, dict[str, float]]:
                cpu = _children_cpu_s()
                start = time.perf_counter()
                for workspace, hidden in tasks:
                    verdict = run_hidden_tests(
                        workspace, hidden, isolation=isolation, confinement=confinement
                    )
                    if not verdict.passed:
                        msg = f"the demo's correct draft must pass: {verdict.reason}"
                        raise RuntimeError(msg)
                wall = time.perf_counter() - start
                return wall, {"cpu_s": _children_cpu_s() - cpu}

            return measure

        comparison = interleave(
            [
                Arm("landlock", arm("inprocess", "auto")),
                Arm("none", arm("inprocess", "none")),
                Arm("process_landlock", arm("process", "auto")),
                Arm("process_none", arm("process", "none")),
            ],
            repetitions,
        )
        apply = _apply_cost(root, repetitions)
    ratio = comparison.ratio("landlock", "none")
    return {
        "what": "confinement='auto' (Landlock) vs 'none': demo verdict time, both isolations",
        "cpu_ratio": comparison.ratio("landlock", "none", "cpu_s"),
        "repetitions": repetitions,
        "demo_tasks": len(tasks),
        "confined_median_s": comparison.median("landlock"),
        "unconfined_median_s": comparison.median("none"),
        "ratio": ratio,
        "process_ratio": comparison.ratio("process_landlock", "process_none"),
        "apply_median_ms": apply["median_ms"],
        "apply": apply,
        "arms": comparison.to_json("s"),
        "targets": [
            {
                "name": "confinement_verdict_ratio",
                "value": ratio,
                "limit": CONFINEMENT_TARGET_RATIO,
                "unit": "x",
                "what": (
                    f"median confined / unconfined verdict time, the demo's {len(tasks)}"
                    " tasks, in-process"
                ),
            }
        ],
    }


# ------------------------------------------------- real suites, probes, twins per test

REAL_SUITE_TARGET_RATIO = 1.25
REAL_SUITE_FLOOR_RATIO = 1.5
_SUITES_DIR = Path(__file__).resolve().parent.parent / "tests" / "data" / "suites"
REAL_SUITES = (
    "iniconfig", "pluggy", "boltons", "attrs", "more_itertools",
    "six", "cachetools", "exceptiongroup", "semver",
)  # fmt: skip
# The suites process isolation grades as plain pytest does, or inconclusively
# (tests/sandbox/test_real_suites_process.py): each gets a third arm, process / inprocess.
PROCESS_SUITES = ("iniconfig", "pluggy")
PROCESS_TARGET_RATIO = 2.0
PROBE_CALLS = 20_000


def _stage_real_suite(name: str, root: Path) -> tuple[Path, Path]:
    import shutil

    ignore = shutil.ignore_patterns("__pycache__", ".pytest_cache", ".hypothesis")
    workspace, hidden = root / name / "workspace", root / name / "hidden"
    shutil.copytree(_SUITES_DIR / name / "workspace", workspace, ignore=ignore)
    shutil.copytree(_SUITES_DIR / name / "hidden", hidden, ignore=ignore)
    return workspace, hidden


def _twins_per_test(hidden: Path, workspace: Path, root: Path) -> dict[str, Any]:
    """How many twins the staging plants for a suite, per hidden test (one draw)."""
    import random

    from pytest_ldd._sandbox.staging import stage_hidden, workspace_modules

    modules = workspace_modules([workspace])
    suite = stage_hidden(hidden, root / "staged", random.Random(0), workspace_modules=modules)
    return {
        "tests": len(suite.expected),
        "twins": len(suite.twins),
        "tests_with_a_twin": len(set(suite.twins.values())),
        "twins_per_test": len(suite.twins) / len(suite.expected) if suite.expected else 0.0,
    }


def run_real_suites(quick: bool, names: tuple[str, ...] = REAL_SUITES) -> dict[str, Any]:
    """Each shipped real suite graded by the hardened verdict against plain pytest.

    Per suite, interleaved: ``verdict`` is ``run_hidden_tests(library, its suite)`` in
    the default isolation (``inprocess``, confined where the kernel has Landlock),
    from the call to the verdict; ``plain`` is ``python -m pytest`` on the same files
    as the library's authors run it (the library on ``PYTHONPATH``, ``-p no:ldd``),
    with plugin autoload off as in the sandbox, spawn to exit; ``process`` (for
    :data:`PROCESS_SUITES`) is the verdict under ``isolation="process"``.  Target:
    ``verdict / plain <= 1.25`` per suite (floor 1.5).  The verdict's outcomes must
    match plain pytest's exit code (a verdict that is tampered or inconclusive on an
    honest suite stops the run).
    """
    repetitions = 2 if quick else 3
    figures: dict[str, Any] = {}
    targets = []
    with tempfile.TemporaryDirectory(prefix="bench-real-suites-") as tmp:
        root = Path(tmp)
        for name in names:
            workspace, hidden = _stage_real_suite(name, root)
            tests = sorted(p.name for p in hidden.iterdir())
            plain_command = pytest_command("-q", "-p", "no:ldd", "--rootdir", str(hidden), *tests)
            # Plugin autoload off, as the sandbox runs hidden tests (and as the real-suite
            # tests' plain baseline does): the plugins installed beside pytest-ldd are no
            # part of a suite's cost, and with them loaded the figure would measure them.
            env = child_env(
                {
                    "PYTHONPATH": str(workspace),
                    "PYTHONDONTWRITEBYTECODE": "1",
                    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
                }
            )

            def verdict_arm(workspace: Path = workspace, hidden: Path = hidden) -> float:
                start = time.perf_counter()
                verdict = run_hidden_tests(workspace, hidden, timeout=900)
                elapsed = time.perf_counter() - start
                if verdict.tampered or verdict.inconclusive:
                    msg = f"an honest real suite must get a plain verdict: {verdict.reason}"
                    raise RuntimeError(msg)
                return elapsed

            def plain_arm(hidden: Path = hidden, command: list[str] = plain_command,
                          env: dict[str, str] = env) -> float:  # fmt: skip
                return run_child(command, cwd=hidden, env=env, timeout=900).check(0, 1).wall_s

            def process_arm(workspace: Path = workspace, hidden: Path = hidden) -> float:
                start = time.perf_counter()
                verdict = run_hidden_tests(workspace, hidden, timeout=900, isolation="process")
                elapsed = time.perf_counter() - start
                if verdict.tampered:
                    msg = f"an honest real suite must never be called tampered: {verdict.reason}"
                    raise RuntimeError(msg)
                return elapsed

            arms = [Arm("verdict", verdict_arm), Arm("plain", plain_arm)]
            if name in PROCESS_SUITES:
                arms.append(Arm("process", process_arm))
            comparison = interleave(arms, repetitions, warmup=0)
            ratio = comparison.ratio("verdict", "plain")
            figures[name] = {
                "verdict_median_s": comparison.median("verdict"),
                "plain_median_s": comparison.median("plain"),
                "ratio": ratio,
                **_twins_per_test(hidden, workspace, root / name),
                "arms": comparison.to_json("s"),
            }
            if name in PROCESS_SUITES:
                process_ratio = comparison.ratio("process", "verdict")
                figures[name]["process_median_s"] = comparison.median("process")
                figures[name]["process_vs_inprocess"] = process_ratio
                targets.append(
                    {
                        "name": f"real_suite_process_ratio_{name}",
                        "value": process_ratio,
                        "limit": PROCESS_TARGET_RATIO,
                        "unit": "x",
                        "what": (
                            f"median verdict in process isolation / in-process, {name}'s own"
                            " suite graded against it"
                        ),
                    }
                )
            targets.append(
                {
                    "name": f"real_suite_ratio_{name}",
                    "value": ratio,
                    "limit": REAL_SUITE_TARGET_RATIO,
                    "unit": "x",
                    "what": (
                        f"median hardened verdict / median plain pytest, {name}'s own suite"
                        f" graded against {name} (floor {REAL_SUITE_FLOOR_RATIO}x)"
                    ),
                }
            )
    return {
        "what": "real libraries graded by their own suites: hardened verdict vs plain pytest",
        "repetitions": repetitions,
        "suites": figures,
        "probes": probe_cost(),
        "targets": targets,
    }


def probe_cost(calls: int = PROBE_CALLS) -> dict[str, Any]:
    """What the hidden tests' comparisons cost through the probes, per comparison.

    ``Comparisons.compare("==", ...)`` (what a rewritten ``assert a == b`` calls)
    against the bare ``==``, for two plain ints (the fast path), two lists of ints
    (searched for workspace values, none found) and a workspace value against an int
    (probed: a fresh opaque object and a look-alike of the int).
    """
    import random

    from pytest_ldd._sandbox.probes import Comparisons, opaque_probe

    class Workspace:
        """A workspace value with an honest equality."""

        def __init__(self, value: int) -> None:
            self.value = value

        def __eq__(self, other: object) -> bool:
            return isinstance(other, int) and other == self.value

        __hash__ = None  # type: ignore[assignment]

    def never(detail: str) -> None:
        raise AssertionError(detail)

    comparisons = Comparisons(
        never,
        workspace_like=lambda value: isinstance(value, Workspace),
        opaque=opaque_probe(),
        rng=random.Random(0),
    )
    cases = {
        "ints": (41, 41),
        "lists": ([1, 2, 3] * 3, [1, 2, 3] * 3),
        "workspace_value": (Workspace(41), 41),
    }
    out: dict[str, Any] = {"calls": calls}
    for case, (left, right) in cases.items():
        start = time.perf_counter()
        for _ in range(calls):
            left == right  # noqa: B015
        bare = (time.perf_counter() - start) / calls
        start = time.perf_counter()
        for _ in range(calls):
            comparisons.compare("==", left, right)
        probed = (time.perf_counter() - start) / calls
        out[case] = {"bare_us": bare * 1e6, "compare_us": probed * 1e6}
    return out


def merge_into_results(key: str, figures: dict[str, Any], command: str) -> None:
    """Put ``figures`` under ``benchmarks.sandbox.<key>`` of results.json, as a run of its own.

    The machine, the commit, the time and the load of this run go with them (under
    ``run``), and their targets replace those of the same name.
    """
    import os

    from _results import RESULTS, Target, machine, versions, write_results

    started_load = [round(x, 2) for x in os.getloadavg()]
    doc = json.loads(RESULTS.read_text(encoding="utf-8"))
    figures["run"] = {
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": versions()["commit"],
        "machine": machine(),
        "load_average_before": figures.pop("load_average_before", started_load),
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "command": command,
        "repetitions": figures["repetitions"],
    }
    doc["benchmarks"]["sandbox"][key] = figures
    names = {f"sandbox.{t['name']}" for t in figures["targets"]}
    doc["targets"] = [t for t in doc["targets"] if t["name"] not in names]
    for item in figures["targets"]:
        doc["targets"].append(
            Target(
                f"sandbox.{item['name']}",
                float(item["value"]),
                float(item["limit"]),
                str(item["unit"]),
                str(item["what"]),
            ).to_json()
        )
    write_results(doc, RESULTS)


if __name__ == "__main__":
    quick = "--quick" in sys.argv[1:]
    if "--isolation" in sys.argv[1:]:
        print(json.dumps(run_isolation(quick), indent=2))
    elif "--real-suites" in sys.argv[1:]:
        import os

        load = [round(x, 2) for x in os.getloadavg()]
        chosen = tuple(a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--suite="))
        suite_figures = run_real_suites(quick, chosen or REAL_SUITES)
        print(json.dumps({k: v for k, v in suite_figures.items() if k != "arms"}, indent=2))
        if "--merge" in sys.argv[1:]:
            suite_figures["load_average_before"] = load
            merge_into_results(
                "real_suites", suite_figures, " ".join(["python", *sys.argv])
            )
    elif "--confinement" in sys.argv[1:]:
        import os

        load = [round(x, 2) for x in os.getloadavg()]
        confinement_figures = run_confinement(quick)
        print(json.dumps(confinement_figures, indent=2))
        if "--merge" in sys.argv[1:]:
            confinement_figures["load_average_before"] = load
            merge_into_results(
                "confinement", confinement_figures, " ".join(["python", *sys.argv])
            )
    else:
        print(json.dumps(run(quick), indent=2))
