"""Signals held back while a test's records are handed over and written.

pytest-timeout's ``signal`` method arms ``SIGALRM`` around a whole test protocol,
reports included, and its handler raises ``Failed`` in whatever Python code runs
when the timer fires; Ctrl-C raises ``KeyboardInterrupt`` the same way.  Landing in
the middle of a test's hand-over, either would leave half a unit behind (the
observations written, the pairs not), and raised from a report hook it is an
INTERNALERROR that ends the session.

:class:`HeldSignals` swaps the Python handlers of ``SIGALRM`` and ``SIGINT`` for one
that only notes the signal, for the length of a ``with`` block; on leaving it the
real handlers are put back and each noted signal is handed to its real handler,
which raises there, after the unit is complete.  The caller decides what that
exception becomes (the routing makes a timeout the test's own failure).

Only Python-level handlers are swapped: blocking the signal in the kernel
(``pthread_sigmask``) holds it back from this thread only, and a process-directed
``SIGALRM`` then goes to another thread (xdist's I/O thread), whose C handler
hands it to the main thread's next bytecode all the same.  A signal whose handler
is not a Python callable (the default action, ignored) is left alone, and so is
everything off the main thread, where handlers cannot be set.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any, Final, final

__all__ = ["HELD", "HeldSignals"]

#: The signals held back: pytest-timeout's (and any ``signal.alarm`` timer's), and Ctrl-C.
HELD: Final = tuple(
    s for s in (getattr(signal, "SIGALRM", None), signal.SIGINT) if s is not None
)

_Handler = Callable[[int, "FrameType | None"], Any]


@final
class HeldSignals:
    """Hold :data:`HELD` back for a ``with`` block, then deliver them (see the module)."""

    __slots__ = ("_noted", "_saved")

    def __init__(self) -> None:
        self._saved: list[tuple[int, _Handler]] = []
        self._noted: list[tuple[int, FrameType | None]] = []

    def _note(self, signum: int, frame: FrameType | None) -> None:
        self._noted.append((signum, frame))

    def __enter__(self) -> HeldSignals:
        if threading.current_thread() is not threading.main_thread():
            return self
        for signum in HELD:
            handler = signal.getsignal(signum)
            if callable(handler):
                signal.signal(signum, self._note)
                self._saved.append((signum, handler))
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        saved, self._saved = self._saved, []
        for signum, handler in saved:
            signal.signal(signum, handler)
        noted, self._noted = self._noted, []
        handlers = dict(saved)
        for signum, frame in noted:
            # The real handler raises here (a timeout's Failed, KeyboardInterrupt),
            # after the block: the caller sees it as if it arrived just now.
            handlers[signum](signum, frame)
