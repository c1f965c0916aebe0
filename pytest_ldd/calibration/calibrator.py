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
from pytest_ldd.errors import InvalidObservationError, StoreCorruptError
from pytest_ldd.model.records import (
    CalibrationRecord,
    ObservationRecord,
    PairError,
    RawPair,
    json_raw,
    utc_timestamp,
)
from pytest_ldd.model.statistics import (
    TOLERANCE,
    Accumulator,
    CalibrationGate,
    CalibrationStats,
    MetricState,
)

if TYPE_CHECKING:
    from pytest_ldd.calibration.registry import _Entry
    from pytest_ldd.store import Cursor, Store

__all__ = ["Calibrator"]


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= TOLERANCE


class Calibrator:
    """Logs calibration pairs and observations; keeps statistics; moves states.

    ``gate`` is the default gate for metrics that have no gate of their own in
    the registry (else the registry's default applies).
    """

    def __init__(self, registry: MetricRegistry, gate: CalibrationGate | None = None) -> None:
        self.registry = registry
        self.gate = gate
        # Before each write, lagging states are re-evaluated with the registry's own
        # gates (a calibrator with a gate of its own is a view, not the store's rule).
        if gate is None:
            registry._refresh = self._refresh_lagging
        elif registry._refresh is None:
            registry._refresh = Calibrator(registry)._refresh_lagging

    def __repr__(self) -> str:
        return f"Calibrator({self.registry!r})"

    @property
    def store(self) -> Store:
        """The registry's store."""
        return self.registry.store

    def gate_for(self, name: str) -> CalibrationGate:
        """The gate of ``name``: its own, else this calibrator's, else the registry's."""
        own = self.registry._gates.get(name)
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

    def _catch_up(self, entries: Sequence[_Entry], gates: Mapping[str, CalibrationGate]) -> None:
        """Count the pairs appended since each entry's cursor (in memory)."""
        if not entries:
            return
        for entry in entries:
            window = gates[entry.spec.name].window
            if window > entry.acc.keep:
                if entry.acc.n > len(entry.acc.recent):
                    # A wider window than was kept: recount this version once.
                    entry.acc = self._count(
                        {entry.spec.name: entry.spec.version}, entry.acc.start, window
                    )[entry.spec.name]
                entry.acc.widen(window)
        self._scan({e.spec.name: e.acc for e in entries})

    def _count(
        self, versions: Mapping[str, int], start: Cursor, window: int
    ) -> dict[str, Accumulator]:
        """Count every pair of the given versions from ``start`` (a full recompute)."""
        accs = {name: Accumulator(v, start, start, keep=window) for name, v in versions.items()}
        self._scan(accs, recount=True)
        return accs

    def _scan_all(self, accs: Sequence[tuple[str, Accumulator]], *, recount: bool = False) -> None:
        """:meth:`_scan` for several accumulators per metric, in one read of the store."""
        if not accs:
            return
        end: Cursor | None = None
        by_name: dict[str, list[Accumulator]] = {}
        for name, acc in accs:
            by_name.setdefault(name, []).append(acc)
        for begin, errors, after in self.store.read_pairs(
            [acc.cursor for _, acc in accs], recount=recount
        ):
            end = after
            for name, version, error in errors:
                for acc in by_name.get(name, ()):
                    if version == acc.version and acc.cursor <= begin:
                        acc.add(error if type(error) is float else self._raw_error(name, error))
        if end is not None:
            for _, acc in accs:
                if acc.cursor < end:
                    acc.cursor = end

    def _scan(self, accs: Mapping[str, Accumulator], *, recount: bool = False) -> None:
        """Ask the store once for the pairs past the earliest cursor; add each pair to
        every acc whose cursor it lies at or past, then move the cursors to the end."""
        if not accs:
            return
        end: Cursor | None = None
        for begin, errors, after in self.store.read_pairs(
            [acc.cursor for acc in accs.values()], recount=recount
        ):
            end = after
            if len(errors) == 1:
                name, version, error = errors[0]
                acc = accs.get(name)
                if acc is not None and version == acc.version and acc.cursor <= begin:
                    acc.add(error if type(error) is float else self._raw_error(name, error))
                continue
            # A batch of this process's own appends: one add_many per metric.
            found: dict[str, list[float]] = {}
            for name, version, error in errors:
                acc = accs.get(name)
                if acc is not None and version == acc.version and acc.cursor <= begin:
                    found.setdefault(name, []).append(
                        error if type(error) is float else self._raw_error(name, error)
                    )
            for name, batch in found.items():
                accs[name].add_many(batch)
        if end is not None:
            for acc in accs.values():
                if acc.cursor < end:
                    acc.cursor = end

    def _raw_error(self, name: str, error: float | RawPair) -> float:
        """The error of a pair logged as raw values, normalized with ``name``'s spec."""
        if not isinstance(error, RawPair):
            return float(error)
        metric = self.registry.get(name)
        values = []
        for key, value in (("predicted", error.predicted), ("observed", error.observed)):
            try:
                values.append(metric.normalize(value, field=key))
            except InvalidObservationError as err:
                msg = (
                    f"{error.where}: {key!r} must be a normalized number in [0, 1] (got "
                    f"{value!r}), and read as a raw value of {name!r} it is not valid "
                    f"either ({err})"
                )
                raise StoreCorruptError(msg, path=error.where.rpartition(":")[0]) from err
        return abs(values[0] - values[1])

    def _gates(self, names: Iterable[str]) -> dict[str, CalibrationGate]:
        return {name: self.gate_for(name) for name in names}

    def _caught_up(self, entries: Sequence[_Entry]) -> None:
        gates = self._gates(e.spec.name for e in entries)
        if self.registry.read_only:
            # Reading never creates the folder or the lock file.
            self._catch_up(entries, gates)
            return
        # Writers lock even to read, so a pair being appended is never seen torn.
        with self.store.read_lock():
            self._catch_up(entries, gates)

    def stats(self, name: str) -> CalibrationStats:
        """Current statistics of ``name``'s version, reading only what was appended since."""
        entry = self.registry._entry(name)
        self._caught_up([entry])
        return entry.acc.stats(self.gate_for(name).window)

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
        entry = self.registry._entry(name)
        window = self.gate_for(name).window
        acc = self._count({name: entry.spec.version}, self.store.origin(), window)[name]
        return acc.stats(window)

    def verify(self) -> list[str]:
        """Compare the incremental figures and the stored states with a full recompute.

        One read of the log serves both (a session appending meanwhile cannot make
        them disagree); each mismatch is described.  A stored state must have been
        evaluated on every counted pair, its figures must be the recomputed ones, and
        its state the one the gate gives them.
        """
        registry = self.registry
        entries = list(registry._entries.values())
        gates = self._gates(e.spec.name for e in entries)
        # The stored states against the statistics stored with them, as on disk now.
        on_disk = registry._parse(registry._decode(self.store.read_registry_bytes()))
        stored = {
            name: (e.state, e.acc.stats(gates[name].window))
            for name, e in on_disk.items()
            if name in gates and e.spec == registry._entries[name].spec
        }
        for entry in entries:
            window = gates[entry.spec.name].window
            if window > entry.acc.keep and entry.acc.n > len(entry.acc.recent):
                entry.acc = Accumulator(
                    entry.acc.version, entry.acc.start, entry.acc.start, keep=window
                )
            entry.acc.widen(window)
        widest = max((g.window for g in gates.values()), default=1)
        origin = self.store.origin()
        full = {
            e.spec.name: Accumulator(e.spec.version, origin, origin, keep=widest) for e in entries
        }
        accs = [*((e.spec.name, e.acc) for e in entries), *full.items()]
        self._scan_all(accs, recount=True)
        problems: list[str] = []
        for entry in entries:
            name, gate = entry.spec.name, gates[entry.spec.name]
            head = f"metric {name!r} version {entry.spec.version}"
            mine, theirs = entry.acc.stats(gate.window), full[name].stats(gate.window)
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
        expected = gate.verdict(stored)
        entries = self.registry._entries
        comps = entries[state.name].spec.components
        if (
            expected == "load_bearing"
            and comps is not None
            and not all(n in entries and entries[n].state.is_load_bearing for n, _ in comps)
        ):
            expected = "insufficient_data"
        if state.state != expected:
            problems.append(
                f"{head}: state = {state.state!r}, but the gate gives its figures {expected!r}"
            )
        return problems

    # ------------------------------------------------------------------ states

    def _evaluate(self, entry: _Entry, gate: CalibrationGate, now: str) -> MetricState:
        stats = entry.acc.stats(gate.window)
        verdict = gate.verdict(stats)
        comps = entry.spec.components
        if verdict == "load_bearing" and comps is not None:
            entries = self.registry._entries
            if not all(n in entries and entries[n].state.is_load_bearing for n, _ in comps):
                # Its own pairs pass, but a component is still advisory.
                verdict = "insufficient_data"
        before = entry.state
        promoted_at, demoted_at = before.promoted_at, before.demoted_at
        if verdict == "load_bearing" and not before.is_load_bearing:
            promoted_at, demoted_at = now, None
        elif verdict != "load_bearing" and before.is_load_bearing:
            demoted_at = now
        return MetricState(
            name=entry.spec.name,
            version=entry.spec.version,
            state=verdict,
            n=stats.n,
            mae=stats.mae,
            p95_error=stats.p95_error,
            worst_error=stats.worst_error,
            window_mae=stats.window_mae,
            promoted_at=promoted_at,
            demoted_at=demoted_at,
        )

    def _refresh_lagging(self) -> None:
        """Re-evaluate every state whose pairs were counted since it was evaluated.

        Run before each write of the registry: statistics counted in memory (by
        :meth:`stats`, :meth:`verify`) are stored with a state evaluated on them.
        """
        entries = self.registry._entries
        lagging = [n for n, e in entries.items() if e.state.n != e.acc.n]
        if not lagging:
            return
        now = utc_timestamp()
        for name in self._order(lagging):
            entry = entries[name]
            entry.state = self._evaluate(entry, self.gate_for(name), now)

    def _order(self, names: Iterable[str] | None) -> list[str]:
        """The names to evaluate, with their dependent composites, components first."""
        entries = self.registry._entries
        wanted = (
            set(entries) if names is None else {self.registry._entry(n).spec.name for n in names}
        )
        # Composites that depend on a wanted metric are re-evaluated too.
        grew = True
        while grew:
            grew = False
            for name, entry in entries.items():
                comps = entry.spec.components
                if name not in wanted and comps and any(n in wanted for n, _ in comps):
                    wanted.add(name)
                    grew = True
        ordered: list[str] = []
        seen: set[str] = set()

        def visit(name: str) -> None:
            if name in seen or name not in entries:
                return
            seen.add(name)
            for component, _ in entries[name].spec.components or ():
                visit(component)
            if name in wanted:
                ordered.append(name)

        for name in entries:
            visit(name)
        return ordered

    def _plan(self, names: Iterable[str] | None) -> list[tuple[str, MetricState, MetricState]]:
        """Catch up and evaluate ``names`` in memory; return (name, before, after) for all."""
        entries = self.registry._entries
        counted = {name: e.acc.n for name, e in entries.items()}
        self._catch_up(list(entries.values()), self._gates(entries))
        if names is not None:
            # A state always follows the pairs counted with it: a metric whose pairs
            # moved is re-evaluated too (its stored figures would lag otherwise).
            names = [*names, *(n for n, e in entries.items() if e.acc.n != counted[n])]
        order = self._order(names)
        now = utc_timestamp()
        results = []
        for name in order:
            entry = entries[name]
            before = entry.state
            entry.state = self._evaluate(entry, self.gate_for(name), now)
            results.append((name, before, entry.state))
        return results

    def _fingerprint(self) -> list[tuple[str, Cursor, int, MetricState, bool]]:
        """What a write of the registry document would record, in a cheaply comparable form."""
        return [
            (name, e.acc.cursor, e.acc.n, e.state, e.persisted)
            for name, e in self.registry._entries.items()
        ]

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
            registry._check_history(history, history_window)
        with self.store.lock():
            registry.reload()
            if wanted is not None:
                for name in wanted:
                    registry._entry(name)
            before = self._fingerprint()
            results = self._plan(wanted)
            if history:
                registry._apply_history(history, history_window)
            # Nothing appended, nothing moved, nothing new: the file on disk already
            # says all of it, and rewriting it (with an fsync) is pure cost.
            unsaved = any(not e.persisted for e in registry._entries.values())
            if history or unsaved or self._fingerprint() != before:
                registry._write_locked()
        return [(name, b, a) for name, b, a in results if b.state != a.state]

    def can_promote(self, name: str) -> bool:
        """Whether ``name`` would be load-bearing if its state were evaluated now."""
        registry = self.registry
        entry = registry._entry(name)
        entries = list(registry._entries.values())
        self._caught_up(entries)
        # Evaluate on copies: asking must not change any state.
        saved = {e.spec.name: e.state for e in entries}
        try:
            for n in self._order([name]):
                registry._entries[n].state = self._evaluate(
                    registry._entries[n], self.gate_for(n), utc_timestamp()
                )
            return entry.state.is_load_bearing
        finally:
            for n, state in saved.items():
                registry._entries[n].state = state

    def try_promote(self, name: str) -> bool:
        """Re-evaluate ``name`` (store the result); True iff it is load-bearing afterwards."""
        self.update([name])
        return self.registry.is_load_bearing(name)
