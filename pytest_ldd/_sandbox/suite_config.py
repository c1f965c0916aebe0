"""The hidden suite's own pytest settings that the sandbox's configuration takes over.

pytest runs the hidden tests with the sandbox's own configuration file (``-c``), so
that no file of the workspace configures the run.  The hidden folder is the grader's,
though, and where it holds the suite's configuration (a library's ``pyproject.toml``
beside its ``tests/``), its authors' settings decide outcomes: ``filterwarnings =
["error"]`` makes a warning fail its test, ``xfail_strict`` an unexpected pass.  Those
settings are copied into the sandbox's file: the ones that change what a test's
outcome is, and the ones that say which tests there are -- ``python_files`` and
``norecursedirs`` name the files that are tests, ``python_classes`` and
``python_functions`` the tests in them, a ``-m`` of ``addopts`` the tests left out --
by which the staging plants and counts as pytest collects (a ``tests/mypy_test_cases``
folder the suite keeps out is its data; mako's ``*Test`` classes are its tests).  What
would not collect the canaries and twins (unmarked functions named ``test_*``) is not
taken, nor anything that changes how the run goes (``-x`` would end it at the first
twin).  :func:`suite_plugins` names the plugins the file says the tests need.

Only the configuration file pytest itself would read for a run rooted in the hidden
folder counts: the first of ``pytest.toml`` and ``.pytest.toml`` (pytest 9's, with
``[pytest]``), ``pytest.ini``, ``.pytest.ini``, ``pyproject.toml`` (with
``[tool.pytest]`` or ``[tool.pytest.ini_options]``), ``tox.ini`` (with ``[pytest]``)
and ``setup.cfg`` (with ``[tool:pytest]``) at its top.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import iniconfig

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

__all__ = [
    "COLLECTION",
    "TAKEN_OVER",
    "Collection",
    "collection",
    "suite_configuration",
    "suite_ini",
    "suite_plugins",
    "suite_settings",
]

#: The settings taken over: each changes an outcome, none what is collected.
TAKEN_OVER: Final = (
    "filterwarnings",
    "xfail_strict",
    "markers",
    "usefixtures",
    "empty_parameter_set_mark",
    "disable_test_id_escaping_and_forfeit_all_rights_to_community_support",
    "log_level",  # what caplog and the captured log see (tqdm sets INFO)
)
#: What is collected: which files are test files, and which folders are never entered.
COLLECTION: Final = ("python_files", "norecursedirs", "python_classes", "python_functions")
#: pytest's defaults of :data:`COLLECTION`.
_DEFAULTS: Final[dict[str, tuple[str, ...]]] = {
    "python_files": ("test_*.py", "*_test.py"),
    "norecursedirs": (
        "*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}",
    ),
    "python_classes": ("Test",),
    "python_functions": ("test",),
}  # fmt: skip
#: A name the canaries and twins could be given: ``python_functions`` must collect it.
_CANARY_NAME: Final = "test_basic_values"
#: pytest-asyncio's, taken over where that plugin runs (an unknown key is a warning,
#: and an error under ``filterwarnings = ["error"]``).
_ASYNCIO: Final = ("asyncio_mode", "asyncio_default_fixture_loop_scope")
#: What ``addopts`` may carry over: strictness about markers, warning filters, and a
#: marker expression that keeps unmarked tests (click's ``-m 'not stress'``).
_STRICT_FLAGS: Final = frozenset({"--strict-markers", "--strict"})
_WARNING_FLAGS: Final = ("-W", "--pythonwarnings")
#: Where pytest looks, in its order, and the section each file's settings are in.
_FILES: Final = (
    ("pytest.toml", "[pytest]"),
    (".pytest.toml", "[pytest]"),
    ("pytest.ini", "pytest"),
    (".pytest.ini", "pytest"),
    ("pyproject.toml", None),
    ("tox.ini", "pytest"),
    ("setup.cfg", "tool:pytest"),
)


def suite_settings(hidden: Path, plugins: Sequence[str] = ()) -> dict[str, str]:
    """The settings of :data:`TAKEN_OVER` and :data:`COLLECTION` the hidden folder's
    configuration file sets.

    Values as an ini file holds them (lines of a list joined by newlines).  Its
    ``addopts`` contributes ``--strict-markers`` (``--strict`` too, its older name) and
    a ``-m`` expression that keeps unmarked tests to the sandbox's ``addopts``, and its
    ``-W`` filters to ``filterwarnings``, after the file's own, as pytest orders them.
    pytest-asyncio's settings count where one of ``plugins`` is it.  A file that cannot
    be read or parsed gives nothing (the defaults apply), as does a folder without one.
    """
    return _settings_of(_configuration(hidden), plugins)


def suite_configuration(
    hidden: Path, plugins: Sequence[str] = ()
) -> tuple[dict[str, str], tuple[str, ...]]:
    """The settings and the plugins to load -- ``plugins`` (the caller's), then those of
    :func:`suite_plugins` -- of one reading of the file (see :func:`suite_settings`)."""
    found = _configuration(hidden)
    named = (*plugins, *(p for p in _plugins_of(found) if p not in plugins))
    return _settings_of(found, named), named


def _settings_of(found: Mapping[str, Any] | None, plugins: Sequence[str]) -> dict[str, str]:
    if found is None:
        return {}
    keys: tuple[str, ...] = TAKEN_OVER + COLLECTION
    keys += _ASYNCIO if any("asyncio" in p for p in plugins) else ()
    settings = _taken_over(found, keys)
    if not _collects_canaries(settings):
        del settings["python_functions"]
    return settings


def suite_plugins(hidden: Path) -> tuple[str, ...]:
    """The plugins the hidden suite's configuration file says its tests need.

    ``-p NAME`` of its ``addopts`` (not ``-p no:...``), the ``pytest11`` entry points of
    the distributions its ``required_plugins`` names, and pytest-asyncio's where it sets
    ``asyncio_mode`` -- each as pytest would load it, and a distribution only where it
    is installed beside this one (its entry points are read here, where no folder of
    the workspace is on the path).  Plugin autoload stays off: these are named.
    """
    return _plugins_of(_configuration(hidden))


def _plugins_of(found: Mapping[str, Any] | None) -> tuple[str, ...]:
    if found is None:
        return ()
    options = _options(found.get("addopts", ""))
    named = dict.fromkeys(options.plugins if options is not None else [])
    required = found.get("required_plugins", "")
    wanted = required.split() if isinstance(required, str) else [str(r) for r in required]
    if any(key in found for key in _ASYNCIO) or (options and options.asyncio_mode):
        wanted.append("pytest-asyncio")
    for requirement in wanted:
        named.update(dict.fromkeys(_entry_points(requirement)))
    return tuple(named)


def _importable(name: str) -> bool:
    return all(part.isidentifier() for part in name.split("."))


def _entry_points(requirement: str) -> list[str]:
    """The modules of the ``pytest11`` entry points of an installed distribution."""
    from importlib import metadata

    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement.strip())
    if match is None:
        return []
    try:
        entries = metadata.distribution(match.group()).entry_points
    except (metadata.PackageNotFoundError, ValueError):
        return []
    return [
        entry.value for entry in entries if entry.group == "pytest11" and _importable(entry.value)
    ]


def _configuration(hidden: Path) -> dict[str, Any] | None:
    """The settings of the configuration file pytest would read for the hidden folder."""
    if not hidden.is_dir():
        return None
    for name, section in _FILES:
        path = hidden / name
        if path.is_file():
            found = _read(path, section)
            if found is not None:
                return found
    return None


@dataclass(frozen=True, slots=True)
class Collection:
    """Which files, classes and functions under the hidden folder are tests, and which
    of those the suite's ``-m`` leaves out."""

    python_files: tuple[str, ...] = _DEFAULTS["python_files"]
    norecursedirs: tuple[str, ...] = _DEFAULTS["norecursedirs"]
    python_classes: tuple[str, ...] = _DEFAULTS["python_classes"]
    python_functions: tuple[str, ...] = _DEFAULTS["python_functions"]
    #: ``-m`` of the suite's ``addopts``: a test whose marks it rejects is deselected.
    markexpr: str | None = None

    def selects(self, marks: frozenset[str]) -> bool:
        """Whether a test with these marks is selected by :attr:`markexpr`."""
        return self.markexpr is None or _matches(self.markexpr, marks)

    def is_test_file(self, path: Path) -> bool:
        """Whether ``path`` (a file) matches ``python_files``, as pytest matches it."""
        return any(_fnmatch_ex(pattern, path) for pattern in self.python_files)

    def enters(self, path: Path) -> bool:
        """Whether pytest looks into the folder ``path`` (``norecursedirs``, caches)."""
        if path.name == "__pycache__" or (path / "pyvenv.cfg").is_file():
            return False
        return not any(_fnmatch_ex(pattern, path) for pattern in self.norecursedirs)

    def is_test_class(self, name: str) -> bool:
        """Whether pytest collects a class of this name (``python_classes``)."""
        return _prefix_or_glob(name, self.python_classes)

    def is_test_function(self, name: str) -> bool:
        """Whether pytest collects a function of this name (``python_functions``)."""
        return _prefix_or_glob(name, self.python_functions)


def collection(settings: Mapping[str, str]) -> Collection:
    """The :class:`Collection` of settings from :func:`suite_settings`.

    ``python_functions`` that would not collect ``test_*`` functions is left out: the
    canaries and twins are so named.  :func:`suite_settings` leaves it out of the
    sandbox's file then too.
    """
    found: dict[str, Any] = {}
    for key in COLLECTION:
        patterns = _patterns(settings, key)
        if patterns is not None:
            found[key] = patterns
    if not _collects_canaries(settings):
        del found["python_functions"]
    options = _options(settings.get("addopts", ""))
    if options is not None and options.markexpr is not None:
        found["markexpr"] = options.markexpr
    return Collection(**found)


def _patterns(settings: Mapping[str, str], key: str) -> tuple[str, ...] | None:
    """A setting's patterns, as pytest splits them; None where not set or unreadable."""
    try:
        return tuple(shlex.split(settings[key])) if key in settings else None
    except ValueError:  # unbalanced quotes: pytest could not read it either
        return None


def _collects_canaries(settings: Mapping[str, str]) -> bool:
    """Whether ``python_functions``, where set, collects functions named ``test_*``."""
    functions = _patterns(settings, "python_functions")
    return functions is None or _prefix_or_glob(_CANARY_NAME, functions)


def _prefix_or_glob(name: str, patterns: Sequence[str]) -> bool:
    """pytest's match of a class or function name: a prefix, or a glob if it has one."""
    return any(
        name.startswith(pattern)
        or (any(c in pattern for c in "*?[") and fnmatch.fnmatch(name, pattern))
        for pattern in patterns
    )


def _fnmatch_ex(pattern: str, path: Path) -> bool:
    """pytest's match of a path against a pattern: its name, or with a ``/`` its path."""
    if os.sep not in pattern and "/" not in pattern:
        return fnmatch.fnmatch(path.name, pattern)
    name = str(path)
    if path.is_absolute() and not os.path.isabs(pattern):
        pattern = f"*{os.sep}{pattern}"
    return fnmatch.fnmatch(name, pattern.replace("/", os.sep))


def suite_ini(settings: Mapping[str, str]) -> str:
    """The sandbox's configuration file with ``settings`` (see :func:`suite_settings`)."""
    lines = ["[pytest]"]
    for key, value in settings.items():
        parts = [part.strip() for part in value.splitlines() if part.strip()]
        # Every line after the first is indented: a value never starts a key of its own.
        lines.append(f"{key} = " + "\n    ".join(parts) if parts else f"{key} =")
    return "\n".join(lines) + "\n"


def _read(path: Path, section: str | None) -> dict[str, Any] | None:
    """The file's pytest settings, or None where it holds none (pytest reads on)."""
    try:
        if section == "[pytest]":  # pytest 9's own TOML file: its settings, even if none
            with path.open("rb") as handle:
                table = tomllib.load(handle).get("pytest")
            return dict(table) if isinstance(table, dict) else {}
        if section is None:
            with path.open("rb") as handle:
                options = tomllib.load(handle).get("tool", {}).get("pytest", {})
            if not isinstance(options, dict):
                return None
            # pytest 9's [tool.pytest] with native TOML values, else [tool.pytest.ini_options]
            native = {key: value for key, value in options.items() if key != "ini_options"}
            table = native or options.get("ini_options")
            return dict(table) if isinstance(table, dict) else None
        parsed = iniconfig.IniConfig(str(path))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, iniconfig.ParseError):
        return None
    if section not in parsed:
        return {} if path.name in ("pytest.ini", ".pytest.ini") else None
    return dict(parsed[section].items())


def _taken_over(found: Mapping[str, Any], keys: Sequence[str]) -> dict[str, str]:
    settings = {key: _text(found[key]) for key in keys if key in found}
    options = _options(found.get("addopts", ""))
    if options is None:
        return settings
    if options.asyncio_mode is not None and "asyncio_mode" in keys:
        settings["asyncio_mode"] = options.asyncio_mode  # the command line's wins
    addopts = ["--strict-markers"] if options.strict else []
    if options.markexpr is not None and _selects_unmarked(options.markexpr):
        addopts += ["-m", options.markexpr]
    if addopts:
        settings["addopts"] = shlex.join(addopts)
    if options.filters:
        own = settings.get("filterwarnings", "")
        settings["filterwarnings"] = "\n".join(p for p in (own, *options.filters) if p)
    return settings


@dataclass(slots=True)
class _Addopts:
    """What the sandbox takes of the suite's ``addopts``."""

    strict: bool = False  # --strict-markers (or --strict, its older name)
    filters: list[str] = field(default_factory=list)  # -W FILTER, in order
    markexpr: str | None = None  # -m EXPR, the last one given, as pytest takes it
    plugins: list[str] = field(default_factory=list)  # -p NAME, never -p no:NAME
    asyncio_mode: str | None = None  # --asyncio-mode MODE (pytest-asyncio's)


def _options(addopts: Any) -> _Addopts | None:
    """The parts of ``addopts`` the sandbox takes; None where pytest could not split it."""
    try:
        words = shlex.split(addopts) if isinstance(addopts, str) else [str(w) for w in addopts]
    except ValueError:
        return None
    found = _Addopts(strict=any(word in _STRICT_FLAGS for word in words))
    for index, word in enumerate(words):
        following = words[index + 1] if index + 1 < len(words) else None
        # argparse reads -W=error as -W error
        flag, attached = word[:2], word[2:].removeprefix("=")
        if word in _WARNING_FLAGS and following is not None:
            found.filters.append(following)
        elif word.startswith("--pythonwarnings="):
            found.filters.append(word.partition("=")[2])
        elif flag == "-W" and attached:
            found.filters.append(attached)
        elif flag == "-m":
            found.markexpr = attached or following or found.markexpr
        elif flag == "-p" and (attached or following):
            name = attached or following or ""
            if not name.startswith("no:") and _importable(name):
                found.plugins.append(name)
        elif word.startswith("--asyncio-mode="):
            found.asyncio_mode = word.partition("=")[2]
        elif word == "--asyncio-mode" and following is not None:
            found.asyncio_mode = following
    return found


def _selects_unmarked(markexpr: str) -> bool:
    """Whether ``-m markexpr`` keeps a test without marks (``not slow``, never ``smoke``).

    The canaries carry no marks: an expression that would deselect them is not taken,
    nor one pytest cannot read (it would end the run).
    """
    return _matches(markexpr, frozenset(), unreadable=False)


def _matches(markexpr: str, marks: frozenset[str], *, unreadable: bool = True) -> bool:
    """pytest's own reading of a marker expression against a test's mark names."""

    def matcher(name: str, /, **kwargs: Any) -> bool:
        return name in marks

    try:
        return bool(_compiled(markexpr).evaluate(matcher))
    except Exception:  # a malformed expression, or a pytest that reads them otherwise
        return unreadable


@functools.lru_cache(maxsize=16)
def _compiled(markexpr: str) -> Any:
    """The expression compiled once: the staging asks it about every test of a suite."""
    from _pytest.mark.expression import Expression

    return Expression.compile(markexpr)


def _text(value: Any) -> str:
    """An ini file's text for a value of a TOML or ini file."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Sequence) and not isinstance(value, str):
        return "\n".join(str(item) for item in value)
    return str(value)
