"""The parent's side of the warm start: zygotes per process, one run at a time each.

A :class:`Zygote` is one ``zygote.py`` interpreter (see that file) that has imported
pytest and the runner once and forks a fresh child per run.  The parent hands it the
child's three pipes over a Unix socket, learns the child's pid, watches the child's
exit through a pidfd (the child is the zygote's, not ours, so ``waitid`` cannot see
it) and tells the zygote when to reap it, after killing what is left of its process
group: until then the child's pid, and so its group id, stays reserved.

:func:`acquire` and :func:`release` keep the zygotes of this process: created lazily,
one per concurrent run, reused, and shut down at exit.  Each process (each worker of
``pytest -n N``) has its own.  A zygote that died or answered nonsense is discarded;
the run it served is the caller's to grade again.
"""

from __future__ import annotations

import array
import atexit
import contextlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_ldd._sandbox.isolation import JUDGE_FLAGS, new_hash_seed
from pytest_ldd._sandbox.process import ChildRun, Pipes, settings_line, watch
from pytest_ldd._sandbox.staging import child_environment

__all__ = ["Zygote", "ZygoteLost", "acquire", "release", "shutdown", "unavailable"]

_SANDBOX_DIR = Path(__file__).parent
# The descriptor number of the result channel in a forked child (zygote.py's too).
_CHANNEL_FD = 3
_READY_TIMEOUT_S = 60.0
_ANSWER_TIMEOUT_S = 30.0
_MAX_ANSWER = 4096


class ZygoteLost(Exception):
    """The zygote died, refused, or answered nonsense: the run it served is not graded."""


def unavailable() -> str | None:
    """Why this system cannot start warm (forking is unsafe or unwatchable), or None."""
    if sys.platform != "linux":
        # macOS forks a process whose system frameworks may hold locks (and Python
        # defaults to spawn there); other systems lack pidfds.
        return f"fork is not used on {sys.platform}"
    if not hasattr(os, "pidfd_open"):
        return "this Python has no os.pidfd_open to watch a forked child"
    return None


class Zygote:
    """One warm interpreter that forks a child per run; one run at a time."""

    def __init__(self, python: str, runner_files: Sequence[str], kind: str = "runner") -> None:
        self.python = python
        #: What its children run: "runner" (in-process) or "judge" (process isolation).
        self.kind = kind
        self.folder = Path(tempfile.mkdtemp(prefix="ldd-zygote-"))
        try:
            for name in (*runner_files, "zygote.py"):
                (self.folder / name).write_bytes((_SANDBOX_DIR / name).read_bytes())
            for name in ("home", "tmp"):
                (self.folder / name).mkdir()
            log = (self.folder / "zygote.log").open("wb")
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        except BaseException:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        self._socket = ours
        self._buffer = b""
        #: The largest peak resident memory of a child it forked, in bytes.
        self.child_peak_rss = 0
        try:
            env = child_environment(
                os.environ, {}, home=self.folder / "home", tmp=self.folder / "tmp"
            )
            flags: tuple[str, ...] = ("-I", "-B", "-X", "utf8")
            if kind == "judge":
                # Its judges hash with the seed it started with, and give it to their
                # subjects (see isolation.JUDGE_FLAGS): random per zygote.
                flags = JUDGE_FLAGS
                env["PYTHONHASHSEED"] = new_hash_seed()
            self.proc = subprocess.Popen(
                [python, *flags, str(self.folder / "zygote.py"), str(theirs.fileno()), kind],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                # What a zygote that fails to start says, for the reason of the run.
                stderr=log,
                cwd=self.folder,
                env=env,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
            )
        except BaseException:
            ours.close()
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        finally:
            theirs.close()
            log.close()
        try:
            ready = self._answer(_READY_TIMEOUT_S)
        except ZygoteLost as exc:
            said = self._log_tail()
            self.close()
            raise ZygoteLost(f"{exc}; its output ends with: {said!r}") from exc
        if ready.get("ready") != self.proc.pid:
            self.close()
            msg = f"the zygote did not start: {ready!r}"
            raise ZygoteLost(msg)

    def _log_tail(self) -> str:
        try:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=1.0)
            return (self.folder / "zygote.log").read_bytes()[-300:].decode("utf-8", "replace")
        except OSError:
            return ""

    def rss_bytes(self) -> int | None:
        """The zygote's resident memory now (Linux), for the benchmarks."""
        try:
            status = Path(f"/proc/{self.proc.pid}/status").read_text(encoding="ascii")
        except OSError:
            return None
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(
        self,
        *,
        cwd: Path,
        env: Mapping[str, str],
        runner: Path,
        settings: Mapping[str, Any],
        timeout: float,
        output_bytes: int,
        tail_bytes: int,
    ) -> ChildRun:
        """Fork a child that runs the runner with ``settings``; watch it as a cold one."""
        pipes = Pipes.open()
        script = "judge_runner" if self.kind == "judge" else "runner"
        request = json.dumps(
            {"cwd": str(cwd), "env": dict(env), "runner": str(runner), "script": script}
        ).encode()
        fds = array.array("i", [pipes.child_in, pipes.child_out, pipes.child_channel])
        try:
            self._socket.sendmsg([request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
        except OSError as exc:
            pipes.close_all()
            msg = f"the zygote cannot take a run: {exc}"
            raise ZygoteLost(msg) from exc
        pipes.close_child_ends()
        try:
            answer = self._answer(_ANSWER_TIMEOUT_S)
            pid = answer.get("pid")
            if not isinstance(pid, int) or pid <= 0:
                msg = f"the zygote refused the run: {answer!r}"
                raise ZygoteLost(msg)
            pidfd = os.pidfd_open(pid)
        except BaseException:
            pipes.close_all()
            raise
        child = _Forked(self, pid, pidfd)
        try:
            return watch(
                child,
                pipes,
                settings_line(settings, _CHANNEL_FD),
                timeout,
                output_bytes,
                tail_bytes,
            )
        finally:
            os.close(pidfd)

    def _answer(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or len(self._buffer) > _MAX_ANSWER:
                msg = f"the zygote did not answer within {timeout:g} s"
                raise ZygoteLost(msg)
            self._socket.settimeout(left)
            try:
                chunk = self._socket.recv(_MAX_ANSWER)
            except OSError as exc:
                msg = f"the zygote is gone: {exc}"
                raise ZygoteLost(msg) from exc
            if not chunk:
                code = self.proc.poll()
                msg = f"the zygote is gone (exit code {code})"
                raise ZygoteLost(msg)
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            answer = json.loads(line)
        except ValueError as exc:
            msg = f"the zygote answered {line[:200]!r}"
            raise ZygoteLost(msg) from exc
        if not isinstance(answer, dict):
            msg = f"the zygote answered {answer!r}"
            raise ZygoteLost(msg)
        return answer

    def reap(self) -> int:
        with contextlib.suppress(OSError):
            self._socket.sendall(b"reap\n")
        answer = self._answer(_ANSWER_TIMEOUT_S)
        status, peak = answer.get("status"), answer.get("maxrss")
        if isinstance(peak, int) and peak > 0:
            self.child_peak_rss = max(self.child_peak_rss, peak * 1024)
        if not isinstance(status, int):
            msg = f"the zygote did not report the child's exit: {status!r}"
            raise ZygoteLost(msg)
        return status

    def close(self) -> None:
        """Stop the zygote (it exits when its socket closes) and remove its folder."""
        with contextlib.suppress(OSError):
            self._socket.close()
        try:
            self.proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


class _Forked:
    """A child of the zygote, as the watch loop sees it."""

    def __init__(self, zygote: Zygote, pid: int, pidfd: int) -> None:
        self.zygote = zygote
        self.pid = pid
        self.pidfd = pidfd
        self.reaped = False

    def exited(self) -> bool:
        # A pidfd polls readable once the process has exited, reaped or not.
        return bool(select.select([self.pidfd], [], [], 0)[0])

    def kill_group(self) -> None:
        if self.reaped:
            return  # the group id may belong to someone else by now
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)

    def reap(self) -> int:
        self.reaped = True
        return self.zygote.reap()


_lock = threading.Lock()
_idle: dict[tuple[str, str], list[Zygote]] = {}
_all: list[Zygote] = []


def acquire(python: str, runner_files: Sequence[str], kind: str = "runner") -> Zygote:
    """A zygote of ``python`` and ``kind`` for one run: an idle one of this process, or new.

    ``runner_files`` are the files its folder needs (``zygote.py`` is added).
    """
    with _lock:
        idle = _idle.setdefault((python, kind), [])
        while idle:
            zygote = idle.pop()
            if zygote.alive():
                return zygote
            _discard(zygote)
    zygote = Zygote(python, runner_files, kind)
    with _lock:
        if not _all:
            atexit.register(shutdown)
        _all.append(zygote)
    return zygote


def release(zygote: Zygote, *, healthy: bool) -> None:
    """Give a zygote back after a run; one that failed is stopped instead."""
    if healthy and zygote.alive():
        with _lock:
            _idle.setdefault((zygote.python, zygote.kind), []).append(zygote)
        return
    with _lock:
        _discard(zygote)


def _discard(zygote: Zygote) -> None:
    if zygote in _all:
        _all.remove(zygote)
    zygote.close()


def shutdown() -> None:
    """Stop every zygote of this process (at exit, and between benchmarks)."""
    with _lock:
        zygotes = list(_all)
        _all.clear()
        _idle.clear()
    for zygote in zygotes:
        zygote.close()
