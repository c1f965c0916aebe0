"""The git commit a session ran on: short hash, ``+dirty`` when the work tree differs.

:func:`describe_commit` is called once per recording session, at its end (never per
test).  It runs ``git status`` once; that one call gives both the commit
(``# branch.oid``) and the changed tracked files.  Changes under the ``.ldd`` folder
do not count: a project that commits its store (as it commits a lockfile) changes it
in every session, and every session would otherwise read as dirty.  Untracked files
do not count either, as for ``git describe --dirty``.

Without a ``git`` executable the commit is read from ``.git`` itself (``HEAD``, loose
refs, ``packed-refs``, linked work trees); whether the work tree differs cannot be
told then, so the result carries no ``+dirty`` suffix.  Outside a repository, in a
repository without a commit, or when git fails, the answer is ``None``.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Final

__all__ = ["DIRTY_SUFFIX", "SHORT_LENGTH", "describe_commit", "read_head", "work_tree_root"]

#: Hex digits of the short hash (git's own default abbreviation).
SHORT_LENGTH: Final = 7
#: Appended to the short hash when tracked files differ from the commit.
DIRTY_SUFFIX: Final = "+dirty"
#: Seconds ``git status`` may take before the commit is reported as unknown.
GIT_TIMEOUT: Final = 10.0

_SHA_RE: Final = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
#: Bound on what is read of a ref file or ``packed-refs`` (they are tiny).
_MAX_REF_BYTES: Final = 16 << 20


def describe_commit(
    project: str | os.PathLike[str], *, ignore: str | os.PathLike[str] | None = None
) -> str | None:
    """``"1a2b3c4"`` or ``"1a2b3c4+dirty"`` for the repository holding ``project``.

    ``ignore`` is a folder whose changes do not make the work tree dirty (the
    ``.ldd`` folder).  ``None`` when ``project`` is not in a git repository, the
    repository has no commit yet, or git fails.
    """
    root = Path(project)
    command = [
        "git",
        "-C",
        str(root),
        "status",
        "--porcelain=v2",
        "--branch",
        "--untracked-files=no",
        "--ignore-submodules=dirty",
        "-z",
        "--",
        ":/",
    ]
    if ignore is not None:
        folder = Path(ignore).resolve()
        # An exclusion outside the work tree is an error for git: only pass one
        # that lies inside the project (which is inside the work tree).
        if folder.is_relative_to(root.resolve()):
            command.append(f":(exclude){folder}")
    # Optional locks off: status must not rewrite the index another git is using.
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            env=env,
            timeout=GIT_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        return read_head(root)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return _parse_status(done.stdout)


def _parse_status(output: bytes) -> str | None:
    """The description from ``git status --porcelain=v2 --branch -z`` output."""
    sha: str | None = None
    dirty = False
    entries = output.split(b"\0")
    skip = False
    for entry in entries:
        if skip:  # the original path of a rename
            skip = False
            continue
        if not entry:
            continue
        if entry.startswith(b"# branch.oid "):
            value = entry[len(b"# branch.oid ") :].decode("ascii", "replace").strip()
            sha = value if _SHA_RE.fullmatch(value) else None
        elif entry.startswith(b"#"):
            continue
        else:
            dirty = True
            skip = entry.startswith(b"2 ")
    if sha is None:
        return None
    return sha[:SHORT_LENGTH] + (DIRTY_SUFFIX if dirty else "")


def _read_small(path: Path) -> str | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(_MAX_REF_BYTES)
    except OSError:
        return None
    return data.decode("utf-8", "replace")


def _git_dir(start: Path) -> Path | None:
    """The ``.git`` folder for ``start``: a folder, or a ``gitdir:`` file (work trees)."""
    for folder in (start, *start.parents):
        candidate = folder / ".git"
        if candidate.is_dir():
            return candidate
        if candidate.is_file():
            text = _read_small(candidate) or ""
            if text.startswith("gitdir:"):
                target = Path(text[len("gitdir:") :].strip())
                return target if target.is_absolute() else (folder / target).resolve()
            return None
    return None


def read_head(project: str | os.PathLike[str]) -> str | None:
    """The short hash of ``HEAD`` read from ``.git`` without running git (no dirty flag)."""
    git_dir = _git_dir(Path(project).resolve())
    if git_dir is None:
        return None
    head = (_read_small(git_dir / "HEAD") or "").strip()
    if _SHA_RE.fullmatch(head):
        return head[:SHORT_LENGTH]
    if not head.startswith("ref:"):
        return None
    ref = head[len("ref:") :].strip()
    # A linked work tree keeps its HEAD; the refs live in the common folder.
    common_text = _read_small(git_dir / "commondir")
    common = git_dir
    if common_text:
        path = Path(common_text.strip())
        common = path if path.is_absolute() else (git_dir / path).resolve()
    for folder in (git_dir, common):
        value = (_read_small(folder / ref) or "").strip()
        if _SHA_RE.fullmatch(value):
            return value[:SHORT_LENGTH]
    for line in (_read_small(common / "packed-refs") or "").splitlines():
        sha, _, name = line.partition(" ")
        if name.strip() == ref and _SHA_RE.fullmatch(sha):
            return sha[:SHORT_LENGTH]
    return None


def work_tree_root(start: str | os.PathLike[str]) -> Path | None:
    """The top of the git work tree holding ``start`` (where its ``.git`` is), or ``None``."""
    folder = Path(start).resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None
