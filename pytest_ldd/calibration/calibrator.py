"""The calibrator: logs calibration pairs and observations, counts them, moves states.

Statistics are incremental: per metric the registry keeps the store position up
to which pairs were counted, with the running figures (an
:class:`~pytest_ldd.model.statistics.Accumulator`).  Updating asks the store only for the
pairs appended since; a full recompute (:meth:`Calibrator.recompute`, ``ldd metric
verify``) always agrees with the incremental figures.  Positions are the store's
own: the calibrator only keeps, compares and hands them back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_ldd.calibration.registry import MetricRegistry, read_only_error
from pytest_ldd.model.records import (
    CalibrationRecord,
    ObservationRecord,
    PairError,
    RawPair,
    json_raw,
    raw_error,
    utc_timestamp,
)
from pytest_ldd.model.statistics import (
    TOLERANCE,
    Accumulator,
    CalibrationGate,
    CalibrationStats,
    MetricState,
    evaluate_state,
)

if TYPE_CHECKING:
    from pytest_ldd.store import Cursor, Store

__all__ = ["Calibrator"]


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= TOLERANCE


class Calibrator:
    """Logs calibration pairs and observations; keeps statistics; moves states.

    ``gate`` is the default gate for metrics that have no gate of their own in
    the registry (else the registry's default applies).  Everything it changes in
    the registry it changes through the registry's public methods, inside the
    registry's transaction when it is to be stored.
    """

    def __init__(self, registry: MetricRegistry, gate: CalibrationGate | None = None) -> None:
        self.registry = registry
        self.gate = gate

    def __repr__(self) -> str:
        return f"Calibrator({self.registry!r})"

    @property
    def store(self) -> Store:
        """The registry's store."""
        return self.registry.store

    def gate_for(self, name: str) -> CalibrationGate:
        """The gate of ``name``: its own, else this calibrator's, else the registry's."""
        own = self.registry.own_gate(name)
        if own is not None:
            return own
        return self.gate if self.gate is not None else self.registry.gate

    # ------------------------------------------------------------------ records

    def make_record(
        self,
        name: str,
        predicted: Any,
        observed: Any,
        *,
        session_id: str | None = None,
        nodeid: str | None = None,
    ) -> CalibrationRecord:
        """Validate and normalize a raw pair; no disk access, no lock."""
        line = self.pair_line(name, predicted, observed, session_id=session_id, nodeid=nodeid)
        return CalibrationRecord(**line)

    def pair_line(
        self,
        name: str,
        predicted: Any,
        observed: Any,
        *,
        session_id: str | None = None,
        nodeid: str | None = None,
    ) -> dict[str, Any]:
        """One line of ``metric_calibrations.jsonl`` as a dict, without building a record.

        The values are validated and normalized by the metric; :meth:`make_record`
        builds its record from this line (and re-validates it), the plugin uses the
        line as it is.
        """
        metric = self.registry.get(name)
        return {
            "metric_name": metric.name,
            "metric_version": metric.spec.version,
            "predicted": metric.normalize(predicted, field="predicted"),
            "observed": metric.normalize(observed, field="observed"),
            "timestamp": utc_timestamp(),
            "raw_predicted": json_raw(predicted),
            "raw_observed": json_raw(observed),
            "session_id": session_id,
            "nodeid": nodeid,
        }

    def observation_line(
        self,
        name: str,
        raw: Any,
        *,
        session_id: str | None = None,
        nodeid: str | None = None,
    ) -> dict[str, Any]:
        """One line of ``observations.jsonl`` as a dict (see :meth:`pair_line`)."""
        metric = self.registry.get(name)
        return {
            "metric_name": metric.name,
            "metric_version": metric.spec.version,
            "raw": json_raw(raw),
            "normalized": metric.normalize(raw, field="observed"),
            "timestamp": utc_timestamp(),
            "session_id": session_id,
            "nodeid": nodeid,
        }

    def make_observation(
        self,
        name: str,
        raw: Any,
        *,
        session_id: str | None = None,
        nodeid: str | None = None,
    ) -> ObservationRecord:
        """Validate and normalize a raw observed value; no disk access, no lock."""
        return ObservationRecord(
            **self.observation_line(name, raw, session_id=session_id, nodeid=nodeid)
        )

    def log(
        self,
        name: str,
        predicted: Any,
        observed: Any,
        *,
        session_id: str | None = None,
        nodeid: str | None = None,
    ) -> CalibrationRecord:
        """Validate, normalize and append one pair; return the record written."""
        record = self.make_record(name, predicted, observed, session_id=session_id, nodeid=nodeid)
        self.log_many([record])
        return record

    def log_many(self, records: Sequence[CalibrationRecord], *, fsync: bool = False) -> None:
        """Append pairs in one locked write."""
        if self.registry.read_only:
            raise read_only_error(self.store)
        self.store.append_pairs([r.to_json() for r in records], fsync=fsync)

    def append_lines(
        self,
        observations: Sequence[str],
        pairs: Sequence[str],
        errors: Sequence[PairError],
    ) -> None:
        """Append a test's log lines, as the line builders encoded them, under one lock.

        ``observations`` and ``pairs`` are JSON texts from :func:`observation_text`
        and :func:`pair_text`; ``errors`` holds ``(name, version, |predicted -
        observed|)`` per pair, so the next statistics update counts this process's
        own pairs without reading them back.
        """
        if self.registry.read_only:
            raise read_only_error(self.store)
        self.store.append_lines(observations, pairs, errors if len(errors) == len(pairs) else None)

    def log_observations(
        self, records: Sequence[ObservationRecord], *, fsync: bool = False
    ) -> None:
        """Append observations in one locked write."""
        if self.registry.read_only:
            raise read_only_error(self.store)
        self.store.append_observations([r.to_json() for r in records], fsync=fsync)

    # ------------------------------------------------------------------ statistics

    def _catch_up(self, names: Sequence[str], gates: Mapping[str, CalibrationGate]) -> None:
        """Count the pairs appended since each metric's cursor (in memory)."""
        registry = self.registry
        for name in names:
            window = gates[name].window
            acc = registry.counted(name)
            if window > acc.keep:
                if acc.n > len(acc.recent):
                    # A wider window than was kept: recount this version once.
                    acc = self._count({name: acc.version}, acc.start, window)[name]
                    registry.set_counted(name, acc)
                acc.widen(window)
        self._scan([(name, registry.counted(name)) for name in names])

    def _count(
        self, versions: Mapping[str, int], start: Cursor, window: int
    ) -> dict[str, Accumulator]:
        """Count every pair of the given versions from ``start`` (a full recompute)."""
        accs = {name: Accumulator(v, start, start, keep=window) for name, v in versions.items()}
        self._scan(list(accs.items()), recount=True)
        return accs

    def _scan(self, accs: Sequence[tuple[str, Accumulator]], *, recount: bool = False) -> None:
        """Ask the store once for the pairs past the earliest cursor; add each pair to
        every accumulator of its metric and version whose cursor it lies at or past,
        then move the cursors to the end.  A metric may have several accumulators."""
        if not accs:
            return
        by_name: dict[str, list[Accumulator]] = {}
        for name, acc in accs:
            by_name.setdefault(name, []).append(acc)
        end: Cursor | None = None
        for begin, errors, after in self.store.read_pairs(
            [acc.cursor for _, acc in accs], recount=recount
        ):
            end = after
            if len(errors) == 1:
                name, version, error = errors[0]
                for acc in by_name.get(name, ()):
                    if version == acc.version and acc.cursor <= begin:
                        acc.add(error if type(error) is float else self._raw_error(name, error))
                continue
            # A batch of this process's own appends: one add_many per accumulator.
            found: dict[int, tuple[Accumulator, list[float]]] = {}
            for name, version, error in errors:
                for acc in by_name.get(name, ()):
                    if version == acc.version and acc.cursor <= begin:
                        value = error if type(error) is float else self._raw_error(name, error)
                        found.setdefault(id(acc), (acc, []))[1].append(value)
            for acc, batch in found.values():
                acc.add_many(batch)
        if end is not None:
            for _, acc in accs:
                if acc.cursor < end:
                    acc.cursor = end

    def _raw_error(self, name: str, error: float | RawPair) -> float:
        """The error of a pair logged as raw values, normalized with ``name``'s spec."""
        if not isinstance(error, RawPair):
            return float(error)
        metric = self.registry.get(name)
        return raw_error(error, name, metric.spec.version, metric.normalize)

    def _gates(self, names: Iterable[str]) -> dict[str, CalibrationGate]:
        return {name: self.gate_for(name) for name in names}

    def _caught_up(self, names: Sequence[str]) -> None:
        gates = self._gates(names)
        if self.registry.read_only:
            # Reading never creates the folder or the lock file.
            self._catch_up(names, gates)
            return
        # Writers lock even to read, so a pair being appended is never seen torn.
        with self.store.read_lock():
            self._catch_up(names, gates)

    def stats(self, name: str) -> CalibrationStats:
        """Current statistics of ``name``'s version, reading only what was appended since."""
        self.registry.spec(name)  # an unknown name is an UnknownMetricError
        self._caught_up([name])
        return self.registry.counted(name).stats(self.gate_for(name).window)

    def mae(self, name: str) -> float | None:
        """Mean absolute error of ``name``'s pairs: ``stats(name).mae`` (None before any pair).

        The seed's name for the drift check; a thin alias of :meth:`stats`.
        """
        return self.stats(name).mae

    def n_samples(self, name: str) -> int:
        """How many pairs of ``name``'s current version are logged: ``stats(name).n``."""
        return self.stats(name).n

    def recompute(self, name: str) -> CalibrationStats:
        """Statistics of ``name``'s version from a full re-read of the calibration log."""
        version = self.registry.spec(name).version
        window = self.gate_for(name).window
        acc = self._count({name: version}, self.store.origin(), window)[name]
        return acc.stats(window)

    def verify(self) -> list[str]:
        """Compare the incremental figures and the stored states with a full recompute.

        One read of the log serves both (a session appending meanwhile cannot make
        them disagree); each mismatch is described.  A stored state must have been
        evaluated on every counted pair, its figures must be the recomputed ones, and
        its state the one the gate gives them.
        """
        registry = self.registry
        names = registry.names()
        gates = self._gates(names)
        # The stored states against the statistics stored with them, as on disk now.
        stored = {
            name: (state, acc.stats(gates[name].window))
            for name, (spec, state, acc) in registry.stored().items()
            if name in gates and spec == registry.spec(name)
        }
        for name in names:
            window = gates[name].window
            acc = registry.counted(name)
            if window > acc.keep and acc.n > len(acc.recent):
                acc = Accumulator(acc.version, acc.start, acc.start, keep=window)
                registry.set_counted(name, acc)
            acc.widen(window)
        widest = max((g.window for g in gates.values()), default=1)
        origin = self.store.origin()
        full = {
            name: Accumulator(registry.spec(name).version, origin, origin, keep=widest)
            for name in names
        }
        counted = [(name, registry.counted(name)) for name in names]
        self._scan([*counted, *full.items()], recount=True)
        problems: list[str] = []
        for name in names:
            gate = gates[name]
            head = f"metric {name!r} version {registry.spec(name).version}"
            mine, theirs = registry.counted(name).stats(gate.window), full[name].stats(gate.window)
            for key in ("n", "mae", "p95_error", "worst_error", "window_mae"):
                a, b = getattr(mine, key), getattr(theirs, key)
                if not _same(a, b):
                    problems.append(f"{head}: stored {key} = {a!r}, full recompute {key} = {b!r}")
            if name in stored:
                problems.extend(self._state_problems(*stored[name], gate, head))
        return problems

    def _state_problems(
        self, state: MetricState, stored: CalibrationStats, gate: CalibrationGate, head: str
    ) -> list[str]:
        """How a stored state disagrees with the statistics stored with it."""
        if state.n != stored.n:
            return [
                f"{head}: state n_calibration_samples = {state.n}, but {stored.n} pairs are "
                f"counted (the state lags; an update re-evaluates it)"
            ]
        problems = []
        shown = (
            ("last_mae", state.mae, stored.mae),
            ("last_p95_error", state.p95_error, stored.p95_error),
            ("last_worst_error", state.worst_error, stored.worst_error),
            ("last_window_mae", state.window_mae, stored.window_mae),
        )
        for key, a, b in shown:
            if not _same(a, b):
                problems.append(f"{head}: state {key} = {a!r}, its counted pairs give {b!r}")
        components = self.registry.components_load_bearing(state.name)
        expected = evaluate_state(state, stored, gate, components_load_bearing=components).state
        if state.state != expected:
            problems.append(
                f"{head}: state = {state.state!r}, but the gate gives its figures {expected!r}"
            )
        return problems

    # ------------------------------------------------------------------ states

    def _evaluate(self, name: str, now: str) -> MetricState:
        """The state ``name``'s counted statistics earn under its gate."""
        registry = self.registry
        gate = self.gate_for(name)
        return evaluate_state(
            registry.state(name),
            registry.counted(name).stats(gate.window),
            gate,
            components_load_bearing=registry.components_load_bearing(name),
            now=now,
        )

    def _plan(self, names: Iterable[str] | None) -> list[tuple[str, MetricState, MetricState]]:
        """Catch up and evaluate ``names`` in memory; return (name, before, after) for all."""
        registry = self.registry
        every = registry.names()
        counted = {name: registry.counted(name).n for name in every}
        self._catch_up(every, self._gates(every))
        if names is not None:
            # A state always follows the pairs counted with it: a metric whose pairs
            # moved is re-evaluated too (its stored figures would lag otherwise).
            names = [*names, *(n for n in every if registry.counted(n).n != counted[n])]
        now = utc_timestamp()
        results = []
        for name in registry.evaluation_order(names):
            before = registry.state(name)
            registry.set_state(name, self._evaluate(name, now))
            results.append((name, before, registry.state(name)))
        return results

    def update(
        self,
        names: Iterable[str] | None = None,
        *,
        history: Mapping[tuple[str, str], Sequence[float]] | None = None,
        history_window: int = 10,
    ) -> list[tuple[str, MetricState, MetricState]]:
        """Catch up the statistics and re-evaluate states, in one locked document write.

        Reloads the registry document under the store lock, counts only the pairs
        appended since the stored positions, re-evaluates ``names`` (default: all;
        composites that depend on them too), promotes and demotes, appends
        ``history`` (see :meth:`MetricRegistry.extend_history`), writes once and
        returns ``(name, before, after)`` for every state that changed.
        """
        registry = self.registry
        if registry.read_only:
            raise read_only_error(self.store)
        wanted = None if names is None else list(names)
        if history:
            registry.check_history(history, history_window)
        # Nothing appended, nothing moved, nothing new: the transaction writes nothing.
        with registry.transaction():
            for name in wanted or ():
                registry.spec(name)  # an unknown name is an UnknownMetricError
            results = self._plan(wanted)
            if history:
                registry.extend_history(history, window=history_window)
        return [(name, b, a) for name, b, a in results if b.state != a.state]

    def can_promote(self, name: str) -> bool:
        """Whether ``name`` would be load-bearing if its state were evaluated now."""
        registry = self.registry
        registry.spec(name)  # an unknown name is an UnknownMetricError
        self._caught_up(registry.names())
        # Evaluate, then put every state back: asking must not change any.
        saved = registry.states()
        try:
            now = utc_timestamp()
            for n in registry.evaluation_order([name]):
                registry.set_state(n, self._evaluate(n, now))
            return registry.state(name).is_load_bearing
        finally:
            for n, state in saved.items():
                registry.set_state(n, state)

    def try_promote(self, name: str) -> bool:
        """Re-evaluate ``name`` (store the result); True iff it is load-bearing afterwards."""
        self.update([name])
        return self.registry.is_load_bearing(name)
