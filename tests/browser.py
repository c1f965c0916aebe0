"""Headless Chromium driven over the DevTools protocol on a pipe (no network, no package).

``chromium --remote-debugging-pipe`` reads commands on file descriptor 3 and writes
replies and events on 4, each a JSON object followed by a NUL byte.  The page under
test has no JavaScript of its own: the measurements run in the test, through
``Runtime.evaluate``, after the page has been laid out.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

__all__ = ["Browser", "chromium"]

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--no-first-run",
    "--hide-scrollbars",
    "--mute-audio",
)


def chromium() -> str:
    """The Chromium executable; required under CI, skipped on a machine without one."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("headless Chromium is required in CI (.ci/run installs it)")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    return found


class Browser:
    """One headless Chromium with one page, closed on exit."""

    def __init__(self, profile: Path, *, timeout: float = 60.0) -> None:
        self.timeout = timeout
        to_child, self._write = os.pipe()
        self._read, from_child = os.pipe()

        def wire() -> None:  # in the child: the protocol's two descriptors
            # Moved above 9 first, so that neither pipe end is 3 or 4 already (dup2 of
            # a descriptor onto itself would keep its close-on-exec flag).
            high_in = fcntl.fcntl(to_child, fcntl.F_DUPFD, 10)
            high_out = fcntl.fcntl(from_child, fcntl.F_DUPFD, 10)
            os.dup2(high_in, 3)
            os.dup2(high_out, 4)

        self.process = subprocess.Popen(
            [chromium(), *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={profile}"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=False,
            preexec_fn=wire,  # dup2 only, before exec
        )
        os.close(to_child)
        os.close(from_child)
        self._next = 0
        self._buffer = b""
        self._events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        attached = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})
        self.session: str = attached["sessionId"]
        self.call("Page.enable", session=self.session)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *_: object) -> None:
        with contextlib.suppress(OSError, RuntimeError, TimeoutError):
            self.call("Browser.close")
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._write)
        os.close(self._read)

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                msg = f"no answer from Chromium within {self.timeout} s"
                raise TimeoutError(msg)
            # poll, not select: a long test session may hold descriptors past 1024.
            poller = select.poll()
            poller.register(self._read, select.POLLIN | select.POLLHUP)
            if poller.poll(left * 1000):
                chunk = os.read(self._read, 1 << 20)
                if not chunk:
                    msg = "Chromium closed the DevTools pipe"
                    raise RuntimeError(msg)
                self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        parsed: dict[str, Any] = json.loads(message)
        return parsed

    def call(
        self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None
    ) -> dict[str, Any]:
        """Send one command and return its result (events that arrive meanwhile are kept)."""
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    msg = f"{method}: {reply['error']}"
                    raise RuntimeError(msg)
                result: dict[str, Any] = reply.get("result") or {}
                return result
            self._events.append(reply)

    def _wait_event(self, method: str) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            for i, event in enumerate(self._events):
                if event.get("method") == method:
                    del self._events[i]
                    return
            self._events.append(self._receive(deadline))

    def open(self, url: str, *, width: int, height: int = 900) -> None:
        """Load ``url`` in a viewport ``width`` CSS pixels wide and wait for its load."""
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=self.session,
        )
        self._events.clear()
        self.call("Page.navigate", {"url": url}, session=self.session)
        self._wait_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The JSON value of ``expression`` evaluated in the page."""
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True},
            session=self.session,
        )
        if "exceptionDetails" in result:
            msg = f"evaluation failed: {result['exceptionDetails']}"
            raise RuntimeError(msg)
        return result["result"].get("value")

    def screenshot(self, *, width: int, height: int) -> bytes:
        """A PNG of the top ``width`` x ``height`` CSS pixels of the page."""
        shot = self.call(
            "Page.captureScreenshot",
            {
                "format": "png",
                "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
            },
            session=self.session,
        )
        return base64.b64decode(shot["data"])


def main(argv: list[str] | None = None) -> int:
    """``python tests/browser.py PAGE.html OUT.png [WIDTH HEIGHT]``: a screenshot.

    How ``docs/images/report.png`` is made from the demo's report (see docs/report.md).
    """
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (2, 4):
        print(main.__doc__, file=sys.stderr)
        return 2
    page, out = Path(args[0]).resolve(), Path(args[1])
    width, height = (int(args[2]), int(args[3])) if len(args) == 4 else (1400, 1800)
    import tempfile

    with tempfile.TemporaryDirectory() as profile, Browser(Path(profile)) as browser:
        browser.open(page.as_uri(), width=width, height=height)
        out.write_bytes(browser.screenshot(width=width, height=height))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
