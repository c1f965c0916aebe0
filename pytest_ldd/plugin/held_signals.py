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

A block is entered several times per test, so the swap calls the C functions under
``signal.getsignal`` and ``signal.signal`` (module ``_signal``, which ``signal``
itself wraps on every interpreter): the wrappers also turn each handler into a
``Handlers`` member where one matches, and for a Python handler that is a failed
enum lookup per call, most of a block's cost.  The handlers this module sees and
sets are the same objects either way (``SIG_DFL`` and ``SIG_IGN`` come back as
plain ints, which are not callable, as their members are not);
``tests/plugin/test_held_signals.py`` runs the same blocks through both.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # (no stub: signal's own C core)
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

#: The handler of a signal, as set (see the module); ``signal.getsignal`` is its twin.
_getsignal: Callable[[int], object] = _signal.getsignal
#: Set a signal's handler (see the module); ``signal.signal`` is its twin.
_setsignal: Callable[[int, _Handler], object] = _signal.signal


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
            handler = _getsignal(signum)
            if callable(handler):
                _setsignal(signum, self._note)
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
            _setsignal(signum, handler)
        noted, self._noted = self._noted, []
        handlers = dict(saved)
        for signum, frame in noted:
            # The real handler raises here (a timeout's Failed, KeyboardInterrupt),
            # after the block: the caller sees it as if it arrived just now.
            handlers[signum](signum, frame)
