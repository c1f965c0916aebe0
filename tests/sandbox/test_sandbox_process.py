"""Tests of ``isolation="process"``: the codec, the judge and subject, and compatibility.

The compatibility suite (``tests/process_shapes/``) holds hidden tests in the common
public shapes, a correct and a wrong workspace; both isolations must give the same
per-test outcomes.  The attacks are in tests/redteam/test_redteam_process.py.
"""

from __future__ import annotations

import ast
import collections
import contextlib
import datetime
import decimal
import fractions
import inspect
import logging
import math
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time
import typing
import unittest
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ldd._sandbox import boot, containers, proxies, stubs, sync, wire
from pytest_ldd.agents import Episode, resolve_checker
from pytest_ldd.agents.corpus import grade
from pytest_ldd.config import load_config
from pytest_ldd.errors import InvalidSpecError, SandboxError
from pytest_ldd.sandbox import HiddenTests, Verdict, grade_many, hidden_tests, run_hidden_tests

SHAPES = Path(__file__).parent.parent / "process_shapes"
MODES = ("inprocess", "process")


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def shape_verdicts() -> dict[tuple[str, str], Verdict]:
    return {
        (workspace, mode): run_hidden_tests(
            SHAPES / workspace, SHAPES / "hidden", isolation=mode, timeout=60
        )
        for workspace in ("good", "wrong")
        for mode in MODES
    }


# -- the codec -----------------------------------------------------------------------


def _roundtrip(value: Any) -> Any:
    encoder = wire.Encoder(lambda obj: (b"H", id(obj)))
    decoder = wire.Decoder({b"H": lambda payload: ("handle", payload)})
    return decoder.decode(encoder.encode(value))


# The typing forms themselves, not ``X | Y``: they are another class.
OPTIONAL_INT = typing.Optional[int]  # noqa: UP045
UNION_OF_THREE = typing.Union[int, str, None]  # noqa: UP007
VALUES = [
    None, True, False, 0, -1, 2**200, -(2**70), 1.5, math.inf, -math.inf, 1 + 2j, "",
    "\u00e9\udc80", b"\x00\xff", (1, (2,)), [1, [2, {"a": [3]}]], {1, 2}, frozenset({3}),
    {(1, 2): "x"}, pathlib.PurePosixPath("a/b"), pathlib.Path("/tmp/x"),
    pathlib.PureWindowsPath(r"C:\x"),
    datetime.datetime(2024, 2, 29, 12, 30, 1, 5, tzinfo=datetime.timezone.utc),
    datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=-3), "X")),
    datetime.date(2020, 1, 2), datetime.time(23, 59, 59, 999), datetime.timedelta(-1, 5, 7),
    decimal.Decimal("-1.50"), decimal.Decimal("NaN"), fractions.Fraction(-3, 7), uuid.UUID(int=7),
    int, ValueError, type,
    collections.OrderedDict([("b", 1), ("a", 2)]), collections.Counter("abca"),
    range(2, 20, 3), range(-(2**70)), slice(1, None, "x"), bytearray(b"\x00a"), ...,
    NotImplemented,
    collections.defaultdict(list, {"a": [1]}), collections.deque([1, 2], maxlen=3),
    list[int], dict[str, tuple[int, ...]], OPTIONAL_INT, UNION_OF_THREE, int | None, bytes | str,
    re.compile("a+b", re.IGNORECASE), re.compile(b"x.*"),
]  # fmt: skip


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_data_crosses_as_itself_with_its_exact_type(value: Any) -> None:
    got = _roundtrip(value)
    assert type(got) is type(value)
    assert got == value or (value != value and got != got)


def test_ordered_dict_keeps_its_order_sensitive_equality() -> None:
    moved = collections.OrderedDict([("a", 1), ("b", 2)])
    moved.move_to_end("a")  # the OrderedDict's order, not the dict storage's
    got = _roundtrip(moved)
    assert list(got) == ["b", "a"]
    assert got != collections.OrderedDict([("a", 1), ("b", 2)])


def test_nan_crosses() -> None:
    assert math.isnan(_roundtrip(math.nan))


class _Liar(int):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = int.__hash__


class _Words(list[str]):
    def __iter__(self) -> Any:
        return iter(["forged"])

    def __eq__(self, other: object) -> bool:
        return True


def test_only_values_of_exactly_the_data_types_are_data() -> None:
    # A subclass instance keeps its class: it goes to the hook, which makes it a handle.
    assert _roundtrip(_Liar(3))[0] == "handle"
    assert _roundtrip(_Words(["a"]))[0] == "handle"
    assert _roundtrip([_Liar(1), 2])[0][0] == "handle"


class _Tricky(tuple[int, ...]):
    def __iter__(self) -> Any:
        return iter((9,))

    def __getitem__(self, index: Any) -> Any:
        return 9


def test_the_value_a_builtin_subclass_holds_is_read_through_the_base_type() -> None:
    assert wire.base_value(int, _Liar(3)) == 3
    assert type(wire.base_value(int, _Liar(3))) is int
    assert wire.base_value(tuple, _Tricky((1, 2))) == (1, 2)
    assert wire.value_base(_Tricky) is tuple
    assert wire.value_base(_Words) is None  # a list holds no immutable value


class _Frozen(datetime.datetime):
    """A datetime subclass in the shape of freezegun's: its own fields lie."""

    @property
    def year(self) -> int:  # type: ignore[override]
        return 1900


class _Long(datetime.timedelta):
    @property
    def days(self) -> int:  # type: ignore[override]
        return -1


@pytest.mark.parametrize(
    ("value", "base"),
    [
        (_Frozen(2020, 2, 2, 1, 2, 3, 4, datetime.timezone.utc, fold=1), datetime.datetime),
        (_Long(3, 4, 5), datetime.timedelta),
    ],
)
def test_the_value_a_datetime_subclass_holds_is_read_through_the_base_type(
    value: Any, base: type
) -> None:
    assert wire.value_base(type(value)) is base
    got = wire.base_value(base, value)
    assert type(got) is base
    assert got == value
    assert getattr(got, "fold", 0) == getattr(value, "fold", 0)
    again = wire.value_of_class(base, type(value), got)
    assert type(again) is type(value)
    assert base.__eq__(again, value) is True


def test_other_objects_go_to_the_reference_hook() -> None:
    marker = object()
    assert _roundtrip([marker]) == [("handle", id(marker))]


def test_depth_and_size_are_bounded() -> None:
    deep: list[Any] = []
    for _ in range(wire.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(wire.WireError, match="nested deeper"):
        wire.Encoder(lambda obj: (b"H", 0)).encode(deep)
    with pytest.raises(wire.WireError, match="exceeds the limit"):
        wire.Encoder(lambda obj: (b"H", 0), max_bytes=100).encode("x" * 200)
    decoder = wire.Decoder({})
    nested = b"t\x00\x00\x00\x01" * (wire.MAX_DEPTH + 5) + b"N"
    with pytest.raises(wire.WireError, match="nested deeper"):
        decoder.decode(nested)
    with pytest.raises(wire.WireError, match="exceeds the bytes left"):
        decoder.decode(b"l\xff\xff\xff\xff")
    with pytest.raises(wire.WireError, match="exceeds the bytes left"):
        decoder.decode(b"s\x00\x10\x00\x00abc")


def test_a_defaultdict_keeps_its_factory_and_refuses_one_that_cannot_be_called() -> None:
    got = _roundtrip(collections.defaultdict(list))
    assert got["new"] == []
    forged = wire.Encoder(lambda obj: (b"H", 0)).encode(collections.defaultdict(None, {1: 2}))
    forged = forged.replace(b"N", b"i" + (3).to_bytes(8, "big"), 1)
    with pytest.raises(wire.WireError, match="factory cannot be called"):
        wire.Decoder({}).decode(forged)


@pytest.mark.parametrize(
    "data",
    [
        b"", b"?", b"i\x00", b"NN", b"B\x00\x00\x00\x04eval", b"x\x07s\x00\x00\x00\x01a",
        b"r" + b"s\x00\x00\x00\x01a" * 3, b"x\x0bt\x00\x00\x00\x01N",
        b"x\x06t\x00\x00\x00\x02i" + bytes(8) + b"i" + bytes(8),
        b"d\x00\x00\x00\x01l\x00\x00\x00\x00N",
        b"H\x00", b"s\x00\x00\x00\x01\xff",
    ],
)  # fmt: skip
def test_malformed_bytes_raise_wire_error_only(data: bytes) -> None:
    with pytest.raises(wire.WireError):
        wire.Decoder({}).decode(data)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes_never_raise_anything_but_wire_error(data: bytes) -> None:
    with contextlib.suppress(wire.WireError):
        wire.Decoder({b"H": lambda payload: payload}).decode(data)


# -- waiting for the other side ------------------------------------------------------


def _peer(read_fd: int, write_fd: int, wait: Any, spin_s: float) -> Any:
    def refuse(obj: Any) -> tuple[bytes, Any]:
        raise wire.WireError("data only")

    return wire.Peer(
        read_fd,
        write_fd,
        encoder=wire.Encoder(refuse),
        decoder=wire.Decoder({}),
        serve=lambda op, args: None,
        fail=lambda exc: str(exc),
        raise_error=lambda error: RuntimeError(error),
        wait=wait,
        spin_s=spin_s,
    )


def _frame(message: tuple[Any, ...]) -> bytes:
    body = wire.Encoder(lambda obj: (b"H", 0)).encode(message)
    return len(body).to_bytes(4, "big") + body


@pytest.fixture
def pipe() -> Any:
    import os

    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    os.set_blocking(write_fd, False)
    yield read_fd, write_fd
    for fd in (read_fd, write_fd):
        with contextlib.suppress(OSError):
            os.close(fd)


def test_a_reader_without_spin_sleeps_at_the_first_empty_read(pipe: Any) -> None:
    import os

    read_fd, write_fd = pipe
    waits: list[tuple[int, bool]] = []

    def wait(fd: int, for_write: bool) -> None:
        waits.append((fd, for_write))
        os.write(write_fd, _frame(("r", 1, "answer")))

    assert _peer(read_fd, write_fd, wait, spin_s=0.0).receive() == ("r", 1, "answer")
    assert waits == [(read_fd, False)]


def test_a_reader_retries_for_the_spin_before_it_sleeps(pipe: Any) -> None:
    import os
    import threading

    read_fd, write_fd = pipe
    waits: list[tuple[int, bool]] = []
    # The answer comes 20 ms late, well inside a spin of a minute: no sleep at all.
    late = threading.Timer(0.02, lambda: os.write(write_fd, _frame(("r", 2, "late"))))
    late.start()
    try:
        got = _peer(read_fd, write_fd, lambda *a: waits.append(a), spin_s=60.0).receive()
    finally:
        late.join()
    assert got == ("r", 2, "late")
    assert waits == []


def test_a_reader_sleeps_once_its_spin_is_over(pipe: Any) -> None:
    import os

    read_fd, write_fd = pipe
    waits: list[float] = []

    def wait(fd: int, for_write: bool) -> None:
        waits.append(time.perf_counter())
        os.write(write_fd, _frame(("r", 3, "slept")))

    start = time.perf_counter()
    assert _peer(read_fd, write_fd, wait, spin_s=0.005).receive() == ("r", 3, "slept")
    assert len(waits) == 1
    assert waits[0] - start >= 0.005


def test_a_writer_waits_only_when_the_pipe_is_full(pipe: Any) -> None:
    import os

    read_fd, write_fd = pipe
    drained = bytearray()

    def refuse(fd: int, for_write: bool) -> None:
        raise AssertionError("a pipe with room must not be waited on")

    _peer(read_fd, write_fd, refuse, spin_s=0.0).send(("r", 4, "small"))
    drained += os.read(read_fd, 1 << 16)
    assert bytes(drained) == _frame(("r", 4, "small"))

    waits: list[tuple[int, bool]] = []

    def drain() -> None:
        with contextlib.suppress(BlockingIOError):
            while True:
                drained.extend(os.read(read_fd, 1 << 16))

    def wait(fd: int, for_write: bool) -> None:
        waits.append((fd, for_write))
        drain()

    drained.clear()
    big = ("r", 5, "x" * (1 << 20))  # far more than a pipe holds
    _peer(read_fd, write_fd, wait, spin_s=0.0).send(big)
    drain()
    assert waits
    assert set(waits) == {(write_fd, True)}
    assert bytes(drained) == _frame(big)


# -- requests that start inside another's wait ----------------------------------------


@pytest.fixture
def talk() -> Any:
    """A peer reading what the test writes, and writing where the test reads."""
    import os

    fds = [*os.pipe(), *os.pipe()]  # this side reads [0] (the test writes [1]), writes [3]
    for fd in fds:
        os.set_blocking(fd, False)
    peer = _peer(fds[0], fds[3], None, spin_s=0.0)
    yield peer, (lambda *messages: os.write(fds[1], b"".join(map(_frame, messages))))
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def test_an_answer_that_reaches_a_request_begun_inside_its_wait_is_kept_for_its_own(
    talk: Any,
) -> None:
    # A finalizer run by the collector during a wait asks a request of its own: the
    # other side may answer the outer request first (here: after a printed line, while
    # handling which this side began the inner one).
    peer, write = talk
    inner: list[Any] = []
    peer.on_output = lambda stream, text: inner.append(peer.request("inner", ()))
    write(("o", 1, "printed"), ("r", 0, "outer answer"), ("r", 1, "inner answer"))
    assert peer.request("outer", ()) == "outer answer"
    assert inner == ["inner answer"]
    # Both conversations are over: the next answer is the next request's.
    write(("r", 2, "third"))
    assert peer.request("third", ()) == "third"


def test_the_answer_to_a_wait_an_exception_ended_is_dropped_when_it_comes(talk: Any) -> None:
    # A signal handler's exception (a test's own timeout) ends a wait; the answer still
    # comes, and must not be taken as the next request's.
    peer, write = talk

    def interrupted(stream: int, text: str) -> None:
        raise KeyboardInterrupt

    peer.on_output = interrupted
    write(("o", 1, "printed"), ("r", 0, "late"), ("r", 1, "next"))
    with pytest.raises(KeyboardInterrupt):
        peer.request("first", ())
    peer.on_output = None
    assert peer.request("second", ()) == "next"
    # An answer to a request never asked is still an error.
    write(("r", 7, "forged"))
    with pytest.raises(wire.WireError, match="an answer to request 7 arrived while 2"):
        peer.request("third", ())


def test_a_message_is_read_with_the_collector_held_off(talk: Any) -> None:
    # A finalizer that the collector ran between a message's length and its body would
    # read the pipe from the middle of that message.
    import gc

    peer, write = talk
    seen: list[bool] = []

    def wait(fd: int, for_write: bool) -> None:
        seen.append(gc.isenabled())
        write(("r", 0, "answer"))

    peer._wait = wait
    assert gc.isenabled()
    assert peer.request("asked", ()) == "answer"
    assert seen == [False]
    assert gc.isenabled()


# -- options -------------------------------------------------------------------------


def test_isolation_is_validated_and_named(tmp_path: Path) -> None:
    _write(tmp_path / "hidden", {"test_x.py": "def test_x():\n    pass\n"})
    (tmp_path / "ws").mkdir()
    with pytest.raises(
        SandboxError, match=r"'isolation' must be one of 'process', 'inprocess' \(got 'thread'\)"
    ):
        run_hidden_tests(tmp_path / "ws", tmp_path / "hidden", isolation="thread")
    with pytest.raises(SandboxError, match="'isolation'"):
        hidden_tests(tmp_path / "hidden", isolation=None)  # type: ignore[arg-type]
    checker = hidden_tests(tmp_path / "hidden", isolation="process")
    assert isinstance(checker, HiddenTests)
    assert "isolation='process'" in repr(checker)


def test_confined_inprocess_isolation_is_the_default(tmp_path: Path) -> None:
    _write(tmp_path / "hidden", {"test_x.py": "def test_x():\n    pass\n"})
    default = hidden_tests(tmp_path / "hidden")
    assert default.options.isolation == "inprocess"
    assert default.options.confinement == "auto"
    assert "isolation=" not in repr(default)  # the repr names only what differs
    assert default.options == hidden_tests(tmp_path / "hidden", isolation="inprocess").options
    parameters = inspect.signature(run_hidden_tests).parameters
    assert parameters["isolation"].default == "inprocess"
    assert parameters["confinement"].default == "auto"


# -- compatibility -------------------------------------------------------------------


def test_a_correct_workspace_passes_every_shape_in_both_isolations(
    shape_verdicts: dict[tuple[str, str], Verdict],
) -> None:
    for mode in MODES:
        verdict = shape_verdicts["good", mode]
        assert verdict.passed, f"{mode}: {verdict.reason}\n{verdict.output_tail[-4000:]}"
        assert len(verdict.outcomes) == 46


def test_a_wrong_workspace_fails_every_shape_in_both_isolations(
    shape_verdicts: dict[tuple[str, str], Verdict],
) -> None:
    for mode in MODES:
        verdict = shape_verdicts["wrong", mode]
        assert not verdict.passed
        assert not verdict.tampered
        assert set(verdict.outcomes.values()) == {"failed"}, f"{mode}: {verdict.outcomes}"


@pytest.mark.parametrize("workspace", ["good", "wrong"])
def test_both_isolations_agree_test_by_test(
    shape_verdicts: dict[tuple[str, str], Verdict], workspace: str
) -> None:
    inprocess = dict(shape_verdicts[workspace, "inprocess"].outcomes)
    process = dict(shape_verdicts[workspace, "process"].outcomes)
    assert process == inprocess


@pytest.fixture
def task(tmp_path: Path) -> SimpleNamespace:
    return SimpleNamespace(ws=tmp_path / "ws", hidden=tmp_path / "hidden")


SHOP = (
    "class Cart:\n    def total(self):\n        return 0\n\n\n"
    "def price(item):\n    return item.cost\n\n\n"
    "def name_of(thing):\n    return thing.__name__\n"
)


def test_what_cannot_cross_makes_the_verdict_inconclusive_with_the_reason(
    task: SimpleNamespace,
) -> None:
    _write(task.ws, {"shop.py": SHOP})
    _write(
        task.hidden,
        {
            "test_shop.py": (
                "import os\nimport pytest\nimport shop\n\n\n"
                "class Item:\n    cost = 3\n\n\n"
                "def test_passes_a_judge_object():\n    assert shop.price(Item()) == 3\n\n\n"
                "def test_passes_a_module():\n    assert shop.name_of(os) == 'os'\n\n\n"
                "def test_subclasses_a_workspace_class():\n"
                "    class Mine(shop.Cart):\n        pass\n\n\n"
                "def test_swallows_it():\n"
                "    with pytest.raises(Exception):\n        shop.name_of(os)\n\n\n"
                "def test_fine():\n    assert shop.Cart().total() == 0\n"
            )
        },
    )
    verdict = run_hidden_tests(task.ws, task.hidden, isolation="process")
    assert dict(verdict.outcomes) == {
        "test_shop.py::test_passes_a_judge_object": "passed",
        "test_shop.py::test_passes_a_module": "failed",
        "test_shop.py::test_subclasses_a_workspace_class": "failed",
        # Swallowed, the limit still makes the test one the verdict cannot vouch for.
        "test_shop.py::test_swallows_it": "passed",
        "test_shop.py::test_fine": "passed",
    }
    assert verdict.inconclusive
    assert not verdict.passed
    assert not verdict.tampered
    # The hidden tests' own limits are named first (a twin of them may meet one too).
    assert verdict.reason.startswith(
        (
            "test_shop.py::test_passes_a_module could not be judged:",
            "test_shop.py::test_subclasses_a_workspace_class could not be judged:",
            "test_shop.py::test_swallows_it could not be judged:",
        )
    )
    assert "cannot pass a module object to workspace code" in verdict.reason
    assert "cannot subclass the workspace class Cart" in verdict.reason


def test_a_limit_met_loading_the_hidden_conftest_makes_the_run_inconclusive(
    task: SimpleNamespace,
) -> None:
    # semver's tests/conftest.py subclasses the workspace's Version: pytest stops with
    # a usage error before it collects anything, and no test was the workspace's fault.
    _write(task.ws, {"shop.py": SHOP})
    _write(
        task.hidden,
        {
            "conftest.py": "import shop\n\n\nclass MyCart(shop.Cart):\n    pass\n",
            "test_shop.py": (
                "import shop\n\n\ndef test_fine():\n    assert shop.Cart().total() == 0\n"
            ),
        },
    )
    verdict = run_hidden_tests(task.ws, task.hidden, isolation="process")
    assert verdict.inconclusive, verdict.reason
    assert not verdict.passed
    assert not verdict.tampered
    assert "the run could not be judged" in verdict.reason
    assert "cannot subclass the workspace class Cart" in verdict.reason
    assert "not reported" not in verdict.reason
    # In-process the same suite is graded as plain pytest grades it.
    assert run_hidden_tests(task.ws, task.hidden).passed


def test_watching_a_lent_object_die_makes_the_test_inconclusive(task: SimpleNamespace) -> None:
    # more-itertools' lifecycle tests watch their elements die through weak references
    # as the workspace's iterator moves on; the subject's stand-in keeps an element
    # alive until its release reaches the judge.
    _write(task.ws, {"shop.py": "def keep(thing):\n    return None\n"})
    _write(
        task.hidden,
        {
            "test_shop.py": (
                "import weakref\n\nimport shop\n\n\nclass Thing:\n    pass\n\n\n"
                "def test_dies():\n    thing = Thing()\n    ref = weakref.ref(thing)\n"
                "    shop.keep(thing)\n    del thing\n    assert ref() is None\n\n\n"
                "def test_fine():\n    assert shop.keep(1) is None\n"
            )
        },
    )
    assert run_hidden_tests(task.ws, task.hidden).passed
    verdict = run_hidden_tests(task.ws, task.hidden, isolation="process")
    assert verdict.inconclusive, verdict.reason
    assert not verdict.passed
    assert verdict.reason.startswith("test_shop.py::test_dies could not be judged:")
    assert "weak reference" in verdict.reason


def test_a_failure_no_limit_explains_still_fails_the_verdict(task: SimpleNamespace) -> None:
    _write(task.ws, {"shop.py": SHOP.replace("return 0", "return 1")})
    _write(
        task.hidden,
        {
            "test_shop.py": (
                "import os\nimport shop\n\n\n"
                "def test_passes_a_module():\n    assert shop.name_of(os) == 'os'\n\n\n"
                "def test_wrong():\n    assert shop.Cart().total() == 0\n"
            )
        },
    )
    verdict = run_hidden_tests(task.ws, task.hidden, isolation="process")
    assert not verdict.inconclusive
    assert not verdict.passed
    assert "test_shop.py::test_passes_a_module could not be judged" in verdict.reason
    assert "1 of 2 hidden tests did not pass: test_shop.py::test_passes_a_module" not in (
        verdict.reason
    )
    assert "test_shop.py::test_wrong (failed)" in verdict.reason


def test_a_limit_met_in_a_shared_fixture_is_met_by_every_test_that_uses_it(
    task: SimpleNamespace,
) -> None:
    _write(task.ws, {"shop.py": SHOP})
    _write(
        task.hidden,
        {
            "test_shop.py": (
                "import os\nimport pytest\nimport shop\n\n\n"
                "@pytest.fixture(scope='session')\ndef name():\n    return shop.name_of(os)\n\n\n"
                "def test_first(name):\n    assert name == 'os'\n\n\n"
                "def test_second(name):\n    assert name == 'os'\n\n\n"
                "def test_fine():\n    assert shop.Cart().total() == 0\n"
            )
        },
    )
    verdict = run_hidden_tests(task.ws, task.hidden, isolation="process")
    assert dict(verdict.outcomes) == {
        "test_shop.py::test_first": "error",
        "test_shop.py::test_second": "error",
        "test_shop.py::test_fine": "passed",
    }
    assert verdict.inconclusive, verdict.reason
    assert "test_shop.py::test_second could not be judged: isolation='process' cannot pass" in (
        verdict.reason
    )


def test_a_value_that_cannot_be_encoded_is_a_limit_either_way(task: SimpleNamespace) -> None:
    _write(
        task.ws,
        {
            "ring.py": (
                "def ring():\n    r = [1]\n    r.append(r)\n    return r\n\n\n"
                "def size(items):\n    return len(items)\n\n\n"
                "def double(x):\n    return 2 * x\n"
            )
        },
    )
    _write(
        task.hidden,
        {
            "test_ring.py": (
                "import ring\n\n\n"
                "def test_returned():\n    assert ring.ring()[0] == 1\n\n\n"
                "def test_handed_over():\n    r = [1]\n    r.append(r)\n"
                "    assert ring.size(r) == 2\n\n\n"
                "def test_serves_on():\n    assert ring.double(21) == 42\n"
            )
        },
    )
    verdict = run_hidden_tests(task.ws, task.hidden, isolation="process")
    assert dict(verdict.outcomes) == {
        "test_ring.py::test_returned": "failed",
        "test_ring.py::test_handed_over": "failed",
        "test_ring.py::test_serves_on": "passed",
    }
    assert verdict.inconclusive, verdict.reason
    assert (
        "test_ring.py::test_returned could not be judged: isolation='process' cannot carry the"
        " answer to 'call': a value nested deeper than 100 levels cannot cross"
    ) in verdict.reason
    assert (
        "test_ring.py::test_handed_over could not be judged: isolation='process' cannot carry"
        " what was handed over: a value nested deeper than 100 levels cannot cross"
    ) in verdict.reason


def test_a_limit_met_while_collecting_makes_the_module_inconclusive(task: SimpleNamespace) -> None:
    _write(task.ws, {"shop.py": SHOP})
    _write(
        task.hidden,
        {
            "test_shop.py": (
                "import os\nimport shop\n\nNAME = shop.name_of(os)\n\n\n"
                "def test_name():\n    assert NAME == 'os'\n"
            )
        },
    )
    verdict = run_hidden_tests(task.ws, task.hidden, isolation="process")
    assert verdict.inconclusive, verdict.reason
    assert verdict.outcomes == {"test_shop.py::test_name": "error"}
    assert "test_shop.py could not be judged: isolation='process' cannot pass a module" in (
        verdict.reason
    )


def test_workspace_exceptions_mirror_their_hierarchy_and_keep_attributes(
    task: SimpleNamespace,
) -> None:
    _write(
        task.ws,
        {
            "errs.py": (
                "class AppError(Exception):\n    pass\n\n\n"
                "class NotFound(AppError, KeyError):\n"
                "    def __init__(self, key):\n"
                "        super().__init__(key)\n        self.key = key\n\n\n"
                "def find(key):\n    raise NotFound(key)\n\n\n"
                "def boom():\n    import json\n    return json.loads('{')\n"
            )
        },
    )
    _write(
        task.hidden,
        {
            "test_errs.py": (
                "import json\nimport pytest\nimport errs\n\n\n"
                "def test_hierarchy():\n"
                "    with pytest.raises(errs.AppError) as info:\n        errs.find('k')\n"
                "    assert isinstance(info.value, KeyError)\n"
                "    assert isinstance(info.value, errs.NotFound)\n"
                "    assert type(info.value).__qualname__ == 'NotFound'\n"
                "    assert info.value.key == 'k'\n\n\n"
                "def test_except_builtin():\n"
                "    try:\n        errs.find('z')\n"
                "    except KeyError as exc:\n        assert exc.args == ('z',)\n"
                "    else:\n        raise AssertionError('not raised')\n\n\n"
                "def test_stdlib_exception_is_the_judges_own():\n"
                "    with pytest.raises(json.JSONDecodeError):\n        errs.boom()\n"
            )
        },
    )
    verdict = run_hidden_tests(task.ws, task.hidden, isolation="process")
    assert verdict.passed, verdict.output_tail[-3000:]


def test_callbacks_are_re_entrant_and_judge_exceptions_come_back_as_themselves(
    task: SimpleNamespace,
) -> None:
    _write(
        task.ws,
        {
            "flow.py": (
                "def twice(f, x):\n    return f(f(x))\n\n\n"
                "def call(f):\n    return f()\n\n\n"
                "def nested(f):\n    return f(lambda y: y * 10)\n"
            )
        },
    )
    _write(
        task.hidden,
        {
            "test_flow.py": (
                "import pytest\nimport flow\n\n\n"
                "class Custom(Exception):\n    pass\n\n\n"
                "def test_twice():\n"
                "    twice = lambda v: flow.twice(str.upper, v) + '!'\n"
                "    assert flow.twice(twice, 'a') == 'A!!'\n\n\n"
                "def test_judge_exception_is_itself():\n"
                "    err = Custom('mine')\n"
                "    def fail():\n        raise err\n"
                "    with pytest.raises(Custom) as info:\n        flow.call(fail)\n"
                "    assert info.value is err\n\n\n"
                "def test_workspace_callable_passed_back():\n"
                "    assert flow.nested(lambda g: g(4)) == 40\n"
            )
        },
    )
    verdict = run_hidden_tests(task.ws, task.hidden, isolation="process")
    assert verdict.passed, verdict.output_tail[-3000:]


# -- configuration -------------------------------------------------------------------

# Which isolation ran: the subject never imports pytest, the in-process child always has.
WHICH = (
    "import sys\n\n\n"
    "def mode():\n    return 'inprocess' if '_pytest' in sys.modules else 'process'\n"
)


def _which_task(root: Path, want: str) -> SimpleNamespace:
    _write(root / "ws", {"which.py": WHICH})
    _write(
        root / "hidden",
        {
            "test_which.py": (
                f"import which\n\n\ndef test_mode():\n    assert which.mode() == {want!r}\n"
            )
        },
    )
    return SimpleNamespace(ws=root / "ws", hidden=root / "hidden")


@pytest.mark.parametrize("mode", MODES)
def test_the_isolation_asked_for_is_the_one_that_runs(tmp_path: Path, mode: str) -> None:
    which = _which_task(tmp_path, mode)
    assert run_hidden_tests(which.ws, which.hidden, isolation=mode).passed


def test_agents_config_takes_an_isolation_and_names_a_bad_one(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ldd.agents]\ncheck = "hidden_tests:hidden/"\nisolation = "process"\n'
    )
    assert load_config(tmp_path).agents.isolation == "process"
    (tmp_path / "pyproject.toml").write_text('[tool.ldd.agents]\nisolation = "threads"\n')
    with pytest.raises(
        InvalidSpecError, match=r"'tool.ldd.agents.isolation'.*'process' or 'inprocess'.*'threads'"
    ):
        load_config(tmp_path)


@pytest.mark.parametrize("mode", MODES)
def test_grading_passes_the_isolation_to_the_sandbox(tmp_path: Path, mode: str) -> None:
    which = _which_task(tmp_path, mode)
    episode = Episode("which", workspace=str(which.ws))
    graded = grade(episode, None, check=f"hidden_tests:{which.hidden}", isolation=mode)
    assert graded.success, graded.detail
    in_spec = grade(episode, None, check=f"hidden_tests[isolation={mode}]:{which.hidden}")
    assert in_spec.success, in_spec.detail


def test_a_bad_isolation_in_the_spec_is_named(tmp_path: Path) -> None:
    which = _which_task(tmp_path, "process")
    with pytest.raises(SandboxError, match="'isolation'"):
        resolve_checker(f"hidden_tests[isolation=threads]:{which.hidden}")


def test_the_agents_config_isolation_reaches_the_marker_checker(
    pytester: pytest.Pytester,
) -> None:
    which = _which_task(pytester.path, "process")
    pytester.makepyprojecttoml(
        '[tool.ldd.agents]\ncheck = "hidden_tests:hidden/"\nisolation = "process"\n'
    )
    pytester.makepyfile(
        test_agent=f"""
        import pytest
        from pytest_ldd.agents import Episode

        @pytest.mark.metric("task_success", kind="bounded", description="solved")
        def test_episode(ldd):
            scores = ldd.episode(Episode("which", workspace={str(which.ws)!r}))
            assert scores["task_success"].value == 1.0, scores["task_success"].detail
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "test_agent.py")
    result.assert_outcomes(passed=1)


# -- the demo's tasks ----------------------------------------------------------------

DEMO = Path(__file__).resolve().parent.parent.parent / "pytest_ldd" / "demo" / "project"


def _demo_agent() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("_demo_agent_for_tests", DEMO / "demo_agent.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("task", ["slugify", "fizzbuzz", "parse_duration", "merge_intervals"])
def test_the_demo_tasks_agree_in_both_isolations(tmp_path: Path, task: str) -> None:
    agent = _demo_agent()
    for draft, text in agent.DRAFTS[task].items():
        workspace = tmp_path / draft
        workspace.mkdir()
        (workspace / f"{task}.py").write_text(text, encoding="utf-8")
        verdicts = {
            mode: run_hidden_tests(workspace, DEMO / "hidden" / task, isolation=mode)
            for mode in MODES
        }
        assert verdicts["process"].passed is (draft == "good"), verdicts["process"].reason
        assert dict(verdicts["process"].outcomes) == dict(verdicts["inprocess"].outcomes)


# -- the subject's interpreter -------------------------------------------------------


def test_the_python_wrapper_applies_to_the_subject_alone(task: SimpleNamespace) -> None:
    _write(
        task.ws,
        {"where.py": "import os\n\n\ndef wrapped():\n    return os.environ.get('LDD_WRAPPED')\n"},
    )
    _write(
        task.hidden,
        {
            "test_where.py": (
                "import os\nimport where\n\n\n"
                "def test_subject_is_wrapped():\n    assert where.wrapped() == 'yes'\n\n\n"
                "def test_judge_is_not():\n    assert 'LDD_WRAPPED' not in os.environ\n"
            )
        },
    )
    wrapper = ["/usr/bin/env", "LDD_WRAPPED=yes", sys.executable]
    verdict = run_hidden_tests(task.ws, task.hidden, isolation="process", python=wrapper)
    assert verdict.passed, verdict.output_tail[-3000:]


@pytest.mark.parametrize(
    ("python", "fragment"),
    [
        ("/no/such/python", "the subject interpreter cannot start"),
        (["/bin/sh", "-c", "exit 0", "sh"], "the subject process did not start"),
    ],
)
def test_a_subject_interpreter_that_cannot_serve_is_a_setup_error(
    task: SimpleNamespace, python: Any, fragment: str
) -> None:
    _write(task.ws, {"m.py": "X = 1\n"})
    _write(task.hidden, {"test_m.py": "import m\n\n\ndef test_m():\n    assert m.X == 1\n"})
    with pytest.raises(SandboxError, match=fragment):
        run_hidden_tests(task.ws, task.hidden, isolation="process", python=python)


# -- the judge's files ---------------------------------------------------------------


def _runtime_imports(tree: ast.AST) -> Iterator[str]:
    """The modules a file imports when it runs (not under ``if TYPE_CHECKING:``)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for child in node.orelse:
                yield from _runtime_imports(child)
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield node.module or ""
        else:
            yield from _runtime_imports(node)


def test_the_judges_files_import_only_the_standard_library_and_pytest() -> None:
    """The judge loads its files from its folder: it imports nothing the parent did not stage."""
    from pytest_ldd._sandbox import isolation

    here = Path(proxies.__file__).parent
    allowed = {*sys.stdlib_module_names, "pytest", "_pytest", "pluggy"}
    imported = {
        f"{name}: {module}"
        for name in isolation.JUDGE_FILES
        for module in _runtime_imports(ast.parse((here / name).read_bytes()))
        if module.partition(".")[0] not in allowed
    }
    assert imported == set()


def test_the_judge_loads_each_module_after_the_siblings_it_uses(tmp_path: Path) -> None:
    """From the staged files alone, in ``_JUDGE_MODULES`` order, the package out of reach."""
    from pytest_ldd._sandbox import isolation

    here = Path(proxies.__file__).parent
    for name in isolation.JUDGE_FILES:
        shutil.copyfile(here / name, tmp_path / name)
    script = (
        "import sys\n"
        "sys.modules['pytest_ldd'] = None\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "import judge_runner\n"
        "for name in judge_runner._JUDGE_MODULES:\n"
        "    judge_runner._load(f'_ldd_{name}', judge_runner._HERE / f'{name}.py')\n"
    )
    result = subprocess.run(
        [sys.executable, "-I", "-B", "-c", script], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


# -- proxies, up close ---------------------------------------------------------------


def _serving(ws: Path, module: str) -> Any:
    """Serve ``ws`` from a subject to this process, the judge's side installed, until closed."""
    import time

    here = Path(proxies.__file__).parent
    connection = proxies.Connection.start(
        [sys.executable, "-I", "-B", "-X", "utf8", "-c", boot.BOOTSTRAP],
        cwd=str(ws),
        sources={
            name: (here / f"{name}.py").read_bytes()
            for name in ("confinement", *boot.SUBJECT_MODULES)
        },
        pythonpath=[str(ws)],
        deadline=time.monotonic() + 60,
    )
    assert connection.hello() is None
    finder = proxies.WorkspaceFinder([str(ws)], connection)
    sys.meta_path.append(finder)
    try:
        yield connection
    finally:
        sys.meta_path.remove(finder)
        sys.modules.pop(module, None)
        connection.close()


@pytest.mark.parametrize("same_interpreter", [True, False], ids=["same-tag", "other-tag"])
def test_the_subject_runs_the_judges_compiled_code_only_under_its_own_bytecode_tag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, same_interpreter: bool
) -> None:
    import time

    here = Path(proxies.__file__).parent
    sources = {
        name: (here / f"{name}.py").read_bytes() for name in ("confinement", *boot.SUBJECT_MODULES)
    }
    code = boot.compiled(sources)
    # A source that cannot load: a subject that compiles the sources never says hello.
    sources["containers"] = b"raise SystemExit(7)\n"
    if not same_interpreter:
        monkeypatch.setattr(boot, "bytecode_tag", lambda: "cpython-00:00000000")
    ws = _write(tmp_path / "ws", {"m.py": "X = 1\n"})
    connection = proxies.Connection.start(
        [sys.executable, "-I", "-B", "-X", "utf8", "-c", boot.BOOTSTRAP],
        cwd=str(ws),
        sources=sources,
        code=code,
        pythonpath=[str(ws)],
        deadline=time.monotonic() + 60,
    )
    try:
        problem = connection.hello()
    finally:
        connection.close()
    if same_interpreter:
        assert problem is None
    else:
        assert problem is not None
        assert "did not start" in problem


@pytest.fixture
def connected(tmp_path: Path) -> Any:
    """A subject serving ``tmp_path/ws`` to this process, the judge's side installed."""
    ws = _write(
        tmp_path / "ws",
        {
            "things.py": (
                "class Box:\n"
                "    def __init__(self, items):\n        self.items = list(items)\n"
                "    def __len__(self):\n        return len(self.items)\n"
                "    def __iter__(self):\n        return iter(self.items)\n"
                "    def __eq__(self, other):\n"
                "        return isinstance(other, Box) and other.items == self.items\n\n\n"
                "class Plain:\n    pass\n\n\n"
                "SHARED = Plain()\n\n\n"
                "def same():\n    return SHARED\n\n\n"
                "def live():\n    import gc\n"
                "    return sum(1 for o in gc.get_objects() if type(o) is Plain)\n\n\n"
                "class Oops(ValueError):\n    pass\n\n\n"
                "def identity(value):\n    return value\n\n\n"
                "def is_oops(value):\n    return value is Oops\n"
            )
        },
    )
    yield from _serving(ws, "things")


def test_a_proxy_has_exactly_the_special_methods_of_its_remote_type(connected: Any) -> None:
    import collections.abc

    import things  # type: ignore[import-not-found]

    box = things.Box([3, 1])
    plain = things.Plain()
    assert len(box) == 2
    assert sorted(box) == [1, 3]
    assert isinstance(box, collections.abc.Sized)
    assert not isinstance(plain, collections.abc.Sized)
    assert not callable(plain)
    assert callable(things.Box)
    assert box == things.Box([3, 1])
    assert box != things.Box([])
    assert type(box).__hash__ is None  # __eq__ without __hash__: unhashable, as remotely
    with pytest.raises(TypeError):
        len(plain)
    assert isinstance(box, things.Box)
    assert not isinstance(plain, things.Box)
    assert not isinstance(3, things.Box)


def test_the_same_remote_object_is_the_same_proxy(connected: Any) -> None:
    import things

    assert things.same() is things.same()
    assert things.Box is things.Box
    assert things.__file__.endswith("things.py")
    assert not hasattr(things, "__path__")
    assert things.identity(things.Box) is things.Box
    assert things.identity(things.Oops) is things.Oops
    assert things.is_oops(things.Oops)  # the subject gets its own class back, not a stand-in
    assert issubclass(things.Oops, ValueError)
    assert things.identity(ValueError) is ValueError


def test_copies_are_made_in_the_subject_and_pickling_is_refused(connected: Any) -> None:
    import copy
    import pickle

    import things

    box = things.Box([1, [2]])
    twin = copy.deepcopy(box)
    assert twin is not box
    assert twin == box
    assert copy.copy(box) == box
    with pytest.raises(proxies.IsolationError, match="cannot pickle the object Box"):
        pickle.dumps(box)
    assert connected.limits  # a limit of the isolation: the verdict cannot vouch


def test_a_judge_object_that_cannot_cross_makes_comparisons_fall_back(connected: Any) -> None:
    import things

    box = things.Box([])
    assert (box == os) is False
    assert not connected.limits  # an operand that cannot cross: Python's own fallback
    with pytest.raises(proxies.IsolationError, match="cannot pass a module object"):
        things.Box(os)
    assert connected.limits


FORGER = """import gc

wire = __import__("sys").modules["_ldd_wire"]


def _peer():
    return next(o for o in gc.get_objects() if type(o).__name__ == "Peer")


def forge_answer(value):
    \"\"\"The answer after this call's own carries ``value`` instead of the real one.\"\"\"
    peer = _peer()
    original = peer.encoder.encode
    answers = []

    def encode(message):
        if type(message) is tuple and message and message[0] == "r":
            answers.append(message)
            if len(answers) == 2:
                peer.encoder.encode = original
                return original(("r", message[1], value))
        return original(message)

    peer.encoder.encode = encode


def forge_class(special):
    \"\"\"The next class record the subject sends lists ``special`` as its special methods.\"\"\"
    handles = __import__("sys").modules["_ldd_handles"]
    original = handles.class_record

    def class_record(cls):
        handles.class_record = original
        return (*original(cls)[:4], special, *original(cls)[5:])

    handles.class_record = class_record


class Box:
    def __init__(self, items):
        self.items = list(items)

    def __len__(self):
        return len(self.items)

    def __hash__(self):
        return 7


def fill(items):
    items.append(1)
    return None


class Fresh:
    pass
"""


@pytest.fixture
def forger(tmp_path: Path) -> Any:
    """A subject whose workspace can forge its next answer (``forger.py``)."""
    ws = _write(tmp_path / "ws", {"forger.py": FORGER})
    yield from _serving(ws, "forger")


@pytest.mark.parametrize(
    ("use", "forged", "reason"),
    [
        (len, "three", "answered len() with str"),
        (len, True, "answered len() with bool"),
        (hash, 1.5, "answered hash() with float"),
        (hash, None, "answered hash() with NoneType"),
    ],
)
def test_a_forged_answer_to_len_or_hash_ends_the_subject(
    forger: Any, use: Any, forged: Any, reason: str
) -> None:
    import forger as ws  # type: ignore[import-not-found]

    box = ws.Box([1, 2, 3])
    assert use(box) == (3 if use is len else 7)  # the honest answers first
    ws.forge_answer(forged)
    with pytest.raises(proxies.SubjectError, match=re.escape(reason)):
        use(box)
    assert forger.broken is not None
    with pytest.raises(proxies.SubjectError, match="the subject is gone"):
        len(box)


def test_a_class_record_with_unknown_special_methods_ends_the_subject(forger: Any) -> None:
    import forger as ws

    ws.forge_class(("__len__", "__getattribute__"))
    with pytest.raises(proxies.SubjectError, match="unknown special methods"):
        ws.Fresh()
    assert forger.broken is not None


@pytest.mark.parametrize(
    ("forged", "reason"),
    [
        ((None, ("not a list",)), "changed the type of an argument"),
        ((None, ([1], [2])), "wrong arguments"),
        ((None, [[1]]), "wrong shape"),
        ("no tuple", "wrong shape"),
    ],
)
def test_a_forged_update_of_an_argument_ends_the_subject(
    forger: Any, forged: Any, reason: str
) -> None:
    import forger as ws

    items: list[int] = []
    fill = ws.fill
    fill(items)
    assert items == [1]  # the honest update first
    ws.forge_answer(forged)
    with pytest.raises(proxies.SubjectError, match=reason):
        fill(items)
    # The workspace's own change to the list it holds reaches the test's list, as in
    # one process; nothing of the forged state does.
    assert items == [1, 1]


REACH = """import gc

wire = __import__("sys").modules["_ldd_wire"]


def _peer():
    return next(o for o in gc.get_objects() if type(o).__name__ == "Peer")


class Ref:
    \"\"\"Encoded as a reference to the judge's object of this number, given or not.\"\"\"

    def __init__(self, number):
        self.number = number


def _hook(peer):
    original = peer.encoder._other

    def other(obj):
        if type(obj) is Ref:
            return b"J", obj.number
        return original(obj)

    peer.encoder._other = other


def attempts(requests):
    \"\"\"Send each crafted request to the judge; what came back, or the error.\"\"\"
    peer = _peer()
    _hook(peer)
    results = []
    for op, args in requests:
        try:
            results.append(("reached", repr(peer.request(op, args))[:200]))
        except BaseException as exc:
            results.append(("refused", f"{type(exc).__name__}: {exc}"[:300]))
    return results


def class_of(obj):
    return type(obj)


def number_of(obj):
    subject = next(o for o in gc.get_objects() if type(o).__name__ == "Subject")
    return subject.table.number_of(obj)
"""


@pytest.fixture
def reacher(tmp_path: Path) -> Any:
    """A subject whose workspace sends crafted requests to the judge (``reach.py``)."""
    ws = _write(tmp_path / "ws", {"reach.py": REACH})
    yield from _serving(ws, "reach")


class TestLikeObject:
    __test__ = False  # not a test of this suite: an instance the hidden tests could hand over

    def check(self) -> bool:
        return True


class _Plain:
    def method(self) -> int:
        return 1


class _Case(unittest.TestCase):
    def runTest(self) -> None:
        return None


def test_the_subject_cannot_reach_through_what_it_was_given(reacher: Any) -> None:
    import reach  # type: ignore[import-not-found]

    def key(value: int) -> int:
        """A key function of the tests."""
        return -value

    case = _Case()
    test_like = TestLikeObject()
    plain = _Plain()
    function_class = reach.class_of(key)  # the judge's function type: only described
    crafted = [
        ("getattr", (key, "__globals__")),
        ("getattr", (key, "__code__")),
        ("getattr", (key, "__closure__")),
        ("getattr", (key, "__class__")),
        ("getattr", (plain.method, "__self__")),
        ("setattr", (key, "__code__", None)),
        ("setattr", (case, "assertEqual", len)),
        ("setattr", (test_like, "check", len)),
        ("call", (function_class, (None, {}), {})),
        ("getattr", (function_class, "__dict__")),
        ("import", ("os",)),
        ("lookup", (key, "x")),
        ("call", (reach.Ref(-1), (), {})),
    ]
    results = reach.attempts(crafted)
    reached = [(op, got) for (op, _), (how, got) in zip(crafted, results, strict=True)]
    assert [how for how, _ in results] == ["refused"] * len(crafted), reached
    assert reacher.limits  # each refusal is a limit: the verdict cannot vouch
    assert reacher.broken is None
    with pytest.raises(proxies.SubjectError, match="never given"):
        reach.attempts([("call", (reach.Ref(10**6), (), {}))])


def test_what_the_subject_may_read_of_the_judges_objects(connected: Any) -> None:
    import functools

    import things  # type: ignore[import-not-found]

    @functools.wraps(len)
    def wrapped(value: Any) -> int:
        return len(value)

    assert things.identity(wrapped) is wrapped
    plain = _Plain()
    things.identity(plain)
    assert connected.request("getattr", things.identity(plain), "method")() == 1
    assert not connected.limits


def test_released_handles_are_dropped_by_the_subject(connected: Any) -> None:
    import gc

    import things

    before = things.live()
    made = [things.Plain() for _ in range(20)]
    assert things.live() >= before
    del made
    gc.collect()
    things.live()  # carries the releases
    assert things.live() == before


def test_a_test_that_swallows_the_subjects_death_still_fails(task: SimpleNamespace) -> None:
    _write(task.ws, {"dies.py": "import os\n\n\ndef die():\n    os._exit(0)\n"})
    _write(
        task.hidden,
        {
            "test_dies.py": (
                "import dies\n\n\n"
                "def test_swallows():\n    try:\n        dies.die()\n"
                "    except BaseException:\n        pass\n\n\n"
                "def test_after():\n    try:\n        dies.die()\n"
                "    except BaseException:\n        pass\n"
            )
        },
    )
    verdict = run_hidden_tests(task.ws, task.hidden, isolation="process")
    assert dict(verdict.outcomes) == {
        "test_dies.py::test_swallows": "failed",
        "test_dies.py::test_after": "failed",
    }
    assert "process isolation failed during this test" in verdict.output_tail


@pytest.mark.parametrize(
    "raised",
    [
        "unittest.SkipTest('not today')",
        "__import__('_pytest.outcomes').outcomes.Skipped('not today')",
        "type('Skipped', (BaseException,), {'__module__': '_pytest.outcomes'})('x')",
        "type('XFailed', (Exception,), {'__module__': '_pytest.outcomes'})('x')",
    ],
)
def test_workspace_code_cannot_skip_its_way_past_a_hidden_test(
    task: SimpleNamespace, raised: str
) -> None:
    _write(
        task.ws,
        {"calc.py": f"import unittest\n\n\ndef mul(a, b):\n    raise {raised}\n"},
    )
    hidden = "from calc import mul\n\n\ndef test_mul():\n    assert mul(6, 7) == 42\n"
    _write(task.hidden, {"test_calc.py": hidden})
    verdicts = {mode: run_hidden_tests(task.ws, task.hidden, isolation=mode) for mode in MODES}
    for mode, verdict in verdicts.items():
        assert not verdict.passed, f"{mode}: {verdict.reason}"
        assert verdict.outcomes["test_calc.py::test_mul"] != "passed", mode
    if raised.startswith("unittest"):
        # A stdlib exception is the judge's own class: the same outcome in both modes.
        assert verdicts["process"].outcomes == verdicts["inprocess"].outcomes


# -- what real suites meet: graded as plain pytest does, or inconclusive ---------------


def _as_plain_or_inconclusive(task: SimpleNamespace) -> tuple[Verdict, Verdict]:
    """Both isolations' verdicts; each test differs only where process mode says why."""
    verdicts = {mode: run_hidden_tests(task.ws, task.hidden, isolation=mode) for mode in MODES}
    plain, process = verdicts["inprocess"], verdicts["process"]
    assert not process.tampered, process.reason
    assert plain.outcomes.keys() == process.outcomes.keys()
    for test_id, outcome in plain.outcomes.items():
        if process.outcomes[test_id] != outcome:
            assert f"{test_id} could not be judged" in process.reason, (test_id, process.reason)
    return plain, process


def _passes_as_in_one_process(
    task: SimpleNamespace, workspace: dict[str, str], hidden: dict[str, str]
) -> None:
    """The task passes under plain pytest, and in process isolation as well."""
    _write(task.ws, workspace)
    _write(task.hidden, hidden)
    plain, process = _as_plain_or_inconclusive(task)
    assert plain.passed, plain.output_tail[-3000:]
    assert process.passed, f"{process.reason}\n{process.output_tail[-3000:]}"


def _both_pass(
    task: SimpleNamespace, workspace: dict[str, str], hidden: dict[str, str]
) -> tuple[Verdict, Verdict]:
    """Every hidden test passes in both isolations, as under plain pytest: the verdicts."""
    _write(task.ws, workspace)
    _write(task.hidden, hidden)
    plain, process = _as_plain_or_inconclusive(task)
    assert plain.passed, plain.reason
    assert process.passed, process.reason
    return plain, process


def test_a_test_that_meets_a_limit_thousands_of_times_leaves_room_for_later_ones(
    task: SimpleNamespace,
) -> None:
    _write(
        task.ws,
        {
            "later.py": (
                "import threading\n\n\ndef one():\n    return 1\n\n\n"
                "def in_thread(func):\n    out = []\n"
                "    worker = threading.Thread(target=lambda: out.append(func()))\n"
                "    worker.start()\n    worker.join()\n    return out\n"
            )
        },
    )
    _write(
        task.hidden,
        {
            "test_later.py": (
                "import tracemalloc\nimport later\n\n\n"
                "def test_traced():\n    tracemalloc.start()\n    try:\n"
                "        assert sum(later.one() for _ in range(10_001)) == 10_001\n"
                "    finally:\n        tracemalloc.stop()\n\n\n"
                "def test_thread():\n    assert later.in_thread(lambda: 2) == [2]\n"
            )
        },
    )
    plain, process = _as_plain_or_inconclusive(task)
    assert plain.passed
    assert process.inconclusive, process.reason
    assert "test_later.py::test_thread could not be judged: a thread of the workspace" in (
        process.reason
    )


def test_threads_of_the_test_that_use_workspace_objects_at_once_are_inconclusive(
    task: SimpleNamespace,
) -> None:
    _write(
        task.ws,
        {
            "box.py": (
                "import queue\n\n\nclass Box:\n"
                "    def __init__(self):\n        self.items = queue.Queue()\n\n"
                "    def put(self, item):\n        self.items.put(item)\n\n"
                "    def get(self):\n        return self.items.get(timeout=2)\n"
            )
        },
    )
    _write(
        task.hidden,
        {
            "test_box.py": (
                "import threading\nimport box\n\n\n"
                "def test_handed_between_threads():\n    b = box.Box()\n    got = []\n"
                "    reader = threading.Thread(target=lambda: got.append(b.get()))\n"
                "    reader.start()\n    b.put(1)\n    reader.join()\n    assert got == [1]\n\n\n"
                "def test_one_thread_after_another():\n    b = box.Box()\n    got = []\n"
                "    writer = threading.Thread(target=lambda: b.put(2))\n"
                "    writer.start()\n    writer.join()\n    assert b.get() == 2\n"
            )
        },
    )
    plain, process = _as_plain_or_inconclusive(task)
    assert plain.passed
    assert process.outcomes["test_box.py::test_one_thread_after_another"] == "passed"
    assert "test_box.py::test_handed_between_threads could not be judged: threads of the" in (
        process.reason
    )


DESCRIPTORS = (
    "import functools\n\n\n"
    "class counted:\n"
    "    def __init__(self, func):\n        self.func = func\n\n"
    "    def __set_name__(self, owner, name):\n        self.name = name\n\n"
    "    def __get__(self, obj, owner=None):\n"
    "        if obj is None:\n            return self\n"
    "        return functools.partial(self.func, obj)\n\n\n"
    "class cached:\n"
    "    def __init__(self, func):\n        self.func = func\n\n"
    "    def __get__(self, obj, owner=None):\n"
    "        if obj is None:\n            return self\n"
    "        value = obj.__dict__[self.func.__name__] = self.func(obj)\n"
    "        return value\n\n\n"
    "def double(self):\n    return 2 * self.n\n"
)


@pytest.mark.parametrize("wrong", [False, True])
def test_workspace_descriptors_on_a_test_class_bind_as_in_one_process(
    task: SimpleNamespace, wrong: bool
) -> None:
    source = DESCRIPTORS.replace("(self.func, obj)", "(self.func, None)") if wrong else DESCRIPTORS
    _write(task.ws, {"desc.py": source})
    _write(
        task.hidden,
        {
            "test_desc.py": (
                "import desc\n\n\n"
                "class Car:\n    n = 3\n    double = desc.double\n\n"
                "    @desc.counted\n    def honk(self, times):\n"
                "        return 'honk' * times * self.n\n\n"
                "    @desc.cached\n    def wheels(self):\n        return 4\n\n\n"
                "def test_a_descriptor_binds():\n    assert Car().honk(1) == 'honkhonkhonk'\n"
                "    assert Car.honk.name == 'honk'\n\n\n"
                "def test_a_workspace_function_binds():\n    assert Car().double() == 6\n\n\n"
                "def test_caching_into_the_instance():\n    car = Car()\n"
                "    assert car.wheels == 4\n    assert 'wheels' in vars(car)\n"
            )
        },
    )
    plain, process = _as_plain_or_inconclusive(task)
    assert plain.passed is not wrong
    binds = "test_desc.py::test_a_descriptor_binds"
    assert process.outcomes[binds] == ("failed" if wrong else "passed")
    assert process.outcomes["test_desc.py::test_a_workspace_function_binds"] == "passed"
    if not wrong:
        assert process.inconclusive, process.reason
        assert "test_desc.py::test_caching_into_the_instance could not be judged" in (
            process.reason
        )


def test_builtin_iterators_and_io_classes_are_recognised_as_in_one_process(
    task: SimpleNamespace,
) -> None:
    _write(
        task.ws,
        {
            "views.py": (
                "import io\n\n\ndef backwards(items):\n    return reversed(items)\n\n\n"
                "def keys(mapping):\n    return mapping.keys()\n\n\n"
                "class Spooled(io.BufferedIOBase):\n    pass\n\n\n"
                "class Plain:\n    pass\n"
            )
        },
    )
    _write(
        task.hidden,
        {
            "test_views.py": (
                "import io\nimport views\n\n\n"
                "def test_reversed_class():\n"
                "    assert views.backwards([1, 2]).__class__ == reversed([]).__class__\n"
                "    assert list(views.backwards([1, 2])) == [2, 1]\n\n\n"
                "def test_keys_class():\n"
                "    assert isinstance(views.keys({1: 2}), type({}.keys()))\n\n\n"
                "def test_io_base():\n    assert isinstance(views.Spooled(), io.IOBase)\n"
                "    assert isinstance(views.Spooled(), io.BufferedIOBase)\n"
                "    assert not isinstance(views.Plain(), io.IOBase)\n"
            )
        },
    )
    plain, process = _as_plain_or_inconclusive(task)
    assert plain.passed
    assert process.passed, process.reason


KEEPER = (
    "_cache = {}\nkept = []\n\n\n"
    "def first(items):\n    return items[0]\n\n\n"
    "def keep(items):\n    global kept\n    kept = items\n\n\n"
    "def kept_len():\n    return len(kept)\n\n\n"
    "def fill_kept():\n    kept.append(9)\n\n\n"
    "def once():\n    return _cache.setdefault('x', [1, 2])\n\n\n"
    "def twice():\n    x = [1]\n    return [x, x]\n"
)


@pytest.mark.parametrize("wrong", [False, True])
def test_a_list_that_crosses_is_the_same_list_on_both_sides(
    task: SimpleNamespace, wrong: bool
) -> None:
    source = KEEPER.replace("return items[0]", "return list(items[0])") if wrong else KEEPER
    _write(task.ws, {"keeper.py": source})
    _write(
        task.hidden,
        {
            "test_keeper.py": (
                "import keeper\n\n\n"
                "def test_handed_back():\n    x = [1]\n    assert keeper.first([x]) is x\n\n\n"
                "def test_never_invented():\n    x = [1]\n"
                "    assert keeper.first([[1]]) is not x\n\n\n"
                "def test_returned_twice():\n    assert keeper.once() is keeper.once()\n\n\n"
                "def test_shared_in_one_answer():\n    a, b = keeper.twice()\n"
                "    assert a is b\n\n\n"
                "def test_changed_by_the_test_after():\n    x = [1, 2]\n    keeper.keep(x)\n"
                "    x.pop()\n    assert keeper.kept_len() == 1\n\n\n"
                "def test_changed_by_the_workspace_later():\n    x = []\n    keeper.keep(x)\n"
                "    keeper.fill_kept()\n    assert x == [9]\n"
            )
        },
    )
    plain, process = _as_plain_or_inconclusive(task)
    assert plain.passed is not wrong
    assert process.outcomes == plain.outcomes
    assert process.passed is not wrong, process.reason


def test_the_environment_a_test_sets_is_the_workspaces_too(task: SimpleNamespace) -> None:
    reader = "import os\n\n\ndef read(name):\n    return os.environ.get(name)\n"
    _write(task.ws, {"env.py": reader})
    _write(
        task.hidden,
        {
            "test_env.py": (
                "import os\nimport env\n\n\n"
                "def test_set(monkeypatch):\n    monkeypatch.setenv('LDD_SEEN', 'eggs')\n"
                "    assert env.read('LDD_SEEN') == 'eggs'\n\n\n"
                "def test_undone():\n    assert env.read('LDD_SEEN') is None\n\n\n"
                "def test_set_directly():\n    os.environ['LDD_SEEN'] = 'ham'\n"
                "    try:\n        assert env.read('LDD_SEEN') == 'ham'\n"
                "    finally:\n        del os.environ['LDD_SEEN']\n"
            )
        },
    )
    plain, process = _as_plain_or_inconclusive(task)
    assert plain.passed
    assert process.passed, process.reason


def test_workspace_code_that_looks_past_its_own_objects_is_inconclusive(
    task: SimpleNamespace,
) -> None:
    _write(
        task.ws,
        {
            "looks.py": (
                "import gc\nimport sys\nimport weakref\n\n\n"
                "def caller():\n    return sys._getframe(1).f_code.co_name\n\n\n"
                "def own():\n    return sys._getframe(0).f_code.co_name\n\n\n"
                "def count(cls):\n"
                "    return sum(isinstance(o, cls) for o in gc.get_objects())\n\n\n"
                "_seen = weakref.WeakKeyDictionary()\n\n\n"
                "def remember(obj):\n    _seen[obj] = 1\n\n\n"
                "def remembered():\n    return len(_seen)\n"
            )
        },
    )
    _write(
        task.hidden,
        {
            "test_looks.py": (
                "import looks\n\n\nclass Thing:\n    pass\n\n\n"
                "def test_caller():\n    assert looks.caller() == 'test_caller'\n\n\n"
                "def test_own_frame():\n    assert looks.own() == 'own'\n\n\n"
                "def test_gc():\n    things = [Thing(), Thing()]\n"
                "    assert looks.count(Thing) >= 2\n\n\n"
                "def test_weakly_held():\n    thing = Thing()\n    looks.remember(thing)\n"
                "    assert looks.remembered() >= 1\n"
            )
        },
    )
    plain, process = _as_plain_or_inconclusive(task)
    assert plain.passed
    assert process.outcomes["test_looks.py::test_own_frame"] == "passed"
    assert process.inconclusive, process.reason


def test_the_id_of_a_workspace_object_taken_by_a_test_is_a_limit(task: SimpleNamespace) -> None:
    _write(
        task.ws,
        {
            "holders.py": (
                "import threading\n\n\nclass Holder:\n"
                "    def __init__(self, lock):\n        self.lock = lock\n\n\n"
                "def holders(n):\n    lock = threading.Lock()\n"
                "    return [Holder(lock) for _ in range(n)]\n"
            )
        },
    )
    _write(
        task.hidden,
        {
            "test_holders.py": (
                "import copy\nimport holders\n\n\n"
                "def test_one_lock():\n"
                "    assert len({id(h.lock) for h in holders.holders(50)}) == 1\n\n\n"
                "def test_copied():\n    assert copy.deepcopy([1, 2]) == [1, 2]\n"
            )
        },
    )
    plain, process = _as_plain_or_inconclusive(task)
    assert plain.passed
    assert "test_holders.py::test_one_lock could not be judged: the test took the id()" in (
        process.reason
    )
    assert "test_copied could not be judged" not in process.reason


def test_a_class_is_ordered_as_its_own_methods_say(task: SimpleNamespace) -> None:
    _write(
        task.ws,
        {
            "ordered.py": (
                "import functools\n\n\n"
                "def ordering(cls):\n    return functools.total_ordering(cls)\n\n\n"
                "@functools.total_ordering\nclass Version:\n"
                "    def __init__(self, n):\n        self.n = n\n\n"
                "    def __eq__(self, other):\n        return self.n == other.n\n\n"
                "    def __gt__(self, other):\n        return self.n > other.n\n\n\n"
                "class Plain:\n    pass\n"
            )
        },
    )
    _write(
        task.hidden,
        {
            "test_ordered.py": (
                "import pytest\nimport ordered\n\n\n"
                "def test_workspace_ordering():\n"
                "    a, b = ordered.Version(1), ordered.Version(2)\n"
                "    assert a < b and b >= a and sorted([b, a]) == [a, b]\n\n\n"
                "def test_unordered():\n    with pytest.raises(TypeError):\n"
                "        ordered.Plain() < ordered.Plain()\n\n\n"
                "def test_ordering_a_test_class():\n"
                "    @ordered.ordering\n    class Number:\n"
                "        def __init__(self, n):\n            self.n = n\n\n"
                "        def __gt__(self, other):\n            return self.n > other\n\n"
                "    assert Number(3) < 5\n"
            )
        },
    )
    plain, process = _as_plain_or_inconclusive(task)
    assert plain.passed
    assert process.outcomes["test_ordered.py::test_workspace_ordering"] == "passed"
    assert process.outcomes["test_ordered.py::test_unordered"] == "passed"
    assert "test_ordered.py::test_ordering_a_test_class could not be judged" in process.reason


def test_the_weak_references_of_a_stand_in_are_not_the_objects(task: SimpleNamespace) -> None:
    _write(
        task.ws,
        {
            "refs.py": (
                "def callables(obj):\n    found = []\n    for name in dir(obj):\n"
                "        try:\n            value = getattr(obj, name)\n"
                "        except Exception:\n            continue\n"
                "        if callable(value) and name == '__weakref__':\n"
                "            found.append(name)\n    return found\n\n\n"
                "class Thing:\n    pass\n"
            )
        },
    )
    _write(
        task.hidden,
        {
            "test_refs.py": (
                "import refs\n\n\nclass Target:\n    pass\n\n\n"
                "class Oops(Exception):\n    pass\n\n\n"
                "def test_a_judge_object():\n    assert refs.callables(Target()) == []\n\n\n"
                "def test_a_judge_exception():\n    assert refs.callables(Oops()) == []\n\n\n"
                "def test_a_workspace_object():\n    assert refs.Thing().__weakref__ is None\n"
            )
        },
    )
    plain, process = _as_plain_or_inconclusive(task)
    assert plain.passed
    assert process.outcomes["test_refs.py::test_a_workspace_object"] == "passed"


def test_a_method_a_builtin_subclass_defines_again_is_its_own(task: SimpleNamespace) -> None:
    _write(
        task.ws,
        {
            "loud.py": (
                "class Loud(str):\n    def upper(self):\n        return 'LOUD'\n\n\n"
                "class Hollow(bytes):\n"
                "    def decode(self, *args):\n        return 'full'\n\n\n"
                "def loud():\n    return Loud('quiet')\n\n\n"
                "def hollow():\n    return Hollow()\n"
            )
        },
    )
    _write(
        task.hidden,
        {
            "test_loud.py": (
                "import loud\n\n\n"
                "def test_overridden():\n    assert loud.loud().upper() == 'LOUD'\n"
                "    assert loud.hollow().decode('utf-8') == 'full'\n\n\n"
                "def test_inherited():\n    assert loud.loud().lower() == 'quiet'\n"
                "    assert loud.hollow() == b''\n"
            )
        },
    )
    plain, process = _as_plain_or_inconclusive(task)
    assert plain.passed
    assert process.passed, process.reason


_CLOCK = """import datetime as dt


class FakeDatetime(dt.datetime):
    def label(self):
        return "fake!"

    def __add__(self, other):
        got = dt.datetime.__add__(self, other)
        return FakeDatetime(got.year, got.month, got.day)


class Days(dt.timedelta):
    pass


def fake(*args):
    return FakeDatetime(*args)
"""


def test_datetime_subclasses_cross_as_datetimes_both_ways(task: SimpleNamespace) -> None:
    """freezegun's FakeDatetime handed to workspace code, pendulum-like ones coming back."""
    _both_pass(
        task,
        {
            "clock.py": _CLOCK,
            "when.py": (
                "import datetime as dt\n\nimport clock\n\n\n"
                "def describe(value):\n    if isinstance(value, dt.datetime):\n"
                "        return f'datetime {value.date().isoformat()}'\n"
                "    return f'other {value!r}'\n\n\n"
                "def label(value):\n    return value.label()\n\n\n"
                "def later(value, days):\n    return value + dt.timedelta(days=days)\n\n\n"
                "def own():\n    return clock.fake(2020, 2, 2), clock.Days(2)\n"
            ),
        },
        {
            "frozen.py": _CLOCK,
            "test_when.py": (
                "import datetime as dt\n\nimport frozen\nimport when\n\n"
                "NOW = frozen.fake(2020, 2, 2)\n\n\n"
                "def test_a_subclass_is_a_datetime_there():\n"
                "    assert when.describe(NOW) == 'datetime 2020-02-02'\n"
                "    assert when.describe(frozen.Days(1)) .startswith('other')\n\n\n"
                "def test_its_own_methods_answer():\n"
                "    assert when.label(NOW) == 'fake!'\n"
                "    assert type(when.later(NOW, 1)).__name__ == 'FakeDatetime'\n"
                "    assert when.later(NOW, 1) == dt.datetime(2020, 2, 3)\n\n\n"
                "def test_the_workspaces_own_come_back_as_datetimes():\n"
                "    moment, span = when.own()\n"
                "    assert isinstance(moment, dt.datetime) and isinstance(span, dt.timedelta)\n"
                "    assert moment - dt.datetime(2020, 2, 1) == dt.timedelta(days=1)\n"
                "    assert span == dt.timedelta(days=2) and span.days == 2\n"
                "    assert moment.label() == 'fake!'\n"
            ),
        },
    )


_CLI = """import argparse
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(prog="tool")
    parser.add_argument("name")
    parser.add_argument("--loud", action="store_true")
    args = parser.parse_args(argv)
    text = f"hello {args.name}"
    print(text.upper() if args.loud else text)
    return 0
"""
_CLI_TESTS = """import sys

import pytest

import tool


def test_argv_as_the_test_set_it(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["tool", "ada", "--loud"])
    assert tool.main() == 0
    assert capsys.readouterr().out == "HELLO ADA\\n"


def test_assigned_argv(capsys):
    saved = sys.argv
    sys.argv = ["tool", "bob"]
    try:
        tool.main()
    finally:
        sys.argv = saved
    assert capsys.readouterr().out == "hello bob\\n"


def test_an_argparse_error_exits(capsys):
    with pytest.raises(SystemExit) as exited:
        tool.main([])
    assert exited.value.code == 2
    assert "the following arguments are required: name" in capsys.readouterr().err


def test_help_exits_zero():
    with pytest.raises(SystemExit) as exited:
        tool.main(["--help"])
    assert exited.value.code == 0
"""


def test_a_cli_reads_the_tests_argv_and_exits_as_in_one_process(task: SimpleNamespace) -> None:
    """sys.argv set by the test reaches the subject; SystemExit reaches pytest.raises."""
    _both_pass(task, {"tool.py": _CLI}, {"test_tool.py": _CLI_TESTS})


_ROT = """import codecs


def _shift(text, by):
    return "".join(chr((ord(c) - 97 + by) % 26 + 97) if c.islower() else c for c in text)


def encode(text, errors="strict"):
    return _shift(text, 3).encode("ascii"), len(text)


def decode(data, errors="strict"):
    return _shift(bytes(data).decode("ascii"), -3), len(data)


class IncrementalEncoder(codecs.IncrementalEncoder):
    def encode(self, text, final=False):
        return encode(text)[0]


def search(name):
    if name == "caesar3":
        return codecs.CodecInfo(encode, decode, name="caesar3",
                                incrementalencoder=IncrementalEncoder)
    return None


codecs.register(search)
"""
_ROT_TESTS = """import codecs

import pytest

import rot


def test_the_workspaces_codec_is_found():
    assert "abc".encode("caesar3") == b"def"
    assert b"def".decode("caesar3") == "abc"
    assert codecs.decode(b"khoor", "caesar3") == "hello"
    assert codecs.lookup("caesar3").incrementalencoder is rot.IncrementalEncoder


def test_an_unknown_codec_is_still_unknown():
    with pytest.raises(LookupError):
        "abc".encode("caesar4")
"""


def test_a_codec_the_workspace_registers_is_found_by_the_tests(task: SimpleNamespace) -> None:
    """idna's `import idna.codec` registers 'idna2008' in the subject; the test encodes."""
    _both_pass(task, {"rot.py": _ROT}, {"test_rot.py": _ROT_TESTS})


_ZONES = """import datetime as dt
import time


class Fixed(dt.tzinfo):
    def utcoffset(self, when):
        return dt.timedelta(hours=1)

    def dst(self, when):
        return dt.timedelta(0)


def same(value):
    return value


def shifted(value):
    return value + dt.timedelta(0)


def local_zone_name():
    return time.tzname[0]


def made():
    return dt.datetime(2020, 1, 2), dt.date(2020, 1, 3)
"""
_ZONES_TESTS = """import datetime as dt
import os
import time

import zones


def test_a_datetime_round_trip_keeps_identity():
    aware = dt.datetime(2020, 1, 2, 3, 4, tzinfo=zones.Fixed())
    assert zones.same(aware) is aware
    naive = dt.datetime(2020, 1, 2)
    assert zones.same(naive) is naive
    span = dt.timedelta(days=3)
    assert zones.same(span) is span
    assert zones.shifted(naive) is not naive
    assert zones.shifted(naive) == naive


def test_values_cross_while_a_test_froze_the_clock():
    real = dt.datetime

    class Frozen(real):
        pass

    dt.datetime = Frozen  # as freezegun does
    try:
        moment, day = zones.made()
        kept = dt.timedelta(days=1)
        assert zones.same(kept) is kept
    finally:
        dt.datetime = real
    assert moment == real(2020, 1, 2)
    assert day == dt.date(2020, 1, 3)


def test_tzset_reaches_the_workspace(monkeypatch):
    monkeypatch.setenv("TZ", "EST+05EDT,M3.2.0,M11.1.0")
    time.tzset()
    try:
        assert zones.local_zone_name() == "EST"
    finally:
        monkeypatch.undo()
        time.tzset()
"""


def test_datetimes_keep_identity_and_tzset_reaches_the_subject(task: SimpleNamespace) -> None:
    """dateutil's `resolve_imaginary(dt) is dt` and its tzlocal tests (TZ, time.tzset())."""
    _both_pass(task, {"zones.py": _ZONES}, {"test_zones.py": _ZONES_TESTS})


_HANDLERS = """def handle(func, handler):
    try:
        func()
    except ValueError:
        return handler()
    return "no error"


class Converting:
    def __enter__(self):
        return self

    def __exit__(self, etype, exc, tb):
        if exc is not None:
            new = RuntimeError("converted")
            context = new.__context__
            try:
                raise new
            finally:
                new.__context__ = context
        return False
"""
_HANDLERS_TESTS = """import pytest

import handlers


def boom():
    raise ValueError("boom")


def test_a_bare_raise_in_a_handler_reraises_what_the_workspace_handles():
    def handler():
        raise

    with pytest.raises(ValueError, match="boom"):
        handlers.handle(boom, handler)


def test_what_a_handler_raises_is_chained_to_it():
    def handler():
        raise KeyError("k")

    with pytest.raises(KeyError) as info:
        handlers.handle(boom, handler)
    assert isinstance(info.value.__context__, ValueError)


def test_an_exit_that_raises_keeps_the_chaining_it_set():
    with pytest.raises(RuntimeError) as info:
        with handlers.Converting():
            raise KeyError("k")
    assert info.value.__context__ is None


def test_a_handler_that_returns():
    assert handlers.handle(boom, lambda: 42) == 42
    assert handlers.handle(lambda: None, lambda: 42) == "no error"
"""


def test_a_callback_in_a_workspace_except_clause_handles_its_exception(
    task: SimpleNamespace,
) -> None:
    """exceptiongroup's catch() calls the test's handlers inside its except clause."""
    _both_pass(task, {"handlers.py": _HANDLERS}, {"test_handlers.py": _HANDLERS_TESTS})


_NOISY = """import logging

log = logging.getLogger(__name__)


class Opaque:
    def __repr__(self):
        return "<opaque>"


def work(x):
    log.warning("working on %s", x)
    log.debug("details %d", 42)
    return x * 2


def fail():
    try:
        1 / 0
    except ZeroDivisionError:
        log.exception("it broke")


def tagged():
    log.info("tagged %r", Opaque(), extra={"user": "bob"})
"""
_NOISY_TESTS = """import logging

import noisy


def test_records_at_the_level_caplog_sets(caplog):
    with caplog.at_level(logging.DEBUG):
        assert noisy.work(3) == 6
    assert "working on 3" in caplog.text
    assert [r.levelname for r in caplog.records] == ["WARNING", "DEBUG"]
    assert caplog.records[0].name == "noisy"
    assert caplog.records[0].msg == "working on %s"
    assert caplog.records[0].args == (3,)


def test_the_default_level_leaves_debug_out(caplog):
    noisy.work(1)
    assert [r.getMessage() for r in caplog.records] == ["working on 1"]


def test_a_named_logger_level(caplog):
    caplog.set_level(logging.INFO, logger="noisy")
    noisy.tagged()
    assert caplog.records[0].getMessage() == "tagged <opaque>"
    assert caplog.records[0].user == "bob"


def test_an_exception_is_logged_with_its_traceback(caplog):
    noisy.fail()
    assert "ZeroDivisionError" in caplog.text
    assert caplog.records[0].levelno == logging.ERROR


def test_disabled_logging_records_nothing(caplog):
    logging.disable(logging.CRITICAL)
    try:
        noisy.work(2)
    finally:
        logging.disable(logging.NOTSET)
    assert caplog.records == []
"""


def test_what_workspace_loggers_log_reaches_caplog(task: SimpleNamespace) -> None:
    """Levels set by the test reach the subject; its records reach the test's handlers."""
    _both_pass(task, {"noisy.py": _NOISY}, {"test_noisy.py": _NOISY_TESTS})


@pytest.mark.parametrize(
    "fields",
    [
        {"name": "x", "levelno": 30, "msg": "m", "getMessage": "forged"},
        {"name": "x", "levelno": 30, "msg": "m", "args": (object,)},
        {"name": 3, "levelno": 30, "msg": "m"},
        {"name": "x", "levelno": "30", "msg": "m"},
        {"name": "x", "levelno": 30, "msg": "m %s", "args": ["list"], "_private": 1},
    ],
)
def test_a_forged_log_record_is_taken_as_data_or_dropped(
    fields: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    sync.logged(fields)
    for record in caplog.records:
        assert record.getMessage() in ("m", "m %s")
        assert not hasattr(record, "_private")
        assert record.args in (None, (), {})


def test_a_workspace_time_zone_is_a_time_zone(task: SimpleNamespace) -> None:
    _write(
        task.ws,
        {
            "zones.py": (
                "import datetime\n\n\nclass Fixed(datetime.tzinfo):\n"
                "    def utcoffset(self, dt):\n        return datetime.timedelta(hours=-5)\n\n"
                "    def dst(self, dt):\n        return datetime.timedelta(0)\n\n"
                "    def tzname(self, dt):\n        return 'EST'\n\n\nEastern = Fixed()\n"
            )
        },
    )
    _write(
        task.hidden,
        {
            "test_zones.py": (
                "import datetime\nimport zones\n\n\n"
                "def test_aware():\n"
                "    noon = datetime.datetime(2011, 11, 6, 12, tzinfo=zones.Eastern)\n"
                "    assert noon.utcoffset() == datetime.timedelta(hours=-5)\n"
                "    assert noon.tzname() == 'EST'\n"
                "    assert isinstance(zones.Eastern, datetime.tzinfo)\n\n\n"
                "def test_converted():\n"
                "    utc = datetime.datetime(2011, 11, 6, 17, tzinfo=datetime.timezone.utc)\n"
                "    assert utc.astimezone(zones.Eastern).hour == 12\n"
            )
        },
    )
    plain, process = _as_plain_or_inconclusive(task)
    assert plain.passed
    assert process.passed, process.reason


def test_every_test_of_a_large_suite_may_meet_a_limit(task: SimpleNamespace) -> None:
    _write(task.ws, {"many.py": "def name_of(thing):\n    return thing.__name__\n"})
    _write(
        task.hidden,
        {
            "test_many.py": (
                "import os\nimport pytest\nimport many\n\n\n"
                "@pytest.mark.parametrize('n', range(250))\n"
                "def test_module(n):\n    assert many.name_of(os) == 'os'\n"
            )
        },
    )
    # Each of the 250 failures is explained by its limit, past the first 200 too.
    verdict = run_hidden_tests(task.ws, task.hidden, isolation="process")
    assert set(verdict.outcomes.values()) == {"failed"}
    assert verdict.inconclusive, verdict.reason
    assert not verdict.tampered


WORDS_MODULE = (
    "import os\n\n\n"
    "def shown(text):\n    return repr(set(text.split()))\n\n\n"
    "def hashed(text):\n    return hash(text)\n\n\n"
    "def seed_in_environment():\n    return 'PYTHONHASHSEED' in os.environ\n"
)
WORDS_TESTS = (
    "import os\nimport re\nimport words\n\n"
    "TEXT = ' '.join(f'w{n}' for n in range(40))\n\n\n"
    "def test_a_set_of_strings_iterates_in_one_order():\n"
    "    assert words.shown(TEXT) == repr(set(TEXT.split()))\n"
    "    assert words.hashed('ldd') == hash('ldd')\n\n\n"
    "def test_the_seed_is_no_variable_of_either():\n"
    "    assert not words.seed_in_environment()\n"
    "    assert 'PYTHONHASHSEED' not in os.environ\n"
)


def test_the_judge_and_the_subject_hash_strings_alike_with_a_seed_per_run(
    task: SimpleNamespace,
) -> None:
    _write(task.ws, {"words.py": WORDS_MODULE})
    shown = WORDS_TESTS + "\n\ndef test_shows_the_seed():\n    assert hash('ldd') == 'seed'\n"
    _write(task.hidden, {"test_words.py": shown})
    hashes = set()
    for _ in range(2):
        verdict = run_hidden_tests(task.ws, task.hidden, isolation="process")
        assert dict(verdict.outcomes) == {
            "test_words.py::test_a_set_of_strings_iterates_in_one_order": "passed",
            "test_words.py::test_the_seed_is_no_variable_of_either": "passed",
            "test_words.py::test_shows_the_seed": "failed",
        }, verdict.output_tail[-3000:]
        found = re.search(r"assert (-?\d+) == 'seed'", verdict.output_tail)
        assert found is not None, verdict.output_tail[-3000:]
        hashes.add(found.group(1))
    # A seed of each run's own (a cold judge), never a constant.
    assert len(hashes) == 2


def test_a_warm_judge_and_its_subject_hash_strings_alike(tmp_path: Path) -> None:
    pairs = []
    for name in ("one", "two"):
        ws = _write(tmp_path / name / "ws", {"words.py": WORDS_MODULE})
        hidden = _write(tmp_path / name / "hidden", {"test_words.py": WORDS_TESTS})
        pairs.append((ws, hidden))
    verdicts = dict(grade_many(pairs, isolation="process"))
    for verdict in verdicts.values():
        assert verdict.passed, f"{verdict.reason}\n{verdict.output_tail[-3000:]}"
        assert "started cold" not in verdict.reason


SAME_MODULE = (
    "NAME = ''.join(['na', 'me'])\n\n\n"
    "def identity(value):\n    return value\n\n\n"
    "def copy_of(text):\n    return ''.join(list(text))\n\n\n"
    "def pair(a, b):\n    return a, b\n\n\n"
    "def are_same(a, b):\n    return a is b\n\n\n"
    "def is_name(value):\n    return value is NAME\n\n\n"
    "def visit(items, visit):\n    for item in items:\n        visit(item)\n"
)
SAME_TESTS = (
    "import same\n\n\n"
    "def test_a_value_that_makes_a_round_trip_is_the_same_object():\n"
    "    target = ''.join(['tar', 'get'])\n"
    "    assert same.identity(target) is target\n"
    "    assert same.identity([target])[0] is target\n"
    "    seen = []\n"
    "    same.visit(['target', target], lambda v: seen.append(v is target))\n"
    "    assert seen == [False, True]\n"
    "    frozen = frozenset({1, 'x'})\n"
    "    assert same.identity(frozen) is frozen\n"
    "    data = b'da' * 3\n"
    "    assert same.identity(data) is data\n\n\n"
    "def test_equal_values_stay_distinct_objects():\n"
    "    a, b = ''.join(['ab', 'c']), ''.join(['a', 'bc'])\n"
    "    x, y = same.pair(a, b)\n"
    "    assert x is a and y is b\n"
    "    assert same.are_same(a, a)\n"
    "    assert not same.are_same(a, b)\n"
    "    assert same.copy_of(a) == a\n"
    "    assert same.copy_of(a) is not a\n\n\n"
    "def test_a_workspace_value_is_the_same_object_when_it_comes_back():\n"
    "    assert same.is_name(same.NAME)\n"
    "    assert not same.is_name(''.join(['na', 'me']))\n"
)


def test_a_string_that_makes_a_round_trip_is_the_same_object(task: SimpleNamespace) -> None:
    _passes_as_in_one_process(task, {"same.py": SAME_MODULE}, {"test_same.py": SAME_TESTS})
    # A workspace that hands back an equal copy fails as in one process.
    copying = "def identity(value):\n    return value[:1] + value[1:]\n"
    _write(task.ws, {"same.py": SAME_MODULE.replace("def identity(value):\n", copying, 1)})
    plain, process = _as_plain_or_inconclusive(task)
    assert dict(plain.outcomes) == dict(process.outcomes)
    round_trip = "test_same.py::test_a_value_that_makes_a_round_trip_is_the_same_object"
    assert process.outcomes[round_trip] == "failed"
    assert not process.passed
    assert not process.inconclusive


def test_a_string_named_back_is_the_original_only_when_it_is_the_value_that_was_sent() -> None:
    judge, subject = containers.Values(), containers.Values()

    def codec(values: containers.Values) -> tuple[wire.Encoder, wire.Decoder]:
        def handle(obj: object) -> tuple[bytes, int]:
            return b"H", id(obj)

        encoder = wire.Encoder(handle, mark=lambda c: None, mark_value=values.mark)
        decoder = wire.Decoder({}, marked=lambda t, n, v: v, marked_value=values.marked)
        return encoder, decoder

    to_subject, from_judge = codec(judge)[0], codec(subject)[1]
    to_judge, from_subject = codec(subject)[0], codec(judge)[1]
    sent = "".join(["tar", "get"])
    other = "".join(["oth", "er"])
    received = from_judge.decode(to_subject.encode((sent, other)))
    assert received == (sent, other)
    assert from_subject.decode(to_judge.encode(received))[0] is sent
    # The same str sent again is the same copy there.
    assert from_judge.decode(to_subject.encode(sent)) is received[0]
    # A forged number: an unknown one, or one of another value, is a plain copy.
    forged = wire.Encoder(lambda obj: (b"H", 0), mark_value=lambda v: (b"M", 99))
    assert from_subject.decode(forged.encode(sent)) is not sent
    forged = wire.Encoder(lambda obj: (b"H", 0), mark_value=lambda v: (b"M", 1))
    assert from_subject.decode(forged.encode(other)) is not sent
    assert from_subject.decode(forged.encode(sent)) is sent
    judge.forget()
    assert from_subject.decode(forged.encode(sent)) is not sent


OWNED_MODULE = (
    "class Money:\n"
    "    amount: int\n\n"
    "    def __init__(self, amount):\n        self.amount = amount\n\n"
    "    def __eq__(self, other):\n"
    "        '''Equal amounts.'''\n"
    "        return isinstance(other, Money) and other.amount == self.amount\n\n"
    "    __hash__ = None\n\n"
    "    def __call__(self, x: int) -> str:\n        return str(x)\n\n\n"
    "def annotated(x: int) -> str:\n    return str(x)\n\n\n"
    "def annotations_of(cls):\n    return cls.__dict__.get('__annotations__', {})\n"
)
OWNED_TESTS = (
    "import owned\n\n\n"
    "def test_a_special_method_read_off_a_class_or_object_is_the_owners():\n"
    "    assert owned.Money.__eq__.__doc__ == 'Equal amounts.'\n"
    "    assert owned.Money.__eq__.__name__ == '__eq__'\n"
    "    assert owned.Money.__hash__ is None\n"
    "    assert owned.Money(1).__call__.__annotations__ == {'x': int, 'return': str}\n"
    "    assert owned.Money(1) == owned.Money(1)\n\n\n"
    "def test_annotations_and_the_class_dict_are_the_owners():\n"
    "    assert owned.annotated.__annotations__ == {'x': int, 'return': str}\n"
    "    assert owned.Money.__annotations__ == {'amount': int}\n"
    "    assert owned.Money.__dict__['__annotations__'] == {'amount': int}\n"
    "    assert '__eq__' in owned.Money.__dict__\n\n\n"
    "def test_workspace_code_reads_a_test_class_as_it_is():\n"
    "    class Point:\n        x: int\n        y: str\n\n"
    "    assert owned.annotations_of(Point) == {'x': int, 'y': str}\n"
)


def test_special_methods_annotations_and_dict_of_a_class_are_read_at_its_owner(
    task: SimpleNamespace,
) -> None:
    _passes_as_in_one_process(task, {"owned.py": OWNED_MODULE}, {"test_owned.py": OWNED_TESTS})


def test_subclassing_a_workspace_class_beside_another_metaclass_is_a_limit(
    task: SimpleNamespace,
) -> None:
    protocol = "import typing\n\n\nclass Base(typing.Protocol):\n    def size(self) -> int: ...\n"
    _write(task.ws, {"base.py": protocol})
    _write(
        task.hidden,
        {
            "test_base.py": (
                "import typing\nimport base\n\n\n"
                "def test_with_a_protocol():\n"
                "    class Foo(base.Base, typing.Protocol):\n        pass\n"
            )
        },
    )
    plain, process = _as_plain_or_inconclusive(task)
    assert plain.passed
    assert process.inconclusive, process.reason
    assert "cannot subclass the workspace class Base" in process.reason


TYPED_MODULE = (
    "import typing\n\n"
    "T = typing.TypeVar('T')\n\n\n"
    "def maybe(x: typing.Optional[int]) -> int | None:\n    return x\n\n\n"
    "def same(x: T) -> T:\n    return x\n"
)
TYPED_TESTS = (
    "import typing\nimport typed\n\n\n"
    "def test_unions_cross_as_themselves():\n"
    "    hints = typed.maybe.__annotations__\n"
    "    assert hints == {'x': typing.Optional[int], 'return': int | None}\n\n\n"
    "def test_a_type_variable_is_one():\n"
    "    t = typed.same.__annotations__['x']\n"
    "    assert isinstance(t, typing.TypeVar)\n"
    "    assert typed.same.__annotations__ == {'x': t, 'return': t}\n"
    "    assert t is typed.T\n"
)


def test_unions_and_type_variables_of_annotations_cross(task: SimpleNamespace) -> None:
    _passes_as_in_one_process(task, {"typed.py": TYPED_MODULE}, {"test_typed.py": TYPED_TESTS})


FORMS_MODULE = (
    "import typing\n\n"
    "Code = typing.Literal['too_long', 'empty', 3]\n"
    "Rows = typing.List[typing.Tuple[int, ...]]\n"
    "Handler = typing.Callable[[str, int], typing.Optional[bool]]\n"
    "Thunk = typing.Callable[[], int]\n"
    "Meters = typing.Annotated[float, 'm']\n\n\n"
    "def parts(form):\n    return typing.get_origin(form), typing.get_args(form)\n\n\n"
    "def ascii_text(data):\n    return str(data, 'ascii')\n\n\n"
    "def first_byte(data):\n    return data[0], len(data), data.readonly\n"
)
FORMS_TESTS = (
    "import typing\nimport forms\n\n\n"
    "def test_the_arguments_of_a_workspace_literal():\n"
    "    assert typing.get_args(forms.Code) == ('too_long', 'empty', 3)\n"
    "    assert forms.Code == typing.Literal['too_long', 'empty', 3]\n\n\n"
    "def test_generic_callable_and_annotated_forms():\n"
    "    assert typing.get_args(forms.Rows) == (typing.Tuple[int, ...],)\n"
    "    assert typing.get_origin(forms.Handler) is typing.get_origin(typing.Callable)\n"
    "    assert forms.Handler == typing.Callable[[str, int], typing.Optional[bool]]\n"
    "    assert typing.get_args(forms.Thunk) == ([], int)\n"
    "    assert forms.Meters.__metadata__ == ('m',)\n\n\n"
    "def test_forms_of_the_test_reach_the_workspace_as_forms():\n"
    "    assert forms.parts(typing.Dict[str, int]) == (dict, (str, int))\n"
    "    assert forms.parts(typing.Literal[1, 'a']) == (typing.Literal, (1, 'a'))\n\n\n"
    "def test_a_read_only_memoryview_is_a_buffer_there():\n"
    "    assert forms.ascii_text(memoryview(b'example.com')) == 'example.com'\n"
    "    assert forms.first_byte(memoryview(b'xyz')) == (120, 3, True)\n"
)


def test_typing_forms_and_read_only_memoryviews_cross_as_themselves(
    task: SimpleNamespace,
) -> None:
    _passes_as_in_one_process(task, {"forms.py": FORMS_MODULE}, {"test_forms.py": FORMS_TESTS})


ARITY_MODULE = (
    "import traceback\n\n\n"
    "def attempt(fn, *args, **kwargs):\n"
    "    try:\n        return ('ok', fn(*args, **kwargs))\n"
    "    except TypeError as exc:\n"
    "        return ('TypeError', str(exc), len(traceback.extract_tb(exc.__traceback__)))\n\n\n"
    "def call_trimmed(fn, *args):\n"
    "    # pyparsing's _trim_arity: drop leading arguments while the call itself fails\n"
    "    for start in range(len(args) + 1):\n"
    "        try:\n            return fn(*args[start:])\n"
    "        except TypeError as exc:\n"
    "            if len(traceback.extract_tb(exc.__traceback__)) > 1:\n                raise\n"
    "    raise TypeError('no arity fits')\n"
)
ARITY_TESTS = (
    "import traceback\nimport pytest\nimport arity\n\n"
    "# The workspace's attempt(), run here: what one process gives.\n"
    "def local(fn, *args, **kwargs):\n"
    "    try:\n        return ('ok', fn(*args, **kwargs))\n"
    "    except TypeError as exc:\n"
    "        return ('TypeError', str(exc), len(traceback.extract_tb(exc.__traceback__)))\n\n\n"
    "def test_binding_matches_one_process():\n"
    "    def f(a, b=2, /, c=3, *rest, d, e=5, **kw):\n"
    "        return (a, b, c, rest, d, e, kw)\n\n"
    "    def g(*, k):\n        return k\n\n"
    "    def h(x, /):\n        return x\n\n"
    "    calls = [\n"
    "        (f, (1,), {'d': 4}), (f, (1, 2, 3, 4, 5), {'d': 6, 'z': 7}),\n"
    "        (f, (1,), {'c': 9, 'd': 1}), (f, (), {}), (f, (1, 2), {'d': 1, 'a': 3}),\n"
    "        (f, (1,), {}), (f, (1,), {'c': 1, 'd': 2, 'e': 3}),\n"
    "        (lambda t: t * 2, (1, 2, 3), {}), (lambda t: t * 2, (4,), {}),\n"
    "        (g, (1,), {}), (g, (), {'k': 8}), (h, (), {'x': 1}), (h, (5,), {}),\n"
    "    ]\n"
    "    for fn, args, kwargs in calls:\n"
    "        assert arity.attempt(fn, *args, **kwargs) == local(fn, *args, **kwargs)\n\n\n"
    "def test_an_error_inside_the_function_is_not_a_binding_error():\n"
    "    def broken(t):\n        raise TypeError('inside')\n\n"
    "    with pytest.raises(TypeError, match='inside'):\n"
    "        arity.call_trimmed(broken, 's', 0, 21)\n\n\n"
    "def test_arities_are_trimmed_as_in_one_process():\n"
    "    def double(t):\n        return t * 2\n\n"
    "    assert arity.call_trimmed(double, 's', 0, 21) == 42\n"
    "    assert arity.call_trimmed(lambda: 7, 's', 0, 21) == 7\n"
)


def test_a_judge_function_binds_its_arguments_in_the_subject_as_in_one_process(
    task: SimpleNamespace,
) -> None:
    # pyparsing calls parse actions with fewer arguments while the call itself fails
    # with a TypeError whose traceback holds one frame.
    _passes_as_in_one_process(task, {"arity.py": ARITY_MODULE}, {"test_arity.py": ARITY_TESTS})


SHAPES_MODULE = (
    "class Sentinel(type):\n"
    "    def __new__(cls, name, bases, namespace, **kwds):\n"
    "        made = super().__new__(cls, name, bases, namespace, **kwds)\n"
    "        made.__class__ = made  # h11's sentinels: their own metaclass\n"
    "        return made\n\n"
    "    def __repr__(self):\n        return self.__name__\n\n\n"
    "class CLIENT(Sentinel, metaclass=Sentinel):\n    pass\n\n\n"
    "def same(x):\n    return x\n\n\n"
    "class Buffer:\n"
    "    def __init__(self):\n        self.data = bytearray()\n\n"
    "    def __iadd__(self, more):\n        self.data += more\n        return self\n\n"
    "    def __bytes__(self):\n        return bytes(self.data)\n\n\n"
    "class LocalError(Exception):\n"
    "    def reraise_as_remote(self):\n"
    "        self.__class__ = RemoteError\n        raise self\n\n\n"
    "class RemoteError(LocalError):\n    pass\n\n\n"
    "class Lazy:\n"
    "    def become(self):\n        self.__class__ = Ready\n        return self\n\n\n"
    "class Ready(Lazy):\n    def value(self):\n        return 42\n"
)
SHAPES_TESTS = (
    "import shapes\n\n\n"
    "def test_a_class_that_is_its_own_metaclass():\n"
    "    assert repr(shapes.CLIENT) == 'CLIENT'\n"
    "    assert shapes.same(shapes.CLIENT) is shapes.CLIENT\n\n\n"
    "def test_the_bytes_of_a_workspace_object():\n"
    "    b = shapes.Buffer()\n    b += b'123'\n    assert bytes(b) == b'123'\n\n\n"
    "def test_an_exception_raised_again_as_another_class():\n"
    "    try:\n"
    "        try:\n            raise shapes.LocalError('a')\n"
    "        except shapes.LocalError as exc:\n            exc.reraise_as_remote()\n"
    "    except shapes.RemoteError as again:\n"
    "        assert type(again) is shapes.RemoteError\n"
    "        assert again.args == ('a',)\n\n\n"
    "def test_an_object_that_changes_its_class():\n"
    "    lazy = shapes.Lazy()\n"
    "    assert lazy.become().value() == 42\n"
    "    assert type(lazy) is shapes.Ready\n"
)


def test_what_h11_does_with_its_classes_works_across(task: SimpleNamespace) -> None:
    # h11: sentinels that are their own metaclass, a buffer read with bytes(), an
    # exception that changes its class and is raised again.
    _passes_as_in_one_process(task, {"shapes.py": SHAPES_MODULE}, {"test_shapes.py": SHAPES_TESTS})


PASSING_ON_MODULE = (
    "def join(parts):\n    return '/'.join(part for part in parts)\n\n\n"
    "def fill(doc):\n    doc['missing']['child'] = 1\n\n\n"
    "def choices(kind):\n"
    "    import enum\n\n"
    "    return [e.value for e in kind] if issubclass(kind, enum.Enum) else None\n"
)
PASSING_ON_TESTS = (
    "import enum\nfrom collections import defaultdict\n\nimport pytest\nimport passing\n\n\n"
    "KINDS = [KeyboardInterrupt, SystemExit, GeneratorExit, ValueError]\n\n\n"
    "@pytest.mark.parametrize('kind', KINDS)\n"
    "def test_the_tests_own_exception_comes_back_as_itself(kind):\n"
    "    error = kind()\n\n"
    "    def parts():\n        yield 'valid'\n        raise error\n\n"
    "    with pytest.raises(kind) as caught:\n        passing.join(parts())\n"
    "    assert caught.value is error\n\n\n"
    "def test_a_defaultdict_filled_by_the_workspace():\n"
    "    doc = defaultdict(dict)\n    passing.fill(doc)\n"
    "    assert dict(doc) == {'missing': {'child': 1}}\n\n\n"
    "def test_an_enum_class_of_the_test():\n"
    "    class Choice(enum.Enum):\n        EASY = 1\n        HARD = 2\n\n"
    "    assert passing.choices(Choice) == [1, 2]\n"
)


def test_what_crosses_as_a_copy_or_a_stand_in_is_inconclusive_if_the_test_fails(
    task: SimpleNamespace,
) -> None:
    # jsonpointer fills a defaultdict of the test's; voluptuous asks whether the test's
    # class is an Enum.  Both pass in one process; in process isolation the first is a
    # copy and the second a stand-in, so each test cannot be judged (never failed).
    # The test's own KeyboardInterrupt, raised again by workspace code, is itself.
    _write(task.ws, {"passing.py": PASSING_ON_MODULE})
    _write(task.hidden, {"test_passing.py": PASSING_ON_TESTS})
    plain, process = _as_plain_or_inconclusive(task)
    assert plain.passed, plain.output_tail[-3000:]
    detail = f"{process.reason}\n{process.output_tail[-3000:]}"
    assert process.inconclusive, detail
    for kind in ("KeyboardInterrupt", "SystemExit", "GeneratorExit", "ValueError"):
        assert (
            process.outcomes[
                f"test_passing.py::test_the_tests_own_exception_comes_back_as_itself[{kind}]"
            ]
            == "passed"
        ), detail
    assert "after handing workspace code a defaultdict, which crosses as a copy" in detail
    assert "after handing workspace code an Enum class of the test" in detail


LINT_MODULE = (
    "import ast\n\n"
    "SCOPES = {ast.Module: 'module', ast.FunctionDef: 'function'}\n\n\n"
    "def names(tree):\n"
    "    scope = SCOPES[type(tree)]\n"
    "    found = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)})\n"
    "    return scope, found, tree.body[0].lineno\n\n\n"
    "def parsed(text):\n    return ast.parse(text)\n"
)
LINT_TESTS = (
    "import ast\nimport lint\n\n\n"
    "def test_a_tree_the_test_parsed_is_an_ast_tree_there():\n"
    "    tree = ast.parse('\\n\\nx = y + z\\n')\n"
    "    assert lint.names(tree) == ('module', ['x', 'y', 'z'], 3)\n"
    "    function = ast.parse('def g(q):\\n    return q\\n').body[0]\n"
    "    assert lint.names(function)[0] == 'function'\n\n\n"
    "def test_a_tree_the_workspace_parsed_is_one_here():\n"
    "    tree = lint.parsed('def f(a):\\n    return a\\n')\n"
    "    assert type(tree) is ast.Module\n"
    "    assert isinstance(tree.body[0], ast.FunctionDef)\n"
    "    assert ast.dump(tree) == ast.dump(ast.parse('def f(a):\\n    return a\\n'))\n"
)


def test_ast_nodes_cross_as_trees_of_the_receivers_own_classes(task: SimpleNamespace) -> None:
    # pyflakes' tests parse source and hand the tree to Checker, which looks its handler
    # up by type(tree) in a dict of ast classes.
    _passes_as_in_one_process(task, {"lint.py": LINT_MODULE}, {"test_lint.py": LINT_TESTS})


ASYNC_MODULE = (
    "import asyncio\nimport importlib\n\n\n"
    "async def double(x):\n    await asyncio.sleep(0)\n    return 2 * x\n\n\n"
    "async def count(n):\n"
    "    for i in range(n):\n        await asyncio.sleep(0)\n        yield i\n\n\n"
    "def speedup(load):\n"
    "    try:\n        return load('fast')\n"
    "    except ModuleNotFoundError as exc:\n"
    "        if exc.name != 'fast':\n            raise\n"
    "        return 'slow'\n\n\n"
    "class Cache:\n"
    "    def __init__(self, capacity):\n        self.capacity = capacity\n\n"
    "    def __getstate__(self):\n        return {'capacity': self.capacity}\n\n\n"
    "def package(name):\n    return importlib.import_module(name).__name__\n\n\n"
    "def is_strategy(value):\n"
    "    from hypothesis.strategies import SearchStrategy\n\n"
    "    return isinstance(value, SearchStrategy)\n"
)
ASYNC_TESTS = (
    "import asyncio\n\nimport wsasync\nfrom wsasync import retry\n\n\n"
    "def test_await_in_the_tests_own_coroutine():\n"
    "    async def main():\n        return await wsasync.double(3)\n\n"
    "    assert asyncio.run(main()) == 6\n\n\n"
    "def test_async_for_over_a_workspace_generator():\n"
    "    async def main():\n        return [i async for i in wsasync.count(3)]\n\n"
    "    assert asyncio.run(main()) == [0, 1, 2]\n\n\n"
    "def test_the_name_of_an_import_error_crosses():\n"
    "    def load(name):\n        raise ModuleNotFoundError(f'no {name}', name=name)\n\n"
    "    assert wsasync.speedup(load) == 'slow'\n\n\n"
    "def test_an_explicit_getstate_is_the_objects_own():\n"
    "    assert wsasync.Cache(3).__getstate__() == {'capacity': 3}\n\n\n"
    "def test_a_function_that_replaced_its_submodule():\n"
    "    assert retry(1) == 2\n"
)
SUBMODULE_TESTS = (
    "from wsasync.retry import never\n\n\n"
    "def test_the_submodule_first():\n    assert never() is False\n"
)
OUT_OF_REACH_TESTS = (
    "from hypothesis import strategies\n\nimport wsasync\n\n\n"
    "def test_a_package_of_the_tests_imported_by_the_workspace():\n"
    "    assert wsasync.package('res') == 'res'\n\n\n"
    "def test_an_object_of_an_installed_library():\n"
    "    assert wsasync.is_strategy(strategies.integers())\n"
)


def test_what_jinja2_tenacity_and_slugify_hand_across_is_plain_or_inconclusive(
    task: SimpleNamespace,
) -> None:
    # jinja2 awaits its coroutines in the tests' own and asks __getstate__ explicitly;
    # tenacity's package function ``retry`` replaces its submodule ``retry``, which a
    # test file imported first; slugify checks ModuleNotFoundError.name.  A package of
    # the tests' folder imported by the workspace (jinja2's PackageLoader("res")) and
    # an installed library's object (asttokens' astroid nodes) cannot be carried.
    package = {
        "wsasync/__init__.py": "from .retry import never\n"
        + ASYNC_MODULE
        + ("\n\ndef retry(x):\n    return x + 1\n"),
        "wsasync/retry.py": "def never():\n    return False\n",
    }
    _write(task.ws, package)
    _write(
        task.hidden,
        {
            "tests/test_a_submodule.py": SUBMODULE_TESTS,
            "tests/test_b_async.py": ASYNC_TESTS,
            "tests/test_c_out_of_reach.py": OUT_OF_REACH_TESTS,
            # Importable as "res" beside the tests (pytest puts tests/ on sys.path),
            # as jinja2's tests/res is.
            "tests/res/__init__.py": "",
        },
    )
    plain, process = _as_plain_or_inconclusive(task)
    assert plain.passed, plain.output_tail[-3000:]
    detail = f"{process.reason}\n{process.output_tail[-3000:]}"
    assert process.inconclusive, detail
    for test_id, outcome in process.outcomes.items():
        if not test_id.startswith("tests/test_c_"):
            assert outcome == "passed", (test_id, detail)
    assert "after workspace code imported 'res', a module of the hidden tests' folder" in detail
    assert "an object of hypothesis.strategies." in detail


PATTERNS_MODULE = (
    "import re\n\n"
    "FUNC = re.match\n\n\n"
    "def known(func):\n    return func in (re.match, re.search, re.fullmatch)\n\n\n"
    "def flags_of(pattern):\n    return re.compile(pattern).flags\n\n\n"
    "def compiled(text):\n    return re.compile(text, re.IGNORECASE)\n"
)
PATTERNS_TESTS = (
    "import re\nimport patterns\n\n\n"
    "def test_the_functions_of_re_are_themselves():\n"
    "    assert patterns.known(re.search)\n"
    "    assert patterns.FUNC is re.match\n\n\n"
    "def test_a_compiled_pattern_is_one():\n"
    "    assert patterns.flags_of(re.compile('a', re.MULTILINE)) & re.MULTILINE\n"
    "    assert patterns.compiled('a+').match('AA')\n"
    "    assert patterns.compiled('a+') == re.compile('a+', re.IGNORECASE)\n"
)


def test_functions_of_re_and_compiled_patterns_cross_as_themselves(
    task: SimpleNamespace,
) -> None:
    _passes_as_in_one_process(
        task, {"patterns.py": PATTERNS_MODULE}, {"test_patterns.py": PATTERNS_TESTS}
    )


# A stdlib value's kind byte (wire._X_PATTERN, _X_TYPING_UNION) and malformed parts.
@pytest.mark.parametrize(
    ("kind", "parts"),
    [
        (15, ("(", 0)),
        (15, ("a" * 100_001, 0)),
        (15, (b"x", "flags")),
        (13, ([1], int)),
        (13, (int,)),
        # typing forms (_X_TYPING_FORM): no such form, a class of typing, a function
        # of typing, a literal of a container, a type argument that is a value
        (16, ("Nope", (int,))),
        (16, ("Text", (int,))),
        (16, ("cast", (int,))),
        (16, ("Literal", ((1,),))),
        (16, ("List", (1,))),
        (16, ("Generic", ())),
        (16, (["List"], (int,))),
        # memoryviews (_X_MEMORYVIEW): a format of more than bytes, a format that is
        # not text, no bytes
        (17, (b"ab", "i")),
        (17, (b"ab", ["B"])),
        (17, ("ab", "B")),
        # ast nodes (_X_AST): no such class, a field the class does not have, a
        # class of ast that is not a node
        (18, ("Nope", ())),
        (18, ("Name", (("evil", 1),))),
        (18, ("NodeVisitor", ())),
        (18, ("Name",)),
    ],
)
def test_a_malformed_pattern_or_union_is_a_wire_error(kind: int, parts: tuple[Any, ...]) -> None:
    body = wire.Encoder(lambda obj: (b"H", 0)).encode(parts)
    with pytest.raises(wire.WireError):
        wire.Decoder({}).decode(b"x" + bytes((kind,)) + body)


ERRORS_MODULE = (
    "class NotCallable(TypeError):\n"
    "    def __init__(self, msg, value):\n"
    "        super().__init__(msg, value)\n"
    "        self.msg = msg\n        self.value = value\n\n"
    "    def __str__(self):\n        return str(self.msg)\n\n\n"
    "def value_of(exc):\n    return exc.value\n"
)
ERRORS_TESTS = (
    "import pytest\nimport errors\n\n\n"
    "def test_a_workspace_exception_built_by_the_test_is_its_classes():\n"
    "    exc = errors.NotCallable(msg='Some Message', value=42)\n"
    "    assert str(exc) == 'Some Message'\n"
    "    assert exc.value == 42 and exc.args == ('Some Message', 42)\n"
    "    assert isinstance(exc, TypeError)\n"
    "    assert errors.value_of(exc) == 42\n"
    "    with pytest.raises(errors.NotCallable, match='Some'):\n"
    "        raise exc\n"
)


def test_a_workspace_exception_class_called_by_the_tests_constructs_at_its_owner(
    task: SimpleNamespace,
) -> None:
    _passes_as_in_one_process(task, {"errors.py": ERRORS_MODULE}, {"test_errors.py": ERRORS_TESTS})


def test_workspace_code_raising_a_tests_own_exception_class_keeps_the_subject(
    task: SimpleNamespace,
) -> None:
    # funcy's test_raiser: raiser(MyError)() raises the test's class.  The subject's
    # stand-in of the class died once the error was encoded, and its release reached
    # the judge before the error that names it: the subject was ended, and every later
    # test of the run failed with it.
    _both_pass(
        task,
        {
            "raising.py": (
                "def raise_it(exc_class, *args):\n    raise exc_class(*args)\n\n\n"
                "def raise_bare(exc_class):\n    raise exc_class\n\n\n"
                "def make(exc_class):\n    return exc_class('made')\n\n\n"
                "def double(x):\n    return 2 * x\n"
            )
        },
        {
            "test_a_raising.py": (
                "import pytest\n\nimport raising\n\n\n"
                "class MyError(Exception):\n    pass\n\n\n"
                "class Detailed(ValueError):\n"
                "    def __init__(self, code, text):\n"
                "        super().__init__(text)\n        self.code = code\n\n\n"
                "def test_raised_with_arguments():\n"
                "    with pytest.raises(Detailed) as info:\n"
                "        raising.raise_it(Detailed, 7, 'seven')\n"
                "    assert info.value.code == 7\n\n\n"
                "def test_raised_bare():\n"
                "    with pytest.raises(MyError):\n        raising.raise_bare(MyError)\n\n\n"
                "def test_made_and_returned():\n"
                "    made = raising.make(MyError)\n"
                "    assert isinstance(made, MyError)\n    assert str(made) == 'made'\n"
            ),
            "test_b_later.py": (
                "import raising\n\n\n"
                "def test_a_later_test_calls_the_workspace():\n"
                "    assert raising.double(21) == 42\n"
            ),
        },
    )


def test_a_test_that_counts_the_judges_objects_with_gc_is_inconclusive_if_it_fails(
    task: SimpleNamespace,
) -> None:
    # sortedcontainers' test_ref_counts: the judge's stand-in of the object outlives it
    # until its release is sent, so the count after `del` is one too many.
    _write(task.ws, {"box.py": "class Box:\n    pass\n"})
    _write(
        task.hidden,
        {
            "test_box.py": (
                "import gc\n\nimport box\n\n\n"
                "def test_ref_counts():\n"
                "    start = len(gc.get_objects())\n"
                "    temp = box.Box()\n"
                "    assert len(gc.get_objects()) > start\n"
                "    del temp\n"
                "    assert len(gc.get_objects()) == start\n\n\n"
                "def test_counted_and_passed():\n"
                "    assert len(gc.get_objects()) > 0\n"
                "    assert isinstance(box.Box(), box.Box)\n"
            )
        },
    )
    plain, process = _as_plain_or_inconclusive(task)
    assert plain.passed, plain.output_tail[-3000:]
    assert process.outcomes["test_box.py::test_counted_and_passed"] == "passed"
    if not process.passed:
        assert process.inconclusive, process.reason
        assert "test_box.py::test_ref_counts could not be judged" in process.reason
        assert "through gc" in process.reason


def test_an_instances_own_docstring_is_its_own_and_its_classs_the_classs(
    task: SimpleNamespace,
) -> None:
    # funcy's cached_property sets self.__doc__ to its function's docstring.
    _both_pass(
        task,
        {
            "desc.py": (
                'class Described:\n    """The class\'s own docstring."""\n\n'
                "    def __init__(self, doc=None):\n"
                "        if doc is not None:\n            self.__doc__ = doc\n\n\n"
                "class Bare:\n    pass\n"
            )
        },
        {
            "test_desc.py": (
                "import inspect\n\nimport desc\n\n\n"
                "def test_the_instances_own():\n"
                "    assert desc.Described('mine').__doc__ == 'mine'\n\n\n"
                "def test_the_classs():\n"
                '    assert desc.Described.__doc__ == "The class\'s own docstring."\n'
                '    assert desc.Described().__doc__ == "The class\'s own docstring."\n'
                '    assert inspect.getdoc(desc.Described) == "The class\'s own docstring."\n'
                "    assert desc.Bare.__doc__ is None\n    assert desc.Bare().__doc__ is None\n"
            )
        },
    )


TOOLZ_SHAPES_WORKSPACE = {
    "shapes.py": (
        "import functools\nimport inspect\nimport operator\n\n\n"
        "class InstanceProperty(property):\n"
        "    def __init__(self, fget=None, classval=None):\n"
        "        self.classval = classval\n"
        "        property.__init__(self, fget=fget)\n\n"
        "    def __get__(self, obj, type=None):\n"
        "        if obj is None:\n            return self.classval\n"
        "        return property.__get__(self, obj, type)\n\n\n"
        "class Curry:\n"
        '    """Curry\'s own docstring."""\n\n'
        "    def __init__(self, func):\n"
        "        self.func = func\n"
        "        self.__doc__ = func.__doc__\n"
        "        self.__module__ = func.__module__\n\n"
        "    def __call__(self, *args):\n        return self.func(*args)\n\n\n"
        "class Excepts:\n"
        '    """Excepts\' own docstring."""\n\n'
        "    def __init__(self, func):\n        self.func = func\n\n"
        "    __doc__ = InstanceProperty(\n"
        "        lambda self: 'excepts ' + self.func.__name__, classval=__doc__\n"
        "    )\n\n\n"
        "class Plain:\n    pass\n\n\n"
        "def isiterable(x):\n"
        "    try:\n        iter(x)\n        return True\n"
        "    except TypeError:\n        return False\n\n\n"
        "KNOWN = {\n"
        "    max: 'max', operator.add: 'add', operator.itemgetter: 'itemgetter',\n"
        "    operator.methodcaller: 'methodcaller', functools.partial: 'partial',\n"
        "    functools.reduce: 'reduce',\n"
        "}\n\n\n"
        "def known(func):\n    return KNOWN.get(func)\n\n\n"
        "def signature_kind(func):\n"
        "    own = getattr(func, '__signature__', None)\n"
        "    if own is not None and hasattr(own, '__get__'):\n        return 'property'\n"
        "    return list(inspect.signature(func).parameters)\n\n\n"
        "def partial_sum(*args):\n    return functools.partial(sum)(args)\n"
    ),
    "pkg/__init__.py": '"""The package."""\n\nX = 1\n',
    "pkg/sub.py": "Y = 2\n",
}


def test_what_toolz_asks_of_objects_it_is_handed_or_hands_back_answers_as_in_one_process(
    task: SimpleNamespace,
) -> None:
    # toolz's own suite in process isolation: an instance's own __module__ and
    # __doc__, a class whose __doc__ is a descriptor, `__iter__ = None`, the
    # annotations typing finds on a class, builtins and partial compared by identity,
    # a class whose instances compute __signature__, a module's __package__ and __doc__.
    _both_pass(
        task,
        TOOLZ_SHAPES_WORKSPACE,
        {
            "test_shapes.py": (
                "import functools\nimport inspect\nimport operator\nimport typing\n\n"
                "import pkg.sub\nimport shapes\n\n\n"
                'def helper():\n    """helper\'s docstring"""\n\n\n'
                "def test_an_instances_own_module_and_docstring():\n"
                "    curried = shapes.Curry(helper)\n"
                "    assert curried.__module__ == 'test_shapes'\n"
                '    assert curried.__doc__ == "helper\'s docstring"\n'
                "    assert shapes.Curry.__module__ == 'shapes'\n"
                '    assert shapes.Curry.__doc__ == "Curry\'s own docstring."\n\n\n'
                "def test_a_class_whose_docstring_is_a_descriptor():\n"
                '    assert shapes.Excepts.__doc__ == "Excepts\' own docstring."\n'
                "    assert shapes.Excepts(helper).__doc__ == 'excepts helper'\n"
                "    assert shapes.Excepts.__module__ == 'shapes'\n\n\n"
                "def test_iter_set_to_none_is_not_iterable():\n"
                "    class NotIterable:\n        __iter__ = None\n\n"
                "        def __getitem__(self, index):\n            return [1][index]\n\n"
                "    class ByIndex:\n"
                "        def __getitem__(self, index):\n            return [1][index]\n\n"
                "    assert shapes.isiterable(NotIterable()) is False\n"
                "    assert shapes.isiterable(ByIndex()) is True\n\n\n"
                "def test_a_workspace_class_has_no_annotations_of_the_isolation():\n"
                "    assert typing.get_type_hints(shapes.Plain) == {}\n"
                "    assert inspect.get_annotations(shapes.Plain) == {}\n\n\n"
                "def test_builtins_and_partial_keep_their_identity():\n"
                "    assert shapes.known(max) == 'max'\n"
                "    assert shapes.known(functools.partial) == 'partial'\n"
                "    assert shapes.known(functools.reduce) == 'reduce'\n"
                "    assert shapes.partial_sum(1, 2) == 3\n"
                "    assert shapes.known(operator.add) == 'add'\n"
                "    assert shapes.known(operator.itemgetter) == 'itemgetter'\n"
                "    assert shapes.known(operator.methodcaller) == 'methodcaller'\n\n\n"
                "def test_signature_from_a_property_of_the_class():\n"
                "    class AddX:\n"
                "        def __init__(self, func):\n            self.func = func\n\n"
                "        def __call__(self, addx, *args):\n"
                "            return addx + self.func(*args)\n\n"
                "        @property\n        def __signature__(self):\n"
                "            sig = inspect.signature(self.func)\n"
                "            kind = inspect.Parameter.POSITIONAL_OR_KEYWORD\n"
                "            first = inspect.Parameter('addx', kind)\n"
                "            return sig.replace(parameters=[first, *sig.parameters.values()])\n\n"
                "    assert shapes.signature_kind(AddX) == 'property'\n"
                "    assert shapes.signature_kind(AddX(lambda x: x)) == ['addx', 'x']\n\n\n"
                "def test_a_packages_package():\n"
                "    assert pkg.__package__ == 'pkg'\n"
                "    assert pkg.sub.__package__ == 'pkg'\n"
                "    assert shapes.__package__ == ''\n"
                "    assert pkg.__doc__ == 'The package.'\n"
                "    assert shapes.__doc__ is None\n"
            )
        },
    )


def test_a_serializer_module_the_tests_hand_over_is_the_subjects_own(
    task: SimpleNamespace,
) -> None:
    # itsdangerous' suite: Serializer(secret, serializer=pickle).  A module could not
    # cross at all; a pure one of the standard library now arrives as the subject's own.
    _both_pass(
        task,
        {
            "serial.py": (
                "import pickle\n\n\n"
                "def roundtrip(serializer, value):\n"
                "    return serializer.loads(serializer.dumps(value))\n\n\n"
                "def is_pickle(module):\n    return module is pickle\n"
            )
        },
        {
            "test_serial.py": (
                "import json\nimport pickle\n\nimport serial\n\n\n"
                "def test_serializers():\n"
                "    assert serial.roundtrip(pickle, [1, 2]) == [1, 2]\n"
                "    assert serial.roundtrip(json, {'a': 1}) == {'a': 1}\n"
                "    assert serial.is_pickle(pickle)\n"
                "    assert not serial.is_pickle(json)\n"
            )
        },
    )


def test_an_exception_returned_as_a_value_keeps_its_truth_and_its_repr(
    task: SimpleNamespace,
) -> None:
    # validators returns (never raises) a ValidationError that is falsy and prints
    # its arguments; its stand-in was a true exception with BaseException's repr.
    _both_pass(
        task,
        {
            "check.py": (
                "class ValidationError(Exception):\n"
                "    def __init__(self, func, values):\n"
                "        self.func = func\n        self.__dict__.update(values)\n\n"
                "    def __repr__(self):\n"
                "        return f'ValidationError(func={self.func.__name__})'\n\n"
                "    def __bool__(self):\n        return False\n\n"
                "    def __len__(self):\n        return 2\n\n\n"
                "def between(value, low, high):\n"
                "    if low <= value <= high:\n        return True\n"
                "    return ValidationError(between, {'value': value})\n"
            )
        },
        {
            "test_check.py": (
                "import check\n\n\n"
                "def test_a_returned_error():\n"
                "    result = check.between(3, 4, 5)\n"
                "    assert not result\n"
                "    assert len(result) == 2\n"
                "    assert repr(result) == 'ValidationError(func=between)'\n"
                "    assert result.value == 3\n"
                "    assert check.between(4, 4, 5) is True\n"
            )
        },
    )


def test_a_workspace_enum_member_is_an_enum_and_names_its_parameter_as_in_one_process(
    task: SimpleNamespace,
) -> None:
    # click parametrizes with members of its own enums: pytest names a parameter by
    # str() only for an enum.Enum, and a stand-in that was none got ids like "c0".
    _, process = _both_pass(
        task,
        {
            "colors.py": (
                "import enum\n\n\n"
                "class Color(enum.Enum):\n    RED = 1\n    GREEN = 'g'\n\n\n"
                "class Perm(enum.Flag):\n    R = 4\n    W = 2\n\n\n"
                "def name_of(member):\n    return member.name\n"
            )
        },
        {
            "test_colors.py": (
                "import enum\nimport pytest\nfrom colors import Color, Perm, name_of\n\n\n"
                "@pytest.mark.parametrize('member', [Color.RED, Color.GREEN, Perm.R])\n"
                "def test_member(member):\n"
                "    assert isinstance(member, enum.Enum)\n"
                "    assert isinstance(member, type(member))\n"
                "    assert name_of(member) == member.name\n\n\n"
                "def test_members():\n"
                "    assert list(Color) == [Color.RED, Color.GREEN]\n"
                "    assert Color('g') is Color.GREEN\n"
                "    assert type(Color.RED) is Color and isinstance(Color.RED, Color)\n"
                "    assert issubclass(Color.RED.__class__, Color)\n"
            )
        },
    )
    ids = {"test_colors.py::test_member[Color.RED]", "test_colors.py::test_member[Perm.R]"}
    assert ids <= set(process.outcomes), sorted(process.outcomes)


def test_bytes_written_to_standard_output_reach_the_tests_capture_as_text(
    task: SimpleNamespace,
) -> None:
    # click.echo asks whether sys.stdout takes bytes (write(b"")), then writes bytes to
    # sys.stdout.buffer; the subject's stream took anything and printed "b'...'".
    _both_pass(
        task,
        {
            "echo.py": (
                "import sys\n\n\n"
                "def binary(stream):\n"
                "    try:\n        stream.write(b'')\n    except TypeError:\n"
                "        return stream.buffer\n    return stream\n\n\n"
                "def echo(text, err=False):\n"
                "    out = binary(sys.stderr if err else sys.stdout)\n"
                "    data = text.encode('utf-8')\n"
                "    out.write(data[:1])\n    out.write(data[1:])\n    out.flush()\n\n\n"
                "def mixed():\n"
                "    print('a')\n    sys.stdout.buffer.write(b'b\\n')\n    print('c')\n"
                "    return sys.stdout.buffer.write(bytearray(b'')), sys.stdout.buffer.isatty()\n"
            )
        },
        {
            "test_echo.py": (
                "import echo\n\n\n"
                "def test_bytes(capsys):\n"
                "    echo.echo('\u00e9t\u00e9\\n')\n"
                "    echo.echo('oops\\n', err=True)\n"
                "    assert capsys.readouterr() == ('\u00e9t\u00e9\\n', 'oops\\n')\n\n\n"
                "def test_mixed(capsys):\n"
                "    assert echo.mixed() == (0, False)\n"
                "    assert capsys.readouterr().out == 'a\\nb\\nc\\n'\n"
            )
        },
    )


def test_a_warnings_stacklevel_names_the_tests_line_that_called_as_in_one_process(
    task: SimpleNamespace,
) -> None:
    # deprecated's decorator warns with stacklevel=2 (+ extra): the line named was the
    # subject's serving loop's, and its suite's stacklevel tests failed unexplained.
    _both_pass(
        task,
        {
            "old.py": (
                "import functools\nimport warnings\n\n\n"
                "def deprecated(extra=0):\n"
                "    def decorate(func):\n"
                "        @functools.wraps(func)\n"
                "        def wrapper(*args, **kwargs):\n"
                "            warnings.warn('old', DeprecationWarning, stacklevel=2 + extra)\n"
                "            return func(*args, **kwargs)\n"
                "        return wrapper\n"
                "    return decorate\n\n\n"
                "def here():\n    warnings.warn('here', UserWarning)\n"
            )
        },
        {
            "test_old.py": (
                "import inspect\nimport warnings\nimport old\n\n\n"
                "def _caught(call):\n"
                "    with warnings.catch_warnings(record=True) as caught:\n"
                "        warnings.simplefilter('always')\n"
                "        call()\n"
                "    return caught[0]\n\n\n"
                "def test_the_caller():\n"
                "    @old.deprecated()\n    def foo():\n        pass\n\n"
                "    def use_foo():\n        foo()\n\n"
                "    warn = _caught(use_foo)\n"
                "    assert (warn.filename, warn.lineno) == "
                "(__file__, inspect.getsourcelines(use_foo)[1] + 1)\n\n\n"
                "def test_the_callers_caller():\n"
                "    @old.deprecated(extra=1)\n    def foo():\n        pass\n\n"
                "    def use_foo():\n        foo()\n\n"
                "    def demo():\n        use_foo()\n\n"
                "    warn = _caught(demo)\n"
                "    assert (warn.filename, warn.lineno) == "
                "(__file__, inspect.getsourcelines(demo)[1] + 1)\n\n\n"
                "def test_the_workspaces_own_line():\n"
                "    warn = _caught(old.here)\n"
                "    assert warn.filename == old.__file__ and warn.category is UserWarning\n"
            )
        },
    )


def test_the_working_folder_the_tests_enter_is_the_workspaces_too(
    task: SimpleNamespace,
) -> None:
    # click's Path tests (and many suites) monkeypatch.chdir(tmp_path) and hand the
    # workspace relative paths: the subject stayed in the run's folder.
    _both_pass(
        task,
        {
            "where.py": (
                "import os\nimport pathlib\n\n\n"
                "def cwd():\n    return os.getcwd()\n\n\n"
                "def text(path):\n    return pathlib.Path(path).read_text()\n"
            )
        },
        {
            "test_where.py": (
                "import os\nimport where\n\nSTART = os.getcwd()\n\n\n"
                "def test_entered(tmp_path, monkeypatch):\n"
                "    monkeypatch.chdir(tmp_path)\n"
                "    (tmp_path / 'f.txt').write_text('x')\n"
                "    assert where.text('f.txt') == 'x'\n"
                "    assert where.cwd() == str(tmp_path)\n"
                "    (tmp_path / 'sub').mkdir()\n"
                "    os.chdir('sub')\n"
                "    assert where.cwd() == str(tmp_path / 'sub')\n\n\n"
                "def test_left_again():\n"
                "    assert where.cwd() == os.getcwd() == START\n"
            )
        },
    )


def test_a_method_the_tests_patch_on_a_workspace_class_is_called_by_workspace_code(
    task: SimpleNamespace,
) -> None:
    # monkeypatch.setattr(Class, name, value) reads Class.__dict__.get(name, notset):
    # the sentinel, pytest's own, crossed with the call and made the test inconclusive.
    _both_pass(
        task,
        {
            "box.py": (
                "class Box:\n"
                "    def __init__(self, value):\n        self.value = value\n\n"
                "    def get(self):\n        return self.value\n\n"
                "    def twice(self):\n        return self.get() * 2\n"
            )
        },
        {
            "test_box.py": (
                "from unittest import mock\nfrom box import Box\n\n\n"
                "def test_monkeypatched(monkeypatch):\n"
                "    monkeypatch.setattr(Box, 'get', lambda self: 21)\n"
                "    assert Box(1).twice() == 42\n\n\n"
                "def test_restored():\n    assert Box(2).twice() == 4\n\n\n"
                "def test_mocked():\n"
                "    with mock.patch.object(Box, 'get', return_value=5) as get:\n"
                "        assert Box(1).twice() == 10\n"
                "    assert get.call_count == 1 and Box(3).twice() == 6\n\n\n"
                "def test_namespace():\n"
                "    assert Box.__dict__.get('nothing', 'gone') == 'gone'\n"
                "    assert Box.__dict__.get('get') is not None\n"
            )
        },
    )


def test_a_workspace_abc_counts_the_tests_objects_by_its_own_hook(
    task: SimpleNamespace,
) -> None:
    # glom's _AbstractIterable: ABCMeta with a __subclasshook__ that takes any class
    # with __iter__.  Asked in the judge about the test's own objects, the stand-in
    # class answered from its MRO alone.
    _both_pass(
        task,
        {
            "kinds.py": (
                "import enum\nfrom abc import ABCMeta\n\n\n"
                "class AbstractIterable(metaclass=ABCMeta):\n"
                "    @classmethod\n    def __subclasshook__(cls, other):\n"
                "        if other in (str, bytes):\n            return False\n"
                "        return callable(getattr(other, '__iter__', None))\n\n\n"
                "class Color(enum.Enum):\n    RED = 1\n"
            )
        },
        {
            "test_kinds.py": (
                "import kinds\n\n\n"
                "class Mine:\n    def __iter__(self):\n        return iter([1])\n\n\n"
                "def test_the_hook_decides():\n"
                "    assert isinstance([], kinds.AbstractIterable)\n"
                "    assert isinstance(Mine(), kinds.AbstractIterable)\n"
                "    assert not isinstance('text', kinds.AbstractIterable)\n"
                "    assert not isinstance(3, kinds.AbstractIterable)\n"
                "    assert not isinstance(3, kinds.Color)\n"
                "    assert isinstance(kinds.Color.RED, kinds.Color)\n"
            )
        },
    )


def _judge_function() -> None:
    pass


@pytest.mark.parametrize(
    ("op", "target", "name", "allowed"),
    [
        ("setattr", _judge_function, "__click_params__", True),
        ("getattr", _judge_function, "__click_params__", True),
        ("setattr", _judge_function, "__test__", False),
        ("setattr", _judge_function, "__pytest_wrapped__", False),
        ("setattr", _judge_function, "__deepcopy__", False),
        ("getattr", _judge_function, "__globals__", False),
        ("setattr", _judge_function, "__code__", False),
        ("getattr", _judge_function, "__reduce_ex__", False),
        ("setattr", SimpleNamespace, "__click_params__", False),
        ("setattr", SimpleNamespace(), "__click_params__", False),
    ],
)
def test_only_a_functions_own_dunders_are_the_workspaces_to_read_and_write(
    op: str, target: Any, name: str, allowed: bool
) -> None:
    policy = proxies.JudgePolicy()
    if allowed:
        policy.check_op(op, (target, name, None) if op == "setattr" else (target, name))
    else:
        with pytest.raises(proxies.IsolationError):
            policy.check_op(op, (target, name, None) if op == "setattr" else (target, name))


def test_a_workspace_decorator_keeps_its_parameters_on_a_tests_function(
    task: SimpleNamespace,
) -> None:
    # click's @option, applied in the tests, appends to f.__click_params__: refused, it
    # made 904 of click's tests inconclusive in process isolation.
    _both_pass(
        task,
        {
            "deco.py": (
                "def option(name):\n"
                "    def mark(f):\n"
                "        if not hasattr(f, '__params__'):\n"
                "            f.__params__ = []\n"
                "        f.__params__.append(name)\n"
                "        return f\n"
                "    return mark\n\n\n"
                "def params(f):\n    return list(f.__params__)\n"
            )
        },
        {
            "test_deco.py": (
                "import deco\n\n\n"
                "def test_decorated():\n"
                "    @deco.option('--a')\n"
                "    @deco.option('--b')\n"
                "    def cli():\n        pass\n\n"
                "    assert deco.params(cli) == ['--b', '--a']\n"
                "    assert cli.__params__ == ['--b', '--a']\n"
            )
        },
    )


def test_a_getter_class_that_arrives_by_name_reaches_nothing_the_policy_refuses(
    task: SimpleNamespace,
) -> None:
    # operator.attrgetter crosses as the subject's own class: what it reads of a judge
    # object is a request, and the judge refuses __globals__ as it refuses a plain
    # getattr.  In one process the workspace would read the test module's globals.
    _write(
        task.ws,
        {
            "peek.py": (
                "def reads_globals(getter_class, target):\n"
                "    return 'SECRET_NAME' in getter_class('__globals__')(target)\n"
            )
        },
    )
    _write(
        task.hidden,
        {
            "test_peek.py": (
                "import operator\n\nimport peek\n\nSECRET_NAME = 1\n\n\n"
                "def helper():\n    pass\n\n\n"
                "def test_peek():\n"
                "    assert peek.reads_globals(operator.attrgetter, helper) is True\n"
            )
        },
    )
    verdict = run_hidden_tests(task.ws, task.hidden, isolation="process", timeout=60)
    assert not verdict.passed, verdict.reason
    assert verdict.inconclusive, verdict.reason
    assert "__globals__" in verdict.reason, verdict.reason


def test_a_tests_datetime_subclass_keeps_its_own_classmethods_in_workspace_code(
    task: SimpleNamespace,
) -> None:
    # parse's suite freezes the year: a datetime subclass whose classmethod today()
    # is its own, patched into the workspace module or handed over.  Read off the
    # class in the subject, the member was a property of the instances.
    _both_pass(
        task,
        {
            "yr.py": (
                "from datetime import datetime\n\n\n"
                "def this_year():\n    return datetime.today().year\n\n\n"
                "def build(cls):\n    return cls.today().year\n\n\n"
                "def shown(value):\n    return value.isoformat()\n"
            )
        },
        {
            "test_yr.py": (
                "from datetime import datetime\n\nimport yr\n\n\n"
                "class Frozen(datetime):\n"
                "    @classmethod\n    def today(cls):\n        return cls(2024, 6, 15)\n\n"
                "    def isoformat(self, sep='T', timespec='auto'):\n"
                "        return 'frozen'\n\n\n"
                "def test_patched_into_the_workspace(monkeypatch):\n"
                "    monkeypatch.setattr(yr, 'datetime', Frozen)\n"
                "    assert yr.this_year() == 2024\n\n\n"
                "def test_handed_over():\n    assert yr.build(Frozen) == 2024\n\n\n"
                "def test_its_own_method_on_an_instance():\n"
                "    assert yr.shown(Frozen(2024, 6, 15)) == 'frozen'\n"
            )
        },
    )


def test_every_name_dir_gives_of_a_workspace_module_can_be_read(task: SimpleNamespace) -> None:
    _write(task.ws, {"listed.py": "import re\n\nVALUE = 1\n"})
    _write(
        task.hidden,
        {
            "test_listed.py": (
                "import listed\n\n\n"
                "def test_every_name():\n"
                "    found = {name: getattr(listed, name) for name in dir(listed)}\n"
                "    assert found['VALUE'] == 1\n"
                "    assert found['__builtins__']['len'] is len\n"
            )
        },
    )
    plain, process = _as_plain_or_inconclusive(task)
    assert plain.passed, plain.output_tail[-3000:]
    assert process.passed, f"{process.reason}\n{process.output_tail[-3000:]}"


# -- identity across the processes ------------------------------------------------------

EXCEPTIONGROUP = Path(__file__).parents[1] / "data" / "suites" / "exceptiongroup"


def test_exceptiongroups_catch_keeps_the_identity_of_what_crosses(
    task: SimpleNamespace,
) -> None:
    # exceptiongroup's own test: its catch() runs in the subject, the handler in the
    # judge; the exceptions crossing between them come back as the very objects.
    shutil.copytree(EXCEPTIONGROUP / "workspace", task.ws)
    source = (EXCEPTIONGROUP / "hidden" / "tests" / "test_catch.py").read_text()
    start = source.index("def test_handler_raises_subgroup_from_none(")
    test = source[start : source.index("\ndef ", start)]
    header = "import pytest\nfrom exceptiongroup import ExceptionGroup, catch\n\nPYPY = False\n\n"
    _write(task.hidden, {"test_catch.py": header + test})
    assert run_hidden_tests(task.ws, task.hidden, isolation="inprocess").passed
    verdict = run_hidden_tests(task.ws, task.hidden, isolation="process")
    assert verdict.passed, verdict.reason


def test_a_false_identity_check_on_a_crossed_exception_or_a_stand_ins_type_is_noted() -> None:
    """The watch the rewritten ``a is b`` calls when it is false (see probes)."""
    crossed = KeyError("k")
    limits: list[str] = []
    doubts: list[str] = []
    connection = SimpleNamespace(
        stand_ins=SimpleNamespace(number_of=lambda value: 1 if value is crossed else None),
        limit=limits.append,
        doubt=doubts.append,
    )
    watch = proxies.identity_watch(connection)  # type: ignore[arg-type]
    watch(crossed, KeyError("k"))
    assert limits == [proxies._EXCEPTION_IDENTITY]
    stand_in_type = type("Thing", (stubs.Proxy,), {})
    watch(stand_in_type, type(lambda: None))
    assert doubts == [proxies._TYPE_IDENTITY]
    watch(int, str)  # neither crossed nor a stand-in's type: nothing
    watch(1, 2)
    assert (len(limits), len(doubts)) == (1, 1)


# -- which module a name of the workspace imports, in the judge ------------------------

NAME_CLASHES = {
    # pytest depends on packaging but has not imported it yet: the workspace's is graded.
    "packaging/__init__.py": "WHO = 'workspace'\n",
    "packaging/version.py": "def parse(text):\n    return ('parsed', text)\n",
    # The hidden folder's own helper wins over the workspace's, as pytest prepends it.
    "helpers.py": "WHO = 'workspace'\n",
    "calc.py": "def double(x):\n    return 2 * x\n",
}
NAME_CLASH_TESTS = {
    "helpers.py": "WHO = 'hidden'\n",
    "test_names.py": """import helpers
import packaging
from packaging.version import parse

from calc import double


def test_the_workspaces_packaging():
    assert packaging.WHO == "workspace"
    assert parse("1.0") == ("parsed", "1.0")


def test_the_hidden_folders_helper():
    assert helpers.WHO == "hidden"


def test_plain():
    assert double(21) == 42
""",
}


@pytest.mark.parametrize("isolation", ["inprocess", "process"])
def test_a_name_resolves_as_under_plain_pytest(isolation: str, tmp_path: Path) -> None:
    """An installed library the workspace also holds is the workspace's, in both modes."""
    from realsuites import plain_outcomes

    ws = _write(tmp_path / "ws", NAME_CLASHES)
    hidden = _write(tmp_path / "hidden", NAME_CLASH_TESTS)
    plain = plain_outcomes(ws, hidden)
    assert set(plain.values()) == {"passed"}, plain
    verdict = run_hidden_tests(ws, hidden, isolation=isolation, timeout=120)
    assert verdict.passed, verdict.reason
    assert dict(verdict.outcomes) == plain


# -- what a test changes on the judge's side only ------------------------------------

JUDGE_SIDE_WORKSPACE = {
    "plat.py": """import os
import sys


def platform_name():
    return sys.platform


def implementation():
    return sys.implementation.name


def has_module(name):
    return name in sys.modules and sys.modules[name] is not None


def separator():
    return os.sep


def first_input_line():
    return sys.stdin.readline().strip()


def first_line(path):
    with open(path, encoding="utf-8") as handle:
        return handle.readline().strip()


def double(x):
    return 2 * x


def first_lines(paths):
    return [first_line(path) for path in paths]


def own_spec():
    return __spec__


def clock():
    import time

    return time.time()


def today():
    import datetime

    return datetime.date.today().isoformat()
""",
}
_JUDGE_SIDE_HEADER = """import os
import sys
from pathlib import Path
from unittest import mock

import plat


def test_patched_but_passing(monkeypatch):
    monkeypatch.setattr(sys, "platform", "plan9")
    assert plat.double(2) == 4


def test_plain():
    assert plat.double(21) == 42


def test_type_compared_but_passing():
    assert type(plat.double) is not int
"""
# Each test alone with the two above, and what its limit must name.
JUDGE_SIDE_CASES = {
    "test_patched_platform": (
        """def test_patched_platform(monkeypatch):
    monkeypatch.setattr(sys, "platform", "plan9")
    assert plat.platform_name() == "plan9"
""",
        "patching the judge's sys.platform",
    ),
    "test_patched_implementation": (
        """def test_patched_implementation(monkeypatch):
    monkeypatch.setattr(sys.implementation, "name", "ironpython")
    assert plat.implementation() == "ironpython"
""",
        "the judge's sys.implementation.name",
    ),
    "test_patched_modules": (
        """def test_patched_modules(monkeypatch):
    monkeypatch.setitem(sys.modules, "ctypes", None)
    assert not plat.has_module("ctypes")
""",
        "the judge's sys.modules['ctypes']",
    ),
    "test_mock_patched_separator": (
        """def test_mock_patched_separator():
    with mock.patch.object(os, "sep", "|"):
        assert plat.separator() == "|"
""",
        "the judge's os.sep",
    ),
    "test_assigned_clock": (
        """def test_assigned_clock():
    import time

    real = time.time
    time.time = lambda: 0.0
    try:
        assert plat.clock() == 0.0
    finally:
        time.time = real
""",
        "the judge's time.time",
    ),
    "test_frozen_by_a_helper_library": (
        """def test_frozen_by_a_helper_library():
    from frozen import frozen_today

    with frozen_today("2020-02-02"):
        assert plat.today() == "2020-02-02"
""",
        "the judge's datetime.date",
    ),
    "test_mock_patched_modules_dict": (
        """def test_mock_patched_modules_dict():
    with mock.patch.dict(sys.modules, {"ctypes": None}):
        assert not plat.has_module("ctypes")
""",
        "the judge's sys.modules (mock.patch.dict)",
    ),
    "test_patched_import_attribute_of_a_workspace_module": (
        """def test_patched_import_attribute_of_a_workspace_module(monkeypatch):
    monkeypatch.setattr(plat, "__spec__", None)
    assert plat.own_spec() is None
""",
        "the judge's copy of the workspace's plat.__spec__",
    ),
    "test_swapped_stdin": (
        """def test_swapped_stdin():
    import io

    real = sys.stdin
    sys.stdin = io.StringIO("typed\\n")
    try:
        assert plat.first_input_line() == "typed"
    finally:
        sys.stdin = real
""",
        "the judge's sys.stdin",
    ),
    "test_a_path_in_a_list_of_arguments": (
        """def test_a_path_in_a_list_of_arguments():
    assert plat.first_lines([str(Path(__file__).parent / "data" / "sample.txt")]) == ["hello"]
""",
        "in the hidden tests' folder, which the subject process may not read",
    ),
    "test_the_type_of_a_workspace_function": (
        """def test_the_type_of_a_workspace_function():
    import types

    assert type(plat.double) is types.FunctionType
""",
        "comparing the type of a workspace object with another class by identity",
    ),
    "test_a_data_file_of_the_suite": (
        """def test_a_data_file_of_the_suite():
    assert plat.first_line(Path(__file__).parent / "data" / "sample.txt") == "hello"
""",
        "in the hidden tests' folder, which the subject process may not read",
    ),
}


# A helper in the shape of freezegun: it assigns the judge's module attributes itself.
_FROZEN_HELPER = """import contextlib
import datetime


@contextlib.contextmanager
def frozen_today(iso):
    real = datetime.date

    class FrozenDate(real):
        @classmethod
        def today(cls):
            return real.fromisoformat(iso)

    datetime.date = FrozenDate
    try:
        yield
    finally:
        datetime.date = real
"""


def _judge_side_hidden(root: Path, case: str) -> Path:
    source, _ = JUDGE_SIDE_CASES[case]
    return _write(
        root,
        {
            "data/sample.txt": "hello\n",
            "frozen.py": _FROZEN_HELPER,
            "test_judge_side.py": f"{_JUDGE_SIDE_HEADER}\n\n{source}",
        },
    )


@pytest.mark.parametrize("isolation", ["inprocess", "process"])
@pytest.mark.parametrize("case", sorted(JUDGE_SIDE_CASES))
def test_a_test_that_changes_the_judges_side_only_is_inconclusive_never_failed(
    case: str, isolation: str, tmp_path: Path
) -> None:
    """Patching the judge's modules, or handing over a path into the hidden folder."""
    ws = _write(tmp_path / "ws", JUDGE_SIDE_WORKSPACE)
    hidden = _judge_side_hidden(tmp_path / "hidden", case)
    verdict = run_hidden_tests(ws, hidden, isolation=isolation, timeout=120)
    assert not verdict.tampered, verdict.reason
    if isolation == "inprocess":  # one process: as under plain pytest
        assert verdict.passed, verdict.reason
        return
    assert verdict.inconclusive, verdict.reason
    assert f"test_judge_side.py::{case} could not be judged: the test failed after" in (
        verdict.reason
    )
    assert JUDGE_SIDE_CASES[case][1] in verdict.reason
    for passing in ("test_patched_but_passing", "test_type_compared_but_passing"):
        assert f"{passing} could not be judged" not in verdict.reason
        assert verdict.outcomes[f"test_judge_side.py::{passing}"] == "passed"


def test_a_wrong_workspace_still_fails_the_tests_that_patch_nothing(tmp_path: Path) -> None:
    wrong = dict(JUDGE_SIDE_WORKSPACE)
    wrong["plat.py"] = wrong["plat.py"].replace("return 2 * x", "return 2 * x + 1")
    ws = _write(tmp_path / "ws", wrong)
    hidden = _judge_side_hidden(tmp_path / "hidden", "test_patched_platform")
    verdict = run_hidden_tests(ws, hidden, isolation="process", timeout=120)
    assert not verdict.passed, verdict.reason
    assert not verdict.inconclusive, verdict.reason
    assert verdict.outcomes["test_judge_side.py::test_plain"] == "failed"
    assert verdict.outcomes["test_judge_side.py::test_patched_but_passing"] == "failed"


def test_a_workspace_finalizer_that_uses_a_test_object_keeps_the_conversation_in_step(
    task: SimpleNamespace,
) -> None:
    # click's _NamedTextIOWrapper: a text wrapper over the test's BytesIO whose close()
    # detaches.  The subject's collector finalized an earlier wrapper while a request
    # of its own waited; the finalizer's request took the waiting one's answer.
    _both_pass(
        task,
        {
            "wrapping.py": (
                "import io\n\n\n"
                "class Wrapper(io.TextIOWrapper):\n"
                "    def close(self):\n"
                "        if not self.closed:\n            self.detach()\n\n"
                "    def __del__(self):\n"
                "        try:\n            self.close()\n"
                "        except Exception:\n            pass\n"
            )
        },
        {
            "test_wrapping.py": (
                "import gc\nimport io\n\nimport pytest\n\nfrom wrapping import Wrapper\n\n\n"
                "@pytest.mark.parametrize('round', range(3))\n"
                "def test_deleted(round):\n"
                "    buf = io.BytesIO()\n"
                "    w = Wrapper(buf, encoding='utf-8')\n"
                "    w.write('hello')\n    w.flush()\n    del w\n    gc.collect()\n"
                "    assert not buf.closed\n    assert buf.getvalue() == b'hello'\n\n\n"
                "@pytest.mark.parametrize('round', range(3))\n"
                "def test_closed(round):\n"
                "    buf = io.BytesIO()\n"
                "    w = Wrapper(buf, encoding='utf-8')\n"
                "    w.write('hello')\n    w.close()\n"
                "    assert not buf.closed\n    assert buf.getvalue() == b'hello'\n"
            )
        },
    )


def test_a_workspace_class_has_a_finalizer_exactly_where_its_owner_has_one(
    task: SimpleNamespace,
) -> None:
    # click tests that StreamMixer has no __del__; the stand-in's own finalizer (which
    # lets the judge's table go of the object) answered for the workspace class.
    _both_pass(
        task,
        {
            "mixing.py": (
                "class Mixer:\n    pass\n\n\n"
                "class Closer:\n"
                "    def __init__(self):\n        self.finalized = 0\n\n"
                "    def __del__(self):\n        self.finalized += 1\n"
            )
        },
        {
            "test_mixing.py": (
                "from mixing import Closer, Mixer\n\n\n"
                "def test_none():\n"
                "    assert not hasattr(Mixer, '__del__')\n"
                "    assert not hasattr(Mixer(), '__del__')\n"
                "    assert getattr(Mixer, '__del__', None) is None\n\n\n"
                "def test_its_own():\n"
                "    assert hasattr(Closer, '__del__') and callable(Closer.__del__)\n"
                "    closer = Closer()\n"
                "    closer.__del__()\n"
                "    assert closer.finalized == 1\n"
            )
        },
    )
