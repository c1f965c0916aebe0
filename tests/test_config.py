"""[tool.ldd] loading: defaults, every key, unknown keys and wrong types."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_ldd.config import AgentsConfig, LddConfig, MetricConfig, load_config, load_config_file
from pytest_ldd.errors import InvalidSpecError
from pytest_ldd.model.metric import MetricSpec, PositiveCountMetric
from pytest_ldd.model.statistics import CalibrationGate

FULL = """
[project]
name = "demo"

[tool.ldd]
dir = ".ldd-data"

[tool.ldd.calibration]
min_n = 8
max_mae = 0.1
max_p95 = 0.3
window = 20

[tool.ldd.metrics.latency_p99]
kind = "positive"
unit = "ms"
description = "p99 latency of the checkout endpoint"
version = 2
normalize_scale = 1000
le = 500
predictor = "history_mean"

[tool.ldd.metrics.latency_p99.calibration]
max_mae = 0.05
max_worst = 0.5

[tool.ldd.metrics.judge_score]
ge = 0.7
gt = 0.1

[tool.ldd.metrics.task_success]
check = "quasi_exact"

[tool.ldd.gates]
task_success = { ge = 0.8 }
cost_per_success = { le = 0.25, lt = 1 }

[tool.ldd.agents]
check = "output"
prices = "prices.toml"
model = "gpt-4o-mini"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pyproject.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_no_file_gives_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    assert config == LddConfig(project=tmp_path)
    assert config.calibration == CalibrationGate()
    assert config.source is None
    assert config.ldd_dir is None
    assert config.prices_path is None
    assert config.gate_for("anything") == CalibrationGate()


def test_no_table_gives_defaults(tmp_path: Path) -> None:
    write(tmp_path, '[project]\nname = "x"\n[tool.ruff]\nline-length = 99\n')
    assert load_config(tmp_path) == LddConfig(project=tmp_path)


def test_empty_table(tmp_path: Path) -> None:
    path = write(tmp_path, "[tool.ldd]\n")
    config = load_config(tmp_path)
    assert config.source == path
    assert config.metrics == {}
    assert config.calibration == CalibrationGate()


def test_every_key(tmp_path: Path) -> None:
    path = write(tmp_path, FULL)
    config = load_config(tmp_path)
    assert config.source == path
    assert config.dir == ".ldd-data"
    assert config.ldd_dir == tmp_path / ".ldd-data"
    project_gate = CalibrationGate(min_n=8, max_mae=0.1, max_p95=0.3, window=20)
    assert config.calibration == project_gate
    latency = config.metrics["latency_p99"]
    assert latency == MetricConfig(
        name="latency_p99",
        kind="positive",
        unit="ms",
        description="p99 latency of the checkout endpoint",
        version=2,
        normalize_scale=1000.0,
        le=500.0,
        predictor="history_mean",
        # Overrides apply on top of the project gate, not of the defaults.
        calibration=CalibrationGate(min_n=8, max_mae=0.05, max_p95=0.3, max_worst=0.5, window=20),
    )
    assert latency.bounds() == {"le": 500.0}
    assert latency.declares
    assert config.gate_for("latency_p99") == latency.calibration
    assert config.gate_for("judge_score") == project_gate
    assert config.metric_gates() == {"latency_p99": latency.calibration}
    judge = config.metrics["judge_score"]
    assert judge.bounds() == {"ge": 0.7, "gt": 0.1}
    assert not judge.declares
    assert judge.metric() is None
    assert config.metrics["task_success"].check == "quasi_exact"
    assert config.gates == {
        "task_success": {"ge": 0.8},
        "cost_per_success": {"le": 0.25, "lt": 1.0},
    }
    assert config.agents == AgentsConfig(check="output", prices="prices.toml", model="gpt-4o-mini")
    assert config.prices_path == tmp_path / "prices.toml"


def test_a_metric_table_declares_a_spec(tmp_path: Path) -> None:
    write(tmp_path, FULL)
    latency = load_config(tmp_path).metrics["latency_p99"]
    spec = latency.to_spec()
    assert spec == MetricSpec(
        "latency_p99",
        "positive",
        "ms",
        "p99 latency of the checkout endpoint",
        version=2,
        normalize_scale=1000.0,
    )
    metric = latency.metric()
    assert isinstance(metric, PositiveCountMetric)
    assert metric.spec == spec


def test_kind_without_description_cannot_declare(tmp_path: Path) -> None:
    write(tmp_path, '[tool.ldd.metrics.x]\nkind = "bounded"\n')
    metric = load_config(tmp_path).metrics["x"]
    with pytest.raises(
        InvalidSpecError, match=r"\[tool\.ldd\.metrics\.x\] must set 'description'"
    ):
        metric.metric()


def test_defaults_of_a_declared_spec(tmp_path: Path) -> None:
    write(
        tmp_path, '[tool.ldd.metrics.x]\nkind = "bounded"\ndescription = "share of flaky runs"\n'
    )
    spec = load_config(tmp_path).metrics["x"].to_spec()
    assert (spec.unit, spec.version, spec.normalize_scale) == ("rate", 1, 1.0)


def test_a_gaming_description_is_rejected_when_declaring(tmp_path: Path) -> None:
    write(tmp_path, '[tool.ldd.metrics.x]\nkind = "bounded"\ndescription = "what I want"\n')
    with pytest.raises(InvalidSpecError, match="i want"):
        load_config(tmp_path).metrics["x"].to_spec()


UNKNOWN = [
    ("[tool.ldd]\nfoo = 1\n", "tool.ldd.foo", "dir, calibration, metrics, gates, agents"),
    (
        "[tool.ldd.calibration]\nmax_mea = 0.2\n",
        "tool.ldd.calibration.max_mea",
        "min_n, max_mae, max_p95, max_worst, window",
    ),
    ("[tool.ldd.metrics.x]\nkidn = 'bounded'\n", "tool.ldd.metrics.x.kidn", "kind, unit"),
    ("[tool.ldd.metrics.x]\nadvisory_only = true\n", "tool.ldd.metrics.x.advisory_only", "kind"),
    (
        "[tool.ldd.metrics.x.calibration]\nminn = 3\n",
        "tool.ldd.metrics.x.calibration.minn",
        "min_n, max_mae",
    ),
    ("[tool.ldd.gates]\nx = { gte = 1 }\n", "tool.ldd.gates.x.gte", "le, lt, ge, gt"),
    ("[tool.ldd.agents]\nmodels = 'a'\n", "tool.ldd.agents.models", "check, prices, model"),
]


@pytest.mark.parametrize(("text", "key", "expected"), UNKNOWN)
def test_unknown_keys_name_the_dotted_key_and_the_file(
    tmp_path: Path, text: str, key: str, expected: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(InvalidSpecError) as info:
        load_config(tmp_path)
    message = str(info.value)
    assert f"unknown key '{key}' in {path}" in message
    assert f"(expected one of: {expected}" in message


def test_the_documented_example_message(tmp_path: Path) -> None:
    path = write(tmp_path, "[tool.ldd.calibration]\nmax_mea = 0.2\n")
    expected = (
        f"unknown key 'tool.ldd.calibration.max_mea' in {path} "
        "(expected one of: min_n, max_mae, max_p95, max_worst, window)"
    )
    with pytest.raises(InvalidSpecError, match=re.escape(expected)):
        load_config(tmp_path)


WRONG = [
    ("[tool]\nldd = 3\n", "tool.ldd", "a table", "3"),
    ("[tool.ldd]\ndir = 3\n", "tool.ldd.dir", "a non-empty string", "3"),
    ("[tool.ldd]\ndir = ''\n", "tool.ldd.dir", "a non-empty string", "''"),
    ("[tool.ldd]\ncalibration = 1\n", "tool.ldd.calibration", "a table", "1"),
    (
        "[tool.ldd.calibration]\nmin_n = '5'\n",
        "tool.ldd.calibration.min_n",
        "an integer >= 1",
        "'5'",
    ),
    ("[tool.ldd.calibration]\nmin_n = 0\n", "tool.ldd.calibration.min_n", "an integer >= 1", "0"),
    ("[tool.ldd.calibration]\nmin_n = 5.0\n", "tool.ldd.calibration.min_n", "an integer", "5.0"),
    ("[tool.ldd.calibration]\nwindow = true\n", "tool.ldd.calibration.window", "integer", "True"),
    ("[tool.ldd.calibration]\nmax_mae = -0.1\n", "tool.ldd.calibration.max_mae", ">= 0", "-0.1"),
    ("[tool.ldd.calibration]\nmax_mae = nan\n", "tool.ldd.calibration.max_mae", "finite", "nan"),
    ("[tool.ldd.calibration]\nmax_p95 = inf\n", "tool.ldd.calibration.max_p95", "finite", "inf"),
    (
        "[tool.ldd.calibration]\nmax_worst = 'a'\n",
        "tool.ldd.calibration.max_worst",
        "number",
        "'a'",
    ),
    ("[tool.ldd]\nmetrics = 1\n", "tool.ldd.metrics", "a table", "1"),
    ("[tool.ldd.metrics]\nx = 1\n", "tool.ldd.metrics.x", "a table", "1"),
    ("[tool.ldd.metrics.'a b']\nle = 1\n", "tool.ldd.metrics.a b", "a metric name", "'a b'"),
    ("[tool.ldd.metrics.x]\nkind = 'ratio'\n", "tool.ldd.metrics.x.kind", "one of", "'ratio'"),
    ("[tool.ldd.metrics.x]\nunit = 5\n", "tool.ldd.metrics.x.unit", "string", "5"),
    ("[tool.ldd.metrics.x]\ndescription = []\n", "tool.ldd.metrics.x.description", "str", "[]"),
    ("[tool.ldd.metrics.x]\nversion = 0\n", "tool.ldd.metrics.x.version", "integer >= 1", "0"),
    ("[tool.ldd.metrics.x]\nversion = '2'\n", "tool.ldd.metrics.x.version", "integer", "'2'"),
    (
        "[tool.ldd.metrics.x]\nnormalize_scale = 0\n",
        "tool.ldd.metrics.x.normalize_scale",
        "> 0",
        "0",
    ),
    ("[tool.ldd.metrics.x]\nle = 'high'\n", "tool.ldd.metrics.x.le", "a number", "'high'"),
    ("[tool.ldd.metrics.x]\nge = true\n", "tool.ldd.metrics.x.ge", "a number", "True"),
    ("[tool.ldd.metrics.x]\nlt = nan\n", "tool.ldd.metrics.x.lt", "a number", "nan"),
    (
        "[tool.ldd.metrics.x]\npredictor = 'mean'\n",
        "tool.ldd.metrics.x.predictor",
        "history_mean",
        "'mean'",
    ),
    ("[tool.ldd.metrics.x]\ncheck = 1\n", "tool.ldd.metrics.x.check", "string", "1"),
    ("[tool.ldd.metrics.x]\ncalibration = 1\n", "tool.ldd.metrics.x.calibration", "a table", "1"),
    (
        "[tool.ldd.metrics.x.calibration]\nwindow = 0\n",
        "tool.ldd.metrics.x.calibration.window",
        "an integer >= 1",
        "0",
    ),
    ("[tool.ldd]\ngates = []\n", "tool.ldd.gates", "a table", "[]"),
    ("[tool.ldd.gates]\nx = 0.8\n", "tool.ldd.gates.x", "a table", "0.8"),
    ("[tool.ldd.gates]\nx = {}\n", "tool.ldd.gates.x", "one of le, lt, ge, gt", "{}"),
    ("[tool.ldd.gates]\nx = { ge = 'a' }\n", "tool.ldd.gates.x.ge", "a number", "'a'"),
    ("[tool.ldd]\nagents = 'x'\n", "tool.ldd.agents", "a table", "'x'"),
    ("[tool.ldd.agents]\nprices = 3\n", "tool.ldd.agents.prices", "string", "3"),
    ("[tool.ldd.agents]\ncheck = false\n", "tool.ldd.agents.check", "string", "False"),
]


@pytest.mark.parametrize(("text", "key", "expected", "got"), WRONG)
def test_wrong_types_name_key_expectation_and_value(
    tmp_path: Path, text: str, key: str, expected: str, got: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(InvalidSpecError) as info:
        load_config(tmp_path)
    message = str(info.value)
    assert f"'{key}' in {path} must be" in message
    assert expected in message
    assert f"(got {got})" in message


def test_invalid_toml(tmp_path: Path) -> None:
    path = write(tmp_path, "[tool.ldd\n")
    with pytest.raises(InvalidSpecError, match=re.escape(f"{path} is not valid TOML")):
        load_config(tmp_path)


def test_load_config_file_reads_any_path(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "custom.toml"
    path.parent.mkdir()
    path.write_text("[tool.ldd]\ndir = 'x'\n", encoding="utf-8")
    config = load_config_file(path)
    assert config.source == path
    assert config.ldd_dir == path.parent / "x"


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidSpecError, match="cannot read"):
        load_config_file(tmp_path / "missing.toml")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_n": 0}, "'min_n' must be an int >= 1 (got 0)"),
        ({"min_n": True}, "'min_n' must be an int >= 1 (got True)"),
        ({"min_n": 2.0}, "'min_n' must be an int >= 1 (got 2.0)"),
        ({"window": 0}, "'window' must be an int >= 1 (got 0)"),
        ({"max_mae": -1}, "'max_mae' must be a finite number >= 0 (got -1)"),
        ({"max_mae": float("inf")}, "'max_mae' must be a finite number >= 0 (got inf)"),
        ({"max_mae": None}, "'max_mae' must be a finite number >= 0 (got None)"),
        ({"max_p95": float("nan")}, "'max_p95' must be None or a finite number >= 0 (got nan)"),
        ({"max_worst": "0.5"}, "'max_worst' must be None or a finite number >= 0 (got '0.5')"),
    ],
)
def test_calibration_gate_validates_its_fields(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidSpecError, match=re.escape(f"CalibrationGate {message}")):
        CalibrationGate(**kwargs)  # type: ignore[arg-type]


def test_calibration_gate_defaults() -> None:
    gate = CalibrationGate()
    assert (gate.min_n, gate.max_mae, gate.max_p95, gate.max_worst, gate.window) == (
        5,
        0.15,
        None,
        None,
        10,
    )
    assert CalibrationGate(max_mae=1).max_mae == 1.0
    assert isinstance(CalibrationGate(max_mae=1).max_mae, float)


def test_corpus_gates_leave_the_project_key_alone(tmp_path: Path) -> None:
    # The gates loop once reused the variable holding the project key: every project
    # with [tool.ldd.gates] got the key "tool.ldd.gates.<last gate>", one for all.
    write(
        tmp_path,
        '[tool.ldd]\nproject = "search"\n\n[tool.ldd.gates]\n'
        "task_success = { ge = 0.8 }\ncost_per_success = { le = 0.25 }\n",
    )
    config = load_config(tmp_path)
    assert config.key == "search"
    assert set(config.gates) == {"task_success", "cost_per_success"}
    write(tmp_path, '[tool.ldd.gates]\ntask_success = { ge = 0.8 }\n')
    assert load_config(tmp_path).key is None
