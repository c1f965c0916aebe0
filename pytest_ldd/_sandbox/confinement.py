"""Kernel confinement of the process that runs the workspace's code: Linux Landlock.

The process that imports the workspace (the in-process runner, or the subject of
``isolation="process"``) confines itself with Landlock before any workspace code
runs.  Landlock is an unprivileged, stackable access control of the Linux kernel
(5.13 and later): a process gives up rights for itself and every process it starts,
irrevocably, and the restriction binds root too.  Three system calls through
:mod:`ctypes` do it, on a kernel ABI that only ever grows; this file therefore needs
nothing but the standard library, so that it runs under whatever interpreter the
caller chose, and the runner or the subject loads it from its own copy.

The policy (:func:`confine`'s argument, built by the parent) names what the process
may write (its workspace copy, its ``HOME`` and ``TMPDIR``), what it may read beyond
the system (``read``: the staged hidden tests and the runner, in process) and what it
must never read (``deny``: the original hidden tests, and in process mode the judge's
``suite/`` and ``runner/``).  The system it may read and execute is decided here,
from the interpreter that runs: the usual system folders, the interpreter's prefixes
and every ``sys.path`` entry, and a few devices.  Landlock is an allow-list, so a
denied folder inside a readable tree is excluded by granting its siblings instead of
the tree, recursively down to the denied folder (:func:`plan`).

On ABI 6 and later, the process may also send no signal to, and reach no abstract
Unix socket of, a process outside its own domain (the grader, the judge).  Rights a
kernel does not know are left out of the handled set: each ABI handles what it can
(``REFER`` from 2, ``TRUNCATE`` from 3, ``IOCTL_DEV`` from 5, scopes from 6).

Where the kernel lacks Landlock (an older kernel, another system, a container that
filters the calls), nothing is applied and the report says why: the sandbox records
``confinement="none"``, never silently.  :func:`confine` never raises.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

__all__ = [
    "MODES",
    "Rule",
    "abi_version",
    "confine",
    "plan",
    "system_reads",
]

# "auto": Landlock where the kernel has it, else none (stated); "landlock": required
# (the parent makes a run that could not apply it inconclusive); "none": turned off.
MODES = ("auto", "landlock", "none")

# System call numbers: the same on every architecture of the generic table (x86-64,
# i386, arm, arm64, riscv, powerpc, s390x, loongarch); others are not guessed.
_SYSCALLS = {"create_ruleset": 444, "add_rule": 445, "restrict_self": 446}
_ARCHITECTURES = frozenset(
    {
        "x86_64", "amd64", "i386", "i486", "i586", "i686", "aarch64", "arm64", "armv6l",
        "armv7l", "armv8l", "riscv64", "ppc64", "ppc64le", "s390x", "loongarch64",
    }
)  # fmt: skip
_CREATE_RULESET_VERSION = 1 << 0
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# Filesystem rights, by the ABI that introduced them.
EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

_ABI1_FS = (1 << 13) - 1
_HANDLED_FS = {1: _ABI1_FS, 2: _ABI1_FS | REFER, 3: _ABI1_FS | REFER | TRUNCATE}
_HANDLED_FS[4] = _HANDLED_FS[3]
_HANDLED_FS[5] = _HANDLED_FS[4] | IOCTL_DEV
# Rights a rule on a file (not a folder) may carry; any other is EINVAL.
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV

# What each kind of rule allows (masked by what the running ABI handles).
ACCESS = {
    "read": EXECUTE | READ_FILE | READ_DIR,
    "write": _HANDLED_FS[5],
    "device": READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV,
    "device-read": READ_FILE | IOCTL_DEV,
}

# Where one path gets rules of two kinds, the wider one stays.
_WIDTH = {"device-read": 0, "read": 1, "device": 2, "write": 3}

# The system an honest test suite reads: libraries, configuration (passwd, hosts,
# certificates, time zones), process and hardware facts.  Secrets that root can read
# there are denied.
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/proc", "/sys")
_SYSTEM_SECRETS = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers")
# Devices an honest suite opens; the shared-memory folder is where POSIX semaphores
# and shared memory (``multiprocessing``) live.
_DEVICES = {
    "/dev/null": "device",
    "/dev/full": "device",
    "/dev/tty": "device",
    "/dev/zero": "device-read",
    "/dev/random": "device-read",
    "/dev/urandom": "device-read",
    "/dev/shm": "write",
}
# A denied folder deep inside a wide tree could need very many sibling rules.
MAX_RULES = 10_000


class Rule(NamedTuple):
    """One allow rule: ``path`` and its ``kind``, a key of :data:`ACCESS`."""

    path: str
    kind: str


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


class _Unavailable(Exception):
    """Landlock cannot be used here; the message says why."""


def _libc() -> Any:
    if not sys.platform.startswith("linux"):
        msg = f"Landlock is a Linux facility (this system is {sys.platform!r})"
        raise _Unavailable(msg)
    machine = os.uname().machine.lower()
    if machine not in _ARCHITECTURES:
        msg = f"the Landlock system call numbers of {machine!r} are not known here"
        raise _Unavailable(msg)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        libc.prctl.restype = ctypes.c_int
    except (OSError, AttributeError) as exc:
        msg = f"the C library cannot be reached through ctypes: {exc}"
        raise _Unavailable(msg) from exc
    return libc


def _call(libc: Any, name: str, *args: Any) -> int:
    ctypes.set_errno(0)
    result = int(libc.syscall(ctypes.c_long(_SYSCALLS[name]), *args))
    if result < 0:
        number = ctypes.get_errno()
        raise OSError(number, f"landlock_{name}: {os.strerror(number)}")
    return result


def _abi(libc: Any) -> int:
    try:
        return _call(libc, "create_ruleset", None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    except OSError as exc:
        reason = {
            errno.ENOSYS: "the kernel lacks Landlock (older than 5.13, or built without it)",
            errno.EOPNOTSUPP: "Landlock is built in but turned off (boot parameter lsm=)",
            errno.EPERM: "the Landlock system calls are filtered (a seccomp profile)",
        }.get(exc.errno or 0, f"the Landlock ABI cannot be read: {exc.strerror}")
        raise _Unavailable(reason) from exc


def abi_version() -> tuple[int, str]:
    """The kernel's Landlock ABI version (0 where there is none) and why it is 0."""
    try:
        return _abi(_libc()), ""
    except _Unavailable as exc:
        return 0, str(exc)


def system_reads() -> list[str]:
    """What an honest suite reads of this interpreter and system, besides devices.

    The system folders, the interpreter (its executable, prefixes and base prefixes)
    and every ``sys.path`` entry: a venv under the temporary folder, a ``.pth``-added
    source folder and a zip of modules all stay importable.
    """
    paths = list(_SYSTEM)
    for value in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix):
        if value:
            paths.append(value)
    if sys.executable:
        paths.append(os.path.dirname(os.path.abspath(sys.executable)))
        paths.append(os.path.dirname(os.path.realpath(sys.executable)))
    paths.extend(entry for entry in sys.path if entry and os.path.isabs(entry))
    paths.extend(_editable_sources())
    return paths


def _editable_sources() -> list[str]:
    """The source folders of packages installed in editable mode by setuptools.

    Their finder (a ``__editable__..._finder`` module that a ``.pth`` file loaded at
    start-up) maps package names to folders that are on no ``sys.path`` entry.
    """
    found: list[str] = []
    for name, module in list(sys.modules.items()):
        if not name.startswith("__editable__"):
            continue
        for table in ("MAPPING", "NAMESPACES"):
            mapping = getattr(module, table, None)
            if not isinstance(mapping, dict):
                continue
            for value in mapping.values():
                values = value if isinstance(value, list) else [value]
                found.extend(v for v in values if isinstance(v, str) and os.path.isabs(v))
    return found


def _real(path: str) -> str | None:
    try:
        real = os.path.realpath(path)
        os.stat(real)
    except (OSError, ValueError):
        return None
    return real


def _inside(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or lies beneath it (both real, absolute)."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


class _Budget(Exception):
    """The plan needs more than :data:`MAX_RULES` rules."""


def plan(
    rules: Iterable[tuple[str, str]], deny: Iterable[str], *, limit: int = MAX_RULES
) -> list[Rule]:
    """The allow rules that grant ``rules`` except everything under a ``deny`` path.

    Paths are resolved (a rule on a link grants its target); missing ones are left out.
    A rule whose tree holds a denied path is replaced by rules on the entries of that
    tree, recursively, so the denied path is the only thing of it not granted; a link
    met on the way is granted by its target, unless that target is denied or holds a
    denied path itself.  Raises :class:`ValueError` past ``limit`` rules.
    """
    denied = sorted({real for path in deny if (real := _real(path)) is not None})
    out: dict[str, str] = {}

    def grant(path: str, kind: str, depth: int) -> None:
        if any(_inside(path, d) for d in denied):
            return
        holds = [d for d in denied if _inside(d, path)]
        if not holds:
            if _WIDTH[kind] > _WIDTH.get(out.get(path, ""), -1):
                out[path] = kind
            if len(out) > limit:
                raise _Budget
            return
        if depth > 64:
            return  # deeper than any real tree: nothing of it is granted
        try:
            with os.scandir(path) as listing:
                entries = sorted((entry.name, entry.is_symlink()) for entry in listing)
        except OSError:
            return
        for name, link in entries:
            child = os.path.join(path, name)  # real already, unless it is a link
            if child in denied:
                continue
            target = _real(child) if link else child
            if target is not None:
                grant(target, kind, depth + 1)

    try:
        for path, kind in rules:
            real = _real(path)
            if real is not None:
                grant(real, kind, 0)
    except _Budget:
        msg = f"the allow-list needs more than {limit} rules"
        raise ValueError(msg) from None
    return [Rule(path, kind) for path, kind in sorted(out.items())]


def _single_threaded() -> bool:
    # landlock_restrict_self confines the calling thread (and what it starts later)
    # only: another thread running now would stay free.
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        import threading

        return threading.active_count() == 1


def _apply(libc: Any, abi: int, rules: Sequence[Rule]) -> tuple[int, int]:
    """Build the ruleset and restrict this process; (rules applied, rules skipped)."""
    handled = _HANDLED_FS[min(abi, 5)]
    attr = _RulesetAttr(handled, 0, 0)
    size = 8 if abi < 4 else 16
    if abi >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        size = 24
    ruleset = _call(
        libc, "create_ruleset", ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)
    )
    applied = skipped = 0
    try:
        for rule in rules:
            try:
                fd = os.open(rule.path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                skipped += 1  # gone since the plan was made: nothing to grant
                continue
            try:
                access = ACCESS[rule.kind] & handled
                if not stat.S_ISDIR(os.fstat(fd).st_mode):
                    access &= _FILE_RIGHTS
                beneath = _PathBeneathAttr(access, fd)
                _call(
                    libc, "add_rule", ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                    ctypes.byref(beneath), ctypes.c_uint32(0),
                )  # fmt: skip
                applied += 1
            finally:
                os.close(fd)
        ctypes.set_errno(0)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            number = ctypes.get_errno()
            raise OSError(number, f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(number)}")
        _call(libc, "restrict_self", ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    return applied, skipped


def _report(level: str, detail: str, abi: int = 0) -> dict[str, Any]:
    return {"level": level, "abi": abi, "detail": detail}


def confine(policy: Mapping[str, Any] | None) -> dict[str, Any]:
    """Confine this process as ``policy`` says; report what was applied. Never raises.

    ``policy`` holds ``mode`` (one of :data:`MODES`), ``write`` (folders to read and
    write), ``read`` (more folders to read), ``deny`` (paths never granted).  The
    report is ``{"level": "landlock" | "none", "abi": int, "detail": str}``.
    """
    try:
        return _confine(policy or {"mode": "none"})
    except Exception as exc:  # a bug here must not turn into a crash of the run
        return _report("none", f"Landlock could not be applied: {type(exc).__name__}: {exc}")


def _confine(policy: Mapping[str, Any]) -> dict[str, Any]:
    mode = policy.get("mode", "auto")
    if mode == "none":
        return _report("none", "turned off by confinement='none'")
    try:
        libc = _libc()
        abi = _abi(libc)
    except _Unavailable as exc:
        return _report("none", str(exc))
    if not _single_threaded():
        return _report("none", "the process runs more than one thread: Landlock not applied", abi)
    wanted = [(path, "read") for path in (*system_reads(), *policy.get("read", ()))]
    wanted += list(_DEVICES.items())
    wanted += [(path, "write") for path in policy.get("write", ())]
    try:
        rules = plan(wanted, [*policy.get("deny", ()), *_SYSTEM_SECRETS])
        applied, skipped = _apply(libc, abi, rules)
    except (OSError, ValueError) as exc:
        return _report("none", f"Landlock could not be applied: {exc}", abi)
    scopes = "; no signals or abstract sockets outside" if abi >= 6 else ""
    left = f", {skipped} skipped" if skipped else ""
    return _report("landlock", f"Landlock ABI {abi}: {applied} rules{left}{scopes}", abi)
