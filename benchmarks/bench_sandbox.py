"""Verdict time of the hardened sandbox against a plain ``python -m pytest`` subprocess.

Both arms grade the same honest workspace with the same hidden tests:

- ``sandbox``: ``run_hidden_tests(workspace, hidden)`` -- copying the workspace and the
  hidden tests, planting the canaries, the isolated child under limits, the
  authenticated channel, the cross-checks -- timed from the call to the verdict;
- ``plain``: ``python -m pytest -p no:cacheprovider -q hidden/`` run in the workspace,
  timed from spawn to exit (what a naive harness does, trusting the exit code);
- ``plain_no_autoload``: the same with ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``.  The
  sandbox turns plugin autoload off, which saves the start-up of every installed
  plugin; this arm shows what the hardening itself costs (informational, no target).

Repetitions are interleaved in rotated rounds (A B C, B C A, ...) after a warm-up
round, and each arm is summarized by its median.  Target: ``sandbox / plain <= 1.25``.

``run(quick)`` returns the figures (the benchmark suite's ``run.py`` imports it);
``python benchmarks/bench_sandbox.py [--quick]`` prints them as JSON.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Arm, child_env, interleave, pytest_command, run_child

from pytest_ldd.sandbox import run_hidden_tests

TARGET_RATIO = 1.25
FILES = 3
TESTS_PER_FILE = 20

_MODULE = '''"""A small honest solution: arithmetic and text helpers."""


def add(a, b):
    return a + b


def mul(a, b):
    return a * b


def clamp(x, low, high):
    return max(low, min(high, x))


def words(text):
    return text.split()
'''


def _hidden_file(index: int) -> str:
    cases = ", ".join(f"({i}, {i + index})" for i in range(TESTS_PER_FILE - 4))
    return f"""import pytest

from solution import add, clamp, mul, words


@pytest.mark.parametrize(("a", "b"), [{cases}])
def test_add_commutes(a, b):
    assert add(a, b) == add(b, a)


def test_mul_{index}():
    assert mul({index + 2}, 3) == {3 * (index + 2)}


def test_clamp_{index}():
    assert clamp({index + 50}, 0, 10) == 10


def test_words_{index}():
    assert words("a b  c") == ["a", "b", "c"]


class TestMore{index}:
    def test_zero(self):
        assert mul(0, {index}) == 0
"""


def _write_task(root: Path) -> tuple[Path, Path]:
    workspace = root / "workspace"
    (workspace / "solution").mkdir(parents=True)
    (workspace / "solution" / "__init__.py").write_text(_MODULE, encoding="utf-8")
    (workspace / "README.md").write_text("An honest solution.\n", encoding="utf-8")
    hidden = root / "hidden"
    hidden.mkdir()
    for index in range(FILES):
        (hidden / f"test_task_{index}.py").write_text(_hidden_file(index), encoding="utf-8")
    return workspace, hidden


def run(quick: bool) -> dict[str, Any]:
    """Measure both arms and return the figures, with the ratio as a target."""
    repetitions = 5 if quick else 15
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp:
        workspace, hidden = _write_task(Path(tmp))
        plain = pytest_command("-q", str(hidden))

        def sandbox_arm() -> float:
            start = time.perf_counter()
            verdict = run_hidden_tests(workspace, hidden)
            elapsed = time.perf_counter() - start
            if not verdict.passed:
                msg = f"the honest workspace must pass: {verdict.reason}"
                raise RuntimeError(msg)
            return elapsed

        def plain_arm() -> float:
            return run_child(plain, cwd=workspace).check(0).wall_s

        no_autoload = child_env({"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})

        def no_autoload_arm() -> float:
            return run_child(plain, cwd=workspace, env=no_autoload).check(0).wall_s

        arms = [
            Arm("sandbox", sandbox_arm),
            Arm("plain", plain_arm),
            Arm("plain_no_autoload", no_autoload_arm),
        ]
        comparison = interleave(arms, repetitions)
    ratio = comparison.ratio("sandbox", "plain")
    tests = FILES * TESTS_PER_FILE
    return {
        "what": "verdict time: run_hidden_tests vs a plain python -m pytest subprocess",
        "tests": tests,
        "repetitions": repetitions,
        "sandbox_median_s": comparison.median("sandbox"),
        "plain_median_s": comparison.median("plain"),
        "plain_no_autoload_median_s": comparison.median("plain_no_autoload"),
        "ratio": ratio,
        "ratio_vs_no_autoload": comparison.ratio("sandbox", "plain_no_autoload"),
        "arms": comparison.to_json("s"),
        "targets": [
            {
                "name": "verdict_time_ratio",
                "value": ratio,
                "limit": TARGET_RATIO,
                "unit": "x",
                "what": f"median sandbox / median plain pytest, {tests} hidden tests",
            }
        ],
    }


if __name__ == "__main__":
    print(json.dumps(run("--quick" in sys.argv[1:]), indent=2))
