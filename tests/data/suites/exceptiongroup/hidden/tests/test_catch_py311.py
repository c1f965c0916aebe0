import sys

import pytest

from exceptiongroup import ExceptionGroup

# PyPy doesn't implicitly chain an exception whose __context__ has been set explicitly,
# as split() does
PYPY = sys.implementation.name == "pypy"


def test_catch_ungrouped():
    value_type_errors = []
    zero_division_errors = []
    for exc in [ValueError("foo"), TypeError("bar"), ZeroDivisionError()]:
        try:
            raise exc
        except* (ValueError, TypeError) as e:
            value_type_errors.append(e)
        except* ZeroDivisionError as e:
            zero_division_errors.append(e)

    assert len(value_type_errors) == 2

    assert isinstance(value_type_errors[0], ExceptionGroup)
    assert len(value_type_errors[0].exceptions) == 1
    assert isinstance(value_type_errors[0].exceptions[0], ValueError)

    assert isinstance(value_type_errors[1], ExceptionGroup)
    assert len(value_type_errors[1].exceptions) == 1
    assert isinstance(value_type_errors[1].exceptions[0], TypeError)

    assert len(zero_division_errors) == 1
    assert isinstance(zero_division_errors[0], ExceptionGroup)
    assert isinstance(zero_division_errors[0].exceptions[0], ZeroDivisionError)
    assert len(zero_division_errors[0].exceptions) == 1


def test_catch_group():
    value_runtime_errors = []
    zero_division_errors = []
    try:
        raise ExceptionGroup(
            "booboo",
            [
                ValueError("foo"),
                ValueError("bar"),
                RuntimeError("bar"),
                ZeroDivisionError(),
            ],
        )
    except* (ValueError, RuntimeError) as exc:
        value_runtime_errors.append(exc)
    except* ZeroDivisionError as exc:
        zero_division_errors.append(exc)

    assert len(value_runtime_errors) == 1
    assert isinstance(value_runtime_errors[0], ExceptionGroup)
    exceptions = value_runtime_errors[0].exceptions
    assert isinstance(exceptions[0], ValueError)
    assert isinstance(exceptions[1], ValueError)
    assert isinstance(exceptions[2], RuntimeError)

    assert len(zero_division_errors) == 1
    assert isinstance(zero_division_errors[0], ExceptionGroup)
    exceptions = zero_division_errors[0].exceptions
    assert isinstance(exceptions[0], ZeroDivisionError)


def test_catch_nested_group():
    value_runtime_errors = []
    zero_division_errors = []
    try:
        nested_group = ExceptionGroup(
            "nested", [RuntimeError("bar"), ZeroDivisionError()]
        )
        raise ExceptionGroup("booboo", [ValueError("foo"), nested_group])
    except* (ValueError, RuntimeError) as exc:
        value_runtime_errors.append(exc)
    except* ZeroDivisionError as exc:
        zero_division_errors.append(exc)

    assert len(value_runtime_errors) == 1
    exceptions = value_runtime_errors[0].exceptions
    assert isinstance(exceptions[0], ValueError)
    assert isinstance(exceptions[1], ExceptionGroup)
    assert isinstance(exceptions[1].exceptions[0], RuntimeError)

    assert len(zero_division_errors) == 1
    assert isinstance(zero_division_errors[0], ExceptionGroup)
    assert isinstance(zero_division_errors[0].exceptions[0], ExceptionGroup)
    assert isinstance(
        zero_division_errors[0].exceptions[0].exceptions[0], ZeroDivisionError
    )


def test_catch_no_match():
    try:
        try:
            group = ExceptionGroup("booboo", [ZeroDivisionError()])
            raise group
        except* (ValueError, RuntimeError):
            pass
    except ExceptionGroup as exc:
        assert isinstance(exc.exceptions[0], ZeroDivisionError)
        assert exc is not group
    else:
        pytest.fail("Did not raise an ExceptionGroup")


def test_catch_single_no_match():
    try:
        try:
            raise ZeroDivisionError
        except* (ValueError, RuntimeError):
            pass
    except ZeroDivisionError:
        pass
    else:
        pytest.fail("Did not raise an ZeroDivisionError")


def test_catch_full_match():
    try:
        raise ExceptionGroup("booboo", [ValueError()])
    except* (ValueError, RuntimeError):
        pass


@pytest.mark.skipif(
    sys.version_info < (3, 11, 4),
    reason="Behavior was changed in 3.11.4",
)
def test_catch_handler_raises():
    with pytest.raises(RuntimeError, match="new") as exc:
        try:
            excgrp = ExceptionGroup("booboo", [ValueError("bar")])
            raise excgrp
        except* ValueError:
            raise RuntimeError("new")

    context = exc.value.__context__
    assert isinstance(context, ExceptionGroup)
    assert str(context) == "booboo (1 sub-exception)"
    assert len(context.exceptions) == 1
    assert isinstance(context.exceptions[0], ValueError)
    assert exc.value.__cause__ is None


def test_catch_subclass():
    lookup_errors = []
    try:
        raise KeyError("foo")
    except* LookupError as e:
        lookup_errors.append(e)

    assert len(lookup_errors) == 1
    assert isinstance(lookup_errors[0], ExceptionGroup)
    exceptions = lookup_errors[0].exceptions
    assert isinstance(exceptions[0], KeyError)


def test_bare_raise_in_handler():
    """Test that the "middle" ecxeption group gets discarded."""
    with pytest.raises(ExceptionGroup) as excgrp:
        try:
            try:
                first_exc = RuntimeError("first")
                raise first_exc
            except RuntimeError as exc:
                middle_exc = ExceptionGroup(
                    "bad", [ValueError(), ValueError(), TypeError()]
                )
                raise middle_exc from exc
        except* ValueError:
            raise
        except* TypeError:
            pass

    assert excgrp.value is not middle_exc
    assert excgrp.value.__cause__ is first_exc
    assert excgrp.value.__context__ is first_exc


def test_handler_raises_subgroup_preserves_group():
    cause = ValueError("cause")
    with pytest.raises(ExceptionGroup) as excgrp:
        try:
            raise ExceptionGroup(
                "booboo", [RuntimeError("handled"), RuntimeError("unhandled")]
            ) from cause
        except* RuntimeError as exc:
            matched = exc
            _, rest = exc.split(lambda exc: str(exc) == "handled")
            raise rest

    assert excgrp.value is rest
    assert len(excgrp.value.exceptions) == 1
    assert isinstance(excgrp.value.exceptions[0], RuntimeError)
    assert str(excgrp.value.exceptions[0]) == "unhandled"
    assert excgrp.value.__cause__ is cause
    if not PYPY:
        assert excgrp.value.__context__ is matched


def test_handler_raises_subgroup_from_none():
    with pytest.raises(ExceptionGroup) as excgrp:
        try:
            raise ExceptionGroup(
                "booboo", [RuntimeError("handled"), RuntimeError("unhandled")]
            ) from ValueError("cause")
        except* RuntimeError as exc:
            matched = exc
            _, rest = exc.split(lambda exc: str(exc) == "handled")
            raise rest from None

    assert excgrp.value.__cause__ is None
    assert excgrp.value.__suppress_context__
    if not PYPY:
        assert excgrp.value.__context__ is matched


def test_handler_raises_subgroup_from_matched():
    with pytest.raises(ExceptionGroup) as excgrp:
        try:
            raise ExceptionGroup(
                "booboo", [RuntimeError("handled"), RuntimeError("unhandled")]
            ) from ValueError("cause")
        except* RuntimeError as exc:
            matched = exc
            _, rest = exc.split(lambda exc: str(exc) == "handled")
            raise rest from exc

    assert excgrp.value.__cause__ is matched
    if not PYPY:
        assert excgrp.value.__context__ is matched


def test_bare_raise_in_handler_preserves_original_chaining():
    context = KeyError("context")
    cause = ValueError("cause")
    with pytest.raises(ExceptionGroup) as excgrp:
        try:
            try:
                raise context
            except KeyError:
                raise ExceptionGroup("booboo", [RuntimeError(), OSError()]) from cause
        except* RuntimeError:
            raise
        except* OSError:
            pass

    assert excgrp.value.__cause__ is cause
    assert excgrp.value.__context__ is context


def test_multiple_handlers_raise_not_chained_to_original():
    with pytest.raises(ExceptionGroup) as excgrp:
        try:
            raise ExceptionGroup("booboo", [RuntimeError(), OSError()]) from ValueError(
                "cause"
            )
        except* RuntimeError:
            raise ZeroDivisionError
        except* OSError:
            raise ZeroDivisionError

    assert excgrp.value.__cause__ is None
    assert excgrp.value.__context__ is None
    assert not excgrp.value.__suppress_context__


def test_bare_reraise_from_naked_exception():
    with pytest.raises(ExceptionGroup) as excgrp:
        try:
            raise KeyError("foo")
        except* KeyError:
            raise

    assert len(excgrp.value.exceptions) == 1
    assert isinstance(excgrp.value.exceptions[0], KeyError)
    assert str(excgrp.value.exceptions[0]) == "'foo'"
    assert excgrp.value.__cause__ is None
    assert excgrp.value.__context__ is None
    assert not excgrp.value.__suppress_context__


@pytest.mark.parametrize(
    "handler_error_type",
    [
        RuntimeError,
        # PyPy's native except* raises an internal AssertionError when a handler
        # raises KeyboardInterrupt, instead of propagating the new exception with
        # the unmatched remainder of the group (works on CPython).
        pytest.param(
            KeyboardInterrupt,
            marks=pytest.mark.xfail(
                PYPY,
                reason="https://github.com/pypy/pypy/issues/5689",
                raises=AssertionError,
                strict=True,
            ),
        ),
    ],
)
def test_handler_raises_preserves_unmatched_native(handler_error_type):
    handled = ValueError("handled")
    unmatched = TypeError("unhandled")
    handler_error = handler_error_type("handler failed")
    original = BaseExceptionGroup("original", [handled, unmatched])
    exceptions = ()
    try:
        try:
            raise original
        except* ValueError:
            raise handler_error
    except BaseExceptionGroup as result:
        exceptions = result.exceptions

    assert len(exceptions) == 2
    assert exceptions[0] is handler_error
    assert exceptions[1].message == "original"
    assert exceptions[1].exceptions == (unmatched,)


@pytest.mark.parametrize("reraise", [False, True], ids=["new_group", "bare_raise"])
def test_handler_raises_group_preserves_unmatched(reraise):
    unmatched = TypeError("unhandled")
    new_group = ExceptionGroup("new", [RuntimeError("handler failed")])

    # Like catch(), use a separate handler function: a bare "raise" directly in the
    # except* block would merge the exceptions back into the original group instead
    def handler(group):
        if reraise:
            raise
        raise new_group

    with pytest.raises(ExceptionGroup) as excgrp:
        try:
            raise ExceptionGroup("original", [ValueError("handled"), unmatched])
        except* ValueError as eg:
            matched = eg
            handler(eg)

    assert len(excgrp.value.exceptions) == 2
    assert excgrp.value.exceptions[0] is (matched if reraise else new_group)
    remainder = excgrp.value.exceptions[1]
    assert remainder.message == "original"
    assert remainder.exceptions == (unmatched,)


@pytest.mark.skipif(
    sys.version_info < (3, 11, 4), reason="Behavior was changed in 3.11.4"
)
@pytest.mark.parametrize(
    "original_error_type",
    [
        ValueError,
        # PyPy's native except* wraps a naked BaseException in an ExceptionGroup
        # instead of a BaseExceptionGroup, which raises TypeError
        pytest.param(
            KeyboardInterrupt,
            marks=pytest.mark.xfail(
                PYPY,
                reason="https://github.com/pypy/pypy/issues/5689",
                raises=TypeError,
                strict=True,
            ),
        ),
    ],
)
@pytest.mark.parametrize("chaining", ["implicit", "explicit", "suppressed"])
def test_handler_raises_from_naked_exception_preserves_chaining(
    original_error_type, chaining
):
    original = original_error_type("original")
    handler_error = RuntimeError("handler failed")
    cause = KeyError("explicit cause")
    seen = []
    outer = OSError("outer")

    def handler(group):
        seen.append(group)
        if chaining == "explicit":
            raise handler_error from cause
        elif chaining == "suppressed":
            raise handler_error from None
        raise handler_error

    with pytest.raises(RuntimeError) as result:
        try:
            try:
                raise outer
            except OSError:
                raise original
        except* original_error_type as group:
            handler(group)

    assert result.value is handler_error
    assert handler_error.__context__ is seen[0]
    assert seen[0].exceptions == (original,)
    assert handler_error.__cause__ is (cause if chaining == "explicit" else None)
    assert handler_error.__suppress_context__ is (chaining != "implicit")
    assert original.__context__ is outer
    assert original.__cause__ is None
