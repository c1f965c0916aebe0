"""The subject's warm template: one clean interpreter that forks a fresh subject per verdict.

A warm judge (one forked from a judge zygote, see ``zygote.py``) does not start its
subject as a new interpreter.  The judge's zygote starts, once, an interpreter just
as a cold subject starts (``python -s -B -X utf8 -c TEMPLATE``, the judge's
PYTHONHASHSEED), which loads the subject's modules exactly as a cold subject's
bootstrap does -- from sources and compiled code read on a pipe, never from disk --
and then only waits.  It never confines itself, never imports the workspace and never
serves a judge: it has run nothing but our own modules' definitions.

Each verdict's judge sends it one request on a ``SOCK_SEQPACKET`` socket: a JSON
packet (an ``id``, the judge's pid, the subject's folder, environment, umask and
resource limits) with three descriptors attached (``SCM_RIGHTS``): the read end of
the subject's request pipe, the write end of its answer pipe, and the run's output.
The template forks.  The child becomes what a cold subject is at the start of its
bootstrap -- a session of its own, those descriptors as 0, 1 and 2 and nothing else
open, the judge's environment, folder, umask and limits, a fresh ``random`` seed --
then reads its settings line from standard input, confines itself with Landlock and
serves (``subject.main``), as a cold subject does.  The template answers
``{"id", "pid"}``, and ``{"id", "status"}`` once it reaped the child.

The template holds a pidfd of each judge it served: when a judge ends, whatever is
left of its subject's process group is killed.  It ends when the socket closes (the
zygote and its judges are gone).  Nothing a subject does reaches the template: its
memory is a copy, its writes are confined, it cannot signal or trace a process
outside its Landlock domain (ABI 6 and later), and the socket is closed in the child
before anything else runs.  A request that is not well formed is refused, never
guessed at; the judge then starts its subject cold.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import select
import signal
import socket
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["serve"]

_MAX_REQUEST = 1 << 16
_FDS = 3
# The limits a request may set, by their names in :mod:`resource`.
_LIMITS = frozenset(
    {"RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_CORE",
     "RLIMIT_DATA", "RLIMIT_STACK", "RLIMIT_MEMLOCK"}
)  # fmt: skip


def serve(control_fd: int, confine: Callable[[Any], Any]) -> None:
    """Fork a subject per request until the socket closes; never returns into the caller."""
    # What every subject imports before the workspace's code runs (its log records are
    # forwarded from the start): imported once here, not once per subject.
    import logging  # noqa: F401

    control = socket.socket(fileno=control_fd)
    poller = select.poll()
    poller.register(control.fileno(), select.POLLIN)
    served = _Served(poller)
    while True:
        # One event per poll: handling it may close a pidfd another event names, and
        # its number may be reused at once (poll is level-triggered: nothing is lost).
        fd = poller.poll()[0][0]
        if fd != control.fileno():
            served.ended(control, fd)
        elif not _request(control, confine, served):
            served.end()
            return


class _Served:
    """The subjects forked and not yet reaped, each with a pidfd of its judge's process.

    A subject's pid stays reserved until it is reaped here, so killing its process
    group (its pid: it made its own session) can only reach its own processes; once it
    is reaped, its judge is no longer watched.
    """

    def __init__(self, poller: select.poll) -> None:
        self.poller = poller
        # pidfd -> (request id, the subject's pid, the other pidfd of the pair, is a subject's)
        self.fds: dict[int, tuple[str, int, int, bool]] = {}

    def add(self, request_id: str, pid: int, judge: int) -> None:
        subject = os.pidfd_open(pid)
        self.fds[subject] = (request_id, pid, judge, True)
        self.fds[judge] = (request_id, pid, subject, False)
        self.poller.register(subject, select.POLLIN)
        self.poller.register(judge, select.POLLIN)

    def _drop(self, fd: int) -> None:
        self.fds.pop(fd, None)
        self.poller.unregister(fd)
        os.close(fd)

    def ended(self, control: socket.socket, fd: int) -> None:
        """A subject or a judge ended: reap the subject, or kill what is left of its group."""
        request_id, pid, other, is_subject = self.fds[fd]
        _kill_group(pid)  # not reaped yet: the pid is still the subject's
        if not is_subject:
            self._drop(fd)  # the subject's own pidfd says when it can be reaped
            return
        self._drop(fd)
        if other in self.fds:
            self._drop(other)
        _, status = os.waitpid(pid, 0)
        _send(control, {"id": request_id, "status": os.waitstatus_to_exitcode(status)})

    def end(self) -> None:
        """The socket closed: end every subject still running."""
        for _, pid, _, is_subject in self.fds.values():
            if is_subject:
                _kill_group(pid)


def _request(control: socket.socket, confine: Callable[[Any], Any], served: _Served) -> bool:
    """Serve one request; False once the socket is closed."""
    fds = array.array("i")
    try:
        data, ancillary, _, _ = control.recvmsg(_MAX_REQUEST, socket.CMSG_SPACE(_FDS * 4))
    except OSError:
        return False
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - (len(payload) % fds.itemsize)])
    if not data and not fds:
        return False
    try:
        request = _parsed(data)
        if len(fds) != _FDS:
            msg = f"{len(fds)} descriptors"
            raise ValueError(msg)
        judge = os.pidfd_open(request["judge"])
    except (ValueError, OSError) as exc:
        for fd in fds:
            os.close(fd)
        _send(control, {"id": _id(data), "refused": str(exc)[:200]})
        return True
    pid = os.fork()
    if pid == 0:
        _child(control, request, list(fds), confine)
    for fd in fds:
        os.close(fd)
    served.add(request["id"], pid, judge)
    _send(control, {"id": request["id"], "pid": pid})
    return True


def _parsed(data: bytes) -> dict[str, Any]:
    request = json.loads(data)
    if type(request) is not dict:
        msg = "a request is a JSON object"
        raise ValueError(msg)
    checks = {
        "id": str, "judge": int, "cwd": str, "env": dict, "umask": int, "limits": dict,
    }  # fmt: skip
    for key, kind in checks.items():
        if type(request.get(key)) is not kind:
            msg = f"request field {key!r} must be {kind.__name__}"
            raise ValueError(msg)
    if not all(type(k) is str and type(v) is str for k, v in request["env"].items()):
        msg = "request field 'env' must map strings to strings"
        raise ValueError(msg)
    for name, pair in request["limits"].items():
        if name not in _LIMITS or type(pair) is not list or len(pair) != 2:
            msg = f"request limit {name!r} is not one this template sets"
            raise ValueError(msg)
        if not all(type(n) is int for n in pair):
            msg = f"request limit {name!r} must be two ints"
            raise ValueError(msg)
    return request


def _id(data: bytes) -> str:
    try:
        value = json.loads(data).get("id")
    except (ValueError, AttributeError):
        return ""
    return value if type(value) is str else ""


def _send(control: socket.socket, message: Mapping[str, Any]) -> None:
    """One answer packet; dropped if the socket cannot take it now (the judge is gone)."""
    with contextlib.suppress(OSError):
        control.send(json.dumps(message).encode(), socket.MSG_DONTWAIT)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _child(
    control: socket.socket, request: dict[str, Any], fds: list[int], confine: Callable[[Any], Any]
) -> None:
    """In the forked child: become a cold subject at its bootstrap, serve, never return."""
    status = 70
    try:
        control.close()
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(_FDS, os.sysconf("SC_OPEN_MAX"))
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.umask(request["umask"])
        _limit(request["limits"])
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.environ.pop("PYTHONHASHSEED", None)
        settings = json.loads(_line(0))
        settings["confined"] = confine(settings["confine"])
        sys.modules["_ldd_subject"].main(settings)
        status = 0
    except BaseException:
        try:
            import traceback

            os.write(2, f"the subject process stopped: {traceback.format_exc()}".encode())
        except BaseException:
            pass
    finally:
        os._exit(status)


def _limit(limits: Mapping[str, list[int]]) -> None:
    import resource

    for name, (soft, hard) in limits.items():
        # A limit the system refuses stays as it is, as in a cold subject, which
        # inherits what the judge could set.
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(getattr(resource, name), (soft, hard))


def _line(fd: int) -> bytes:
    """The settings line on ``fd``: the judge sends nothing after it before the hello."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        data += chunk
    return data
