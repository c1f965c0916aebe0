"""What one pytest session records: per-test accumulation and the session ledger.

This module is pure (no pytest import).  ``plugin.py`` creates one
:class:`RunContext` per process, one :class:`TestRecorder` per test item, and,
in the process that owns the ``.ldd/`` folder (the only process under
``pytest -p no:xdist``, the controller under xdist), one :class:`SessionLedger`.

A test's recorder hands its work over as a JSON-able *payload* attached to the
test's reports; the ledger consumes payloads.  The same path serves serial runs
and xdist, so both record exactly the same data.
"""

from __future__ import annotations

import json
import math
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from pytest_ldd.errors import InvalidObservationError, UnknownMetricError
from pytest_ldd.model.corpus import CORPUS_METRICS, HUGE_COST, SESSION_KEY, corpus_metric
from pytest_ldd.model.gates import Bound, format_value
from pytest_ldd.model.records import (
    line_head,
    line_tail,
    number_text,
    observation_text,
    pair_text,
    raw_text,
    utc_timestamp,
)

if TYPE_CHECKING:
    from pytest_ldd.agents.corpus import CorpusTally
    from pytest_ldd.calibration.calibrator import Calibrator
    from pytest_ldd.calibration.registry import MetricRegistry
    from pytest_ldd.config import LddConfig
    from pytest_ldd.model.metric import MetricSpec
    from pytest_ldd.model.statistics import MetricState

__all__ = [
    "Breach",
    "RunContext",
    "SessionLedger",
    "TestRecorder",
    "new_session_id",
    "utc_now",
]


def utc_now() -> str:
    """The current UTC time as ``YYYY-MM-DDTHH:MM:SSZ``."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def new_session_id() -> str:
    """A sortable, unique session id: ``20261201T083000Z-3f2a9c``."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(3)


def unknown_metric_message(name: str) -> str:
    """The failure text for logging a metric nobody declared."""
    return (
        f"unknown metric {name!r}: declare it with @pytest.mark.metric(...) "
        f"or [tool.ldd.metrics.{name}]"
    )


@dataclass(frozen=True, slots=True)
class Breach:
    """One observed value outside one of its gate bounds."""

    metric: str
    value: float | None
    #: ``"le 500"`` for a bound, ``"assertion"`` for an ``ldd.gate()`` block.
    limit: str
    enforced: bool
    message: str
    nodeid: str
    #: The failed assertion of an ``ldd.gate()`` block (None for a bound).
    detail: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON form carried in payloads and reports."""
        return {
            "metric": self.metric,
            "value": None if self.value is None else _json_number(self.value),
            "limit": self.limit,
            "enforced": self.enforced,
            "message": self.message,
            "nodeid": self.nodeid,
            "detail": self.detail,
        }


def _json_number(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _state_name(state: MetricState | None) -> str:
    return state.state if state is not None else "insufficient_data"


def _fmt_mae(value: float | None) -> str:
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
        "_breaches",
        "_counts",
        "_errors",
        "_gates",
        "_history",
        "_history_out",
        "_observations",
        "_pairs",
        "_specs",
        "_tail",
        "_tally",
        "bounds",
        "check",
        "closed",
        "ctx",
        "failures",
        "group",
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
        #: Set once the test has reported its teardown: nothing may be recorded after.
        self.closed = False
        self._history: dict[str, list[float]] | None = None
        self._tail: str | None = None
        self._reset()

    def _reset(self) -> None:
        self._counts: dict[str, list[int]] = {}
        self._observations: list[str] = []
        self._pairs: list[str] = []
        self._errors: list[tuple[str, int, float]] = []
        # Created when first needed.
        self._breaches: list[Breach] | None = None
        self._history_out: list[list[Any]] | None = None
        self._specs: dict[str, dict[str, Any]] | None = None
        self._gates: dict[str, list[str]] | None = None
        self._tally: CorpusTally | None = None

    def checkpoint(self) -> tuple[Any, ...]:
        """What has been recorded so far, to :meth:`restore` later.

        Hypothesis runs one test body many times; only the last example counts,
        so each example starts from the checkpoint taken before the first.
        """
        return (
            {name: list(counts) for name, counts in self._counts.items()},
            list(self._observations),
            list(self._pairs),
            list(self._errors),
            None if self._breaches is None else list(self._breaches),
            None if self._history_out is None else list(self._history_out),
            None if self._gates is None else {k: list(v) for k, v in self._gates.items()},
            None if self._history is None else {k: list(v) for k, v in self._history.items()},
            list(self.failures),
            self._tally is None,
        )

    def restore(self, checkpoint: tuple[Any, ...]) -> None:
        """Forget what was recorded since ``checkpoint`` (see :meth:`checkpoint`)."""
        counts, observations, pairs, errors, breaches, history_out, gates, history = checkpoint[:8]
        self._counts = {name: list(c) for name, c in counts.items()}
        self._observations = list(observations)
        self._pairs = list(pairs)
        self._errors = list(errors)
        self._breaches = None if breaches is None else list(breaches)
        self._history_out = None if history_out is None else list(history_out)
        self._gates = None if gates is None else {k: list(v) for k, v in gates.items()}
        self._history = None if history is None else {k: list(v) for k, v in history.items()}
        self.failures = list(checkpoint[8])
        if checkpoint[9]:
            # Episodes graded by an earlier example; a checkpoint taken after an
            # episode keeps the tally as it is now (one test, one tally).
            self._tally = None

    # -- observing ---------------------------------------------------------------

    def observe(self, name: str, observed: Any, predicted: Any = None) -> list[Breach]:
        """Validate and record one observation; returns the breaches it caused.

        Raises :class:`UnknownMetricError` or :class:`InvalidObservationError`;
        the plugin turns them into a failure of the test.
        """
        ctx = self.ctx
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
                self._observations.append(line)
            else:
                raw_guess = raw_text(predicted)
                shown = raw_guess if guessed is predicted else number_text(guessed)
                pair = pair_text(head, shown, value, raw_guess, raw, stamp, tail)
                # Everything validated: only now does anything count.
                self._observations.append(line)
                self._pairs.append(pair)
                self._errors.append((name, spec.version, abs(guessed - normalized)))
        counts = self._counts.get(name)
        if counts is None:
            counts = self._counts[name] = [0, 0]
        counts[0] += 1
        if guessed is not None:
            counts[1] += 1
        if ctx.ship_specs:
            self._ship_spec(name, spec)
        if predictor == "history_mean":
            self._history_for(name).append(raw_value)
            if self._history_out is None:
                self._history_out = []
            self._history_out.append([name, self.nodeid, raw_value])
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
        if self._specs is None:
            self._specs = {}
        self._specs[name] = spec.to_json()
        ctx.shipped_specs.add((name, spec.version))

    def _history_for(self, name: str) -> list[float]:
        if self._history is None:
            self._history = {}
        if name not in self._history:
            self._history[name] = list(self.ctx.registry.history(name, self.nodeid))
        return self._history[name]

    def _add_breach(self, breach: Breach) -> None:
        if self._breaches is None:
            self._breaches = []
        self._breaches.append(breach)

    def _check_gates(self, name: str, value: float, unit: str) -> list[Breach]:
        bounds = self.bounds.get(name, ()) + self.ctx.config_bounds.get(name, ())
        if self._gates is None:
            self._gates = {}
        if bounds and name not in self._gates:
            self._gates[name] = [str(b) for b in bounds]
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
                f"(load-bearing: n={state.n}, MAE={_fmt_mae(state.mae)})"
            )
        else:
            n = state.n if state is not None else 0
            mae = state.mae if state is not None else None
            message = (
                f"ldd advisory breach: {name}: {detail} "
                f"(advisory: {_state_name(state)}, n={n}, MAE={_fmt_mae(mae)})"
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
        breaches = self.observe("task_success", 1.0 if graded.success else 0.0)
        scores = {
            "task_success": Score(1.0 if graded.success else 0.0, graded.detail, True),
        }
        if graded.dollars is not None:
            breaches += self.observe("cost_per_success", graded.dollars)
            scores["cost_per_success"] = Score(graded.dollars, graded.detail, False)
        if self._tally is None:
            self._tally = CorpusTally()
        self._tally.add(
            task_id=str(episode.task_id),
            success=graded.success,
            dollars=graded.dollars,
            group=self.group,
        )
        return scores, breaches

    def _declare_corpus_metrics(self) -> None:
        """Declare the corpus metrics the first time an episode is graded."""
        registry = self.ctx.registry
        for name in CORPUS_METRICS:
            if name not in registry:
                registry.register(corpus_metric(name))

    # -- hand-over ---------------------------------------------------------------

    def take_payload(self) -> dict[str, Any] | None:
        """What was recorded since the last call, as JSON-able data (None if nothing).

        ``counts`` maps each metric to its [observations, pairs]; when recording,
        ``observations`` and ``pairs`` hold the log lines as JSON text and
        ``errors`` one ``[name, version, |predicted - observed|]`` per pair.
        """
        if not (self._counts or self._breaches or self._tally is not None):
            return None
        # Only what is there: the ledger reads every key with a default.
        payload: dict[str, Any] = {"counts": self._counts}
        if self._observations:
            payload["observations"] = self._observations
            payload["pairs"] = self._pairs
            payload["errors"] = self._errors
        if self._specs:
            payload["specs"] = list(self._specs.values())
        if self._breaches:
            payload["breaches"] = [b.to_json() for b in self._breaches]
        if self._history_out:
            payload["history"] = self._history_out
        if self._gates:
            payload["gates"] = self._gates
        if self._tally is not None:
            payload["episodes"] = self._tally.to_dict()
        self._reset()
        return payload


_NOTHING: Mapping[str, Any] = MappingProxyType({})


# allow_nan: a raw value may be infinite (a positive metric's +inf); the text goes
# from one pytest-ldd process to another, whose json module reads it back.
_ENCODE_HEAD = json.JSONEncoder(separators=(",", ":"), allow_nan=True).encode


def payload_text(payload: Mapping[str, Any]) -> str:
    """A payload as one string, for the trip from an xdist worker to the controller.

    The first line is the payload without its log lines, as JSON, with
    ``"lines": [observations, pairs]``; the log lines follow as they are, one per
    line (JSON text holds no raw newline).  One string costs execnet one object,
    and the lines are neither escaped nor parsed on the way.  :meth:`SessionLedger.
    consume` reads it back.  Raises ``ValueError`` or ``TypeError`` for a payload
    that JSON cannot hold.
    """
    observations = payload.get("observations", ())
    pairs = payload.get("pairs", ())
    head = {k: v for k, v in payload.items() if k != "observations" and k != "pairs"}
    head["lines"] = [len(observations), len(pairs)]
    return "\n".join([_ENCODE_HEAD(head), *observations, *pairs])


def _parse_payload(text: str) -> Mapping[str, Any]:
    """A worker's payload (see :func:`payload_text`), checked enough that nothing
    malformed reaches the logs."""
    what = "a test report carries a pytest-ldd payload"
    first, _, rest = text.partition("\n")
    try:
        payload = json.loads(first)
    except ValueError as err:
        msg = f"{what} that is not valid JSON ({err})"
        raise InvalidObservationError(msg) from None
    if not isinstance(payload, dict):
        msg = f"{what} that is not an object ({text:.60})"
        raise InvalidObservationError(msg)
    sizes = payload.pop("lines", [0, 0])
    lines = rest.split("\n") if rest else []
    if (
        not isinstance(sizes, list)
        or len(sizes) != 2
        or not all(type(n) is int and n >= 0 for n in sizes)
        or sizes[0] + sizes[1] != len(lines)
    ):
        problem: str | None = f"'lines' says {sizes!r} but {len(lines)} lines follow"
    else:
        payload["observations"] = lines[: sizes[0]]
        payload["pairs"] = lines[sizes[0] :]
        problem = _payload_problem(payload)
    if problem is not None:
        # Only a worker running another version of pytest-ldd sends such a thing.
        msg = f"{what} of another shape: {problem} (is every worker on the same version?)"
        raise InvalidObservationError(msg)
    return payload


def _payload_problem(payload: Mapping[str, Any]) -> str | None:
    counts = payload.get("counts", {})
    if not isinstance(counts, dict) or not all(
        isinstance(name, str)
        and isinstance(pair, list)
        and len(pair) == 2
        and all(type(n) is int for n in pair)
        for name, pair in counts.items()
    ):
        return f"'counts' must map metric names to [observations, pairs] (got {counts!r:.80})"
    for key in ("observations", "pairs"):
        # Split on newlines, so one line each; a JSON object each, as far as cheaply told.
        lines = payload[key]
        if not all(line[:1] == "{" and line[-1:] == "}" for line in lines):
            return f"{key!r} must be JSON objects, one per line (got {lines!r:.80})"
    errors = payload.get("errors", [])
    if not isinstance(errors, list) or not all(
        isinstance(e, list)
        and len(e) == 3
        and isinstance(e[0], str)
        and type(e[1]) is int
        and isinstance(e[2], float)
        for e in errors
    ):
        return f"'errors' must be a list of [metric, version, error] (got {errors!r:.80})"
    shapes: dict[str, tuple[type, Any]] = {
        "specs": (list, lambda v: all(isinstance(s, dict) for s in v)),
        "breaches": (list, lambda v: all(isinstance(b, dict) and "metric" in b for b in v)),
        "gates": (dict, lambda v: all(isinstance(g, list) for g in v.values())),
        "history": (list, lambda v: all(isinstance(h, list) and len(h) == 3 for h in v)),
        "episodes": (dict, lambda v: True),
    }
    for key, (kind, check) in shapes.items():
        value = payload.get(key)
        if value is not None and not (isinstance(value, kind) and check(value)):
            return f"{key!r} is malformed (got {value!r:.80})"
    return None


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
            f"(load-bearing: n={state.n}, MAE={_fmt_mae(state.mae)})"
        )
    n = state.n if state is not None else 0
    return (
        f"ldd advisory breach: {name} = {shown}, limit {bound} "
        f"(advisory: {_state_name(state)}, n={n}, MAE={_fmt_mae(state.mae if state else None)})"
    )


@dataclass(slots=True)
class _MetricTouch:
    observations: int = 0
    pairs: int = 0
    breaches: list[dict[str, Any]] = field(default_factory=list)
    gates: set[str] = field(default_factory=set)


class SessionLedger:
    """The single writer of a session: consumes payloads, ends the session."""

    def __init__(self, ctx: RunContext, *, started_at: str | None = None) -> None:
        self.ctx = ctx
        self.started_at = started_at or utc_now()
        self.touched: dict[str, _MetricTouch] = {}
        self.history: dict[tuple[str, str], list[float]] = {}
        self.tests = 0
        self.observations = 0
        self.pairs = 0
        self._tally: CorpusTally | None = None
        self._known_specs: set[str] = set()
        self.state_changes: list[tuple[str, MetricState | None, MetricState]] = []
        self.corpus: dict[str, Any] = {}
        self.corpus_failures: list[str] = []

    def consume(self, payload: Mapping[str, Any] | str) -> None:
        """Write one payload (recording) and count it; called once per payload.

        ``payload`` is the dict of :meth:`TestRecorder.take_payload`, or that dict
        as JSON text (how xdist workers send it).
        """
        if isinstance(payload, str):
            payload = _parse_payload(payload)
        ctx = self.ctx
        get = payload.get
        for spec_json in get("specs", ()):
            # Keyed by the whole spec: a worker may declare a higher version of a
            # metric the controller already knows (a version bump on a marker).
            key = json.dumps(spec_json, sort_keys=True)
            if key not in self._known_specs:
                from pytest_ldd.model.metric import MetricSpec

                ctx.registry.register(MetricSpec.from_json(spec_json, source="test report"))
                self._known_specs.add(key)
        observations = get("observations", ())
        pairs = get("pairs", ())
        if ctx.recording and (observations or pairs):
            # The lines were built and validated by the test's own recorder (here or in
            # an xdist worker); they are written as they are, under one lock.
            ctx.calibrator.append_lines(observations, pairs, get("errors", ()))
        touched = self.touched
        for name, (observed, paired) in get("counts", _NOTHING).items():
            touch = touched.get(name) or self._touch(name)
            touch.observations += observed
            touch.pairs += paired
            self.observations += observed
            self.pairs += paired
        for b in get("breaches", ()):
            self._touch(b["metric"]).breaches.append(dict(b))
        for name, limits in get("gates", _NOTHING).items():
            self._touch(name).gates.update(limits)
        for name, key, value in get("history", ()):
            self.history.setdefault((name, key), []).append(float(value))
        episodes = get("episodes")
        if episodes is not None:
            from pytest_ldd.agents.corpus import CorpusTally

            part = CorpusTally.from_dict(episodes)
            if self._tally is None:
                self._tally = part
            else:
                self._tally.merge(part)

    def _touch(self, name: str) -> _MetricTouch:
        if name not in self.touched:
            self.touched[name] = _MetricTouch()
        return self.touched[name]

    def count_test(self) -> None:
        """One more test finished."""
        self.tests += 1

    # -- session end ---------------------------------------------------------------

    def finish(self, corpus_gates: Mapping[str, Sequence[Bound]] | None = None) -> None:
        """Corpus pairs, state re-evaluation, the corpus gates; writes when recording."""
        ctx = self.ctx
        corpus_gates = corpus_gates or {}
        if self._tally is not None:
            from pytest_ldd.model.estimator import MeanHistoryEstimator

            summary = self._tally.summary()
            aggregates = self._tally.aggregates()
            self.corpus = corpus_section(summary)
            pairs = []
            for name in CORPUS_METRICS:
                value = aggregates.get(name)
                if value is None or name not in ctx.registry:
                    continue
                touch = self._touch(name)
                past = list(ctx.registry.history(name, SESSION_KEY))
                guess = MeanHistoryEstimator(window=ctx.history_window(name)).predict(past)
                if guess.value is not None:
                    pairs.append(
                        ctx.calibrator.make_record(
                            name, guess.value, value, session_id=ctx.session_id, nodeid=None
                        )
                    )
                    touch.pairs += 1
                    self.pairs += 1
                # JSON has no infinity: a session where nothing succeeded is remembered
                # as a huge finite cost, which normalizes to 1.0 all the same.
                remembered = min(value, HUGE_COST)
                self.history.setdefault((name, SESSION_KEY), []).append(remembered)
            if ctx.recording and pairs:
                ctx.calibrator.log_many(pairs)
            self.corpus["gates"] = self._corpus_gates(aggregates, corpus_gates)
        if ctx.recording:
            # The pairs reach the disk before metrics.json counts them: after a power
            # loss the statistics never point past the end of the logs.
            store = ctx.registry.store
            store.sync(["pairs", "observations"])
            before = {name: ctx.registry.state(name) for name in self.touched}
            changes = ctx.calibrator.update(list(self.touched), history=self.history)
            self.state_changes = [(name, before.get(name, old), new) for name, old, new in changes]

    def _corpus_gates(
        self, aggregates: Mapping[str, float | None], gates: Mapping[str, Sequence[Bound]]
    ) -> list[dict[str, Any]]:
        rows = []
        for name, bounds in gates.items():
            value = aggregates.get(name)
            if value is None:
                continue
            state = self.ctx.start_state(name)
            for bound in bounds:
                breached = not bound.holds(value)
                enforced = self.ctx.is_load_bearing(name)
                rows.append(
                    {
                        "name": name,
                        "op": bound.op,
                        "limit": bound.limit,
                        "value": _json_number(value),
                        "state": _state_name(state),
                        "enforced": enforced,
                        "breached": breached,
                    }
                )
                if breached and enforced:
                    assert state is not None
                    message = (
                        f"ldd corpus gate failed: {name} = {format_value(value)}, "
                        f"limit {bound} (load-bearing: n={state.n}, MAE={_fmt_mae(state.mae)})"
                    )
                    rows[-1]["message"] = message
                    self.corpus_failures.append(message)
        return rows

    def document(self, *, interrupted: bool = False) -> dict[str, Any]:
        """The session document (see docs/report.md).

        ``interrupted``: the test loop stopped early (``-x``, ``--sw``, Ctrl-C).
        """
        ctx = self.ctx
        changed = {name: (before, after) for name, before, after in self.state_changes}
        metrics = []
        for name in sorted(self.touched):
            touch = self.touched[name]
            try:
                spec = ctx.registry.spec(name)
                state = ctx.registry.state(name)
                gate = ctx.registry.gate_for(name)
            except UnknownMetricError:
                continue
            before = ctx.start_state(name)
            after = changed[name][1] if name in changed else state
            metrics.append(
                {
                    "name": name,
                    "kind": spec.kind,
                    "unit": spec.unit,
                    "version": spec.version,
                    "state_before": _state_name(before),
                    "state_after": after.state,
                    "n": after.n,
                    "mae": after.mae,
                    "window_mae": after.window_mae,
                    "p95_error": after.p95_error,
                    "worst_error": after.worst_error,
                    "max_mae": gate.max_mae,
                    "min_n": gate.min_n,
                    "gates": sorted(touch.gates | {b["limit"] for b in touch.breaches}),
                    "observations": touch.observations,
                    "pairs": touch.pairs,
                    "breaches": [_breach_row(b) for b in touch.breaches],
                }
            )
        breaches = [b for t in self.touched.values() for b in t.breaches]
        return {
            "schema_version": 1,
            "session_id": ctx.session_id,
            "started_at": self.started_at,
            "ended_at": utc_now(),
            "recording": ctx.recording,
            "interrupted": interrupted,
            "ldd_dir": ctx.registry.store.location,
            "counts": {
                "tests": self.tests,
                "observations": self.observations,
                "pairs": self.pairs,
                "gate_failures": sum(1 for b in breaches if b["enforced"])
                + len(self.corpus_failures),
                "advisory_breaches": sum(1 for b in breaches if not b["enforced"]),
            },
            "metrics": metrics,
            "state_changes": [
                {"name": name, "before": _state_name(before), "after": after.state}
                for name, before, after in self.state_changes
            ],
            "corpus": self.corpus,
        }


def _breach_row(breach: Mapping[str, Any]) -> dict[str, Any]:
    row = {k: breach[k] for k in ("nodeid", "value", "limit", "enforced")}
    if breach.get("detail"):
        row["message"] = breach["detail"]
    return row


def _finite_or_none(value: Any) -> float | None:
    """A JSON-safe dollar figure: None stands for infinite (nothing succeeded)."""
    if value is None or value == "inf":
        return None
    return float(value)


def _corpus_row(figures: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "n": figures["n"],
        "successes": figures["successes"],
        "success_rate": figures["success_rate"],
        "interval": figures["success_interval"],
        "total_dollars": figures["total_dollars"],
        "cost_per_success": _finite_or_none(figures["cost_per_success"]),
    }


def corpus_section(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The ``corpus`` part of the session document, from a tally summary."""
    section: dict[str, Any] = {
        "task_success": {
            "n": summary["n"],
            "successes": summary["successes"],
            "success_rate": summary["success_rate"],
            "interval": summary["success_interval"],
            "tasks": summary["tasks"],
        },
    }
    if summary["total_dollars"] is not None:
        section["cost_per_success"] = {
            "total_dollars": summary["total_dollars"],
            "pooled": _finite_or_none(summary["cost_per_success"]),
            "per_task": _finite_or_none(summary["cost_per_success_per_task"]),
        }
    section["pass_at_k"] = dict(summary["pass_at_k"])
    section["pass_hat_k"] = dict(summary["pass_hat_k"])
    section["by_test"] = {
        group: _corpus_row(figures) for group, figures in summary["groups"].items()
    }
    return section
