"""Preparing one run: the fresh copies, the expected test ids and the canary tests.

Everything is laid out in a temporary folder the parent creates and deletes:

``ws/<name>/``      a copy of the agent's workspace (the child's working folder);
``suite/<name>/``   a copy of the hidden tests, with the canaries planted in them;
``runner/``         our bootstrap script and our pytest configuration file;
``home/``, ``tmp/`` the child's ``HOME`` and ``TMPDIR``.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import os
import random
import re
import shutil
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from pytest_ldd._sandbox.suite_config import Collection
from pytest_ldd._sandbox.twins import Twin, parse, plant_twins
from pytest_ldd.errors import SandboxError

__all__ = [
    "HiddenSuite",
    "check_extra_environment",
    "child_environment",
    "copy_workspace",
    "plant_canaries",
    "stage_hidden",
    "workspace_modules",
]

# pytest's defaults: python_files, python_classes / python_functions and norecursedirs.
_PYTEST_DEFAULTS = Collection()
_NEVER_COPIED = ("__pycache__", ".pytest_cache")
_BYTECODE = (".pyc", ".pyo")

# Variables of the calling environment the child keeps; everything else is dropped.
_KEPT = ("PATH", "LANG", "LANGUAGE", "TZ", "SYSTEMROOT")
_CONTROLLED = ("PYTEST_", "PYTHON")

_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
# What cannot be part of a test's name, in a file's name.
_NOT_IN_NAMES = re.compile(r"[^A-Za-z0-9_]")
_FALLBACK_WORDS = (
    "basic", "empty", "edge", "large", "small", "values", "order", "types", "single",
    "many", "zero", "repeat", "mixed", "simple", "result", "input", "output", "round",
    "trip", "limits", "default", "negative", "unicode", "nested", "boundary",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class HiddenSuite:
    """The staged hidden tests: what to collect, what must be reported, the canaries."""

    root: Path
    files: tuple[Path, ...]
    expected: tuple[str, ...]
    must_fail: frozenset[str]
    must_pass: frozenset[str]
    # Twin canary id -> the hidden test it is the twin of, and what was perturbed.
    twins: Mapping[str, str] = field(default_factory=dict)
    twin_changes: Mapping[str, str] = field(default_factory=dict)
    # Twin canary id -> the lines of its file where it checks its perturbed assertion.
    twin_lines: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    # Twin canary id -> its original's first and last line, and those of the statement
    # the twin perturbed (in the original), where that statement is the test's own.
    original_sites: Mapping[str, tuple[int, int, int, int]] = field(default_factory=dict)


def copy_workspace(
    src: Path, dst: Path, *, max_bytes: int | None, max_files: int | None
) -> str | None:
    """Copy the agent's workspace; return why it was refused, or None when copied.

    Only regular files, folders and symlinks that stay inside the workspace are copied.
    Links leaving the workspace, FIFOs, sockets and devices are dropped; so is bytecode
    (``__pycache__``, ``*.pyc``), which could disagree with the source a reviewer reads.
    A link is re-made (pointing into the copy) only after everything else is copied,
    and only when its target made it into the copy: a link to a dropped file, or named
    like bytecode, is dropped too.  Set-id bits are dropped.  ``max_files`` counts
    files and folders.  The walk is iterative and never follows a link.  A workspace
    that cannot be read whole is refused: the agent controls its files' permissions,
    and must not be able to turn grading into a crash.
    """
    try:
        return _copy_tree(src.resolve(), dst, max_bytes=max_bytes, max_files=max_files)
    except (OSError, ValueError) as exc:
        return f"the workspace cannot be copied: {exc}"


def _copy_tree(
    top: Path, dst: Path, *, max_bytes: int | None, max_files: int | None
) -> str | None:
    dst.mkdir(parents=True)
    entries = 0
    size = 0
    links: list[tuple[str, Path]] = []
    pending = [""]
    while pending:
        rel = pending.pop()
        here = top / rel if rel else top
        with os.scandir(here) as listing:
            children = sorted(listing, key=lambda entry: entry.name)
        for entry in children:
            name = entry.name
            child = f"{rel}/{name}" if rel else name
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                links.append((child, Path(entry.path)))
                continue
            if stat.S_ISDIR(info.st_mode):
                if name in _NEVER_COPIED:
                    continue
                (dst / child).mkdir()
                pending.append(child)
            elif not stat.S_ISREG(info.st_mode) or name.endswith(_BYTECODE):
                continue
            else:
                size += info.st_size
                if max_bytes is not None and size > max_bytes:
                    return f"the workspace is larger than {max_bytes} bytes: not copied"
                _copy_file(Path(entry.path), dst / child, info)
            entries += 1
            if max_files is not None and entries > max_files:
                return f"the workspace holds more than {max_files} files and folders: not copied"
    for child, link in links:
        _relink(child, link, top, dst)
    return None


def _copy_file(src: Path, dst: Path, info: os.stat_result) -> None:
    """Copy one regular file, at most the size ``lstat`` saw, never through a link."""
    fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return  # swapped for something else since it was listed
        mode = (stat.S_IMODE(info.st_mode) & 0o777) | stat.S_IRUSR | stat.S_IWUSR
        out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            left = info.st_size
            while left > 0:
                data = os.read(fd, min(left, 1 << 20))
                if not data:
                    break
                left -= len(data)
                while data:
                    data = data[os.write(out, data) :]
            os.fchmod(out, mode)
        finally:
            os.close(out)
    finally:
        os.close(fd)


def _relink(child: str, link: Path, top: Path, dst: Path) -> None:
    """Re-make a link into the copy, if its name and its target passed the filters."""
    parts = child.split("/")
    if parts[-1] in _NEVER_COPIED or parts[-1].endswith(_BYTECODE):
        return
    try:
        resolved = Path(os.path.realpath(link, strict=True))
    except (OSError, RuntimeError, ValueError):
        return  # dangling or looping: dropped
    if not resolved.is_relative_to(top):
        return  # leaves the workspace: dropped
    mapped = dst / resolved.relative_to(top)
    try:
        info = os.lstat(mapped)
    except OSError:
        return  # its target was not copied (bytecode, a FIFO, a device...): dropped
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
        return
    target = dst / child
    os.symlink(os.path.relpath(mapped, target.parent), target)


def workspace_modules(folders: Sequence[Path]) -> frozenset[str]:
    """The top-level module names importable from ``folders`` (a workspace's pythonpath)."""
    names: set[str] = set()
    for folder in folders:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            if entry.is_dir(follow_symlinks=False):
                stem = name
            elif name.endswith(".py"):
                stem = name[:-3]
            elif name.endswith((".so", ".pyd")):
                stem = name.partition(".")[0]
            else:
                continue
            if stem.isidentifier() and stem not in _NEVER_COPIED:
                names.add(stem)
    return frozenset(names)


def overlay_hidden(workspace: Path, hidden: Path, staged: Path) -> tuple[str, ...]:
    """Link each top-level entry of the hidden tests into the workspace copy; return
    the names linked.

    A suite's authors run it from their repository's root, where its test folder sits
    beside the code: a test that opens ``tests/data.txt`` relative to the working
    folder finds it there.  The run's working folder is the workspace copy, so the same
    relative path leads, through a link, to the staged hidden tests.  An entry the
    workspace has of its own keeps it (the workspace's files are never replaced), and
    nothing is linked for a hidden test that is a single file.  Links are relative, so
    a wrapper that binds the run's folder elsewhere keeps them.
    """
    if not hidden.is_dir():
        return ()
    linked: list[str] = []
    for entry in sorted(hidden.iterdir(), key=lambda path: path.name):
        name = entry.name
        if name in _NEVER_COPIED or name.endswith(_BYTECODE):
            continue
        link = workspace / name
        if os.path.lexists(link):
            continue
        os.symlink(os.path.relpath(staged / name, workspace), link)
        linked.append(name)
    return tuple(linked)


def stage_hidden(
    src: Path,
    dst: Path,
    rng: random.Random,
    *,
    workspace_modules: frozenset[str] | None = None,
    collection: Collection = _PYTEST_DEFAULTS,
    announce: Callable[[dict[str, tuple[int, str]]], None] | None = None,
) -> HiddenSuite:
    """Copy the hidden tests to ``dst``, find their ids and plant the canary tests.

    ``workspace_modules`` are the top-level module names the workspace provides (what
    tells the twins which values are the workspace's); None: every import that is not
    the standard library's or a test library's.  ``collection`` says which files,
    classes and functions are tests, and which its ``-m`` leaves out (the suite's own
    settings, :mod:`pytest_ldd._sandbox.suite_config`).

    ``announce`` is told each staged file's final size and SHA-256 (hex), by its path
    relative to ``dst`` with ``/``, as soon as it is final: first every file staging
    leaves as copied, then each test file once its canaries and twins are in.  Every
    byte it hashes was read before the first announcement, which is when a process
    waiting for them may begin to run code of the workspace.
    """
    try:
        if src.is_dir():
            shutil.copytree(
                src, dst, ignore=shutil.ignore_patterns(*_NEVER_COPIED, "*.pyc", "*.pyo")
            )
        else:
            dst.mkdir(parents=True)
            shutil.copyfile(src, dst / src.name)
    except OSError as exc:
        msg = f"cannot copy the hidden tests {str(src)!r}: {exc}"
        raise SandboxError(msg) from exc
    # A file the suite's conftest.py leaves out is data to the suite, as under plain
    # pytest: nothing is planted in it, nor expected of it (asttokens reads its
    # testdata/astroid/clientmodule_test.py, which collect_ignore leaves out).
    ignored = _ignored_by_conftest(dst)
    files = [path for path in _test_files(dst, collection) if not ignored(path)]
    if not files:
        msg = (
            f"'tests' must hold test files named {' or '.join(collection.python_files)}"
            f" (found none in {str(src)!r})"
        )
        raise SandboxError(msg)
    expected: list[str] = []
    must_fail: set[str] = set()
    must_pass: set[str] = set()
    twins: dict[str, str] = {}
    changes: dict[str, str] = {}
    lines: dict[str, tuple[int, int]] = {}
    sites: dict[str, tuple[int, int, int, int]] = {}
    # Every name of the suite's Python files, and every canary's so far: a twin named
    # like a test a class inherits from a mixin in another file would replace it, and
    # the judge knows a canary pytest collected again elsewhere by its name alone.
    suite_words = _suite_words(dst)
    sources = {path: path.read_bytes() for path in files}
    if announce is not None:
        announce(_hashes(dst, skip=set(files)))
    for path in files:
        rel = path.relative_to(dst).as_posix()
        source = sources.pop(path)
        try:
            tree = parse(source, filename=str(path))
        except (SyntaxError, ValueError, RecursionError):
            # Left as written, for pytest to decide, as under plain pytest: a conftest.py
            # may ignore it (syntax of a newer Python), else it is a collection error.
            _announce_one(announce, rel, source)
            continue
        names = _collectable(tree, collection)
        if collection.markexpr is not None:
            # What the suite's own -m leaves out, as its marks are written: never run,
            # never expected, never twinned.
            marks = _static_marks(tree)
            names = [n for n in names if collection.selects(marks.get(n, frozenset()))]
        expected.extend(f"{rel}::{name}" for name in names)
        if _opts_out(tree.body):
            _announce_one(announce, rel, source)
            continue
        # The canaries first: the twins' lines are those of the file as written.
        source, fail_name, pass_name, parsed = _planted_canaries(
            source, tree, names, rng, suite_words
        )
        must_fail.add(f"{rel}::{fail_name}")
        must_pass.add(f"{rel}::{pass_name}")
        suite_words |= {fail_name, pass_name}
        source, planted_twins = _with_twins(
            source, parsed, names, rng, workspace_modules, suite_words
        )
        # Names are known by name alone in the judge: none may serve twice.
        suite_words |= {twin.name.rpartition("::")[2] for twin in planted_twins}
        for twin in planted_twins:
            twin_id = f"{rel}::{twin.name}"
            twins[twin_id] = f"{rel}::{twin.of}"
            changes[twin_id] = twin.change
            lines[twin_id] = twin.lines
            if twin.original[0]:
                sites[twin_id] = twin.original
        path.write_bytes(source)
        _announce_one(announce, rel, source)
    if not must_fail:
        # Every hidden file opts out of collection: the canaries get a file of their own.
        path = dst / f"test_{rng.choice(_FALLBACK_WORDS)}_{rng.randrange(10, 99)}.py"
        planted, fail_name, pass_name = plant_canaries(b"", parse(b""), [], rng)
        path.write_bytes(planted)
        _announce_one(announce, path.name, planted)
        files.append(path)
        must_fail.add(f"{path.name}::{fail_name}")
        must_pass.add(f"{path.name}::{pass_name}")
    return HiddenSuite(
        dst,
        tuple(files),
        tuple(expected),
        frozenset(must_fail),
        frozenset(must_pass),
        twins,
        changes,
        lines,
        sites,
    )


_HASH_CHUNK = 1 << 20


def _hashes(root: Path, *, skip: set[Path]) -> dict[str, tuple[int, str]]:
    """Size and SHA-256 (hex) of every regular file under ``root`` but ``skip``."""
    found: dict[str, tuple[int, str]] = {}
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            path = Path(dirpath, name)
            if path in skip or not stat.S_ISREG(path.lstat().st_mode):
                continue
            digest, size = hashlib.sha256(), 0
            with path.open("rb") as file:  # a chunk at a time: a suite's data may be large
                while chunk := file.read(_HASH_CHUNK):
                    digest.update(chunk)
                    size += len(chunk)
            found[path.relative_to(root).as_posix()] = (size, digest.hexdigest())
    return found


def _announce_one(
    announce: Callable[[dict[str, tuple[int, str]]], None] | None, rel: str, data: bytes
) -> None:
    if announce is not None:
        announce({rel: (len(data), hashlib.sha256(data).hexdigest())})


def _with_twins(
    source: bytes,
    tree: ast.Module | None,
    names: Sequence[str],
    rng: random.Random,
    workspace_modules: frozenset[str] | None,
    taken: frozenset[str] = frozenset(),
) -> tuple[bytes, list[Twin]]:
    """The file with its twin canaries spliced in; its own text stays as it was.

    ``tree`` is ``source`` parsed, where the caller has it already (None: parsed here);
    no twin is named like any of ``taken`` (the names of the suite's other files).
    """
    draw = _name_drawer(source, names, rng, taken)
    try:
        if tree is None:
            tree = parse(source)
        return plant_twins(source, tree, names, draw, rng, workspace_modules=workspace_modules)
    except (RecursionError, ValueError, SyntaxError):  # an unusual file: no twins
        return source, []


def _suite_words(root: Path) -> frozenset[str]:
    """Every identifier-like word of the Python files under ``root``, and the test names
    its other files' names could make.

    A suite may make tests at import time from its data files' names (markdown's
    ``LegacyTestMeta`` makes ``test_adjacent_headers`` of ``adjacent-headers.txt``):
    no canary or twin may be named like one of those, since the judge knows a canary
    pytest collected again elsewhere by its name.
    """
    words: set[bytes] = set()
    made: set[str] = set()
    for folder, dirnames, names in os.walk(root):
        for name in (*dirnames, *names):
            stem = _NOT_IN_NAMES.sub("_", name.rpartition(".")[0] or name)
            made.update((f"test_{stem}", f"test_{stem.lower()}"))
        for name in names:
            if name.endswith(".py"):
                with contextlib.suppress(OSError), open(os.path.join(folder, name), "rb") as f:
                    words.update(_WORD.findall(f.read()))
    return frozenset(word.decode("ascii") for word in words) | made


def _name_drawer(
    source: bytes, tests: Sequence[str], rng: random.Random, taken_elsewhere: frozenset[str]
) -> Any:
    """Draws fresh test names from the words of the file's own test names."""
    taken = {word.decode("ascii") for word in _WORD.findall(source)} | taken_elsewhere
    tokens = {
        part.lower()
        for name in tests
        for part in name.split("::")[-1].split("_")
        if part and part.lower() != "test" and not part.isdigit()
    }
    pool = sorted(tokens | set(_FALLBACK_WORDS))

    def draw() -> str:
        attempts = 0
        while True:
            attempts += 1
            name = "test_" + "_".join(rng.sample(pool, rng.choice((1, 2))))
            if attempts > 50:
                name = f"{name}_{rng.randrange(2, 999)}"
            if name not in taken:
                taken.add(name)
                return name

    return draw


def _ignored_by_conftest(root: Path) -> Callable[[Path], bool]:
    """Whether a file lies where a ``conftest.py`` under ``root`` tells pytest not to look.

    Read from the syntax tree: ``collect_ignore`` and ``collect_ignore_glob`` set to a
    list of strings, added to with ``+=``, ``append`` or ``extend`` (under an ``if``
    too: a file that might be left out is never planted in, and one pytest collects
    after all runs with the template canaries of the other files and without twins).
    """
    paths: list[Path] = []
    globs: list[str] = []
    for conftest in sorted(root.rglob("conftest.py")):
        try:
            tree = parse(conftest.read_bytes(), filename=str(conftest))
        except (OSError, SyntaxError, ValueError, RecursionError):
            continue
        for name, entry in _ignore_entries(tree.body):
            where = conftest.parent / entry
            if name == "collect_ignore":
                paths.append(Path(os.path.normpath(where)))
            else:
                globs.append(str(where))

    def ignored(path: Path) -> bool:
        return any(path == p or p in path.parents for p in paths) or any(
            fnmatch(str(path), pattern) for pattern in globs
        )

    return ignored


_IGNORE_NAMES = ("collect_ignore", "collect_ignore_glob")


def _ignore_entries(body: Sequence[ast.stmt]) -> Iterator[tuple[str, str]]:
    """``(name, entry)`` for every string a module body adds to an ignore list."""
    for node in body:
        if isinstance(node, ast.If):
            yield from _ignore_entries(node.body)
            yield from _ignore_entries(node.orelse)
            continue
        target: ast.expr | None = None
        values: ast.expr | None = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, values = node.targets[0], node.value
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            target, values = node.target, node.value
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            func = node.value.func
            if isinstance(func, ast.Attribute) and func.attr in ("append", "extend"):
                target = func.value
                args = node.value.args
                values = args[0] if len(args) == 1 else None
                if func.attr == "append" and values is not None:
                    values = ast.List(elts=[values], ctx=ast.Load())
        if not (isinstance(target, ast.Name) and target.id in _IGNORE_NAMES):
            continue
        if isinstance(values, (ast.List, ast.Tuple)):
            for element in values.elts:
                if isinstance(element, ast.Constant) and isinstance(element.value, str):
                    yield target.id, element.value


def _test_files(root: Path, collection: Collection) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if collection.enters(Path(dirpath, d)))
        for name in sorted(filenames):
            if collection.is_test_file(Path(dirpath, name)):
                found.append(Path(dirpath, name))
    return found


def _opts_out(body: Sequence[ast.stmt]) -> bool:
    """``__test__ = False`` in a module or class body: pytest collects nothing there."""
    for node in body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if "__test__" in targets and not node.value.value:
                return True
    return False


def _decorator_names(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    names = set()
    for deco in node.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if isinstance(target, ast.Attribute):
            names.add(target.attr)
        elif isinstance(target, ast.Name):
            names.add(target.id)
    return names


def _is_test_function(node: ast.stmt, collection: Collection | None = _PYTEST_DEFAULTS) -> bool:
    """A function pytest collects; by ``collection``'s ``python_functions``, or where it is
    None by unittest's ``test`` prefix (a ``TestCase``'s methods)."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    named = (
        node.name.startswith("test")
        if collection is None
        else collection.is_test_function(node.name)
    )
    return named and not _decorator_names(node) & {"fixture", "classmethod", "property"}


_TEST_CASES = frozenset({"TestCase", "IsolatedAsyncioTestCase"})


def _unittest_classes(tree: ast.Module) -> set[str]:
    """The module's classes that derive from ``unittest.TestCase`` (pytest collects them all)."""
    found: set[str] = set()
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    changed = True
    while changed:
        changed = False
        for node in classes:
            if node.name in found:
                continue
            for base in node.bases:
                name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", None)
                if name in _TEST_CASES or name in found:
                    found.add(node.name)
                    changed = True
                    break
    return found


def _class_tests(
    node: ast.ClassDef,
    prefix: str,
    collection: Collection,
    unittest: frozenset[str] = frozenset(),
) -> list[str]:
    is_unittest = node.name in unittest
    if not (collection.is_test_class(node.name) or is_unittest) or _opts_out(node.body):
        return []
    if any(
        isinstance(child, ast.FunctionDef) and child.name in ("__init__", "__new__")
        for child in node.body
    ):
        return []  # pytest refuses to collect a test class with a constructor
    names = []
    here = f"{prefix}{node.name}::"
    for child in node.body:
        if _is_test_function(child, None if is_unittest else collection):
            assert isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            names.append(here + child.name)
        elif isinstance(child, ast.ClassDef) and not is_unittest:
            names.extend(_class_tests(child, here, collection))
    return names


def _collectable(tree: ast.Module, collection: Collection = _PYTEST_DEFAULTS) -> list[str]:
    """The tests pytest will surely collect from a module, as ``name`` / ``Class::name``.

    Only definitions at the top of the module (or of a top-level test class, or of a
    ``unittest.TestCase`` subclass whatever its name) count: a test defined under an
    ``if`` may rightly be missing from the run.
    """
    if _opts_out(tree.body):
        return []
    names: dict[str, None] = {}
    unittest = frozenset(_unittest_classes(tree))
    for node in tree.body:
        if _is_test_function(node, collection):
            assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            names[node.name] = None
        elif isinstance(node, ast.ClassDef):
            names.update(dict.fromkeys(_class_tests(node, "", collection, unittest)))
    return list(names)


def _mark_names(expr: ast.expr | None) -> frozenset[str]:
    """The names of ``pytest.mark.NAME`` (or ``mark.NAME``, called or not) in ``expr``, a
    decorator or a ``pytestmark`` value (one mark, or a list or tuple of them)."""
    if expr is None:
        return frozenset()
    items = expr.elts if isinstance(expr, (ast.List, ast.Tuple)) else [expr]
    found = set()
    for item in items:
        target = item.func if isinstance(item, ast.Call) else item
        if isinstance(target, ast.Attribute) and (
            (isinstance(target.value, ast.Attribute) and target.value.attr == "mark")
            or (isinstance(target.value, ast.Name) and target.value.id == "mark")
        ):
            found.add(target.attr)
    return frozenset(found)


def _pytestmark(body: Sequence[ast.stmt]) -> frozenset[str]:
    marks: frozenset[str] = frozenset()
    for node in body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            marks |= _mark_names(node.value)
    return marks


def _static_marks(tree: ast.Module) -> dict[str, frozenset[str]]:
    """Each test's mark names as its file writes them: its decorators, its class's (and
    that class's ``pytestmark``), and the module's ``pytestmark``; ``name`` or
    ``Class::name`` as :func:`_collectable` names tests."""
    module = _pytestmark(tree.body)
    found: dict[str, frozenset[str]] = {}

    def walk(body: Sequence[ast.stmt], prefix: str, inherited: frozenset[str]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                own = frozenset().union(*(_mark_names(d) for d in node.decorator_list))
                found[prefix + node.name] = inherited | own
            elif isinstance(node, ast.ClassDef):
                own = frozenset().union(*(_mark_names(d) for d in node.decorator_list))
                walk(node.body, f"{prefix}{node.name}::", inherited | own | _pytestmark(node.body))

    walk(tree.body, "", module)
    return found


def _canary_body(rng: random.Random, *, passes: bool) -> str:
    """An ordinary-looking assertion that holds (or fails) without any agent code."""
    a, b = rng.randrange(2, 99), rng.randrange(2, 99)
    shift = 0 if passes else rng.randrange(1, 9)
    items = rng.sample(range(1, 60), 4)
    words = rng.sample(_FALLBACK_WORDS, 2)
    choice = rng.randrange(4)
    if choice == 0:
        return f"assert {a} + {b} == {a + b + shift}"
    if choice == 1:
        ordered = sorted(items)
        if not passes:
            ordered[0], ordered[-1] = ordered[-1], ordered[0]
        return f"assert sorted({items}) == {ordered}"
    if choice == 2:
        word = words[0] if passes else words[1]
        return f"assert {words[0]!r}.upper() == {word.upper()!r}"
    return f"assert len({items}) == {len(items) + shift}"


def _canary_names(
    source: bytes, tests: Sequence[str], rng: random.Random, taken_elsewhere: frozenset[str]
) -> tuple[str, str]:
    """Two fresh names built from the words of the file's own test names."""
    draw = _name_drawer(source, tests, rng, taken_elsewhere)
    return draw(), draw()


def plant_canaries(
    source: bytes, tree: ast.Module, tests: Sequence[str], rng: random.Random
) -> tuple[bytes, str, str]:
    """Insert a must-fail and a must-pass test among a file's top-level tests.

    Returns the new source and the two names.  Each canary goes after a randomly
    chosen top-level definition, so neither its name nor its place tells it apart.
    """
    return _planted_canaries(source, tree, tests, rng)[:3]


def _planted_canaries(
    source: bytes,
    tree: ast.Module,
    tests: Sequence[str],
    rng: random.Random,
    taken: frozenset[str] = frozenset(),
) -> tuple[bytes, str, str, ast.Module | None]:
    """:func:`plant_canaries`, and the new source parsed where that was done (else None).

    No canary is named like any of ``taken`` (the names of the suite's other files).
    """
    fail_name, pass_name = _canary_names(source, tests, rng, taken)
    blocks = {
        fail_name: f"def {fail_name}():\n    {_canary_body(rng, passes=False)}\n",
        pass_name: f"def {pass_name}():\n    {_canary_body(rng, passes=True)}\n",
    }
    lines = source.splitlines(keepends=True)
    anchors = [
        node.end_lineno
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and node.end_lineno is not None
    ] or [len(lines)]
    inserts: dict[int, list[str]] = {}
    for name in (fail_name, pass_name):
        inserts.setdefault(rng.choice(anchors), []).append(blocks[name])
    planted = _splice(lines, inserts)
    parsed = _defining(planted, (fail_name, pass_name))
    if parsed is None:
        # An unusual file layout defeated the splice: fall back to the end of the file.
        planted = _splice(lines, {len(lines): list(blocks.values())})
    return planted, fail_name, pass_name, parsed


def _splice(lines: list[bytes], inserts: Mapping[int, list[str]]) -> bytes:
    out: list[bytes] = []
    for index in range(len(lines) + 1):
        if index:
            out.append(lines[index - 1])
        for block in inserts.get(index, ()):
            if out and not out[-1].endswith((b"\n", b"\r")):
                out.append(b"\n")
            out.append(b"\n\n" + block.encode("ascii") + b"\n\n")
    return b"".join(out)


def _defining(source: bytes, names: Sequence[str]) -> ast.Module | None:
    """``source`` parsed, if it defines ``names`` at the top level; else None."""
    try:
        tree = parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return None
    top = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    return tree if all(name in top for name in names) else None


def child_environment(
    calling: Mapping[str, str], extra: Mapping[str, str], *, home: Path, tmp: Path
) -> dict[str, str]:
    """The child's environment: a few locale/path variables, ours, then ``extra``."""
    env = {
        name: value
        for name, value in calling.items()
        if (name in _KEPT or name.startswith("LC_")) and not name.startswith(_CONTROLLED)
    }
    env.update(extra)
    env.update(
        HOME=str(home),
        TMPDIR=str(tmp),
        TEMP=str(tmp),
        TMP=str(tmp),
        PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
    )
    return env


def check_extra_environment(extra: Mapping[str, Any]) -> dict[str, str]:
    """Validate the caller's extra variables; the sandbox alone sets PYTEST_* and PYTHON*."""
    checked = {}
    for name, value in extra.items():
        if not isinstance(name, str) or not name or "=" in name or "\0" in name:
            msg = f"'env' names must be non-empty strings without '=' (got {name!r})"
            raise SandboxError(msg)
        if not isinstance(value, str) or "\0" in value:
            msg = f"'env' value of {name!r} must be a string without NUL (got {value!r})"
            raise SandboxError(msg)
        if name.startswith(_CONTROLLED) or name in ("HOME", "TMPDIR", "TEMP", "TMP"):
            msg = (
                f"'env' must not set {name!r}: the sandbox controls PYTEST_*, PYTHON*,"
                " HOME and the temporary folder"
            )
            raise SandboxError(msg)
        checked[name] = value
    return checked
