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

import contextlib
import importlib
import json
import marshal
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_ldd._sandbox import wire
else:
    wire = sys.modules.get("_ldd_wire") or importlib.import_module("pytest_ldd._sandbox.wire")

__all__ = ["SUBJECT_MODULES", "Boot", "BootError", "bytecode_tag", "compiled"]

# The modules the subject runs, in the order it loads them (each may use the earlier).
SUBJECT_MODULES = ("wire", "containers", "handles", "stubs", "calls", "rng", "subject")
_HELLO_S = 30.0


def bytecode_tag() -> str:
    """What must match for code compiled here to load in another interpreter.

    The subject's bootstrap computes the same string (see ``subject.BOOTSTRAP``).
    """
    magic = sys.modules["_frozen_importlib_external"].MAGIC_NUMBER
    return f"{sys.implementation.cache_tag}:{magic.hex()}"


def compiled(sources: dict[str, bytes]) -> dict[str, bytes]:
    """Each source compiled under the name the subject gives it, as marshal data."""
    return {
        name: marshal.dumps(compile(source, f"<ldd-{name}>", "exec"))
        for name, source in sources.items()
    }


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
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        if hash_seed is not None and hash_seed.isascii() and hash_seed.isdigit():
            env["PYTHONHASHSEED"] = hash_seed
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=cwd,
            close_fds=True,
            env=env,
        )
        boot = cls(proc, deadline)
        sources = {"confinement": b"def confine(policy):\n    return None\n", **sources}
        code = code or {}
        parts = [(sources[n], code.get(n, b"")) for n in ("confinement", *SUBJECT_MODULES)]
        order = [[n, len(s), len(c)] for n, (s, c) in zip(SUBJECT_MODULES, parts[1:], strict=True)]
        head = json.dumps(
            {
                **settings,
                "tag": bytecode_tag() if code else "",
                "confinement": [len(parts[0][0]), len(parts[0][1])],
                "sources": order,
            },
            separators=(",", ":"),
        )
        data = b"".join((head.encode("utf-8"), b"\n", *(b for pair in parts for b in pair)))
        with contextlib.suppress(BlockingIOError, BrokenPipeError):
            data = data[os.write(boot.write_fd, data) :]
        boot._pending = data
        return boot

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
                msg = "the subject process did not answer within the verdict's timeout"
                raise BootError(msg)
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
