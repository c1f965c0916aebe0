"""The console sessions of the documentation, run and compared with the page.

Sybil parses each page (README.md, docs/*.md) into regions: its fenced code blocks and
its ``<!-- docs: ... -->`` comments. Evaluated in page order they tell a story in one
temporary project folder per page: a block marked ``<!-- docs: file PATH -->`` (or
``conftest``, ``test-file [PATH]``) is written to PATH in the project; a
``<!-- docs: run`` comment runs its hidden shell script there; a ```` ```console ````
block runs each of its ``$ `` commands there and compares what it prints with the
lines the page shows after it. docs/testing-docs.md is the reader's guide to all of
this, wildcards included; this module is what it describes.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from sybil import Document, Example, Region, Sybil
from sybil.parsers.markdown.lexers import DirectiveInHTMLCommentLexer, RawFencedCodeBlockLexer

#: The language of the fenced blocks that are run.
SESSION_LANGUAGE = "console"
#: Where the example project's absolute path appears in the output a page shows.
PROJECT_PLACEHOLDER = "/path/to/project"
#: Seconds one command may take.
COMMAND_TIMEOUT = 180
DEFAULT_TEST_FILE = "test_example.py"

#: Variables of the calling shell that would change what pytest or ldd print.
_DROPPED_ENV = ("CI", "BUILD_NUMBER", "FORCE_COLOR", "PY_COLORS", "COLUMNS", "LINES")


# -- the page's regions ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Directive:
    """A ``<!-- docs: ... -->`` comment: its words and, for ``run``, its script."""

    line: int
    words: tuple[str, ...]
    script: str

    @property
    def verb(self) -> str:
        """The directive's first word: ``file``, ``run``, ``not-run``, ..."""
        return self.words[0] if self.words else ""


@dataclass(frozen=True, slots=True)
class FencedBlock:
    """A fenced code block, with the directive on the line before it (if any)."""

    line: int
    language: str
    source: str
    directive: Directive | None


@dataclass(frozen=True, slots=True)
class Command:
    """One ``$ `` command of a console block and the output the page shows for it."""

    line: int
    text: str
    expected: str


_FENCES = RawFencedCodeBlockLexer(info_pattern=re.compile(r"(?P<info>[^\n]*)$\n", re.MULTILINE))
_DIRECTIVES = DirectiveInHTMLCommentLexer(directive="docs", arguments=r"[^\n]*?")
_FILE_VERBS = ("file", "conftest", "test-file")
_PATCH_VERB = "patch"


def _line_of(document: Document, position: int) -> int:
    return document.text.count("\n", 0, position) + 1


def _comment_end(document: Document, region: Region) -> int:
    """Where the HTML comment of a directive region ends (after its ``-->``)."""
    found = re.compile(r"--+>").search(document.text, region.end)
    return found.end() if found is not None else region.end


def _directive(document: Document, region: Region) -> Directive:
    arguments = str(region.lexemes.get("arguments", "")).strip()
    script = str(region.lexemes.get("source", ""))
    return Directive(_line_of(document, region.start), tuple(arguments.split()), script)


def _project_path(directive: Directive) -> str | None:
    """The project file a ``file`` / ``conftest`` / ``test-file`` directive names."""
    words = directive.words
    if words == ("conftest",):
        return "conftest.py"
    if words[:1] == ("file",) and len(words) == 2:
        return words[1]
    if words[:1] == ("test-file",) and len(words) <= 2:
        return words[1] if len(words) == 2 else DEFAULT_TEST_FILE
    return None


def project_file(directive: Directive) -> tuple[str, str] | None:
    """(role, path) of a ``file`` / ``conftest`` (role ``file``) or ``test-file`` marker."""
    path = _project_path(directive)
    if path is None:
        return None
    return ("test-file" if directive.verb == "test-file" else "file"), path


def directive_error(directive: Directive) -> str | None:
    """Why a directive cannot be understood, or None."""
    verb = directive.verb
    if verb in _FILE_VERBS:
        if _project_path(directive) is None:
            words = " ".join(directive.words)
            return f"malformed {words!r} (expected 'file PATH', 'conftest' or 'test-file [PATH]')"
        return None
    if verb == _PATCH_VERB:
        if len(directive.words) != 2:
            return "malformed patch directive (expected 'patch PATH')"
        return None
    if verb == "not-run":
        reason = " ".join(directive.words[1:])
        if not re.fullmatch(r"\(.*\S.*\)", reason):
            return "'not-run' needs its reason in parentheses: <!-- docs: not-run (why) -->"
        return None
    if verb == "run":
        if len(directive.words) > 1 or not directive.script.strip():
            return "'run' takes a shell script on the lines after it, ending with -->"
        return None
    return (
        f"unknown docs directive {' '.join(directive.words)!r} (expected 'file PATH', "
        "'conftest', 'test-file [PATH]', 'patch PATH', 'run' or 'not-run (reason)')"
    )


def parse_page(document: Document) -> Iterator[Region]:
    """Sybil parser: one region per fenced block and per directive not attached to one."""
    fences = list(_FENCES(document))
    # A directive shown inside a fenced block (as on docs/testing-docs.md) is text.
    directives = [
        region
        for region in _DIRECTIVES(document)
        if not any(fence.start <= region.start < fence.end for fence in fences)
    ]
    attached: set[int] = set()
    for fence in fences:
        info = str(fence.lexemes["info"]).strip()
        before = [d for d in directives if d.end <= fence.start]
        directive = None
        if before and not document.text[_comment_end(document, before[-1]) : fence.start].strip():
            directive = _directive(document, before[-1])
            if directive.verb == "run":
                directive = None  # a script runs on its own, before the block
            else:
                attached.add(before[-1].start)
        block = FencedBlock(
            _line_of(document, fence.start),
            info.split()[0].lower() if info else "",
            str(fence.lexemes["source"]),
            directive,
        )
        yield Region(fence.start, fence.end, parsed=block, evaluator=evaluate_block)
    for region in directives:
        if region.start not in attached:
            yield Region(
                region.start,
                region.end,
                parsed=_directive(document, region),
                evaluator=evaluate_directive,
            )


def page_sybil() -> Sybil:
    """The Sybil that parses a documentation page into its story."""
    return Sybil(parsers=[parse_page], patterns=["*.md"])


# -- the console blocks ------------------------------------------------------------------


def parse_session(source: str, first_line: int) -> list[Command]:
    """The commands of a console block (``$ `` lines, ``\\`` continuations joined)."""
    commands: list[Command] = []
    current: list[str] | None = None
    line_of_command = 0
    expected: list[str] = []
    continuing = False
    for number, line in enumerate(source.splitlines(), first_line + 1):
        if continuing and current is not None:
            current.append(line)
            continuing = line.rstrip().endswith("\\")
            continue
        if line.startswith("$ "):
            if current is not None:
                commands.append(Command(line_of_command, "\n".join(current), _text(expected)))
            current, expected, line_of_command = [line[2:]], [], number
            continuing = line.rstrip().endswith("\\")
        elif current is None:
            if line.strip():
                msg = f"line {number}: output before the first '$ ' command: {line!r}"
                raise ValueError(msg)
        else:
            expected.append(line)
    if current is not None:
        commands.append(Command(line_of_command, "\n".join(current), _text(expected)))
    return commands


def _text(lines: Iterable[str]) -> str:
    return "\n".join(lines)


# Values that change from run to run, compared by their shape (docs/testing-docs.md).
_SHAPES = [
    # A session id, as in sessions.jsonl: 20261201T183608Z-66f0fe.
    (re.compile(r"\b\d{8}T\d{6}Z-[0-9a-f]{6}\b"), "<session-id>"),
    # An ISO 8601 UTC timestamp: 2026-12-01T08:48:47Z (fractions of a second allowed).
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|\+00:00)"), "<timestamp>"),
    # A duration as pytest prints it: 0.39s, 12.05s.
    (re.compile(r"(?<![\w.])\d+(?:\.\d+)?s\b"), "<duration>"),
    # A duration with a space, in parentheses or after "in": (1.8 s), in 13.6 s.
    (re.compile(r"(?:(?<=\()|(?<=\bin ))\d+(?:\.\d+)? s\b"), "<duration>"),
]
# pytest's rules: "===== 1 passed in 0.39s =====", "_____ test_x _____", "----- ... -----".
_RULE = re.compile(r"^([=_-])\1{2,} (.*?) \1{3,}$")


def normalize(text: str, project: Path | None = None) -> str:
    """``text`` with run-dependent values replaced by their shape, rules unpadded."""
    if project is not None:
        text = text.replace(str(project), PROJECT_PLACEHOLDER)
    lines = []
    for line in text.splitlines():
        line = line.rstrip()
        for pattern, shape in _SHAPES:
            line = pattern.sub(shape, line)
        rule = _RULE.match(line)
        if rule is not None:
            line = f"{rule.group(1) * 3} {rule.group(2)} {rule.group(1) * 3}"
        lines.append(line)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def _pattern(expected: str) -> re.Pattern[str]:
    """The regular expression of normalized expected output, with its ``...``."""
    parts: list[str] = []
    for line in expected.split("\n"):
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            pieces = [re.escape(piece) for piece in line.split("...")]
            parts.append("[^\n]*?".join(pieces) + r"\n")
    return re.compile("".join(parts))


def output_matches(expected: str, actual: str) -> bool:
    """Whether normalized ``actual`` is what normalized ``expected`` shows."""
    if not expected:
        return not actual
    return _pattern(expected).fullmatch(actual + "\n") is not None


def session_env() -> dict[str, str]:
    """The environment of a page's commands: this interpreter's tools first, no noise."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTEST_", "LDD_")) and key not in _DROPPED_ENV
    }
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    # Only pytest-ldd (and xdist, for `-n`) is loaded: other plugins of the test
    # environment (hypothesis, ...) neither slow each session down nor change its output.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    plugins = ["pytest_ldd.plugin"]
    if importlib.util.find_spec("xdist") is not None:
        plugins.append("xdist.plugin")
    env["PYTEST_PLUGINS"] = ",".join(plugins)
    env["COLUMNS"] = "80"
    env["NO_COLOR"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_shell(script: str, project: Path, status: int = 0) -> tuple[int, str]:
    """Run ``script`` with bash in ``project``; ``$?`` starts as ``status``."""
    completed = subprocess.run(
        ["bash", "-c", f"(exit {status})\n{script}"],
        cwd=project,
        env=session_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
    )
    return completed.returncode, completed.stdout


# -- evaluation --------------------------------------------------------------------------


@dataclass(slots=True)
class PageProject:
    """The folder a page's story runs in, and the exit status of its last command."""

    folder: Path
    status: int = 0


def project_of(namespace: dict[str, object]) -> PageProject:
    """The page's project (made by the test, in Sybil's namespace), its folder created."""
    project = namespace.get("project")
    assert isinstance(project, PageProject), "the page's project folder was not set up"
    project.folder.mkdir(parents=True, exist_ok=True)
    return project


def evaluate_directive(example: Example) -> str | None:
    """A directive of its own: a hidden ``run`` script, or a misplaced marker."""
    directive = example.parsed
    assert isinstance(directive, Directive)
    error = directive_error(directive)
    if error is not None:
        return error
    if directive.verb != "run":
        return f"'{' '.join(directive.words)}' is not on the line before a fenced block"
    project = project_of(example.namespace)
    code, output = run_shell("set -e\n" + directive.script, project.folder)
    if code != 0:
        return f"the hidden 'run' script exited {code}:\n{output}"
    return None


def evaluate_block(example: Example) -> str | None:
    """A fenced block: written to the project, run as a session, or left alone."""
    block = example.parsed
    assert isinstance(block, FencedBlock)
    directive = block.directive
    if directive is not None:
        error = directive_error(directive)
        if error is not None:
            return error
        if directive.verb == _PATCH_VERB:
            folder = project_of(example.namespace).folder
            return apply_patch(folder / directive.words[1], block.source)
        path = _project_path(directive)
        if path is not None:
            target = project_of(example.namespace).folder / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.source, encoding="utf-8")
            return None
    if block.language != SESSION_LANGUAGE:
        return None
    if directive is not None and directive.verb == "not-run":
        return None
    return run_session(block, project_of(example.namespace))


def apply_patch(target: Path, diff: str) -> str | None:
    """Apply a page's diff block: its ``-`` lines become its ``+`` lines, once."""
    old = [line[1:] for line in diff.splitlines() if line[:1] in ("-", " ")]
    new = [line[1:] for line in diff.splitlines() if line[:1] in ("+", " ")]
    if not target.is_file():
        return f"patch: {target.name} is not a file of the page's project"
    text = target.read_text(encoding="utf-8")
    before = "\n".join(old) + "\n"
    if text.count(before) != 1:
        return f"patch: the '-' lines occur {text.count(before)} times in {target.name}, not once"
    target.write_text(text.replace(before, "\n".join(new) + "\n"), encoding="utf-8")
    return None


def run_session(block: FencedBlock, project: PageProject) -> str | None:
    """Run a console block's commands in order; the first mismatch is the failure."""
    try:
        commands = parse_session(block.source, block.line)
    except ValueError as exc:
        return f"console block at line {block.line}: {exc}"
    if not commands:
        return (
            f"console block at line {block.line} has no '$ ' command: show the commands "
            "that print it, or mark it <!-- docs: not-run (why) -->"
        )
    for index, command in enumerate(commands):
        code, output = run_shell(command.text, project.folder, project.status)
        project.status = code
        actual = normalize(output, project.folder)
        expected = normalize(command.expected)
        if not output_matches(expected, actual):
            diff = "\n".join(
                difflib.unified_diff(
                    expected.splitlines(),
                    actual.splitlines(),
                    "shown on the page",
                    "printed",
                    lineterm="",
                )
            )
            return f"line {command.line}: $ {command.text}\nprints other output:\n{diff}"
        following = commands[index + 1].text.strip() if index + 1 < len(commands) else ""
        if code != 0 and not following.startswith("echo $?"):
            return (
                f"line {command.line}: $ {command.text}\nexited {code} (show it with "
                f"'$ echo $?' on the next line if that is the point):\n{output}"
            )
    return None
