"""What the file store asks of the disk: regular files only, failures named, whole files.

A store folder is written by people and other tools too: a path that is a FIFO
would hang a reader, a link to ``/dev/null`` swallow every line; :func:`regular`
refuses anything but a regular file, saying what it is.  An operating-system failure
(a full disk, a permission) becomes a :class:`StoreCorruptError` naming the file and
what was being done (:func:`os_error`).  A file replaced whole (``metrics.json``, a
report) is written beside itself and renamed over the old one
(:func:`replace_file`), so no reader ever sees half of it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Final

from pytest_ldd.errors import StoreCorruptError

__all__ = [
    "ensure_folder",
    "fsync_folder",
    "new_file_mode",
    "not_regular",
    "os_error",
    "os_errors",
    "regular",
    "replace_file",
    "write_all",
]

_KINDS: Final = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def os_error(err: OSError, path: str | os.PathLike[str], action: str) -> StoreCorruptError:
    """``cannot <action> <path>: <reason>`` as a store error."""
    msg = f"cannot {action} {path}: {err.strerror or err}"
    return StoreCorruptError(msg, path=str(path))


@contextmanager
def os_errors(path: str | os.PathLike[str], action: str) -> Iterator[None]:
    """An operating-system failure (disk full, permissions) as a clear store error."""
    try:
        yield
    except OSError as err:
        raise os_error(err, path, action) from err


def not_regular(path: Path, mode: int) -> StoreCorruptError:
    """The error for a store path that is not a regular file (``mode`` says what it is)."""
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    shown = f"{path} (a link to {os.path.realpath(path)})" if path.is_symlink() else str(path)
    msg = f"{shown} must be a regular file, but it is {kind}; the store cannot use it"
    return StoreCorruptError(msg, path=str(path))


def regular(path: str | os.PathLike[str]) -> os.stat_result | None:
    """``path``'s stat if it is a regular file, None if it does not exist.

    Anything else (a FIFO would hang a reader, a link to /dev/null swallow every
    line, a symlink loop) is a :class:`StoreCorruptError` saying what it is.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            msg = f"{path} is a symbolic link to {os.readlink(path)!r}, which does not exist"
            raise StoreCorruptError(msg, path=str(path)) from None
        return None
    except OSError as err:
        raise os_error(err, path, "read") from err
    if not stat.S_ISREG(info.st_mode):
        raise not_regular(Path(path), info.st_mode)
    return info


def ensure_folder(folder: Path) -> None:
    """Create the store folder (and its parents) or say why it cannot be."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        where = err.filename if isinstance(err.filename, str) else folder
        msg = f"cannot create the store folder {folder} ({where}: {err.strerror or err})"
        raise StoreCorruptError(msg, path=str(folder)) from err
    if not folder.is_dir():
        msg = f"the store folder {folder} is not a folder"
        raise StoreCorruptError(msg, path=str(folder))


def new_file_mode() -> int:
    """The mode an ordinary new file gets here (0o666 less the umask).

    ``tempfile.mkstemp`` creates files readable by their owner only; a file that
    replaces a store or report file must be as readable as one written plainly.
    """
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (``os.write`` may write only a part)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (folders cannot be opened on Windows)."""
    if os.name == "nt":  # pragma: no cover
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_file(target: Path, data: bytes, *, durable: bool = False) -> None:
    """Replace ``target`` whole: a temp file beside it, fsync-ed, renamed over it.

    Readers see the old file or the new one, never a part.  With ``durable`` the
    rename itself is made durable too (the folder is fsync-ed).  Raises ``OSError``;
    the temp file is removed whatever fails.
    """
    import tempfile  # only writers pay for it (``ldd metric status`` never writes)

    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.chmod(tmp, new_file_mode())
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        fsync_folder(target.parent)
