"""HumanEval as the sandbox grades it: one workspace per sample, one hidden test per problem.

``HumanEval.jsonl.gz`` is OpenAI's file, unmodified (164 problems: a prompt, a
canonical solution, a ``check(candidate)`` test and the entry point's name);
``wrong.jsonl`` holds, per problem, a completion that is the canonical one with one
token changed (``make_wrong.py`` chose it), which fails that problem's test.

A sample is graded as the public harness grades it, with pytest instead of ``exec``:
the workspace holds ``solution.py`` (the prompt followed by the completion) and the
hidden test file imports it, then calls the problem's ``check`` on the entry point.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DATA",
    "Problem",
    "hidden_source",
    "load_problems",
    "write_hidden",
    "write_workspace",
    "wrong_completions",
]

DATA = Path(__file__).parent / "data" / "humaneval"
_MODULE = "solution"


@dataclass(frozen=True)
class Problem:
    """One problem of the set, as the JSONL file holds it."""

    task_id: str
    prompt: str
    canonical_solution: str
    test: str
    entry_point: str

    @property
    def slug(self) -> str:
        """A name for folders: ``HumanEval/7`` -> ``HumanEval_7``."""
        return self.task_id.replace("/", "_")


def load_problems(path: Path = DATA / "HumanEval.jsonl.gz") -> list[Problem]:
    """Every problem of a HumanEval-format file (gzipped or not), in file order."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as lines:
        return [
            Problem(
                task_id=record["task_id"],
                prompt=record["prompt"],
                canonical_solution=record["canonical_solution"],
                test=record["test"],
                entry_point=record["entry_point"],
            )
            for record in map(json.loads, lines)
        ]


def wrong_completions(path: Path = DATA / "wrong.jsonl") -> dict[str, tuple[str, str]]:
    """task id -> (a wrong completion, the one change that made it wrong)."""
    with path.open(encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines]
    return {r["task_id"]: (r["completion"], r["mutation"]) for r in records}


def write_workspace(problem: Problem, completion: str, folder: Path) -> Path:
    """The workspace of one sample: ``solution.py`` = the prompt, then the completion."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{_MODULE}.py").write_text(problem.prompt + completion, encoding="utf-8")
    return folder


def hidden_source(problem: Problem) -> str:
    """The hidden test file of a problem: its ``check``, called on the entry point."""
    return (
        # The prompt's own helpers (poly, encode_cyclic, ...) are used by some checks.
        f"from {_MODULE} import *  # noqa: F403\n"
        f"from {_MODULE} import {problem.entry_point}\n"
        f"{problem.test}\n\n"
        f"def test_{problem.entry_point}():\n"
        f"    check({problem.entry_point})\n"
    )


def write_hidden(problem: Problem, folder: Path) -> Path:
    """The hidden tests' folder of a problem (one file, ``test_<entry point>.py``)."""
    folder.mkdir(parents=True, exist_ok=True)
    name = f"test_{problem.entry_point}.py"
    (folder / name).write_text(hidden_source(problem), encoding="utf-8")
    return folder
