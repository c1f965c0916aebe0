"""Starting, watching and killing the test process and its process group.

One loop in the calling thread multiplexes the child's standard input (the settings
line), its merged stdout/stderr and the result pipe with ``selectors``, so a child
that floods its output, never exits, or leaves children holding the pipes open
cannot stall the parent: the timeout, the output cap and the exit of the child each
end the loop, and the whole process group is killed before the child is reaped (so
its process-group id cannot have been reused by then).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pytest_ldd.errors import SandboxError

__all__ = ["ChildRun", "Pipes", "Watched", "run_child", "settings_line", "watch"]

_CHUNK = 65536
_TICK_S = 0.1
# Once the child has exited, processes that left its group may still hold the pipes.
_EXIT_GRACE_S = 1.0
_EXIT_POLL_S = 0.002
# An honest runner writes a few hundred bytes per test.
_CHANNEL_CAP = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ChildRun:
    """What the parent saw of one child process."""

    returncode: int
    timed_out: bool
    output_capped: bool
    channel_capped: bool
    channel: bytes
    output_tail: str
    wall_s: float


def run_child(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    settings: Mapping[str, Any],
    timeout: float,
    output_bytes: int,
    tail_bytes: int,
    then: Callable[[Callable[[Mapping[str, Any]], None]], Mapping[str, Any]] | None = None,
) -> ChildRun:
    """Run the child in a session of its own and watch it until it ends or is killed.

    ``settings`` go to the child as one JSON line on its standard input, with ``fd``
    set to the number of the result pipe's write end (which the child inherits).
    With ``then``, that line is written as soon as the child starts and ``then(send)``
    is called while the child starts up: each ``send(message)`` is a line more, and
    what it returns is the last one.  Lines the child has not taken yet wait in memory
    (the child may be busy writing to the pipes nobody reads meanwhile).  The watch
    (and its timeout) begins after it.  Whatever ``then`` raises ends the child.
    """
    pipes = Pipes.open()
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=pipes.child_in,
            stdout=pipes.child_out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=dict(env),
            pass_fds=(pipes.child_channel,),
            start_new_session=True,
        )
    except OSError as exc:
        pipes.close_all()
        msg = f"cannot start the test interpreter {argv[0]!r}: {exc}"
        raise SandboxError(msg) from exc
    pipes.close_child_ends()
    line = settings_line(settings, pipes.child_channel)
    child = _Popened(proc)
    if then is not None:
        try:
            _write_now(pipes.parent_in, line)
            outbox = _Outbox(pipes.parent_in)
            last = then(outbox.send)
            line = outbox.pending + _json_line(last)
        except BaseException:
            child.kill_group()
            child.reap()
            pipes.close_parent_ends()
            raise
    return watch(child, pipes, line, timeout, output_bytes, tail_bytes)


def _json_line(message: Mapping[str, Any]) -> bytes:
    return json.dumps(dict(message), separators=(",", ":")).encode() + b"\n"


class _Outbox:
    """Lines for the child's input, written as far as its pipe takes them without waiting."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pending = b""
        os.set_blocking(fd, False)

    def send(self, message: Mapping[str, Any]) -> None:
        self.pending += _json_line(message)
        while self.pending:
            try:
                written = os.write(self.fd, self.pending)
            except BlockingIOError:
                return
            except OSError:
                written = len(self.pending)  # the child is gone: the watch finds out why
            self.pending = self.pending[written:]


def _write_now(fd: int, data: bytes) -> None:
    """Write all of ``data`` to the child's input; a child gone already is told nothing."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except OSError:
            return  # the watch finds out why it is gone
        view = view[written:]


def settings_line(settings: Mapping[str, Any], fd: int) -> bytes:
    """The one line of settings the child reads, ``fd`` the channel's number in the child."""
    return json.dumps({**settings, "fd": fd}, separators=(",", ":")).encode() + b"\n"


@dataclass(slots=True)
class Pipes:
    """The child's standard input, its merged output and the result channel, both ends."""

    child_in: int
    parent_in: int
    parent_out: int
    child_out: int
    parent_channel: int
    child_channel: int

    @classmethod
    def open(cls) -> Pipes:
        opened: list[int] = []
        try:
            for _ in range(3):
                opened += os.pipe()
        except OSError:
            for fd in opened:
                os.close(fd)
            raise
        return cls(*opened)

    def close_child_ends(self) -> None:
        for fd in (self.child_in, self.child_out, self.child_channel):
            with contextlib.suppress(OSError):
                os.close(fd)

    def close_all(self) -> None:
        self.close_child_ends()
        self.close_parent_ends()

    def close_parent_ends(self) -> None:
        for fd in (self.parent_in, self.parent_out, self.parent_channel):
            with contextlib.suppress(OSError):
                os.close(fd)


class Watched(Protocol):
    """What the watch loop needs of a child process, however it was started."""

    def exited(self) -> bool:
        """Whether the child exited, without reaping it (its group id stays reserved)."""

    def kill_group(self) -> None:
        """Kill the child's process group, unless the child was reaped already."""

    def reap(self) -> int:
        """Wait for the child's end; its exit code (negative: the signal that ended it)."""


class _Popened:
    """A child this process started itself."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc

    def exited(self) -> bool:
        try:
            found = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return found is not None

    def kill_group(self) -> None:
        # The child leads its own session, so it cannot move to another process group;
        # everything it started without a setsid() of its own is in this one.
        if self.proc.returncode is not None:
            return  # reaped already: the group id may belong to someone else by now
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def reap(self) -> int:
        return self.proc.wait()


def watch(
    child: Watched,
    pipes: Pipes,
    line: bytes,
    timeout: float,
    output_bytes: int,
    tail_bytes: int,
) -> ChildRun:
    """Feed the settings ``line``, watch the child until it ends or is killed, reap it.

    The parent's ends of ``pipes`` are closed when it returns.
    """
    started = time.monotonic()
    watcher = _Watcher(child, pipes, line, output_bytes, tail_bytes)
    returncode = -signal.SIGKILL
    try:
        watcher.watch(started + timeout)
    finally:
        child.kill_group()
        try:
            returncode = child.reap()
        finally:
            watcher.drain()
            watcher.close()
    return ChildRun(
        returncode=returncode,
        timed_out=watcher.timed_out,
        output_capped=watcher.output_capped,
        channel_capped=watcher.channel_capped,
        channel=bytes(watcher.channel),
        output_tail=bytes(watcher.tail[-tail_bytes:]).decode("utf-8", "replace"),
        wall_s=time.monotonic() - started,
    )


class _Watcher:
    """The state of one watch loop: buffers, caps and how the loop ended."""

    def __init__(
        self, child: Watched, pipes: Pipes, settings: bytes, output_bytes: int, tail_bytes: int
    ) -> None:
        self.child = child
        self.in_fd: int | None = pipes.parent_in
        self.out_fd = pipes.parent_out
        self.channel_fd = pipes.parent_channel
        channel_fd = self.channel_fd
        self.pending = settings
        self.output_bytes = output_bytes
        self.tail_bytes = tail_bytes
        self.output_seen = 0
        self.tail = bytearray()
        self.channel = bytearray()
        self.timed_out = False
        self.output_capped = False
        self.channel_capped = False
        self.selector = selectors.DefaultSelector()
        for fd in (self.out_fd, channel_fd, self.in_fd):
            os.set_blocking(fd, False)
        self.selector.register(self.out_fd, selectors.EVENT_READ)
        self.selector.register(channel_fd, selectors.EVENT_READ)
        self.selector.register(self.in_fd, selectors.EVENT_WRITE)

    def watch(self, deadline: float) -> None:
        self._watch_pipes(deadline)
        # Both pipes closed (or a cap hit): wait for the exit itself, so a child that
        # closed its pipes and kept running is timed out rather than taken as done.
        while not (self.output_capped or self.channel_capped or self.timed_out):
            if self.child.exited():
                return
            if time.monotonic() >= deadline:
                self.timed_out = True
                return
            time.sleep(_EXIT_POLL_S)

    def _watch_pipes(self, deadline: float) -> None:
        exited_at: float | None = None
        while self._reading():
            now = time.monotonic()
            if now >= deadline:
                self.timed_out = True
                return
            if exited_at is None and self.child.exited():
                exited_at = now
                self.child.kill_group()  # leftovers of the group die with their leader
            if exited_at is not None and now >= exited_at + _EXIT_GRACE_S:
                return
            for key, _ in self.selector.select(min(deadline - now, _TICK_S)):
                if key.fd == self.in_fd:
                    self._write_settings()
                elif self._read(key.fd) == "cap":
                    return

    def _reading(self) -> bool:
        registered = self.selector.get_map()
        return self.out_fd in registered or self.channel_fd in registered

    def _write_settings(self) -> None:
        assert self.in_fd is not None
        try:
            written = os.write(self.in_fd, self.pending[:_CHUNK])
        except BlockingIOError:
            return
        except OSError:
            written = len(self.pending)  # the child is gone: nobody to tell
        self.pending = self.pending[written:]
        if not self.pending:
            self.selector.unregister(self.in_fd)
            os.close(self.in_fd)
            self.in_fd = None

    def _read(self, fd: int) -> str:
        """Take what is ready on ``fd``: "data", "again" (nothing yet), "eof" or "cap"."""
        try:
            data = os.read(fd, _CHUNK)
        except BlockingIOError:
            return "again"
        except OSError:
            data = b""
        if not data:
            self.selector.unregister(fd)
            return "eof"
        if fd == self.channel_fd:
            self.channel += data
            if len(self.channel) > _CHANNEL_CAP:
                self.channel_capped = True
                return "cap"
            return "data"
        self.output_seen += len(data)
        self.tail += data
        if len(self.tail) > 2 * self.tail_bytes:
            del self.tail[: -self.tail_bytes]
        if self.output_seen > self.output_bytes:
            self.output_capped = True
            return "cap"
        return "data"

    def drain(self) -> None:
        """After the kill: take what the pipes still hold, within the caps."""
        if self.output_capped or self.channel_capped:
            return
        for fd in (self.channel_fd, self.out_fd):
            while fd in self.selector.get_map() and self._read(fd) == "data":
                pass

    def close(self) -> None:
        self.selector.close()
        for fd in (self.in_fd, self.out_fd, self.channel_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.in_fd = None
