"""The pytest-ldd benchmark suite: ``python benchmarks/run.py [--quick]``.

Each benchmark measures pytest-ldd against a baseline measured in the same run,
repeating the arms in interleaved rounds, and reports medians and ratios.  The
figures and the verdict on each target go to ``benchmarks/results.json`` (and
a table to stdout).  See ``benchmarks/README.md`` and ``docs/performance.md``.

Benchmarks (``--only`` takes these names):

- ``overhead``: a generated suite of 2,000 tests recording 5 values each (half
  with predictions): ``pytest --ldd`` against the same suite recording into
  ``record_property``, and into pytest-harvest's ``results_bag``;
- ``overhead_xdist``: the same under ``-n 2``;
- ``history``: ``ldd metric status``, ``Calibrator.try_promote`` and a 10-test
  ``pytest --ldd`` session on stores of 10,000, 100,000 and 1,000,000 pairs;
- ``memory``: peak RSS of a ``--ldd`` session recording 100,000 values against
  the same session without ``--ldd``;
- ``report``: ``ldd report --html`` on stores of 10,000 and 1,000,000 pairs: wall
  time and size of the page at 1M, and the 1M / 10k ratio;
- ``sandbox``: ``benchmarks/bench_sandbox.py``'s own figures, when it exists;
- ``import_cost``: a one-test session that does not use pytest-ldd, with the
  plugin loaded against the same interpreter started the same way with
  ``-p no:ldd``.
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, final

HERE: Final = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from _harness import (  # noqa: E402 - the path above makes the helpers importable
    Arm,
    interleave,
    pytest_command,
    rmtree,
    run_child,
)
from _results import (  # noqa: E402
    RESULTS,
    Target,
    load_average,
    machine,
    versions,
    write_results,
)
from _stores import fill_store  # noqa: E402
from _suites import METRICS, Flavour, metric_tables, write_suite  # noqa: E402

__all__ = [
    "BENCHMARKS",
    "RESULTS",
    "Settings",
    "Target",
    "machine",
    "main",
    "run_benchmarks",
    "table",
    "versions",
    "write_results",
]

SCHEMA_VERSION: Final = 1
MB: Final = 1_000_000

#: Targets, named as in docs/performance.md.  Changing a limit here is changing
#: the promise the project makes; do not loosen one to make a run pass.
LIMIT_OVERHEAD_VS_RECORD_PROPERTY: Final = 1.15
#: What the recording overhead aims at (the limit above is the floor it must keep).
GOAL_OVERHEAD_VS_RECORD_PROPERTY: Final = 1.05
LIMIT_OVERHEAD_VS_HARVEST: Final = 1.0
LIMIT_HISTORY_RATIO: Final = 1.2
LIMIT_STATUS_1M_S: Final = 0.06
#: ``ldd metric status`` on 1M pairs against a bare ``python -c pass`` of the same
#: interpreter (about 20 ms here): 60 ms is three of them.
LIMIT_STATUS_VS_BARE: Final = 3.0
LIMIT_MEMORY_MB: Final = 50.0
LIMIT_REPORT_1M_S: Final = 3.0
LIMIT_REPORT_1M_MB: Final = 2.0
LIMIT_IMPORT_MS: Final = 5.0

#: Plugin selection per flavour: each arm loads only its own recording plugin.
_PLUGINS: Final[dict[Flavour, tuple[str, ...]]] = {
    "ldd": ("-p", "no:harvest"),
    "record_property": ("-p", "no:ldd", "-p", "no:harvest"),
    "harvest": ("-p", "no:ldd"),
}


@final
@dataclass(frozen=True, slots=True)
class Settings:
    """How big and how often: ``--quick`` shrinks repetitions, never the targets."""

    quick: bool
    workdir: Path
    reps: int
    log: Callable[[str], None]
    #: Store sizes of the history benchmark.
    history_sizes: tuple[int, ...] = (10_000, 100_000, 1_000_000)
    overhead_tests: int = 2000
    memory_values: int = 100_000
    #: Discarded rounds before the measured ones (suites are byte-compiled beforehand).
    warmup: int = 1

    @classmethod
    def make(cls, *, quick: bool, workdir: Path, reps: int | None, verbose: bool) -> Settings:
        """Settings for a full or a quick run (``reps`` overrides the default count)."""

        def log(text: str) -> None:
            if verbose or not text.startswith("    "):
                print(text, file=sys.stderr, flush=True)

        if quick:
            # Only the two sizes the targets compare; no discarded rounds.
            return cls(
                quick=True,
                workdir=workdir,
                reps=reps or 3,
                log=log,
                history_sizes=(10_000, 1_000_000),
                warmup=0,
            )
        return cls(quick=False, workdir=workdir, reps=reps or 7, log=log)


@dataclass(slots=True)
class Outcome:
    """What one benchmark returns: its figures and its targets."""

    figures: dict[str, Any] = field(default_factory=dict)
    targets: list[Target] = field(default_factory=list)


# ----------------------------------------------------------------------------- overhead


def _timed(command: Sequence[str], cwd: Path) -> tuple[float, dict[str, float]]:
    """Wall time of a child, with its CPU time as a secondary figure."""
    run = run_child(command, cwd=cwd).check()
    return run.wall_s, {"cpu_s": run.cpu_s}


def bench_overhead(settings: Settings, *, xdist: bool) -> Outcome:
    """``pytest --ldd`` against record_property and pytest-harvest on the same suite."""
    label = "overhead_xdist" if xdist else "overhead"
    root = settings.workdir / label
    extra = ("-n", "2") if xdist else ()
    suites = _overhead_suites(settings)
    store = root / "ldd-store"
    template = root / "ldd-store-template"

    def command(flavour: Flavour, *args: str) -> list[str]:
        return pytest_command("-q", *_PLUGINS[flavour], *extra, *args)

    # The store pytest-ldd starts each timed run from: one earlier session of the
    # same suite (the state a project is in from its second run on).
    rmtree(template)
    run_child(command("ldd", "--ldd", f"--ldd-dir={template}"), cwd=suites["ldd"]).check()

    def fresh_store() -> None:
        rmtree(store)
        shutil.copytree(template, store)

    arms = [
        Arm(
            "record_property",
            lambda: _timed(command("record_property"), suites["record_property"]),
        ),
        Arm("harvest", lambda: _timed(command("harvest"), suites["harvest"])),
        Arm(
            "ldd",
            lambda: _timed(command("ldd", "--ldd", f"--ldd-dir={store}"), suites["ldd"]),
            prepare=fresh_store,
        ),
    ]
    if not settings.quick and not xdist:
        # Informational: the fixture used but nothing recorded (no --ldd); and the
        # baseline suite with pytest-ldd merely installed (what every session of a
        # project that adopts it pays, --ldd or not).
        arms.append(
            Arm(
                "ldd_not_recording",
                lambda: _timed(command("ldd", f"--ldd-dir={store}"), suites["ldd"]),
                prepare=fresh_store,
            )
        )
        installed = pytest_command("-q", "-p", "no:harvest")
        arms.append(
            Arm(
                "record_property_ldd_installed",
                lambda: _timed(installed, suites["record_property"]),
            )
        )
    settings.log(f"  {label}: {len(arms)} arms x {settings.reps} repetitions")
    result = interleave(arms, settings.reps, warmup=settings.warmup, log=settings.log)
    vs_rp = result.ratio("ldd", "record_property")
    vs_harvest = result.ratio("ldd", "harvest")
    figures: dict[str, Any] = {
        # CPU time is far less sensitive to other load on the machine than wall
        # time; it is reported beside the wall-time targets, never instead.
        "cpu_ratio_vs_record_property": result.ratio("ldd", "record_property", "cpu_s"),
        "cpu_ratio_vs_harvest": result.ratio("ldd", "harvest", "cpu_s"),
        "tests": settings.overhead_tests,
        "values_per_test": 5,
        "pairs_per_session": settings.overhead_tests * 5 // 2,
        "workers": 2 if xdist else 0,
        "arms": result.to_json("s"),
        "ratio_vs_record_property": vs_rp,
        "ratio_vs_harvest": vs_harvest,
    }
    for arm in ("ldd_not_recording", "record_property_ldd_installed"):
        if arm in result.samples:
            figures[f"ratio_{arm}_vs_record_property"] = result.ratio(arm, "record_property")
            figures[f"cpu_ratio_{arm}_vs_record_property"] = result.ratio(
                arm, "record_property", "cpu_s"
            )
    where = " under -n 2" if xdist else ""
    targets = [
        Target(
            f"{label}.vs_record_property",
            vs_rp,
            LIMIT_OVERHEAD_VS_RECORD_PROPERTY,
            "x",
            f"wall time of pytest --ldd / record_property baseline{where}",
        ),
        Target(
            f"{label}.vs_record_property_goal",
            vs_rp,
            GOAL_OVERHEAD_VS_RECORD_PROPERTY,
            "x",
            f"wall time of pytest --ldd / record_property baseline{where}: the goal",
        ),
        Target(
            f"{label}.vs_harvest",
            vs_harvest,
            LIMIT_OVERHEAD_VS_HARVEST,
            "x",
            f"wall time of pytest --ldd / pytest-harvest{where}",
        ),
    ]
    return Outcome(figures, targets)


def _overhead_suites(settings: Settings) -> dict[Flavour, Path]:
    """The three overhead suites, written and byte-compiled once per run."""
    root = settings.workdir / "overhead-suites"
    flavours: tuple[Flavour, ...] = ("record_property", "harvest", "ldd")
    suites = {flavour: root / flavour for flavour in flavours}
    if not root.exists():
        for flavour, folder in suites.items():
            write_suite(folder, flavour, tests=settings.overhead_tests)
            _compile(folder, flavour)
    return suites


def _compile(folder: Path, flavour: Flavour) -> None:
    """Collect a suite once: the rewritten test modules' bytecode is then cached."""
    run_child(pytest_command("-q", "--collect-only", *_PLUGINS[flavour]), cwd=folder).check()


# ----------------------------------------------------------------------------- history


def _session_suite(project: Path) -> None:
    """Ten tests of the overhead suite, written into a pre-filled store's project."""
    write_suite(project / "tests", "ldd", tests=10, modules=1)
    (project / "tests" / "pyproject.toml").unlink()
    (project / "pyproject.toml").write_text(
        "[tool.pytest.ini_options]\ntestpaths = ['tests']\n\n" + metric_tables(),
        encoding="utf-8",
    )


def _try_promote(project: Path) -> float:
    """Open the registry and ``try_promote`` one metric, in this process."""
    from pytest_ldd import Calibrator, MetricRegistry, TraceStore

    started = time.perf_counter()
    registry = MetricRegistry(TraceStore(project))
    promoted = Calibrator(registry).try_promote(METRICS[0])
    elapsed = time.perf_counter() - started
    if not promoted:
        msg = f"try_promote({METRICS[0]!r}) on {project} did not leave it load-bearing"
        raise RuntimeError(msg)
    return elapsed


def _log_fresh_pairs(project: Path, count: int = 5) -> None:
    """A few new pairs since the last evaluation, as ``ldd metric calibrate`` would add."""
    from pytest_ldd import Calibrator, MetricRegistry, TraceStore

    calibrator = Calibrator(MetricRegistry(TraceStore(project)))
    calibrator.log_many(
        [calibrator.make_record(METRICS[0], 0.5, 0.52, session_id=None) for _ in range(count)]
    )


def bench_history(settings: Settings) -> Outcome:
    """The cost of status, try_promote and a short session must not grow with history."""
    root = settings.workdir / "history"
    stores: dict[int, Path] = {}
    generation: dict[str, Any] = {}
    for size in settings.history_sizes:
        project = root / f"store-{size}"
        rmtree(project)
        settings.log(f"  history: generating a store of {size:,} pairs")
        filled = fill_store(project, size, seed=size)
        _session_suite(project)
        stores[size] = project
        generation[str(size)] = {
            "write_s": filled.write_s,
            "catch_up_s": filled.catch_up_s,
            "bytes": filled.bytes_on_disk,
            "observations": filled.observations,
            "sessions": filled.sessions,
        }
    status = pytest_ldd_command("metric", "status")
    session = pytest_command("-q", *_PLUGINS["ldd"], "--ldd")

    def arms(op: str) -> list[Arm]:
        made = []
        if op == "status":
            bare = [sys.executable, "-c", "pass"]
            made.append(Arm("bare", _bind(_timed, bare, stores[max(stores)])))
        for size, project in stores.items():
            if op == "status":
                made.append(Arm(str(size), _bind(_timed, status, project)))
            elif op == "try_promote":
                made.append(
                    Arm(
                        str(size),
                        _bind(_try_promote, project),
                        prepare=_bind(_log_fresh_pairs, project),
                    )
                )
            else:
                made.append(Arm(str(size), _bind(_timed, session, project)))
        return made

    figures: dict[str, Any] = {"generation": generation}
    targets: list[Target] = []
    small, large = str(min(stores)), str(max(stores))
    what = {
        "status": "wall time of `ldd metric status` (a fresh process)",
        "try_promote": "MetricRegistry(store) + Calibrator.try_promote, in process",
        "session": "wall time of a 10-test `pytest --ldd` session",
    }
    for op in ("status", "try_promote", "session"):
        settings.log(f"  history/{op}: {len(stores)} stores x {settings.reps} repetitions")
        result = interleave(arms(op), settings.reps, warmup=settings.warmup, log=settings.log)
        ratio = result.ratio(large, small)
        figures[op] = {"arms": result.to_json("s"), f"ratio_{large}_vs_{small}": ratio}
        targets.append(
            Target(
                f"history.{op}.ratio",
                ratio,
                LIMIT_HISTORY_RATIO,
                "x",
                f"{what[op]}: {int(large):,} pairs / {int(small):,} pairs",
            )
        )
        if op == "status":
            targets.append(
                Target(
                    "history.status.1m_wall",
                    result.median(large),
                    LIMIT_STATUS_1M_S,
                    "s",
                    f"wall time of `ldd metric status` on {int(large):,} pairs",
                )
            )
            targets.append(
                Target(
                    "history.status.vs_bare_python",
                    result.ratio(large, "bare"),
                    LIMIT_STATUS_VS_BARE,
                    "x",
                    f"`ldd metric status` on {int(large):,} pairs / `python -c pass`, "
                    "the same interpreter, wall time",
                )
            )
    return Outcome(figures, targets)


def _bind(func: Callable[..., Any], *args: Any) -> Callable[[], Any]:
    return lambda: func(*args)


def pytest_ldd_command(*args: str) -> list[str]:
    """``python -m pytest_ldd ARGS`` (the ``ldd`` command) with this interpreter."""
    return [sys.executable, "-m", "pytest_ldd", *args]


# ----------------------------------------------------------------------------- memory


def bench_memory(settings: Settings) -> Outcome:
    """Peak RSS of a --ldd session recording 100,000 values, and without --ldd."""
    root = settings.workdir / "memory"
    rmtree(root)
    per_test = 100
    tests = settings.memory_values // per_test
    suite = write_suite(
        root / "suite", "ldd", tests=tests, observations=per_test, modules=10, loop=True
    )
    _compile(suite, "ldd")
    store = root / "store"

    def rss(*args: str) -> float:
        run = run_child(pytest_command("-q", *_PLUGINS["ldd"], *args), cwd=suite).check()
        return float(run.max_rss)

    baseline = write_suite(
        root / "baseline",
        "record_property",
        tests=tests,
        observations=per_test,
        modules=10,
        loop=True,
    )

    _compile(baseline, "record_property")

    def baseline_rss() -> float:
        command = pytest_command("-q", *_PLUGINS["record_property"])
        return float(run_child(command, cwd=baseline).check().max_rss)

    arms = [
        Arm("without_ldd", lambda: rss(f"--ldd-dir={store}")),
        Arm("with_ldd", lambda: rss("--ldd", f"--ldd-dir={store}"), prepare=lambda: rmtree(store)),
        # Informational: the same values through record_property, pytest-ldd not loaded.
        Arm("record_property", baseline_rss),
    ]
    if settings.quick:
        arms.pop()  # the informational baseline waits for a full run
    reps = max(2, settings.reps - 1) if settings.quick else settings.reps
    settings.log(f"  memory: {len(arms)} arms x {reps} repetitions")
    result = interleave(arms, reps, warmup=settings.warmup, log=settings.log)
    delta = (result.median("with_ldd") - result.median("without_ldd")) / MB
    figures: dict[str, Any] = {
        "values": settings.memory_values,
        "tests": tests,
        "arms": result.to_json("bytes"),
        "delta_mb": delta,
    }
    if "record_property" in result.samples:
        figures["delta_vs_record_property_mb"] = (
            result.median("with_ldd") - result.median("record_property")
        ) / MB
    target = Target(
        "memory.delta",
        delta,
        LIMIT_MEMORY_MB,
        "MB",
        f"peak RSS of --ldd minus without --ldd, {settings.memory_values:,} values",
    )
    return Outcome(figures, [target])


# ----------------------------------------------------------------------------- import cost


def _importtime_ms(stderr: str, prefix: str = "pytest_ldd") -> float:
    """The summed self time of the modules under ``prefix`` in ``-X importtime`` output."""
    total_us = 0
    for line in stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        parts = line[len("import time:") :].split("|")
        if len(parts) == 3 and parts[2].strip().startswith(prefix):
            total_us += int(parts[0])
    return total_us / 1000


def bench_import_cost(settings: Settings) -> Outcome:
    """What pytest-ldd costs a session that does not use it: its imports, its hooks."""
    root = settings.workdir / "import_cost"
    rmtree(root)
    root.mkdir(parents=True)
    (root / "test_plain.py").write_text("def test_plain():\n    assert True\n")
    base = ("-q", *_PLUGINS["ldd"])
    arms = [
        Arm("with_ldd", _bind(_timed, pytest_command(*base), root)),
        Arm("without_ldd", _bind(_timed, pytest_command(*base, "-p", "no:ldd"), root)),
    ]
    # Short children: more repetitions, so that the medians mean something.
    reps = settings.reps * 3
    settings.log(f"  import_cost: {len(arms)} arms x {reps} repetitions")
    result = interleave(arms, reps, warmup=max(1, settings.warmup), log=settings.log)
    # A 5 ms budget on a child of about 300 ms: the wall time of such short children
    # swings by tens of ms on a shared machine, their CPU time far less.  The target
    # is judged on CPU medians; the wall figures are recorded beside them.
    cpu_delta_ms = (
        result.median("with_ldd", "cpu_s") - result.median("without_ldd", "cpu_s")
    ) * 1000
    command = [sys.executable, "-X", "importtime", "-m", "pytest", *base]
    traced = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
    figures: dict[str, Any] = {
        "arms": result.to_json("s"),
        "ratio": result.ratio("with_ldd", "without_ldd"),
        "cpu_ratio": result.ratio("with_ldd", "without_ldd", "cpu_s"),
        "wall_delta_ms": (result.median("with_ldd") - result.median("without_ldd")) * 1000,
        "cpu_delta_ms": cpu_delta_ms,
        "importtime_ms": _importtime_ms(traced.stderr),
    }
    target = Target(
        "import_cost.delta",
        cpu_delta_ms,
        LIMIT_IMPORT_MS,
        "ms",
        "a one-test session not using pytest-ldd, loaded minus -p no:ldd (CPU medians)",
    )
    return Outcome(figures, [target])


# ----------------------------------------------------------------------------- sandbox


def bench_sandbox(settings: Settings) -> Outcome:
    """The sandboxed verifier's figures, from benchmarks/bench_sandbox.py when present."""
    if not (HERE / "bench_sandbox.py").exists():
        return Outcome({"skipped": "benchmarks/bench_sandbox.py does not exist yet"})
    module = importlib.import_module("bench_sandbox")
    figures = module.run(settings.quick)
    if not isinstance(figures, dict):
        msg = f"bench_sandbox.run() must return a dict (got {type(figures).__name__})"
        raise TypeError(msg)
    isolation = getattr(module, "run_isolation", None)
    if isolation is not None:  # isolation="process" beside "inprocess"
        figures["isolation"] = isolation(settings.quick)
    confinement = getattr(module, "run_confinement", None)
    if confinement is not None:  # confinement="auto" (Landlock) beside "none"
        figures["confinement"] = confinement(settings.quick)
    targets = []
    parts = [figures, figures.get("isolation", {}), figures.get("confinement", {})]
    for item in [target for part in parts for target in part.get("targets", ())]:
        # bench_sandbox may state its own targets in the same shape as ours.
        if isinstance(item, dict) and {"name", "value", "limit"} <= set(item):
            targets.append(
                Target(
                    f"sandbox.{item['name']}",
                    float(item["value"]),
                    float(item["limit"]),
                    str(item.get("unit", "x")),
                    str(item.get("what", "")),
                )
            )
    return Outcome(figures, targets)


# ----------------------------------------------------------------------------- soak


def bench_soak(settings: Settings) -> Outcome:
    """The crash soak of soak.py (30 sessions; 8 with --quick)."""
    from soak import soak

    sessions = 8 if settings.quick else 30
    workdir = settings.workdir / "soak"
    rmtree(workdir)
    result = soak(workdir, sessions=sessions, log=settings.log)
    figures = result.to_json()
    targets = [
        Target(
            "soak.pairs_lost",
            result.loss_ratio,
            0.0,
            "ratio",
            f"pairs lost / pairs expected over {result.sessions} SIGKILLed sessions",
        ),
        Target(
            "soak.failed_checks",
            float(len(result.failures)),
            0.0,
            "checks",
            "verify, metrics.json, duplicates, lost observations, stray processes",
        ),
    ]
    return Outcome(figures, targets)


# ----------------------------------------------------------------------------- report


def bench_report(settings: Settings) -> Outcome:
    """``ldd report --html`` on 1,000,000 pairs: at most 3 s and 2 MB, down-sampled."""
    root = settings.workdir / "report"
    sizes = (10_000, 1_000_000)
    stores: dict[int, Path] = {}
    generation: dict[str, Any] = {}
    for size in sizes:
        project = root / f"store-{size}"
        rmtree(project)
        settings.log(f"  report: generating a store of {size:,} pairs")
        filled = fill_store(project, size, seed=size)
        stores[size] = project
        generation[str(size)] = {"bytes": filled.bytes_on_disk, "sessions": filled.sessions}
    command = pytest_ldd_command("report", "--html", "report.html")
    arms = [Arm(str(size), _bind(_timed, command, project)) for size, project in stores.items()]
    settings.log(f"  report: {len(arms)} stores x {settings.reps} repetitions")
    result = interleave(arms, settings.reps, warmup=settings.warmup, log=settings.log)
    large, small = str(max(sizes)), str(min(sizes))
    page_bytes = {str(size): (p / "report.html").stat().st_size for size, p in stores.items()}
    figures: dict[str, Any] = {
        "generation": generation,
        "arms": result.to_json("s"),
        "page_bytes": page_bytes,
        f"ratio_{large}_vs_{small}": result.ratio(large, small),
    }
    targets = [
        Target(
            "report.html.1m_wall",
            result.median(large),
            LIMIT_REPORT_1M_S,
            "s",
            f"wall time of `ldd report --html` on {int(large):,} pairs (a fresh process)",
        ),
        Target(
            "report.html.1m_size",
            page_bytes[large] / MB,
            LIMIT_REPORT_1M_MB,
            "MB",
            f"size of the page `ldd report --html` writes for {int(large):,} pairs",
        ),
    ]
    return Outcome(figures, targets)


# ----------------------------------------------------------------------------- driver

BENCHMARKS: Final[dict[str, Callable[[Settings], Outcome]]] = {
    "overhead": lambda s: bench_overhead(s, xdist=False),
    "overhead_xdist": lambda s: bench_overhead(s, xdist=True),
    "history": bench_history,
    "memory": bench_memory,
    "report": bench_report,
    "sandbox": bench_sandbox,
    "soak": bench_soak,
    "import_cost": bench_import_cost,
}


def run_benchmarks(settings: Settings, names: Sequence[str]) -> dict[str, Any]:
    """Run the named benchmarks; return the results document."""
    started = time.perf_counter()
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "quick": settings.quick,
        "repetitions": settings.reps,
        "command": " ".join(["python", "benchmarks/run.py", *sys.argv[1:]]),
        "machine": machine(),
        "versions": versions(),
        "load_average_before": load_average(),
        "benchmarks": {},
        "targets": [],
    }
    for name in names:
        settings.log(f"{name} ...")
        began = time.perf_counter()
        outcome = BENCHMARKS[name](settings)
        outcome.figures["duration_s"] = time.perf_counter() - began
        doc["benchmarks"][name] = outcome.figures
        doc["targets"].extend(t.to_json() for t in outcome.targets)
        for target in outcome.targets:
            verdict = "met" if target.met else "MISSED"
            settings.log(
                f"  {target.name}: {target.value:.3f} {target.unit} "
                f"(limit {target.limit:g}) {verdict}"
            )
    doc["load_average_after"] = load_average()
    doc["duration_s"] = time.perf_counter() - started
    return doc


def table(doc: dict[str, Any]) -> list[str]:
    """The targets of a results document as an aligned text table."""
    rows = [("target", "value", "limit", "verdict")]
    for t in doc["targets"]:
        rows.append(
            (
                t["name"],
                f"{t['value']:.3f} {t['unit']}",
                f"{t['limit']:g} {t['unit']}",
                "met" if t["met"] else "MISSED",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmarks; exit 0 when every target is met, 1 otherwise."""
    parser = argparse.ArgumentParser(
        prog="python benchmarks/run.py", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--quick", action="store_true", help="Fewer repetitions: under two minutes on two cores."
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=sorted(BENCHMARKS),
        help="Run only this benchmark (repeatable).",
    )
    parser.add_argument("--reps", type=int, default=None, help="Repetitions per arm.")
    parser.add_argument(
        "--output", type=Path, default=RESULTS, help=f"Results file (default: {RESULTS})."
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="Folder for generated suites and stores (default: a temporary folder, removed).",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="Log every repetition.")
    args = parser.parse_args(argv)
    names = args.only or list(BENCHMARKS)
    keep = args.workdir is not None
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="ldd-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    settings = Settings.make(
        quick=args.quick, workdir=workdir.resolve(), reps=args.reps, verbose=args.verbose
    )
    try:
        doc = run_benchmarks(settings, names)
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
    write_results(doc, args.output)
    for line in table(doc):
        print(line)
    print(f"\n{len(names)} benchmark(s) in {doc['duration_s']:.0f} s; results in {args.output}")
    return 0 if all(t["met"] for t in doc["targets"]) else 1


if __name__ == "__main__":
    sys.exit(main())
