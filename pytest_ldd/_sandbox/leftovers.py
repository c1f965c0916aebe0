"""What a run leaves behind, handled as hostile: the staged files' check and removal.

After the child ran, anything under the sandbox folder may be a trap: a symlink to a
file outside, a FIFO that blocks whoever opens it, a link to ``/dev/zero``, a sparse
file of the largest size allowed, a folder nested thousands deep, a folder of mode
000.  Everything here therefore

- decides by ``lstat`` (never ``stat``) and opens with ``O_NOFOLLOW | O_NONBLOCK``,
  reading a file only when ``fstat`` says it is regular and only as many bytes as the
  file the sandbox staged there had;
- works relative to directory descriptors, iteratively, so depth and path length do
  not matter;
- changes permissions only of what is a directory inside the run's folder, through a
  descriptor of that very directory (never a path a link could redirect);
- stops at a deadline and at a bound on the entries it looks at.

:func:`snapshot` records the files the sandbox staged (``suite/``, ``runner/``);
:func:`compare` finds what the run changed there, where any new entry counts (a
planted ``__pycache__/*.pyc`` beside the hidden tests is read by pytest's assertion
rewriter even under ``-B``).  :func:`remove_tree` deletes the run's folder and returns
what it could not remove; it never raises.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["REMOVAL_LIMIT_S", "Snapshot", "compare", "remove_tree", "snapshot"]

_READ = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
_DIR = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0)
_PATH_ONLY = getattr(os, "O_PATH", 0)
_PROC_FD = Path("/proc/self/fd")
_CHUNK = 1 << 20
# New entries reported before the comparison stops looking (each one is tampering).
_NEW_SHOWN = 10
_OWNER_RWX = stat.S_IRWXU
# Removal must finish, but not against a process that escaped the run and keeps writing.
REMOVAL_LIMIT_S = 120.0


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The entries the sandbox staged: folders, and files with their size and hash."""

    dirs: frozenset[str]
    files: dict[str, tuple[int, bytes]] = field(hash=False)

    @property
    def entries(self) -> int:
        return len(self.dirs) + len(self.files)


@dataclass(slots=True)
class Comparison:
    """What the run changed among the staged entries, and whether the look was whole."""

    changed: list[str] = field(default_factory=list)
    incomplete: str | None = None


def _open_dir(parent: int | None, name: str | Path) -> int:
    return os.open(name, _DIR, dir_fd=parent)


def _entries(fd: int) -> Iterator[os.DirEntry[str]]:
    with os.scandir(fd) as listing:
        yield from listing


def _digest(parent: int, name: str, size: int) -> bytes | None:
    """SHA-256 of a regular file of exactly ``size`` bytes; None for anything else."""
    try:
        fd = os.open(name, _READ, dir_fd=parent)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size != size:
            return None
        digest = hashlib.sha256()
        left = size + 1  # one byte more than staged shows a file that grew meanwhile
        while left > 0:
            data = os.read(fd, min(_CHUNK, left))
            if not data:
                break
            digest.update(data)
            left -= len(data)
        return digest.digest() if left == 1 else None
    except OSError:
        return None
    finally:
        os.close(fd)


def snapshot(root: Path, parts: Iterable[str]) -> Snapshot:
    """Record the folders and files under ``root/<part>`` that the sandbox staged."""
    dirs: set[str] = set()
    files: dict[str, tuple[int, bytes]] = {}
    root_fd = _open_dir(None, root)
    try:
        pending = list(parts)
        while pending:
            rel = pending.pop()
            dirs.add(rel)
            fd = _open_dir(root_fd, rel)
            try:
                for entry in _entries(fd):
                    child = f"{rel}/{entry.name}"
                    info = entry.stat(follow_symlinks=False)
                    if stat.S_ISDIR(info.st_mode):
                        pending.append(child)
                    elif stat.S_ISREG(info.st_mode):
                        digest = _digest(fd, entry.name, info.st_size)
                        if digest is not None:
                            files[child] = (info.st_size, digest)
            finally:
                os.close(fd)
    finally:
        os.close(root_fd)
    return Snapshot(frozenset(dirs), files)


def compare(root: Path, staged: Snapshot, *, deadline: float, max_entries: int) -> Comparison:
    """The staged entries the run changed, removed or replaced, and any entry it added.

    Only staged folders are entered, so the walk is as deep as the staging was.  It
    stops after ``max_entries`` entries, at ``deadline`` (``time.monotonic()``), or
    after a few new entries (each is tampering already); ``incomplete`` then says why.
    """
    result = Comparison()
    seen_files: set[str] = set()
    seen_dirs: set[str] = set()
    looked = 0
    try:
        root_fd = _open_dir(None, root)
    except OSError as exc:
        result.incomplete = f"the sandbox folder cannot be opened after the run: {exc}"
        return result
    try:
        for rel in sorted(d for d in staged.dirs if "/" not in d):
            pending = [rel]
            while pending:
                here = pending.pop()
                try:
                    fd = os.open(here, _DIR, dir_fd=root_fd)
                except OSError:
                    result.changed.append(here)
                    continue
                seen_dirs.add(here)
                try:
                    for entry in _entries(fd):
                        looked += 1
                        if looked > max_entries or time.monotonic() > deadline:
                            result.incomplete = (
                                f"the staged files could not all be checked within the bound"
                                f" ({max_entries} entries, the grace period): checked {looked - 1}"
                            )
                            return result
                        child = f"{here}/{entry.name}"
                        mode = entry.stat(follow_symlinks=False).st_mode
                        if child in staged.dirs and stat.S_ISDIR(mode):
                            pending.append(child)
                        elif child in staged.files and stat.S_ISREG(mode):
                            seen_files.add(child)
                            size, digest = staged.files[child]
                            if _digest(fd, entry.name, size) != digest:
                                result.changed.append(child)
                        else:
                            result.changed.append(child)
                            if len(result.changed) >= _NEW_SHOWN:
                                return result
                finally:
                    os.close(fd)
    except OSError as exc:
        result.incomplete = f"the staged files could not be checked: {exc}"
        return result
    finally:
        os.close(root_fd)
    result.changed.extend(sorted(set(staged.files) - seen_files - set(result.changed)))
    missing_dirs = staged.dirs - seen_dirs - set(result.changed)
    result.changed.extend(sorted(d for d in missing_dirs if not _under_any(d, result.changed)))
    return result


def _under_any(rel: str, names: Iterable[str]) -> bool:
    return any(rel.startswith(f"{name}/") for name in names)


def _owner_access(parent: int, name: str, device: int) -> None:
    """Give the owner rwx on ``name`` if, and only if, it is a directory on ``device``.

    The directory is opened first (``O_PATH | O_NOFOLLOW``: a symlink is never followed,
    and no read permission is needed), checked with ``fstat``, and changed through
    ``/proc/self/fd``, which names that very directory: a link swapped in meanwhile
    cannot redirect the change.  Without ``O_PATH`` (not Linux), the mode is changed
    through a descriptor opened for reading, which needs read permission already.
    """
    flags = (_PATH_ONLY or os.O_RDONLY) | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(name, flags, dir_fd=parent)
    except OSError:
        return
    try:
        info = os.fstat(fd)
        if not stat.S_ISDIR(info.st_mode) or info.st_dev != device:
            return
        if stat.S_IMODE(info.st_mode) & _OWNER_RWX == _OWNER_RWX:
            return
        mode = stat.S_IMODE(info.st_mode) | _OWNER_RWX
        with contextlib.suppress(OSError):
            if _PATH_ONLY and _PROC_FD.is_dir():
                os.chmod(_PROC_FD / str(fd), mode)
            else:
                os.fchmod(fd, mode)
    finally:
        os.close(fd)


@dataclass(slots=True)
class _Removal:
    root_fd: int
    device: int
    failed: list[str] = field(default_factory=list)
    # Name at the top of the folder -> where it was before it was moved up.
    origin: dict[str, str] = field(default_factory=dict)
    moved: int = 0
    deadline: float = 0.0

    def where(self, top: str, name: str | None = None) -> str:
        base = self.origin.get(top, top)
        return base if name is None else f"{base}/{name}"

    def fresh_name(self) -> str:
        self.moved += 1
        return f".ldd-removing-{self.moved}"


def remove_tree(root: Path) -> list[str]:
    """Delete the run's folder; return the paths (relative to it) that could not be removed.

    Deep folders are flattened, not recursed into: each folder's subfolders are moved
    up to the top of the run's folder before the folder itself is emptied and removed.
    Past :data:`REMOVAL_LIMIT_S` (only something still writing there gets that far),
    it stops and names what is left.
    """
    try:
        info = os.lstat(root)
    except FileNotFoundError:
        return []
    except OSError:
        return ["."]
    if not stat.S_ISDIR(info.st_mode):
        try:
            os.unlink(root)
        except OSError:
            return ["."]
        return []
    try:
        parent_fd = _open_dir(None, root.parent)
    except OSError:
        return ["."]
    try:
        _owner_access(parent_fd, root.name, info.st_dev)
        try:
            root_fd = _open_dir(parent_fd, root.name)
        except OSError:
            return ["."]
        removal = _Removal(root_fd, info.st_dev, deadline=time.monotonic() + REMOVAL_LIMIT_S)
        try:
            _empty(removal)
        finally:
            os.close(root_fd)
        if not removal.failed:
            try:
                os.rmdir(root.name, dir_fd=parent_fd)
            except OSError:
                removal.failed.append(".")
        return removal.failed
    finally:
        os.close(parent_fd)


def _empty(removal: _Removal) -> None:
    given_up: set[str] = set()
    while True:
        try:
            names = [entry.name for entry in _entries(removal.root_fd)]
        except OSError:
            removal.failed.append(".")
            return
        names = [name for name in names if name not in given_up]
        if not names:
            return
        if time.monotonic() > removal.deadline:
            removal.failed.extend(removal.where(name) for name in names[:3])
            return
        for name in names:
            if not _remove_top(removal, name):
                given_up.add(name)


def _remove_top(removal: _Removal, name: str) -> bool:
    """Remove one entry at the top; a folder's subfolders move up, to be taken later."""
    root_fd = removal.root_fd
    try:
        mode = os.lstat(name, dir_fd=root_fd).st_mode
    except FileNotFoundError:
        return True
    except OSError:
        removal.failed.append(removal.where(name))
        return False
    if not stat.S_ISDIR(mode):
        try:
            os.unlink(name, dir_fd=root_fd)
        except FileNotFoundError:
            pass
        except OSError:
            removal.failed.append(removal.where(name))
            return False
        return True
    _owner_access(root_fd, name, removal.device)
    try:
        fd = _open_dir(root_fd, name)
    except OSError:
        removal.failed.append(removal.where(name))
        return False
    ok = True
    try:
        for entry in list(_entries(fd)):
            ok = _take_child(removal, fd, name, entry.name) and ok
    except OSError:
        ok = False
    finally:
        os.close(fd)
    if not ok:
        removal.failed.append(removal.where(name))
        return False
    try:
        os.rmdir(name, dir_fd=root_fd)
    except FileNotFoundError:
        pass
    except OSError:
        removal.failed.append(removal.where(name))
        return False
    return True


def _take_child(removal: _Removal, fd: int, top: str, child: str) -> bool:
    try:
        mode = os.lstat(child, dir_fd=fd).st_mode
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        if not stat.S_ISDIR(mode):
            os.unlink(child, dir_fd=fd)
            return True
        # Renaming a folder to another parent needs write permission on it (its "..").
        _owner_access(fd, child, removal.device)
        while True:
            target = removal.fresh_name()
            try:
                os.rename(child, target, src_dir_fd=fd, dst_dir_fd=removal.root_fd)
                break
            except (FileExistsError, IsADirectoryError):
                continue
            except OSError as exc:
                if exc.errno in (39, 66):  # ENOTEMPTY on Linux / macOS: the name is taken
                    continue
                raise
        removal.origin[target] = removal.where(top, child)
        return True
    except FileNotFoundError:
        return True
    except OSError:
        return False
