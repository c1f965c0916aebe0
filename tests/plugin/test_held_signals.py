"""HeldSignals' swap through ``_signal`` against its plain twin through ``signal``.

The fast path skips only the wrappers' enum conversion: the same blocks, run once
with each pair of functions, see the same handlers, note the same signals and
deliver them the same way.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pytest

from pytest_ldd.plugin import held_signals
from pytest_ldd.plugin.held_signals import HELD, HeldSignals

pytestmark = pytest.mark.skipif(
    not hasattr(signal, "SIGALRM"), reason="SIGALRM is what pytest-timeout holds"
)


class Delivered(Exception):
    """What the test handler raises: the signal it was given."""


def _raising(signum: int, frame: FrameType | None) -> None:
    raise Delivered(signum)


@pytest.fixture(params=["fast", "plain"])
def twin(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each test runs with the module's ``_signal`` functions, and with ``signal``'s."""
    if request.param == "plain":
        monkeypatch.setattr(held_signals, "_getsignal", signal.getsignal)
        monkeypatch.setattr(held_signals, "_setsignal", signal.signal)
    saved = {s: signal.getsignal(s) for s in HELD}
    try:
        yield request.param
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


def _blocks() -> list[tuple[str, Any]]:
    """What one block leaves: the handler seen inside, after it, and what it raised."""
    seen: list[tuple[str, Any]] = []
    try:
        with HeldSignals() as held:
            inside = signal.getsignal(signal.SIGALRM)
            seen.append(
                ("inside is the noting handler", getattr(inside, "__self__", None) is held)
            )
            os.kill(os.getpid(), signal.SIGALRM)
            seen.append(("held back", True))
    except Delivered as exc:
        seen.append(("delivered after the block", exc.args[0]))
    seen.append(("restored", signal.getsignal(signal.SIGALRM) is _raising))
    return seen


def test_a_held_signal_is_delivered_after_the_block(twin: str) -> None:
    signal.signal(signal.SIGALRM, _raising)
    assert _blocks() == [
        ("inside is the noting handler", True),
        ("held back", True),
        ("delivered after the block", signal.SIGALRM),
        ("restored", True),
    ]


@pytest.mark.parametrize("handler", [signal.SIG_DFL, signal.SIG_IGN])
def test_a_handler_that_is_not_python_is_left_alone(twin: str, handler: Any) -> None:
    signal.signal(signal.SIGALRM, handler)
    with HeldSignals():
        assert signal.getsignal(signal.SIGALRM) == handler
    assert signal.getsignal(signal.SIGALRM) == handler


@pytest.mark.parametrize("handler", [_raising, signal.SIG_DFL, signal.SIG_IGN])
def test_the_fast_getter_sees_what_the_plain_one_does(handler: Any) -> None:
    saved = signal.getsignal(signal.SIGALRM)
    try:
        signal.signal(signal.SIGALRM, handler)
        fast = held_signals._getsignal(signal.SIGALRM)
        assert fast == signal.getsignal(signal.SIGALRM) == handler
        assert callable(fast) is callable(handler)
    finally:
        signal.signal(signal.SIGALRM, saved)


def test_the_fast_setter_sets_what_the_plain_one_does() -> None:
    saved = signal.getsignal(signal.SIGALRM)
    try:
        held_signals._setsignal(signal.SIGALRM, _raising)
        assert signal.getsignal(signal.SIGALRM) is _raising
    finally:
        signal.signal(signal.SIGALRM, saved)
