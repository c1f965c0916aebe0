"""Tests of pytest_ldd._sandbox.probes: look-alike values, which values are the
workspace's, and comparisons that probe them (lies are proof, honest code is never
accused), in unit form and through a real in-process run.
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import enum
import fractions
import marshal
import math
import random
import string
import sys
import types
import unittest
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sandbox_support import write_tree

from pytest_ldd._sandbox import probes
from pytest_ldd._sandbox.probes import Comparisons, ProbeError, WorkspaceTypes, draw_like
from pytest_ldd.sandbox import run_hidden_tests

# -- look-alike values ---------------------------------------------------------------------


def _digits(value: int) -> tuple[bool, int, int]:
    text = str(abs(value))
    return value < 0, len(text), len(text) - len(text.rstrip("0"))


@settings(max_examples=300, deadline=None)
@given(value=st.integers(-(10**30), 10**30), seed=st.integers(0, 2**32))
def test_an_int_look_alike_keeps_sign_digits_and_roundness(value: int, seed: int) -> None:
    drawn = draw_like(value, random.Random(seed))
    assert type(drawn) is int
    assert drawn != value
    if value == 0:
        assert 1 <= drawn <= 9
    elif value == 1:
        assert drawn == 0  # a bit's other value: an __eq__ may read ints as bits
    else:
        assert _digits(drawn) == _digits(value)
        assert abs(drawn - value) >= 0.1 * abs(value)


@settings(max_examples=300, deadline=None)
@given(
    value=st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300),
    seed=st.integers(0, 2**32),
    tolerance=st.sampled_from([0.0, 1e-9, 0.5]),
)
def test_a_float_look_alike_keeps_sign_and_magnitude_beyond_a_tolerance(
    value: float, seed: int, tolerance: float
) -> None:
    drawn = draw_like(value, random.Random(seed), min_distance=tolerance)
    if drawn is None:  # no look-alike of its magnitude lies that far away
        assert tolerance > abs(value)
        return
    assert type(drawn) is float
    assert abs(drawn - value) > tolerance
    if value != 0:
        assert (drawn < 0) == (value < 0)
        assert abs(drawn - value) >= 0.1 * abs(value)
        assert abs(math.log10(abs(drawn)) - math.log10(abs(value))) <= 2.01


def _classes(text: str) -> list[str]:
    return [
        "lower" if c in string.ascii_lowercase else
        "upper" if c in string.ascii_uppercase else
        "digit" if c in string.digits else c
        for c in text
    ]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(value=st.text(string.printable, min_size=1, max_size=30), seed=st.integers(0, 2**32))
def test_a_text_look_alike_keeps_length_and_character_classes(value: str, seed: int) -> None:
    drawn = draw_like(value, random.Random(seed))
    assert type(drawn) is str
    assert len(drawn) == len(value)
    assert "".join(drawn.split()).casefold() != "".join(value.split()).casefold()
    if any(c.isalnum() for c in value):
        assert _classes(drawn) == _classes(value)
        # every letter and digit changed, so no lenient equality joins the two
        assert all(a != b for a, b in zip(drawn, value, strict=True) if b.isalnum())


def test_a_look_alike_of_a_container_changes_every_element() -> None:
    rng = random.Random(3)
    for value in ([1, 2, 3], (1, "a"), {"k": 1, "j": 2}, {1, 2, 3}, frozenset({"x"}), [[1], [2]]):
        drawn = draw_like(value, rng)
        assert type(drawn) is type(value)
        assert drawn != value
        assert len(drawn) == len(value)
        if isinstance(value, (list, tuple)):
            assert all(new != old for new, old in zip(drawn, value, strict=True))
        elif isinstance(value, dict):
            # every key and every value: an ordered set equals a dict with its keys
            assert drawn.keys().isdisjoint(value.keys())
            assert set(drawn.values()).isdisjoint(value.values())
        else:
            assert not drawn & value
    assert draw_like(True, rng) is False
    assert draw_like([], rng) != []
    assert draw_like({"k": None}, rng).keys().isdisjoint({"k"})  # no value to redraw: keys
    assert draw_like(list(range(probes.MAX_REDRAWN + 1)), rng) is None
    for value in (None, float("nan"), object(), 1 + 2j, [None]):
        assert draw_like(value, rng) is None


class _KeySet:
    def __init__(self, keys: Any) -> None:
        self.keys = set(keys)

    def __eq__(self, other: object) -> bool:
        return self.keys == set(other)  # type: ignore[call-overload]

    __hash__ = None  # type: ignore[assignment]


def test_a_look_alike_keeps_a_dicts_keys_only_against_a_dict() -> None:
    """Against a dict the values are redrawn (a lying value inside is caught); against
    anything else the keys too (an honest ordered set compares keys alone)."""
    other = {"a": 1, "b": [2, 3]}
    for seed in range(50):
        rng = random.Random(seed)
        kept = probes.look_alike({"a": 1, "b": [2, 3]}, other, rng)
        assert kept.keys() == other.keys()
        assert kept["a"] != 1
        assert kept["b"] != [2, 3]
        redrawn = probes.look_alike(_KeySet(other), other, rng)
        assert redrawn.keys().isdisjoint(other.keys())
        assert _KeySet(other) != redrawn
        inner = probes.look_alike([{"k": 1}], [{"k": 5}], rng)
        assert inner[0].keys() == {"k"}
        assert inner[0]["k"] != 5
    assert probes.look_alike(2**3000, 2**3000, random.Random(1)) != 2**3000


def test_far_and_look_alikes_of_ints_past_a_floats_range() -> None:
    assert probes._far(10**400, 3 * 10**400)
    assert not probes._far(10**400, 10**400 + 1)
    assert not probes._far(1.5, 10**400)  # cannot be compared as floats: not far
    drawn = draw_like(10**400, random.Random(2), {probes.shape_of(10**400): [7 * 10**400]})
    assert drawn is None or drawn != 10**400


def test_a_look_alike_often_comes_from_the_pool_of_the_tests_own_literals() -> None:
    pool = {probes.shape_of(57): [57, 42, 44], probes.shape_of("red"): ["red", "tan", "Red"]}
    drawn = {draw_like(42, random.Random(seed), pool) for seed in range(200)}
    assert 57 in drawn  # borrowed
    assert 44 not in drawn  # too near: within 10%
    assert len(drawn) > 3  # and drawn afresh too
    texts = {draw_like("red", random.Random(seed), pool) for seed in range(200)}
    assert "tan" in texts
    assert "Red" not in texts  # the same word, case aside


# -- whose values ------------------------------------------------------------------------


def _module(name: str, path: Path, source: str) -> types.ModuleType:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    module = types.ModuleType(name)
    module.__file__ = str(path)
    module.__spec__ = None
    exec(compile(source, str(path), "exec"), module.__dict__)
    sys.modules[name] = module
    return module


@pytest.fixture
def workspace(tmp_path: Path) -> Any:
    module = _module(
        "ldd_probe_ws",
        tmp_path / "ws" / "ldd_probe_ws.py",
        "import collections\n"
        "class Thing:\n    pass\n"
        "class Sub(collections.OrderedDict):\n    pass\n"
        "Point = collections.namedtuple('Point', 'x y')\n"
        "class Spoof:\n    def __eq__(self, other):\n        return True\n"
        "Spoof.__module__ = 'collections'\n"
        "Spoof.__qualname__ = 'OrderedDict'\n",
    )
    yield module, tmp_path / "ws"
    del sys.modules["ldd_probe_ws"]


def test_values_of_classes_the_workspace_defined_are_its_own(workspace: Any) -> None:
    module, root = workspace
    mine = WorkspaceTypes([str(root)])
    assert mine(module.Thing())
    assert mine(module.Sub())  # a subclass of a trusted class
    assert mine(module.Point(1, 2))  # made by a trusted factory, for the workspace
    assert mine(module.Spoof())  # a trusted module's name, but code of the workspace


class _LocalAlwaysEqual:
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = None  # type: ignore[assignment]


def test_values_of_trusted_code_are_not_probed(workspace: Any) -> None:
    _, root = workspace
    mine = WorkspaceTypes([str(root)])

    class Local:
        pass

    for value in (
        1, "a", [1], {1: 2}, mock.ANY, pytest.approx(1.0), collections.OrderedDict(),
        fractions.Fraction(1, 3), _LocalAlwaysEqual(), Local(), mock.Mock(), Path("."),
    ):  # fmt: skip
        assert not mine(value), value


def test_a_builtin_subclass_with_its_own_comparison_is_probed_whatever_its_origin() -> None:
    class Loud(int):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = int.__hash__

    class Quiet(int):
        pass

    mine = WorkspaceTypes(["/nowhere"])
    assert mine(Loud(1))
    assert not mine(Quiet(1))


class _Rewrite:
    """Stands for ``_pytest.assertion.rewrite``: compiles a file as pytest would."""

    def _rewrite_test(self, fn: Path, config: Any) -> tuple[None, types.CodeType]:
        return None, compile(fn.read_bytes(), str(fn), "exec")


def _suite_module(tmp_path: Path, source: str) -> tuple[probes.SuiteCode, types.ModuleType]:
    suite = write_tree(tmp_path / "suite", {"test_own.py": source})
    code = probes.SuiteCode(str(suite))
    rewrite = _Rewrite()
    code.guard(rewrite)
    _, compiled = rewrite._rewrite_test(suite / "test_own.py", None)
    module = types.ModuleType("ldd_suite_own")
    module.__file__ = str(suite / "test_own.py")
    sys.modules[module.__name__] = module
    exec(compiled, module.__dict__)
    return code, module


OWN_CLASSES = """
from typing import NamedTuple


class XRepr(NamedTuple):
    x: int
    y: int = 1

    def __add__(self, other):
        return 0


class Anything(tuple):
    def __eq__(self, other):
        return True

    __hash__ = tuple.__hash__
"""


def test_a_builtin_subclass_whose_comparisons_are_the_suites_own_code_is_not_probed(
    tmp_path: Path,
) -> None:
    # typing_extensions' tests define XRepr(NamedTuple) with an __add__ that returns 0
    # and assert XRepr(1, 2) + XRepr(3) == 0: test code, honest by definition.
    code, module = _suite_module(tmp_path, OWN_CLASSES)
    try:
        mine = WorkspaceTypes(["/nowhere"], suite_code=code)
        assert not mine(module.XRepr(1, 2))
        assert not mine(module.Anything((1,)))
        assert WorkspaceTypes(["/nowhere"])(module.XRepr(1, 2))  # without it: probed

        class Borrowed(int):  # the suite's code, in a class of someone else's
            __eq__ = module.Anything.__eq__
            __hash__ = int.__hash__

        class Rebound(tuple):  # the suite's code object, in other globals
            __eq__ = types.FunctionType(module.Anything.__eq__.__code__, {"__name__": "x"})
            __hash__ = tuple.__hash__

        class Recompiled(tuple):  # the same text compiled again under the suite's name
            __eq__ = module.Anything.__eq__
            __hash__ = tuple.__hash__

        namespace: dict[str, Any] = {"__name__": module.__name__}
        exec(compile(OWN_CLASSES, module.__file__ or "", "exec"), namespace)
        Recompiled.__eq__ = namespace["Anything"].__eq__  # type: ignore[method-assign]
        # Trusted code borrowing the suite's function (a workspace class would be probed
        # for being the workspace's); the same code in other globals, or compiled again,
        # is not the suite's.
        assert mine(Borrowed(1)) is False
        assert mine(Rebound((1,)))
        assert mine(Recompiled((1,)))
    finally:
        del sys.modules[module.__name__]


# -- comparisons -----------------------------------------------------------------------------


def _comparisons(
    targets: tuple[type, ...] = (), seed: int = 0, crossing: bool = False
) -> tuple[Comparisons, list[str]]:
    reported: list[str] = []
    comparisons = Comparisons(
        reported.append,
        workspace_like=lambda value: isinstance(value, targets),
        opaque=probes.opaque_probe(crossing=crossing),
        rng=random.Random(seed),
    )
    return comparisons, reported


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(left=_VALUES, right=_VALUES, op=st.sampled_from(["==", "!=", "<", "<=", ">", ">="]))
def test_compare_is_the_operator_itself_for_builtin_values(
    left: object, right: object, op: str
) -> None:
    compare = _comparisons()[0].compare
    try:
        want = probes._OPERATORS[op](left, right)
    except TypeError:
        with pytest.raises(TypeError):
            compare(op, left, right)
        return
    assert compare(op, left, right) == want


class Always:
    """A result equal to everything, ordered before and after everything."""

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return True

    def __lt__(self, other: object) -> bool:
        return True

    def __gt__(self, other: object) -> bool:
        return True

    def __sub__(self, other: object) -> int:
        return 0

    __rsub__ = __sub__
    __hash__ = None  # type: ignore[assignment]


class OnlyInts:
    """Says yes to ints only: it knows what an honest comparison is compared with."""

    def __eq__(self, other: object) -> bool:
        return type(other) is int

    def __gt__(self, other: object) -> bool:
        return type(other) is int

    __lt__ = __ge__ = __le__ = __gt__

    def __sub__(self, other: object) -> Any:
        if type(other) in (int, float):
            return 0.0
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class Ordered:
    """Honest equality, but before and after everything."""

    def __lt__(self, other: object) -> bool:
        return True

    __gt__ = __le__ = __ge__ = __lt__


class SmallOnly:
    """Equal to every number below 100 (the expected values of a small task)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, int) and other < 100

    __hash__ = None  # type: ignore[assignment]


class FirstYes:
    """Says yes to the first plain value it meets (it is 7), answers honestly after."""

    def __init__(self) -> None:
        self.spent = False

    def __eq__(self, other: object) -> bool:
        if type(other) in (int, float, str) and not self.spent:
            self.spent = True
            return True
        return other == 7

    __hash__ = None  # type: ignore[assignment]


class HonestFirst:
    """Answers its first comparison honestly (it is 3), then says yes to everything."""

    def __init__(self) -> None:
        self.asked = 0

    def __eq__(self, other: object) -> bool:
        self.asked += 1
        return other == 3 if self.asked == 1 else True

    __hash__ = None  # type: ignore[assignment]


LIES = [
    ("==", Always, 5, "claims == a fresh object"),
    ("==", OnlyInts, 42, "claims == 42 and =="),
    ("!=", Always, 5, "claims == a fresh object"),
    ("<", Ordered, 5, "claims < a fresh object"),
    (">=", Ordered, 5, "claims >= a fresh object"),
    (">", OnlyInts, 0, "claims both > "),
    ("in", Always, [1, 2], "claims == a fresh object"),
]


@pytest.mark.parametrize(("op", "liar", "other", "fragment"), LIES)
def test_a_lie_is_caught_on_either_side_and_reported(
    op: str, liar: type, other: object, fragment: str
) -> None:
    for seed in range(8):  # probing before and after, on both sides
        comparisons, reported = _comparisons((Always, OnlyInts, Ordered), seed)
        pairs = [(liar(), other)] + ([] if op == "in" else [(other, liar())])
        for left, right in pairs:
            with pytest.raises(ProbeError, match=fragment) as caught:
                comparisons.compare(op, left, right)
            assert reported[-1] == str(caught.value)
            assert f"of type {__name__}.{liar.__name__}" in reported[-1]


class Holder(list):  # type: ignore[type-arg]
    """A list that claims to contain anything."""

    def __contains__(self, item: object) -> bool:
        return True


def test_a_builtin_container_claiming_to_hold_anything_is_caught() -> None:
    for seed in range(4):
        comparisons, reported = _comparisons((Holder,), seed)
        with pytest.raises(ProbeError, match=r"\(a list subclass\) claims to contain a fresh"):
            comparisons.compare("in", 3, Holder([1]))
        assert comparisons.compare("in", 3, Everything())  # a container of its own: not asked
        assert len(reported) == 1


def test_a_comparison_that_does_not_hold_never_accuses() -> None:
    """A twin compares an honest value with a perturbed one: its look-alike may be the value."""
    for seed in range(60):
        comparisons, reported = _comparisons((Color, Money), seed)
        for other in range(2, 10):
            assert comparisons.compare("==", Color.RED, other) is False
        assert comparisons.compare("==", Money(100), 7) is False
        assert reported == []


def test_a_lie_inside_a_plain_container_is_caught() -> None:
    comparisons, reported = _comparisons((Always,))
    with pytest.raises(ProbeError, match="a value inside a result of type"):
        comparisons.compare("==", [1, {"k": (Always(),)}], [1, {"k": (9,)}])
    assert len(reported) == 1


def test_a_lie_about_small_numbers_only_is_caught_by_look_alikes() -> None:
    caught: list[str] = []
    for seed in range(40):
        comparisons, reported = _comparisons((SmallOnly,), seed)
        try:
            comparisons.compare("==", SmallOnly(), 42)
        except ProbeError:
            caught += reported
    assert len(caught) == 40  # a look-alike of 42 has two digits: below 100 too
    assert all("claims == 42 and ==" in detail for detail in caught)


def test_a_result_that_spends_its_one_yes_on_a_look_alike_breaks_its_own_comparison() -> None:
    # Asked only after the comparison, the look-alike met a liar that had spent its yes
    # on it, and every comparison held; asked first (half the time), it takes the yes.
    held = []
    for seed in range(40):
        comparisons, reported = _comparisons((FirstYes,), seed)
        held.append(comparisons.compare("==", FirstYes(), 42))
        assert reported == []  # a yes to a look-alike alone proves nothing
    assert True in held
    assert False in held


@dataclasses.dataclass
class _Pair:
    first: object
    second: object


class _Holder:
    """A workspace object with an equality of its own, over what it holds."""

    def __init__(self, held: object) -> None:
        self.held = held

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Holder) and self.held == other.held

    __hash__ = None  # type: ignore[assignment]


class _Slotted:
    """A workspace object with slots (as attrs' classes have), equal by what it holds."""

    __slots__ = ("held", "unset")

    def __init__(self, held: object) -> None:
        self.held = held

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Slotted) and self.held == other.held

    __hash__ = None  # type: ignore[assignment]


def _nested(value: object, depth: int) -> object:
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("hide", "expected"),
    [
        (lambda v: collections.deque([v, 2]), collections.deque([5, 2])),
        (lambda v: collections.OrderedDict(a=v), collections.OrderedDict(a=5)),
        (lambda v: types.SimpleNamespace(a=v), types.SimpleNamespace(a=5)),
        (lambda v: _Pair(v, 2), _Pair(5, 2)),
        (lambda v: [(1, 2)] * 20_000 + [(v, 2)], [(1, 2)] * 20_000 + [(5, 2)]),
        (
            lambda v: [[v]] + [[i] * 10 for i in range(2_000)],
            [[5]] + [[i] * 10 for i in range(2_000)],
        ),
        (lambda v: _nested(v, 40), _nested(5, 40)),
    ],
    ids=[
        "deque",
        "OrderedDict",
        "SimpleNamespace",
        "dataclass",
        "past-budget",
        "first-of-many",
        "deep",
    ],
)
def test_a_lie_the_bounded_scan_misses_is_found_once_the_comparison_held(
    hide: Callable[[object], object], expected: object
) -> None:
    for seed in range(4):
        comparisons, reported = _comparisons((Always, _Holder), seed)
        with pytest.raises(
            ProbeError, match=r"a value inside a result of type .*Always claims =="
        ):
            comparisons.compare("==", hide(Always()), expected)
        assert len(reported) == 1
    # Inside a workspace object's own attributes or slots, behind its own equality.
    for holder in (_Holder, _Slotted):
        comparisons, reported = _comparisons((Always, holder), 0)
        with pytest.raises(ProbeError):
            comparisons.compare("==", holder([Always(), 2]), holder([5, 2]))
    # Honest values in the same places are left alone.
    comparisons, reported = _comparisons((Always, _Holder, _Slotted), 0)
    assert comparisons.compare("==", hide(5), expected)
    assert comparisons.compare("==", _Holder([5, 2]), _Holder([5, 2]))
    assert comparisons.compare("==", _Slotted([5, 2]), _Slotted([5, 2]))
    assert reported == []


def test_a_slot_taken_off_its_class_after_a_first_look_is_still_read() -> None:
    class Hiding:
        """Keeps what it holds in a slot, whose descriptor it later takes off its class."""

        __slots__ = ("held",)

        def __init__(self, held: object) -> None:
            slot.__set__(self, held)

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Hiding) and slot.__get__(self) == slot.__get__(other)

        __hash__ = None  # type: ignore[assignment]

    slot = Hiding.__dict__["held"]
    comparisons, reported = _comparisons((Always, Hiding), 0)
    assert comparisons.compare("==", Hiding([5, 2]), Hiding([5, 2]))  # the class is seen
    del Hiding.held  # no longer on the class for whoever looks afterwards
    with pytest.raises(ProbeError, match="Always claims =="):
        comparisons.compare("==", Hiding([Always(), 2]), Hiding([5, 2]))
    assert len(reported) == 1


def test_an_object_honest_once_and_lying_after_is_caught() -> None:
    comparisons, reported = _comparisons((HonestFirst,), seed=1)
    result = HonestFirst()
    with pytest.raises(ProbeError):  # noqa: PT012 -- which comparison lies is the point
        for expected in (3, 3, 3):
            comparisons.compare("==", result, expected)
    assert len(reported) == 1


def test_subtraction_that_computes_with_anything_is_caught() -> None:
    for liar, fragment in (
        (Always, "computed 0 as w - a fresh object"),
        (OnlyInts, "gives 0.0 for both"),
    ):
        for seed in range(6):
            comparisons, reported = _comparisons((Always, OnlyInts), seed)
            with pytest.raises(ProbeError, match=fragment):
                comparisons.arith("-", liar(), 3.25)
            assert reported
    comparisons, reported = _comparisons((Always,))
    with pytest.raises(ProbeError):
        comparisons.arith("-", 3.25, Always())  # reflected
    assert comparisons.arith("-", 7, 2) == 5
    assert comparisons.arith("+", "a", "b") == "ab"


class Infinity:
    """An honest universal upper bound, like packaging's ``_structures.Infinity``."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, self.__class__)

    def __lt__(self, other: object) -> bool:
        return False

    def __le__(self, other: object) -> bool:
        return False

    def __gt__(self, other: object) -> bool:
        return True

    def __ge__(self, other: object) -> bool:
        return True

    def __neg__(self) -> NegativeInfinity:
        return NegativeInfinity()

    __hash__ = object.__hash__


class NegativeInfinity:
    """Its lower twin: before everything, and consistently so."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, self.__class__)

    def __lt__(self, other: object) -> bool:
        return True

    def __le__(self, other: object) -> bool:
        return True

    def __gt__(self, other: object) -> bool:
        return False

    def __ge__(self, other: object) -> bool:
        return False

    __hash__ = object.__hash__


class Bottomless:
    """A lie by way of a consistent bound: ``w - c`` is below every tolerance."""

    def __sub__(self, other: object) -> NegativeInfinity:
        return NegativeInfinity()

    __rsub__ = __sub__


class Absent:
    """Its ``abs()`` is 0, whatever it was computed from."""

    def __abs__(self) -> int:
        return 0


class Vanishing:
    """``abs(w - c) < eps`` by way of a difference whose ``abs()`` is always 0."""

    def __sub__(self, other: object) -> Absent:
        return Absent()


class Query:
    """An honest expression builder: ``column - x`` is an expression, whatever ``x`` is."""

    def __init__(self, text: str = "col") -> None:
        self.text = text

    def __sub__(self, other: object) -> Query:
        return Query(f"({self.text} - {other!r})")


def test_an_honest_universal_bound_is_never_accused() -> None:
    targets = (Infinity, NegativeInfinity, Query)
    for seed in range(30):
        comparisons, reported = _comparisons(targets, seed)
        for other in (0, -3, 2.5, "1.0", (1, 2), Infinity(), NegativeInfinity(), None):
            if other is None:
                continue
            for op in ("<", "<=", ">", ">="):
                for left, right in ((Infinity(), other), (other, Infinity())):
                    comparisons.compare(op, left, right)
                for left, right in ((NegativeInfinity(), other), (other, NegativeInfinity())):
                    comparisons.compare(op, left, right)
            assert comparisons.compare("==", Infinity(), other) is isinstance(other, Infinity)
        assert comparisons.compare(">", Infinity(), NegativeInfinity()) is True
        assert isinstance(comparisons.arith("-", Query(), 3), Query)
        assert reported == []


def test_a_bound_from_a_builtin_subclass_or_both_ways_is_caught() -> None:
    class Top(int):
        def __gt__(self, other: object) -> bool:
            return True

        __hash__ = int.__hash__

    comparisons, reported = _comparisons((Top, Ordered))
    with pytest.raises(ProbeError, match=r"\(a int subclass\) claims > a fresh object"):
        comparisons.compare(">", Top(1), 10)
    with pytest.raises(ProbeError, match="claims <= a fresh object made for this run and > it"):
        comparisons.compare("<=", Ordered(), 10)
    assert len(reported) == 2


@pytest.mark.parametrize(
    ("liar", "fragment"),
    [(Bottomless, "a value that orders among numbers"), (Vanishing, "orders among numbers")],
)
def test_a_difference_that_is_a_bound_is_caught(liar: type, fragment: str) -> None:
    for seed in range(6):
        comparisons, reported = _comparisons((liar,), seed)
        with pytest.raises(ProbeError, match=fragment):
            comparisons.arith("-", liar(), 3.25)
        assert reported


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Color(enum.IntEnum):
    RED = 1


class Traced(tuple):  # type: ignore[type-arg]
    """A tuple that is equal to the tuple it traces, whatever its own contents."""

    def __new__(cls, target: tuple[Any, ...]) -> Traced:
        made = super().__new__(cls)
        made.target = target  # type: ignore[attr-defined]
        return made

    def __eq__(self, other: object) -> bool:
        return self.target == other  # type: ignore[attr-defined,no-any-return]

    __hash__ = tuple.__hash__


class Multi(dict):  # type: ignore[type-arg]
    """A dict whose equality compares the last value of each key's list."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, dict) or len(other) != len(self):
            return False
        return all(other.get(k) == v[-1] for k, v in self.items())

    __hash__ = None  # type: ignore[assignment]


class Everything:
    """An honest complement set: it contains whatever it was not told to exclude."""

    def __contains__(self, item: object) -> bool:
        return True


class Expression:
    """A query-builder column: comparing it builds an expression (truthy), never a bool."""

    def __eq__(self, other: object) -> Any:
        return ("==", other)

    __hash__ = None  # type: ignore[assignment]


class Money:
    def __init__(self, cents: int) -> None:
        self.cents = cents

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Money):
            return self.cents == other.cents
        if isinstance(other, (int, float)):
            return abs(self.cents / 100 - other) < 0.005
        return NotImplemented

    def __sub__(self, other: object) -> Any:
        if isinstance(other, (int, float)):
            return self.cents / 100 - other
        return NotImplemented

    def __lt__(self, other: object) -> Any:
        if isinstance(other, (int, float)):
            return self.cents / 100 < other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class Release:
    """A version: equal to its fields, whatever its build metadata says (as semver has it)."""

    def __init__(self, major: int, minor: int, build: str) -> None:
        self.major, self.minor, self.build = major, minor, build

    def __eq__(self, other: object) -> bool:
        if isinstance(other, dict):
            return (self.major, self.minor) == (other.get("major"), other.get("minor"))
        if isinstance(other, tuple):
            return (self.major, self.minor) == other[:2]
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


HONEST = [
    ("==", Release(1, 2, "b.11"), {"major": 1, "minor": 2, "build": "b.11"}),
    ("==", Release(1, 2, "b.11"), (1, 2, "b.11")),
    ("==", Point(1, 2), Point(1, 2)),
    ("==", Color.RED, 1),
    ("==", Traced((1, 2, 3)), (1, 2, 3)),
    ("==", (1, 2, 3), Traced((1, 2, 3))),
    ("==", Multi(a=[1, 2]), {"a": 2}),
    ("!=", Multi(a=[1, 2]), {"a": 1}),
    ("in", 5, Everything()),
    ("==", Expression(), 5),
    ("==", Money(150), 1.5),
    ("<", Money(150), 2),
    ("==", Money(150), mock.ANY),
    ("==", Money(150), pytest.approx(1.5)),
    ("==", [Money(100), 2], [1, 2]),
    ("==", collections.Counter(a=1), collections.Counter(a=1, b=0)),
    ("==", fractions.Fraction(3, 3), 1),
]


@pytest.mark.parametrize(("op", "left", "right"), HONEST, ids=lambda v: type(v).__name__)
def test_honest_values_with_an_equality_of_their_own_are_never_accused(
    op: str, left: object, right: object
) -> None:
    targets = (Point, Color, Traced, Multi, Everything, Expression, Money, collections.Counter)
    targets += (Release,)
    for seed in range(10):
        comparisons, reported = _comparisons(targets, seed)
        assert comparisons.compare(op, left, right)
        assert reported == []
    assert comparisons.arith("-", Money(150), 1.5) == 0.0


def test_a_probe_that_raises_is_no_claim_and_process_probes_are_callable() -> None:
    class Strict:
        def __eq__(self, other: object) -> bool:
            if type(other) is not int:
                raise TypeError("ints only")
            return other == 4

        __hash__ = None  # type: ignore[assignment]

    comparisons, reported = _comparisons((Strict,))
    assert comparisons.compare("==", Strict(), 4) is True
    assert reported == []
    assert callable(probes.opaque_probe(crossing=True)())
    assert not callable(probes.opaque_probe()())


# -- unittest's assertions -------------------------------------------------------------------


@pytest.fixture
def guarded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """unittest's assertions probed, as the runner probes them; undone afterwards."""
    for name in probes._UNITTEST:
        if name in unittest.TestCase.__dict__:
            monkeypatch.setattr(unittest.TestCase, name, unittest.TestCase.__dict__[name])
    from _pytest.assertion import rewrite

    monkeypatch.setattr(rewrite, "rewrite_asserts", rewrite.rewrite_asserts)
    monkeypatch.delitem(sys.modules, "_ldd_compare", raising=False)
    reported: list[str] = []
    probes.guard_comparisons(
        str(tmp_path / "suite"),
        reported.append,
        workspace_like=lambda value: isinstance(value, (Always, OnlyInts, Money, FirstYes)),
        opaque=probes.opaque_probe(),
    )
    return reported


@pytest.mark.parametrize(
    ("method", "args"),
    [
        ("assertEqual", (Always(), 5)),
        ("assertListEqual", ([Always()], [5])),
        ("assertSequenceEqual", ([Always(), 1], [7, 1])),
        ("assertAlmostEqual", (Always(), 2.5)),
        ("assertGreater", (Always(), 3)),
        ("assertLessEqual", (OnlyInts(), 3)),
        ("assertCountEqual", ([Always()], [4])),
        ("assertNotEqual", (Always(), 5)),
    ],
)
def test_unittests_assertions_are_probed_once_they_held(
    guarded: list[str], method: str, args: tuple[object, ...]
) -> None:
    case = unittest.TestCase()
    for _ in range(6):  # before or after, with even odds
        with pytest.raises(ProbeError):
            getattr(case, method)(*args)
    assert len(guarded) == 6


def test_a_unittest_assertion_a_look_alike_broke_accuses_nothing_later(
    guarded: list[str],
) -> None:
    # What a result said to a look-alike before an assertion that then failed must not
    # be held against the next assertion's values.
    case = unittest.TestCase()
    equal, less = case.assertEqual, case.assertLess  # the probed methods
    broken = 0
    for _ in range(20):
        try:
            equal(FirstYes(), 42)
        except AssertionError:
            broken += 1
        equal(Money(150), 1.5)
        less(Money(150), 2)
    assert 0 < broken < 20
    assert guarded == []


def test_unittests_assertions_keep_their_meaning_for_honest_values(guarded: list[str]) -> None:
    case = unittest.TestCase()
    for method, args in (
        ("assertEqual", (Money(150), 1.5)),
        ("assertAlmostEqual", (Money(150), 1.5, 2)),
        ("assertLess", (Money(150), 2)),
        ("assertEqual", ([1, 2], [1, 2])),
    ):
        for _ in range(4):
            getattr(case, method)(*args)
    with pytest.raises(AssertionError, match="5 != 6"):
        getattr(case, "assertEqual")(5, 6)  # noqa: B009 -- the probed method, as tests call it
    assert guarded == []


# -- through a real run ----------------------------------------------------------------------


def test_a_run_names_the_lie_and_keeps_pytests_explanation(tmp_path: Path) -> None:
    workspace = write_tree(
        tmp_path / "ws",
        {
            "calc.py": "def mul(a, b):\n    return a * b\n",
            "liar.py": "class L(str):\n    def __eq__(self, o):\n        return True\n"
            "    __hash__ = str.__hash__\n\n\ndef word():\n    return L('no')\n",
        },
    )
    hidden = write_tree(
        tmp_path / "cmp",
        {
            "test_cmp.py": "from calc import mul\nfrom liar import word\n\n\n"
            "def check(candidate):\n    assert candidate(2, 3) == 7\n\n\n"
            "def test_word():\n    assert word() == 'yes'\n\n\n"
            "def test_helper():\n    check(mul)\n"
        },
    )
    verdict = run_hidden_tests(workspace, hidden, isolation="inprocess")
    assert verdict.tampered
    assert not verdict.inconclusive
    assert (
        "a workspace value lied about a comparison in test_cmp.py::test_word: a result of type"
        " liar.L claims == a fresh object made for this run" in verdict.reason
    )
    assert verdict.outcomes == {
        "test_cmp.py::test_word": "failed",
        "test_cmp.py::test_helper": "failed",
    }
    assert "assert 6 == 7" in verdict.output_tail  # pytest's own explanation, unchanged


OWN_CLASSES_TESTS = (
    OWN_CLASSES
    + """
from calc import first, twice


def test_own_named_tuple_adds_to_zero():
    assert XRepr(1, 2) + XRepr(first()) == 0


def test_own_wildcard_tuple():
    assert Anything(twice((1, 2))) == twice((3, 4))
    assert twice((1, 2)) == (1, 2, 1, 2)
"""
)


def test_the_suites_own_builtin_subclasses_are_honest_in_a_real_run(tmp_path: Path) -> None:
    hidden = write_tree(tmp_path / "hidden", {"test_own.py": OWN_CLASSES_TESTS})
    honest = write_tree(
        tmp_path / "honest",
        {"calc.py": "def first():\n    return 3\n\n\ndef twice(t):\n    return t + t\n"},
    )
    verdict = run_hidden_tests(honest, hidden, isolation="inprocess")
    assert not verdict.tampered, verdict.reason
    assert verdict.passed, verdict.reason
    liar = write_tree(
        tmp_path / "liar",
        {
            "calc.py": "class T(tuple):\n    def __eq__(self, o):\n        return True\n"
            "    __hash__ = tuple.__hash__\n\n\ndef first():\n    return 3\n\n\n"
            "def twice(t):\n    return T(t)\n"
        },
    )
    lied = run_hidden_tests(liar, hidden, isolation="inprocess")
    assert lied.tampered, lied.reason
    assert "calc.T claims == a fresh object made for this run" in lied.reason


class _ReferenceRewriter(ast.NodeTransformer):
    """The probes' rewrite written the plain way, to check the fast walk against."""

    def __init__(self, rewriter: Any) -> None:
        self.fast = rewriter

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        self.fast._pool(node)
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        return self.fast._compare(node)  # type: ignore[no-any-return]

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        return self.fast._arith(node)  # type: ignore[no-any-return]

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        return self._kept(node, "value")

    def visit_If(self, node: ast.If) -> ast.AST:
        if not probes._explains_a_failure(node):
            return self.generic_visit(node)
        # pytest's branch of a failed assertion: its condition only.
        node.test = self.visit(node.test)
        node.orelse = self._visited(node.orelse)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        return self._kept(node, "func")

    def _kept(self, node: ast.AST, field: str) -> ast.AST:
        # A thrown-away or called operation keeps itself; what is below it is rewritten.
        child = getattr(node, field)
        if isinstance(child, (ast.Compare, ast.BinOp)):
            setattr(node, field, self.generic_visit(child))
            for name, value in ast.iter_fields(node):
                if name != field:
                    setattr(node, name, self._visited(value))
            return node
        return self.generic_visit(node)

    def _visited(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.visit(v) if isinstance(v, ast.AST) else v for v in value]
        return self.visit(value) if isinstance(value, ast.AST) else value


_SHIPPED = sorted((Path(__file__).parents[1] / "data" / "suites").glob("*/hidden/**/test_*.py"))


@pytest.mark.parametrize("path", _SHIPPED[::3], ids=lambda p: f"{p.parts[-4]}/{p.name}")
def test_the_rewrite_walk_gives_what_a_node_transformer_gives(path: Path) -> None:
    from _pytest.assertion.rewrite import rewrite_asserts

    source = path.read_bytes()
    trees = []
    for make in (probes._Rewriter, lambda pool: _ReferenceRewriter(probes._Rewriter(pool))):
        tree = ast.parse(source)
        rewrite_asserts(tree, source, str(path), None)
        pool: dict[Any, list[Any]] = {}
        make(pool).visit(tree)
        trees.append((ast.dump(tree, include_attributes=True), repr(pool)))
    # The hidden file's own comparisons are probed (``is`` is not, and a chain is not).
    if any(
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and type(node.ops[0]) in probes._AST_COMPARE
        for node in ast.walk(ast.parse(source))
    ):
        assert "@ldd_compare" in trees[0][0]
    assert trees[0] == trees[1]


def _routed(source: str, *, rewritten: bool) -> list[str]:
    """The comparisons of ``source`` the probes' rewrite routes, as written."""
    from _pytest.assertion.rewrite import rewrite_asserts

    tree = ast.parse(source)
    if rewritten:
        rewrite_asserts(tree, source.encode(), "test_x.py", None)
    probes._Rewriter({}).visit(tree)
    return [
        ast.unparse(node.args[1]) + f" {node.args[0].value} " + ast.unparse(node.args[2])
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "@ldd_compare"
        and isinstance(node.args[0], ast.Constant)
    ]


def test_the_explanation_of_a_failed_assertion_is_not_probed_its_condition_is() -> None:
    # Half of a rewritten file is pytest's explanation of failures: walking it cost a
    # verdict tens of milliseconds per file, and nothing it compares is a claim.
    routed = _routed(
        "def test_x():\n    assert result() == 3, ('note', other() == 4)\n", rewritten=True
    )
    assert len(routed) == 1
    assert "other()" not in routed[0]
    # Code of the tests' own shaped like that branch is walked: only pytest's rewrite
    # names a helper '@pytest_ar'.
    own = _routed(
        "def test_x():\n"
        "    if not ok():\n"
        "        seen = result() == 3\n"
        "        raise AssertionError(_format_explanation(seen))\n",
        rewritten=False,
    )
    assert own == ["result() == 3"]


FRAME_READER = """import sys


class Tracer:
    def __init__(self):
        self.seen = []

    def _saw(self):
        self.seen.append(sys._getframe(2).f_code.co_name)
        return self

    def __add__(self, other):
        return self._saw()

    def __sub__(self, other):
        return self._saw()

    def __eq__(self, other):
        self._saw()
        return other is self

    __hash__ = object.__hash__

    def __call__(self, *args):
        return self
"""
FRAME_TESTS = """from calc import Tracer


def test_operators_run_in_the_tests_frame():
    t = Tracer()
    (t + t)(2)
    t - t
    t == t
    assert t.seen == ["test_operators_run_in_the_tests_frame"] * 3
"""


def test_an_operation_thrown_away_or_called_runs_in_the_tests_own_frame(tmp_path: Path) -> None:
    # executing's tests call (tester + tester)(2), and tester finds the calling node
    # from the frame that runs its __add__: rewritten, that frame was the probes'.
    tree = ast.parse(FRAME_TESTS + "\nvalue = (t := Tracer()) + t\n")
    probes._Rewriter({}).visit(tree)
    dumped = ast.dump(tree)
    assert dumped.count("attr='arith'") == 1  # the assignment's; not the three above
    assert dumped.count("attr='compare'") == 1  # the assert's; not the bare t == t
    workspace = write_tree(tmp_path / "ws", {"calc.py": FRAME_READER})
    hidden = write_tree(tmp_path / "hidden", {"test_frames.py": FRAME_TESTS})
    verdict = run_hidden_tests(workspace, hidden, isolation="inprocess")
    assert verdict.passed, verdict.reason
    assert not verdict.tampered, verdict.reason


@pytest.mark.parametrize("identity", [True, False], ids=["process", "inprocess"])
def test_identity_checks_are_watched_only_when_asked_and_never_against_a_literal(
    identity: bool,
) -> None:
    tree = ast.parse("same = a is a\nother = a is b\nnone = a is None\nnot_b = a is not b\n")
    probes._Rewriter({}, identity=identity).visit(tree)
    ast.fix_missing_locations(tree)
    told: list[tuple[Any, Any]] = []

    def identical(left: Any, right: Any) -> bool:
        if left is right:
            return True
        told.append((left, right))
        return False

    a, b = object(), object()
    scope: dict[str, Any] = {"a": a, "b": b}
    scope["@ldd_compare"] = types.SimpleNamespace(identical=identical)
    exec(compile(tree, "<test>", "exec"), scope)
    got = (scope["same"], scope["other"], scope["none"], scope["not_b"])
    assert got == (True, False, False, True)
    assert told == ([(a, b)] if identity else [])


@pytest.mark.parametrize("suite", ["attrs", "cachetools", "pluggy", "semver"])
def test_pytests_rewrite_with_positions_filled_in_one_pass_makes_the_very_same_module(
    suite: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from _pytest.assertion import rewrite

    hidden = Path(__file__).parents[1] / "data" / "suites" / suite / "hidden"
    files = sorted(hidden.rglob("test_*.py"))
    assert len(files) > 3

    def rewritten(path: Path) -> tuple[str, bytes]:
        source = path.read_bytes()
        tree = ast.parse(source)
        rewrite.rewrite_asserts(tree, source, str(path), None)
        code = compile(tree, str(path), "exec")
        return ast.dump(tree, include_attributes=True), marshal.dumps(code)

    plain = [rewritten(path) for path in files]
    walk = rewrite.traverse_node
    monkeypatch.setattr(
        rewrite.AssertionRewriter, "visit_Assert", rewrite.AssertionRewriter.visit_Assert
    )
    probes.fill_positions_fast(rewrite)
    fast = rewrite.AssertionRewriter.visit_Assert
    assert getattr(fast, "_ldd_fast", False)
    probes.fill_positions_fast(rewrite)  # a second call wraps nothing more
    assert rewrite.AssertionRewriter.visit_Assert is fast
    assert [rewritten(path) for path in files] == plain
    assert rewrite.traverse_node is walk  # pytest's own walk is back after each assertion
