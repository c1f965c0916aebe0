"""From what was observed to a verdict: every doubt fails, manipulation is named.

The clean signature of an honest run is exact: the channel authenticates, every
record in sequence; each planted must-fail canary reports ``failed`` and each
must-pass canary ``passed``; every expected hidden test is reported exactly once;
pytest finished with exit code 1 (a canary always fails, so 0 is impossible) and the
process exited with the code pytest reported; no file we staged changed.  Anything
else fails the verdict, and the evidence that only manipulation explains sets
``tampered``.
"""

from __future__ import annotations

import signal
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pytest_ldd._sandbox.channel import ChannelLog
from pytest_ldd._sandbox.process import ChildRun
from pytest_ldd._sandbox.staging import HiddenSuite

__all__ = ["Judgement", "judge"]

_EXIT_NAMES = {2: "interrupted", 3: "internal error", 4: "usage error", 5: "no tests collected"}
_NAMED = 3


@dataclass(frozen=True, slots=True)
class Judgement:
    """The verdict's fields that the evidence decides."""

    passed: bool
    outcomes: dict[str, str]
    tampered: bool
    reason: str
    inconclusive: bool = False


@dataclass(slots=True)
class _Findings:
    tampering: list[str] = field(default_factory=list)
    doubts: list[str] = field(default_factory=list)


def _base(nodeid: str) -> str:
    """``file.py::test_x[1]`` -> ``file.py::test_x`` (the id before parametrization)."""
    head, sep, name = nodeid.rpartition("::")
    return f"{head}{sep}{name.split('[', 1)[0]}"


def _names(ids: Iterable[str], outcomes: Mapping[str, str] | None = None) -> str:
    ids = sorted(ids)
    shown = [f"{i} ({outcomes[i]})" if outcomes else i for i in ids[:_NAMED]]
    more = f" and {len(ids) - _NAMED} more" if len(ids) > _NAMED else ""
    return ", ".join(shown) + more


def _under(nodeid: str, collectors: Iterable[str]) -> bool:
    """Whether ``nodeid`` lies in one of the files or folders named by ``collectors``."""
    path = nodeid.split("::", 1)[0]
    return any(
        c in ("", ".") or path == c or path.startswith(c.rstrip("/") + "/") for c in collectors
    )


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def judge(
    *,
    suite: HiddenSuite,
    log: ChannelLog,
    run: ChildRun,
    modified: Sequence[str],
    timeout: float,
    output_bytes: int,
    unchecked: str | None = None,
) -> Judgement:
    """Decide the verdict from the staged suite, the channel log and the process."""
    found = _Findings()
    canaries = suite.must_fail | suite.must_pass | set(suite.twins)
    killed_by_us = run.timed_out or run.output_capped or run.channel_capped
    finished_normally = log.finish in (0, 1) and not killed_by_us

    # Evidence of manipulation.
    found.tampering.extend(log.problems)
    if run.channel_capped:
        found.tampering.append("the report channel was flooded: the test process was killed")
    if modified:
        found.tampering.append(
            f"files of the sandbox were modified during the run: {_names(modified)}"
        )
    if any(log.tests.get(c) == "passed" for c in suite.must_fail):
        found.tampering.append("canary test reported passed: outcome rewriting suspected")
    if not killed_by_us and (run.returncode == 0 or log.finish == 0):
        found.tampering.append(
            "the test process reported success, which an honest run cannot do"
            " (a canary test always fails): exit status forged"
        )
    elif log.finish is not None and not killed_by_us and run.returncode != log.finish:
        found.tampering.append(
            f"exit code {run.returncode} disagrees with the status pytest reported ({log.finish})"
        )
    if log.duplicates:
        found.tampering.append(f"tests reported more than once: {_names(set(log.duplicates))}")
    uncollected = set(log.tests) - log.collected
    if uncollected:
        found.tampering.append(
            f"results reported for tests never collected: {_names(uncollected)}"
        )
    not_collected = {*log.collect_errors, *log.collect_skips}
    reported = {_base(i) for i in log.tests}
    missing_canaries = {c for c in canaries if c not in reported and not _under(c, not_collected)}
    if missing_canaries and finished_normally:
        found.tampering.append("canary test not reported although pytest finished: results hidden")

    _judge_twins(suite, log, found)
    if log.liars:
        # The hidden tests' own lies first: a twin's perturbed value says less.
        first_id, first = min(log.liars, key=lambda liar: _base(liar[0]) in canaries)
        where = "a canary" if _base(first_id) in canaries else first_id
        found.tampering.append(
            f"a builtin look-alike lied about a comparison in {where}: {first}"
            + (f" (and {len(log.liars) - 1} more)" if len(log.liars) > 1 else "")
        )

    # Doubts: the run cannot vouch for the workspace.
    if unchecked is not None:
        found.doubts.append(unchecked)
    if run.timed_out:
        found.doubts.append(f"timed out after {timeout:g} s")
    if run.output_capped:
        found.doubts.append(f"output exceeded {output_bytes} bytes: the test process was killed")
    if not killed_by_us:
        if run.returncode < 0:
            found.doubts.append(f"the test process was killed by {_signal_name(-run.returncode)}")
        elif log.finish is None and run.returncode != 0:
            found.doubts.append(
                f"the test run ended before pytest finished (exit code {run.returncode})"
            )
        elif log.finish not in (None, 0, 1):
            name = _EXIT_NAMES.get(log.finish or 0, "unexpected status")
            found.doubts.append(f"pytest exited with code {log.finish} ({name})")
    if log.collect_errors:
        found.doubts.append(f"collection error in {_names(e or '.' for e in log.collect_errors)}")

    outcomes = {i: o for i, o in log.tests.items() if _base(i) not in canaries}
    reported_bases = {_base(i) for i in outcomes}
    missing = []
    for base in suite.expected:
        if base in reported_bases:
            continue
        if _under(base, log.collect_errors):
            outcomes[base] = "error"
        elif _under(base, log.collect_skips):
            outcomes[base] = "skipped"
        else:
            missing.append(base)
    total = len(outcomes) + len(missing)
    if missing:
        found.doubts.append(
            f"{len(missing)} of {total} hidden tests not reported: {_names(missing)}"
        )
    if not total:
        found.doubts.append("no hidden test was reported")
    for canary in sorted(suite.must_pass):
        got = log.tests.get(canary)
        if got is not None and got != "passed":
            found.doubts.append(
                f"a canary test that must pass reported {got}: the run is unreliable"
            )
            break
    for canary in sorted(suite.must_fail):
        got = log.tests.get(canary)
        if got is not None and got not in ("failed", "passed"):
            found.doubts.append(
                f"a canary test that must fail reported {got}: the run is unreliable"
            )
            break
    failing = {i: o for i, o in outcomes.items() if o != "passed"}
    if failing:
        found.doubts.append(
            f"{len(failing)} of {total} hidden tests did not pass: {_names(failing, failing)}"
        )

    problems = found.tampering + found.doubts
    limits = dict(reversed(log.inconclusive))  # the first reason of each test
    inconclusive = _explained_by_limits(limits, log, found, failing, missing)
    passed = not problems and not limits
    if passed:
        reason = f"all {total} hidden tests passed"
    elif limits:
        met = {i: why for i, why in limits.items() if _base(i) not in canaries} or limits
        reason = "; ".join([_limits_reason(met, inconclusive=inconclusive), *problems])
    else:
        reason = "; ".join(problems)
    return Judgement(
        passed, dict(sorted(outcomes.items())), bool(found.tampering), reason, inconclusive
    )


def _limited(nodeid: str, limits: Mapping[str, str]) -> bool:
    """Whether a limit was met by this test, or by the module or folder that holds it."""
    return nodeid in limits or _under(nodeid, (i for i in limits if "::" not in i))


def _explained_by_limits(
    limits: Mapping[str, str],
    log: ChannelLog,
    found: _Findings,
    failing: Mapping[str, str],
    missing: Sequence[str],
) -> bool:
    """Whether the run is inconclusive: limits of process isolation explain every doubt.

    A limit is the grader's: what the hidden tests handed the workspace, or asked of it,
    could not cross between the judge and the subject, so the outcome of the test that
    met it says nothing about the workspace.  A failure no limit explains still fails
    the verdict, and evidence of tampering is never made inconclusive.
    """
    if not limits or found.tampering or missing:
        return False
    if any(not _limited(i, limits) for i in failing):
        return False
    explained = {"collection error in", f"{len(failing)} of "}
    return all(doubt.startswith(tuple(explained)) for doubt in found.doubts) and all(
        _limited(e or ".", limits) for e in log.collect_errors
    )


def _limits_reason(limits: Mapping[str, str], *, inconclusive: bool) -> str:
    met = list(limits.items())
    shown = "; ".join(f"{test_id or '(collection)'} ({why})" for test_id, why in met[:_NAMED])
    more = f" and {len(met) - _NAMED} more" if len(met) > _NAMED else ""
    lead = "inconclusive: " if inconclusive else ""
    return (
        f"{lead}process isolation could not carry what {len(met)} hidden test(s)"
        f" needed: {shown}{more}"
    )


def _judge_twins(suite: HiddenSuite, log: ChannelLog, found: _Findings) -> None:
    """A twin that passed next to an original that passed is manipulation.

    Its perturbations are exclusive, so for honest values both cannot pass; a twin that
    passed next to an original that did not is a wrong workspace that produced the
    perturbed value, which the reason names.
    """
    by_base: dict[str, list[str]] = {}
    for nodeid, outcome in log.tests.items():
        by_base.setdefault(_base(nodeid), []).append(outcome)
    manipulated: list[str] = []
    matched: list[str] = []
    for twin, original in sorted(suite.twins.items()):
        if "passed" not in by_base.get(twin, ()):
            continue
        outcomes = by_base.get(original, [])
        if outcomes and all(o == "passed" for o in outcomes):
            manipulated.append(original)
        else:
            matched.append(f"{original} ({suite.twin_changes.get(twin, 'perturbed')})")
    if manipulated:
        found.tampering.append(
            f"twin canary of {_names(manipulated)} passed:"
            " results are not what the hidden tests compare"
        )
    if matched:
        found.doubts.append(
            f"twin canary of {_names(matched)} passed where the hidden test did not:"
            " the workspace produced the twin's perturbed value"
        )
