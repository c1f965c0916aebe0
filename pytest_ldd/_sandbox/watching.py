"""The judge's watch on its own side: what the tests change there, which the subject never sees.

With ``isolation="process"`` the judge imported its own ``os``, ``sys``, ``time`` and
installed libraries, and the subject imported its own.  A test that patches the
judge's copy (``monkeypatch.setattr(sys, "platform", ...)``, ``mock.patch``,
freezegun's ``time.time = fake``) changes nothing workspace code reads, where one
process would change what both read.  Such a change is noted for the running test,
never refused: a test that passes with it keeps its pass, and one that fails met a
limit of the isolation (the isolation guard of :mod:`proxies` reads the notes).

:func:`watch_patches` wraps ``MonkeyPatch`` and ``mock.patch``; the judge's
standard-library modules become watched modules, whose assignments are noted unless
pytest, pluggy, the standard library or the sandbox made them (:func:`watch_new_modules`
takes in those loaded since its last call); :func:`note_judge_side` and
:func:`note_local` take the notes of the connection and of workspace modules.

Like :mod:`proxies`, this file imports only the standard library; the judge loads it
from a file, before :mod:`proxies`, whose modules and stand-ins it tells from the
judge's own objects only through the predicate it is handed (``workspace_like``).
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Callable
from typing import Any

__all__ = ["note_judge_side", "note_local", "watch_new_modules", "watch_patches"]

# Names noted per test, as many as the connection keeps limits.
_NOTES_PER_TEST = 1000
# What the subject takes from the judge before each message: patching it is no limit.
_SYNCED = frozenset(("sys.argv",))


def _judge_side(obj: Any, suite: str, workspace_like: Callable[[Any], bool]) -> str | None:
    """``module`` or ``module.Class`` when ``obj`` is one of the judge's own, else None.

    A module or class the judge imported (``os``, ``sys``, ``platform``, an installed
    library's) and not a file of the hidden tests: patching it changes the judge's
    copy only, which workspace code in the subject never sees.
    """
    if workspace_like(obj):
        return None
    if isinstance(obj, types.ModuleType):
        module: Any = obj
        name = module.__name__
    elif isinstance(obj, type):
        module = sys.modules.get(getattr(obj, "__module__", None) or "")
        name = f"{obj.__module__}.{obj.__qualname__}"
        if module is None:
            return None
    else:
        return _held_by_stdlib(obj)
    origin = getattr(module, "__file__", None)
    if isinstance(origin, str) and os.path.realpath(origin).startswith(suite):
        return None
    return str(name)


def _held_by_stdlib(obj: Any) -> str | None:
    """``module.name`` when a loaded standard-library module holds ``obj``.

    ``sys.implementation``: an object of the judge, though neither module nor class.
    """
    names: frozenset[str] = getattr(sys, "stdlib_module_names", frozenset())
    for module_name in sorted(names & sys.modules.keys()):
        module = sys.modules.get(module_name)
        if not isinstance(module, types.ModuleType):
            continue
        for attribute, value in list(vars(module).items()):
            if value is obj:
                return f"{module_name}.{attribute}"
    return None


def watch_patches(pytest: Any, root: str, workspace_like: Callable[[Any], bool]) -> list[str]:
    """Note each ``monkeypatch``/``mock.patch`` of a judge-side module or class.

    ``root``: the hidden tests' folder, ending in a separator.  Returns the list the
    notes go to (``module.name``), which the isolation guard reads and clears per
    test: a test that failed after patching the judge's copy of something
    (``monkeypatch.setattr(sys, "version_info", ...)``) met a limit of the
    isolation, since the workspace's code reads the subject's own.
    ``workspace_like`` tells a workspace module or stand-in, whose patches cross.
    """
    patched: list[str] = []

    def note(obj: Any, attribute: Any) -> None:
        where = _judge_side(obj, root, workspace_like)
        name = f"{where}.{attribute}"
        if where is not None and name not in _SYNCED and len(patched) < _NOTES_PER_TEST:
            patched.append(name)

    def note_item(mapping: Any, key: Any) -> None:
        if mapping is sys.modules and len(patched) < _NOTES_PER_TEST:
            patched.append(f"sys.modules[{key!r}]")

    def watched(method: Callable[..., Any], log: str, noted: Callable[[Any, Any], None]) -> Any:
        """``method``, noting what it adds to the MonkeyPatch's undo list ``log``."""

        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            before = len(getattr(self, log))
            result = method(self, *args, **kwargs)
            for target, name, _ in getattr(self, log)[before:]:
                noted(target, name)
            return result

        return call

    monkeypatch = pytest.MonkeyPatch
    sample = monkeypatch()
    for log, methods, noted in (
        ("_setattr", ("setattr", "delattr"), note),
        ("_setitem", ("setitem", "delitem"), note_item),
    ):
        if isinstance(getattr(sample, log, None), list):
            for name in methods:
                setattr(monkeypatch, name, watched(getattr(monkeypatch, name), log, noted))
    import unittest.mock

    enter = unittest.mock._patch.__enter__

    def entered(self: Any) -> Any:
        result = enter(self)
        note(getattr(self, "target", None), getattr(self, "attribute", "?"))
        return result

    unittest.mock._patch.__enter__ = entered  # type: ignore[method-assign]
    dict_patcher: Any = unittest.mock._patch_dict
    patch_dict = dict_patcher._patch_dict

    def patched_dict(self: Any) -> None:
        patch_dict(self)
        if self.in_dict is sys.modules and len(patched) < _NOTES_PER_TEST:
            patched.append("sys.modules (mock.patch.dict)")

    dict_patcher._patch_dict = patched_dict
    _watch_module_assignments(patched)
    return patched


class _WatchedModule(types.ModuleType):
    """A standard-library module of the judge whose attribute assignments are noted.

    ``time.time = fake`` (freezegun, pyfakefs, a test's own ``try``/``finally``) changes
    the judge's module only.  Assignments made by pytest, pluggy, the standard library
    itself (``warnings.catch_warnings``) and this sandbox are the judge's own business.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        _note_assignment(self, name)
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        _note_assignment(self, name)
        super().__delattr__(name)


# Named as the type it stands for wherever a test or a message shows it.
_WatchedModule.__name__ = _WatchedModule.__qualname__ = "module"
_WatchedModule.__module__ = "builtins"


# Where _WatchedModule's notes go (the isolation guard's list), and, per code file,
# whether its assignments are the judge's own business (see _judges_own).
_ASSIGNMENTS: list[list[str]] = []
_JUDGES_OWN: dict[str, bool] = {}
_JUDGE_FOLDERS: list[tuple[str, ...]] = []
_WATCHED: set[int] = set()


def _note_assignment(module: types.ModuleType, name: str) -> None:
    if not _ASSIGNMENTS or len(_ASSIGNMENTS[0]) >= _NOTES_PER_TEST:
        return
    if id(module) not in _WATCHED:  # made as type(os)(name): not a watched module
        return
    caller = sys._getframe(2).f_code.co_filename
    own = _JUDGES_OWN.get(caller)
    if own is None:
        own = _JUDGES_OWN[caller] = _judges_own(caller)
    if not own:
        note_judge_side(f"{module.__name__}.{name}")


def note_judge_side(name: str) -> None:
    """Note, for the running test, that it changed ``name`` on the judge's side only."""
    if _ASSIGNMENTS and len(_ASSIGNMENTS[0]) < _NOTES_PER_TEST:
        _ASSIGNMENTS[0].append(name)


def note_local(module: types.ModuleType, name: str) -> None:
    """A test set ``__spec__`` (or its kin) of a workspace module: the judge's copy only."""
    try:
        imported = object.__getattribute__(module, "_ldd_imported")
    except AttributeError:
        return  # the import system setting up the module
    if imported:
        note_judge_side(f"copy of the workspace's {module.__name__}.{name}")


def _judges_own(filename: str) -> bool:
    """Whether code of ``filename`` is pytest's, pluggy's, this sandbox's or the stdlib's.

    Installed libraries (freezegun) may live inside the standard library's folder
    (``site-packages``): they are not the standard library.
    """
    if not _JUDGE_FOLDERS:
        return True
    ours, installed, stdlib = _JUDGE_FOLDERS
    return filename.startswith(ours) or (
        filename.startswith(stdlib) and not filename.startswith(installed)
    )


def _judge_folders() -> list[tuple[str, ...]]:
    import sysconfig

    import _pytest
    import pluggy

    def folders(*paths: str) -> tuple[str, ...]:
        # As code objects name their files, and as the links resolve.
        named = {os.path.join(os.path.abspath(path), "") for path in paths}
        return tuple(named | {os.path.join(os.path.realpath(path), "") for path in paths})

    paths = sysconfig.get_paths()
    ours = (_pytest.__file__, pluggy.__file__, os.path.abspath(__file__))
    return [
        folders(*(os.path.dirname(path) for path in ours)),
        folders(paths["purelib"], paths["platlib"]),
        folders(paths["stdlib"], paths["platstdlib"]),
    ]


def _watch_module_assignments(patched: list[str]) -> None:
    """Note, in ``patched``, assignments to the judge's standard-library modules."""
    _ASSIGNMENTS[:] = [patched]
    _JUDGE_FOLDERS[:] = _judge_folders()
    watch_new_modules()


def watch_new_modules() -> None:
    """Watch the standard-library modules loaded since the last call (cheap per test).

    Not ``sys``: the import system makes every new module as ``type(sys)(name)``.
    Not a module of that name from another folder (the hidden tests' ``types.py``).
    """
    names: frozenset[str] = getattr(sys, "stdlib_module_names", frozenset())
    for name in (names & sys.modules.keys()) - {"sys"}:
        module = sys.modules.get(name)
        if type(module) is not types.ModuleType:
            continue
        origin = getattr(module, "__file__", None)
        if origin is None or _judges_own(origin):
            module.__class__ = _WatchedModule
            _WATCHED.add(id(module))
