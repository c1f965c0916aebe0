"""A cheap judge: guesses, without running anything, whether a solution is right.

It reads the module the agent wrote and scores how finished it looks.  That is
what a cheap judge (a heuristic or a small model) does in real evaluations: it is
fast, and it is often wrong in a particular way.  This one cannot tell a subtle
bug from a correct solution, because both look equally finished.  Calibrating its
probability against the hidden tests is how the suite finds that out.
"""

from __future__ import annotations

import ast
from pathlib import Path

__all__ = ["success_probability"]

#: Phrases that mark an unfinished solution.
UNFINISHED = ("NotImplementedError", "TODO", "FIXME")


def success_probability(workspace: Path, task: str) -> float:
    """The judge's probability, in [0, 1], that ``task`` is solved in ``workspace``."""
    module = workspace / f"{task}.py"
    try:
        source = module.read_text(encoding="utf-8")
        tree = ast.parse(source)
    except (OSError, SyntaxError, UnicodeDecodeError):
        return 0.02
    functions = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    function = functions.get(task)
    if function is None or any(phrase in source for phrase in UNFINISHED):
        return 0.05
    probability = 0.6
    if ast.get_docstring(function):
        probability += 0.1
    if "raise ValueError" in source:  # it thought about bad input
        probability += 0.1
    if len(function.body) >= 4:  # more than a one-liner
        probability += 0.05
    return round(min(probability, 0.95), 2)
