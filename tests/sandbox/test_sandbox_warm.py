"""The warm start and corpus grading: grade_many, zygotes, and what a warm child inherits.

A warm run is forked from a zygote of this process that imported pytest and the
runner once.  These tests prove it grades as the cold start does, that nothing one
workspace plants reaches the next verdict, that a hanging workspace holds up one
worker only, that a lost zygote costs no verdict, and where it starts cold instead.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from humaneval import load_problems, write_hidden, write_workspace, wrong_completions
from sandbox_support import write_tree

from pytest_ldd import sandbox
from pytest_ldd._sandbox import warm as zygotes
from pytest_ldd.agents import (
    Cost,
    CostPerSuccessMetric,
    Episode,
    ModelPrice,
    TaskSuccessMetric,
    evaluate,
)
from pytest_ldd.errors import InvalidSpecError, SandboxError
from pytest_ldd.sandbox import COLD_START, grade_many, hidden_tests, run_hidden_tests

CALC = "def add(a, b):\n    return a + b\n"
HIDDEN = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


@pytest.fixture(autouse=True)
def _fresh_zygotes() -> object:
    """Each test starts and ends without zygotes, so it sees the ones it made."""
    zygotes.shutdown()
    yield
    zygotes.shutdown()


def _pair(
    tmp_path: Path, name: str, workspace: dict[str, str], hidden: str = HIDDEN
) -> tuple[Path, Path]:
    ws = write_tree(tmp_path / name / "ws", workspace)
    tests = write_tree(tmp_path / name / "hidden", {"test_calc.py": hidden})
    return ws, tests


def _graded_warm_as_cold(tmp_path: Path, *, repeat: int, isolation: str) -> None:
    """A good and a bad workspace, graded warm (``repeat`` rounds) and cold: the same."""
    good = _pair(tmp_path, "good", {"calc.py": CALC})
    bad = _pair(tmp_path, "bad", {"calc.py": CALC.replace("a + b", "a - b")})
    verdicts = dict(grade_many([good, bad] * repeat, workers=1, isolation=isolation))
    for pair, warm in verdicts.items():
        cold = run_hidden_tests(*pair, isolation=isolation)
        assert (warm.passed, dict(warm.outcomes), warm.tampered, warm.inconclusive) == (
            cold.passed,
            dict(cold.outcomes),
            cold.tampered,
            cold.inconclusive,
        )
        assert COLD_START not in warm.reason, warm.reason
        assert warm.confinement == cold.confinement
    assert verdicts[good].passed
    assert not verdicts[bad].passed


def test_warm_verdicts_equal_cold_ones(tmp_path: Path) -> None:
    _graded_warm_as_cold(tmp_path, repeat=1, isolation="inprocess")
    assert len(zygotes._all) == 1  # one worker, one zygote, reused


# A first workspace plants everything a process can keep; the second one's hidden
# test looks for all of it.  Both run in turn on one zygote.
PLANTER = """
import atexit, builtins, os, sys, threading, time, types

def add(a, b):
    return a + b

planted = types.ModuleType("planted_by_a")
planted.secret = 42
sys.modules["planted_by_a"] = planted
sys.modules["json"] = planted          # a module everyone imports, replaced
builtins.PLANTED = "a"
os.environ["PLANTED"] = "a"
sys.path.insert(0, "/planted")
atexit.register(lambda: os.write(1, b"ATEXIT-RAN\\n"))
threading.Thread(target=time.sleep, args=(60,), name="planted-thread", daemon=True).start()
# The zygote's own folder: the child's parent's working directory.
try:
    with open(f"/proc/{os.getppid()}/cwd/planted.py", "w") as handle:
        handle.write("PLANTED = True\\n")
except OSError:
    pass
"""
LOOKER = """
import builtins, json, os, sys, threading

from calc import add


def test_nothing_planted():
    assert add(2, 3) == 5
    assert "planted_by_a" not in sys.modules
    assert hasattr(json, "dumps") and json.__name__ == "json"
    assert not hasattr(builtins, "PLANTED")
    assert "PLANTED" not in os.environ
    assert "/planted" not in sys.path
    assert [t.name for t in threading.enumerate()] == ["MainThread"]
"""


def test_nothing_a_workspace_plants_reaches_the_next_verdict(tmp_path: Path) -> None:
    first = _pair(tmp_path, "first", {"calc.py": PLANTER})
    second = _pair(tmp_path, "second", {"calc.py": CALC}, hidden=LOOKER)
    results = list(grade_many([first, second], workers=1))
    assert [pair for pair, _ in results] == [first, second]
    (_, planted), (_, looked) = results
    assert planted.passed, planted.reason
    assert looked.passed, (looked.reason, looked.output_tail)
    assert COLD_START not in planted.reason
    assert COLD_START not in looked.reason
    # One zygote served both, and it lives on, unchanged on disk.
    (zygote,) = zygotes._all
    assert zygote.alive()
    assert not (zygote.folder / "planted.py").exists()


def test_an_atexit_hook_of_the_workspace_never_runs(tmp_path: Path) -> None:
    # The child leaves with os._exit, as a cold runner does: the hook would print.
    ws, tests = _pair(tmp_path, "exit", {"calc.py": PLANTER})
    ((_, verdict),) = grade_many([(ws, tests)])
    assert verdict.passed, verdict.reason
    assert " passed in " in verdict.output_tail  # the output was read to its end
    assert "ATEXIT-RAN" not in verdict.output_tail


def test_a_hanging_workspace_holds_up_one_worker_only(tmp_path: Path) -> None:
    hanging = _pair(tmp_path, "hang", {"calc.py": "import time\ntime.sleep(600)\n" + CALC})
    quick = [_pair(tmp_path, f"quick{i}", {"calc.py": CALC}) for i in range(3)]
    started = time.monotonic()
    order = list(grade_many([hanging, *quick], workers=2, timeout=20.0))
    assert [pair for pair, _ in order][-1] == hanging  # completion order, not input order
    assert all(verdict.passed for pair, verdict in order if pair != hanging)
    (hung,) = [verdict for pair, verdict in order if pair == hanging]
    assert not hung.passed
    assert not hung.inconclusive
    assert "timed out" in hung.reason or "timeout" in hung.reason, hung.reason
    assert time.monotonic() - started < 120


def test_a_zygote_lost_mid_run_costs_no_verdict(tmp_path: Path) -> None:
    slow = "import time\n\ndef add(a, b):\n    time.sleep(3)\n    return a + b\n"
    pair = _pair(tmp_path, "slow", {"calc.py": slow})
    results: list[object] = []
    grading = threading.Thread(target=lambda: results.extend(grade_many([pair])))
    grading.start()
    deadline = time.monotonic() + 60
    while not zygotes._all and time.monotonic() < deadline:
        time.sleep(0.05)
    (zygote,) = zygotes._all
    time.sleep(1.5)  # the child is in its test by now
    os.kill(zygote.proc.pid, signal.SIGKILL)
    grading.join(120)
    ((_, verdict),) = results  # type: ignore[misc]
    assert verdict.passed, verdict.reason
    assert f"({COLD_START} the zygote was lost during a warm run" in verdict.reason
    # The next run gets a new zygote.
    ((_, again),) = list(grade_many([_pair(tmp_path, "next", {"calc.py": CALC})]))
    assert again.passed, again.reason
    assert COLD_START not in again.reason
    assert zygotes._all
    assert zygotes._all[0] is not zygote


@pytest.mark.parametrize(
    ("options", "why"),
    [
        ({"python": sys.executable}, "an interpreter or wrapper of the caller's starts cold"),
        ({"warm": False}, None),
    ],
)
def test_where_it_cannot_start_warm_it_starts_cold_and_says_so(
    tmp_path: Path, options: dict[str, object], why: str | None
) -> None:
    ((_, verdict),) = list(grade_many([_pair(tmp_path, "p", {"calc.py": CALC})], **options))  # type: ignore[arg-type]
    assert verdict.passed, verdict.reason
    if why is None:
        assert COLD_START not in verdict.reason
    else:
        assert verdict.reason.endswith(f"({COLD_START} {why})")
    assert not zygotes._all


def test_a_system_without_safe_fork_starts_cold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    ((_, verdict),) = list(grade_many([_pair(tmp_path, "p", {"calc.py": CALC})]))
    assert verdict.passed
    assert verdict.reason.endswith(f"({COLD_START} fork is not used on darwin)")


def test_grade_many_errors_name_the_field(tmp_path: Path) -> None:
    pair = _pair(tmp_path, "p", {"calc.py": CALC})
    with pytest.raises(SandboxError, match=r"'workers' must be an int >= 1 \(got 0\)"):
        grade_many([pair], workers=0)
    with pytest.raises(SandboxError, match=r"'warm' must be a bool \(got 'yes'\)"):
        grade_many([pair], warm="yes")  # type: ignore[arg-type]
    with pytest.raises(SandboxError, match=r"'items' must hold \(workspace, tests\) pairs"):
        list(grade_many(["just-a-workspace"]))  # type: ignore[list-item]
    with pytest.raises(SandboxError, match="'tests' must be an existing folder"):
        list(grade_many([(pair[0], tmp_path / "missing")]))


def test_progress_goes_to_stderr_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pairs = [_pair(tmp_path, f"p{i}", {"calc.py": CALC}) for i in range(2)]
    assert all(v.passed for _, v in grade_many(pairs, progress=True))
    err = capsys.readouterr().err
    assert "\rgraded 2/2: 2 passed, 0 failed, 0 inconclusive" in err
    assert all(v.passed for _, v in grade_many(pairs))  # not a terminal: nothing drawn
    assert capsys.readouterr().err == ""


def test_the_problem_set_grades_the_same_warm_canonical_all_pass_wrong_all_fail(
    tmp_path: Path,
) -> None:
    # Every fourth problem keeps the suite short; the benchmark grades all 164 both
    # ways and fails on any verdict that differs from this expectation.
    problems = load_problems()[::4]
    wrong = wrong_completions()
    items = []
    expected = {}
    for problem in problems:
        hidden = write_hidden(problem, tmp_path / "hidden" / problem.slug)
        good = write_workspace(
            problem, problem.canonical_solution, tmp_path / "good" / problem.slug
        )
        bad = write_workspace(problem, wrong[problem.task_id][0], tmp_path / "bad" / problem.slug)
        items += [(good, hidden), (bad, hidden)]
        expected[(good, hidden)] = True
        expected[(bad, hidden)] = False
    graded = dict(grade_many(items, workers=2))
    assert len(graded) == 2 * len(problems)
    wrongly = {str(pair[0]): v.reason for pair, v in graded.items() if v.passed != expected[pair]}
    assert not wrongly
    assert not [v.reason for v in graded.values() if v.tampered or v.inconclusive]
    assert not [v.reason for v in graded.values() if COLD_START in v.reason]


# evaluate() grades a corpus through the warm grader: every workspace once per checker,
# ahead of the scoring, with the scores of grading each episode alone.


def _counting_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the workspace of every sandbox run from here on (warm or cold)."""
    seen: list[str] = []
    real = sandbox._run

    def counted(workspace: object, *args: object, **kwargs: object) -> object:
        seen.append(os.fspath(workspace))  # type: ignore[arg-type]
        return real(workspace, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sandbox, "_run", counted)
    return seen


def _corpus(tmp_path: Path) -> tuple[list[Episode], Path]:
    tests = write_tree(tmp_path / "hidden", {"test_calc.py": HIDDEN})
    good = write_tree(tmp_path / "good", {"calc.py": CALC})
    bad = write_tree(tmp_path / "bad", {"calc.py": CALC.replace("a + b", "a - b")})
    cost = Cost(input_tokens=1000, output_tokens=100)
    episodes = [
        Episode("t1", workspace=good, cost=cost),
        Episode("t2", workspace=bad, cost=cost),
        Episode("t1", workspace=good, cost=cost),  # a second trial on the same folder
        Episode("t3", workspace=str(bad), cost=cost),
    ]
    return episodes, tests


def test_evaluate_grades_each_workspace_once_ahead_and_scores_as_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    episodes, tests = _corpus(tmp_path)
    checker = hidden_tests(tests)
    price = ModelPrice(input=1e-6, output=2e-6)
    metrics = [
        TaskSuccessMetric(check=checker),
        CostPerSuccessMetric(check=checker, price=price),
    ]
    alone = {m.name: tuple(m(ep, None) for ep in episodes) for m in metrics}  # cold, one by one
    runs = _counting_runs(monkeypatch)
    report = evaluate(metrics, episodes, [None] * len(episodes), workers=2, progress=False)
    # Two distinct folders (a Path and its str are one), each graded once: the second
    # trial on a folder and the second metric on the same checker grade nothing anew.
    assert sorted(runs) == sorted({os.fspath(ep.workspace) for ep in episodes})  # type: ignore[arg-type]
    for name, scores in alone.items():
        got = report.scores[name]
        assert [(s.value, s.success, s.inconclusive) for s in got] == [
            (s.value, s.success, s.inconclusive) for s in scores
        ]
        assert all(COLD_START not in s.detail for s in got), [s.detail for s in got]
    assert report.aggregates["task_success"] == 0.5
    assert len(zygotes._all) >= 1  # graded warm
    # Nothing is kept once evaluate returns: the checker grades afresh.
    runs.clear()
    assert checker(episodes[0]) is True
    assert runs == [os.fspath(episodes[0].workspace)]  # type: ignore[arg-type]


def test_evaluate_grades_two_checkers_each_with_its_own_tests(tmp_path: Path) -> None:
    episodes, tests = _corpus(tmp_path)
    strict = write_tree(
        tmp_path / "strict",
        {"test_calc.py": HIDDEN + "\n\ndef test_neg():\n    assert add(-1, 1) == 1\n"},
    )
    metrics = [
        TaskSuccessMetric(check=hidden_tests(tests), name="lenient"),
        TaskSuccessMetric(check=hidden_tests(strict), name="strict"),
    ]
    report = evaluate(metrics, episodes, [None] * len(episodes), workers=2, progress=False)
    assert [s.success for s in report.scores["lenient"]] == [True, False, True, False]
    assert [s.success for s in report.scores["strict"]] == [False, False, False, False]


def test_evaluate_raises_a_workspace_set_up_error_as_grading_alone_would(
    tmp_path: Path,
) -> None:
    episodes, tests = _corpus(tmp_path)
    missing = Episode("t9", workspace=tmp_path / "never-written")
    metric = TaskSuccessMetric(check=hidden_tests(tests))
    with pytest.raises(SandboxError) as alone:
        metric(missing, None)
    with pytest.raises(SandboxError) as ahead:
        evaluate(metric, [*episodes, missing], [None] * 5, workers=2, progress=False)
    assert str(ahead.value) == str(alone.value)
    assert "'workspace' must be an existing folder" in str(ahead.value)


def test_evaluate_leaves_an_episode_without_a_workspace_to_say_so(tmp_path: Path) -> None:
    episodes, tests = _corpus(tmp_path)
    metric = TaskSuccessMetric(check=hidden_tests(tests))
    with pytest.raises(SandboxError, match="needs the episode's 'workspace'"):
        evaluate(metric, [*episodes, Episode("t0")], [None] * 5, progress=False)


@pytest.mark.parametrize("workers", [0, -1, 1.5, True, "2"])
def test_evaluate_workers_must_be_a_positive_int(tmp_path: Path, workers: object) -> None:
    episodes, tests = _corpus(tmp_path)
    metric = TaskSuccessMetric(check=hidden_tests(tests))
    with pytest.raises(InvalidSpecError, match=r"'workers' must be an int >= 1 \(got"):
        evaluate(metric, episodes, [None] * 4, workers=workers)  # type: ignore[arg-type]


def test_evaluate_progress_counts_the_corpus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    episodes, tests = _corpus(tmp_path)
    evaluate(TaskSuccessMetric(check=hidden_tests(tests)), episodes, [None] * 4, progress=True)
    err = capsys.readouterr().err
    assert "graded 2/2: 1 passed, 1 failed, 0 inconclusive" in err, err


def test_the_checker_starts_warm_and_grades_as_a_cold_start(tmp_path: Path) -> None:
    episodes, tests = _corpus(tmp_path)
    warm, cold = hidden_tests(tests), hidden_tests(tests, warm=False)
    assert repr(cold) == f"hidden_tests({str(tests)!r}, warm=False)"
    assert repr(warm) == f"hidden_tests({str(tests)!r})"
    cold_verdicts = [cold.verdict_for(ep) for ep in episodes]
    assert zygotes._all == []  # a cold checker made no zygote
    warm_verdicts = [warm.verdict_for(ep) for ep in episodes]
    assert len(zygotes._all) == 1  # one zygote, reused by every verdict of the checker
    assert [v.passed for v in warm_verdicts] == [v.passed for v in cold_verdicts]
    assert [v.passed for v in warm_verdicts] == [True, False, True, False]
    assert all(COLD_START not in v.reason for v in warm_verdicts)


@pytest.mark.parametrize("warm", [1, "yes", None])
def test_the_checkers_warm_must_be_a_bool(tmp_path: Path, warm: object) -> None:
    _, tests = _corpus(tmp_path)
    with pytest.raises(SandboxError, match=r"'warm' must be a bool \(got"):
        hidden_tests(tests, warm=warm)  # type: ignore[arg-type]


# Process isolation starts warm too: its judge (pytest, never the workspace's code) is
# forked from a zygote of its own kind; each verdict's subject is a fresh process.


def test_process_isolation_forks_its_judge_warm_and_grades_as_cold(tmp_path: Path) -> None:
    _graded_warm_as_cold(tmp_path, repeat=2, isolation="process")
    assert [z.kind for z in zygotes._all] == ["judge"]  # one zygote, reused, of the judge


def test_both_isolations_keep_zygotes_of_their_own(tmp_path: Path) -> None:
    pair = _pair(tmp_path, "p", {"calc.py": CALC})
    for isolation in ("inprocess", "process", "inprocess", "process"):
        ((_, verdict),) = list(grade_many([pair], isolation=isolation))
        assert verdict.passed, verdict.reason
        assert COLD_START not in verdict.reason
    assert sorted(z.kind for z in zygotes._all) == ["judge", "runner"]


# A first workspace, graded in process isolation, plants what its subject can; the next
# verdict on the same judge zygote looks for it from the hidden test (the judge) and
# from the workspace's code (its own subject).
PROCESS_PLANTER = """
import builtins, os, sys, types

def add(a, b):
    return a + b

planted = types.ModuleType("planted_by_a")
sys.modules["planted_by_a"] = planted
builtins.PLANTED = "a"
os.environ["PLANTED"] = "a"
# The subject's own modules, which a forked subject shares with its template.
for name in ("_ldd_subject", "_ldd_wire", "_ldd_template"):
    if name in sys.modules:
        sys.modules[name].PLANTED = "a"
"""
PROCESS_LOOKER = """
import builtins, os, sys

def add(a, b):
    return a + b

def leftovers():
    return [
        "planted_by_a" in sys.modules,
        hasattr(builtins, "PLANTED"),
        "PLANTED" in os.environ,
        any(
            hasattr(sys.modules.get(name), "PLANTED")
            for name in ("_ldd_subject", "_ldd_wire", "_ldd_template")
        ),
    ]
"""
PROCESS_LOOKING = """
import builtins, os, sys
from calc import add, leftovers


def test_nothing_planted():
    assert add(2, 3) == 5
    assert leftovers() == [False, False, False, False]
    assert "planted_by_a" not in sys.modules
    assert not hasattr(builtins, "PLANTED")
    assert "PLANTED" not in os.environ
"""


def test_nothing_a_workspace_plants_reaches_the_next_process_verdict(tmp_path: Path) -> None:
    first = _pair(tmp_path, "a", {"calc.py": PROCESS_PLANTER})
    second = _pair(tmp_path, "b", {"calc.py": PROCESS_LOOKER}, PROCESS_LOOKING)
    graded = dict(grade_many([first, second], workers=1, isolation="process"))
    assert len(zygotes._all) == 1
    assert graded[first].passed, graded[first].reason
    assert graded[second].passed, graded[second].reason + graded[second].output_tail[-2000:]


# Each warm judge's subject is forked from the zygote's subject template, an
# interpreter that loaded the subject's modules and never ran workspace code; a cold
# judge starts its subject itself.
FORKED = """
import os

def add(a, b):
    return a + b

def parent():
    return os.getppid()

def hashed(text):
    return hash(text)
"""
FORKED_TEST = """
import os
from calc import add, hashed, parent


def test_forked_from_the_template():
    assert add(2, 3) == 5
    # The judge and its subject hash strings alike (a set iterates in one order).
    assert hashed("pytest-ldd") == hash("pytest-ldd")
    with open(f"/proc/{parent()}/cmdline", "rb") as cmdline:
        assert (parent() == os.getpid()) == (os.environ.get("EXPECT") == "cold")
        assert (b"m.serve(" in cmdline.read()) == (os.environ.get("EXPECT") == "warm")
"""


@pytest.mark.parametrize("start", ["cold", "warm"])
def test_a_warm_judge_forks_its_subject_from_the_template(tmp_path: Path, start: str) -> None:
    pair = _pair(tmp_path, start, {"calc.py": FORKED}, FORKED_TEST)
    env = {"EXPECT": start}
    if start == "warm":
        verdicts = [v for _, v in grade_many([pair, pair], isolation="process", env=env)]
    else:
        verdicts = [run_hidden_tests(*pair, isolation="process", env=env)]
    for verdict in verdicts:
        assert verdict.passed, verdict.reason + verdict.output_tail[-2000:]
