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

__all__ = ["BACKENDS", "check_project_key", "location_problem", "masked", "open_store"]

#: Backends by URL scheme: ``"module:attribute"`` of a class with a ``from_url``
#: constructor (see :func:`open_store`).  The module is imported only when used.
BACKENDS: Final[Mapping[str, str]] = {
    "file": "pytest_ldd.store.files:TraceStore",
    "postgresql": "pytest_ldd.store.postgres:PostgresStore",
    "postgres": "pytest_ldd.store.postgres:PostgresStore",
}

_SCHEME: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")

# -- what a location that is no folder looks like ---------------------------------------
#: A word and a colon at the start, as a URL's scheme (``postgresql:/db``) or a
#: connection string's ``user:password@`` begins; a drive letter (``C:\\``) is a path.
_SCHEME_LIKE: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
#: Variables a CI or a shell did not substitute: ``${{ x }}``, ``${X}``, ``$X``, ``%X%``.
_VARIABLE: Final = re.compile(
    r"\$\{\{.*?\}\}|\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|%[A-Za-z_][A-Za-z0-9_]*%"
)
#: ``host=db dbname=ldd``: libpq's key=value connection string.
_KEY_VALUE: Final = re.compile(r"\s*[A-Za-z_]+\s*=")
#: ``user@host:5432``: a connection string's user, host and port.
_USER_HOST_PORT: Final = re.compile(r"[^/\s]*@[^/\s]*:[0-9]+(/|$)")

# -- secrets -----------------------------------------------------------------------------
#: A URL's ``user:password@`` (after ``scheme://``, or at the start of a word).
_USERINFO: Final = re.compile(r"(://|^|(?<=[\s'\"(=]))([^\s/@:'\"]*):[^\s/@'\"]*@(?=[^\s/@])")
#: ``password=value`` in a query string or a key=value connection string (any key that
#: ends in ``password``, ``PGPASSWORD`` and ``sslpassword`` included), quoted or not.
_PASSWORD_VALUE: Final = re.compile(
    r"(?i)\b(\w*password)\s*=\s*('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^\s&#;'\"]+)"
)
#: Environment variables whose values are passwords (libpq reads ``PGPASSWORD``).
_PASSWORD_VARIABLES: Final = ("PGPASSWORD",)
#: Shorter values are not searched for in text: "ab" would mask every word holding it.
_MIN_SECRET: Final = 4


def check_project_key(key: object, *, where: str = "[tool.ldd] project") -> str:
    """``key`` if it is a valid project key, else an error naming ``where``.

    A key is printable (``str.isprintable``: no control character, DEL, C1 control,
    bidirectional override or isolate, zero-width or line separator), at most 200
    characters, without surrounding spaces: it is shown in every message.
    """
    if (
        not isinstance(key, str)
        or not key
        or len(key) > 200
        or key != key.strip()
        or not key.isprintable()
    ):
        msg = (
            f"{where} must be a non-empty name of at most 200 printable characters "
            f"without surrounding spaces (got {key!r})"
        )
        raise InvalidSpecError(msg)
    return key


def masked(text: str) -> str:
    """``text`` with every secret it may hold replaced by ``***``.

    The one masking function of every output path (messages, warnings, reprs):
    a URL's password (``user:***@``, also without a scheme), ``password=`` values in a
    query string or a key=value connection string, and the values of the password
    variables (``PGPASSWORD``) wherever they appear, when they are at least 4
    characters long.
    """
    text = _USERINFO.sub(lambda m: f"{m.group(1)}{m.group(2)}:***@", text)
    text = _PASSWORD_VALUE.sub(lambda m: f"{m.group(1)}=***", text)
    for variable in _PASSWORD_VARIABLES:
        secret = os.environ.get(variable, "")
        if len(secret) >= _MIN_SECRET and secret in text:
            text = text.replace(secret, "***")
    return text


def location_problem(text: str) -> str | None:
    """Why ``text`` can be no folder path (None: it can be one).

    Anything that looks like a URL or a connection string, and is not a URL of a
    known scheme, is refused rather than taken for a folder: a typo in a CI secret
    must not record into a folder named after the database (its password included).
    """
    if not text.strip():
        return "is empty"
    if "://" in text:
        head = text.partition("://")[0]
        if _SCHEME.fullmatch(f"{head}://") is None:
            return f"has a malformed scheme {head!r} before '://'"
        return None
    if _VARIABLE.search(text):
        return "holds an unexpanded variable (the CI or the shell did not substitute it)"
    if _SCHEME_LIKE.match(text) and not re.match(r"[A-Za-z]:[\\/]", text):
        return "looks like a URL or a connection string, but a URL's scheme needs '://'"
    if _KEY_VALUE.match(text):
        return "looks like a key=value connection string; give a postgresql:// URL"
    if _USER_HOST_PORT.match(text):
        return "looks like a connection string (user@host:port); give a postgresql:// URL"
    return None


def open_store(
    project: str | os.PathLike[str],
    location: str | os.PathLike[str] | None = None,
    *,
    key: str | None = None,
) -> Store:
    """The store at ``location`` for the project folder ``project``.

    ``location`` is a URL (a str) whose scheme names a backend in :data:`BACKENDS`,
    or a folder path (taken from ``project`` when relative), or None for the
    project's ``.ldd/`` folder.  A str that looks like a URL or a connection string
    but is not a URL of a known scheme is an :class:`InvalidSpecError`
    (:func:`location_problem`); a path object is always a folder.  ``key`` is the
    project's key (``[tool.ldd] project``), which a store shared by several projects
    requires.
    """
    expected = f"expected one of {', '.join(f'{s}://' for s in BACKENDS)}, or a folder path"
    if isinstance(location, str):
        problem = location_problem(location)
        if problem is not None:
            msg = f"store {masked(location)!r} is not a store location: it {problem} ({expected})"
            raise InvalidSpecError(msg)
    text = None if location is None else os.fspath(location)
    match = _SCHEME.match(location) if isinstance(location, str) else None
    if text is None or match is None:
        folder: Store = _backend("file")(project, ldd_dir=None if text is None else Path(text))
        return folder
    scheme = match.group(1).lower()
    if scheme not in BACKENDS:
        msg = f"store {masked(text)!r} has an unknown scheme {scheme!r} ({expected})"
        raise InvalidSpecError(msg)
    store: Store = _backend(scheme).from_url(text, project=Path(project), key=key)
    return store


def _backend(scheme: str) -> Any:
    # Imported by name, and only when used: a backend's driver may be an extra.
    module, _, name = BACKENDS[scheme].partition(":")
    return getattr(importlib.import_module(module), name)
