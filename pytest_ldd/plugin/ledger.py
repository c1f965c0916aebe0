"""The session's single writer: the :class:`SessionLedger` consumes every test's payload.

In the process that owns the store (the only process of a serial run, the controller
under xdist) the ledger writes each payload's log lines as they are, counts what each
metric was touched by, and at the end of the session adds the corpus pairs,
re-evaluates the touched metrics' states (promotion, demotion), checks the corpus
gates and builds the session document (``docs/report.md``).  Pure: no pytest import.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from pytest_ldd.errors import LddError, UnknownMetricError
from pytest_ldd.model.corpus import CORPUS_METRICS, HUGE_COST, SESSION_KEY
from pytest_ldd.model.gates import Bound, format_value
from pytest_ldd.model.records import encode_line, utc_timestamp
from pytest_ldd.plugin.payload import Payload
from pytest_ldd.plugin.recorder import fmt_mae, state_name

if TYPE_CHECKING:
    from pytest_ldd.agents.corpus import CorpusTally
    from pytest_ldd.model.statistics import MetricState
    from pytest_ldd.plugin.recorder import RunContext

__all__ = ["SessionLedger", "corpus_section"]

_NOTHING: Final[Mapping[str, Any]] = MappingProxyType({})


def _json_number(value: float) -> float | None:
    return value if math.isfinite(value) else None


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
        self.started_at = started_at or utc_timestamp()
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
        #: Pairs, observations and unreadable reports not written after an error.
        self.unrecorded = [0, 0, 0]

    def consume(self, payload: Payload | str | Mapping[str, Any]) -> None:
        """Write one payload (recording) and count it; called once per payload.

        ``payload`` comes from :meth:`TestRecorder.take_payload`, or from an xdist
        worker as :meth:`Payload.encode`'s text (or :meth:`Payload.to_wire`'s dict).
        """
        if not isinstance(payload, Payload):
            payload = Payload.decode(payload)
        ctx = self.ctx
        for spec_json in (payload.specs or _NOTHING).values():
            # Keyed by the whole spec: a worker may declare a higher version of a
            # metric the controller already knows (a version bump on a marker).
            key = json.dumps(spec_json, sort_keys=True)
            if key not in self._known_specs:
                from pytest_ldd.model.metric import MetricSpec

                ctx.registry.register(MetricSpec.from_json(spec_json, source="test report"))
                self._known_specs.add(key)
        observations, pairs = payload.observations, payload.pairs
        if ctx.recording and (observations or pairs):
            # The lines were built and validated by the test's own recorder (here or in
            # an xdist worker); they are written as they are, under one lock.
            ctx.calibrator.append_lines(observations, pairs, payload.errors)
        touched = self.touched
        for name, (observed, paired) in payload.counts.items():
            touch = touched.get(name) or self._touch(name)
            touch.observations += observed
            touch.pairs += paired
            self.observations += observed
            self.pairs += paired
        for breach in payload.breaches or ():
            self._touch(breach.metric).breaches.append(breach.to_json())
        for name, limits in (payload.gates or _NOTHING).items():
            self._touch(name).gates.update(limits)
        for name, key, value in payload.history or ():
            self.history.setdefault((name, key), []).append(float(value))
        part = payload.episodes
        if part is not None:
            if self._tally is None:
                self._tally = part
            else:
                self._tally.merge(part)

    def count_unrecorded(self, payload: Payload | str | Mapping[str, Any]) -> None:
        """Count a payload that is not written (the session stopped recording after an
        error): :meth:`unrecorded_text` says how much, so nothing goes silently."""
        if not isinstance(payload, Payload):
            try:
                payload = Payload.decode(payload)
            except LddError:
                self.unrecorded[2] += 1
                return
        self.unrecorded[0] += len(payload.pairs)
        self.unrecorded[1] += len(payload.observations)

    def unrecorded_text(self) -> str:
        """``""``, or what :meth:`count_unrecorded` counted, as a clause of a message."""
        pairs, observations, unreadable = self.unrecorded
        if not (pairs or observations or unreadable):
            return ""
        text = f"; {pairs} pairs and {observations} observations of later tests were not recorded"
        return text + (f" ({unreadable} reports unreadable)" if unreadable else "")

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
                # Through the buffered path: a store out of reach keeps them with the
                # session's other unsaved lines (Store.take_unsaved).
                ctx.calibrator.append_lines(
                    [],
                    [encode_line(p.to_json()) for p in pairs],
                    [(p.metric_name, p.metric_version, p.error) for p in pairs],
                )
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
                        "state": state_name(state),
                        "enforced": enforced,
                        "breached": breached,
                    }
                )
                if breached and enforced:
                    assert state is not None
                    message = (
                        f"ldd corpus gate failed: {name} = {format_value(value)}, "
                        f"limit {bound} (load-bearing: n={state.n}, MAE={fmt_mae(state.mae)})"
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
                    "state_before": state_name(before),
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
            "ended_at": utc_timestamp(),
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
                "inconclusive": (self.corpus.get("task_success") or {}).get("inconclusive", 0),
            },
            "metrics": metrics,
            "state_changes": [
                {"name": name, "before": state_name(before), "after": after.state}
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
        "inconclusive": figures["inconclusive"],
        "success_rate": figures["success_rate"],
        "interval": figures["success_interval"],
        "total_dollars": figures["total_dollars"],
        "cost_per_success": _finite_or_none(figures["cost_per_success"]),
    }


def corpus_section(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The ``corpus`` part of the session document, from a tally summary.

    ``task_success.inconclusive`` counts the episodes no figure includes (their
    checker could not grade them); ``confinement`` (when hidden tests graded some
    episode) how many verdicts there were and how many ran unconfined.
    """
    section: dict[str, Any] = {
        "task_success": {
            "n": summary["n"],
            "successes": summary["successes"],
            "inconclusive": summary["inconclusive"],
            "success_rate": summary["success_rate"],
            "interval": summary["success_interval"],
            "tasks": summary["tasks"],
        },
    }
    if summary["verdicts"]:
        section["confinement"] = {
            "verdicts": summary["verdicts"],
            "unconfined": summary["unconfined"],
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
