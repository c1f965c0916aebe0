"""The demo's job summary as GitHub shows it: how ``docs/images/job-summary.png`` is made.

``python tests/summary_image.py OUT.png`` runs ``ldd demo`` into a temporary folder
with ``$GITHUB_STEP_SUMMARY`` set, takes the section its last session appended (the
session whose load-bearing gate fails), renders it with markdown-it-py (GFM tables)
into a page styled like GitHub's summary, and screenshots it in headless Chromium
(tests/browser.py).  tests/report/test_github.py draws such a page too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from html import escape
from pathlib import Path

from browser import Browser
from markdown_it import MarkdownIt

__all__ = ["last_section", "main", "summary_page"]

#: Close to GitHub's own summary style: system font, bordered tables, striped rows.
STYLE = """
body { margin: 0; padding: 24px 32px; background: #ffffff; color: #1f2328;
       font: 14px/1.5 -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; }
h2 { font-size: 1.5em; border-bottom: 1px solid #d1d9e0; padding-bottom: .3em; margin: 0 0 16px; }
h3 { font-size: 1.25em; margin: 24px 0 16px; }
table { border-collapse: collapse; margin: 0 0 16px; }
th, td { border: 1px solid #d1d9e0; padding: 6px 13px; }
th { font-weight: 600; }
tr:nth-child(2n) { background: #f6f8fa; }
ul { padding-left: 2em; margin: 0 0 16px; }
"""


def last_section(markdown: str) -> str:
    """The last ``## pytest-ldd`` section of a job summary."""
    head = "## pytest-ldd"
    return head + markdown.rsplit(head, 1)[-1]


def summary_page(markdown: str, *, title: str = "Job summary") -> str:
    """A whole HTML page showing ``markdown`` rendered as GitHub renders it."""
    body = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(markdown)
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{STYLE}</style></head><body>{body}</body></html>"
    )


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(args[0])
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        summary = work / "summary.md"
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        env["GITHUB_STEP_SUMMARY"] = str(summary)
        subprocess.run(
            [sys.executable, "-m", "pytest_ldd", "demo", "--into", str(work / "my-demo")],
            cwd=work,
            env=env,
            check=True,
            capture_output=True,
            timeout=600,
        )
        section = last_section(summary.read_text(encoding="utf-8"))
        page = work / "summary.html"
        # "~" stands for wherever the project lives.
        page.write_text(summary_page(section).replace(str(work), "~"), encoding="utf-8")
        width = 1000
        (work / "profile").mkdir()
        with Browser(work / "profile") as browser:
            browser.open(page.as_uri(), width=width, height=200)
            bottom = browser.evaluate("document.body.getBoundingClientRect().bottom")
            height = int(bottom) + 8
            out.write_bytes(browser.screenshot(width=width, height=height))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
