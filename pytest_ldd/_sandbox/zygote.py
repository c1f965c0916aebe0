"""The warm start of the in-process runner: one interpreter that imports once, forks per run.

The parent stages this file beside the runner's files in a folder of the zygote's own
and starts it as ``python -I -B -X utf8 zygote.py FD`` (the same flags as the runner),
``FD`` one end of a Unix socket pair.  The zygote imports pytest, every plugin pytest
loads by default, the runner and the modules the runner loads beside it, and then
waits.  It never runs workspace code, hidden tests or pytest itself: it only forks.
Started as ``zygote.py FD judge`` it is the zygote of process isolation's judge: it
also loads ``judge_runner.py``, the modules of process isolation and the subject's
files (``judge_runner.warm_up``), and starts the subject's template
(``template.py``); its children run the judge's ``main()``, which has a fresh subject
forked from that template for the workspace's code.

Per run the parent sends one request (a JSON line: the run's folder and environment)
with three file descriptors attached (``SCM_RIGHTS``): the read end of the child's
standard input, the write end of its output, the write end of the result channel.
The zygote forks; the child becomes what a cold ``runner.py`` process is at its first
line -- a session of its own, those descriptors as 0, 1, 2 and 3 and nothing else
open (a judge also keeps its template's socket), the run's environment and folder,
``sys.argv`` of the runner -- and runs the runner's ``main()``, which reads its
settings from standard input, applies the limits, confines itself and runs pytest
exactly as a cold runner does, then leaves with ``os._exit``.  Nothing the child does
reaches the zygote: the child's memory is a copy, its writes are confined to its own
run's folder, and the zygote reads no file after it started.

The zygote answers ``{"pid": N}`` and then waits for ``reap``: the parent watches the
child's exit through a pidfd, kills what is left of its process group while the
child's pid is still reserved (a zombie is not reaped before the parent says so),
and then the zygote kills the group once more, reaps the child and answers
``{"status": CODE, "maxrss": KIB}`` (negative: the signal that ended it; the child's
peak resident memory).

It imports only the standard library and pytest, as the runner does.
"""

from __future__ import annotations

import array
import contextlib
import gc
import importlib
import importlib.util
import json
import os
import signal
import socket
import sys
import threading
import types
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
# The runner's own siblings, loaded once here so that no child reads a file for them.
_SIBLINGS = ("confinement", "integrity", "probes")
_MAX_REQUEST = 1 << 20
_FDS_PER_REQUEST = 3
# The child's descriptors: standard input, output (stdout and stderr), the channel.
_CHANNEL_FD = 3


def _load(name: str) -> types.ModuleType:
    path = os.path.join(_HERE, f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_ldd_{name}", path)
    if spec is None or spec.loader is None:  # pragma: no cover - a file we staged
        msg = f"cannot load the sandbox's {path!r}"
        raise ImportError(msg)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def warm_up(kind: str = "runner") -> types.ModuleType:
    """Import pytest, its default plugins and the runner; return the module a child runs.

    ``kind`` is ``"runner"`` (the in-process runner) or ``"judge"`` (the judge of
    process isolation, ``judge_runner.py``, whose modules and subject files are then
    loaded here too).
    """
    import pytest  # noqa: F401 - the point is to have imported it
    from _pytest.config import default_plugins

    for name in default_plugins:
        with contextlib.suppress(ImportError):  # a plugin this pytest lacks
            importlib.import_module(f"_pytest.{name}")
    # What every session imports on the way that the default plugins do not (pdb and
    # faulthandler at pytest_configure, before any test runs).  A judge also imports
    # unittest.mock (and so asyncio) to watch patches before the hidden tests run:
    # some 20 ms per child otherwise.  Nothing else is imported ahead of a run, so
    # workspace code in a runner child finds the modules a cold runner would have.
    session: tuple[str, ...] = ("_pytest.assertion.rewrite", "_pytest.main", "_pytest.python_api")
    session += ("_pytest._argcomplete", "pdb", "faulthandler")
    if kind == "judge":
        session += ("unittest.mock", "sysconfig")
    for name in session:
        with contextlib.suppress(ImportError):  # moved or gone in this pytest
            importlib.import_module(name)
    runner = _load("runner")
    loaded = {name: vars(runner)["load_sibling"](name) for name in _SIBLINGS}
    # The child uses the modules loaded here, never a file: the zygote's folder could
    # have been changed since (under confinement "none"), the copies in memory not.
    vars(runner)["load_sibling"] = loaded.__getitem__
    if kind == "judge":
        judge = _load("judge_runner")
        vars(judge)["warm_up"](runner)
        return judge
    return runner


def _child(
    runner: types.ModuleType, control: socket.socket, request: dict[str, Any], fds: list[int]
) -> None:
    """In the forked child: become a cold runner process, run it, never return."""
    status = 70
    try:
        os.setsid()
        control.close()
        for target, fd in zip(
            (0, 1, 2, _CHANNEL_FD), (fds[0], fds[1], fds[1], fds[2]), strict=True
        ):
            os.dup2(fd, target)
        # Nothing else stays open but what the run module keeps on purpose (a judge:
        # the socket of its subject template, see judge_runner.kept_fds).
        low = _CHANNEL_FD + 1
        for fd in sorted(vars(runner).get("kept_fds", tuple)()):
            os.closerange(low, fd)
            low = fd + 1
        os.closerange(low, os.sysconf("SC_OPEN_MAX"))
        os.set_inheritable(_CHANNEL_FD, False)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        import tempfile

        tempfile.tempdir = None  # taken again from TMPDIR, the run's own
        sys.argv = [os.path.join(request["runner"], f"{request.get('script', 'runner')}.py")]
        # A cold runner is __main__: so is this one, for whatever looks there.
        sys.modules["__main__"] = runner
        status = runner.main()
    except BaseException:  # the runner's own failure: its exit code says so
        with contextlib.suppress(BaseException):
            import traceback

            traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
        os._exit(status)


def _receive(control: socket.socket) -> tuple[bytes, list[int]]:
    fds = array.array("i")
    data, ancillary, _, _ = control.recvmsg(
        _MAX_REQUEST, socket.CMSG_SPACE(_FDS_PER_REQUEST * fds.itemsize)
    )
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - (len(payload) % fds.itemsize)])
    return data, list(fds)


def _answer(control: socket.socket, **fields: Any) -> None:
    control.sendall(json.dumps(fields).encode() + b"\n")


def _command(control: socket.socket) -> bytes:
    """The parent's next word (``reap``), or what it sent instead; empty: it is gone."""
    data = b""
    while not data.endswith(b"\n") and len(data) < 64:
        chunk = control.recv(64 - len(data))
        if not chunk:
            break
        data += chunk
    return data


def serve(runner: types.ModuleType, control: socket.socket) -> None:
    """Fork one child per request until the parent closes the socket."""
    while True:
        data, fds = _receive(control)
        if not data:
            return
        request = json.loads(data)
        if len(fds) != _FDS_PER_REQUEST or threading.active_count() != 1:
            for fd in fds:
                os.close(fd)
            # Forking a threaded process copies locks other threads held: refuse.
            _answer(control, refused=f"{len(fds)} descriptors, {threading.active_count()} threads")
            continue
        pid = os.fork()
        if pid == 0:
            _child(runner, control, request, fds)
        for fd in fds:
            os.close(fd)
        _answer(control, pid=pid)
        command = _command(control)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        _, wait_status, usage = os.wait4(pid, 0)
        # ru_maxrss is in KiB on Linux: the child's peak, for the benchmarks.
        _answer(control, status=os.waitstatus_to_exitcode(wait_status), maxrss=usage.ru_maxrss)
        if command.strip() != b"reap":
            return  # the parent is gone or confused: the zygote is not needed any more


def _forget_script_folder() -> None:
    # A judge's zygote starts without -I (so that PYTHONHASHSEED applies), which puts
    # this file's folder first on sys.path: nothing is imported from there.
    if sys.path and os.path.realpath(sys.path[0] or os.curdir) == os.path.realpath(_HERE):
        del sys.path[0]


def main() -> int:
    """Warm up, say so, then serve the parent's requests."""
    control = socket.socket(fileno=int(sys.argv[1]))
    _forget_script_folder()
    runner = warm_up(sys.argv[2] if len(sys.argv) > 2 else "runner")
    # What the zygote made lives as long as it does: keep the collector off it, so
    # that a child's collections (pytest runs several as it ends) walk only what the
    # child made, and the pages stay shared instead of being copied to mark them.
    gc.collect()
    gc.freeze()
    _answer(control, ready=os.getpid())
    serve(runner, control)
    return 0


if __name__ == "__main__":
    os._exit(main())
