"""What one test records: the process's :class:`RunContext` and a test's :class:`TestRecorder`.

This module is pure (no pytest import).  The plugin creates one :class:`RunContext`
per process and session, and one :class:`TestRecorder` per test item.  A recorder
validates each observed value against its metric, builds the log lines while the
value is at hand (only a recording session keeps them), predicts from the test's
history where a marker asks for it, checks the gate bounds and grades episodes.  It
hands what it recorded over as a :class:`~pytest_ldd.plugin.payload.Payload`, which
the session's ledger consumes (:mod:`pytest_ldd.plugin.ledger`), in this process or,
under xdist, in the controller: both record exactly the same data.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from pytest_ldd.errors import UnknownMetricError
from pytest_ldd.model.corpus import CORPUS_METRICS, corpus_metric
from pytest_ldd.model.gates import Bound, Breach, format_value
from pytest_ldd.model.records import (
    line_head,
    line_tail,
    number_text,
    observation_text,
    pair_text,
    raw_text,
    utc_timestamp,
)
from pytest_ldd.plugin.payload import Checkpoint, Payload

if TYPE_CHECKING:
    from pytest_ldd.calibration.calibrator import Calibrator
    from pytest_ldd.calibration.registry import MetricRegistry
    from pytest_ldd.config import LddConfig
    from pytest_ldd.model.metric import MetricSpec
    from pytest_ldd.model.statistics import MetricState

__all__ = [
    "RunContext",
    "TestRecorder",
    "gate_message",
    "nearer_declaration",
    "new_session_id",
    "unknown_metric_message",
]

_NOTHING: Final[Mapping[str, Any]] = MappingProxyType({})


def new_session_id() -> str:
    """A sortable, unique session id: ``20261201T083000Z-3f2a9c``."""
    return utc_timestamp().replace("-", "").replace(":", "") + "-" + secrets.token_hex(3)


def unknown_metric_message(name: str) -> str:
    """The failure text for logging a metric nobody declared.

    The name was never validated (nobody declared it): it is shown escaped, so a
    control character in it neither steers the terminal nor forges a line.
    """
    from pytest_ldd.report.terminal import printable

    return (
        f"unknown metric {name!r}: declare it with @pytest.mark.metric(...) "
        f"or [tool.ldd.metrics.{printable(str(name))}]"
    )


def nearer_declaration(name: str, test_path: Path, rootdir: Path, shown_from: Path) -> str:
    """What to add to "unknown metric" when a project nearer the test declares it ('' if none)."""
    from pytest_ldd.config import declaring_project

    found = declaring_project(name, test_path, rootdir)
    if found is None:
        return ""
    try:
        project = os.path.relpath(found.parent, shown_from)
    except ValueError:  # another drive
        project = str(found.parent)
    return (
        f"; {os.path.join(project, found.name)} declares it, but this session reads the "
        f"[tool.ldd] of its rootdir {rootdir}, which pytest chose for every project it "
        f"was given: run each project on its own (pytest --ldd {project})"
    )


def state_name(state: MetricState | None) -> str:
    """A state's name, ``insufficient_data`` for a metric new this session."""
    return state.state if state is not None else "insufficient_data"


def fmt_mae(value: float | None) -> str:
    """An MAE as the gate messages show it (``-`` before any pair)."""
    return "-" if value is None else f"{value:.3f}"


@dataclass(slots=True)
class RunContext:
    """Everything a process needs to record tests: one per process and session."""

    registry: MetricRegistry
    calibrator: Calibrator
    config: LddConfig
    session_id: str
    recording: bool
    #: States at session start; gates are enforced from these only.
    start_states: dict[str, MetricState]
    #: Gate bounds from ``[tool.ldd.metrics.NAME]``, applied in every test.
    config_bounds: dict[str, tuple[Bound, ...]] = field(default_factory=dict)
    #: Predictors from ``[tool.ldd.metrics.NAME]``.
    config_predictors: dict[str, str] = field(default_factory=dict)
    #: The folder relative ``hidden_tests:PATH`` checkers and price files resolve against.
    base_dir: Path | None = None
    #: Whether payloads carry metric specs (xdist workers: the controller registers them).
    ship_specs: bool = False
    #: The (metric, version) specs this process's payloads have carried so far.
    shipped_specs: set[tuple[str, int]] = field(default_factory=set)
    #: The start of each (metric, version)'s log lines (see ``registry.line_head``).
    line_heads: dict[tuple[str, int], str] = field(default_factory=dict)
    #: The specs this session declares (``[tool.ldd.metrics]``, the hook, markers),
    #: with where each was declared: one metric, one spec per session.
    declared: dict[str, tuple[MetricSpec, str]] = field(default_factory=dict)
    _prices: Any = None

    def is_load_bearing(self, name: str) -> bool:
        """Whether ``name`` was load-bearing when the session started."""
        state = self.start_state(name)
        return state is not None and state.is_load_bearing

    def start_state(self, name: str) -> MetricState | None:
        """The state of ``name`` at session start (None for a metric new this session).

        A marker that declares a higher version during collection makes the metric
        new: the old version's state says nothing about the new instrument.
        """
        state = self.start_states.get(name)
        if state is None or name not in self.registry:
            return state
        if self.registry.spec(name).version != state.version:
            return None
        return state

    def prices(self) -> Any:
        """The ``[tool.ldd.agents] prices`` catalog, loaded once (None when unset)."""
        path = self.config.prices_path
        if self._prices is None and path is not None:
            from pytest_ldd.agents import load_prices

            self._prices = load_prices(path)
        return self._prices

    def history_window(self, name: str) -> int:
        """The predictor window of ``name``: its calibration window."""
        return int(self.registry.gate_for(name).window)


class TestRecorder:
    """Accumulates what one test observes; hands it over as payloads."""

    __test__ = False  # not a test class, whatever pytest's name pattern says
    __slots__ = (
        "_history",
        "_payload",
        "_tail",
        "bounds",
        "check",
        "closed",
        "ctx",
        "failures",
        "group",
        "inconclusive",
        "nodeid",
        "predictors",
    )

    def __init__(
        self,
        ctx: RunContext,
        nodeid: str,
        *,
        bounds: Mapping[str, Sequence[Bound]] | None = None,
        predictors: Mapping[str, str] | None = None,
        check: Any = None,
        group: str = "",
    ) -> None:
        self.ctx = ctx
        self.nodeid = nodeid
        # Most tests declare nothing: they share one empty mapping (a recorder is
        # made per test, so what it allocates is paid per test).
        self.bounds: Mapping[str, tuple[Bound, ...]] = (
            {k: tuple(v) for k, v in bounds.items()} if bounds else _NOTHING
        )
        self.predictors: Mapping[str, str] = dict(predictors) if predictors else _NOTHING
        self.check = check
        self.group = group or nodeid
        self.failures: list[str] = []
        #: The episodes graded inconclusive in the phase running, as ``'task': detail``.
        self.inconclusive: list[str] = []
        #: Set once the test has reported its teardown: nothing may be recorded after.
        self.closed = False
        self._history: dict[str, list[float]] | None = None
        self._tail: str | None = None
        self._payload = Payload()

    def checkpoint(self) -> Checkpoint:
        """What has been recorded so far, to :meth:`restore` later.

        Hypothesis runs one test body many times; only the last example counts,
        so each example starts from the checkpoint taken before the first.
        """
        return Checkpoint(self._payload, self._history, self.failures, self.inconclusive)

    def restore(self, checkpoint: Checkpoint) -> None:
        """Forget what was recorded since ``checkpoint`` (see :meth:`checkpoint`)."""
        checkpoint.restore(self._payload)
        history = checkpoint.history
        self._history = None if history is None else {k: list(v) for k, v in history.items()}
        self.failures = list(checkpoint.failures)
        self.inconclusive = list(checkpoint.inconclusive)

    # -- observing ---------------------------------------------------------------

    def observe(self, name: str, observed: Any, predicted: Any = None) -> list[Breach]:
        """Validate and record one observation; returns the breaches it caused.

        Raises :class:`UnknownMetricError` or :class:`InvalidObservationError`;
        the plugin turns them into a failure of the test.
        """
        ctx = self.ctx
        payload = self._payload
        try:
            metric = ctx.registry.get(name)
        except UnknownMetricError:
            raise UnknownMetricError(unknown_metric_message(name), name=name) from None
        spec = metric.spec
        normalized = metric.normalize(observed, field="observed")
        raw_value = observed if type(observed) is float else _raw_number(observed, normalized)
        predictor = self.predictors.get(name) or ctx.config_predictors.get(name)
        if predicted is None and predictor == "history_mean":
            history = self._history_for(name)
            from pytest_ldd.model.estimator import MeanHistoryEstimator

            guess = MeanHistoryEstimator(window=ctx.history_window(name)).predict(history)
            predicted = guess.value
        guessed = None if predicted is None else metric.normalize(predicted, field="predicted")
        if ctx.recording:
            # The log lines, as text: only a recording session writes them.
            head = ctx.line_heads.get((name, spec.version))
            if head is None:
                head = ctx.line_heads[name, spec.version] = line_head(name, spec.version)
            tail = self._tail
            if tail is None:
                tail = self._tail = line_tail(ctx.session_id, self.nodeid)
            stamp = utc_timestamp()
            raw = raw_text(observed)
            # A float in range normalizes to itself, and is encoded once.
            value = raw if normalized is observed else number_text(normalized)
            line = observation_text(head, raw, value, stamp, tail)
            if guessed is None:
                payload.observations.append(line)
            else:
                raw_guess = raw_text(predicted)
                shown = raw_guess if guessed is predicted else number_text(guessed)
                pair = pair_text(head, shown, value, raw_guess, raw, stamp, tail)
                # Everything validated: only now does anything count.
                payload.observations.append(line)
                payload.pairs.append(pair)
                payload.errors.append((name, spec.version, abs(guessed - normalized)))
        counts = payload.counts.get(name)
        if counts is None:
            counts = payload.counts[name] = [0, 0]
        counts[0] += 1
        if guessed is not None:
            counts[1] += 1
        if ctx.ship_specs:
            self._ship_spec(name, spec)
        if predictor == "history_mean":
            self._history_for(name).append(raw_value)
            if payload.history is None:
                payload.history = []
            payload.history.append((name, self.nodeid, raw_value))
        if name in self.bounds or name in ctx.config_bounds:
            return self._check_gates(name, raw_value, spec.unit)
        return []

    def _ship_spec(self, name: str, spec: MetricSpec) -> None:
        # Only an xdist worker's payloads must carry specs: in a serial run the ledger
        # shares this registry and knows every metric already.  Once per worker and
        # spec version: a worker's reports reach the controller in order.
        ctx = self.ctx
        if not ctx.ship_specs or (name, spec.version) in ctx.shipped_specs:
            return
        payload = self._payload
        if payload.specs is None:
            payload.specs = {}
        payload.specs[name] = spec.to_json()
        ctx.shipped_specs.add((name, spec.version))

    def _history_for(self, name: str) -> list[float]:
        if self._history is None:
            self._history = {}
        if name not in self._history:
            self._history[name] = list(self.ctx.registry.history(name, self.nodeid))
        return self._history[name]

    def _add_breach(self, breach: Breach) -> None:
        payload = self._payload
        if payload.breaches is None:
            payload.breaches = []
        payload.breaches.append(breach)

    def _check_gates(self, name: str, value: float, unit: str) -> list[Breach]:
        bounds = self.bounds.get(name, ()) + self.ctx.config_bounds.get(name, ())
        gates = self._payload.gates
        if gates is None:
            gates = self._payload.gates = {}
        if bounds and name not in gates:
            gates[name] = [str(b) for b in bounds]
        found = []
        for bound in bounds:
            if bound.holds(value):
                continue
            enforced = self.ctx.is_load_bearing(name)
            message = gate_message(name, value, unit, bound, self.ctx.start_state(name))
            breach = Breach(name, value, str(bound), enforced, message, self.nodeid)
            found.append(breach)
            self._add_breach(breach)
            if enforced:
                self.failures.append(message)
        return found

    def gate_breach(self, name: str, detail: str) -> Breach:
        """Record a failed assertion inside ``ldd.gate(name)``."""
        enforced = self.ctx.is_load_bearing(name)
        state = self.ctx.start_state(name)
        if enforced:
            assert state is not None
            message = (
                f"ldd gate failed: {name}: {detail} "
                f"(load-bearing: n={state.n}, MAE={fmt_mae(state.mae)})"
            )
        else:
            n = state.n if state is not None else 0
            mae = state.mae if state is not None else None
            message = (
                f"ldd advisory breach: {name}: {detail} "
                f"(advisory: {state_name(state)}, n={n}, MAE={fmt_mae(mae)})"
            )
        breach = Breach(name, None, "assertion", enforced, message, self.nodeid, detail)
        self._add_breach(breach)
        metric = self.ctx.registry.get(name)
        self._ship_spec(name, metric.spec)
        return breach

    # -- episodes ----------------------------------------------------------------

    def episode(self, episode: Any, gold: Any = None) -> tuple[dict[str, Any], list[Breach]]:
        """Grade one agent episode, observe its success and dollars.

        Returns the scores by metric name and the breaches the observations caused.
        An episode the checker could not grade (inconclusive) is observed by no
        metric: its scores say ``inconclusive`` and the tally counts it apart.
        """
        from pytest_ldd.agents import Score
        from pytest_ldd.agents.corpus import CorpusTally, grade

        check = self.check or self.ctx.config.agents.check
        if check is None:
            check = "recorded" if gold is None else "output"
        graded = grade(
            episode,
            gold,
            check=check,
            prices=self.ctx.prices(),
            model=self.ctx.config.agents.model,
            base_dir=self.ctx.base_dir,
            isolation=self.ctx.config.agents.isolation,
        )
        self._declare_corpus_metrics()
        doubt = graded.inconclusive
        breaches = [] if doubt else self.observe("task_success", 1.0 if graded.success else 0.0)
        scores = {
            "task_success": Score(
                1.0 if graded.success else 0.0, graded.detail, True, inconclusive=doubt
            ),
        }
        if graded.dollars is not None:
            if not doubt:
                breaches += self.observe("cost_per_success", graded.dollars)
            scores["cost_per_success"] = Score(
                graded.dollars, graded.detail, False, inconclusive=doubt
            )
        payload = self._payload
        if payload.episodes is None:
            payload.episodes = CorpusTally()
        payload.episodes.add(
            task_id=str(episode.task_id),
            success=graded.success,
            dollars=graded.dollars,
            group=self.group,
            inconclusive=doubt,
            confinement=graded.confinement,
        )
        if doubt:
            self.inconclusive.append(f"{episode.task_id!r}: {graded.detail}")
        return scores, breaches

    def _declare_corpus_metrics(self) -> None:
        """Declare the corpus metrics the first time an episode is graded."""
        registry = self.ctx.registry
        for name in CORPUS_METRICS:
            if name not in registry:
                registry.register(corpus_metric(name))

    # -- hand-over ---------------------------------------------------------------

    def take_payload(self) -> Payload | None:
        """What was recorded since the last call (None if nothing)."""
        payload = self._payload
        if not payload:
            return None
        self._payload = Payload()
        return payload


def _raw_number(observed: Any, normalized: float) -> float:
    """The raw value gates compare: the number itself, or the rate of a pair."""
    if isinstance(observed, (int, float)) and not isinstance(observed, bool):
        # The metric refused ints beyond float range before this (InvalidObservationError).
        return float(observed)
    return normalized


def gate_message(
    name: str, value: float, unit: str, bound: Bound, state: MetricState | None
) -> str:
    """``ldd gate failed: latency_p99 = 512 ms, limit le 500 (load-bearing: n=12, MAE=0.041)``."""
    from pytest_ldd.report.terminal import printable

    # The unit comes from the store or the config: it never steers the terminal.
    shown = format_value(value) + ("" if unit in ("", "dimensionless") else f" {printable(unit)}")
    if state is not None and state.is_load_bearing:
        return (
            f"ldd gate failed: {name} = {shown}, limit {bound} "
            f"(load-bearing: n={state.n}, MAE={fmt_mae(state.mae)})"
        )
    n = state.n if state is not None else 0
    return (
        f"ldd advisory breach: {name} = {shown}, limit {bound} "
        f"(advisory: {state_name(state)}, n={n}, MAE={fmt_mae(state.mae if state else None)})"
    )


