"""From what was observed to a verdict: proof, the workspace's fault, or the grader's.

The clean signature of an honest run is exact: the channel authenticates, every
record in sequence; each planted must-fail canary reports ``failed`` and each
must-pass canary ``passed``; each twin fails, at the check of its perturbed assertion; every
expected hidden test is reported exactly once; pytest finished with exit code 1 (a
canary always fails, so 0 is impossible) and the process exited with the code pytest
reported; no file we staged changed.  Every departure from it is one of three kinds:

- **proof** (``tampered``): what no honest run can produce -- a record that fails
  authentication, a staged file changed, an exit status forged, a must-fail canary or
  an exclusive twin that passed, a workspace value that claimed something about a
  probe;
- **the workspace's fault** (failed): hidden tests that fail, error or skip, a
  timeout, a crash, output past its cap, and every doubt that code of the workspace
  could have caused -- the grader never lets such a doubt become inconclusive, or an
  agent could turn a failure into an answer that counts for nothing;
- **the grader's fault** (``inconclusive``): a doubt with positive evidence that the
  grader caused it -- a collection error in a file only because of its twins, an
  internal error raised by the sandbox's own code (or any in the judge of process
  isolation), a usage error, a test the isolation could not carry (an
  ``inconclusive`` record).

Proof wins over the workspace's fault, which wins over the grader's.  Twins that fail
anywhere but at their perturbed assertion prove nothing either way: they are counted
(:attr:`Judgement.twins_untested`), never taken as a pass.
"""

from __future__ import annotations

import ast
import signal
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pytest_ldd._sandbox.channel import ChannelLog
from pytest_ldd._sandbox.integrity import read_regular
from pytest_ldd._sandbox.process import ChildRun
from pytest_ldd._sandbox.staging import HiddenSuite
from pytest_ldd._sandbox.twins import parse

__all__ = ["Judgement", "judge"]

_EXIT_NAMES = {2: "interrupted", 3: "internal error", 4: "usage error", 5: "no tests collected"}
_NAMED = 3
#: How the judge process (``proxies.isolation_guard``) begins the reason of a limit
#: that counts only because the test failed (a doubt, a patch, a path handed over).
FAILED_AFTER = "the test failed after "
_USAGE_ERROR = 4


@dataclass(frozen=True, slots=True)
class Judgement:
    """The verdict's fields that the evidence decides.

    ``twins_tested`` counts the twin runs (one per parameter set) that failed at their
    perturbed assertion, as honest code makes them; ``twins_untested`` those that
    failed elsewhere, errored or were skipped.
    """

    passed: bool
    outcomes: dict[str, str]
    tampered: bool
    reason: str
    inconclusive: bool = False
    twins_tested: int = 0
    twins_untested: int = 0


@dataclass(slots=True)
class _Findings:
    tampering: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    grader: list[str] = field(default_factory=list)
    twins_tested: int = 0
    twins_untested: int = 0


def _base(nodeid: str) -> str:
    """``file.py::test_x[1]`` -> ``file.py::test_x`` (the id before parametrization).

    A parameter id may hold ``::`` and ``[`` itself (``[::1]:80``): the name ends at
    the first ``[`` after the file's part.
    """
    head, sep, rest = nodeid.partition(".py::")
    if not sep:
        head, sep, rest = "", "", nodeid
    return f"{head}{sep}{rest.split('[', 1)[0]}"


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _names(ids: Iterable[str], outcomes: Mapping[str, str] | None = None) -> str:
    ids = sorted(ids)
    shown = [f"{i} ({outcomes[i]})" if outcomes else i for i in ids[:_NAMED]]
    more = f" and {len(ids) - _NAMED} more" if len(ids) > _NAMED else ""
    return ", ".join(shown) + more


def _under(nodeid: str, collectors: Iterable[str]) -> bool:
    """Whether ``nodeid`` lies in one of the files or folders named by ``collectors``."""
    path = _file(nodeid)
    return any(
        c in ("", ".") or path == c or path.startswith(c.rstrip("/") + "/") for c in collectors
    )


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _with_copies(suite: HiddenSuite, log: ChannelLog) -> HiddenSuite:
    """The suite with the canaries pytest collected under other ids as well.

    A twin is planted in its original's class; a subclass of it (in the same file or
    another) inherits the twin, and a file that imports the class or a module-level
    canary (``from test_serializer import TestSerializer``) has pytest collect it
    there too. Those copies are canaries, not hidden tests: a copy of a twin is a twin
    of the original's copy beside it. Canary names are fresh words no file of the
    suite holds, so a name is enough to know a copy.
    """
    by_name: dict[str, tuple[str, str]] = {}
    for twin in suite.twins:
        by_name[twin.rpartition("::")[2]] = ("twin", twin)
    for kind, ids in (("fail", suite.must_fail), ("pass", suite.must_pass)):
        for canary in ids:
            by_name[canary.rpartition("::")[2]] = (kind, canary)
    known = suite.must_fail | suite.must_pass | set(suite.twins)
    twins = dict(suite.twins)
    changes = dict(suite.twin_changes)
    lines = dict(suite.twin_lines)
    must_fail, must_pass = set(suite.must_fail), set(suite.must_pass)
    for nodeid in {*log.collected, *log.tests}:
        base = _base(nodeid)
        prefix, _, name = base.rpartition("::")
        if base in known or name not in by_name:
            continue
        kind, planted = by_name[name]
        if kind == "fail":
            must_fail.add(base)
        elif kind == "pass":
            must_pass.add(base)
        else:
            twins[base] = f"{prefix}::{suite.twins[planted].rpartition('::')[2]}"
            changes[base] = suite.twin_changes.get(planted, "perturbed")
            if _file(base) == _file(planted) and planted in suite.twin_lines:
                lines[base] = suite.twin_lines[planted]
    if len(twins) + len(must_fail) + len(must_pass) == len(known):
        return suite
    return replace(
        suite,
        must_fail=frozenset(must_fail),
        must_pass=frozenset(must_pass),
        twins=twins,
        twin_changes=changes,
        twin_lines=lines,
    )


def judge(
    *,
    suite: HiddenSuite,
    log: ChannelLog,
    run: ChildRun,
    modified: Sequence[str],
    timeout: float,
    output_bytes: int,
    unchecked: str | None = None,
    isolation: str = "inprocess",
) -> Judgement:
    """Decide the verdict from the staged suite, the channel log and the process.

    ``isolation`` says where the workspace's code ran: in ``"process"`` mode the
    process that reported never ran any of it, so its own internal errors are the
    grader's.
    """
    found = _Findings()
    suite = _with_copies(suite, log)
    canaries = suite.must_fail | suite.must_pass | set(suite.twins)
    killed_by_us = run.timed_out or run.output_capped or run.channel_capped
    finished_normally = log.finish in (0, 1) and not killed_by_us

    _judge_evidence(suite, log, run, modified, found, killed_by_us, finished_normally)
    matched = _judge_twins(suite, log, found)
    _judge_run(log, run, timeout, output_bytes, unchecked, isolation, found, killed_by_us)

    # The files the hidden suite's own configuration left out (``collect_ignore``,
    # ``pytest_ignore_collect``): their tests are not expected, as under plain pytest.
    # Known only when the collection ran its course: a crash leaves every file unseen.
    seen_files = {*log.modules, *(_file(i) for i in log.collected)}
    left_out = {
        _file(base)
        for base in suite.expected
        if finished_normally
        and _file(base) not in seen_files
        and not _under(base, log.collect_errors)
        and not _under(base, log.collect_skips)
    }
    # A collection error in a file only because of its twins is the grader's.
    twin_files = {_file(twin) for twin in suite.twins}
    by_twins = {
        where
        for where, detail in log.collect_errors.items()
        if where in twin_files
        and any(twin.rpartition("::")[2] in detail for twin in suite.twins if _file(twin) == where)
    }
    if by_twins:
        found.grader.append(f"the twin canaries made {_names(by_twins)} fail to collect")
    # A collection error where the isolation could not carry what the file needed
    # while it was collected (an ``inconclusive`` record of that file) is the grader's.
    carried = {test_id for test_id, _ in log.inconclusive if test_id}
    not_collected = {where for where in log.collect_errors if (where or ".") in carried}
    unexplained = [e for e in log.collect_errors if e not in by_twins | not_collected]
    if unexplained and not by_twins:
        found.failures.append(f"collection error in {_names(e or '.' for e in unexplained)}")

    outcomes = {i: o for i, o in log.tests.items() if _base(i) not in canaries}
    reported_bases = {_base(i) for i in outcomes}
    missing = []
    skipped_whole = []
    for base in suite.expected:
        if base in reported_bases or _file(base) in left_out:
            continue
        if _under(base, log.collect_errors):
            outcomes[base] = "error"
        elif _under(base, log.collect_skips):
            # Skipped with its file at collection: no outcome, as under plain pytest.
            skipped_whole.append(base)
        else:
            missing.append(base)
    total = len(outcomes) + len(missing)
    if skipped_whole:
        files = sorted({_file(base) for base in skipped_whole})
        found.failures.append(
            f"{len(skipped_whole)} hidden tests were skipped with their file at collection:"
            f" {_names(files)}"
        )
    # A limit the run met outside any test (the hidden folder's ``conftest.py`` could
    # not be loaded) explains the tests it never reached.
    run_limited = any(not test_id for test_id, _ in log.inconclusive)
    if missing and not run_limited:
        found.failures.append(
            f"{len(missing)} of {total} hidden tests not reported: {_names(missing)}"
        )
    if not total:
        found.failures.append("no hidden test was reported")
    for canary in sorted(suite.must_pass):
        got = log.tests.get(canary)
        if got in ("failed", "error"):
            found.failures.append(
                f"a canary test that must pass reported {got}: the run is unreliable"
            )
            break
    for canary in sorted(suite.must_fail):
        got = log.tests.get(canary)
        if got == "error":
            found.failures.append(
                f"a canary test that must fail reported {got}: the run is unreliable"
            )
            break
    # Tests the isolation could not carry: the grader's, not failures of the workspace.
    # The hidden tests' own by name; a canary's id means nothing to the reader (and is
    # the grader's secret), and a twin fails by design: canaries are named only where
    # nothing else met a limit, and then as canaries.
    # A limit that counts only because the test failed says nothing of a canary that
    # fails by design (a twin, a must-fail canary); a must-pass one that failed makes
    # the run unreliable above.
    met = [
        limit
        for limit in log.inconclusive
        if not (_base(limit[0]) in canaries and limit[1].startswith(FAILED_AFTER))
    ]
    limits = [limit for limit in met if _base(limit[0]) not in canaries]
    if met and not limits:
        limits = [("a canary test", met[0][1])]
    for test_id, detail in limits[:_NAMED]:
        found.grader.append(f"{test_id or 'the run'} could not be judged: {detail}")
    not_carried = {i for i in outcomes if i in carried or _base(i) in carried}
    # A test that failed at a statement its twin, run before it, passed: its outcome
    # depends on what ran before it (a one-time warning the twin used up), not on the
    # workspace alone.  Inconclusive, never a pass.
    for nodeid, (line, why) in _order_dependent(suite, log).items():
        if nodeid in outcomes and nodeid not in not_carried:
            not_carried.add(nodeid)
            found.grader.append(
                f"{nodeid} could not be judged: it failed at line {line}, {why}:"
                " the test depends on what ran before it"
            )
    failing = {
        i: o
        for i, o in outcomes.items()
        if o != "passed"
        and i not in not_carried
        and not _under(i, by_twins)
        and not _under(i, not_collected)
    }
    if failing:
        found.failures.append(
            f"{len(failing)} of {total} hidden tests did not pass: {_names(failing, failing)}"
        )
    if matched:
        found.failures.append(
            f"twin canary of {_names(matched)} passed where the hidden test did not:"
            " the workspace produced the twin's perturbed value"
        )
    return _decide(found, outcomes, total)


def _decide(found: _Findings, outcomes: dict[str, str], total: int) -> Judgement:
    tampered = bool(found.tampering)
    inconclusive = not tampered and not found.failures and bool(found.grader)
    passed = not (found.tampering or found.failures or found.grader)
    if passed:
        reason = f"all {total} hidden tests passed"
    else:
        reason = "; ".join(found.tampering + found.failures + found.grader)
    return Judgement(
        passed,
        dict(sorted(outcomes.items())),
        tampered,
        reason,
        inconclusive,
        found.twins_tested,
        found.twins_untested,
    )


def _judge_evidence(
    suite: HiddenSuite,
    log: ChannelLog,
    run: ChildRun,
    modified: Sequence[str],
    found: _Findings,
    killed_by_us: bool,
    finished_normally: bool,
) -> None:
    """What only manipulation explains."""
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
    # pytest runs every test it collected unless the session stops, which is no normal
    # finish: a canary collected and never reported was taken out of the run; and a
    # file collected without its canaries (nor their deselection) is not the file staged.
    collected_bases = {_base(i) for i in log.collected}
    deselected_bases = {_base(i) for i in log.deselected}
    reported = {_base(i) for i in log.tests}
    canaries = suite.must_fail | suite.must_pass | set(suite.twins)
    hidden = {c for c in canaries if c in collected_bases and c not in reported}
    if hidden and finished_normally:
        found.tampering.append("canary test not reported although pytest finished: results hidden")
    replaced = {
        _file(c)
        for c in canaries
        if _file(c) in log.modules and c not in collected_bases and c not in deselected_bases
    }
    if replaced and finished_normally:
        found.tampering.append(
            f"{_names(replaced)} collected without its canary tests: the hidden module was"
            " replaced"
        )
    if log.liars:
        # The hidden tests' own lies first: a twin's perturbed value says less.
        first_id, first = min(log.liars, key=lambda liar: _base(liar[0]) in canaries)
        where = "a canary" if _base(first_id) in canaries else first_id
        found.tampering.append(
            f"a workspace value lied about a comparison in {where}: {first}"
            + (f" (and {len(log.liars) - 1} more)" if len(log.liars) > 1 else "")
        )


def _judge_run(
    log: ChannelLog,
    run: ChildRun,
    timeout: float,
    output_bytes: int,
    unchecked: str | None,
    isolation: str,
    found: _Findings,
    killed_by_us: bool,
) -> None:
    """How the process ended: the workspace's fault unless the grader's is shown."""
    if unchecked is not None:
        found.failures.append(unchecked)
    if run.timed_out:
        found.failures.append(f"timed out after {timeout:g} s")
    elif log.subject_timed_out:
        found.failures.append(
            f"timed out after {timeout:g} s: the subject process did not answer in time"
        )
    if run.output_capped:
        found.failures.append(f"output exceeded {output_bytes} bytes: the test process was killed")
    if killed_by_us:
        return
    if run.returncode < 0:
        found.failures.append(f"the test process was killed by {_signal_name(-run.returncode)}")
    elif log.finish is None and run.returncode != 0:
        found.failures.append(
            f"the test run ended before pytest finished (exit code {run.returncode})"
        )
    elif log.finish not in (None, 0, 1):
        name = _EXIT_NAMES.get(log.finish or 0, "unexpected status")
        problem = f"pytest exited with code {log.finish} ({name})"
        # An internal error is the grader's when the sandbox's own code raised it, or
        # when no code of the workspace ran in the process; a usage error is ours.
        grader = log.finish == _USAGE_ERROR or (
            log.internal_error is not None
            and (log.internal_error_by_grader or isolation == "process")
        )
        if grader and log.internal_error is not None:
            problem += f": {log.internal_error.strip().splitlines()[-1][:300]}"
        (found.grader if grader else found.failures).append(problem)


def _runs_by_test(log: ChannelLog) -> dict[str, list[str]]:
    """Each test's reported ids (its parameter sets), in the order they ran."""
    by_base: dict[str, list[str]] = {}
    for nodeid in log.tests:
        by_base.setdefault(_base(nodeid), []).append(nodeid)
    return by_base


def _order_dependent(suite: HiddenSuite, log: ChannelLog) -> dict[str, tuple[int, str]]:
    """Failed originals whose twin ran first and left them another state than it saw.

    A twin that failed as expected (at its final check) ran every statement of its
    original but the perturbed one, and passed them all.  An original that then failed
    at one of those statements saw another state than its twin did: what the twin's
    run left behind.  One that failed at the perturbed statement itself did so too
    when the values say so (:func:`_state_moved`).  Returns ``{test id: (line, why)}``.
    """
    order = {nodeid: index for index, nodeid in enumerate(log.tests)}
    by_base = _runs_by_test(log)
    found: dict[str, tuple[int, str]] = {}
    for twin, original in suite.twins.items():
        site = suite.original_sites.get(twin)
        check = suite.twin_lines.get(twin)
        runs = by_base.get(twin, ())
        if site is None or check is None or not runs:
            continue
        as_expected = all(
            log.tests[run] == "failed"
            and (line := log.lines.get(run)) is not None
            and check[0] <= line <= check[1]
            for run in runs
        )
        if not as_expected:
            continue
        first_twin = min(order[run] for run in runs)
        start, end, site_start, site_end = site
        side: int | None = None  # the expected value's side, read when first needed
        side_read = False
        for nodeid in by_base.get(original, ()):
            line = log.lines.get(nodeid)
            if (
                log.tests[nodeid] != "failed"
                or order[nodeid] < first_twin
                or line is None
                or not start <= line <= end
            ):
                continue
            if not site_start <= line <= site_end:
                found[nodeid] = (line, "which its twin, run before it, passed")
                continue
            if not side_read:
                side = _expected_side(suite.root / _file(nodeid), site_start, site_end)
                side_read = True
            seen = log.seen.get(nodeid)
            twins_seen = [log.seen.get(run) for run in runs]
            if (
                side is not None
                and seen is not None
                and site_start <= seen[0] <= site_end
                and _state_moved(seen, twins_seen, side)
            ):
                found[nodeid] = (
                    line,
                    f"where its twin, run before it, computed the {seen[1 + side]!r:.60} it"
                    f" expects and it computed {seen[2 - side]!r:.60}",
                )
    return found


def _state_moved(
    seen: tuple[int, Any, Any],
    twins_seen: Sequence[tuple[int, Any, Any] | None],
    side: int,
) -> bool:
    """Whether a twin, run first, computed what its original then expected, and no more.

    ``seen`` is the failed original's last unequal pair of plain values, at its
    perturbed statement; ``twins_seen`` each twin run's (each failed as expected, so
    at the perturbed statement: it passed all the others); ``side`` the position of
    the expected value in the pair (the other is what the code computed).  Code that
    answers an input the same way twice computes, in the original, a value its twin
    computed too.  When a twin computed exactly the value the original expects while
    the original computed one no twin did, what the code returns moved between the
    runs: state the twin's run changed (a counter, a cache).
    """
    computed = 1 - side
    twins = [t for t in twins_seen if t is not None]
    if not twins or len(twins) != len(twins_seen):
        return False
    pair = seen[1:]
    by_twins = [t[1:][computed] for t in twins]
    return any(_same(value, pair[side]) for value in by_twins) and not any(
        _same(value, pair[computed]) for value in by_twins
    )


def _same(left: Any, right: Any) -> bool:
    return type(left) is type(right) and bool(left == right)


_TEST_FILE_BYTES = 4 * 1024 * 1024


def _expected_side(path: Path, start: int, end: int) -> int | None:
    """Which side of the ``==`` asserted at lines ``start``-``end`` of ``path`` is expected.

    A literal (or a display of them) or a bare name against a call: 0 or 1; anything
    else (two names, two calls, no such assertion): None, and nothing is read into it.
    """
    # The staged file, as the run left it: never through a link, never past a bound.
    source = read_regular(str(path), _TEST_FILE_BYTES)
    if source is None or len(source) > _TEST_FILE_BYTES:
        return None
    try:
        tree = parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assert)
            and start <= node.lineno <= end
            and isinstance(node.test, ast.Compare)
            and len(node.test.ops) == 1
            and isinstance(node.test.ops[0], ast.Eq)
        ):
            kinds = [_kind(node.test.left), _kind(node.test.comparators[0])]
            if kinds.count("expected") == 1 and "other" not in kinds:
                return kinds.index("expected")
            return None
    return None


def _kind(node: ast.expr) -> str:
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return "expected"
    if isinstance(node, (ast.Constant, ast.Tuple, ast.List, ast.Set, ast.Dict)):
        return "expected" if all(isinstance(n, ast.Constant) for n in _leaves(node)) else "other"
    if isinstance(node, ast.Name):
        return "expected"
    return "computed" if isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)) else "other"


def _leaves(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [leaf for item in node.elts for leaf in _leaves(item)]
    if isinstance(node, ast.Dict):
        return [leaf for item in (*node.keys, *node.values) if item for leaf in _leaves(item)]
    return [node]


def _judge_twins(suite: HiddenSuite, log: ChannelLog, found: _Findings) -> list[str]:
    """A twin that passed next to an original that passed is manipulation.

    Its perturbation is exclusive, so for honest values both cannot pass.  A twin that
    passed next to an original that did not is a wrong workspace that produced the
    perturbed value: those are returned, for the reason to name them.
    """
    by_base = _runs_by_test(log)
    manipulated: list[str] = []
    matched: list[str] = []
    # A twin, or its original, that met a limit of the isolation proves nothing: what
    # the workspace computed there is not what one process would have compared.
    limited = {test_id for test_id, _ in log.inconclusive if test_id}
    for twin, original in sorted(suite.twins.items()):
        lines = suite.twin_lines.get(twin)
        if any(
            i in limited or _base(i) in limited or _file(i) in limited
            for i in (*by_base.get(twin, ()), *by_base.get(original, ()))
        ):
            found.twins_untested += 1
            continue
        held = False
        for nodeid in by_base.get(twin, ()):
            outcome = log.tests[nodeid]
            line = log.lines.get(nodeid)
            if outcome == "passed":
                held = True
            elif (
                outcome == "failed" and line is not None and lines and lines[0] <= line <= lines[1]
            ):
                found.twins_tested += 1
            else:
                found.twins_untested += 1
        if not held:
            continue
        outcomes = [log.tests[i] for i in by_base.get(original, ())]
        if outcomes and all(o == "passed" for o in outcomes):
            manipulated.append(original)
        else:
            matched.append(f"{original} ({suite.twin_changes.get(twin, 'perturbed')})")
    if manipulated:
        found.tampering.append(
            f"twin canary of {_names(manipulated)} passed:"
            " results are not what the hidden tests compare"
        )
    return matched
