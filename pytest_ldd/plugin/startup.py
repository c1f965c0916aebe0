"""Starting pytest-ldd in one process: the configuration read, the store and registry open.

:func:`start_run` reads ``[tool.ldd]`` from the rootdir, opens the store the command
line, the environment or the configuration names (``--ldd-store``, ``--ldd-dir``,
``LDD_STORE``, ``[tool.ldd] store`` / ``dir``), opens the registry (read-only unless
this process records: xdist workers never write), collects the gate bounds and
predictors of ``[tool.ldd.metrics]`` and the corpus gates, lets
``pytest_ldd_register_metrics`` implementations declare their metrics, and takes the
states gates are enforced from (an xdist worker takes the controller's).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_ldd.calibration.registry import MetricRegistry
    from pytest_ldd.config import LddConfig
    from pytest_ldd.model.gates import Bound
    from pytest_ldd.model.metric import MetricSpec
    from pytest_ldd.plugin.recorder import RunContext

__all__ = ["start_run", "worker_input"]


def start_run(
    config: pytest.Config, *, recording: bool, is_worker: bool
) -> tuple[RunContext, dict[str, tuple[Bound, ...]]]:
    """This process's run context, and the corpus gates' bounds by corpus metric.

    Raises an :class:`~pytest_ldd.errors.LddError` naming what is wrong.
    """
    from pytest_ldd.calibration.calibrator import Calibrator
    from pytest_ldd.config import load_config
    from pytest_ldd.model.gates import parse_bounds
    from pytest_ldd.plugin.recorder import RunContext, new_session_id

    rootpath = Path(config.rootpath)
    ldd_config = load_config(rootpath)
    option_dir = config.getoption("ldd_dir")
    option_store = config.getoption("ldd_store")
    ldd_dir = Path(config.invocation_params.dir, option_dir) if option_dir else None
    store = ldd_config.open_store(option=option_store or None, ldd_dir=ldd_dir)
    folder = getattr(store, "ldd_dir", None)
    if recording and not is_worker and folder is not None:
        _warn_nested_store(folder, rootpath)
    # Workers never write: the controller owns the store.
    registry = ldd_config.open_registry(store, read_only=not recording or is_worker)
    config_bounds: dict[str, tuple[Bound, ...]] = {}
    config_predictors: dict[str, str] = {}
    for name, metric_config in ldd_config.metrics.items():
        bounds = parse_bounds(metric_config.bounds(), where=f"[tool.ldd.metrics.{name}]")
        if bounds:
            config_bounds[name] = bounds
        if metric_config.predictor:
            config_predictors[name] = metric_config.predictor
    # load_config checked that corpus gates name corpus metrics.
    corpus_bounds = {
        name: parse_bounds(options, where=f"[tool.ldd.gates] {name}")
        for name, options in ldd_config.gates.items()
    }
    declared = _declare_from_hook(config, ldd_config, registry)

    shared = getattr(config, "workerinput", {}).get("ldd")
    if shared is not None:
        from pytest_ldd.model.statistics import MetricState

        session_id = shared["session_id"]
        start_states = {
            name: MetricState.from_json(data) for name, data in shared["states"].items()
        }
    else:
        session_id = new_session_id()
        start_states = registry.states()
    ctx = RunContext(
        registry=registry,
        calibrator=Calibrator(registry),
        config=ldd_config,
        session_id=session_id,
        recording=recording,
        start_states=start_states,
        config_bounds=config_bounds,
        config_predictors=config_predictors,
        base_dir=rootpath,
        ship_specs=is_worker,
        declared=declared,
    )
    return ctx, corpus_bounds


def _declare_from_hook(
    config: pytest.Config, ldd_config: LddConfig, registry: MetricRegistry
) -> dict[str, tuple[MetricSpec, str]]:
    """Let ``pytest_ldd_register_metrics`` declare its metrics, in one batch (one
    write); what this session declared so far, and where (see ``declare_once``).

    A spec the hook declares that contradicts a ``[tool.ldd.metrics]`` table is an
    error naming both, raised before the batch is written.
    """
    from pytest_ldd.plugin.markers import declare_once

    declared = ldd_config.declarations()
    before = {name: registry.spec(name) for name in registry.names()}
    with registry.batch():
        config.hook.pytest_ldd_register_metrics(registry=registry)
        for name in registry.names():
            spec = registry.spec(name)
            if before.get(name) != spec:
                declare_once(declared, spec, "the pytest_ldd_register_metrics hook")
    return declared


def worker_input(ctx: RunContext) -> dict[str, Any]:
    """What the controller hands each xdist worker: the session id and start states."""
    return {
        "session_id": ctx.session_id,
        "states": {name: s.to_json() for name, s in ctx.start_states.items()},
    }


def _warn_nested_store(ldd_dir: Path, rootpath: Path) -> None:
    """Warn before a session makes a new ``.ldd`` folder below an existing one.

    Without a pytest config file, pytest's rootdir is the folder pytest was run
    from: run from a subfolder, a project would start a second, empty store.
    """
    if ldd_dir.exists():
        return
    for parent in ldd_dir.resolve().parent.parents:
        above = parent / ".ldd"
        if (above / "metrics.json").is_file():
            from pytest_ldd.errors import LddWarning

            warnings.warn(
                LddWarning(
                    f"pytest-ldd creates a new store {ldd_dir} below the store {above}: "
                    f"pytest's rootdir is {rootpath}. Run pytest from the project folder, "
                    "give the project a pytest config (e.g. [tool.pytest.ini_options] in "
                    "pyproject.toml), or pass --ldd-dir=... to use the existing store"
                ),
                stacklevel=2,
            )
            return
