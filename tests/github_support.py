"""GitHub Actions' side of a session, read back as GitHub reads it.

The job summary's Markdown rendered by markdown-it-py (CommonMark with GFM tables and
strikethrough) and read back as the text of each table cell and list item; a
workflow command line parsed as the runner parses it.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from markdown_it import MarkdownIt

__all__ = ["Rendered", "commands", "parse_command", "render"]


class Rendered(HTMLParser):
    """The HTML of a Markdown text: its tables (rows of cell texts), list items, headings."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.html = html
        self.tables: list[list[list[str]]] = []
        self.items: list[str] = []
        self.headings: list[str] = []
        #: Tags that are not the ones a job summary writes (raw HTML let through).
        self.other_tags: list[str] = []
        self._text: list[str] | None = None
        self.feed(html)
        self.close()

    _KNOWN = frozenset(
        {"h1", "h2", "h3", "p", "ul", "li", "table", "thead", "tbody", "tr", "th", "td"}
    )

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in self._KNOWN:
            self.other_tags.append(tag)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th", "li", "h2", "h3"):
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if self._text is None:
            return
        text = "".join(self._text)
        if tag in ("td", "th"):
            self.tables[-1][-1].append(text)
        elif tag == "li":
            self.items.append(text)
        elif tag in ("h2", "h3"):
            self.headings.append(text)
        else:
            return
        self._text = None

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)


def render(markdown: str) -> Rendered:
    """``markdown`` rendered the way GitHub renders a job summary (tables, strikethrough)."""
    html = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(markdown)
    return Rendered(html)


_COMMAND = re.compile(r"::(?P<name>\w+)(?: (?P<props>[^:]*))?::(?P<message>.*)", re.S)


def _unescape(text: str, *, prop: bool) -> str:
    text = text.replace("%0D", "\r").replace("%0A", "\n")
    if prop:
        text = text.replace("%3A", ":").replace("%2C", ",")
    return text.replace("%25", "%")


def parse_command(line: str) -> tuple[str, dict[str, str], str]:
    """``(name, properties, message)`` of a workflow command, unescaped as the runner does."""
    match = _COMMAND.fullmatch(line)
    assert match is not None, line
    assert "\n" not in line
    assert "\r" not in line
    props: dict[str, str] = {}
    for pair in (match["props"] or "").split(","):
        if pair:
            key, _, value = pair.partition("=")
            props[key] = _unescape(value, prop=True)
    return match["name"], props, _unescape(match["message"], prop=False)


def commands(output: str) -> list[tuple[str, dict[str, str], str]]:
    """The workflow commands among the lines of a run's output."""
    return [parse_command(line) for line in output.splitlines() if line.startswith("::")]
