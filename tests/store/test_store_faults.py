"""The store under faults and hand edits: every one a correct figure, a recovery
with a warning, or a named error; nothing stored is lost (issue #13)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from calibration_support import log_errors, rate
from plugin_support import PROJECT_ARGS

from pytest_ldd import cli, positive_count
from pytest_ldd.calibration.calibrator import Calibrator
from pytest_ldd.calibration.registry import MetricRegistry
from pytest_ldd.errors import InvalidSpecError, LddWarning, StoreCorruptError
from pytest_ldd.store.files import TraceStore


@pytest.fixture
def store(tmp_path: Path) -> TraceStore:
    return TraceStore(tmp_path)


def calibrated(store: TraceStore, errors: list[float], name: str = "pass_rate") -> Calibrator:
    registry = MetricRegistry(store)
    registry.register(rate(name))
    cal = Calibrator(registry)
    log_errors(cal, name, errors)
    cal.update()
    return cal


def edit(store: TraceStore, change: Callable[[dict[str, Any]], None]) -> None:
    doc = json.loads(store.metrics_path.read_text())
    change(doc)
    store.metrics_path.write_text(json.dumps(doc))


def state(doc: dict[str, Any], name: str = "pass_rate") -> dict[str, Any]:
    (item,) = [p for p in doc["promotions"] if p["metric_name"] == name]
    return item


def calibration(doc: dict[str, Any]) -> dict[str, Any]:
    return state(doc)["calibration"]  # type: ignore[no-any-return]


# -- 1. stored figures are validated on read ------------------------------------------


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        target = state(doc)
        *parents, last = path.split(".")
        for key in parents:
            target = target[key]
        target[last] = value

    return change


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        ("calibration.sum_abs_error", -100, "'sum_abs_error'"),
        ("calibration.sum_abs_error", 0.9, "'sum_abs_error'"),
        ("calibration.sum_abs_error", 1e9, "'sum_abs_error'"),
        ("calibration.sum_abs_error", "0.5", "'sum_abs_error'"),
        ("calibration.sum_abs_error", True, "'sum_abs_error'"),
        ("calibration.worst_error", -0.1, "'worst_error'"),
        ("calibration.worst_error", 0.5, "'worst_error'"),
        ("calibration.worst_error", 2.0, "'worst_error'"),
        ("calibration.worst_error", None, "'worst_error'"),
        ("calibration.n", 6, r"min\(n, recent_keep\)"),
        ("calibration.n", -1, "'n'"),
        ("calibration.n", True, "'n'"),
        ("calibration.n", 5.0, "'n'"),
        ("calibration.recent_errors", [0.1, 0.1, 0.1, 0.1], "'recent_errors'"),
        ("calibration.recent_errors", [0.1, 0.1, 0.1, 0.1, 0.9], "recent error"),
        ("calibration.recent_errors", [0.1, 0.1, 0.1, 0.1, -0.1], "'recent_errors'"),
        ("calibration.recent_keep", 0, "'recent_keep'"),
        ("calibration.version", "1", "'version'"),
        ("last_mae", 0.02, "'last_mae'"),
        ("last_worst_error", 0.0, "'last_worst_error'"),
        ("last_p95_error", 0.9, "'last_p95_error'"),
        ("n_calibration_samples", 9, "'n_calibration_samples'"),
        ("n_calibration_samples", True, "'n_calibration_samples'"),
        ("is_load_bearing", False, "'is_load_bearing'"),
        ("is_load_bearing", "yes", "'is_load_bearing'"),
        ("state", "drifting", "'is_load_bearing'"),
        ("version", True, "'version'"),
    ],
)
def test_a_tampered_figure_is_a_named_error(
    store: TraceStore, path: str, value: Any, named: str
) -> None:
    calibrated(store, [0.1] * 5)
    edit(store, _set(path, value))
    before = store.metrics_path.read_bytes()
    with pytest.raises(StoreCorruptError, match=named):
        MetricRegistry(store)
    assert store.metrics_path.read_bytes() == before


def test_a_negative_sum_never_promotes(store: TraceStore) -> None:
    cal = calibrated(store, [0.3] * 5)
    assert not cal.registry.is_load_bearing("pass_rate")
    edit(store, _set("calibration.sum_abs_error", -100))
    with pytest.raises(StoreCorruptError, match="'sum_abs_error'"):
        Calibrator(MetricRegistry(store)).update()


def test_a_consistent_looking_tampered_state_fails_verify(store: TraceStore) -> None:
    calibrated(store, [0.1] * 3)  # insufficient data

    def promote(doc: dict[str, Any]) -> None:
        state(doc)["state"] = "load_bearing"
        state(doc)["is_load_bearing"] = True

    edit(store, promote)
    problems = Calibrator(MetricRegistry(store)).verify()
    assert problems == [
        "metric 'pass_rate' version 1: state = 'load_bearing', but the gate gives its "
        "figures 'insufficient_data'"
    ]


def test_a_state_claiming_fewer_pairs_fails_verify(store: TraceStore) -> None:
    calibrated(store, [0.1] * 6)
    edit(store, _set("n_calibration_samples", 5))
    (problem,) = Calibrator(MetricRegistry(store)).verify()
    assert "n_calibration_samples = 5, but 6 pairs are counted" in problem


def test_verify_checks_the_window_mae_shown(store: TraceStore) -> None:
    calibrated(store, [0.1] * 5)
    edit(store, _set("last_window_mae", 0.01))
    (problem,) = Calibrator(MetricRegistry(store)).verify()
    assert "last_window_mae = 0.01" in problem


def test_states_follow_every_metric_whose_pairs_were_counted(store: TraceStore) -> None:
    registry = MetricRegistry(store)
    registry.register_many([rate("a"), rate("b")])
    cal = Calibrator(registry)
    log_errors(cal, "a", [0.0] * 5)
    log_errors(cal, "b", [0.0] * 5)
    cal.update(["a"])  # b's pairs are counted too: its state follows them
    assert registry.state("b").n == 5
    assert registry.is_load_bearing("b")
    assert Calibrator(MetricRegistry(store)).verify() == []


# -- 2. a read position must name the same content -------------------------------------


@pytest.mark.parametrize("how", ["deleted", "truncated"])
def test_a_log_grown_back_to_the_old_offset_is_recounted(store: TraceStore, how: str) -> None:
    first = calibrated(store, [0.02] * 5)
    size = store.calibrations_path.stat().st_size
    if how == "deleted":
        store.calibrations_path.unlink()
    else:
        with store.calibrations_path.open("r+b") as handle:
            handle.truncate(size // 2 - (size // 2) % (size // 5))
    # Pairs of a bad estimator, until the log reaches past the old offset.
    while not store.calibrations_path.exists() or store.calibrations_path.stat().st_size < size:
        log_errors(first, "pass_rate", [0.42])
    counted = store.read_jsonl(store.calibrations_path)[0]
    with pytest.warns(LddWarning, match="rewritten since.*recounted from the start"):
        registry = MetricRegistry(store)
    cal = Calibrator(registry)
    cal.update()
    stats = cal.stats("pass_rate")
    assert stats.n == len(counted)
    assert not registry.is_load_bearing("pass_rate")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Calibrator(MetricRegistry(store)).verify() == []


def test_the_same_log_copied_elsewhere_keeps_its_position(tmp_path: Path) -> None:
    import shutil

    first = TraceStore(tmp_path / "a")
    calibrated(first, [0.1] * 5)
    shutil.copytree(first.ldd_dir, tmp_path / "b" / ".ldd")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        copy = MetricRegistry(TraceStore(tmp_path / "b"))
    assert copy.is_load_bearing("pass_rate")


def test_a_log_rewritten_to_the_same_length_is_recounted(store: TraceStore) -> None:
    calibrated(store, [0.02] * 5)
    data = store.calibrations_path.read_bytes()
    # Same length, a line boundary at the same place, other values.
    store.calibrations_path.write_bytes(data.replace(b'"observed":0.49', b'"observed":0.09'))
    with pytest.warns(LddWarning, match="other bytes"):
        MetricRegistry(store)


# -- 6. keys other tools wrote are kept; duplicates are errors -------------------------


def test_unknown_keys_and_states_without_a_spec_survive_a_rewrite(store: TraceStore) -> None:
    calibrated(store, [0.1] * 2)

    def add(doc: dict[str, Any]) -> None:
        doc["other_tool"] = {"keep": [1, 2]}
        state(doc)["x_note"] = "hand written"
        doc["promotions"].append({"metric_name": "gone", "version": 3, "state": "drifting"})

    edit(store, add)
    cal = Calibrator(MetricRegistry(store))
    log_errors(cal, "pass_rate", [0.1] * 3)
    cal.update()
    doc = json.loads(store.metrics_path.read_text())
    assert doc["other_tool"] == {"keep": [1, 2]}
    assert state(doc)["x_note"] == "hand written"
    assert state(doc, "gone") == {"metric_name": "gone", "version": 3, "state": "drifting"}
    assert state(doc)["n_calibration_samples"] == 5


@pytest.mark.parametrize("where", ["specs", "promotions"])
def test_duplicate_specs_or_states_are_named(store: TraceStore, where: str) -> None:
    calibrated(store, [0.1])
    edit(store, lambda doc: doc[where].append(dict(doc[where][0])))
    with pytest.raises(StoreCorruptError, match=r"two (specs named|states of) 'pass_rate'"):
        MetricRegistry(store)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b'"schema_version": 1', b'"schema_version": 1, "schema_version": 1'),
        (b'"n": 1,', b'"n": 1, "n": 1,'),
        (b'"kind": "bounded"', b'"kind": "bounded", "kind": "bounded"'),
    ],
)
def test_duplicate_json_keys_are_named(store: TraceStore, old: bytes, new: bytes) -> None:
    calibrated(store, [0.1])
    data = store.metrics_path.read_bytes()
    assert old in data
    store.metrics_path.write_bytes(data.replace(old, new, 1))
    with pytest.raises(StoreCorruptError, match=r"holds the key .* twice"):
        MetricRegistry(store)


# -- 9. a NUL-filled tail is recovered like any torn tail ------------------------------


@pytest.mark.parametrize(
    "tail",
    [b"\x00" * 100, b'{"metric_name":"pass_rate","metric_ver' + b"\x00" * 40, b"\x00\x00\n"],
)
def test_a_nul_filled_tail_is_skipped_and_appending_goes_on(
    store: TraceStore, tail: bytes
) -> None:
    cal = calibrated(store, [0.1] * 2)
    with store.calibrations_path.open("ab") as handle:
        handle.write(tail)
    log_errors(cal, "pass_rate", [0.1] * 3)
    with pytest.warns(LddWarning, match="torn"):
        cal.update()
    log_errors(cal, "pass_rate", [0.1])
    cal.update()  # nothing more to warn about: appending goes on
    assert cal.stats("pass_rate").n == 6
    with pytest.warns(LddWarning, match="torn"):
        assert Calibrator(MetricRegistry(store)).verify() == []
    assert store.calibrations_path.read_bytes().endswith(b"\n")


def test_a_complete_line_before_nuls_counts(store: TraceStore) -> None:
    calibrated(store, [0.1])
    data = store.calibrations_path.read_bytes()
    store.calibrations_path.write_bytes(data[:-1] + b"\x00" * 8 + b"\n")
    records, cursor = store.read_jsonl(store.calibrations_path)
    assert records == [json.loads(data)]
    assert cursor.offset == len(data) + 8


# -- 3. verify reads one consistent snapshot -------------------------------------------


def test_verify_while_pairs_are_appended_reports_no_false_mismatch(
    store: TraceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    calibrated(store, [0.1] * 5)
    writer = Calibrator(MetricRegistry(TraceStore(store.project)))
    reading = TraceStore.read_pairs

    def read_while_a_session_records(self: TraceStore, *args: Any, **kwargs: Any) -> Any:
        # Another writer appends a pair each time the log is being read.
        log_errors(writer, "pass_rate", [0.2])
        return reading(self, *args, **kwargs)

    monkeypatch.setattr(TraceStore, "read_pairs", read_while_a_session_records)
    for _ in range(3):
        cal = Calibrator(MetricRegistry(store))
        cal.stats("pass_rate")
        assert cal.verify() == []

    stop = threading.Event()
    monkeypatch.setattr(TraceStore, "read_pairs", reading)

    def record() -> None:
        while not stop.wait(0.0005):
            log_errors(writer, "pass_rate", [0.2])

    thread = threading.Thread(target=record)
    thread.start()
    try:
        for _ in range(10):
            assert Calibrator(MetricRegistry(store)).verify() == []
    finally:
        stop.set()
        thread.join()


# -- 10, 13, 15, 16, 17: the ldd command -----------------------------------------------


@contextmanager
def immutable(path: Path) -> Iterator[None]:
    """``path`` made immutable (chattr +i): even root cannot create files in it."""
    subprocess.run(["chattr", "+i", str(path)], check=True)
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def run_ldd(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_calibrate_says_what_was_logged_when_the_update_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = TraceStore(tmp_path)
    calibrated(store, [0.1])
    with immutable(store.ldd_dir):  # the log can be appended to, metrics.json not replaced
        code, out, err = run_ldd(
            capsys,
            "metric",
            "calibrate",
            *("--name", "pass_rate", "--predicted", "0.5", "--observed", "0.4"),
            *("--project", str(tmp_path)),
        )
    assert code == cli.EXIT_FAILED
    assert out.startswith("logged 'pass_rate': predicted 0.500, observed 0.400")
    assert "the pair was logged (do not log it again)" in err
    assert "Operation not permitted" in err
    assert "internal error" not in err
    assert len(store.read_jsonl(store.calibrations_path)[0]) == 2


CALIBRATE = ["metric", "calibrate", "--name", "pass_rate"]
CALIBRATE += ["--predicted", "0.5", "--observed", "0.4"]


@pytest.mark.parametrize("verb", [CALIBRATE, ["report"]])
def test_a_store_folder_that_cannot_be_created_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], verb: list[str]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    registry = MetricRegistry(TraceStore(project), read_only=True)
    registry.register(rate())
    extra = ["--json", str(tmp_path / "r.json")] if verb == ["report"] else []
    with immutable(project):
        code, _, err = run_ldd(capsys, *verb, *extra, "--project", str(project))
        store_error = pytest.raises(StoreCorruptError, match="cannot create the store folder")
        with store_error:
            TraceStore(project).append_sessions([{"id": "s"}])
    if verb == ["report"]:
        assert code == cli.EXIT_OK  # reading creates nothing, so nothing fails
    else:
        assert code in (cli.EXIT_FAILED, cli.EXIT_USAGE)
        assert "internal error" not in err
        assert str(project / ".ldd") in err


@pytest.mark.parametrize("kind", ["fifo", "devnull", "loop", "dangling", "folder"])
@pytest.mark.parametrize("log", ["metric_calibrations.jsonl", "sessions.jsonl", "metrics.json"])
def test_every_store_file_must_be_a_regular_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, log: str
) -> None:
    store = TraceStore(tmp_path)
    calibrated(store, [0.1])
    target = store.ldd_dir / log
    target.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "devnull":
        target.symlink_to("/dev/null")
    elif kind == "loop":
        target.symlink_to(target.name)
    elif kind == "dangling":
        target.symlink_to("nowhere.jsonl")
    else:
        target.mkdir()
    verbs = [["report", "--json", str(tmp_path / "r.json")]]
    if log != "sessions.jsonl":  # the only verb that reads the session log is report
        verbs.append(["metric", "status"])
    for verb in verbs:
        code, _, err = run_ldd(capsys, *verb, "--project", str(tmp_path))
        assert code == cli.EXIT_FAILED, (verb, err)
        assert str(target) in err
        assert "internal error" not in err
    if log != "metrics.json":
        with pytest.raises(StoreCorruptError, match=re.escape(str(target))):
            store.append(target, [{"id": "s"}])


def _store_with_unit(tmp_path: Path, unit: str, description: str) -> None:
    registry = MetricRegistry(TraceStore(tmp_path))
    registry.register(
        positive_count("lat", description=description, unit=unit, normalize_scale=1000)
    )


def test_output_survives_a_terminal_that_cannot_encode_the_unit(tmp_path: Path) -> None:
    _store_with_unit(tmp_path, "µs", "latency in µs")
    for verb in (["metric", "list"], ["metric", "show", "lat"], ["metric", "status"]):
        result = subprocess.run(
            [sys.executable, "-m", "pytest_ldd", *verb, "--project", str(tmp_path)],
            capture_output=True,
            env={**os.environ, "PYTHONIOENCODING": "ascii"},
            check=False,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        assert b"internal error" not in result.stderr
        assert b"Traceback" not in result.stderr
    listed = subprocess.run(
        [sys.executable, "-m", "pytest_ldd", "metric", "list", "--project", str(tmp_path)],
        capture_output=True,
        env={**os.environ, "PYTHONIOENCODING": "latin-1"},
        check=True,
        timeout=60,
    )
    assert "µs".encode("latin-1") in listed.stdout


HOSTILE = "\x1b]0;owned\x07\x1b[2J\x1b[31mred\nforged line\r\x9b1m\u202e"


def test_escapes_in_units_and_descriptions_never_reach_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = TraceStore(tmp_path)
    _store_with_unit(tmp_path, "ms", "plain")
    edit(store, lambda doc: doc["specs"][0].update(unit=f"ms{HOSTILE}", description=HOSTILE))
    for verb in (["metric", "list"], ["metric", "show", "lat"], ["metric", "status", "--json"]):
        code, out, err = run_ldd(capsys, *verb, "--project", str(tmp_path))
        assert code == 0, err
        assert not any(ch in out + err for ch in "\x1b\x07\r\x9b\u202e"), verb
        if verb != ["metric", "status", "--json"]:
            assert "\nforged" not in out


def test_printable_escapes_controls_and_keeps_text() -> None:
    from pytest_ldd.report.terminal import printable

    assert printable("µs ✓ tab\there") == "µs ✓ tab\there"
    assert printable("a\x1b[31mb\nc") == "a\\x1b[31mb\\nc"
    assert printable("a\nb\x07", newlines=True) == "a\nb\\x07"
    assert printable("\u202e\x9b\x7f") == "\\u202e\\x9b\\x7f"


# -- 7. lines the reference LDD tool wrote ---------------------------------------------


def _reference_folder(tmp_path: Path) -> TraceStore:
    """A folder as the reference tool leaves it: raw values, no raw_* keys, no
    calibration objects in metrics.json."""
    store = TraceStore(tmp_path)
    registry = MetricRegistry(store)
    registry.register(
        positive_count("latency", description="p99 latency", unit="ms", normalize_scale=1000)
    )
    registry.register(rate())

    def strip(doc: dict[str, Any]) -> None:
        for item in doc["promotions"]:
            del item["calibration"]
            del item["history"]

    edit(store, strip)
    lines = [
        {"metric_name": "latency", "metric_version": 1, "predicted": p, "observed": o}
        for p, o in [(300.0, 420.0), (410.0, 400.0), (0.5, 1200.0), (420.0, 420.0)]
    ]
    lines.append(
        {"metric_name": "pass_rate", "metric_version": 1, "predicted": 0.1, "observed": 0.2}
    )
    store.append_calibrations(lines)
    return store


def test_raw_values_of_the_reference_tool_are_normalized_with_the_spec(tmp_path: Path) -> None:
    from pytest_ldd.model.metric import positive_count as latency_metric

    store = _reference_folder(tmp_path)
    cal = Calibrator(MetricRegistry(store))
    stats = cal.stats("latency")
    metric = latency_metric("latency", description="p99 latency", normalize_scale=1000)
    expected = [
        abs(metric.normalize(p) - metric.normalize(o))
        for p, o in [(300.0, 420.0), (410.0, 400.0), (0.5, 1200.0), (420.0, 420.0)]
    ]
    assert stats.n == 4
    assert stats.mae == pytest.approx(sum(expected) / 4)
    assert cal.stats("pass_rate").n == 1
    cal.update()
    assert Calibrator(MetricRegistry(store)).verify() == []


def test_raw_values_reach_the_report_normalized(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _reference_folder(tmp_path)
    out = tmp_path / "report.json"
    code, _, err = run_ldd(capsys, "report", "--json", str(out), "--project", str(tmp_path))
    assert code == 0, err
    doc = json.loads(out.read_text())
    pairs = doc["history"]["calibrations"]["latency"]
    assert [p["raw_predicted"] for p in pairs] == [300.0, 410.0, 0.5, 420.0]
    assert all(0.0 <= p["predicted"] <= 1.0 and 0.0 <= p["observed"] <= 1.0 for p in pairs)


def test_a_raw_line_of_a_bounded_metric_names_the_line(tmp_path: Path) -> None:
    store = _reference_folder(tmp_path)
    store.append_calibrations(
        [{"metric_name": "pass_rate", "metric_version": 1, "predicted": 3.0, "observed": 0.2}]
    )
    with pytest.raises(StoreCorruptError, match=r"jsonl:6: 'predicted' must be a normalized"):
        Calibrator(MetricRegistry(store)).stats("pass_rate")


# -- 12. every line a report reads is validated; write failures are named --------------


@pytest.mark.parametrize(
    ("log", "line", "named"),
    [
        ("sessions.jsonl", {"session_id": ["a", "b"]}, "'session_id' must be a str"),
        ("sessions.jsonl", {"session_id": "s", "counts": [1]}, "'counts' must be an object"),
        ("sessions.jsonl", {"state_changes": [1]}, "'state_changes' must be a list of objects"),
        ("sessions.jsonl", {"started_at": 3}, "'started_at' must be a str"),
        (
            "metric_calibrations.jsonl",
            {"metric_name": "ghost", "metric_version": None, "predicted": 0.1, "observed": 0.2},
            "'metric_version' must be an int >= 1",
        ),
        (
            "metric_calibrations.jsonl",
            {"metric_name": ["x"], "metric_version": 1, "predicted": 0.1, "observed": 0.2},
            "'metric_name' must be a non-empty str",
        ),
        (
            "metric_calibrations.jsonl",
            {"metric_name": "pass_rate", "metric_version": 1, "predicted": "a", "observed": 0.2},
            "'predicted' must be a normalized number",
        ),
    ],
)
def test_report_names_each_malformed_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], log: str, line: Any, named: str
) -> None:
    store = TraceStore(tmp_path)
    calibrated(store, [0.1])
    store.append(store.ldd_dir / log, [line])
    code, _, err = run_ldd(
        capsys, "report", "--json", str(tmp_path / "r.json"), "--project", str(tmp_path)
    )
    assert code == cli.EXIT_FAILED
    assert f"{log}:" in err
    assert named in err
    assert "internal error" not in err
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("target", ["a-folder", "a-file/report.json"])
@pytest.mark.parametrize("kind", ["--json", "--html"])
def test_an_unwritable_report_target_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str, kind: str
) -> None:
    calibrated(TraceStore(tmp_path), [0.1])
    (tmp_path / "a-folder").mkdir()
    (tmp_path / "a-file").write_text("")
    path = tmp_path / target
    code, _, err = run_ldd(capsys, "report", kind, str(path), "--project", str(tmp_path))
    assert code == cli.EXIT_FAILED
    assert f"cannot write the {kind[2:].upper()} report to {path}" in err
    assert "internal error" not in err


# -- 14. values beyond float range, names that are not str -----------------------------


def test_huge_values_and_unhashable_names_in_a_session(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_values="""
        import pytest

        @pytest.mark.metric("lat", kind="positive", unit="ms", normalize_scale=1000,
                            description="latency of the endpoint", predictor="history_mean")
        def test_huge(ldd):
            ldd.observe("lat", 10**400)
            ldd.observe("lat", 10**400, predicted=10**401)

        @pytest.mark.metric("lat")
        def test_unhashable(ldd):
            ldd.observe(["lat"], 1.0)
        """
    )
    for _ in range(2):
        result = pytester.runpytest(*PROJECT_ARGS, "--ldd")
        text = result.stdout.str() + result.stderr.str()
        assert "INTERNALERROR" not in text
        assert "OverflowError" not in text
        # Each is an invalid observation of its own test, naming the value.
        result.assert_outcomes(failed=2)
        assert "within the float range" in text
        assert "got ~1e400" in text
        assert "a metric name must be a str (got ['lat'])" in text
    log = pytester.path / ".ldd" / "metric_calibrations.jsonl"
    pairs, _ = TraceStore(pytester.path).read_jsonl(log)
    assert pairs == []


def test_a_name_that_is_not_a_str_is_an_invalid_observation(store: TraceStore) -> None:
    from pytest_ldd.errors import InvalidObservationError

    cal = calibrated(store, [0.1])
    for name in (["pass_rate"], {"a": 1}, 3, None):
        with pytest.raises(InvalidObservationError, match=r"a metric name must be a str \(got"):
            cal.log(name, 0.1, 0.2)  # type: ignore[arg-type]


# -- 18. one validator for the marker, [tool.ldd] and ldd ------------------------------

CONTRADICTIONS = [
    ("le = 0.1\nge = 0.9", "ge = 0.9 and le = 0.1"),
    ("lt = 0.5\ngt = 0.5", "gt = 0.5 and lt = 0.5"),
    ("le = 0.5\ngt = 0.5", "gt = 0.5 and le = 0.5"),
    ("lt = 1\nge = 2", "ge = 2 and lt = 1"),
]


@pytest.mark.parametrize(("bounds", "named"), CONTRADICTIONS)
def test_contradictory_bounds_are_refused_everywhere(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], bounds: str, named: str
) -> None:
    from pytest_ldd.config import load_config

    pytester.makepyprojecttoml(
        "[tool.ldd.metrics.lat]\nkind = 'positive'\ndescription = 'latency of the endpoint'\n"
        + bounds
    )
    with pytest.raises(InvalidSpecError, match=re.escape(named)):
        load_config(pytester.path)
    code, _, err = run_ldd(capsys, "metric", "list", "--project", str(pytester.path))
    assert code == cli.EXIT_USAGE
    assert named in err
    marker = ", ".join(bounds.replace(" ", "").splitlines())
    pytester.makepyprojecttoml("")
    pytester.makepyfile(
        f"""
        import pytest

        @pytest.mark.metric("lat", kind="positive", description="latency", {marker})
        def test_lat(ldd):
            ldd.observe("lat", 1.0)
        """
    )
    result = pytester.runpytest(*PROJECT_ARGS)
    assert named in result.stdout.str() + result.stderr.str()
    assert result.ret != 0


def test_consistent_bounds_pass(pytester: pytest.Pytester) -> None:
    from pytest_ldd.config import load_config

    pytester.makepyprojecttoml(
        "[tool.ldd.metrics.lat]\nkind = 'positive'\ndescription = 'latency'\nge = 1\nle = 1\n"
    )
    assert load_config(pytester.path).metrics["lat"].bounds() == {"le": 1.0, "ge": 1.0}


def test_normalize_scale_on_a_bounded_metric_is_refused_in_tool_ldd(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.ldd.metrics.rate]\nkind = 'bounded'\ndescription = 'share of failing tests'\n"
        "normalize_scale = 10\n"
    )
    code, _, err = run_ldd(capsys, "metric", "list", "--project", str(tmp_path))
    assert code == cli.EXIT_USAGE
    assert "normalize_scale applies to positive and signed metrics, not 'bounded'" in err


def test_a_gate_of_a_metric_that_is_no_corpus_metric_is_refused_by_ldd(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.ldd.gates.foo]\nle = 1\n")
    code, _, err = run_ldd(capsys, "metric", "list", "--project", str(tmp_path))
    assert code == cli.EXIT_USAGE
    assert "[tool.ldd.gates] foo" in err
    assert "task_success, cost_per_success" in err


def test_a_session_whose_store_folder_cannot_be_created(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_it.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.metric('rate', kind='bounded', description='share of failing tests')\n"
        "def test_it(ldd):\n"
        "    ldd.observe('rate', 0.1, predicted=0.2)\n"
    )
    with immutable(project):
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--ldd", str(project)],
            cwd=project,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
    text = result.stdout + result.stderr
    assert "INTERNALERROR" not in text
    assert "Traceback" not in text
    assert f"cannot create the store folder {project / '.ldd'}" in text
    assert result.returncode != 0


def _limited(limit: int) -> Callable[[], None]:
    def apply() -> None:
        import resource
        import signal

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG, not a killed process
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.parametrize("fails", ["everything", "the append", "the replace"])
def test_a_full_disk_is_a_named_error_and_loses_nothing(tmp_path: Path, fails: str) -> None:
    store = TraceStore(tmp_path)
    calibrated(store, [0.1] * 2)
    before = {p.name: p.read_bytes() for p in store.ldd_dir.iterdir()}
    log_size = len(before["metric_calibrations.jsonl"])
    assert len(before["metrics.json"]) > log_size + 400
    limit = {"everything": 0, "the append": log_size + 20, "the replace": log_size + 400}[fails]
    result = subprocess.run(
        [sys.executable, "-m", "pytest_ldd", *CALIBRATE, "--project", str(tmp_path)],
        capture_output=True,
        text=True,
        preexec_fn=_limited(limit),
        check=False,
        timeout=60,
    )
    assert result.returncode == cli.EXIT_FAILED, result.stderr
    assert "File too large" in result.stderr
    assert "internal error" not in result.stderr
    assert "Traceback" not in result.stderr
    after_log, _ = store.read_jsonl(store.calibrations_path)
    assert len(after_log) == (3 if fails == "the replace" else 2)
    assert store.calibrations_path.read_bytes().endswith(b"\n")  # no half-written line
    if fails == "the replace":  # appended, then metrics.json could not be replaced
        assert "the pair was logged (do not log it again)" in result.stderr
    assert store.metrics_path.read_bytes() == before["metrics.json"]
    assert Calibrator(MetricRegistry(store)).stats("pass_rate").n == len(after_log)


def test_escapes_never_reach_the_terminal_from_a_pytest_session(tmp_path: Path) -> None:
    unit = "ms\x1b]0;owned\x07\x1b[2J"
    registry = MetricRegistry(TraceStore(tmp_path))
    registry.register(
        positive_count("lat", description="latency of the endpoint", unit=unit, normalize_scale=10)
    )
    edit(TraceStore(tmp_path), lambda doc: doc["specs"][0].update(description=HOSTILE))
    (tmp_path / "test_it.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.metric('lat', le=1)\n"
        "def test_it(ldd):\n"
        "    ldd.observe('lat', 5.0, predicted=4.0)\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--ldd", "-rA", "-v"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    text = result.stdout + result.stderr
    assert "ldd advisory breach: lat = 5 ms\\x1b]0;owned\\x07\\x1b[2J" in text
    assert not any(ch in text for ch in "\x1b\x07\x9b\u202e")
