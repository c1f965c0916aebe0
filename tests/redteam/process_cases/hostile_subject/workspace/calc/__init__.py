"""A calculator whose subject process attacks the judge through the protocol.

``mul`` and ``sort_by`` are wrong, or right only where the attack would need the
judge to believe them; ``LDD_ATTACK`` picks the attack.
"""

import gc
import os
import signal
import struct
import sys

ATTACK = os.environ.get("LDD_ATTACK", "")
wire = sys.modules["_ldd_wire"]


def _peer():
    return next(o for o in gc.get_objects() if type(o).__name__ == "Peer")


def _raw(data):
    os.write(_peer().write_fd, data)


def _frame(body):
    return struct.pack(">I", len(body)) + body


def _forge_next_answer(make):
    """Replace the encoding of the next answer ("r", seq, value) by make(seq)."""
    peer = _peer()
    original = peer.encoder.encode

    def encode(message):
        if type(message) is tuple and message and message[0] == "r":
            peer.encoder.encode = original
            return original(make(message[1]))
        return original(message)

    peer.encoder.encode = encode


def add(a, b):
    return a + b


def mul(a, b):
    if ATTACK == "garbage":
        _raw(b"\xde\xad\xbe\xef" * 1000)
    elif ATTACK == "bad_tag":
        _raw(_frame(b"?"))
    elif ATTACK == "wrong_seq":
        _forge_next_answer(lambda seq: ("r", seq + 1000, 42))
    elif ATTACK == "huge_frame":
        _raw(b"\xff\xff\xff\xff")
    elif ATTACK == "unknown_base":
        # An object whose class is a class handle the subject never described.
        peer = _peer()
        original = peer.encoder._other

        class Unknown:
            pass

        def other(obj):
            if type(obj) is Unknown:
                peer.encoder._other = original
                return b"H", ("c", 987654, None, None)
            return b"H", ("o", 5, Unknown(), None)

        peer.encoder._other = other
        _forge_next_answer(lambda seq: ("r", seq, object()))
    elif ATTACK == "not_an_exception":
        _forge_next_answer(lambda seq: ("e", seq, (42, "")))
    elif ATTACK == "claims_skip":
        raise type("Skipped", (BaseException,), {"__module__": "_pytest.outcomes"})("skip")
    elif ATTACK == "claims_exit":
        raise SystemExit(0)
    elif ATTACK == "forged_true":
        _forge_next_answer(lambda seq: ("r", seq, True))
    elif ATTACK == "stall":
        os.kill(os.getpid(), signal.SIGSTOP)
    return a + b


class _Ref:
    """Encoded as a reference to a judge object, by number."""

    def __init__(self, number):
        self.number = number


def _reference(original):
    def other(obj):
        if type(obj) is _Ref:
            return b"J", obj.number
        return original(obj)

    return other


_p = _peer() if any(type(o).__name__ == "Peer" for o in gc.get_objects()) else None
if _p is not None:
    _p.encoder._other = _reference(_p.encoder._other)


def _reach_through(key):
    """Crafted requests that try to reach through the judge's key function.

    Each must be refused; the run's output says whether every one was.
    """
    peer = _peer()
    attempts = {
        "globals": lambda: peer.request("getattr", (key, "__globals__")),
        "code": lambda: peer.request("getattr", (key, "__code__")),
        "closure": lambda: peer.request("getattr", (key, "__closure__")),
        "class": lambda: peer.request("getattr", (key, "__class__")),
        "set_code": lambda: peer.request("setattr", (key, "__code__", None)),
        "function_type": lambda: peer.request("call", (type(key), (None, {}), {})),
        "import": lambda: peer.request("import", ("os",)),
        "described_class": lambda: peer.request("call", (_Ref(-1), (), {})),
    }
    reached = []
    for name, attempt in attempts.items():
        try:
            found = attempt()
        except BaseException:
            continue
        reached.append(name)
        if isinstance(found, dict) and "test_mul" in found:
            found["test_mul"] = lambda: None
    if reached:
        os.write(2, f"reach_through REACHED {reached}\n".encode())
    else:
        os.write(2, b"reach_through: the judge refused every attempt\n")


def sort_by(items, key):
    if ATTACK == "reach_through":
        _reach_through(key)
    if ATTACK == "flood":
        # 30 MiB frames the judge must read whole: 512 MiB of them is a flood.  (Few
        # enough that the judge's small error answers still fit in the pipe.)
        callback = ("q", 10**6, "call", (_Ref(1), (b"x" * (30 * 1024 * 1024),), {}), ())
        body = _peer().encoder.encode(callback)
        for _ in range(25):
            _raw(_frame(body))
    if ATTACK == "bad_sync":  # the items argument "changed" into three lists
        _forge_next_answer(lambda seq: ("r", seq, ([3, 2, 1], ([], [], []))))
    if ATTACK != "crafted_callbacks":
        return sorted(items)
    peer = _peer()
    for attempt in (
        lambda: key.__globals__,
        lambda: peer.request("getattr", (key, "__globals__")),
        lambda: peer.request("call", (key, (), {"__class__": 1})),
        lambda: key(*[[[[[[[[[[1]]]]]]]]]] * 3),
        lambda: peer.request("call", (_Ref(999), (), {})),
    ):
        try:
            found = attempt()
        except BaseException:
            continue
        if isinstance(found, dict) and "pytest" in found:
            found["test_sort_by_key"] = lambda: None
    return sorted(items, key=lambda v: -v)
