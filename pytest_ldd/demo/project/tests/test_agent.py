"""The agent's coding tasks, graded by hidden tests, with its judge and speed as metrics.

Each task is one test.  It yields the agent's episode (graded in the sandbox by that
task's hidden tests: ``task_success``, and ``cost_per_success`` from the tokens it
spent), then two calibrated metrics:

* ``judge_verdict``: the hidden-test verdict, predicted by the cheap judge; its
  calibration says whether the judge could stand in for the hidden tests;
* ``solve_seconds``: how long the attempt took, predicted from the same task's
  earlier sessions; its gate (``le=2.0``) fails the run once it is load-bearing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

# demo_agent and judge live in the project's top folder ([tool.pytest.ini_options] pythonpath).
import demo_agent
import judge
import pytest

from pytest_ldd import Episode, Observation
from pytest_ldd.sandbox import Verdict, hidden_tests

HIDDEN = Path(__file__).resolve().parent.parent / "hidden"


class GradedOnce:
    """A task's hidden-test checker that runs the sandbox once per workspace.

    The plugin grades the episode with it, and the judge's calibration needs the same
    verdict: remembering it saves a second sandbox run.
    """

    def __init__(self, tests: Path) -> None:
        self.checker = hidden_tests(tests)
        self._verdicts: dict[Path, Verdict] = {}

    def __call__(self, episode: Episode, gold: object = None) -> bool:
        """True iff the task's hidden tests pass on the episode's workspace."""
        return self.verdict_for(episode).passed

    def verdict_for(self, episode: Episode) -> Verdict:
        """The sandbox's verdict on ``episode.workspace`` (run on first use)."""
        workspace = Path(episode.workspace or "")
        if workspace not in self._verdicts:
            self._verdicts[workspace] = self.checker.verdict_for(episode)
        return self._verdicts[workspace]


#: One checker per task, each with that task's hidden tests.
CHECKERS = {task: GradedOnce(HIDDEN / task) for task in demo_agent.TASKS}


@pytest.mark.metric(
    "solve_seconds",
    kind="positive",
    unit="s",
    description="wall-clock seconds the agent took to produce a solution for the task",
    normalize_scale=5.0,
    predictor="history_mean",
    le=2.0,
)
@pytest.mark.metric("judge_verdict")
@pytest.mark.parametrize(
    "task",
    [
        pytest.param(task, marks=pytest.mark.metric("task_success", check=CHECKERS[task]), id=task)
        for task in demo_agent.TASKS
    ],
)
def test_agent_task(task: str, tmp_path: Path, session_number: int) -> Iterator[Any]:
    workspace = tmp_path / "workspace"
    attempt = demo_agent.attempt(task, workspace, session=session_number)
    episode = Episode(task_id=task, workspace=workspace, cost=attempt.cost, model=attempt.model)
    yield episode, None  # graded by the task's hidden tests

    verdict = CHECKERS[task].verdict_for(episode)  # the verdict above: no second run
    yield Observation(
        "judge_verdict",
        observed=1.0 if verdict.passed else 0.0,
        predicted=judge.success_probability(workspace, task),
    )
    yield Observation("solve_seconds", attempt.seconds)
