"""Write ``wrong.jsonl``: per problem, the canonical completion with one token changed.

Run ``python tests/data/humaneval/make_wrong.py`` to regenerate it; the output is
deterministic.  The candidates of a problem are tried in the order of the canonical
completion's tokens, each with one change: a comparison flipped (``<`` to ``<=``,
``==`` to ``!=``, ...); ``+`` and ``-``, ``and`` and ``or``, ``%`` and ``//``,
``True`` and ``False``, ``min`` and ``max``, ``any`` and ``all``, ``sorted`` and
``reversed`` swapped; ``*`` to ``+``, ``/`` to ``*``, a number plus one, ``in`` to
``not in``, ``set`` to ``list``, ``len(...)`` to ``1 + len(...)``, ``isinstance`` to
``not isinstance``; and, only where none of those fails, a ``return`` that returns
``None`` instead.
The first candidate that compiles and makes the problem's ``check`` fail (an exception,
not a timeout), run as the public harness runs it (``exec`` in a fresh interpreter),
is kept.  Those wrong completions fail fast, so a test can grade all 164.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tokenize
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).parent
# The loader is the test suite's own (tests/humaneval.py).
sys.path.insert(0, str(HERE.parent.parent))

from humaneval import Problem, load_problems  # noqa: E402

_SWAPS = {
    "<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==",
    "+": "-", "-": "+", "and": "or", "or": "and", "True": "False", "False": "True",
    "min": "max", "max": "min", "%": "//", "//": "%", "*": "+", "/": "*",
    "sorted": "reversed", "reversed": "sorted", "any": "all", "all": "any", "in": "not in",
    "set": "list", "len": "1 + len",
    "isinstance": "not isinstance",
}  # fmt: skip
_TIMEOUT_S = 5.0
# Runs one program in a fresh interpreter: exit 0 when check() passed, 1 when it raised.
_RUN = (
    "import sys\n"
    "program = sys.stdin.read()\n"
    "try:\n"
    "    exec(program, {'__name__': '__candidate__'})\n"
    "except BaseException:\n"
    "    sys.exit(1)\n"
)


def _candidates(completion: str) -> Iterator[tuple[str, str]]:
    """(changed completion, what changed) for each token that can be changed, in order.

    The changes of :data:`_SWAPS` and numbers come first; a ``return`` that forgets its
    result only where none of those fails the check.
    """
    lines = completion.splitlines(keepends=True)
    tokens = list(tokenize.generate_tokens(io.StringIO(completion).readline))
    changes = []
    for token in tokens:
        if token.type == tokenize.NUMBER and token.string.isdigit():
            changes.append((token, str(int(token.string) + 1)))
        elif token.type == tokenize.NUMBER and _is_float(token.string):
            changes.append((token, repr(float(token.string) + 1.0)))
        elif token.type in (tokenize.OP, tokenize.NAME) and token.string in _SWAPS:
            changes.append((token, _SWAPS[token.string]))
    changes += [
        (token, "return None if True else")
        for token in tokens
        if token.type == tokenize.NAME and token.string == "return"
    ]
    for token, new in changes:
        (row, start), (end_row, end) = token.start, token.end
        if row != end_row:
            continue
        line = lines[row - 1]
        changed = list(lines)
        changed[row - 1] = line[:start] + new + line[end:]
        yield "".join(changed), f"line {row}: {token.string!r} -> {new!r}"


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _fails(problem: Problem, completion: str) -> bool:
    program = f"{problem.prompt}{completion}\n{problem.test}\ncheck({problem.entry_point})\n"
    try:
        compile(program, "<candidate>", "exec")
    except SyntaxError:
        return False
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-c", _RUN],
            input=program,
            text=True,
            capture_output=True,
            timeout=_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 1


def main() -> int:
    records = []
    for problem in load_problems():
        for completion, where in _candidates(problem.canonical_solution):
            if _fails(problem, completion):
                records.append(
                    {"task_id": problem.task_id, "completion": completion, "mutation": where}
                )
                break
        else:
            print(f"{problem.task_id}: no single-token change fails its check", file=sys.stderr)
            return 1
    with (HERE / "wrong.jsonl").open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, sort_keys=True) + "\n")
    print(f"{len(records)} wrong completions written")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
