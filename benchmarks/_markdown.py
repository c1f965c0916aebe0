"""Render ``results.json`` as the Markdown tables of ``docs/performance.md``.

``python benchmarks/_markdown.py [benchmarks/results.json]`` prints them, so the
published figures are copied from the results file, never typed by hand.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["render"]


def _fmt(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value:.3f} s"
    if unit == "MB":
        return f"{value:.1f} MB"
    if unit == "x":
        return f"{value:.2f}x"
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


if __name__ == "__main__":
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "results.json"
    print(render(json.loads(path.read_text(encoding="utf-8"))))
