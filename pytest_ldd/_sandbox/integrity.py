"""Import-time integrity of the hidden tests: what runs is what the sandbox staged.

The process that runs pytest on the hidden tests (the in-process runner, or the judge
of ``isolation="process"``) loads this file from the run's ``runner/`` folder and calls
:func:`guard` before pytest imports anything.  From then on, every module file under
the staged ``suite/`` folder -- test files, ``conftest.py``, helpers, package
``__init__.py`` files -- is compiled from bytes read once, and only when those bytes
hash to what the sandbox staged.  A file that changed after staging, one swapped in
and restored later, and a module nobody staged (a planted ``helpers.py``, a bare
``.pyc``, an extension module named like a helper) are refused before they run, and
reported as tampering: the check and the compilation see the very same bytes, so
there is no window between them.  Bytecode is never read from the run's folder
(pytest's assertion-rewrite cache included), and ``refuse`` names folders no module
may come from at all (in the judge: everything the workspace's process can write).

Confinement (:mod:`confinement`) makes these attacks impossible where the kernel has
Landlock; this guard detects them where it does not.  In process, code of the
workspace shares the interpreter and can undo the guard before it acts: there, only
confinement closes them (docs/security.md says so).

Like the runner, this file imports only the standard library (and pytest's
assertion rewriter, once pytest is imported).
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import stat
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from importlib import machinery
from typing import Any

__all__ = ["Guard", "guard", "guard_rewrite", "read_regular"]

_BYTECODE = (".pyc", ".pyo")
_READ = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
# The largest module file a staged suite holds is far below this.
_MAX_BYTES = 64 * 1024 * 1024


def _prefixes(folder: str) -> tuple[str, ...]:
    """``folder`` as given and resolved, each ending with a separator."""
    return tuple({os.path.abspath(folder) + os.sep, os.path.realpath(folder) + os.sep})


class Guard:
    """Decides, for one module file path, what may be read of it.

    ``suite`` is the staged hidden tests' folder, ``manifest`` maps each staged module
    file (its path relative to ``suite``, with ``/``) to ``[size, sha256 hex]``;
    ``run`` is the run's own folder (no bytecode is read under it); ``refuse`` lists
    folders no module may be loaded from; ``report(path, detail)`` is told of every
    integrity violation before the import fails.  While the suite is still being
    staged, ``more()`` returns the next line of the sandbox's announcements (``{"manifest":
    {...}, "more": bool}``, or None when none comes): a file not announced yet is
    waited for, until the last line.
    """

    def __init__(
        self,
        suite: str,
        manifest: Mapping[str, Sequence[Any]],
        report: Callable[[str, str], None],
        *,
        run: str,
        refuse: Sequence[str] = (),
        more: Callable[[], Mapping[str, Any] | None] | None = None,
    ) -> None:
        self.suite = _prefixes(suite)
        self.run = _prefixes(run)
        self.refuse = tuple(p for folder in refuse for p in _prefixes(folder))
        self.manifest = _entries(manifest)
        self.report = report
        self._more = more
        self._waiting = threading.Lock()  # imports on several threads read one stream

    def staged(self, rel: str) -> tuple[int, str] | None:
        """What ``rel`` must hash to; None: the sandbox never staged it."""
        entry = self.manifest.get(rel)
        while entry is None and self._more is not None:
            with self._waiting:
                entry = self.manifest.get(rel)
                if entry is not None or self._more is None:
                    break
                line = self._more()
                if line is None or line.get("more") is not True:
                    self._more = None  # the last line, or the stream broke off
                if line is not None:
                    self.manifest.update(_entries(line["manifest"]))
        return self.manifest.get(rel)

    def relative(self, path: str) -> str | None:
        """``path`` relative to the suite folder, or None when it lies elsewhere."""
        full = os.path.abspath(path)
        for prefix in self.suite:
            if full.startswith(prefix):
                return full[len(prefix) :].replace(os.sep, "/")
        return None

    def refused(self, path: str) -> bool:
        full = os.path.abspath(path)
        return any(full.startswith(prefix) for prefix in self.refuse)

    def in_run(self, path: str) -> bool:
        full = os.path.abspath(path)
        return any(full.startswith(prefix) for prefix in self.run)

    def violation(self, rel: str, detail: str) -> ImportError:
        self.report(rel, detail)
        msg = f"hidden module {rel!r} refused: {detail}"
        return ImportError(msg, path=rel)

    def source(self, path: str) -> bytes | None:
        """The bytes to compile for a module file; None where the guard has no say.

        Under the suite folder: the file's bytes, read once, when they are the staged
        ones; anything else raises :class:`ImportError` (after reporting it).
        """
        if self.refused(path):
            msg = f"the sandbox never imports {path!r}: the workspace's process can write there"
            raise ImportError(msg, path=path)
        rel = self.relative(path)
        if rel is None:
            return None
        staged = self.staged(rel)
        if staged is None:
            raise self.violation(rel, "a module file the sandbox never staged")
        size, digest = staged
        data = read_regular(path, size)
        if data is None:
            raise self.violation(rel, "not the regular file the sandbox staged")
        if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
            raise self.violation(rel, "its bytes differ from the ones the sandbox staged")
        return data


def _entries(manifest: Mapping[str, Sequence[Any]]) -> dict[str, tuple[int, str]]:
    return {str(k): (int(v[0]), str(v[1])) for k, v in manifest.items()}


def read_regular(path: str, size: int) -> bytes | None:
    """At most ``size + 1`` bytes of a regular file, never through a link or a FIFO."""
    try:
        fd = os.open(path, _READ)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        left = min(size, _MAX_BYTES) + 1
        while left > 0:
            data = os.read(fd, left)
            if not data:
                break
            chunks.append(data)
            left -= len(data)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def guard(
    suite: str,
    manifest: Mapping[str, Sequence[Any]],
    report: Callable[[str, str], None],
    *,
    run: str,
    refuse: Sequence[str] = (),
    more: Callable[[], Mapping[str, Any] | None] | None = None,
) -> Guard:
    """Check every module file loaded from now on; return the :class:`Guard`."""
    checker = Guard(suite, manifest, report, run=run, refuse=refuse, more=more)
    for loader in (machinery.SourceFileLoader, machinery.SourcelessFileLoader):
        _wrap_get_data(loader, checker)
    _wrap_extensions(checker)
    return checker


def _wrap_get_data(loader: type, checker: Guard) -> None:
    original = loader.get_data  # type: ignore[attr-defined]

    def get_data(self: Any, path: str) -> bytes:
        if os.path.abspath(path) == os.path.abspath(str(getattr(self, "path", ""))):
            data = checker.source(path)  # the module's own file
            if data is not None:
                return data
        elif path.endswith(_BYTECODE) and checker.in_run(path):
            # A cache beside a source file: refused, so the source is compiled instead.
            msg = f"bytecode in the sandbox is never read: {path}"
            raise OSError(msg)
        return original(self, path)  # type: ignore[no-any-return]

    loader.get_data = get_data  # type: ignore[attr-defined]


def _wrap_extensions(checker: Guard) -> None:
    loader = machinery.ExtensionFileLoader
    original = loader.create_module

    def create_module(self: Any, spec: Any) -> Any:
        # A staged extension module is hashed before it is loaded; its file could
        # change between the two, which only confinement rules out.
        checker.source(str(self.path))
        return original(self, spec)

    loader.create_module = create_module  # type: ignore[method-assign]


def guard_rewrite(rewrite: Any, checker: Guard) -> None:
    """Make pytest's assertion rewriter compile the checked bytes, never its cache.

    ``rewrite`` is ``_pytest.assertion.rewrite``.  Its ``_rewrite_test(fn, config)``
    reads the test file with ``fn.read_bytes()``; under the suite folder it is handed
    a path whose ``read_bytes`` returns the bytes the guard checked, so what pytest
    compiles is exactly what was verified (whatever else it computes from them: a
    stat in pytest 8, a source hash in pytest 9).  ``_read_pyc`` finds nothing.
    """
    original = rewrite._rewrite_test

    def _read_pyc(*args: Any, **kwargs: Any) -> None:
        return None

    def _rewrite_test(fn: Any, config: Any) -> Any:
        source = checker.source(str(fn))
        if source is None:
            return original(fn, config)
        return original(_Checked(fn, source), config)

    rewrite._read_pyc = _read_pyc
    rewrite._rewrite_test = _rewrite_test


class _Checked(type(pathlib.Path())):  # type: ignore[misc]
    """A path whose ``read_bytes`` returns bytes read and checked once, not the file's."""

    def __new__(cls, path: Any, source: bytes = b"") -> Any:
        self = super().__new__(cls, path)
        self._ldd_source = source
        return self

    def __init__(self, path: Any, source: bytes = b"") -> None:
        if sys.version_info >= (3, 12):  # pathlib's own __init__ takes the path there
            super().__init__(path)

    def with_segments(self, *segments: Any) -> pathlib.Path:
        # Paths derived from this one (its parent, a sibling) are ordinary paths.
        return pathlib.Path(*segments)

    def read_bytes(self) -> bytes:
        return self._ldd_source  # type: ignore[no-any-return]
