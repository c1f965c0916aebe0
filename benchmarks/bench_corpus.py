"""Corpus grading: verdicts per second, cold, warm (1 and N workers), against an unsafe harness.

The problem set is HumanEval (``tests/data/humaneval/``, 164 problems), each sample a
workspace holding ``solution.py`` (the prompt, then a completion) graded by a hidden
test file that calls the problem's ``check``.  In one run, arm after arm:

- ``public_1``, ``public_N``: the reference harness, written below in the shape of the
  public one (human-eval's ``execution.py``): per sample a ``multiprocessing.Manager``
  list for the result and a forked ``Process`` that enters a temporary folder,
  disables destructive functions, swallows output, sets an alarm and ``exec``s prompt,
  completion, test and ``check``; a thread pool of 1 and N workers.  No isolation;
- ``unsafe_1``, ``unsafe_N``: a leaner harness than the public one: the same
  ``exec`` in a forked process, the result sent back on a pipe, nothing else;
- ``warm_1``, ``warm_N``: :func:`pytest_ldd.sandbox.grade_many` (``inprocess``, the
  default confinement), 1 and N workers, each run forked from a zygote;
- ``cold``: :func:`pytest_ldd.sandbox.run_hidden_tests`, serially, on a subset
  (a cold verdict costs some twenty times a warm one);
- ``cold_process``: the same under ``isolation="process"``;
- ``warm_process_N``: ``grade_many(isolation="process")``, N workers, each judge
  forked from a zygote (each subject a fresh process).

Every verdict of every arm is checked against the expectation: the canonical
completions all pass, the wrong ones (``wrong.jsonl``) all fail; a verdict that
differs fails the run.  Figures: verdicts/s per arm, the ratios warm / public at
the same worker count (target >= 0.25 in ``inprocess``, >= 1.0 in ``process``, its
floor 0.5) and warm / unsafe (the same, reported beside them), the median wall time of a
warm verdict (target <= 100 ms), the zygote's RSS and the peak RSS of the forked
children.  ``python benchmarks/bench_corpus.py [--quick] [--workers N]``; figures go
to ``benchmarks/results_corpus.json``; exits 1 when a target is missed or a verdict
is wrong.
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import faulthandler
import io
import json
import multiprocessing
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _results import load_average, machine, versions
from humaneval import Problem, load_problems, write_hidden, write_workspace, wrong_completions

from pytest_ldd._sandbox import warm as zygotes
from pytest_ldd.agents import estimate_pass_at_k
from pytest_ldd.sandbox import COLD_START, grade_many, run_hidden_tests

HERE = Path(__file__).resolve().parent
TARGET_INPROCESS = 0.25  # warm / public verdicts/s, same workers, inprocess
TARGET_MEDIAN_S = 0.100  # a warm verdict's median wall time
TARGET_PROCESS = 1.0  # warm / public verdicts/s, same workers, process isolation
FLOOR_PROCESS = 0.5


# -- the reference: an unsafe exec-in-fork harness, as the public one is ----------------


def _unsafe_child(program: str, send: Any) -> None:
    try:
        exec(program, {"__name__": "__candidate__"})
        send.send(True)
    except BaseException:
        send.send(False)


def unsafe_check(problem: Problem, completion: str, timeout: float = 10.0) -> bool:
    """Run prompt + completion + test + ``check(entry_point)`` in a forked process."""
    program = f"{problem.prompt}{completion}\n{problem.test}\ncheck({problem.entry_point})\n"
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=_unsafe_child, args=(program, send))
    process.start()
    send.close()
    passed = receive.recv() if receive.poll(timeout) else False
    process.join(timeout)
    if process.is_alive():
        process.kill()
        process.join()
    return bool(passed)


def unsafe_many(samples: Sequence[tuple[Problem, str]], workers: int) -> list[bool]:
    """The public harness's shape: a thread pool, each check a forked process."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda s: unsafe_check(*s), samples))


# -- the reference: the public harness's shape ----------------------------------------


class _Alarm(Exception):
    pass


@contextlib.contextmanager
def _alarm(seconds: float) -> Any:
    def ring(signum: int, frame: Any) -> None:
        raise _Alarm

    signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _guard_destructive() -> None:
    """What the public harness disables before it ``exec``s (no security: reliability)."""
    faulthandler.disable()
    builtins.exit = builtins.quit = None  # type: ignore[assignment]
    for name in ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir",
                 "setuid", "fork", "forkpty", "killpg", "rename", "renames", "truncate",
                 "replace", "unlink", "fchmod", "fchown", "chmod", "chown", "chroot",
                 "lchown", "getcwd", "chdir"):  # fmt: skip
        setattr(os, name, None)
    shutil.rmtree = shutil.move = shutil.chown = None  # type: ignore[assignment]
    subprocess.Popen = None  # type: ignore[assignment,misc]
    for name in ("ipdb", "joblib", "resource", "psutil", "tkinter"):
        sys.modules[name] = None  # type: ignore[assignment]


def _public_child(program: str, result: Any, timeout: float) -> None:
    with tempfile.TemporaryDirectory() as folder:
        chdir, rmtree, rmdir = os.chdir, shutil.rmtree, os.rmdir
        chdir(folder)
        _guard_destructive()
        try:
            with (
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()),
                _alarm(timeout),
            ):
                exec(program, {})
            result.append("passed")
        except _Alarm:
            result.append("timed out")
        except BaseException as exc:
            result.append(f"failed: {exc}")
        # What the temporary folder's cleanup needs back.
        os.chdir, shutil.rmtree, os.rmdir = chdir, rmtree, rmdir
        os.chdir("/")


def public_check(problem: Problem, completion: str, timeout: float = 3.0) -> bool:
    """One sample as the public harness checks it: a manager's list, a forked process."""
    program = f"{problem.prompt}{completion}\n{problem.test}\ncheck({problem.entry_point})\n"
    context = multiprocessing.get_context("fork")
    with context.Manager() as manager:
        result = manager.list()
        process = context.Process(target=_public_child, args=(program, result, timeout))
        process.start()
        process.join(timeout + 1)
        if process.is_alive():
            process.kill()
            process.join()
        return bool(result) and result[0] == "passed"


def public_many(samples: Sequence[tuple[Problem, str]], workers: int) -> list[bool]:
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda s: public_check(*s), samples))


# -- the arms -----------------------------------------------------------------------


def _timed(run: Callable[[], list[bool]]) -> tuple[float, list[bool]]:
    started = time.perf_counter()
    results = run()
    return time.perf_counter() - started, results


def prepare(root: Path, problems: Sequence[Problem]) -> dict[str, Any]:
    """Workspaces and hidden tests of every sample, and what each verdict must be."""
    wrong = wrong_completions()
    samples, items, expected = [], [], []
    for problem in problems:
        hidden = write_hidden(problem, root / "hidden" / problem.slug)
        for kind, completion in (
            ("good", problem.canonical_solution),
            ("bad", wrong[problem.task_id][0]),
        ):
            ws = write_workspace(problem, completion, root / kind / problem.slug)
            samples.append((problem, completion))
            items.append((ws, hidden))
            expected.append(kind == "good")
    return {"samples": samples, "items": items, "expected": expected}


def _arm(
    name: str, seconds: float, results: list[bool], expected: list[bool], **extra: Any
) -> dict[str, Any]:
    wrong = sum(r != e for r, e in zip(results, expected, strict=True))
    figure = {
        "verdicts": len(results),
        "seconds": round(seconds, 3),
        "verdicts_per_s": round(len(results) / seconds, 3),
        "wrong_verdicts": wrong,
        **extra,
    }
    print(
        f"{name:14} {figure['verdicts_per_s']:8.2f}/s  {len(results)} verdicts, {wrong} wrong",
        flush=True,
    )
    return figure


def run_warm(
    prepared: dict[str, Any], workers: int, isolation: str = "inprocess"
) -> dict[str, Any]:
    zygotes.shutdown()
    items, expected = prepared["items"], prepared["expected"]
    index = {id(item): i for i, item in enumerate(items)}
    results: list[bool] = [False] * len(items)
    durations, cold, peaks = [], 0, []
    started = time.perf_counter()
    for item, verdict in grade_many(items, workers=workers, isolation=isolation):
        results[index[id(item)]] = verdict.passed
        durations.append(verdict.duration_s)
        cold += COLD_START in verdict.reason
    seconds = time.perf_counter() - started
    rss = [z.rss_bytes() for z in zygotes._all]
    peaks = [z.child_peak_rss for z in zygotes._all if z.child_peak_rss]
    zygotes.shutdown()
    return _arm(
        f"warm_{workers}" if isolation == "inprocess" else f"warm_{isolation}_{workers}",
        seconds,
        results,
        expected,
        median_verdict_s=round(statistics.median(durations), 4),
        started_cold=cold,
        zygote_rss_mb=[round(r / 2**20, 1) for r in rss if r],
        child_peak_rss_mb=round(max(peaks) / 2**20, 1) if peaks else None,
    )


def run_cold(prepared: dict[str, Any], count: int, isolation: str) -> dict[str, Any]:
    items = prepared["items"][:count]
    expected = prepared["expected"][:count]
    durations = []

    def grade() -> list[bool]:
        out = []
        for ws, hidden in items:
            verdict = run_hidden_tests(ws, hidden, isolation=isolation)
            durations.append(verdict.duration_s)
            out.append(verdict.passed)
        return out

    seconds, results = _timed(grade)
    name = "cold" if isolation == "inprocess" else f"cold_{isolation}"
    return _arm(
        name, seconds, results, expected, median_verdict_s=round(statistics.median(durations), 4)
    )


def run_unsafe(prepared: dict[str, Any], workers: int) -> dict[str, Any]:
    seconds, results = _timed(lambda: unsafe_many(prepared["samples"], workers))
    return _arm(f"unsafe_{workers}", seconds, results, prepared["expected"])


def run_public(prepared: dict[str, Any], workers: int) -> dict[str, Any]:
    seconds, results = _timed(lambda: public_many(prepared["samples"], workers))
    return _arm(f"public_{workers}", seconds, results, prepared["expected"])


def run_samples(root: Path, problems: Sequence[Problem], n: int, workers: int) -> dict[str, Any]:
    """pass@k from a JSONL file of n samples per problem, graded warm: the docs' example.

    Sample j of problem p is the wrong completion where ``(p + j) % 3 == 0`` (a third
    of the samples of every problem wrong, none where n is small enough to miss it),
    else the canonical one; the file is written as a model's samples would be.
    """
    wrong = wrong_completions()
    samples_file = root / "samples.jsonl"
    with samples_file.open("w", encoding="utf-8") as out:
        for p, problem in enumerate(problems):
            for j in range(n):
                bad = (p + j) % 3 == 0
                completion = wrong[problem.task_id][0] if bad else problem.canonical_solution
                out.write(
                    json.dumps({"task_id": problem.task_id, "completion": completion}) + "\n"
                )
    by_id = {problem.task_id: problem for problem in problems}
    started = time.perf_counter()
    items, task_of = [], {}
    for i, line in enumerate(samples_file.read_text(encoding="utf-8").splitlines()):
        sample = json.loads(line)
        problem = by_id[sample["task_id"]]
        ws = write_workspace(problem, sample["completion"], root / "samples" / str(i))
        item = (ws, root / "hidden" / problem.slug)
        items.append(item)
        task_of[id(item)] = problem.task_id
    trials: dict[str, list[bool | None]] = {problem.task_id: [] for problem in problems}
    zygotes.shutdown()
    for item, verdict in grade_many(items, workers=workers):
        trials[task_of[id(item)]].append(None if verdict.inconclusive else verdict.passed)
    seconds = time.perf_counter() - started
    zygotes.shutdown()
    estimates = {f"pass@{k}": str(estimate_pass_at_k(trials, k)) for k in (1, 5, n) if k <= n}
    figure = {
        "samples": len(items),
        "seconds": round(seconds, 1),
        "verdicts_per_s": round(len(items) / seconds, 2),
        "estimates": estimates,
    }
    print(f"samples n={n}: {len(items)} verdicts in {seconds:.1f} s; {estimates}", flush=True)
    return figure


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="41 problems instead of 164")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cold", type=int, default=24, help="samples graded cold")
    parser.add_argument("--samples", type=int, default=0, help="n samples per problem, pass@k")
    parser.add_argument("--out", type=Path, default=HERE / "results_corpus.json")
    args = parser.parse_args(argv)
    problems = load_problems()
    if args.quick:
        problems = problems[::4]
    n = args.workers
    with tempfile.TemporaryDirectory(prefix="ldd-bench-corpus-") as tmp:
        prepared = prepare(Path(tmp), problems)
        load_before = load_average()
        arms = {
            "public_1": run_public(prepared, 1),
            "unsafe_1": run_unsafe(prepared, 1),
            "warm_1": run_warm(prepared, 1),
            f"public_{n}": run_public(prepared, n),
            f"unsafe_{n}": run_unsafe(prepared, n),
            f"warm_{n}": run_warm(prepared, n),
            f"warm_process_{n}": run_warm(prepared, n, "process"),
            "cold": run_cold(prepared, args.cold, "inprocess"),
            "cold_process": run_cold(prepared, args.cold, "process"),
        }
        if args.samples:
            samples = run_samples(Path(tmp), problems, args.samples, n)
    per_s = {name: arm["verdicts_per_s"] for name, arm in arms.items()}
    ratios = {}
    for reference in ("public", "unsafe"):
        for w in (1, n):
            ratios[f"warm_{w}_vs_{reference}_{w}"] = round(
                per_s[f"warm_{w}"] / per_s[f"{reference}_{w}"], 3
            )
        ratios[f"warm_process_{n}_vs_{reference}_{n}"] = round(
            per_s[f"warm_process_{n}"] / per_s[f"{reference}_{n}"], 3
        )
    ratios[f"warm_process_{n}_vs_cold_process"] = round(
        per_s[f"warm_process_{n}"] / per_s["cold_process"], 2
    )
    ratios["warm_1_vs_cold"] = round(per_s["warm_1"] / per_s["cold"], 2)
    median = arms["warm_1"]["median_verdict_s"]
    limits = {
        "warm_1_vs_public_1": TARGET_INPROCESS,
        f"warm_{n}_vs_public_{n}": TARGET_INPROCESS,
        f"warm_process_{n}_vs_public_{n}": TARGET_PROCESS,
    }
    targets = {
        name: {"value": ratios[name], "limit": limit, "met": ratios[name] >= limit}
        for name, limit in limits.items()
    }
    targets[f"warm_process_{n}_vs_public_{n}_floor"] = {
        "value": ratios[f"warm_process_{n}_vs_public_{n}"],
        "limit": FLOOR_PROCESS,
        "met": ratios[f"warm_process_{n}_vs_public_{n}"] >= FLOOR_PROCESS,
    }
    targets["warm_median_verdict_s"] = {
        "value": median,
        "limit": TARGET_MEDIAN_S,
        "met": median <= TARGET_MEDIAN_S,
    }
    wrong = sum(arm["wrong_verdicts"] for arm in arms.values())
    figures = {
        "problems": len(problems),
        "verdicts_per_arm": len(prepared["items"]),
        "workers": n,
        "arms": arms,
        "ratios": ratios,
        "targets": targets,
        "wrong_verdicts": wrong,
        "samples": samples if args.samples else None,
        "load_average": {"before": load_before, "after": load_average()},
        "machine": machine(),
        "versions": versions(),
    }
    args.out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({"ratios": ratios, "targets": targets}, indent=2))
    return 0 if wrong == 0 and all(t["met"] for t in targets.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
