"""Boot: starting the subject process, its handshake, and the deadlines of the conversation.

The judge starts the subject (``python -s -B -X utf8 -c BOOTSTRAP``, the ``python=``
wrapper in front, with the judge's PYTHONHASHSEED) and writes on its standard input
one JSON line of settings, the source of the confinement module (which the subject
runs first, to confine itself) and the source of each module the subject serves
with, in order (:data:`SUBJECT_MODULES`).  It writes what the pipe takes at once,
so the subject compiles while the judge imports pytest; :meth:`Boot.hello` sends the
rest and waits for the subject's first message.  A warm judge has nothing to import
by then, so it also sends each module compiled once in its zygote (:func:`compiled`):
a subject whose interpreter has the same bytecode tag loads those instead of
compiling (some 30 ms of CPU per verdict), any other compiles the sources.

From then on every wait of the judge for the subject ends at the verdict's deadline
(:meth:`Boot.wait`).  A subject that misses it, dies or breaks the protocol is killed
(:meth:`Boot.kill`), once, with the reason kept for every later request.
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import importlib
import json
import marshal
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_ldd._sandbox import wire
else:
    wire = sys.modules.get("_ldd_wire") or importlib.import_module("pytest_ldd._sandbox.wire")

__all__ = [
    "BOOTSTRAP", "FLAGS", "SUBJECT_MODULES", "Boot", "BootError", "Forked", "Template",
    "bytecode_tag", "compiled",
]  # fmt: skip

# The modules the subject runs, in the order it loads them (each may use the earlier).
SUBJECT_MODULES = ("wire", "containers", "handles", "stubs", "calls", "rng", "subject")
_HELLO_S = 30.0

# Why a subject that outlived the verdict's timeout was ended (the judge reports it).
TIMED_OUT = "the subject process did not answer within the verdict's timeout"


def _bootstrap(stream: str, *, confine_first: bool, then: str) -> str:
    """A subject interpreter's ``-c`` program: load the subject's modules from ``stream``.

    ``stream`` is the binary stream the settings line and the modules come on.  The
    confinement module runs first (and, with ``confine_first``, confines this process
    at once); then each module arrives as source and is registered as ``_ldd_<name>``
    before the next one runs, the last one ending up as ``m``; ``then`` follows.  Each
    source may be followed by its code compiled in the judge (:func:`compiled`): loaded
    only when the judge's bytecode tag (:func:`bytecode_tag`) is this interpreter's,
    else the source is compiled here.  Started without -I (so that the judge's
    PYTHONHASHSEED applies), it drops the working folder that ``-c`` put first on
    ``sys.path`` before anything is imported.
    """
    return (
        "import sys,os\n"
        "if sys.path[:1]==['']:del sys.path[0]\n"
        + ("os.environ.pop('PYTHONHASHSEED',None)\n" if confine_first else "")
        + "import json,types,marshal\n"
        f"f={stream}\n"
        "s=json.loads(f.readline())\n"
        "t=sys.implementation.cache_tag+':'+sys.modules['_frozen_importlib_external'].MAGIC_NUMBER.hex()\n"
        "def g(n,k,b):\n"
        " x=f.read(k);y=f.read(b)\n"
        " return marshal.loads(y) if b and s['tag']==t else compile(x,'<ldd-'+n+'>','exec')\n"
        "c={'__name__':'_ldd_confinement'}\n"
        "exec(g('confinement',*s['confinement']),c)\n"
        + ("s['confined']=c['confine'](s['confine'])\n" if confine_first else "")
        + "for n,k,b in s['sources']:\n"
        " m=types.ModuleType('_ldd_'+n)\n"
        " sys.modules[m.__name__]=m\n"
        " exec(g(n,k,b),m.__dict__)\n"
        f"{then}"
        "os._exit(0)\n"
    )


# A cold subject: its settings and modules on standard input; the seed it started
# with leaves the environment the workspace sees, as in one process; it confines
# itself before it loads anything more, and the last module (subject.py) serves.
BOOTSTRAP = _bootstrap("sys.stdin.buffer", confine_first=True, then="m.main(s)\n")
# The template (template.py): its modules on the pipe whose number is its first
# argument; then it serves fork requests on the socket given second.  Each subject it
# forks drops the seed and confines itself (template.py).
_TEMPLATE_BOOTSTRAP = _bootstrap(
    "os.fdopen(int(sys.argv[1]),'rb')",
    confine_first=False,
    then="f.close()\nm.serve(int(sys.argv[2]),c['confine'])\n",
)


def bytecode_tag() -> str:
    """What must match for code compiled here to load in another interpreter.

    The subject's bootstrap computes the same string (see :data:`BOOTSTRAP`).
    """
    magic = sys.modules["_frozen_importlib_external"].MAGIC_NUMBER
    return f"{sys.implementation.cache_tag}:{magic.hex()}"


def compiled(sources: dict[str, bytes]) -> dict[str, bytes]:
    """Each source compiled under the name the subject gives it, as marshal data."""
    return {
        name: marshal.dumps(compile(source, f"<ldd-{name}>", "exec"))
        for name, source in sources.items()
    }


def _environment(hash_seed: str | None) -> dict[str, str]:
    """This process's environment without any PYTHON* variable but ``hash_seed``, if valid."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    if hash_seed is not None and hash_seed.isascii() and hash_seed.isdigit():
        env["PYTHONHASHSEED"] = hash_seed
    return env


def _modules(
    settings: dict[str, Any],
    names: Sequence[str],
    sources: dict[str, bytes],
    code: dict[str, bytes],
) -> bytes:
    """What a bootstrap reads: the settings line, then each module's source and code.

    The confinement module comes first, then ``names`` in order; each source is
    followed by its compiled code where ``code`` has it (tagged with this
    interpreter's :func:`bytecode_tag`).
    """
    parts = [(sources[n], code.get(n, b"")) for n in ("confinement", *names)]
    order = [[n, len(s), len(c)] for n, (s, c) in zip(names, parts[1:], strict=True)]
    head = {
        **settings,
        "tag": bytecode_tag() if code else "",
        "confinement": [len(parts[0][0]), len(parts[0][1])],
        "sources": order,
    }
    line = json.dumps(head, separators=(",", ":")).encode("utf-8")
    return b"".join((line, b"\n", *(b for pair in parts for b in pair)))


class BootError(wire.WireError):
    """The subject did not answer its handshake in time, or answered something else."""


class Boot:
    """One subject process: started, greeted, waited for, and ended."""

    def __init__(self, proc: subprocess.Popen[bytes], deadline: float) -> None:
        assert proc.stdin is not None
        assert proc.stdout is not None
        self.proc = proc
        self.deadline = deadline
        self.broken: str | None = None
        self.read_fd = proc.stdout.fileno()
        self.write_fd = proc.stdin.fileno()
        os.set_blocking(self.read_fd, False)
        os.set_blocking(self.write_fd, False)
        self._pending = b""
        self._hello_deadline: float | None = None

    @classmethod
    def start(
        cls,
        argv: Sequence[str],
        *,
        cwd: str,
        sources: dict[str, bytes],
        settings: dict[str, Any],
        deadline: float,
        hash_seed: str | None = None,
        code: dict[str, bytes] | None = None,
    ) -> Boot:
        """Start the subject and send it what the pipe takes now of its settings and code.

        Its environment is this process's without any PYTHON* variable but
        PYTHONHASHSEED, ``hash_seed`` (the judge's own), when it is a valid seed.
        ``code`` is :func:`compiled` of ``sources``, sent after each module's source.
        """
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=cwd,
            close_fds=True,
            env=_environment(hash_seed),
        )
        boot = cls(proc, deadline)
        sources = {"confinement": b"def confine(policy):\n    return None\n", **sources}
        boot._send(_modules(settings, SUBJECT_MODULES, sources, code or {}))
        return boot

    def _send(self, data: bytes) -> None:
        """Write what the pipe takes now; :meth:`hello` sends the rest."""
        with contextlib.suppress(BlockingIOError, BrokenPipeError):
            data = data[os.write(self.write_fd, data) :]
        self._pending = data

    def hello(self, receive: Callable[[], Any]) -> Any:
        """Send the rest of the code, then ``receive()`` the subject's first message."""
        deadline = min(self.deadline, time.monotonic() + _HELLO_S)
        self._hello_deadline = deadline
        data = memoryview(self._pending)
        try:
            while data:
                self.wait(self.write_fd, True)
                try:
                    data = data[os.write(self.write_fd, data) :]
                except BlockingIOError:
                    continue
            self._pending = b""
            return receive()
        finally:
            self._hello_deadline = None

    def wait(self, fd: int, for_write: bool) -> None:
        """Sleep until ``fd`` is ready; past the deadline, :class:`BootError`."""
        limit = self._hello_deadline or self.deadline
        poller = select.poll()
        poller.register(fd, select.POLLOUT if for_write else select.POLLIN)
        while True:
            left = limit - time.monotonic()
            if left <= 0:
                raise BootError(TIMED_OUT)
            if poller.poll(min(left, 1.0) * 1000):
                return

    def kill(self, reason: str) -> str:
        """End the subject for ``reason`` (once); the reason, with how it ended."""
        if self.broken is None:
            self.broken = reason
            try:
                self.proc.kill()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
            code = self.proc.returncode
            if code is not None:
                status = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
                self.broken = f"{reason} (subject {status})"
        return self.broken

    def close(self) -> None:
        """End the subject: close its pipe, then kill what is left."""
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# -- the warm path: a subject forked from the template (template.py) ------------------

# isolation.JUDGE_FLAGS, which this file cannot import (the judge loads it from a file).
FLAGS = ("-s", "-B", "-X", "utf8")
_TEMPLATE_MODULES = (*SUBJECT_MODULES, "template")
_ANSWER_S = 10.0
_HIGH_FD = 64
_STATUS_S = 0.5


class Template:
    """The judge zygote's subject template: one clean interpreter, a forked subject per verdict.

    Started once in the zygote (:meth:`start`), before any judge runs; each warm judge
    asks it for its subject (:meth:`fork`).  Only one judge of the zygote runs at a
    time, so one socket serves them all: answers carry the request's id, and what a
    judge that ended before reading it left behind is skipped.
    """

    def __init__(self, proc: subprocess.Popen[bytes], control: socket.socket) -> None:
        self.proc = proc
        self.control = control
        self.broken: str | None = None

    @classmethod
    def start(cls, sources: dict[str, bytes], code: dict[str, bytes]) -> Template:
        """Start the template with the subject's modules (``sources``, ``code`` compiled)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # Above the descriptors a judge forked from the zygote puts in place (0 to 3).
        high = fcntl.fcntl(ours.fileno(), fcntl.F_DUPFD_CLOEXEC, _HIGH_FD)
        ours.close()
        ours = socket.socket(fileno=high)
        read, write = os.pipe()
        argv = [sys.executable, *FLAGS, "-c", _TEMPLATE_BOOTSTRAP, str(read), str(theirs.fileno())]
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                pass_fds=(read, theirs.fileno()),
                # The judges' own seed, as a cold subject gets it.
                env=_environment(os.environ.get("PYTHONHASHSEED")),
            )
        finally:
            os.close(read)
            theirs.close()
        with os.fdopen(write, "wb") as pipe:  # the template reads it all before serving
            pipe.write(_modules({}, _TEMPLATE_MODULES, sources, code))
        return cls(proc, ours)

    def fork(
        self, *, cwd: str, settings: dict[str, Any], limits: dict[str, Any], deadline: float
    ) -> Boot:
        """A fresh subject for this judge, its settings sent; :class:`BootError` if refused.

        ``limits`` are the judge's own resource limits, which a cold subject would
        inherit; the subject's environment is the judge's without any PYTHON* variable.
        """
        if self.broken is not None:
            raise BootError(self.broken)
        env = _environment(None)
        umask = os.umask(0o22)
        os.umask(umask)
        request_id = os.urandom(8).hex()
        ask = {"id": request_id, "judge": os.getpid(), "cwd": cwd, "env": env}
        ask.update(umask=umask, limits=limits)
        stdin_read, stdin_write = os.pipe()
        stdout_read, stdout_write = os.pipe()
        try:
            try:
                self.control.sendmsg(
                    [json.dumps(ask).encode()],
                    [
                        (
                            socket.SOL_SOCKET,
                            socket.SCM_RIGHTS,
                            array.array("i", (stdin_read, stdout_write, 2)),
                        )
                    ],
                )
            finally:
                os.close(stdin_read)
                os.close(stdout_write)
            answer = self.answer(request_id, min(deadline, time.monotonic() + _ANSWER_S))
            if type(answer.get("pid")) is not int:
                msg = f"the subject template refused: {str(answer.get('refused'))[:200]}"
                raise BootError(msg)
            subject = Forked(self, request_id, answer["pid"], stdin_write, stdout_read)
        except BaseException as exc:
            os.close(stdin_write)
            os.close(stdout_read)
            if isinstance(exc, OSError):
                self.broken = f"the subject template is gone: {exc}"
                raise BootError(self.broken) from exc
            raise
        boot = Boot(subject, deadline)  # type: ignore[arg-type]
        boot._send(json.dumps(settings, separators=(",", ":")).encode("utf-8") + b"\n")
        return boot

    def answer(self, request_id: str, deadline: float) -> dict[str, Any]:
        """The template's answer to ``request_id``; what is left of earlier judges is skipped."""
        poller = select.poll()
        poller.register(self.control.fileno(), select.POLLIN)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not poller.poll(left * 1000):
                self.broken = "the subject template did not answer"
                raise BootError(self.broken)
            packet = self.control.recv(4096)
            if not packet:
                self.broken = "the subject template is gone"
                raise BootError(self.broken)
            with contextlib.suppress(ValueError):
                answer = json.loads(packet)
                if type(answer) is dict and answer.get("id") == request_id:
                    return answer


class Forked:
    """A subject forked by the :class:`Template`: what :class:`Boot` uses of a ``Popen``.

    Not our child: its exit is watched through a pidfd, and its status is what the
    template, which reaps it, reports.
    """

    def __init__(
        self, template: Template, request_id: str, pid: int, stdin: int, stdout: int
    ) -> None:
        self.template = template
        self.request_id = request_id
        self.pid = pid
        self.pidfd = os.pidfd_open(pid)
        self.stdin = os.fdopen(stdin, "wb", buffering=0)
        self.stdout = os.fdopen(stdout, "rb", buffering=0)
        self._status: int | None = None

    def kill(self) -> None:
        """SIGKILL the subject (through its pidfd: never another process with its pid)."""
        with contextlib.suppress(ProcessLookupError, OSError):
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait for the subject to end; :class:`subprocess.TimeoutExpired` after ``timeout``."""
        poller = select.poll()
        poller.register(self.pidfd, select.POLLIN)
        if not poller.poll(None if timeout is None else timeout * 1000):
            raise subprocess.TimeoutExpired(["subject"], timeout or 0)
        return self.returncode

    @property
    def returncode(self) -> int | None:
        """The exit status the template reported, once the subject ended; else None."""
        if self._status is None and select.select([self.pidfd], [], [], 0)[0]:
            with contextlib.suppress(BootError, OSError):
                answer = self.template.answer(self.request_id, time.monotonic() + _STATUS_S)
                if type(answer.get("status")) is int:
                    self._status = answer["status"]
        return self._status
