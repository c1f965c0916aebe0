"""The figures of ``results.json`` as Markdown, and the pages that quote them kept current.

Every figure the documentation quotes from a benchmark run is generated here, never
typed by hand. A page marks what is generated:

- a block, between ``<!-- benchmarks: NAME -->`` and ``<!-- /benchmarks -->`` on lines of
  their own, where NAME is one of :data:`BLOCKS` (``tables``: the machine line, the
  targets and every arm's medians; ``real_suites``: the real suites' verdict times,
  twins per test and the probes' cost per comparison);
- a single figure inline, ``<!-- figure NAME -->1.13x<!-- /figure -->``, where NAME is
  a target of ``results.json`` (``overhead.vs_record_property``, shown as the targets
  table shows it) or one of :data:`FIGURES` (figures derived from the medians).

``python benchmarks/_markdown.py`` prints the tables; ``--write`` rewrites the marked
regions of README.md and docs/*.md from ``benchmarks/results.json``; ``--check`` exits 1
naming each page whose figures disagree with it (tests/test_docs.py runs the check).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["BLOCKS", "FIGURES", "FigureError", "figure", "render", "update_page"]

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results.json"


def _fmt(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value:.3f} s"
    if unit == "MB":
        return f"{value:.1f} MB"
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "us":
        return f"{value:.0f} µs"
    return f"{value:g}"


def render(doc: dict[str, Any]) -> str:
    """The machine line, the targets table and the medians of every arm."""
    m, v = doc["machine"], doc["versions"]
    lines = [
        f"Machine: {m['cpu']}, {m['cores']} cores, "
        f"{(m['memory_bytes'] or 0) / 2**30:.0f} GiB RAM, {m['os']}; Python {m['python']}, "
        f"pytest {v['pytest']}, pytest-xdist {v['pytest-xdist']}, "
        f"pytest-harvest {v['pytest-harvest']}; "
        f"pytest-ldd at {v['commit']}. Run {doc['generated_at']}"
        f"{' (--quick)' if doc['quick'] else ''}, {doc['repetitions']} repetitions per arm, "
        f"load average {doc.get('load_average_before')} before and "
        f"{doc.get('load_average_after')} after.",
        *_isolation_run(doc),
        "",
        "| target | figure | limit | verdict |",
        "|---|---|---|---|",
    ]
    for t in doc["targets"]:
        verdict = "met" if t["met"] else f"**missed** ({t['value'] / t['limit']:.2f}x the limit)"
        if not t["met"] and t["limit"] == 0:
            verdict = "**missed**"
        lines.append(
            f"| `{t['name']}` | {_fmt(t['value'], t['unit'])} | "
            f"{_fmt(t['limit'], t['unit'])} | {verdict} |"
        )
    lines += ["", "| benchmark | arm | median | CPU median | samples |", "|---|---|---|---|---|"]
    for name, figures in doc["benchmarks"].items():
        groups = {name: figures.get("arms")} if "arms" in figures else {}
        for op in ("status", "try_promote", "session"):
            if isinstance(figures.get(op), dict):
                groups[f"{name}/{op}"] = figures[op]["arms"]
        for label, arms in groups.items():
            if not isinstance(arms, dict):
                continue
            for arm, data in arms.items():
                unit = data.get("unit", "s")
                scale = 1e6 if unit == "bytes" else 1.0
                shown = "MB" if unit == "bytes" else "s"
                cpu = data.get("cpu_s", {}).get("median")
                samples = ", ".join(f"{x / scale:.3g}" for x in data["samples"])
                lines.append(
                    f"| {label} | {arm} | {data['median'] / scale:.3f} {shown} | "
                    f"{'' if cpu is None else f'{cpu:.3f} s'} | {samples} |"
                )
    soak = doc["benchmarks"].get("soak")
    if soak and "sessions" in soak:
        lines += [
            "",
            f"Soak: {soak['sessions']} sessions ({soak['killed']} SIGKILLed, "
            f"{soak['completed']} finished before their moment, {soak['xdist_sessions']} "
            f"under -n 2), {soak['finished_tests']:,} tests seen finished by the side "
            f"channel; pairs lost {soak['pairs_lost']} of {soak['pairs_expected']:,}, "
            f"duplicated {soak['pairs_duplicated']}; observations lost "
            f"{soak['observations_lost']} of {soak['observations_expected']:,}, duplicated "
            f"{soak['observations_duplicated']}; {soak['pairs_in_store']:,} pairs in the "
            f"store; torn lines skipped {soak['torn_lines_skipped']}; "
            f"`ldd metric verify` exit code {soak['verify_returncode']}; stray processes "
            f"{len(soak['stray_processes'])}.",
        ]
    return "\n".join(lines)


#: Parts of the sandbox benchmark that may come from a run of their own, with the
#: names of their targets.
_OWN_RUNS = (
    ("isolation", "sandbox.process_isolation_*"),
    ("confinement", "sandbox.confinement_*"),
    ("real_suites", "sandbox.real_suite_*"),
)


def _isolation_run(doc: dict[str, Any]) -> list[str]:
    """The lines naming the runs of sandbox figures that were runs of their own."""
    lines = []
    for key, names in _OWN_RUNS:
        run = doc["benchmarks"].get("sandbox", {}).get(key, {}).get("run")
        if not run:
            continue
        m = run["machine"]
        lines += [
            "",
            f"The `{names}` figures come from a later run of their own: "
            f"{m['cpu']}, {m['cores']} cores, {m['os']}; pytest-ldd at {run['commit']}. Run "
            f"{run['generated_at']}, {run['repetitions']} repetitions per arm, load average "
            f"{run['load_average_before']} before and {run['load_average_after']} after.",
        ]
    return lines


def _arm(doc: dict[str, Any], benchmark: str, arm: str, key: str = "median") -> float:
    data = doc["benchmarks"][benchmark]["arms"][arm]
    return float(data["cpu_s"]["median"] if key == "cpu" else data[key])


def _ratio(
    doc: dict[str, Any], benchmark: str, arm: str, baseline: str, key: str = "median"
) -> str:
    return f"{_arm(doc, benchmark, arm, key) / _arm(doc, benchmark, baseline, key):.2f}x"


def _per_test_us(doc: dict[str, Any], arm: str, baseline: str) -> str:
    tests = doc["benchmarks"]["overhead"].get("tests", 2000)
    delta = _arm(doc, "overhead", arm) - _arm(doc, "overhead", baseline)
    return f"{delta / tests * 1e6:.0f} µs"


def _sandbox(doc: dict[str, Any]) -> str:
    sandbox = doc["benchmarks"]["sandbox"]
    return (
        f"sandbox {sandbox['sandbox_median_s']:.2f} s, plain pytest "
        f"{sandbox['plain_median_s']:.2f} s (ratio {sandbox['ratio']:.2f}), plain pytest "
        f"without plugin autoload {sandbox['plain_no_autoload_median_s']:.2f} s (ratio "
        f"{sandbox['ratio_vs_no_autoload']:.2f})"
    )


def _isolation(doc: dict[str, Any]) -> str:
    isolation = doc["benchmarks"]["sandbox"]["isolation"]
    return (
        f"process {isolation['demo_process_median_s']:.2f} s, inprocess "
        f"{isolation['demo_inprocess_median_s']:.2f} s for the {isolation['demo_tasks']} "
        f"tasks; round trip median {isolation['round_trip_median_us']:.0f} µs, 90th "
        f"percentile {isolation['round_trip_p90_us']:.0f} µs over "
        f"{isolation['round_trips']:,} calls"
    )


def _confinement(doc: dict[str, Any]) -> str:
    confinement = doc["benchmarks"]["sandbox"]["confinement"]
    return (
        f"confined {confinement['confined_median_s']:.2f} s, unconfined "
        f"{confinement['unconfined_median_s']:.2f} s for the {confinement['demo_tasks']} "
        f"tasks in-process, CPU time of the test processes "
        f"{confinement['cpu_ratio']:.2f}x (in process isolation "
        f"{confinement['process_ratio']:.2f}x); "
        f"planning and applying the allow-list {confinement['apply_median_ms']:.1f} ms "
        f"per run"
    )


def _real_suites(doc: dict[str, Any]) -> str:
    """Per real suite: plain pytest, the hardened verdict, their ratio, twins per test."""
    real = doc["benchmarks"].get("sandbox", {}).get("real_suites")
    if not real:
        return "Not measured yet: `python benchmarks/bench_sandbox.py --real-suites --merge`."
    lines = [
        "| suite | tests | plain pytest | hardened verdict | ratio | twins per test |",
        "|---|---|---|---|---|---|",
    ]
    for name, suite in real["suites"].items():
        lines.append(
            f"| {name} | {suite['tests']} | {suite['plain_median_s']:.2f} s | "
            f"{suite['verdict_median_s']:.2f} s | {suite['ratio']:.2f}x | "
            f"{suite['twins_per_test']:.2f} ({suite['tests_with_a_twin']} tests with a twin) |"
        )
    suites = real["suites"].items()
    process = {name: suite for name, suite in suites if "process_median_s" in suite}
    if process:
        lines += [
            "",
            "In process isolation (the suites it grades as plain pytest does, or"
            " inconclusively):",
            "",
            "| suite | in-process verdict | process verdict | process / in-process |",
            "|---|---|---|---|",
        ]
        for name, suite in process.items():
            lines.append(
                f"| {name} | {suite['verdict_median_s']:.2f} s | "
                f"{suite['process_median_s']:.2f} s | {suite['process_vs_inprocess']:.2f}x |"
            )
    probes = real["probes"]
    lines += [
        "",
        f"A comparison of the hidden tests through the probes ({probes['calls']:,} calls "
        f"each, one process): two ints {probes['ints']['compare_us']:.2f} µs (a bare `==` "
        f"{probes['ints']['bare_us']:.2f} µs); two lists of nine ints, searched for "
        f"workspace values {probes['lists']['compare_us']:.1f} µs; a workspace value "
        f"against an int, probed {probes['workspace_value']['compare_us']:.1f} µs (a bare "
        f"`==` {probes['workspace_value']['bare_us']:.2f} µs).",
    ]
    return "\n".join(lines)


#: Figures derived from ``results.json`` that pages quote inline, by name.
FIGURES: dict[str, Callable[[dict[str, Any]], str]] = {
    "overhead.ldd_spends_ms": lambda d: (
        f"{(_arm(d, 'overhead', 'ldd') - _arm(d, 'overhead', 'record_property')) * 1e3:.0f} ms"
    ),
    "overhead.ldd_per_test_us": lambda d: _per_test_us(d, "ldd", "record_property"),
    "overhead.installed_per_test_us": lambda d: _per_test_us(
        d, "record_property_ldd_installed", "record_property"
    ),
    "overhead.installed_ratio": lambda d: _ratio(
        d, "overhead", "record_property_ldd_installed", "record_property"
    ),
    "overhead.validating_per_test_us": lambda d: _per_test_us(
        d, "ldd_not_recording", "record_property_ldd_installed"
    ),
    "overhead.writing_per_test_us": lambda d: _per_test_us(d, "ldd", "ldd_not_recording"),
    "overhead_xdist.cpu_vs_harvest": lambda d: _ratio(
        d, "overhead_xdist", "ldd", "harvest", "cpu"
    ),
    "memory.below_record_property_mb": lambda d: (
        f"{-d['benchmarks']['memory']['delta_vs_record_property_mb']:.1f} MB"
    ),
    "sandbox.medians": _sandbox,
    "sandbox.isolation_medians": _isolation,
    "sandbox.confinement_medians": _confinement,
    "machine.cores": lambda d: f"{d['machine']['cores']}",
}

#: Generated blocks, by name.
BLOCKS: dict[str, Callable[[dict[str, Any]], str]] = {
    "tables": render,
    "real_suites": _real_suites,
}


class FigureError(ValueError):
    """A page marks a figure or block that this script does not know."""


def figure(name: str, doc: dict[str, Any]) -> str:
    """The text of the inline figure ``name``."""
    for target in doc["targets"]:
        if target["name"] == name:
            return _fmt(target["value"], target["unit"])
    if name in FIGURES:
        return FIGURES[name](doc)
    known = sorted([t["name"] for t in doc["targets"]] + list(FIGURES))
    msg = f"unknown figure {name!r} (known: {', '.join(known)})"
    raise FigureError(msg)


_INLINE = re.compile(r"(<!-- figure (?P<name>[\w.-]+) -->)(?P<text>.*?)(<!-- /figure -->)")
_BLOCK = re.compile(
    r"^(<!-- benchmarks: (?P<name>[\w.-]+) -->\n)(?P<text>.*?)(^<!-- /benchmarks -->$)",
    re.MULTILINE | re.DOTALL,
)


_FENCED = re.compile(r"^(`{3,}|~{3,})[^\n]*\n.*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)


def update_page(text: str, doc: dict[str, Any]) -> str:
    """``text`` with every marked figure and block generated from ``doc``."""

    def block(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in BLOCKS:
            msg = f"unknown block {name!r} (known: {', '.join(sorted(BLOCKS))})"
            raise FigureError(msg)
        return f"{match.group(1)}\n{BLOCKS[name](doc)}\n\n{match.group(4)}"

    def inline(match: re.Match[str]) -> str:
        return f"{match.group(1)}{figure(match.group('name'), doc)}{match.group(4)}"

    # Markers shown inside fenced code blocks (as on docs/testing-docs.md) are text.
    parts, done = [], 0
    for fenced in _FENCED.finditer(text):
        prose = text[done : fenced.start()]
        parts += [_INLINE.sub(inline, _BLOCK.sub(block, prose)), fenced.group(0)]
        done = fenced.end()
    parts.append(_INLINE.sub(inline, _BLOCK.sub(block, text[done:])))
    return "".join(parts)


def pages() -> list[Path]:
    """The pages that may quote figures: README.md and docs/*.md."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def main(argv: list[str]) -> int:
    """Print the tables, or ``--write`` / ``--check`` the pages."""
    mode = argv[0] if argv and argv[0] in ("--write", "--check") else None
    rest = argv[1:] if mode else argv
    doc = json.loads((Path(rest[0]) if rest else RESULTS).read_text(encoding="utf-8"))
    if mode is None:
        print(render(doc))
        return 0
    stale = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        current = update_page(text, doc)
        if current != text:
            stale.append(page)
            if mode == "--write":
                page.write_text(current, encoding="utf-8")
    for page in stale:
        verb = "rewrote" if mode == "--write" else "figures differ from results.json in"
        print(f"{verb} {page.relative_to(ROOT)}", file=sys.stderr)
    return 1 if stale and mode == "--check" else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
