"""Where a store is: a backend chosen by a URL's scheme, or the project's folder.

Backends live in their own modules and are named in :data:`BACKENDS`; adding one
means adding its module and one line there.  :func:`open_store` picks the backend
from a URL's scheme (``files`` is the default: a folder path, or no location at all,
is the project's ``.ldd/`` folder).  A URL is shown with its password masked
(:func:`masked`); a store shared by several projects tells them apart by a project
key (:func:`check_project_key`).
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pytest_ldd.errors import InvalidSpecError

if TYPE_CHECKING:
    from pytest_ldd.store.protocol import Store

__all__ = ["BACKENDS", "check_project_key", "masked", "open_store"]

#: Backends by URL scheme: ``"module:attribute"`` of a class with a ``from_url``
#: constructor (see :func:`open_store`).  The module is imported only when used.
BACKENDS: Final[Mapping[str, str]] = {
    "file": "pytest_ldd.store.files:TraceStore",
    "postgresql": "pytest_ldd.store.postgres:PostgresStore",
    "postgres": "pytest_ldd.store.postgres:PostgresStore",
}

_SCHEME: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_PASSWORD: Final = re.compile(r"(?<=://)([^/@:]*):[^/@]*@")


def check_project_key(key: object, *, where: str = "[tool.ldd] project") -> str:
    """``key`` if it is a valid project key, else an error naming ``where``."""
    if (
        not isinstance(key, str)
        or not key
        or len(key) > 200
        or key != key.strip()
        or any(ord(ch) < 32 for ch in key)
    ):
        msg = (
            f"{where} must be a non-empty name of at most 200 printable characters "
            f"without surrounding spaces (got {key!r})"
        )
        raise InvalidSpecError(msg)
    return key


def masked(location: str) -> str:
    """``location`` with the password of a URL replaced by ``***``."""
    return _PASSWORD.sub(lambda m: f"{m.group(1)}:***@", location)


def open_store(
    project: str | os.PathLike[str],
    location: str | os.PathLike[str] | None = None,
    *,
    key: str | None = None,
) -> Store:
    """The store at ``location`` for the project folder ``project``.

    ``location`` is a URL (a str) whose scheme names a backend in :data:`BACKENDS`,
    or a folder path (taken from ``project`` when relative), or None for the
    project's ``.ldd/`` folder.  ``key`` is the project's key (``[tool.ldd]
    project``), which a store shared by several projects requires.
    """
    text = None if location is None else os.fspath(location)
    match = _SCHEME.match(location) if isinstance(location, str) else None
    if text is None or match is None:
        folder: Store = _backend("file")(project, ldd_dir=None if text is None else Path(text))
        return folder
    scheme = match.group(1).lower()
    if scheme not in BACKENDS:
        msg = (
            f"store {masked(text)!r} has an unknown scheme {scheme!r} "
            f"(expected one of {', '.join(f'{s}://' for s in BACKENDS)}, or a folder path)"
        )
        raise InvalidSpecError(msg)
    store: Store = _backend(scheme).from_url(text, project=Path(project), key=key)
    return store


def _backend(scheme: str) -> Any:
    # Imported by name, and only when used: a backend's driver may be an extra.
    module, _, name = BACKENDS[scheme].partition(":")
    return getattr(importlib.import_module(module), name)
