"""The handle table of process isolation, alone: numbers both ways, lifetimes, class records."""

from __future__ import annotations

import collections
import dataclasses
import enum
import gc
import inspect
import os
import re
import typing
from typing import Any

import pytest

from pytest_ldd._sandbox import handles, wire

# -- exports: this side's objects, by number --------------------------------------------------


def test_an_object_keeps_its_number_and_numbers_are_never_reused() -> None:
    table = handles.HandleTable()
    first, second = object(), object()
    assert table.export(first) == (1, True)
    assert table.export(first) == (1, False)
    assert table.export(second) == (2, True)
    table.release((1,))
    assert table.export(first) == (3, True)  # lent again: a fresh number
    assert table.exported(3) is first
    with pytest.raises(wire.WireError, match="never given, or released"):
        table.exported(1)


@pytest.mark.parametrize("number", [0, -1, 99, "1", 1.0, None])
def test_a_number_never_lent_is_a_wire_error(number: Any) -> None:
    table = handles.HandleTable()
    table.export(object())
    if number == 1.0:  # a float that equals a real number is still no number
        with pytest.raises(wire.WireError):
            table.exported(number)
        return
    with pytest.raises(wire.WireError):
        table.exported(number)


def test_release_ignores_what_is_no_tuple_of_numbers() -> None:
    table = handles.HandleTable()
    kept = object()
    table.export(kept)
    table.release([1])
    table.release(("1", None))
    assert table.exported(1) is kept
    assert table.exports() == 1


# -- imports: stand-ins of the other side's objects -------------------------------------------


class _Stand:
    pass


def test_a_stand_in_is_found_by_number_and_by_identity() -> None:
    table = handles.HandleTable()
    stand = _Stand()
    table.keep(7, stand)
    assert table.borrowed(7) is stand
    assert table.number_of(stand) == 7
    assert table.number_of(_Stand()) is None


def test_a_stand_in_that_dies_is_released_with_the_next_request() -> None:
    table = handles.HandleTable()
    table.keep(7, _Stand())
    gc.collect()
    assert table.borrowed_quietly(7) is None
    assert table.releases() == (7,)
    assert table.releases() == ()


def test_a_number_lent_again_before_its_release_was_sent_is_not_released() -> None:
    table = handles.HandleTable()
    table.keep(7, _Stand())
    gc.collect()  # dead: its release is pending
    assert table.borrowed(7) is None  # ... and the other side lends 7 again
    assert table.releases() == ()


class _Int(int):
    pass


def test_stand_ins_without_weak_references_are_held_until_nothing_else_holds_them() -> None:
    table = handles.HandleTable()
    value = _Int(3)
    table.keep(9, value)
    assert table.held() == 1
    table.sweep()
    assert table.held() == 1  # this test still holds it
    assert table.number_of(value) == 9
    del value
    table.sweep()
    assert table.held() == 0
    assert table.releases() == (9,)


def test_forever_keeps_a_stand_in_for_the_whole_run() -> None:
    table = handles.HandleTable()
    table.keep(4, _Stand(), forever=True)
    gc.collect()
    table.sweep()
    assert isinstance(table.borrowed(4), _Stand)
    assert table.releases() == ()


def test_stand_ins_are_told_apart_by_identity_never_by_equality() -> None:
    class Loud:
        def __eq__(self, other: object) -> bool:
            raise AssertionError("a stand-in's equality is a request")

        def __hash__(self) -> int:
            raise AssertionError("a stand-in's hash is a request")

    table = handles.HandleTable()
    loud = Loud()
    table.keep(2, loud)
    assert table.number_of(loud) == 2
    assert table.borrowed(2) is loud


# -- class records ------------------------------------------------------------------------------


class _Sized:
    """Sized, and with a docstring."""

    def __len__(self) -> int:
        return 0

    def __eq__(self, other: object) -> bool:
        return False


def test_a_record_lists_the_special_methods_and_flags_of_its_class() -> None:
    record = handles.class_record(_Sized)
    module, qualname, bases, meta, special, builtin, flags, value, doc, fields, abcs = record[:11]
    base, methods = record[11:]
    assert (module, qualname) == (__name__, "_Sized")
    assert bases == (object,)
    assert meta is None
    assert "__len__" in special
    assert "__eq__" not in special  # every stand-in compares through its owner anyway
    assert builtin is None
    assert not flags & handles.HASHABLE  # __eq__ without __hash__
    assert value is None
    assert doc == "Sized, and with a docstring."
    assert fields is None
    assert abcs == ()
    assert base is None
    assert methods == ()  # no value base, so no method of one defined again


class _Loud(str):
    def __str__(self) -> str:
        return "loud"

    def shout(self) -> str:
        return self.upper()


def test_a_value_class_lists_only_what_it_overrides_of_its_builtin_base() -> None:
    record = handles.class_record(_Loud)
    assert record[7] == "str"
    assert "__str__" in record[4]
    assert "__eq__" not in record[4]  # the str's own: answered by the value itself
    assert "__len__" not in record[4]


class _Point(typing.NamedTuple):
    x: int
    y: int


def test_a_named_tuple_class_names_its_fields() -> None:
    record = handles.class_record(_Point)
    assert record[7] == "tuple"
    assert record[9] == ("x", "y")
    assert "__repr__" in record[4]  # the named tuple's own


def test_functions_and_exceptions_are_flagged() -> None:
    def function() -> None:
        """Documented."""

    record = handles.class_record(type(function))
    assert record[6] & handles.OWN_DOC  # a function carries its own __doc__
    assert handles.class_record(KeyError)[6] & handles.EXCEPTION
    assert handles.class_record(enum.EnumMeta)[6] & handles.METACLASS


def _checked(raw: tuple[Any, ...], known: dict[int, handles.ClassRecord] | None = None) -> Any:
    return handles.ClassRecord(5, raw, known or {})


GOOD = ("m", "C", (), None, ("__len__",), None, 1, None, "doc", None, (), None, ())


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (GOOD[:12], "malformed class record"),
        ((1, *GOOD[1:]), "malformed class record"),
        ((*GOOD[:2], (3,), *GOOD[3:]), "never described"),
        ((*GOOD[:3], 4, *GOOD[4:]), "never described"),
        ((*GOOD[:4], ("__getattribute__",), *GOOD[5:]), "unknown special methods"),
        ((*GOOD[:6], 1 << 10, *GOOD[7:]), "unknown flags"),
        ((*GOOD[:7], "list", *GOOD[8:]), "unknown value base"),
        ((*GOOD[:9], ("not an identifier",), *GOOD[10:]), "malformed fields"),
        ((*GOOD[:10], ("os.system",), None, ()), "unknown abstract base classes"),
        ((*GOOD[:11], "deque", ()), "unknown container base"),
        ((*GOOD[:12], ("not an identifier",)), "malformed overridden methods"),
    ],
)
def test_a_record_is_checked_field_by_field(raw: tuple[Any, ...], reason: str) -> None:
    with pytest.raises(wire.WireError, match=reason):
        _checked(raw)


def test_a_checked_record_knows_its_remote_mro() -> None:
    base = _checked(GOOD)
    child = handles.ClassRecord(6, ("m", "D", (5,), *GOOD[3:]), {5: base})
    assert child.mro == {5, 6}
    assert child.name == "D"


# -- lending ------------------------------------------------------------------------------------


def test_lending_describes_each_kind_of_object() -> None:
    table = handles.HandleTable()
    kind, number, cls, extra = table.lend(_Sized())
    assert (kind, cls, extra) == ("o", _Sized, None)
    assert table.exported(number).__class__ is _Sized
    assert table.lend(_Loud("a"))[::3] == ("v", "a")
    assert table.lend(_Sized)[0] == "c"
    assert table.lend(_Sized)[2:] == (None, None)  # described once
    assert table.lend(os)[0] == "m"
    assert table.lend(re.IGNORECASE)[3] == ("re", "RegexFlag", re.IGNORECASE.value)


def test_an_exception_is_lent_with_its_state() -> None:
    table = handles.HandleTable()
    cause = ValueError("inner")
    try:
        raise KeyError("k") from cause
    except KeyError as exc:
        exc.extra = 5  # type: ignore[attr-defined]
        kind, _, cls, state = table.lend(exc)
    assert (kind, cls) == ("e", KeyError)
    args, got_cause, context, suppress, text, attrs = state
    assert args == ("k",)
    assert got_cause is cause
    assert context is None
    assert suppress is True
    assert text == "'k'"
    assert attrs == {"extra": 5}


def test_an_exception_chained_to_itself_is_cut_there() -> None:
    table = handles.HandleTable()
    exc = ValueError("loop")
    exc.__context__ = exc
    assert table.lend(exc)[3][2] is None


def test_a_failed_message_undoes_the_classes_it_described() -> None:
    table = handles.HandleTable()
    table.begin()
    table.lend(_Sized)
    table.end(sent=False)
    assert table.lend(_Sized)[3] is not None  # described again
    table.begin()
    table.lend(_Point)
    table.end(sent=True)
    assert table.lend(_Point)[3] is None


def test_a_class_only_described_has_a_number_that_is_never_an_export() -> None:
    table = handles.HandleTable()
    kind, number, _, record = table.lend(_Sized, nameable=False)
    assert kind == "c"
    assert number < 0
    assert record is not None
    assert table.lend(_Sized, nameable=False)[1] == number
    with pytest.raises(wire.WireError):
        table.exported(number)


# -- objects both sides know by name -----------------------------------------------------------


def test_standard_library_enum_members_and_sentinels_cross_by_name() -> None:
    combined = re.IGNORECASE | re.MULTILINE
    name = handles.named_stdlib(combined)
    assert name == ("re", "RegexFlag", combined.value)
    assert handles.resolve_named(name, may_import=False) is combined
    for sentinel in (dataclasses.MISSING, inspect.Parameter.empty):
        found = handles.named_stdlib(sentinel)
        assert found is not None
        assert handles.resolve_named(found, may_import=False) is sentinel


class _Own(enum.Enum):
    A = 1


def test_enums_of_other_modules_do_not_cross_by_name() -> None:
    assert handles.named_stdlib(_Own.A) is None
    assert handles.named_stdlib(3) is None


@pytest.mark.parametrize(
    "name",
    [
        ("os", "system"),
        ("builtins", "eval"),
        ("collections", "OrderedDict", 1),
        ("signal", "Signals", -12345),
        ("not_a_module_anywhere", "X", 1),
        ("re", "__class__.__subclasses__"),
        "re.I",
        ("re", 5, 1),
    ],
)
def test_a_name_that_leads_to_anything_but_an_inert_value_resolves_to_nothing(name: Any) -> None:
    assert handles.resolve_named(name, may_import=False) is None


@pytest.mark.parametrize(
    "name",
    [
        ("builtins", "open"),
        ("builtins", "exec"),
        ("builtins", "vars"),
        ("builtins", "print"),
        ("os", ""),
        ("subprocess", ""),
        ("sys", ""),
        ("importlib", ""),
        ("operator", "__builtins__"),
    ],
)
def test_no_builtin_or_module_that_reaches_beyond_its_arguments_is_named(name: Any) -> None:
    assert handles.resolve_named(name, may_import=True) is None


def test_pure_builtins_operators_and_partial_cross_by_name_both_ways() -> None:
    import functools
    import operator

    for value in (max, sorted, getattr, operator.add, operator.itemgetter, functools.partial):
        name = handles.named_stdlib(value)
        assert name is not None, value
        assert handles.resolve_named(name, may_import=False) is value
    assert handles.named_stdlib(open) is None
    assert handles.named_stdlib(eval) is None


def test_only_the_judge_lends_a_pure_module_by_name_and_only_the_subject_takes_it() -> None:
    import pickle

    judge, subject = handles.HandleTable(names_modules=True), handles.HandleTable()
    kind, _, _, name = judge.lend(pickle)
    assert (kind, name) == ("n", ("pickle", ""))
    assert handles.resolve_named(name, may_import=True) is pickle  # the subject's own
    # The subject's pickle stays its own: a judge that took its own by that name
    # would load what the workspace wrote.
    assert subject.lend(pickle)[0] == "m"
    assert handles.resolve_named(("pickle", ""), may_import=False) is None
    assert judge.lend(os)[0] == "m"  # not a pure module: the judge's policy refuses it


class _NotIterable:
    __iter__ = None
    __contains__ = None

    def __getitem__(self, index: int) -> int:
        return [1][index]


def test_special_methods_set_to_none_are_flagged() -> None:
    flags = handles.class_record(_NotIterable)[6]
    assert flags & handles.NO_ITER
    assert flags & handles.NO_CONTAINS
    assert not flags & handles.NO_REVERSED
    assert not handles.class_record(_Sized)[6] & handles.NO_ITER


def test_the_stand_in_types_know_every_special_method_a_record_may_list() -> None:
    from pytest_ldd._sandbox import stubs

    assert set(stubs.SPECIAL) == handles.SPECIAL_NAMES
    assert collections.abc.Sized  # the records' names are the protocols' own
