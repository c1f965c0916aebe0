"""The judge process of ``isolation="process"``: pytest on the hidden tests, no workspace code.

The parent copies this file beside ``runner.py`` and the modules of process isolation
(``wire``, ``handles``, ``stubs``, ``calls``, ``boot``, ``sync``, ``watching``,
``proxies``, ``subject``) and runs it as ``python -s -B -X utf8 judge_runner.py``
(``isolation.JUDGE_FLAGS``: no ``-I``, so that the PYTHONHASHSEED it shares with the
subject applies) with this interpreter (the ``python=`` wrapper applies to the
subject alone).  It reads its settings from standard input as the in-process runner
does, applies the same limits and environment scrubbing, and reports through the
same authenticated channel (``runner.Channel`` and ``runner.Reporter``).  Then it

1. checks every module file of the staged hidden tests as it is imported, from the
   bytes that get compiled (``integrity.py``), never reads bytecode from the run's
   folder (pytest's assertion-rewrite cache included), and never imports anything
   from a folder the subject can write (its workspace copy, ``HOME``, ``TMPDIR``);
2. makes itself non-dumpable (Linux), so a subject running as the same user cannot
   read its memory or open its descriptors through ``/proc``;
3. starts the subject process (:mod:`subject`), in this process group, with the
   confinement policy it applies to itself before anything else, and puts
   :class:`proxies.WorkspaceFinder` first on ``sys.meta_path``; the workspace is never
   on this process's ``sys.path``;
4. forwards the subject's report of its confinement, probes every comparison of the
   hidden tests that involves a proxy (see :mod:`probes`), then runs ``pytest.main``
   with the reporter and the isolation guard, and leaves with ``os._exit``.

It imports only the standard library and pytest.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

_HERE = Path(__file__).resolve().parent
# The modules of process isolation, in the order they load (each may use the earlier).
_JUDGE_MODULES = (
    "wire", "containers", "handles", "stubs", "calls", "boot", "rng", "sync", "watching",
    "proxies",
)  # fmt: skip
# What a zygote loaded once (see :func:`warm_up`): the judge's modules by their names
# in ``sys.modules`` and, under "sources", the subject's files.  Empty in a cold judge.
_WARM: dict[str, Any] = {}
# The seed this interpreter hashes with (its zygote's, in a forked judge), read before
# the environment is scrubbed; the subject gets it too, so that both hash alike.
_HASH_SEED = os.environ.get("PYTHONHASHSEED")


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _not_dumpable() -> None:
    # Root bypasses the protection (CAP_SYS_PTRACE): there, only OS isolation helps.
    if not sys.platform.startswith("linux") or os.geteuid() == 0:
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        return


def _conversation_s(timeout: float) -> float:
    """How long the subject may take in all: the verdict's timeout, less time to report.

    A subject that hangs then fails its test with the reason, and the run still
    finishes before the parent's own timeout kills everything.
    """
    return timeout - min(2.0, 0.2 * timeout)


def warm_up(runner: ModuleType) -> None:
    """In a zygote (``zygote.py``): load the judge's modules and the subject's files once.

    A judge forked from that zygote then reads no file of its folder: a later change
    to it cannot reach a run.  ``runner`` is the runner module the zygote loaded.
    """
    _WARM["_ldd_runner"] = runner
    for name in _JUDGE_MODULES:
        _WARM[f"_ldd_{name}"] = _load(f"_ldd_{name}", _HERE / f"{name}.py")
    boot = _WARM["_ldd_boot"]
    _WARM["sources"] = _subject_sources(boot)
    _WARM["code"] = boot.compiled(_WARM["sources"])
    # The subject's template: each judge forked from here forks its subject from it.
    template = {"template": (_HERE / "template.py").read_bytes()}
    with contextlib.suppress(OSError):  # then each judge starts its subject cold
        _WARM["template"] = boot.Template.start(
            {**_WARM["sources"], **template}, {**_WARM["code"], **boot.compiled(template)}
        )


def kept_fds() -> tuple[int, ...]:
    """The descriptors a judge forked from the zygote keeps open: its template's socket."""
    template = _WARM.get("template")
    return () if template is None else (template.control.fileno(),)


def _subject_sources(boot: ModuleType) -> dict[str, bytes]:
    # The subject confines itself first, then loads the modules it serves with.
    names = ("confinement", *boot.SUBJECT_MODULES)
    return {name: (_HERE / f"{name}.py").read_bytes() for name in names}


def _forked(settings: dict[str, Any], deadline: float) -> Any:
    """A subject forked from the zygote's template, or None: then it is started cold.

    Only where a cold subject would run this very interpreter with the same flags (no
    ``python=`` wrapper of the caller's), and with the limits this judge runs under,
    which a started subject would inherit.
    """
    template = _WARM.get("template")
    boot = sys.modules["_ldd_boot"]
    subject = settings["subject"]
    if template is None or list(subject["argv"][:-1]) != [sys.executable, *boot.FLAGS, "-c"]:
        return None
    import resource

    limits = {
        name: list(resource.getrlimit(getattr(resource, name)))
        for name in settings["limits"]
        if hasattr(resource, name)
    }
    try:
        return sys.modules["_ldd_proxies"].Connection.fork(
            template,
            cwd=subject["cwd"],
            pythonpath=settings["pythonpath"],
            deadline=deadline,
            limits=limits,
            confine=subject["confine"],
        )
    except (OSError, boot.BootError):
        return None


def main() -> int:
    """Judge the hidden tests as the parent's settings say; return pytest's exit code."""
    started = time.monotonic()
    # Started without -I (see isolation.JUDGE_FLAGS): nothing is imported from the
    # folder of this script, which the interpreter put first on sys.path.
    if sys.path and os.path.realpath(sys.path[0] or os.curdir) == str(_HERE):
        del sys.path[0]
    settings: dict[str, Any] = json.loads(sys.stdin.buffer.readline())
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    runner = _WARM.get("_ldd_runner") or _load("_ldd_runner", _HERE / "runner.py")
    for name in _JUDGE_MODULES:
        if f"_ldd_{name}" not in _WARM:
            runner.load_file(f"_ldd_{name}", _HERE / f"{name}.py")
    proxies = sys.modules["_ldd_proxies"]
    boot = sys.modules["_ldd_boot"]
    runner._apply_limits(settings["limits"])
    runner._scrub_environment()
    fd = int(settings["fd"])
    os.set_inheritable(fd, False)
    channel = runner.Channel(fd, bytes.fromhex(settings.pop("key")))
    # Before the subject exists: from here on no module comes from a folder it can
    # write, and the hidden tests' files compile only from their staged bytes.
    guard_rewrite = runner.guard_suite(settings, channel, refuse=settings["writable"])
    _not_dumpable()
    subject = settings["subject"]
    deadline = started + _conversation_s(float(subject["timeout"]))
    try:
        connection = _forked(settings, deadline) or proxies.Connection.start(
            subject["argv"],
            cwd=subject["cwd"],
            sources=_WARM.get("sources") or _subject_sources(boot),
            pythonpath=settings["pythonpath"],
            deadline=deadline,
            confine=subject["confine"],
            hash_seed=_HASH_SEED,
            code=_WARM.get("code"),
        )
    except OSError as exc:
        channel.send("fatal", detail=f"the subject interpreter cannot start: {exc}")
        return 3
    try:
        import pytest
    except ImportError as exc:
        channel.send("fatal", detail=f"pytest cannot be imported: {exc}")
        return 3
    from _pytest.assertion import rewrite

    guard_rewrite(rewrite)
    problem = connection.hello()
    if problem is not None:
        channel.send("fatal", detail=problem)
        return 3
    confined = connection.confinement
    channel.send("confinement", level=confined["level"], detail=confined["detail"])
    connection.random.install()
    channel.send("hello", pytest=pytest.__version__, pid=os.getpid())
    finder = proxies.WorkspaceFinder(
        settings["pythonpath"],
        connection,
        protected=runner.protected_names(),
        suite=str(settings["suite"]),
    )
    sys.meta_path.insert(0, finder)
    reporter = runner.Reporter(channel, [])
    # Comparisons with workspace objects run in the subject: every stand-in is probed.
    probes = runner.load_sibling("probes")
    reporter.comparisons = probes.guard_comparisons(
        str(settings["suite"]),
        lambda detail: channel.send("liar", id=reporter.current, detail=detail),
        workspace_like=proxies.is_stand_in,
        opaque=probes.opaque_probe(crossing=True),
        identity=proxies.identity_watch(connection),
    )
    proxies.watch_identities(str(settings["suite"]), connection)
    proxies.watch_collector(str(settings["suite"]), connection)
    proxies.watch_processes(connection)
    proxies.watch_subclassing()
    guard = proxies.isolation_guard(pytest, connection, channel, suite=str(settings["suite"]))
    code = int(pytest.main(list(settings["args"]), plugins=[reporter, guard]))
    guard.after_run()
    if connection.broken is not None and sys.modules["_ldd_boot"].TIMED_OUT in connection.broken:
        # The subject outlived the verdict's timeout: the tests after it failed fast,
        # and the verdict says why.
        channel.send("subject_timeout")
    channel.send("finish", exit=code)
    connection.close()
    return code


if __name__ == "__main__":
    status = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)
