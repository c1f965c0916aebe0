"""The ``ldd demo`` runner: copy the example project, run its sessions, explain them.

Each session is a real ``python -m pytest --ldd`` in the copied project (a
subprocess, so nothing of this process leaks into it); the session number travels in
``LDD_DEMO_SESSION`` and the scripted agent behaves accordingly.  After each session
the runner reads the session document pytest appended to ``.ldd/sessions.jsonl`` and
prints what changed.  The script is fixed, so the runner also checks that each
session went as scripted and says what did not.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, final

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable

    from pytest_ldd.store import Cursor

__all__ = [
    "DEFAULT_FOLDER",
    "DEFAULT_SESSIONS",
    "GATED_METRIC",
    "MAX_SESSIONS",
    "REGRESSION_SESSION",
    "SESSION_ENV",
    "SessionRun",
    "build_parser",
    "copy_project",
    "main",
    "run_session",
    "session_lines",
    "story_surprises",
    "surprises",
]

#: Where the example project is copied when ``--into`` is not given.
DEFAULT_FOLDER = "ldd-demo"
#: How many sessions the demo runs by default: the whole script.
DEFAULT_SESSIONS = 7
#: Sessions after the scripted seven replay a steady, fixed agent.
MAX_SESSIONS = 10
#: The variable that tells the example project's agent which session this is.
SESSION_ENV = "LDD_DEMO_SESSION"
#: The metric whose gate the script breaches, first while advisory, then load-bearing.
GATED_METRIC = "solve_seconds"
#: The session whose regression breaches the load-bearing gate and fails the run.
REGRESSION_SESSION = 7

EXIT_OK = 0
EXIT_UNEXPECTED = 1
EXIT_USAGE = 2

#: Seconds one session may take before the demo gives up on it.
SESSION_TIMEOUT = 300.0

#: Lines of pytest output shown when a session did not go as scripted.
OUTPUT_TAIL = 40

#: What never belongs in a fresh copy of the example project.
_SKIP = frozenset({"__pycache__", ".pytest_cache", ".ldd", ".mypy_cache", ".ruff_cache"})

_EXPECTED_FAILURE = "gate failed (expected: the metric is now load-bearing)"


def _say(text: str = "", stream: TextIO | None = None) -> None:
    print(text, file=stream if stream is not None else sys.stdout, flush=True)


# -- the command line ------------------------------------------------------------------


def _session_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        msg = f"must be a whole number from 1 to {MAX_SESSIONS} (got {text!r})"
        raise argparse.ArgumentTypeError(msg) from None
    if not 1 <= value <= MAX_SESSIONS:
        msg = f"must be from 1 to {MAX_SESSIONS} (got {value})"
        raise argparse.ArgumentTypeError(msg)
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``ldd demo``."""
    parser = argparse.ArgumentParser(
        prog="ldd demo",
        description=(
            "Copy the bundled example project (a scripted coding agent graded by hidden "
            "tests, a cheap judge, recorded token usage and prices) into a fresh folder "
            "and run its suite with `python -m pytest --ldd` several times, showing how "
            "each metric calibrates: an advisory breach that only warns, a promotion to "
            "load-bearing, then a load-bearing gate that fails the run.  Writes an HTML "
            "report at the end.  No network, no configuration."
        ),
        epilog=(
            "Exit codes: 0 the demo went as scripted (the last session's gate failure "
            "is part of the script); 1 something unexpected happened; 2 usage."
        ),
    )
    parser.add_argument(
        "--into",
        metavar="DIR",
        default=None,
        help=f"Copy the example project into DIR, which must be missing or empty "
        f"(default: ./{DEFAULT_FOLDER}).",
    )
    parser.add_argument(
        "--sessions",
        metavar="N",
        type=_session_count,
        default=DEFAULT_SESSIONS,
        help=f"Run N sessions, 1 to {MAX_SESSIONS} (default: {DEFAULT_SESSIONS}, the whole "
        f"script; the load-bearing gate fails in session {REGRESSION_SESSION}).",
    )
    parser.add_argument(
        "--show-output",
        action="store_true",
        help="Also print each session's full pytest output.",
    )
    return parser


# -- the example project ----------------------------------------------------------------


def _bundled_project() -> Traversable:
    return resources.files("pytest_ldd.demo").joinpath("project")


def _copy_tree(source: Traversable, target: Path) -> int:
    target.mkdir(parents=True, exist_ok=True)
    copied = 0
    for child in sorted(source.iterdir(), key=lambda c: c.name):
        if child.name in _SKIP or child.name.endswith((".pyc", ".pyo")):
            continue
        if child.is_dir():
            copied += _copy_tree(child, target / child.name)
        else:
            (target / child.name).write_bytes(child.read_bytes())
            copied += 1
    return copied


def copy_project(folder: Path) -> int:
    """Copy the bundled example project into ``folder``; return the number of files.

    Works from a wheel, a zip or a source checkout alike (package data is read
    through :mod:`importlib.resources`).
    """
    source = _bundled_project()
    if not source.is_dir():
        msg = f"the bundled example project is missing from this installation ({source})"
        raise FileNotFoundError(msg)
    return _copy_tree(source, folder)


def _refusal(folder: Path) -> str | None:
    """Why the project cannot be copied into ``folder`` (None when it can)."""
    if not folder.exists():
        return None
    if not folder.is_dir():
        return f"{str(folder)!r} exists and is not a folder"
    if any(folder.iterdir()):
        return (
            f"{str(folder)!r} exists and is not empty; the demo copies its example "
            "project into a fresh folder: remove it or choose another with --into DIR"
        )
    return None


# -- one session ------------------------------------------------------------------------


@final
@dataclass(slots=True)
class SessionRun:
    """What one ``pytest --ldd`` session of the demo did."""

    number: int
    returncode: int
    seconds: float
    output: str
    #: The session document pytest appended to ``.ldd/sessions.jsonl`` (None if none).
    document: dict[str, Any] | None
    #: ``(test name, message)`` of every failed or erroring test, from the JUnit XML.
    failures: list[tuple[str, str]] = field(default_factory=list)

    @property
    def advisory_breaches(self) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
        """``(metric row, breach)`` of every breach that only warned."""
        return self._breaches(enforced=False)

    @property
    def gate_failures(self) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
        """``(metric row, breach)`` of every breach that failed its test."""
        return self._breaches(enforced=True)

    def _breaches(self, *, enforced: bool) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
        if self.document is None:
            return []
        return [
            (m, b)
            for m in self.document.get("metrics") or ()
            for b in m.get("breaches") or ()
            if bool(b.get("enforced")) is enforced
        ]

    def state_changes(self) -> list[Mapping[str, Any]]:
        """The state changes this session recorded."""
        if self.document is None:
            return []
        return list(self.document.get("state_changes") or ())


def _child_env(session: int) -> dict[str, str]:
    # The user's PYTEST_ADDOPTS, PYTEST_PLUGINS or PYTEST_DISABLE_PLUGIN_AUTOLOAD (or a
    # surrounding pytest's PYTEST_CURRENT_TEST) must not change the scripted runs.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    # Only pytest-ldd is loaded (see the command), whatever else is installed: another
    # plugin's start-up warnings or options must not change the scripted runs.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env[SESSION_ENV] = str(session)
    return env


def _junit_failures(path: Path) -> list[tuple[str, str]]:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return []
    failures = []
    for case in root.iter("testcase"):
        for child in case:
            if child.tag in ("failure", "error"):
                name = case.get("name") or "?"
                failures.append((name, (child.get("message") or child.tag).strip()))
    return failures


def _new_sessions(project: Path, cursor: Cursor | None) -> tuple[list[dict[str, Any]], Cursor]:
    from pytest_ldd.config import load_config
    from pytest_ldd.store import open_store

    config = load_config(project)
    store = open_store(project, config.ldd_dir)
    return store.read_log("sessions", start=cursor)


def run_session(
    project: Path, number: int, cursor: Cursor | None, scratch: Path
) -> tuple[SessionRun, Cursor]:
    """Run session ``number`` of the script in ``project``; return it and the new cursor."""
    junit = scratch / f"session-{number}.xml"
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "pytest_ldd.plugin",
        "--ldd",
        f"--junitxml={junit}",
    ]
    started = time.perf_counter()
    try:
        done = subprocess.run(
            command,
            cwd=project,
            env=_child_env(number),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=SESSION_TIMEOUT,
            check=False,
        )
        returncode, output = done.returncode, done.stdout
    except subprocess.TimeoutExpired as exc:
        raw = exc.stdout or ""
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        returncode, output = -1, text + f"\n(timed out after {SESSION_TIMEOUT:g} s)"
    seconds = time.perf_counter() - started
    documents, cursor = _new_sessions(project, cursor)
    run = SessionRun(
        number=number,
        returncode=returncode,
        seconds=seconds,
        output=output,
        document=documents[-1] if documents else None,
        failures=_junit_failures(junit),
    )
    return run, cursor


# -- what the script expects -------------------------------------------------------------


def surprises(run: SessionRun) -> list[str]:
    """How ``run`` departed from the script (empty when it went as scripted)."""
    found: list[str] = []
    where = f"session {run.number}"
    if run.document is None:
        found.append(f"{where}: pytest recorded no session in .ldd/sessions.jsonl")
    if run.number == REGRESSION_SESSION:
        if run.returncode != 1:
            found.append(
                f"{where}: pytest exited {run.returncode}, expected 1 (the load-bearing "
                f"{GATED_METRIC} gate failing)"
            )
        if run.document is not None and not any(
            m.get("name") == GATED_METRIC for m, _ in run.gate_failures
        ):
            found.append(f"{where}: no load-bearing gate of {GATED_METRIC} failed")
        gate_text = f"ldd gate failed: {GATED_METRIC}"
        for test, message in run.failures:
            if gate_text not in message:
                found.append(f"{where}: {test} failed for another reason: {message}")
    elif run.returncode != 0:
        found.append(f"{where}: pytest exited {run.returncode}, expected 0 (all tests passed)")
        found += [f"{where}: {test} failed: {message}" for test, message in run.failures]
    return found


def story_surprises(runs: Sequence[SessionRun]) -> list[str]:
    """What the whole run should have shown and did not."""
    found: list[str] = []
    promoted_in = _promotion_session(runs)
    breached_advisory = any(
        m.get("name") == GATED_METRIC for run in runs for m, _ in run.advisory_breaches
    )
    if len(runs) >= 2 and not breached_advisory:
        found.append(f"{GATED_METRIC} never breached its gate while advisory")
    if len(runs) >= REGRESSION_SESSION - 1 and promoted_in is None:
        found.append(f"{GATED_METRIC} was never promoted to load_bearing")
    return found


def _promotion_session(runs: Sequence[SessionRun]) -> int | None:
    for run in runs:
        for change in run.state_changes():
            if change.get("name") == GATED_METRIC and change.get("after") == "load_bearing":
                return run.number
    return None


# -- printing -----------------------------------------------------------------------------


def _outcome(run: SessionRun) -> str:
    if run.returncode == 0:
        advisory = len(run.advisory_breaches)
        if advisory:
            return f"passed, with {advisory} advisory breach{'es' if advisory != 1 else ''}"
        return "passed"
    if run.returncode == 1 and run.gate_failures:
        return _EXPECTED_FAILURE if run.number == REGRESSION_SESSION else "gate failed"
    if run.returncode == -1:
        return "timed out"
    return f"pytest exited {run.returncode}"


def _this_session(row: Mapping[str, Any]) -> str:
    notes = []
    pairs = int(row.get("pairs") or 0)
    if pairs:
        notes.append(f"+{pairs} pair{'s' if pairs != 1 else ''}")
    breaches = row.get("breaches") or ()
    enforced = sum(1 for b in breaches if b.get("enforced"))
    advisory = len(breaches) - enforced
    if advisory:
        notes.append(f"{advisory} advisory breach{'es' if advisory != 1 else ''}")
    if enforced:
        notes.append(f"{enforced} gate failure{'s' if enforced != 1 else ''}")
    before, after = row.get("state_before"), row.get("state_after")
    if before != after and after == "load_bearing":
        notes.append("promoted")
    elif before == "load_bearing" and after != before:
        notes.append("demoted")
    return ", ".join(notes)


def _corpus_line(corpus: Mapping[str, Any]) -> str | None:
    from pytest_ldd.report import fmt_dollars

    success = corpus.get("task_success")
    if not isinstance(success, Mapping) or success.get("n") is None:
        return None
    line = f"tasks solved: {success.get('successes')}/{success.get('n')}"
    interval = success.get("interval")
    if isinstance(interval, Sequence) and len(interval) == 2:
        line += f" (95% CI {interval[0]:.2f}-{interval[1]:.2f})"
    cost = corpus.get("cost_per_success")
    if isinstance(cost, Mapping):
        # null pooled cost means no task succeeded: the cost of a pass is infinite.
        line += f"; cost-of-pass {fmt_dollars(cost.get('pooled'))} per solved task"
    return line


def session_lines(run: SessionRun, total: int) -> list[str]:
    """What the demo prints after one session."""
    from pytest_ldd.report import breach_text, fmt_error, fmt_value, format_table

    lines = [f"session {run.number}/{total}: {_outcome(run)}  ({run.seconds:.1f} s)"]
    doc = run.document
    if doc is None:
        return lines
    rows = [
        [
            str(m.get("name")),
            str(m.get("state_after")),
            str(m.get("n", 0)),
            fmt_error(m.get("mae")),
            _this_session(m),
        ]
        for m in sorted(doc.get("metrics") or (), key=lambda m: str(m.get("name")))
    ]
    if rows:
        lines += format_table(
            ["metric", "state", "n", "MAE", "this session"],
            rows,
            ["<", "<", ">", ">", "<"],
            indent="  ",
        )
    corpus = _corpus_line(doc.get("corpus") or {})
    if corpus:
        lines.append(f"  {corpus}")
    for metric, breach in run.advisory_breaches:
        lines.append(f"  advisory breach: {breach_text(metric, breach)}")
        lines.append(
            f"    -> passed with a warning: {metric.get('name')} is not load-bearing yet "
            f"({metric.get('state_before')})"
        )
    for metric, breach in run.gate_failures:
        lines.append(f"  gate failed: {breach_text(metric, breach)}")
        lines.append(
            f"    -> the test failed: {metric.get('name')} was load-bearing when the "
            "session started"
        )
    rows_by_name = {m.get("name"): m for m in doc.get("metrics") or ()}
    for change in run.state_changes():
        name, after = change.get("name"), change.get("after")
        row = rows_by_name.get(name, {})
        figures = (
            f"n={row.get('n', '?')}, MAE={fmt_error(row.get('mae'))} "
            f"<= {fmt_value(row.get('max_mae'))}"
        )
        if after == "load_bearing":
            lines.append(f"  promoted: {name} is load-bearing ({figures})")
            lines.append("    -> from the next session on, its gates fail tests")
        elif change.get("before") == "load_bearing":
            lines.append(f"  demoted: {name} is {after} ({figures})")
            lines.append("    -> from the next session on, its gates only warn again")
    return lines


def _tail(output: str) -> list[str]:
    lines = output.rstrip().splitlines()
    return lines[-OUTPUT_TAIL:]


def _shown(path: Path) -> str:
    """``path`` relative to the current folder when it is inside it, quoted for a shell."""
    try:
        shown = str(path.relative_to(Path.cwd()))
    except ValueError:
        shown = str(path)
    return shlex.quote(shown)


def _write_report(project: Path, html: Path) -> str | None:
    """Write the HTML report ``ldd report --html`` writes; return an error, or None."""
    from pytest_ldd.config import load_config
    from pytest_ldd.errors import LddError
    from pytest_ldd.report import build_report, write_html
    from pytest_ldd.store import open_store

    try:
        config = load_config(project)
        registry = config.open_registry(open_store(project, config.ldd_dir), read_only=True)
        write_html(html, build_report(registry))
    except (LddError, OSError) as exc:
        return f"the HTML report was not written: {exc}"
    return None


# -- main ---------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ldd demo`` with ``argv`` (the arguments after ``demo``); return the exit code.

    0 when every session went as scripted (the last session's gate failure included),
    1 when something unexpected happened (printed on stderr), 2 for usage errors.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
    except SystemExit as exc:  # --help (0) and argparse usage errors (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE

    folder = Path(args.into if args.into is not None else DEFAULT_FOLDER)
    refusal = _refusal(folder)
    if refusal is not None:
        _say(f"ldd demo: refusing to copy the example project: {refusal}", sys.stderr)
        return EXIT_USAGE
    project = folder.resolve()
    try:
        files = copy_project(project)
    except OSError as exc:
        _say(f"ldd demo: cannot copy the example project into {str(project)!r}: {exc}", sys.stderr)
        return EXIT_UNEXPECTED

    total = args.sessions
    _say(f"ldd demo: copied the example project ({files} files) to {project}")
    _say("  a scripted agent attempts 4 coding tasks per session, graded by sandboxed hidden")
    _say("  tests; a cheap judge predicts each verdict; token usage is priced; time is gated.")
    _say(
        f"running `python -m pytest --ldd` {total} time{'s' if total != 1 else ''} (only the "
        f"pytest-ldd plugin loaded; {SESSION_ENV} tells the agent which session it is)"
    )
    _say()

    runs: list[SessionRun] = []
    cursor: Cursor | None = None
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ldd-demo-") as scratch:
        for number in range(1, total + 1):
            try:
                run, cursor = run_session(project, number, cursor, Path(scratch))
            except Exception as exc:  # a corrupt store or an OS error: say what, stop
                _say(f"ldd demo: session {number} could not run: {exc}", sys.stderr)
                return EXIT_UNEXPECTED
            runs.append(run)
            if args.show_output:
                _say(run.output.rstrip())
            for line in session_lines(run, total):
                _say(line)
            _say()
            found = surprises(run)
            if found:
                _say("ldd demo: something unexpected happened:", sys.stderr)
                for line in found:
                    _say(f"  {line}", sys.stderr)
                if not args.show_output:
                    _say(f"last lines of session {number}'s pytest output:", sys.stderr)
                    for line in _tail(run.output):
                        _say(f"  | {line}", sys.stderr)
                _say(f"the project is in {project}", sys.stderr)
                return EXIT_UNEXPECTED
    elapsed = time.perf_counter() - started

    found = story_surprises(runs)
    html = project / "report.html"
    error = _write_report(project, html)
    if error is not None:
        found.append(error)
    if found:
        _say("ldd demo: something unexpected happened:", sys.stderr)
        for line in found:
            _say(f"  {line}", sys.stderr)
        return EXIT_UNEXPECTED

    _say(f"{total} session{'s' if total != 1 else ''} in {elapsed:.1f} s, as scripted:")
    for line in _story(runs):
        _say(f"  {line}")
    _say()
    where = _shown(project)
    _say(f"HTML report: {html}")
    _say("explore further:")
    _say(f"  ldd metric status --project {where}")
    _say(f"  ldd metric show {GATED_METRIC} --project {where}")
    _say(f"  ldd metric show judge_verdict --project {where}")
    _say(f"  cd {where} && pytest --ldd        # one more session ({SESSION_ENV}=N picks which)")
    return EXIT_OK


def _story(runs: Sequence[SessionRun]) -> list[str]:
    """One line per event of the script that this run showed."""
    from pytest_ldd.report import fmt_error, fmt_value

    lines = []
    for run in runs:
        for metric, breach in run.advisory_breaches:
            lines.append(
                f"session {run.number}: {metric.get('name')} breached its gate "
                f"({breach.get('limit')}) while advisory: the run passed with a warning"
            )
        for change in run.state_changes():
            name, after = change.get("name"), change.get("after")
            if after == "load_bearing":
                lines.append(f"session {run.number}: {name} was promoted to load_bearing")
            elif change.get("before") == "load_bearing":
                lines.append(f"session {run.number}: {name} was demoted to {after}")
        for metric, breach in run.gate_failures:
            lines.append(
                f"session {run.number}: {metric.get('name')} breached its gate "
                f"({breach.get('limit')}) while load-bearing: the run failed"
            )
    last = runs[-1].document if runs else None
    for row in (last or {}).get("metrics") or ():
        state, name = row.get("state_after"), row.get("name")
        if state == "insufficient_data":
            lines.append(
                f"{name} is not calibrated yet (n={row.get('n')} < {row.get('min_n')}): "
                "still advisory"
            )
        elif state != "load_bearing":
            lines.append(
                f"{name} stayed advisory ({state}, MAE={fmt_error(row.get('mae'))} > "
                f"{fmt_value(row.get('max_mae'))}): its predictions miss, so it never fails a run"
            )
    if len(runs) < REGRESSION_SESSION:
        lines.append(
            f"(the regression that fails the load-bearing gate comes in session "
            f"{REGRESSION_SESSION}: run with --sessions {REGRESSION_SESSION})"
        )
    return lines
