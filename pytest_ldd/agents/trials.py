"""Repeated trials per task: pass@k and pass^k, and their intervals over a problem set.

``trials`` maps a task id to the outcomes of its samples (``True`` passed, ``False``
failed).  :func:`pass_at_k` and :func:`pass_hat_k` are the unbiased estimators (per
task with n samples and c passes, ``1 - C(n-c, k) / C(n, k)`` and ``C(c, k) / C(n, k)``,
each the exact mean over every k-subset of the samples), averaged over tasks.

:func:`estimate_pass_at_k` and :func:`estimate_pass_hat_k` return a
:class:`PassEstimate`: the same figure with a confidence interval, for corpora graded
at scale, where some samples could not be graded.  Their outcomes may be ``None``: an
*inconclusive* sample (the grader could not grade it) is neither a pass nor a
failure, so it is left out of its task's n and counted; a task left with fewer than k
conclusive samples is left out and counted too.

**The interval** is the normal (central limit) interval of a mean over tasks:
``value +- z * s / sqrt(T)``, ``s`` the sample standard deviation of the T per-task
estimates, clipped to [0, 1].  The tasks are the sampling unit: a problem set is a
sample of the problems one cares about, and the samples of one task are not
independent of each other (they share its difficulty), so a binomial interval over
all n x T samples would be too narrow.  Each per-task estimate already carries its
own sampling noise, so the spread across tasks accounts for both.  With fewer than
two tasks the spread is unknown and the interval is ``(0, 1)``; where every task
has the same estimate (every sample of every task passed, say) the spread is 0 and
the interval is that point: the set cannot show a difference there, which is not
the same as there being none.  The normal quantile is a good approximation from some
thirty tasks on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, final

from pytest_ldd.errors import InvalidObservationError

__all__ = [
    "PassEstimate",
    "estimate_pass_at_k",
    "estimate_pass_hat_k",
    "pass_at_k",
    "pass_hat_k",
]

#: The two-sided 95% normal quantile, z = Phi^-1(0.975).
_Z95 = 1.959963984540054

_Kind = Literal["pass@k", "pass^k"]


def _check_k(k: object, what: str) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        msg = f"{what} 'k' must be an int >= 1 (got {k!r})"
        raise InvalidObservationError(msg)
    return k


def _check_trials(trials: object, what: str) -> Mapping[str, Sequence[bool | None]]:
    if not isinstance(trials, Mapping) or not trials:
        msg = f"{what} 'trials' must map at least one task id to its outcomes (got {trials!r})"
        raise InvalidObservationError(msg)
    return trials


def _counts(trials: Mapping[str, Sequence[bool]], k: int, what: str) -> list[tuple[int, int]]:
    _check_k(k, what)
    _check_trials(trials, what)
    counts = []
    for task_id, outcomes in trials.items():
        listed = list(outcomes)
        if not all(isinstance(outcome, bool) for outcome in listed):
            msg = f"{what}: outcomes of task {task_id!r} must be bools (got {listed!r})"
            raise InvalidObservationError(msg)
        if k > len(listed):
            msg = f"{what}: task {task_id!r} has {len(listed)} trials, fewer than k={k}"
            raise InvalidObservationError(msg)
        counts.append((len(listed), sum(listed)))
    return counts


def _at_k(n: int, c: int, k: int) -> float:
    # One integer division per task: 1 - a/b in floats would round twice.
    return (math.comb(n, k) - math.comb(n - c, k)) / math.comb(n, k)


def _hat_k(n: int, c: int, k: int) -> float:
    return math.comb(c, k) / math.comb(n, k)


def pass_at_k(trials: Mapping[str, Sequence[bool]], k: int) -> float:
    """Unbiased pass@k: the chance that at least one of k trials succeeds.

    Per task with n trials and c successes, ``1 - C(n-c, k) / C(n, k)``; averaged
    over tasks.  A task with fewer than k trials is an error naming it.
    """
    counts = _counts(trials, k, "pass_at_k")
    return math.fsum(_at_k(n, c, k) for n, c in counts) / len(counts)


def pass_hat_k(trials: Mapping[str, Sequence[bool]], k: int) -> float:
    """Unbiased pass^k: the chance that all of k trials succeed (reliability).

    Per task ``C(c, k) / C(n, k)``; averaged over tasks.  A task with fewer than k
    trials is an error naming it.
    """
    counts = _counts(trials, k, "pass_hat_k")
    return math.fsum(_hat_k(n, c, k) for n, c in counts) / len(counts)


@final
@dataclass(frozen=True, slots=True)
class PassEstimate:
    """pass@k or pass^k over a problem set, with its interval and what it rests on.

    ``value`` is the unbiased estimate, ``(low, high)`` its interval (the normal
    interval of a mean over tasks, at the ``z`` given; see the module's docstring),
    ``standard_error`` the standard error it comes from (``None`` with fewer than two
    tasks).  ``tasks`` and ``samples`` are what was counted; ``inconclusive`` the
    samples left out because they could not be graded, ``tasks_left_out`` the tasks
    left with fewer than k conclusive samples.
    """

    kind: _Kind
    k: int
    value: float
    low: float
    high: float
    standard_error: float | None
    tasks: int
    samples: int
    inconclusive: int
    tasks_left_out: int

    def __str__(self) -> str:
        return (
            f"{self.kind.replace('k', str(self.k))} = {self.value:.3f}"
            f" [{self.low:.3f}, {self.high:.3f}] over {self.tasks} tasks, {self.samples} samples"
            f" ({self.inconclusive} inconclusive left out)"
        )


def _estimate(
    trials: Mapping[str, Sequence[bool | None]], k: int, kind: _Kind, z: float
) -> PassEstimate:
    what = "estimate_pass_at_k" if kind == "pass@k" else "estimate_pass_hat_k"
    _check_k(k, what)
    _check_trials(trials, what)
    if isinstance(z, bool) or not isinstance(z, (int, float)) or not (math.isfinite(z) and z > 0):
        msg = f"{what} 'z' must be a finite number > 0 (got {z!r})"
        raise InvalidObservationError(msg)
    per_task: list[float] = []
    samples = inconclusive = left_out = 0
    for task_id, outcomes in trials.items():
        listed = list(outcomes)
        if not all(outcome is None or isinstance(outcome, bool) for outcome in listed):
            msg = f"{what}: outcomes of task {task_id!r} must be bools or None (got {listed!r})"
            raise InvalidObservationError(msg)
        conclusive = [outcome for outcome in listed if outcome is not None]
        inconclusive += len(listed) - len(conclusive)
        if len(conclusive) < k:
            left_out += 1
            continue
        n, c = len(conclusive), sum(conclusive)
        samples += n
        per_task.append(_at_k(n, c, k) if kind == "pass@k" else _hat_k(n, c, k))
    if not per_task:
        msg = (
            f"{what}: no task has k={k} conclusive samples"
            f" ({left_out} tasks, {inconclusive} inconclusive samples)"
        )
        raise InvalidObservationError(msg)
    count = len(per_task)
    value = math.fsum(per_task) / count
    if count < 2:
        error, low, high = None, 0.0, 1.0
    else:
        variance = math.fsum((p - value) ** 2 for p in per_task) / (count - 1)
        error = math.sqrt(variance / count)
        low, high = max(0.0, value - z * error), min(1.0, value + z * error)
    return PassEstimate(
        kind=kind,
        k=k,
        value=value,
        low=low,
        high=high,
        standard_error=error,
        tasks=count,
        samples=samples,
        inconclusive=inconclusive,
        tasks_left_out=left_out,
    )


def estimate_pass_at_k(
    trials: Mapping[str, Sequence[bool | None]], k: int, *, z: float = _Z95
) -> PassEstimate:
    """pass@k with its interval (95% by default); ``None`` outcomes are left out and counted."""
    return _estimate(trials, k, "pass@k", z)


def estimate_pass_hat_k(
    trials: Mapping[str, Sequence[bool | None]], k: int, *, z: float = _Z95
) -> PassEstimate:
    """pass^k with its interval (95% by default); ``None`` outcomes are left out and counted."""
    return _estimate(trials, k, "pass^k", z)
