"""Agent episodes in the plugin: grading, corpus figures, corpus gates, xdist."""

from __future__ import annotations

import json

import pytest
from plugin_support import read_jsonl, run, state_of

PYPROJECT = """
[tool.ldd.agents]
prices = "prices.toml"
model = "small-model"

[tool.ldd.gates]
task_success = {ge = 0.8}
"""

PRICES = """
[models."small-model"]
input_per_million = 1.0
output_per_million = 2.0
"""

SUITE = """
import pytest
from pytest_ldd import Cost, Episode

TASKS = [("t1", "42", "42"), ("t2", "paris", "Paris"), ("t3", "7", "8"), ("t4", "x", "y")]

@pytest.mark.metric("task_success", check="output")
@pytest.mark.parametrize(("task_id", "output", "gold"), TASKS)
def test_task(task_id, output, gold):
    cost = Cost(input_tokens=1000, output_tokens=500)
    yield Episode(task_id, output=output, cost=cost), gold


def test_fixture(ldd):
    from pytest_ldd import Cost, Episode

    scores = ldd.episode(Episode("t5", output="ok", cost=Cost(input_tokens=1000)), "ok")
    assert scores["task_success"].value == 1.0
    assert scores["cost_per_success"].value == pytest.approx(0.001)
"""


@pytest.fixture
def agent_project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyprojecttoml(PYPROJECT)
    (pytester.path / "prices.toml").write_text(PRICES)
    pytester.makepyfile(test_agents=SUITE)
    return pytester


def test_corpus_figures_in_summary_and_json(agent_project: pytest.Pytester) -> None:
    result = run(agent_project, "--ldd", "--ldd-report=report.json")
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=5)
    # 3 of 5 succeeded; dollars 4 x 0.002 + 0.001 = 0.009; 0.009 / 3 per success.
    result.stdout.fnmatch_lines(
        [
            "*task_success: 3/5 = 0.600 (95% CI 0.231-0.882)*",
            "*cost-of-pass: $0.0030 per successful task*total $0.0090*",
            "*corpus advisory breach: task_success = 0.6, limit ge 0.8*",
        ]
    )
    doc = json.loads((agent_project.path / "report.json").read_text())
    corpus = doc["session"]["corpus"]
    assert corpus["task_success"]["n"] == 5
    assert corpus["task_success"]["successes"] == 3
    assert corpus["task_success"]["success_rate"] == pytest.approx(0.6)
    low, high = corpus["task_success"]["interval"]
    assert (low, high) == (pytest.approx(0.2307, abs=1e-4), pytest.approx(0.8824, abs=1e-4))
    assert corpus["cost_per_success"]["total_dollars"] == pytest.approx(0.009)
    assert corpus["cost_per_success"]["pooled"] == pytest.approx(0.003)
    # t3 and t4 never succeeded: the per-task estimator is infinite (null in JSON).
    assert corpus["cost_per_success"]["per_task"] is None
    by_test = corpus["by_test"]
    assert by_test["test_agents.py::test_task"]["successes"] == 2
    assert by_test["test_agents.py::test_task"]["n"] == 4
    assert by_test["test_agents.py::test_fixture"]["successes"] == 1
    (gate,) = corpus["gates"]
    assert gate == {
        "name": "task_success",
        "op": "ge",
        "limit": 0.8,
        "value": 0.6,
        "state": "insufficient_data",
        "enforced": False,
        "breached": True,
    }
    observations = read_jsonl(agent_project.path / ".ldd" / "observations.jsonl")
    success = sorted(o["raw"] for o in observations if o["metric_name"] == "task_success")
    assert success == [0.0, 0.0, 1.0, 1.0, 1.0]
    costs = [o["raw"] for o in observations if o["metric_name"] == "cost_per_success"]
    assert sorted(costs) == pytest.approx([0.001, 0.002, 0.002, 0.002, 0.002])


def test_corpus_gate_becomes_load_bearing_after_calibration(
    agent_project: pytest.Pytester,
) -> None:
    ldd_dir = agent_project.path / ".ldd"
    # Session 1 has no history to predict from; sessions 2-6 log one pair each.
    for _ in range(6):
        result = run(agent_project, "--ldd")
        assert result.ret == 0, result.stdout.str()
    assert state_of(ldd_dir, "task_success") == "load_bearing"
    pairs = [
        p
        for p in read_jsonl(ldd_dir / "metric_calibrations.jsonl")
        if p["metric_name"] == "task_success"
    ]
    assert len(pairs) == 5
    assert all(p["nodeid"] is None for p in pairs)
    result = run(agent_project)
    assert result.ret == 1
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(
        ["*ldd corpus gate failed: task_success = 0.6, limit ge 0.8 (load-bearing: n=5*"]
    )


def test_corpus_figures_are_the_same_under_xdist(agent_project: pytest.Pytester) -> None:
    serial = run(agent_project, "--ldd-report=serial.json")
    parallel = run(agent_project, "-n", "2", "--ldd-report=parallel.json")
    assert serial.ret == parallel.ret == 0
    a = json.loads((agent_project.path / "serial.json").read_text())["session"]["corpus"]
    b = json.loads((agent_project.path / "parallel.json").read_text())["session"]["corpus"]
    assert a == b


def test_unknown_model_fails_the_test_naming_it(agent_project: pytest.Pytester) -> None:
    agent_project.makepyfile(
        test_agents="""
        from pytest_ldd import Cost, Episode

        def test_mystery(ldd):
            ldd.episode(Episode("t1", output="a", model="mystery-model", cost=Cost(10)), "a")
        """
    )
    result = run(agent_project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*mystery-model*"])


def test_checker_that_raises_is_an_error_of_that_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_raising="""
        import pytest
        from pytest_ldd import Episode

        def broken(episode, gold):
            raise RuntimeError("checker exploded")

        @pytest.mark.metric("task_success", check=broken)
        def test_one():
            yield Episode("t1", output="a"), "a"

        def test_other():
            pass
        """
    )
    result = run(pytester)
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*RuntimeError: checker exploded*"])


def test_repeated_tasks_report_pass_hat_k(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_trials="""
        import pytest
        from pytest_ldd import Episode

        # t1 succeeds in both trials, t2 in one of two.
        TRIALS = [("t1", "a"), ("t1", "a"), ("t2", "a"), ("t2", "b")]

        @pytest.mark.metric("task_success", check="output")
        @pytest.mark.parametrize(("task_id", "output"), TRIALS)
        def test_trial(task_id, output):
            yield Episode(task_id, output=output), "a"
        """
    )
    result = run(pytester, "--ldd-report=report.json")
    assert result.ret == 0
    corpus = json.loads((pytester.path / "report.json").read_text())["session"]["corpus"]
    # pass^1 = mean(2/2, 1/2) = 0.75; pass^2 = mean(1, 0) = 0.5.
    assert corpus["pass_hat_k"] == {"1": pytest.approx(0.75), "2": pytest.approx(0.5)}
    # pass@2 = mean(1, 1) = 1.
    assert corpus["pass_at_k"]["2"] == pytest.approx(1.0)
    result.stdout.fnmatch_lines(["*pass^k: k=1 0.750, k=2 0.500*"])


# A checker shaped like the sandbox's hidden_tests(...): a verdict per workspace.  The
# episode's output names the verdict: "ok" passes, "bad" fails, "??" could not be judged
# (the grader's fault); "loose" passes with the agent's code run unconfined.
JUDGE = """
from types import SimpleNamespace

class Verdicts:
    def verdict_for(self, episode):
        out = episode.output
        return SimpleNamespace(
            passed=out in ("ok", "loose"),
            tampered=False,
            inconclusive=out == "??",
            confinement="none" if out == "loose" else "landlock",
            reason={"??": "the judge process died (signal SIGKILL)"}.get(out, out),
        )

    def __call__(self, episode, gold):
        return self.verdict_for(episode).passed
"""

INCONCLUSIVE_SUITE = """
import pytest
from judge import Verdicts
from pytest_ldd import Cost, Episode

OUTPUTS = [("t1", "ok"), ("t2", "bad"), ("t3", "??"), ("t4", "loose")]

@pytest.mark.metric("task_success", check=Verdicts())
@pytest.mark.parametrize(("task_id", "output"), OUTPUTS)
def test_task(task_id, output):
    yield Episode(task_id, output=output, cost=Cost(input_tokens=1000)), None

@pytest.mark.metric("task_success", check=Verdicts())
def test_corpus():
    # Both episodes are graded: the one not judged does not stop the other.
    yield Episode("t5", output="??", cost=Cost(input_tokens=1000)), None
    yield Episode("t6", output="ok", cost=Cost(input_tokens=1000)), None

@pytest.mark.metric("task_success", check=Verdicts())
def test_fixture(ldd):
    scores = ldd.episode(Episode("t7", output="??"))
    assert scores["task_success"].inconclusive
    assert scores["task_success"].success is None
"""


@pytest.fixture
def doubtful_project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyprojecttoml(PYPROJECT)
    (pytester.path / "prices.toml").write_text(PRICES)
    pytester.makepyfile(judge=JUDGE, test_doubtful=INCONCLUSIVE_SUITE)
    pytester.syspathinsert()
    return pytester


def test_an_inconclusive_episode_is_an_error_of_its_test_counted_apart(
    doubtful_project: pytest.Pytester,
) -> None:
    result = run(doubtful_project, "--ldd", "--ldd-report=report.json", "--ldd-html=report.html")
    out = result.stdout.str()
    # t3, test_corpus and test_fixture graded an episode nobody could judge: errors,
    # not failures (which would blame the agent) and not passes.
    result.assert_outcomes(passed=3, errors=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*ERROR at call of test_task?t3-???*",
            "*1 episode could not be judged (inconclusive*",
            "*'t3': inconclusive: the judge process died (signal SIGKILL)*",
            # t1, t4, t6 succeeded and t2 failed: 3 of 4 judged, the other 3 apart.
            "*task_success: 3/4 = 0.750*; 3 inconclusive (not judged, not counted)*",
            "*confinement: 1 of 7 verdicts ran unconfined*",
            "*cost-of-pass: $0.0013 per successful task*total $0.0040*",
        ]
    )
    assert "FAILED" not in out
    doc = json.loads((doubtful_project.path / "report.json").read_text())
    corpus = doc["session"]["corpus"]
    assert corpus["task_success"]["n"] == 4
    assert corpus["task_success"]["successes"] == 3
    assert corpus["task_success"]["inconclusive"] == 3
    assert corpus["confinement"] == {"verdicts": 7, "unconfined": 1}
    assert corpus["cost_per_success"]["total_dollars"] == pytest.approx(0.004)
    assert corpus["by_test"]["test_doubtful.py::test_corpus"]["inconclusive"] == 1
    assert doc["session"]["counts"]["inconclusive"] == 3
    sessions = read_jsonl(doubtful_project.path / ".ldd" / "sessions.jsonl")
    assert sessions[-1]["counts"]["inconclusive"] == 3
    assert sessions[-1]["corpus"]["task_success"]["inconclusive"] == 3
    # Only the four judged episodes were observed.
    observations = read_jsonl(doubtful_project.path / ".ldd" / "observations.jsonl")
    assert len([o for o in observations if o["metric_name"] == "task_success"]) == 4
    html = (doubtful_project.path / "report.html").read_text()
    assert "3 inconclusive (not judged, not counted)" in html
    assert "confinement: 1 of 7 verdicts ran unconfined" in html


def test_inconclusive_episodes_are_errors_under_xdist_too(
    doubtful_project: pytest.Pytester,
) -> None:
    serial = run(doubtful_project, "--ldd-report=serial.json")
    parallel = run(doubtful_project, "-n", "2", "--ldd-report=parallel.json")
    serial.assert_outcomes(passed=3, errors=3)
    parallel.assert_outcomes(passed=3, errors=3)
    a = json.loads((doubtful_project.path / "serial.json").read_text())["session"]["corpus"]
    b = json.loads((doubtful_project.path / "parallel.json").read_text())["session"]["corpus"]
    assert a == b
    assert b["task_success"]["inconclusive"] == 3


def test_a_failure_in_the_phase_stays_a_failure(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        judge=JUDGE,
        test_both="""
        import pytest
        from judge import Verdicts
        from pytest_ldd import Episode

        @pytest.mark.metric("task_success", check=Verdicts())
        def test_broken(ldd):
            assert ldd.episode(Episode("t1", output="??"))["task_success"].inconclusive
            assert 1 == 2

        @pytest.mark.metric("task_success", check=Verdicts())
        def test_next(ldd):
            # The doubt of the test before is not carried into this one.
            ldd.episode(Episode("t2", output="ok"))
        """,
    )
    pytester.syspathinsert()
    result = run(pytester)
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*assert 1 == 2*"])


# Hypothesis runs a test body many times and keeps only the last example: an episode
# an earlier example graded inconclusive is thrown away with that example.
GIVEN_DOUBT = """
import pytest
from hypothesis import given, settings, strategies as st
from judge import Verdicts
from pytest_ldd import Episode

seen = []

@pytest.mark.metric("task_success", check=Verdicts())
@settings(database=None, max_examples=5, derandomize=True)
@given(st.integers(0, 100))
def test_examples(ldd, x):
    seen.append(x)
    # Every example before the last one grades an episode nobody can judge.
    out = "ok" if len(seen) == 5 else "??"
    ldd.episode(Episode(f"t{len(seen)}", output=out))

@pytest.mark.metric("task_success", check=Verdicts())
@settings(database=None, max_examples=5, derandomize=True)
@given(st.integers(0, 100))
def test_last_doubtful(ldd, x):
    seen.append(x)
    out = "??" if len(seen) == 10 else "ok"
    ldd.episode(Episode(f"u{len(seen)}", output=out))
"""


def test_an_inconclusive_episode_of_a_thrown_away_example_is_forgotten(
    doubtful_project: pytest.Pytester,
) -> None:
    doubtful_project.makepyfile(test_given_doubt=GIVEN_DOUBT)
    result = run(doubtful_project, "-p", "no:randomly", "test_given_doubt.py")
    # The first test's last example was judged: a pass.  The second's last example
    # could not be: an error, as for any test.
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at call of test_last_doubtful*"])
    assert "test_examples" not in "\n".join(
        line for line in result.stdout.lines if "ERROR" in line
    )


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_junit_xml_shows_an_inconclusive_episode_as_an_error_never_a_failure(
    doubtful_project: pytest.Pytester, workers: list[str]
) -> None:
    import xml.etree.ElementTree as ET

    run(doubtful_project, "--junitxml=junit.xml", *workers)
    suite = ET.parse(doubtful_project.path / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("errors"), suite.get("failures")) == ("3", "0")
    errors = {
        case.get("name"): case.find("error")
        for case in suite.iter("testcase")
        if case.find("error") is not None
    }
    assert set(errors) == {"test_task[t3-??]", "test_corpus", "test_fixture"}
    for error in errors.values():
        assert (error.get("message") or "").startswith("pytest-ldd: 1 episode could not be judged")
        assert "inconclusive: the judge process died" in (error.text or "")
    # The judged ones stay as they were: t2's failed episode is data, not a failure.
    assert not [case for case in suite.iter("testcase") if case.find("failure") is not None]
