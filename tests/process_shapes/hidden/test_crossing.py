"""What crosses between the judge and the subject: judge objects, values, introspection."""

import collections
import dataclasses
import datetime
import decimal
import enum
import fractions
import functools
import inspect
import itertools
import pathlib
import random
import re
import uuid
from unittest import mock

import pytest

import crossing


# -- judge objects handed to workspace code ------------------------------------------------


def test_a_generator():
    assert crossing.total(x * x for x in range(4)) == 14


def test_iterators_of_every_kind():
    assert crossing.first_two(iter([5, 6, 7])) == [5, 6]
    assert crossing.first_two(map(str, range(3))) == ["0", "1"]
    assert crossing.first_two(zip("ab", "cd")) == [("a", "c"), ("b", "d")]
    assert crossing.first_two(itertools.count(10)) == [10, 11]
    assert crossing.total(range(5)) == 10


def test_the_workspace_consumes_only_what_it_needs():
    source = iter(range(10))
    assert crossing.first_two(source) == [0, 1]
    assert next(source) == 2


class Item:
    def __init__(self, name, price):
        self.name = name
        self.price = price

    def label(self, currency="EUR"):
        return f"{self.name}: {self.price} {currency}"


def test_an_object_with_behaviour():
    item = Item("tea", 3)
    assert crossing.describe(item) == "tea: 3 EUR"
    crossing.discount(item, 1)
    assert item.price == 2


def test_bound_methods_partials_and_mocks():
    item = Item("tea", 3)
    assert crossing.call(item.label, "USD") == "tea: 3 USD"
    assert crossing.call(functools.partial(pow, 2), 5) == 32
    fake = mock.Mock(return_value=7)
    assert crossing.call(fake, 1) == 7
    fake.assert_called_once_with(1)


def test_an_exception_as_an_argument():
    error = KeyError("k")
    assert crossing.describe_error(error) == "KeyError ('k',)"
    with pytest.raises(KeyError) as info:
        crossing.raise_it(error)
    assert info.value is error


class OwnError(Exception):
    pass


def test_a_test_exception_raised_by_workspace_code_with_a_cause():
    error = OwnError("mine")
    with pytest.raises(RuntimeError) as info:
        crossing.wrap(error)
    assert info.value.__cause__ is error
    assert str(info.value) == "wrapped: mine"


def test_a_workspace_exception_keeps_its_cause_and_context():
    with pytest.raises(crossing.ParseError) as info:
        crossing.parse("x")
    assert isinstance(info.value.__cause__, ValueError)
    assert info.value.__cause__.args == ("invalid literal for int() with base 10: 'x'",)
    assert info.value.text == "x"


# -- builtin subclasses and values -----------------------------------------------------------


def test_stdlib_containers_keep_their_class():
    counts = crossing.counts("abca")
    assert type(counts) is collections.Counter
    assert counts.most_common(1) == [("a", 2)]
    groups = crossing.groups(["ax", "by", "az"])
    assert type(groups) is collections.defaultdict
    assert groups["a"] == ["ax", "az"]
    assert groups["missing"] == []
    ordered = crossing.ordered()
    assert type(ordered) is collections.OrderedDict
    assert list(ordered) == ["b", "a"]
    window = crossing.window([1, 2, 3, 4])
    assert type(window) is collections.deque
    assert window.maxlen == 2
    assert list(window) == [3, 4]


def test_a_defaultdict_with_a_workspace_factory():
    table = crossing.zeros()
    assert table["x"] == 0


def test_enums():
    assert crossing.Color.RED.name == "RED"
    assert crossing.Color.RED.value == 1
    assert crossing.Color.RED == 1
    assert isinstance(crossing.Color.RED, crossing.Color)
    assert crossing.Color(2) is crossing.Color.GREEN
    assert [c.name for c in crossing.Color] == ["RED", "GREEN"]
    assert crossing.Shape.ROUND.name == "ROUND"
    assert crossing.flags() == re.IGNORECASE | re.MULTILINE
    assert isinstance(crossing.flags(), re.RegexFlag)


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


def test_a_judge_enum_goes_and_comes_back_as_itself():
    assert crossing.identity(Level.HIGH) is Level.HIGH
    assert crossing.double(Level.HIGH) == 4


def test_named_tuples():
    point = crossing.point(3, 4)
    assert point == (3, 4)
    assert point.x == 3
    assert point._fields == ("x", "y")
    assert point._asdict() == {"x": 3, "y": 4}
    assert point.norm() == 5.0
    assert isinstance(point, tuple)
    assert isinstance(point, crossing.Point)
    pair = crossing.pair(1, 2)
    assert pair.left == 1
    assert pair._replace(left=5) == (5, 2)


def test_a_str_subclass_keeps_its_methods():
    word = crossing.shout("hi")
    assert word == "HI"
    assert word.exclaim() == "HI!"
    assert isinstance(word, str)


def test_values():
    stamp = crossing.moment()
    assert stamp == datetime.datetime(2024, 2, 29, 12, 0, tzinfo=datetime.timezone.utc)
    assert crossing.money() == decimal.Decimal("1.10")
    assert crossing.ratio() == fractions.Fraction(1, 3)
    assert crossing.ident() == uuid.UUID(int=5)
    assert crossing.where() == pathlib.PurePosixPath("a/b")
    assert crossing.frozen() == frozenset({1, 2})
    assert crossing.raw() == (b"ab", bytearray(b"cd"))
    assert crossing.span() == range(2, 10, 3)
    assert crossing.cut() == slice(1, None, 2)


# -- introspection -----------------------------------------------------------------------------


def test_names_and_docs():
    assert crossing.add.__name__ == "add"
    assert crossing.add.__qualname__ == "add"
    assert crossing.add.__module__ == "crossing"
    assert crossing.add.__doc__ == "The sum of a and b."
    assert crossing.Box.__doc__ == "Holds things."
    assert crossing.Box.__name__ == "Box"
    assert crossing.Box().__doc__ == "Holds things."


def test_signatures_and_kinds():
    signature = inspect.signature(crossing.add)
    assert list(signature.parameters) == ["a", "b"]
    assert signature.parameters["b"].default == 0
    assert signature.return_annotation == "int"
    assert inspect.isclass(crossing.Box)
    assert not inspect.isclass(crossing.add)
    assert callable(crossing.Box)


def test_wraps_keeps_the_metadata():
    assert crossing.decorated.__name__ == "decorated"
    assert crossing.decorated.__doc__ == "Decorated, still documented."
    assert crossing.decorated.__wrapped__(2) == 4
    assert list(inspect.signature(crossing.decorated).parameters) == ["n"]


def test_dataclasses():
    pair = crossing.Pair(1, 2)
    assert dataclasses.is_dataclass(pair)
    assert dataclasses.is_dataclass(crossing.Pair)
    assert [f.name for f in dataclasses.fields(crossing.Pair)] == ["left", "right"]
    assert dataclasses.asdict(pair) == {"left": 1, "right": 2}
    assert pair == crossing.Pair(1, 2)


def test_abc_checks():
    assert isinstance(crossing.Box(), collections.abc.Sized)
    assert isinstance(crossing.Box(), collections.abc.Iterable)


# -- context managers --------------------------------------------------------------------------


def test_exit_sees_the_real_exception_and_may_suppress_it():
    with crossing.Suppressing(KeyError) as seen:
        raise KeyError("gone")
    assert seen.caught == ("KeyError", ("gone",))
    with pytest.raises(ValueError, match="kept"):
        with crossing.Suppressing(KeyError):
            raise ValueError("kept")


def test_a_generator_based_context_manager():
    with crossing.annotating("step") as log:
        pass
    assert log.lines == ["enter step", "exit step"]
    with pytest.raises(RuntimeError) as info:
        with crossing.annotating("boom"):
            raise ValueError("inner")
    assert isinstance(info.value.__cause__, ValueError)
    assert str(info.value) == "boom failed"


# -- keyword arguments named like the receiver -------------------------------------------------


def test_keyword_arguments_named_self_and_cls():
    # cachetools' methodkey(self, /, *args, **kwargs) is called with self=1.
    assert crossing.keyed("x", 1, self=2, cls=3) == ("x", (1,), [("cls", 3), ("self", 2)])
    assert crossing.Keywords(self=1).given == ["self"]
    assert crossing.Keywords().take(self=1, cls=2) == ["cls", "self"]


def test_the_random_modules_functions_are_themselves():
    # cachetools' RRCache(choice=random.choice).choice is random.choice
    assert crossing.choice_of() is random.choice
    assert crossing.choice_of(random.shuffle) is random.shuffle
