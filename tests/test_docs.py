"""Every fenced example in docs/*.md and README.md runs or parses.

Sybil parses the pages (``tests/docs_sessions.py``): each checked block is one test
case, named ``page:line`` (the line of its opening fence), so a failure points at the
example.

What is checked, by the fence's language:

- ``python``: executed in a fresh module namespace, in an empty temporary current
  folder. It must not raise.
- ``toml``: parsed with tomllib (tomli on Python 3.10).
- ``json``: parsed with the json module.
- ``yaml`` / ``yml``: no YAML parser is used; the block must be non-empty, indented
  with spaces only, in multiples of one unit, deeper only after a ``key:``, a list
  item or a block scalar, and back only to a level already open.
- ``console`` / ``bash`` / ``shell`` / ``sh``: every ``ldd ...`` or
  ``python -m pytest_ldd ...`` command (on ``$ `` lines; in bash blocks without
  prompts, on every line) is checked here, not run: its verbs must exist (the command
  is run with ``--help`` instead, which has no side effects) and every ``--option`` it
  uses must appear in that help; the ``--ldd*`` options of ``pytest`` commands must be
  ones the plugin defines.
- ``console`` blocks are also **run**, page by page (``test_console_sessions``): each
  page is a story in one temporary project built from its ``file`` blocks, and what
  each ``$ `` command prints must match what the page shows, with the wildcards of
  docs/testing-docs.md. The runner is ``tests/docs_sessions.py`` (on Sybil); a block
  marked ``<!-- docs: not-run (reason) -->`` is only checked as above.
- Figures from ``benchmarks/results.json`` quoted on a page must be those that
  ``benchmarks/_markdown.py`` generates (``test_quoted_figures_are_those_of_results_json``).
- Any other language (``text``, none) is not checked.

A Python block that is not standalone is marked by an HTML comment on the last
non-blank line before its fence (invisible on a rendered page):

- ``<!-- docs: file PATH -->``: the block is the file PATH of the page's example
  project. It is only compiled (Python) or parsed (TOML, JSON) on its own; a later
  block with the same PATH replaces it. Any language may be marked this way, e.g. a
  ``pyproject.toml`` or a prices file.
- ``<!-- docs: conftest -->``: short for ``<!-- docs: file conftest.py -->``.
- ``<!-- docs: test-file -->`` or ``<!-- docs: test-file PATH -->``: the block is a test
  file (default path ``test_example.py``). A pytester project is made of the page's
  ``file`` blocks above it plus this one file, and ``pytest --ldd --strict-markers``
  run in it must exit 0 (advisory breaches only warn, so they pass).

The console-session markers (``not-run (reason)``, ``run``, ``patch PATH``) are
described in docs/testing-docs.md. An unknown ``<!-- docs: ... -->`` comment fails its
block, so a typo never turns a project file into a standalone script.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import io
import json
import re
import shlex
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from docs_sessions import (
    FencedBlock,
    PageProject,
    directive_error,
    normalize,
    output_matches,
    page_sybil,
    project_file,
)
from plugin_support import PROJECT_ARGS

from pytest_ldd import cli, plugin

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

ROOT = Path(__file__).resolve().parent.parent
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]

SHELL_LANGUAGES = ("console", "bash", "shell", "sh")
CHECKED_LANGUAGES = ("python", "toml", "json", "yaml", "yml", *SHELL_LANGUAGES)


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced code block of a page."""

    page: Path
    line: int
    language: str
    text: str
    #: ``None`` (standalone), ``"file"`` or ``"test-file"``.
    role: str | None = None
    #: The project path of a ``file`` or ``test-file`` block.
    path: str | None = None
    #: Why the directive before the block could not be understood.
    error: str | None = None

    @property
    def name(self) -> str:
        """``docs/page.md:12``, the test id."""
        page = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page
        return f"{page.as_posix()}:{self.line}"


def parse_blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page``, with the directive each one carries (via Sybil)."""
    blocks: list[Block] = []
    for example in page_sybil().parse(page):
        fenced = example.parsed
        if not isinstance(fenced, FencedBlock):
            continue
        role = path = error = None
        if fenced.directive is not None:
            error = directive_error(fenced.directive)
            marked = project_file(fenced.directive) if error is None else None
            if marked is not None:
                role, path = marked
        text = str(fenced.source)
        blocks.append(Block(page, fenced.line, fenced.language, text, role, path, error))
    return blocks


def _cases() -> Iterator[Block]:
    for page in PAGES:
        if not page.is_file():
            continue
        for block in parse_blocks(page):
            checked = block.language in CHECKED_LANGUAGES
            if checked or block.role is not None or block.error is not None:
                yield block


CASES = list(_cases())


def _project_files(block: Block) -> dict[str, str]:
    """The page's ``file`` blocks above ``block``, by path (later ones win)."""
    files: dict[str, str] = {}
    for other in parse_blocks(block.page):
        if other.line >= block.line:
            break
        if other.role == "file" and other.path is not None:
            files[other.path] = other.text
    return files


# -- the checks ------------------------------------------------------------------------


def run_python(block: Block) -> None:
    """Execute a standalone block as a fresh module (in the current folder)."""
    __tracebackhide__ = True
    # dont_inherit: this file's `from __future__ import annotations` must not leak into
    # the example, where it would hide annotations naming things never imported.
    code = compile(block.text, block.name, "exec", dont_inherit=True)
    module = types.ModuleType(f"docs_example_{block.line}")
    # Dataclasses and pickling look a class's module up in sys.modules.
    sys.modules[module.__name__] = module
    try:
        exec(code, module.__dict__)
    finally:
        del sys.modules[module.__name__]


def check_yaml(text: str) -> None:
    """Non-empty and consistently indented; raises AssertionError naming the line."""
    __tracebackhide__ = True
    content = [
        (number, line)
        for number, line in enumerate(text.splitlines(), 1)
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert content, "the YAML block is empty"
    levels = [0]
    opener = False  # the previous line opens a deeper level
    scalar_at: int | None = None  # inside a block scalar whose key is at this indent
    checked: list[tuple[int, str, int]] = []
    for number, line in content:
        leading = line[: len(line) - len(line.lstrip())]
        assert "\t" not in leading, f"YAML line {number} is indented with a tab"
        indent = len(leading)
        stripped = line.strip()
        if scalar_at is not None:
            if indent > scalar_at:
                continue  # block scalar content: free text
            scalar_at = None
        if indent > levels[-1]:
            assert opener, (
                f"YAML line {number} is indented deeper than the line before, which opens "
                f"no mapping, list item or block scalar: {stripped!r}"
            )
            levels.append(indent)
        else:
            while indent < levels[-1]:
                levels.pop()
            assert indent == levels[-1], (
                f"YAML line {number} dedents to column {indent}, a level never opened: "
                f"{stripped!r}"
            )
        checked.append((number, stripped, indent))
        value = stripped.split(" #", 1)[0].rstrip()
        if re.search(r"(^|[:-]\s)[|>][-+0-9]*$", value):
            scalar_at = indent
            opener = False
        else:
            opener = value.endswith(":") or value.startswith("- ") or value == "-"
    unit = min((indent for _, _, indent in checked if indent), default=0)
    for number, stripped, indent in checked:
        assert unit == 0 or indent % unit == 0, (
            f"YAML line {number} is indented {indent} spaces, not a multiple of {unit}: "
            f"{stripped!r}"
        )


def shell_commands(block: Block) -> list[str]:
    """The command lines of a shell block (continuations joined)."""
    raw = block.text.splitlines()
    prompted = any(line.startswith("$ ") for line in raw)
    if not prompted and block.language == "console":
        return []
    commands: list[str] = []
    pending = ""
    for line in raw:
        if pending:
            line = pending + " " + line.strip()
            pending = ""
        elif prompted:
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if line.rstrip().endswith("\\"):
            pending = line.rstrip()[:-1]
            continue
        if line.strip() and not line.lstrip().startswith("#"):
            commands.append(line.strip())
    return commands


_SEPARATORS = {"|", "||", "&&", ";", "&"}


def split_segments(command: str) -> list[list[str]]:
    """The simple commands of a shell line: split at pipes and lists, no redirections."""
    try:
        tokens = shlex.split(command, comments=True)
    except ValueError as exc:
        msg = f"cannot split the shell command {command!r}: {exc}"
        raise AssertionError(msg) from None
    segments: list[list[str]] = [[]]
    skip_next = False
    for token in tokens:
        if skip_next:
            skip_next = False
        elif token in _SEPARATORS:
            segments.append([])
        elif re.fullmatch(r"\d*[<>]+&?\d*", token):
            skip_next = not token.endswith(tuple("0123456789"))
        elif re.match(r"\d*[<>]", token):
            continue
        else:
            segments[-1].append(token)
    # Leading VAR=value assignments are not part of the command.
    result = []
    for segment in segments:
        while segment and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", segment[0]):
            segment = segment[1:]
        if segment:
            result.append(segment)
    return result


def _subcommands(parser: object) -> dict[str, object]:
    assert isinstance(parser, argparse.ArgumentParser)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def ldd_help(argv: list[str]) -> str:
    """The ``--help`` text of the verbs that start ``argv``; fails on an unknown verb."""
    __tracebackhide__ = True
    current: object = cli.build_parser()
    verbs: list[str] = []
    for token in argv:
        choices = _subcommands(current)
        if not choices or token.startswith("-"):
            break
        assert token in choices, (
            f"'ldd {' '.join([*verbs, token])}': no such command "
            f"(expected one of: {', '.join(sorted(choices))})"
        )
        verbs.append(token)
        current = choices[token]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main([*verbs, "--help"])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    assert code == 0, f"'ldd {' '.join(verbs)} --help' exited {code}: {err.getvalue()}"
    return out.getvalue()


def check_ldd_command(argv: list[str]) -> None:
    """The verbs of ``ldd ARGV`` exist and each ``--option`` appears in their help."""
    __tracebackhide__ = True
    text = ldd_help(argv)
    for token in argv:
        if token.startswith("--"):
            option = token.split("=", 1)[0]
            assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text), (
                f"'ldd {' '.join(argv)}': option {option} is not in its --help"
            )


PLUGIN_OPTIONS = {
    plugin.RECORD_OPTION,
    plugin.LDD_DIR_OPTION,
    plugin.REPORT_OPTION,
    plugin.HTML_OPTION,
    plugin.SUMMARY_OPTION,
    plugin.SUMMARY_MD_OPTION,
    plugin.OFF_OPTION,
}


def check_shell(block: Block) -> None:
    """Check every ldd / python -m pytest_ldd / pytest command of a shell block."""
    __tracebackhide__ = True
    for command in shell_commands(block):
        for segment in split_segments(command):
            words = segment
            if words[0] == "ldd":
                check_ldd_command(words[1:])
            elif words[0].startswith("python") and words[1:3] == ["-m", "pytest_ldd"]:
                check_ldd_command(words[3:])
            elif words[0] == "pytest" or (
                words[0].startswith("python") and words[1:3] == ["-m", "pytest"]
            ):
                for word in words:
                    option = word.split("=", 1)[0]
                    if option.startswith("--ldd"):
                        assert option in PLUGIN_OPTIONS, (
                            f"{command!r}: pytest has no option {option} "
                            f"(pytest-ldd defines {', '.join(sorted(PLUGIN_OPTIONS))})"
                        )


def run_test_file(block: Block, pytester: pytest.Pytester) -> None:
    """Run the page's example project with this test file; it must pass."""
    __tracebackhide__ = True
    assert block.path is not None
    files = {**_project_files(block), block.path: block.text}
    for path, text in files.items():
        target = pytester.path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    result = pytester.runpytest(
        *PROJECT_ARGS, "-p", "no:harvest", "--strict-markers", "--ldd", block.path
    )
    assert result.ret == 0, (
        f"the example project of {block.name} exited {result.ret}:\n"
        + "\n".join(result.outlines + result.errlines)
    )


def check_file(block: Block) -> None:
    """A project file on its own: compiled or parsed by its language."""
    __tracebackhide__ = True
    if block.language == "python":
        compile(block.text, block.name, "exec", dont_inherit=True)
    elif block.language == "toml":
        tomllib.loads(block.text)
    elif block.language == "json":
        json.loads(block.text)


@pytest.mark.parametrize("block", CASES, ids=[case.name for case in CASES])
def test_example(
    block: Block, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """One fenced example of the documentation works."""
    monkeypatch.chdir(tmp_path)
    assert block.error is None, block.error
    if block.role == "test-file":
        assert block.language == "python", (
            f"a test-file block must be python, not {block.language!r}"
        )
        run_test_file(block, request.getfixturevalue("pytester"))
    elif block.role == "file":
        check_file(block)
    elif block.language == "python":
        run_python(block)
    elif block.language == "toml":
        tomllib.loads(block.text)
    elif block.language == "json":
        json.loads(block.text)
    elif block.language in ("yaml", "yml"):
        check_yaml(block.text)
    else:
        check_shell(block)


# -- the checker itself ------------------------------------------------------------------


def _page(tmp_path: Path, text: str) -> Path:
    page = tmp_path / "page.md"
    page.write_text(text, encoding="utf-8")
    return page


def test_blocks_carry_their_line_language_and_directive(tmp_path: Path) -> None:
    page = _page(
        tmp_path,
        "# t\n\n```python\nx = 1\n```\n\n<!-- docs: conftest -->\n\n```python\n"
        "y = 2\n```\n\n- item\n\n  ```toml\n  a = 1\n  ```\n<!-- docs: test-file t/test_a.py -->\n"
        "```python\nz = 3\n```\n<!-- docs: conftset -->\n```python\nw = 4\n```\n",
    )
    got = [(b.line, b.language, b.text, b.role, b.path) for b in parse_blocks(page)]
    assert got == [
        (3, "python", "x = 1\n", None, None),
        (9, "python", "y = 2\n", "file", "conftest.py"),
        (15, "toml", "a = 1\n", None, None),
        (19, "python", "z = 3\n", "test-file", "t/test_a.py"),
        (23, "python", "w = 4\n", None, None),
    ]
    assert "unknown docs directive" in (parse_blocks(page)[-1].error or "")


@pytest.mark.parametrize(
    "text",
    [
        "on:\n  push:\n    branches: [main]\njobs:\n  test:\n    steps:\n"
        "      - uses: actions/checkout@v4\n      - run: |\n          pytest\n"
        "            --ldd\n        env:\n          A: b\n",
        "steps:\n- name: x\n  run: y\n",
        "script:\n  - |\n    if x; then\n      y\n    fi\n  - z\n",
    ],
    ids=["workflow", "unindented-list", "block-scalar-item"],
)
def test_yaml_check_accepts_consistent_blocks(text: str) -> None:
    check_yaml(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("# only a comment\n", "empty"),
        ("a:\n\tb: 1\n", "tab"),
        ("a: 1\n  b: 2\n", "deeper"),
        ("a:\n    b: 1\n  c: 2\n", "never opened"),
        ("a:\n  b:\n     c: 1\n", "multiple"),
    ],
    ids=["empty", "tab", "deeper", "dedent", "unit"],
)
def test_yaml_check_rejects_broken_blocks(text: str, message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        check_yaml(text)


def test_shell_check_finds_unknown_verbs_and_options(tmp_path: Path) -> None:
    good = Block(tmp_path, 1, "console", "$ ldd metric status --json\nout\n$ echo $?\n")
    check_shell(good)
    for text, message in [
        ("$ ldd metric stats\n", "no such command"),
        ("$ ldd metric status --jsn\n", "not in its --help"),
        ("$ python -m pytest_ldd reprot --json r.json\n", "no such command"),
        ("$ pytest --ldd-htm=r.html\n", "no option --ldd-htm"),
    ]:
        with pytest.raises(AssertionError, match=message):
            check_shell(Block(tmp_path, 1, "console", text))


def test_shell_segments_drop_redirections_and_assignments() -> None:
    assert split_segments("A=1 ldd metric list > out.txt 2>&1 | head -n 3  # x") == [
        ["ldd", "metric", "list"],
        ["head", "-n", "3"],
    ]


def test_a_broken_python_example_fails(tmp_path: Path) -> None:
    block = Block(tmp_path / "page.md", 3, "python", "assert 1 + 1 == 3\n")
    with pytest.raises(AssertionError):
        run_python(block)
    # Annotations are evaluated as in a fresh script, not postponed as in this file.
    block = Block(tmp_path / "page.md", 3, "python", "def f(x: Undefined) -> None: ...\n")
    with pytest.raises(NameError, match="Undefined"):
        run_python(block)


def test_a_failing_test_file_example_fails(pytester: pytest.Pytester) -> None:
    page = pytester.path / "page.md"
    page.write_text("<!-- docs: test-file -->\n```python\ndef test_x():\n    assert False\n```\n")
    (block,) = parse_blocks(page)
    with pytest.raises(AssertionError, match="exited 1"):
        run_test_file(block, pytester)


# -- the console sessions ----------------------------------------------------------------

SESSION_PAGES = [
    page for page in PAGES if page.is_file() and "```console" in page.read_text("utf-8")
]


@pytest.mark.parametrize(
    "page", SESSION_PAGES, ids=[page.relative_to(ROOT).as_posix() for page in SESSION_PAGES]
)
def test_console_sessions(page: Path, tmp_path: Path) -> None:
    """The page's console blocks, run in order in one project built from its files."""
    document = page_sybil().parse(page)
    document.namespace["project"] = PageProject(tmp_path / "project")
    for example in document:
        example.evaluate()


def _page_story(tmp_path: Path, text: str) -> None:
    """Run the console story of a page made of ``text``."""
    __tracebackhide__ = True
    page = _page(tmp_path, text)
    document = page_sybil().parse(page)
    document.namespace["project"] = PageProject(tmp_path / "project")
    for example in document:
        example.evaluate()


def test_a_session_runs_the_pages_files_in_order(tmp_path: Path) -> None:
    _page_story(
        tmp_path,
        "<!-- docs: file data/a.txt -->\n```text\none\n```\n\n"
        "```console\n$ cat data/a.txt\none\n```\n\n"
        "<!-- docs: file data/a.txt -->\n```text\ntwo\n```\n\n"
        "<!-- docs: run\necho three >> data/a.txt\n-->\n\n"
        "```console\n$ cat data/a.txt  # the later block replaced the file\ntwo\nthree\n"
        "$ false\n$ echo $?\n1\n```\n",
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("```console\n$ echo one\ntwo\n```\n", "prints other output"),
        ("```console\n$ echo one\n```\n", "prints other output"),
        ("```console\n$ false\n```\n", "exited 1"),
        ("```console\nsome output\n```\n", "output before the first"),
        ("```console\n```\n", "has no '\\$ ' command"),
        ("<!-- docs: not-run -->\n```console\n$ echo\n```\n", "needs its reason"),
        ("<!-- docs: run\nexit 3\n-->\n", "exited 3"),
        ("<!-- docs: file a.txt -->\n\nprose\n\n```text\nx\n```\n", "not on the line before"),
        ("<!-- docs: sikp -->\n```console\n$ echo\n```\n", "unknown docs directive"),
        ("<!-- docs: patch a.py -->\n```diff\n-x = 1\n+x = 2\n```\n", "not a file"),
    ],
    ids=[
        "other-output",
        "missing-output",
        "exit-status",
        "no-prompt",
        "empty",
        "not-run-without-reason",
        "run-fails",
        "detached-directive",
        "unknown-directive",
        "patch-missing-file",
    ],
)
def test_a_wrong_session_fails(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        _page_story(tmp_path, text)


def test_not_run_blocks_are_not_run_and_patches_apply(tmp_path: Path) -> None:
    _page_story(
        tmp_path,
        "<!-- docs: not-run (shows a command that fails here) -->\n```console\n$ false\n```\n"
        "<!-- docs: file a.py -->\n```python\nx = 1\ny = 2\n```\n"
        "<!-- docs: patch a.py -->\n```diff\n-x = 1\n+x = 3\n y = 2\n```\n"
        "```console\n$ cat a.py\nx = 3\ny = 2\n```\n",
    )


@pytest.mark.parametrize(
    ("expected", "actual"),
    [
        ("a\n...\nd", "a\nb\nc\nd"),
        ("a\n...\nb", "a\nb"),
        ("x = ... ms", "x = 12 ms"),
        ("=== 1 passed in 0.39s ===", "=== 1 passed in <duration> ==="),
    ],
)
def test_wildcards_match(expected: str, actual: str) -> None:
    assert output_matches(normalize(expected), normalize(actual))


@pytest.mark.parametrize(
    ("expected", "actual"),
    [("a\n...\nd", "a\nb\nc"), ("x = ... ms", "x = 12 s"), ("a", "a\nb"), ("", "a")],
)
def test_wildcards_do_not_match_anything(expected: str, actual: str) -> None:
    assert not output_matches(normalize(expected), normalize(actual))


def test_normalize_replaces_what_changes_from_run_to_run(tmp_path: Path) -> None:
    printed = (
        f"wrote {tmp_path}/out.json at 2026-12-01T08:48:47Z, session 20261201T183608Z-66f0fe\n"
        "======= 3 passed in 12.05s =======\n"
        "session 2/7: passed  (1.8 s); 7 sessions in 13.6 s; solve_seconds = 3.1 s  \n\n"
    )
    assert normalize(printed, tmp_path) == (
        "wrote /path/to/project/out.json at <timestamp>, session <session-id>\n"
        "=== 3 passed in <duration> ===\n"
        "session 2/7: passed  (<duration>); 7 sessions in <duration>; solve_seconds = 3.1 s"
    )


# -- figures from benchmarks/results.json ------------------------------------------------


@pytest.fixture(scope="module")
def figures() -> types.ModuleType:
    """``benchmarks/_markdown.py``, the generator of every quoted benchmark figure."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "benchmarks_markdown", ROOT / "benchmarks" / "_markdown.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _results() -> dict[str, object]:
    return json.loads((ROOT / "benchmarks" / "results.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("page", PAGES, ids=[page.relative_to(ROOT).as_posix() for page in PAGES])
def test_quoted_figures_are_those_of_results_json(page: Path, figures: types.ModuleType) -> None:
    text = page.read_text(encoding="utf-8")
    current = figures.update_page(text, _results())
    diff = "\n".join(
        difflib.unified_diff(
            text.splitlines(), current.splitlines(), "page", "results.json", lineterm=""
        )
    )
    assert current == text, (
        f"{page.name} quotes figures that benchmarks/results.json does not hold; run "
        f"`python benchmarks/_markdown.py --write`:\n{diff}"
    )


def test_a_stale_figure_is_found(figures: types.ModuleType) -> None:
    doc = _results()
    page = (
        "Overhead: <!-- figure overhead.vs_harvest -->0.50x<!-- /figure -->.\n"
        "<!-- benchmarks: tables -->\n\nold table\n\n<!-- /benchmarks -->\n"
    )
    current = figures.update_page(page, doc)
    assert "0.50x" not in current
    assert "old table" not in current
    assert figures.render(doc) in current
    shown = "```markdown\n<!-- figure memory.delta -->1 MB<!-- /figure -->\n```\n"
    assert figures.update_page(shown, doc) == shown  # a marker shown in a code block is text
    with pytest.raises(figures.FigureError, match=r"unknown figure 'overhead\.typo'"):
        figures.update_page("<!-- figure overhead.typo -->1x<!-- /figure -->", doc)
