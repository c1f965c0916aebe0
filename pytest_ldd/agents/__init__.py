"""Agent episodes: what they cost, whether they succeeded, and corpus metrics over them.

Every name lives in a small module of this package and is re-exported here.
"""

from __future__ import annotations

from pytest_ldd.agents.checkers import (
    Checker,
    CheckResult,
    FinalStateCheck,
    final_state_diff,
    final_state_match,
    output_match,
    quasi_exact_match,
    recorded_success,
    resolve_checker,
    run_check,
)
from pytest_ldd.agents.corpus import CorpusTally, GradedEpisode, grade
from pytest_ldd.agents.episode import Cost, Episode
from pytest_ldd.agents.evaluate import EpisodeMetric, EvalReport, evaluate
from pytest_ldd.agents.metrics import (
    WILSON_Z95,
    CostPerSuccessMetric,
    Score,
    TaskSuccessMetric,
    wilson_interval,
)
from pytest_ldd.agents.prices import ModelPrice, episode_dollars, load_prices, per_million
from pytest_ldd.agents.trials import (
    PassEstimate,
    estimate_pass_at_k,
    estimate_pass_hat_k,
    pass_at_k,
    pass_hat_k,
)

__all__ = [
    "WILSON_Z95",
    "CheckResult",
    "Checker",
    "CorpusTally",
    "Cost",
    "CostPerSuccessMetric",
    "Episode",
    "EpisodeMetric",
    "EvalReport",
    "FinalStateCheck",
    "GradedEpisode",
    "ModelPrice",
    "PassEstimate",
    "Score",
    "TaskSuccessMetric",
    "episode_dollars",
    "estimate_pass_at_k",
    "estimate_pass_hat_k",
    "evaluate",
    "final_state_diff",
    "final_state_match",
    "grade",
    "load_prices",
    "output_match",
    "pass_at_k",
    "pass_hat_k",
    "per_million",
    "quasi_exact_match",
    "recorded_success",
    "resolve_checker",
    "run_check",
    "wilson_interval",
]
