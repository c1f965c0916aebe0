"""Tests of the ``ldd`` command: every verb and exit code, as a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from pytest_ldd import MetricRegistry, TraceStore, bounded_rate, cli, positive_count, weighted_sum


def ldd(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``python -m pytest_ldd ARGS`` in ``cwd``."""
    return subprocess.run(
        [sys.executable, "-m", "pytest_ldd", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def make_project(folder: Path, *, composite: bool = False) -> Path:
    """A project with two registered metrics (and a composite of them if asked)."""
    registry = MetricRegistry(TraceStore(folder))
    accuracy = bounded_rate(
        "accuracy", description="Share of answers that match the reference answer."
    )
    latency = positive_count(
        "latency_ms",
        description="Time to first byte of the search endpoint.",
        unit="ms",
        normalize_scale=1000.0,
    )
    registry.register(accuracy)
    registry.register(latency)
    if composite:
        registry.register(
            weighted_sum(
                "quality",
                [(accuracy, 2.0), (latency, 1.0)],
                description=(
                    "Accuracy and latency of the search endpoint, combined into one number."
                ),
            )
        )
    return folder


def calibrate(folder: Path, predicted: str, observed: str, name: str = "accuracy") -> str:
    result = ldd(
        "metric",
        "calibrate",
        "--name",
        name,
        "--predicted",
        predicted,
        "--observed",
        observed,
        cwd=folder,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result.stdout


def assert_one_line_error(result: subprocess.CompletedProcess[str], code: int) -> str:
    __tracebackhide__ = True
    assert result.returncode == code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("ldd: ")
    return lines[0]


# -- help, version, usage ------------------------------------------------------------------


@pytest.mark.parametrize(
    "verb",
    [
        [],
        ["metric"],
        ["metric", "list"],
        ["metric", "status"],
        ["metric", "show"],
        ["metric", "calibrate"],
        ["metric", "verify"],
        ["report"],
    ],
)
def test_every_verb_has_help_written_in_sentences(tmp_path: Path, verb: list[str]) -> None:
    result = ldd(*verb, "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: ldd {' '.join(verb)}".rstrip())
    # A description sentence, not only the option list.
    assert ". " in result.stdout or ".\n" in result.stdout
    if verb[-1:] and verb[-1] in ("list", "status", "show", "calibrate", "verify", "report"):
        assert "--project DIR" in result.stdout
        assert "--ldd-dir DIR" in result.stdout


def test_version(tmp_path: Path) -> None:
    result = ldd("--version", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.startswith("ldd (pytest-ldd) ")
    assert result.stdout.strip().split()[-1][0].isdigit()


#: What ``ldd metric status`` must not import: each costs start-up time it never uses.
NOT_FOR_STATUS = (
    "importlib.metadata",  # only --version asks for the installed version
    "tempfile",  # writers replace files; status writes nothing
    "hashlib",  # it loads OpenSSL; the log positions' digest is _blake2's
    "shutil",  # argparse's way to the terminal's width, with its compression modules
    "pytest",
    "pytest_ldd.agents",
    "pytest_ldd.calibration.calibrator",
    "pytest_ldd.plugin",
    "pytest_ldd.report.html",
    "pytest_ldd.report.history",
    "pytest_ldd.report.svg",
    "pytest_ldd.store.files.appender",
    "pytest_ldd.store.files.excerpt",
    "pytest_ldd.store.postgres",
    "tomllib",  # a project without a pyproject.toml
)


def test_status_imports_only_what_it_needs(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    (project / "pyproject.toml").unlink(missing_ok=True)
    code = (
        "import sys; from pytest_ldd.cli import main; "
        f"code = main(['metric', 'status', '--project', {str(project)!r}]); "
        "print(' '.join(sorted(sys.modules))); sys.exit(code)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    loaded = set(result.stdout.splitlines()[-1].split())
    assert "pytest_ldd.calibration.registry" in loaded  # it did read the store
    assert sorted(loaded.intersection(NOT_FOR_STATUS)) == []


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["metric"],
        ["metric", "frobnicate"],
        ["metric", "show"],
        ["metric", "calibrate", "--name", "accuracy", "--predicted", "abc", "--observed", "1"],
        ["metric", "calibrate", "--name", "accuracy"],
        ["metric", "status", "--no-such-option"],
    ],
)
def test_bad_arguments_exit_2(tmp_path: Path, args: list[str]) -> None:
    result = ldd(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert "usage: ldd" in result.stderr
    assert "Traceback" not in result.stderr


def test_report_without_an_output_is_a_usage_error(tmp_path: Path) -> None:
    line = assert_one_line_error(ldd("report", cwd=tmp_path), 2)
    assert line == "ldd: report needs --json FILE, --html FILE or both"


def test_missing_project_folder_is_a_usage_error(tmp_path: Path) -> None:
    line = assert_one_line_error(ldd("metric", "list", "--project", "nope", cwd=tmp_path), 2)
    assert "--project must be an existing folder" in line


def test_bad_config_is_a_usage_error_of_one_line(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.ldd]\nno_such_key = 1\n")
    line = assert_one_line_error(ldd("metric", "status", cwd=tmp_path), 2)
    assert "no_such_key" in line


# -- list and status -----------------------------------------------------------------------


@pytest.mark.parametrize("verb", ["list", "status"])
def test_without_a_store_nothing_is_registered_and_nothing_created(
    tmp_path: Path, verb: str
) -> None:
    result = ldd("metric", verb, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"no metrics registered in {tmp_path / '.ldd'}\n"
    assert not (tmp_path / ".ldd").exists()


def test_list(tmp_path: Path) -> None:
    make_project(tmp_path, composite=True)
    result = ldd("metric", "list", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "metric      kind      unit  v  state              description",
        "accuracy    bounded   rate  1  insufficient_data  Share of answers that match the "
        "reference answer.",
        "latency_ms  positive  ms    1  insufficient_data  Time to first byte of the search "
        "endpoint.",
        "quality     bounded   rate  1  insufficient_data  Accuracy and latency of the search "
        "endpoint, combined...",
    ]


def test_status_table_and_json(tmp_path: Path) -> None:
    make_project(tmp_path)
    calibrate(tmp_path, "0.5", "0.6")
    result = ldd("metric", "status", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "metric      v  state              n    MAE    p95  worst  window  gate",
        "accuracy    1  insufficient_data  1  0.100  0.100  0.100   0.100  n>=5 MAE<=0.15",
        "latency_ms  1  insufficient_data  0      -      -      -       -  n>=5 MAE<=0.15",
    ]
    doc = json.loads(ldd("metric", "status", "--json", cwd=tmp_path).stdout)
    assert doc["gate"] == {
        "min_n": 5,
        "max_mae": 0.15,
        "max_p95": None,
        "max_worst": None,
        "window": 10,
    }
    assert doc["ldd_dir"] == str(tmp_path / ".ldd")
    assert [m["name"] for m in doc["metrics"]] == ["accuracy", "latency_ms"]
    first = doc["metrics"][0]
    assert set(first) == {
        "name",
        "version",
        "state",
        "is_load_bearing",
        "n",
        "mae",
        "window_mae",
        "p95_error",
        "worst_error",
        "promoted_at",
        "demoted_at",
        "gate",
    }
    assert first["n"] == 1
    assert first["mae"] == pytest.approx(0.1)
    assert doc["metrics"][1]["mae"] is None


def test_status_json_without_a_store(tmp_path: Path) -> None:
    result = ldd("metric", "status", "--json", cwd=tmp_path)
    assert result.returncode == 0
    assert json.loads(result.stdout)["metrics"] == []


def test_gates_come_from_tool_ldd(tmp_path: Path) -> None:
    make_project(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        "[tool.ldd.calibration]\nmin_n = 3\nmax_mae = 0.2\n\n"
        "[tool.ldd.metrics.latency_ms.calibration]\nmin_n = 2\n"
    )
    status = ldd("metric", "status", cwd=tmp_path).stdout.splitlines()
    assert status[1].endswith("n>=3 MAE<=0.2")
    # A metric's own table overrides the keys it sets; the rest are the project's.
    assert status[2].endswith("n>=2 MAE<=0.2")
    for _ in range(2):
        calibrate(tmp_path, "0.5", "0.6")
    assert calibrate(tmp_path, "0.5", "0.6") == (
        "promoted 'accuracy' to load_bearing (n=3, MAE=0.100 <= 0.2)\n"
    )


def test_config_dir_and_ldd_dir_option(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    make_project(project / "metrics-store-parent")  # holds .ldd/ below it
    (project / "pyproject.toml").write_text('[tool.ldd]\ndir = "metrics-store-parent/.ldd"\n')
    listed = ldd("metric", "list", "--project", "project", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert len(listed.stdout.splitlines()) == 3
    # --ldd-dir wins over [tool.ldd] dir, relative to the current folder.
    other = ldd("metric", "list", "--project", "project", "--ldd-dir", "elsewhere", cwd=tmp_path)
    assert other.stdout == f"no metrics registered in {tmp_path / 'elsewhere'}\n"


# -- show ----------------------------------------------------------------------------------


def test_show(tmp_path: Path) -> None:
    make_project(tmp_path, composite=True)
    result = ldd("metric", "show", "latency_ms", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["name:", "latency_ms"]
    facts = {line.split(":", 1)[0]: line.split(":", 1)[1].strip() for line in lines}
    assert facts["kind"] == "positive"
    assert facts["unit"] == "ms"
    assert facts["normalize_scale"] == "1000"
    assert facts["state"] == "insufficient_data (advisory: gates only warn)"
    assert facts["MAE"] == "-"
    assert facts["gate"] == "n>=5 MAE<=0.15"
    quality = ldd("metric", "show", "quality", cwd=tmp_path).stdout
    assert "weighted_sum" in quality
    assert "accuracy x 2, latency_ms x 1" in quality
    assert facts["last session"] == "-"


def test_show_names_the_last_session_with_its_date_and_commit(tmp_path: Path) -> None:
    make_project(tmp_path)
    store = TraceStore(tmp_path)
    rows = [
        {
            "session_id": "a",
            "started_at": "2026-12-01T08:00:00Z",
            "commit": "1a2b3c4",
            "metrics": [{"name": "latency_ms"}],
        },
        {
            "session_id": "b",
            "started_at": "2026-12-02T09:30:00Z",
            "commit": "5d6e7f8+dirty",
            "metrics": [{"name": "accuracy"}],
        },
        {"session_id": "c", "started_at": "2026-12-03T10:00:00Z", "metrics": []},
    ]
    store.append_sessions(rows)
    store.close()

    def last(name: str) -> str:
        out = ldd("metric", "show", name, cwd=tmp_path).stdout.splitlines()
        return next(line for line in out if line.startswith("last session:")).split(":", 1)[1]

    assert last("latency_ms").strip() == "Session 1 · 2026-12-01 08:00 UTC · 1a2b3c4"
    assert last("accuracy").strip() == "Session 2 · 2026-12-02 09:30 UTC · 5d6e7f8+dirty"


@pytest.mark.parametrize(
    "args",
    [
        ["metric", "show", "nope"],
        ["metric", "calibrate", "--name", "nope", "--predicted", "0.1", "--observed", "0.2"],
    ],
)
def test_unknown_metric_exits_1_naming_the_known_ones(tmp_path: Path, args: list[str]) -> None:
    make_project(tmp_path)
    line = assert_one_line_error(ldd(*args, cwd=tmp_path), 1)
    assert line == "ldd: unknown metric 'nope' (known: accuracy, latency_ms)"


def test_unknown_metric_without_a_store(tmp_path: Path) -> None:
    line = assert_one_line_error(ldd("metric", "show", "x", cwd=tmp_path), 1)
    assert line == f"ldd: unknown metric 'x' (known: none registered in {tmp_path / '.ldd'})"
    assert not (tmp_path / ".ldd").exists()


# -- calibrate -----------------------------------------------------------------------------


def test_calibrate_promotes_after_five_good_pairs(tmp_path: Path) -> None:
    make_project(tmp_path)
    for n in range(1, 5):
        assert calibrate(tmp_path, "0.8", "0.84") == (
            f"logged 'accuracy': predicted 0.800, observed 0.840 (normalized); n={n}, "
            "MAE=0.040, state insufficient_data (needs n >= 5)\n"
        )
    assert calibrate(tmp_path, "0.8", "0.84") == (
        "promoted 'accuracy' to load_bearing (n=5, MAE=0.040 <= 0.15)\n"
    )
    assert calibrate(tmp_path, "0.8", "0.84").endswith("state load_bearing\n")
    status = ldd("metric", "status", "--json", cwd=tmp_path)
    accuracy = json.loads(status.stdout)["metrics"][0]
    assert accuracy["state"] == "load_bearing"
    assert accuracy["n"] == 6
    assert accuracy["promoted_at"] is not None


def test_calibrate_normalizes_raw_values_and_reports_drift(tmp_path: Path) -> None:
    make_project(tmp_path)
    out = calibrate(tmp_path, "200", "700", name="latency_ms")
    assert out.startswith("logged 'latency_ms': predicted 0.200, observed 0.700 (normalized)")
    for _ in range(4):
        out = calibrate(tmp_path, "200", "700", name="latency_ms")
    assert out.endswith("n=5, MAE=0.500, state drifting (MAE must be <= 0.15)\n")


def test_calibrate_with_an_invalid_value_is_a_usage_error(tmp_path: Path) -> None:
    make_project(tmp_path)
    line = assert_one_line_error(
        ldd(
            "metric",
            "calibrate",
            "--name",
            "accuracy",
            "--predicted",
            "0.5",
            "--observed",
            "1.5",
            cwd=tmp_path,
        ),
        2,
    )
    assert "1.5" in line
    assert not (tmp_path / ".ldd" / "metric_calibrations.jsonl").exists()


# -- verify --------------------------------------------------------------------------------


def test_verify_ok_and_after_tampering(tmp_path: Path) -> None:
    make_project(tmp_path)
    empty = ldd("metric", "verify", cwd=tmp_path)
    assert (empty.returncode, empty.stdout) == (0, "ok: 2 metrics verified\n")
    for observed in ("0.5", "0.6", "0.7"):
        calibrate(tmp_path, "0.55", observed)
    ok = ldd("metric", "verify", cwd=tmp_path)
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "ok: 2 metrics verified\n", "")

    path = tmp_path / ".ldd" / "metrics.json"
    doc = json.loads(path.read_text())
    (entry,) = [p for p in doc["promotions"] if p["metric_name"] == "accuracy"]
    entry["calibration"]["sum_abs_error"] += 0.3
    path.write_text(json.dumps(doc))
    # A sum the histogram cannot hold: refused on read, naming the field.
    corrupt = ldd("metric", "verify", cwd=tmp_path)
    assert corrupt.returncode == 1
    assert "'sum_abs_error'" in corrupt.stderr
    assert "Traceback" not in corrupt.stderr
    entry["calibration"]["sum_abs_error"] -= 0.3
    entry["n_calibration_samples"] -= 1  # a state that claims fewer pairs
    entry["state"] = "load_bearing"
    entry["is_load_bearing"] = True
    path.write_text(json.dumps(doc))
    bad = ldd("metric", "verify", cwd=tmp_path)
    assert bad.returncode == 1
    assert bad.stdout == ""
    lines = bad.stderr.splitlines()
    assert lines[-1].startswith("ldd: verify failed: ")
    mismatches = lines[:-1]
    assert mismatches
    assert all(line.startswith("mismatch: ") and "'accuracy'" in line for line in mismatches)
    assert any("n_calibration_samples" in line for line in mismatches)


def test_verify_without_a_store(tmp_path: Path) -> None:
    result = ldd("metric", "verify", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "ok: 0 metrics verified\n")
    assert not (tmp_path / ".ldd").exists()


# -- a corrupt store -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["metric", "list"],
        ["metric", "status"],
        ["metric", "show", "accuracy"],
        ["metric", "verify"],
        ["metric", "calibrate", "--name", "accuracy", "--predicted", "0.1", "--observed", "0.2"],
        ["report", "--json", "r.json"],
    ],
)
def test_corrupt_metrics_json_is_one_line_and_left_alone(tmp_path: Path, args: list[str]) -> None:
    make_project(tmp_path)
    path = tmp_path / ".ldd" / "metrics.json"
    path.write_text('{"schema_version": 1, "specs": [')
    line = assert_one_line_error(ldd(*args, cwd=tmp_path), 1)
    assert "metrics.json" in line
    assert path.read_text() == '{"schema_version": 1, "specs": ['


def test_torn_log_line_is_a_one_line_warning(tmp_path: Path) -> None:
    make_project(tmp_path)
    calibrate(tmp_path, "0.5", "0.5")
    log = tmp_path / ".ldd" / "metric_calibrations.jsonl"
    with log.open("a") as handle:
        handle.write('{"metric_name": "accuracy", "metric_ver')
    result = ldd("report", "--json", "r.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (warning,) = result.stderr.splitlines()
    assert warning.startswith("ldd: warning: ")
    assert "metric_calibrations.jsonl" in warning


# -- report --------------------------------------------------------------------------------


class SvgCounter(HTMLParser):
    """Counts ``<svg>`` elements and ``ldd-point`` circles."""

    def __init__(self) -> None:
        super().__init__()
        self.svgs: list[str] = []
        self.points = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag == "svg":
            self.svgs.append(" ".join(classes))
        if tag == "circle" and "ldd-point" in classes:
            self.points += 1


def test_report_json_and_html(tmp_path: Path) -> None:
    make_project(tmp_path)
    for observed in ("0.5", "0.6", "0.7"):
        calibrate(tmp_path, "0.55", observed)
    result = ldd("report", "--json", "out/r.json", "--html", "out/r.html", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "wrote JSON report to out/r.json",
        "wrote HTML report to out/r.html",
    ]
    doc: dict[str, Any] = json.loads((tmp_path / "out" / "r.json").read_text())
    assert list(doc) == [
        "schema_version",
        "generated_at",
        "ldd_dir",
        "session",
        "metrics",
        "history",
    ]
    assert doc["session"] is None
    assert [m["name"] for m in doc["metrics"]] == ["accuracy", "latency_ms"]
    assert [p["observed"] for p in doc["history"]["calibrations"]["accuracy"]] == [0.5, 0.6, 0.7]
    assert doc["history"]["calibrations"]["latency_ms"] == []
    assert doc["history"]["sessions"] == []
    page = SvgCounter()
    page.feed((tmp_path / "out" / "r.html").read_text())
    assert page.svgs == [
        "ldd-plot ldd-timeline",
        "ldd-plot ldd-calibration",
        "ldd-plot ldd-mae",
        "ldd-plot ldd-timeline",
        "ldd-plot ldd-calibration",
        "ldd-plot ldd-mae",
    ]
    # Pairs logged by `ldd metric calibrate`: a point each in the timeline (no
    # observation line of their own), the scatter and the MAE curve.
    assert page.points == 3 + 3 + 3


def test_report_html_only_on_an_empty_project(tmp_path: Path) -> None:
    result = ldd("report", "--html", "r.html", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "no metrics registered" in (tmp_path / "r.html").read_text()
    assert not (tmp_path / ".ldd").exists()


# -- in-process: main() returns codes; demo slot; internal errors ----------------------------


def test_main_returns_exit_codes_instead_of_exiting(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--help"]) == 0
    assert cli.main(["metric", "nope"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_demo_missing_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # None in sys.modules makes the import fail as if the package were not installed.
    monkeypatch.setitem(sys.modules, "pytest_ldd.demo", None)
    assert cli.main(["demo"]) == 1
    err = capsys.readouterr().err
    assert (
        err == "ldd: the demo is not available in this installation (pytest_ldd.demo is missing)\n"
    )
    assert cli.main(["demo", "--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: ldd demo")


def test_demo_runs_the_demo_main_with_the_remaining_arguments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[list[str]] = []
    fake = types.ModuleType("pytest_ldd.demo")

    def main(argv: list[str]) -> int:
        seen.append(list(argv))
        return 3

    fake.main = main  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pytest_ldd.demo", fake)
    assert cli.main(["demo", "--runs", "2", "--keep"]) == 3
    assert seen == [["--runs", "2", "--keep"]]


def test_unexpected_exception_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def boom(args: object) -> int:
        raise RuntimeError("boom")

    monkeypatch.setattr(cli, "_cmd_list", boom)
    assert cli.main(["metric", "list", "--project", str(tmp_path)]) == 1
    assert capsys.readouterr().err == "ldd: internal error: RuntimeError: boom\n"


def test_a_closed_pipe_is_not_an_internal_error(tmp_path: Path) -> None:
    # The reader is gone before the command writes: like `ldd metric list | head -c 0`.
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_ldd", "metric", "list", "--project", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    proc.stdout.close()
    _, err = proc.communicate(timeout=60)
    assert b"internal error" not in err
    assert b"Traceback" not in err


@pytest.mark.parametrize(("columns", "widest"), [("50", 48), ("120", 118), ("abc", 78)])
def test_help_wraps_to_the_terminal_width_that_columns_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, columns: str, widest: int
) -> None:
    # Not a terminal here: $COLUMNS, else 80 (an invalid $COLUMNS counts as unset).
    monkeypatch.setenv("COLUMNS", columns)
    result = ldd("metric", "status", "--help", cwd=tmp_path)
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert max(map(len, lines)) <= widest
    assert max(map(len, lines)) > widest - 12  # it filled the width, not a default
