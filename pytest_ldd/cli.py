"""The ``ldd`` command (also ``python -m pytest_ldd``).

``ldd metric list|status|show|calibrate|verify``, ``ldd report`` and ``ldd demo``.
Exit codes: 0 ok; 1 a failed check, an unknown metric or an unreadable store; 2 a
usage error (bad arguments, bad ``[tool.ldd]`` configuration, an invalid value).
Errors are one line on stderr, never a traceback.

The command starts fast: each verb imports what it needs inside its function, and
the installed version (``importlib.metadata``, a third of a bare start) is looked up
only for ``--version`` (``docs/performance.md``).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO, final

from pytest_ldd.errors import InvalidObservationError, InvalidSpecError, LddError
from pytest_ldd.report.terminal import printable

if TYPE_CHECKING:
    from pytest_ldd.calibration.registry import MetricRegistry
    from pytest_ldd.config import LddConfig
    from pytest_ldd.model.statistics import CalibrationGate
    from pytest_ldd.store import Store

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "build_parser", "main"]

EXIT_OK = 0
#: A failed check (verify mismatch), an unknown metric or an unreadable store.
EXIT_FAILED = 1
#: Bad arguments, bad configuration or an invalid value: the command was misused.
EXIT_USAGE = 2

#: Descriptions longer than this are cut in ``ldd metric list``.
DESCRIPTION_WIDTH = 60


class UsageError(LddError):
    """The command line names something that cannot work (exit code 2)."""


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def _say(text: str, stream: TextIO | None = None) -> None:
    # Units and descriptions come from the store: never let them steer the terminal.
    print(printable(text, newlines=True), file=stream if stream is not None else sys.stdout)


def _err(text: str) -> None:
    from pytest_ldd.store.location import masked

    # Every error and warning line: secrets masked, control characters escaped.
    print(f"ldd: {printable(masked(_one_line(text)))}", file=sys.stderr)


# -- opening the project ---------------------------------------------------------------


@final
class Project:
    """The configuration, store and registry one command works on."""

    __slots__ = ("config", "folded", "registry", "store")

    def __init__(self, config: LddConfig, store: Store, registry: MetricRegistry) -> None:
        self.config = config
        self.store = store
        self.registry = registry
        #: Pairs logged past each metric's stored state, counted in what is shown.
        self.folded: dict[str, int] = {}

    def note_folded(self) -> None:
        """Say which figures count pairs the stored states do not (yet)."""
        if self.folded:
            counts = ", ".join(f"{name} +{n}" for name, n in self.folded.items())
            _say(
                f"note: pairs logged after the last update are counted ({counts}); "
                f"the stored states take them at the next update (a recording session)"
            )

    def gate(self, name: str) -> CalibrationGate:
        """The calibration gate that decides ``name``'s state."""
        return self.registry.gate_for(name)

    def require(self, name: str) -> None:
        """Raise :class:`UnknownMetricError` listing the known names if ``name`` is not one."""
        from pytest_ldd.errors import UnknownMetricError

        names = sorted(self.registry.names())
        if name not in names:
            known = ", ".join(names) if names else f"none registered in {self.store.location}"
            msg = f"unknown metric {name!r} (known: {known})"
            raise UnknownMetricError(msg, name=name)


def _open(args: argparse.Namespace, *, read_only: bool = True, fold: bool = True) -> Project:
    """Read ``[tool.ldd]``, open the store and the registry the way the plugin does.

    A read-only command shows every pair in the log: with ``fold`` the pairs logged
    after the last update are counted and the states evaluated on them, in memory
    (only the log's tail is read; see :meth:`Calibrator.fold`).
    """
    from pytest_ldd.config import load_config

    project = Path(args.project).absolute()
    if not project.is_dir():
        msg = f"--project must be an existing folder (got {str(project)!r})"
        raise UsageError(msg)
    config = load_config(project)
    # A command-line path is taken from the current folder, like any other.
    ldd_dir = None if args.ldd_dir is None else Path(args.ldd_dir).absolute()
    store = config.open_store(option=args.store, ldd_dir=ldd_dir)
    try:
        registry = config.open_registry(store, read_only=read_only)
    except InvalidSpecError as exc:
        raise UsageError(str(exc)) from exc
    opened = Project(config, store, registry)
    if read_only and fold and registry.behind_log():
        from pytest_ldd.calibration.calibrator import Calibrator

        opened.folded = Calibrator(registry).fold()
    return opened


def _registered(project: Project) -> list[str]:
    """The registered names, or ``[]`` after saying so when there are none."""
    names = project.registry.names()
    if not names:
        _say(f"no metrics registered in {project.store.location}")
    return names


# -- verbs -----------------------------------------------------------------------------


def _cmd_list(args: argparse.Namespace) -> int:
    from pytest_ldd.report.text import format_table

    project = _open(args)
    names = _registered(project)
    if not names:
        return EXIT_OK
    rows = []
    for name in names:
        spec = project.registry.spec(name)
        state = project.registry.state(name)
        description = _one_line(spec.description)
        if len(description) > DESCRIPTION_WIDTH:
            cut = description[: DESCRIPTION_WIDTH - 2]
            description = (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip(" ,;:") + "..."
        cells = [name, spec.kind, spec.unit, str(spec.version), state.state, description]
        rows.append([printable(cell) for cell in cells])
    headers = ["metric", "kind", "unit", "v", "state", "description"]
    for line in format_table(headers, rows, ["<", "<", "<", ">", "<", "<"]):
        _say(line)
    return EXIT_OK


def _cmd_status(args: argparse.Namespace) -> int:
    from pytest_ldd.report.document import REPORT_SCHEMA_VERSION, gate_json, state_json
    from pytest_ldd.report.text import status_table

    project = _open(args)
    names = project.registry.names()
    states = [state_json(project.registry.state(n), project.gate(n)) for n in names]
    if args.json:
        import json

        doc = {
            "schema_version": REPORT_SCHEMA_VERSION,
            "ldd_dir": project.store.location,
            "gate": gate_json(project.config.calibration),
            "metrics": states,
        }
        _say(json.dumps(doc, indent=2, allow_nan=False))
        return EXIT_OK
    if not names:
        _say(f"no metrics registered in {project.store.location}")
        return EXIT_OK
    for line in status_table(states):
        _say(line)
    project.note_folded()
    return EXIT_OK


def _cmd_show(args: argparse.Namespace) -> int:
    from pytest_ldd.report.text import fmt_error, fmt_value, gate_text

    project = _open(args)
    project.require(args.name)
    spec = project.registry.spec(args.name)
    state = project.registry.state(args.name)
    gate = project.gate(args.name)
    components = (
        ", ".join(f"{c} x {fmt_value(w)}" for c, w in spec.components) if spec.components else "-"
    )
    pairs: list[tuple[str, str]] = [
        ("name", spec.name),
        ("kind", spec.kind),
        ("unit", spec.unit),
        ("version", str(spec.version)),
        ("description", _one_line(spec.description)),
        ("normalize_scale", fmt_value(spec.normalize_scale)),
        ("composition", spec.composition or "-"),
        ("components", components),
        (
            "state",
            state.state
            + (
                " (its gates fail tests)"
                if state.is_load_bearing
                else " (advisory: gates only warn)"
            ),
        ),
        ("n", str(state.n)),
        ("MAE", fmt_error(state.mae)),
        ("p95 error", fmt_error(state.p95_error)),
        ("worst error", fmt_error(state.worst_error)),
        (f"window MAE (last {gate.window})", fmt_error(state.window_mae)),
        (
            "gate",
            gate_text(
                {
                    "min_n": gate.min_n,
                    "max_mae": gate.max_mae,
                    "max_p95": gate.max_p95,
                    "max_worst": gate.max_worst,
                }
            ),
        ),
        ("promoted_at", state.promoted_at or "-"),
        ("demoted_at", state.demoted_at or "-"),
        ("last session", _last_session(project, args.name)),
    ]
    width = max(len(key) for key, _ in pairs)
    for key, value in pairs:
        _say(f"{(key + ':').ljust(width + 1)}  {printable(value)}")
    return EXIT_OK


def _last_session(project: Project, name: str) -> str:
    """``Session 7 · 2026-12-01 19:46 UTC · 1a2b3c4`` of the last session touching ``name``."""
    from pytest_ldd.report.text import session_name

    store = project.registry.store
    sessions, _ = store.read_log("sessions")
    for number in range(len(sessions), 0, -1):
        item = sessions[number - 1]
        if any(isinstance(m, dict) and m.get("name") == name for m in item.get("metrics") or ()):
            return session_name(number, item)
    return "-"


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from pytest_ldd.calibration.calibrator import Calibrator
    from pytest_ldd.report.text import fmt_error, fmt_value

    project = _open(args, read_only=False)
    project.require(args.name)
    gate = project.gate(args.name)
    before = project.registry.state(args.name)
    calibrator = Calibrator(project.registry)
    record = calibrator.log(args.name, args.predicted, args.observed)
    try:
        calibrator.try_promote(args.name)
    except LddError as exc:
        # The pair is in the log: say so apart from what failed, so nobody logs it twice.
        _say(
            f"logged {args.name!r}: predicted {record.predicted:.3f}, observed "
            f"{record.observed:.3f} (normalized) to {project.store.location}"
        )
        _err(
            f"the pair was logged (do not log it again), but the state of {args.name!r} "
            f"was not updated: {exc}"
        )
        return EXIT_FAILED
    after = project.registry.state(args.name)
    if after.is_load_bearing and not before.is_load_bearing:
        _say(
            f"promoted {args.name!r} to load_bearing "
            f"(n={after.n}, MAE={fmt_error(after.mae)} <= {fmt_value(gate.max_mae)})"
        )
        return EXIT_OK
    hint = ""
    if after.state == "insufficient_data":
        hint = f" (needs n >= {gate.min_n})"
    elif after.state == "drifting":
        hint = f" (MAE must be <= {fmt_value(gate.max_mae)})"
    elif after.state != before.state:
        hint = f" (was {before.state})"
    _say(
        f"logged {args.name!r}: predicted {record.predicted:.3f}, observed "
        f"{record.observed:.3f} (normalized); n={after.n}, MAE={fmt_error(after.mae)}, "
        f"state {after.state}{hint}"
    )
    return EXIT_OK


def _cmd_verify(args: argparse.Namespace) -> int:
    from pytest_ldd.calibration.calibrator import Calibrator

    # The stored figures, the log's tail and the whole log, from one read: verify
    # counts the tail itself, and compares what status shows with a full recount.
    project = _open(args, fold=False)
    registry = project.registry
    names = registry.names()
    stored = {name: registry.state(name).n for name in names}
    mismatches = Calibrator(registry).verify() if names else []
    if mismatches:
        for line in mismatches:
            print(f"mismatch: {printable(_one_line(line))}", file=sys.stderr)
        count = len(mismatches)
        _err(f"verify failed: {count} mismatch{'es' if count != 1 else ''}")
        return EXIT_FAILED
    _say(f"ok: {len(names)} metric{'s' if len(names) != 1 else ''} verified")
    project.folded = {
        name: registry.counted(name).n - stored[name]
        for name in names
        if registry.counted(name).n > stored[name]
    }
    project.note_folded()
    return EXIT_OK


def _cmd_report(args: argparse.Namespace) -> int:
    from pytest_ldd.report.document import HTML_LOG_BUDGET, build_report, write_html, write_json

    if args.json_path is None and args.html_path is None:
        msg = "report needs --json FILE, --html FILE or both"
        raise UsageError(msg)
    project = _open(args)
    # The page thins its plots: a long log is read as its tail and an even sample.
    targets = [
        ("JSON", args.json_path, write_json, None),
        ("HTML", args.html_path, write_html, HTML_LOG_BUDGET),
    ]
    for kind, path, write, budget in targets:
        if path is None:
            continue
        doc = build_report(project.registry, budget=budget)
        try:
            written = write(path, doc)
        except OSError as exc:
            msg = f"cannot write the {kind} report to {path}: {exc.strerror or exc}"
            raise LddError(msg) from exc
        _say(f"wrote {kind} report to {written}")
    return EXIT_OK


def _counts(counts: Mapping[str, int]) -> str:
    return (
        f"{counts.get('pairs', 0)} pairs, {counts.get('observations', 0)} observations, "
        f"{counts.get('sessions', 0)} sessions"
    )


def _cmd_store_export(args: argparse.Namespace) -> int:
    from pytest_ldd.calibration.transfer import export_store

    project = _open(args)
    folder = Path(args.to).absolute()
    counts = export_store(project.store, folder, _registry_opener(project))
    _say(f"exported {_counts(counts)} from {project.store.location} to {folder}")
    return EXIT_OK


def _cmd_store_import(args: argparse.Namespace) -> int:
    from pytest_ldd.calibration.transfer import check_store_folder, import_store
    from pytest_ldd.store.files import TraceStore

    folder = Path(args.folder).absolute()
    if not folder.is_dir():
        msg = f"import needs an existing .ldd folder (got {str(folder)!r})"
        raise UsageError(msg)
    check_store_folder(folder, "import source")
    project = _open(args)
    source = TraceStore(folder, ldd_dir=folder)
    counts = import_store(source, project.store, _registry_opener(project))
    _say(f"imported {_counts(counts)} from {folder} into {project.store.location}")
    return EXIT_OK


def _cmd_store_merge(args: argparse.Namespace) -> int:
    from pytest_ldd.calibration.transfer import merge_folders

    project = _open(args)
    inputs = [Path(folder).absolute() for folder in args.folders]
    into = Path(args.into).absolute()
    counts = merge_folders(inputs, into, _registry_opener(project))
    _say(f"merged {len(inputs)} folders into {into}: {_counts(counts)}")
    return EXIT_OK


def _registry_opener(project: Project) -> Callable[[Any], Any]:
    def open_registry(store: Any) -> Any:
        try:
            return project.config.open_registry(store, read_only=False)
        except InvalidSpecError as exc:
            raise UsageError(str(exc)) from exc

    return open_registry


DEMO_HELP = """\
usage: ldd demo [ARGS...]

Run the bundled demonstration project: a small suite whose metrics go from advisory
to load-bearing over a few recorded runs.  Arguments are passed to the demo.
"""


def _cmd_demo(args: argparse.Namespace) -> int:
    import importlib

    rest = list(args.demo_args)
    try:
        module = importlib.import_module("pytest_ldd.demo")
    except ModuleNotFoundError as exc:
        if exc.name != "pytest_ldd.demo":
            raise
        module = None
    if module is None or not callable(getattr(module, "main", None)):
        if rest and rest[0] in ("-h", "--help"):
            _say(DEMO_HELP)
            return EXIT_OK
        _err("the demo is not available in this installation (pytest_ldd.demo is missing)")
        return EXIT_FAILED
    demo_main: Callable[[Sequence[str]], int] = module.main
    try:
        return int(demo_main(rest) or 0)
    except SystemExit as exc:  # the demo's own argparse: --help or a usage error
        return _exit_code(exc)


# -- the parser ------------------------------------------------------------------------


class _Formatter(argparse.HelpFormatter):
    """Wrap descriptions to the terminal, as argparse does by default.

    argparse measures the terminal with :mod:`shutil` (and its compression modules)
    for every argument it adds; ``os`` measures it as well, so a command pays for
    neither.
    """

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        if width is None:
            width = _terminal_columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width)


def _terminal_columns() -> int:
    """``shutil.get_terminal_size().columns``: $COLUMNS, the terminal's, or 80."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("store")
    group.add_argument(
        "--project",
        default=".",
        metavar="DIR",
        help="The project folder: it holds pyproject.toml and the .ldd/ folder "
        "(default: the current folder).",
    )
    group.add_argument(
        "--ldd-dir",
        default=None,
        metavar="DIR",
        help="The .ldd folder itself, overriding [tool.ldd] dir and <project>/.ldd.",
    )
    group.add_argument(
        "--store",
        default=None,
        metavar="URL",
        help="The store: a postgresql:// URL or a folder (above $LDD_STORE and "
        "[tool.ldd] store).",
    )
    return common


def _version() -> str:
    import pytest_ldd

    return f"ldd (pytest-ldd) {pytest_ldd.__version__}"


class _VersionAction(argparse.Action):
    """``--version``: argparse's own action, with the version looked up when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(_version())
        parser.exit()


@final
class _Verb:
    """One verb (or a command without verbs) of ``ldd``: its texts, arguments and handler.

    ``handler`` names the function of this module that runs the verb (looked up when
    the parser is built); ``arguments`` are ``(names, options)`` pairs for
    ``add_argument``; every verb takes the store options (``--project``,
    ``--ldd-dir``, ``--store``) too.
    """

    __slots__ = ("arguments", "description", "handler", "help", "name")

    def __init__(
        self,
        name: str,
        help: str,
        description: str,
        handler: str,
        *arguments: tuple[tuple[str, ...], dict[str, Any]],
    ) -> None:
        self.name = name
        self.help = help
        self.description = description
        self.handler = handler
        self.arguments = arguments

    def add_to(self, parsers: Any, common: argparse.ArgumentParser) -> None:
        """Add this verb's parser to ``parsers`` (a subparsers action)."""
        parser = parsers.add_parser(
            self.name,
            parents=[common],
            help=self.help,
            description=self.description,
            formatter_class=_Formatter,
        )
        for names, options in self.arguments:
            parser.add_argument(*names, **options)
        parser.set_defaults(handler=globals()[self.handler])


_METRIC_VERBS: Final = (
    _Verb(
        "list",
        "List every registered metric with its kind and state.",
        "List every registered metric with its kind, unit, version, state and description.",
        "_cmd_list",
    ),
    _Verb(
        "status",
        "Show each metric's calibration figures and gate.",
        "Show each metric's state, number of calibration pairs, MAE, p95 and worst error, "
        "window MAE and the gate that decides its state.  The figures are the stored "
        "incremental ones and the pairs logged since: only the log's tail is read.",
        "_cmd_status",
        (
            ("--json",),
            {
                "action": "store_true",
                "help": "Print a JSON document (the default gate and one state object per "
                "metric) instead of a table.",
            },
        ),
    ),
    _Verb(
        "show",
        "Show one metric's spec, state and gate.",
        "Show everything known about one metric: its spec, its state and calibration "
        "figures, and its gate.",
        "_cmd_show",
        (("name",), {"metavar": "NAME", "help": "The name of the metric."}),
    ),
    _Verb(
        "calibrate",
        "Log one (predicted, observed) pair and promote the metric if it passes.",
        "Log one calibration pair of raw values (normalized with the metric like any pair), "
        "then promote the metric to load_bearing if its gate now passes.",
        "_cmd_calibrate",
        (("--name",), {"required": True, "metavar": "NAME", "help": "The name of the metric."}),
        (
            ("--predicted",),
            {"required": True, "type": float, "metavar": "F", "help": "The raw predicted value."},
        ),
        (
            ("--observed",),
            {"required": True, "type": float, "metavar": "F", "help": "The raw observed value."},
        ),
    ),
    _Verb(
        "verify",
        "Recompute every metric's statistics from the log and compare.",
        "Recompute every metric's statistics from the whole calibration log and compare "
        "them with the stored incremental figures.  Exits 1 and prints each mismatch on "
        "stderr when they differ.",
        "_cmd_verify",
    ),
)

_REPORT: Final = _Verb(
    "report",
    "Write the JSON and/or HTML report of the project's metrics.",
    "Write the report of every metric's state, calibration history and the corpus "
    "aggregates of past sessions: as JSON (schema in docs/report.md), as a self-contained "
    "HTML page with plots, or both.",
    "_cmd_report",
    (("--json",), {"dest": "json_path", "metavar": "FILE", "help": "Write the JSON report here."}),
    (("--html",), {"dest": "html_path", "metavar": "FILE", "help": "Write the HTML report here."}),
)

_STORE_VERBS: Final = (
    _Verb(
        "export",
        "Write the project's store as a new .ldd folder.",
        "Write every pair, observation and session record of the project's store to a new "
        ".ldd folder, with metrics.json re-derived from them: the file store reads it as "
        "the same history.",
        "_cmd_store_export",
        (("--to",), {"required": True, "metavar": "DIR", "help": "The new (or empty) folder."}),
    ),
    _Verb(
        "import",
        "Add a .ldd folder's history to the project's store (idempotent).",
        "Add the records of a .ldd folder that the project's store does not hold yet, and "
        "the metrics it does not know; then re-derive every state.  Importing the same "
        "folder twice adds nothing.",
        "_cmd_store_import",
        (("folder",), {"metavar": "DIR", "help": "The .ldd folder to import."}),
    ),
    _Verb(
        "merge",
        "Merge several .ldd folders into one.",
        "Write the union of several .ldd folders (e.g. the artifacts of a CI matrix "
        "recorded from the same starting store) to one folder: each line once per copy it "
        "has in the input holding it most often, in an order that does not depend on the "
        "order of the inputs, with every state re-derived.",
        "_cmd_store_merge",
        (("folders",), {"nargs": "+", "metavar": "DIR", "help": "The .ldd folders to merge."}),
        (
            ("--into",),
            {"required": True, "metavar": "DIR", "help": "The result (may be one of the inputs)."},
        ),
    ),
)

#: The verbs of each command that has verbs.
_VERBS: Final = {
    "metric": tuple(verb.name for verb in _METRIC_VERBS),
    "store": tuple(verb.name for verb in _STORE_VERBS),
}


def build_parser(only: tuple[str, str] | None = None) -> argparse.ArgumentParser:
    """The argument parser of the ``ldd`` command.

    ``only`` (a command and its verb) builds that verb's parser alone: for a command
    line known to name it, building every other verb would cost more than running
    ``ldd metric status`` itself.
    """

    def wanted(command: str, verb: str = "") -> bool:
        return only is None or (only[0] == command and (not verb or only[1] == verb))

    common = _common()
    parser = argparse.ArgumentParser(
        prog="ldd",
        formatter_class=_Formatter,
        description="Calibrated metrics: inspect and calibrate the metrics of a project, "
        "verify their statistics and write reports.",
        epilog="Exit codes: 0 ok; 1 a failed check, an unknown metric or an unreadable "
        "store; 2 a usage error.",
    )
    parser.add_argument(
        "--version", action=_VersionAction, help="show program's version number and exit"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    metric = commands.add_parser(
        "metric",
        help="List, inspect, calibrate and verify metrics.",
        description="List, inspect, calibrate and verify the metrics registered in the "
        "project's .ldd/ folder.",
        formatter_class=_Formatter,
    )
    verbs = metric.add_subparsers(dest="verb", metavar="VERB", required=True)
    for verb in _METRIC_VERBS:
        if wanted("metric", verb.name):
            verb.add_to(verbs, common)
    if wanted("report"):
        _REPORT.add_to(commands, common)
    store = commands.add_parser(
        "store",
        help="Export, import and merge calibration histories.",
        description="Move a project's calibration history between stores: export a "
        "database store as a .ldd folder, import one, or merge the .ldd folders of "
        "several CI jobs into one.",
        formatter_class=_Formatter,
    )
    store_verbs = store.add_subparsers(dest="verb", metavar="VERB", required=True)
    for verb in _STORE_VERBS:
        if wanted("store", verb.name):
            verb.add_to(store_verbs, common)
    if wanted("demo"):
        p = commands.add_parser(
            "demo",
            add_help=False,
            help="Run the bundled demonstration project (ldd demo --help for its options).",
            description="Run the bundled demonstration project.",
        )
        p.add_argument("demo_args", nargs=argparse.REMAINDER)
        p.set_defaults(handler=_cmd_demo)
    return parser


class _WarningLines:
    """Shows a warning as one plain line, each text once per command: a command may
    read a log's tail twice (to fold it in, then to report it), and a torn line is one
    fact, said once."""

    __slots__ = ("_said",)

    def __init__(self) -> None:
        self._said: set[str] = set()

    def __call__(
        self,
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        text = str(message)
        if text not in self._said:
            self._said.add(text)
            _err(f"warning: {text}")


def _exit_code(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return EXIT_OK
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return EXIT_FAILED


def _tolerant_output() -> None:
    # A unit like "µs" on an ASCII or Latin-1 terminal: an escape, not a crash.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with suppress(ValueError, OSError):  # a closed or odd stream: leave it
                reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ldd`` command with ``argv`` (default: ``sys.argv[1:]``); return its exit code."""
    _tolerant_output()
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["demo"]:
        # Everything after "demo" belongs to the demo, options included (argparse's
        # REMAINDER would still claim leading "--options" for itself).
        return _guarded(_cmd_demo, argparse.Namespace(demo_args=arguments[1:]))
    parser = build_parser(_named_verb(arguments))
    try:
        args = parser.parse_args(arguments)
    except SystemExit as exc:  # --help, --version (0) and usage errors (2) from argparse
        return _exit_code(exc)
    handler: Callable[[argparse.Namespace], int] = args.handler
    return _guarded(handler, args)


def _named_verb(arguments: Sequence[str]) -> tuple[str, str] | None:
    """``(command, verb)`` when the command line names a known verb (and asks for no
    help or version, which list every command)."""
    if not arguments or any(a in ("-h", "--help", "--version") for a in arguments):
        return None
    command, verb = arguments[0], arguments[1] if len(arguments) > 1 else ""
    if verb in _VERBS.get(command, ()):
        return command, verb
    if command == "report":
        return "report", ""
    return None


def _guarded(handler: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run ``handler``: errors become one line on stderr and an exit code."""
    try:
        with warnings.catch_warnings():
            # A torn log line warns; show it as one plain line, not Python's format.
            warnings.showwarning = _WarningLines()
            return handler(args)
    except (UsageError, InvalidSpecError, InvalidObservationError) as exc:
        _err(str(exc))
        return EXIT_USAGE
    except LddError as exc:
        _err(str(exc))
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`ldd metric show x | head -1`): stop quietly, and keep
        # Python from complaining again when it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILED
    except Exception as exc:  # a bug: still one line, never a traceback
        _err(f"internal error: {type(exc).__name__}: {exc}")
        return EXIT_FAILED
