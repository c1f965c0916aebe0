"""Success oracles: did an episode do what the task asked?

A checker is any callable ``(episode, gold) -> bool``.  It may instead return a
:class:`CheckResult`, a bool that carries an explanation; the metrics put that
explanation in ``Score.detail`` (e.g. ``final state differs at: orders.2.status
('shipped' != 'pending')``).  :func:`resolve_checker` turns the names used in markers and
``[tool.ldd.agents] check`` into checkers.
"""

from __future__ import annotations

import math
import os
import re
import reprlib
import string
import unicodedata
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, cast, final

from pytest_ldd.agents.episode import Episode
from pytest_ldd.errors import InvalidObservationError, InvalidSpecError

__all__ = [
    "CheckResult",
    "Checker",
    "FinalStateCheck",
    "final_state_diff",
    "final_state_match",
    "output_match",
    "quasi_exact_match",
    "recorded_success",
    "resolve_checker",
    "run_check",
]

# How many differing paths a mismatch explanation lists before summarizing the rest.
_MAX_LISTED_DIFFS = 10

_HIDDEN_TESTS_PREFIX = "hidden_tests:"
# "hidden_tests[isolation=process]:PATH" chooses the sandbox's isolation in the spec.
_HIDDEN_TESTS_OPTIONS = re.compile(r"hidden_tests\[isolation=(?P<isolation>[a-z]*)\]:")


@final
@dataclass(frozen=True, slots=True)
class CheckResult:
    """A checker's verdict with its explanation; truthy exactly when ``passed``.

    ``inconclusive`` says the checker could not grade the episode (the hidden-test
    sandbox's grader failed, or hit a limit of its isolation): neither a success nor a
    failure of the agent, so it never has ``passed``.  ``confinement`` is how the
    kernel confined the agent's code while it was graded (``"landlock"`` or
    ``"none"``), for checkers that ran it; None for every other checker.
    """

    passed: bool
    detail: str = ""
    inconclusive: bool = field(default=False, kw_only=True)
    confinement: str | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        passed: object = self.passed
        detail: object = self.detail
        inconclusive: object = self.inconclusive
        confinement: object = self.confinement
        if not isinstance(passed, bool):
            msg = f"CheckResult 'passed' must be a bool (got {passed!r})"
            raise InvalidObservationError(msg)
        if not isinstance(detail, str):
            msg = f"CheckResult 'detail' must be a str (got {detail!r})"
            raise InvalidObservationError(msg)
        if not isinstance(inconclusive, bool):
            msg = f"CheckResult 'inconclusive' must be a bool (got {inconclusive!r})"
            raise InvalidObservationError(msg)
        if inconclusive and passed:
            msg = "CheckResult 'passed' must be False when 'inconclusive' is True (got both True)"
            raise InvalidObservationError(msg)
        if confinement is not None and not (isinstance(confinement, str) and confinement):
            msg = (
                f"CheckResult 'confinement' must be a non-empty str or None (got {confinement!r})"
            )
            raise InvalidObservationError(msg)

    def __bool__(self) -> bool:
        return self.passed


class Checker(Protocol):
    """The success oracle: ``(episode, gold) -> bool`` (or a :class:`CheckResult`).

    It must run where the agent cannot reach it, and it must not mutate the episode.
    """

    def __call__(self, episode: Episode, gold: Any, /) -> bool | CheckResult: ...


def run_check(checker: Checker, episode: Episode, gold: Any) -> CheckResult:
    """Call *checker* and return its verdict as a :class:`CheckResult`.

    A bare bool, or a result without a detail, gets the detail ``"passed"``,
    ``"failed"`` or ``"inconclusive"``.  A checker that raises is not caught: its
    error is the error of the test that graded the episode.  A checker that returns
    anything but a bool or a :class:`CheckResult` (say ``None`` from a missing
    ``return``) is an error too.
    """
    result: object = checker(episode, gold)
    if isinstance(result, CheckResult) and result.detail:
        return result
    if isinstance(result, CheckResult):
        word = "inconclusive" if result.inconclusive else "passed" if result.passed else "failed"
        return replace(result, detail=word)
    if isinstance(result, bool):
        return CheckResult(result, "passed" if result else "failed")
    msg = (
        f"checker {_name_of(checker)} must return a bool or a CheckResult"
        f" (got {type(result).__name__} {result!r}) for task {episode.task_id!r}"
    )
    raise InvalidObservationError(msg)


def _name_of(checker: object) -> str:
    return getattr(checker, "__qualname__", None) or repr(checker)


# -- output ------------------------------------------------------------------------------


def _canonical_text(text: str) -> str:
    text = unicodedata.normalize("NFC", text).casefold()
    # casefold can leave a string that is no longer NFC ("ǰ" -> "ǰ"); normalize again.
    return " ".join(unicodedata.normalize("NFC", text).split())


def output_match(episode: Episode, gold: Any) -> bool:
    """Canonicalized exact match of the final answer.

    Strings match after Unicode NFC, casefolding and collapsing whitespace; anything
    else is compared with ``==``.  The weakest useful oracle: prefer a state-based or
    executable checker whenever the task has one.
    """
    output = episode.output
    if isinstance(output, str) and isinstance(gold, str):
        return _canonical_text(output) == _canonical_text(gold)
    return bool(output == gold)


# -- quasi_exact (GAIA) ------------------------------------------------------------------

_LIST_SEPARATORS = re.compile(r"[,;]")
_WHITESPACE = re.compile(r"\s")
_NO_PUNCTUATION = str.maketrans("", "", string.punctuation)


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _number(text: str) -> float | None:
    """GAIA's number normalization: drop ``$``, ``%`` and ``,`` then parse a float."""
    for char in "$%,":
        text = text.replace(char, "")
    try:
        return float(text)
    except ValueError:
        # GAIA maps this to inf, which would then equal a gold of "inf"; None never does.
        return None


def _gaia_text(text: str, *, remove_punct: bool) -> str:
    text = _WHITESPACE.sub("", text).lower()
    return text.translate(_NO_PUNCTUATION) if remove_punct else text


def _gaia_number_equal(answer: str, gold: str) -> bool:
    value = _number(answer)
    return value is not None and value == float(gold)


def quasi_exact_match(episode: Episode, gold: Any) -> bool:
    """GAIA's quasi-exact match of the final answer against the gold answer.

    A numeric gold compares as a float with the answer stripped of ``$``, ``%`` and
    ``,``.  A gold holding ``,`` or ``;`` is a list: both sides are split on either
    separator and compared element-wise (numbers as above; other elements without
    whitespace and case).  Any other gold compares as text without whitespace, case and
    punctuation.  Non-strings are compared through ``str()``; a ``None`` answer is the
    text ``"None"``, as in GAIA.
    """
    answer = "None" if episode.output is None else str(episode.output)
    expected = str(gold)
    if _is_float(expected):
        return _gaia_number_equal(answer, expected)
    if _LIST_SEPARATORS.search(expected):
        expected_items = _LIST_SEPARATORS.split(expected)
        answer_items = _LIST_SEPARATORS.split(answer)
        if len(expected_items) != len(answer_items):
            return False
        return all(
            _gaia_number_equal(got, want)
            if _is_float(want)
            else _gaia_text(got, remove_punct=False) == _gaia_text(want, remove_punct=False)
            for got, want in zip(answer_items, expected_items, strict=True)
        )
    return _gaia_text(answer, remove_punct=True) == _gaia_text(expected, remove_punct=True)


# -- final_state (tau-bench) -------------------------------------------------------------

_short = reprlib.Repr()
_short.maxstring = 60
_short.maxother = 60
_short.maxlist = _short.maxtuple = _short.maxdict = _short.maxset = 6


def _ignore_patterns(ignore: str | Iterable[str]) -> tuple[str, ...]:
    paths = (ignore,) if isinstance(ignore, str) else tuple(ignore)
    for path in paths:
        if not isinstance(path, str) or not path or any(not part for part in path.split(".")):
            msg = (
                f"'ignore' paths must be dotted names like 'db.users.0.updated_at' (got {path!r})"
            )
            raise InvalidSpecError(msg)
    return paths


def _is_ignored(path: tuple[str, ...], patterns: Sequence[tuple[str, ...]]) -> bool:
    """True when a pattern names *path* or one of its ancestors (``*`` is any one key)."""
    return any(
        len(pattern) <= len(path)
        and all(want in ("*", got) for want, got in zip(pattern, path, strict=False))
        for pattern in patterns
    )


def _same_leaf(actual: Any, expected: Any) -> bool:
    # JSON keeps true and 1 apart, and so does a state comparison; two NaNs are the same
    # recorded value even though nan != nan.
    if isinstance(actual, bool) != isinstance(expected, bool):
        return False
    if isinstance(actual, float) and isinstance(expected, float) and math.isnan(actual):
        return math.isnan(expected)
    return bool(actual == expected)


def _is_sequence(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))


def _label(path: tuple[str, ...]) -> str:
    return ".".join(path) if path else "<root>"


def _diff(
    actual: Any,
    expected: Any,
    path: tuple[str, ...],
    patterns: Sequence[tuple[str, ...]],
    out: list[str],
) -> None:
    if _is_ignored(path, patterns):
        return
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        for key in expected:
            child = (*path, str(key))
            if key not in actual:
                if not _is_ignored(child, patterns):
                    out.append(f"{_label(child)} (missing, expected {_short.repr(expected[key])})")
            else:
                _diff(actual[key], expected[key], child, patterns, out)
        for key in actual:
            child = (*path, str(key))
            if key not in expected and not _is_ignored(child, patterns):
                out.append(f"{_label(child)} (unexpected {_short.repr(actual[key])})")
        return
    if _is_sequence(actual) and _is_sequence(expected):
        for index, (got, want) in enumerate(zip(actual, expected, strict=False)):
            _diff(got, want, (*path, str(index)), patterns, out)
        for index in range(len(expected), len(actual)):
            child = (*path, str(index))
            if not _is_ignored(child, patterns):
                out.append(f"{_label(child)} (unexpected {_short.repr(actual[index])})")
        for index in range(len(actual), len(expected)):
            child = (*path, str(index))
            if not _is_ignored(child, patterns):
                out.append(f"{_label(child)} (missing, expected {_short.repr(expected[index])})")
        return
    if isinstance(actual, Set) and isinstance(expected, Set):
        if actual != expected:
            out.append(f"{_label(path)} ({_short.repr(actual)} != {_short.repr(expected)})")
        return
    if not _same_leaf(actual, expected):
        out.append(f"{_label(path)} ({_short.repr(actual)} != {_short.repr(expected)})")


def final_state_diff(actual: Any, expected: Any, ignore: str | Iterable[str] = ()) -> list[str]:
    """Every path where *actual* differs from *expected*, as ``"path (got != want)"``.

    Mappings compare key by key in any order, sets without order, lists and tuples
    position by position; other values with ``==`` (but ``True`` is not ``1``).
    *ignore* holds dotted paths (``"db.users.0.updated_at"``, ``*`` for any one key)
    whose whole subtree is left out of the comparison.  An empty list means equal.
    """
    patterns = [tuple(path.split(".")) for path in _ignore_patterns(ignore)]
    out: list[str] = []
    _diff(actual, expected, (), patterns, out)
    return out


@final
@dataclass(frozen=True, slots=True)
class FinalStateCheck:
    """The final-state checker, with the paths it ignores; explains a mismatch.

    ``FinalStateCheck(ignore=["db.users.*.updated_at"])`` is a checker whose
    :class:`CheckResult` detail reads ``final state differs at: orders.2.status
    ('shipped' != 'pending')``.
    """

    ignore: Sequence[str] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "ignore", _ignore_patterns(self.ignore))

    def __call__(self, episode: Episode, gold: Any, /) -> CheckResult:
        diffs = final_state_diff(episode.final_state, gold, self.ignore)
        if not diffs:
            return CheckResult(True, "final state matches")
        listed = "; ".join(diffs[:_MAX_LISTED_DIFFS])
        more = len(diffs) - _MAX_LISTED_DIFFS
        suffix = f"; and {more} more" if more > 0 else ""
        return CheckResult(False, f"final state differs at: {listed}{suffix}")


def final_state_match(episode: Episode, gold: Any, *, ignore: str | Iterable[str] = ()) -> bool:
    """Compare the episode's final state with the goal state (the tau-bench oracle).

    Structural equality as in :func:`final_state_diff`; use :class:`FinalStateCheck`
    (or the name ``"final_state"``) to get the differing paths in the score's detail.
    """
    return not final_state_diff(episode.final_state, gold, ignore)


# -- recorded ----------------------------------------------------------------------------


def recorded_success(episode: Episode, gold: Any) -> bool:
    """Trust the ``success`` already recorded on the episode (e.g. by an external harness).

    An episode without a recorded success (``None``) is an error, never a failure.
    """
    if episode.success is None:
        msg = (
            f"episode of task {episode.task_id!r} must record 'success' for the"
            " 'recorded' checker (got None)"
        )
        raise InvalidObservationError(msg)
    return episode.success


# -- hidden tests ------------------------------------------------------------------------


class _VerdictSource(Protocol):
    def verdict_for(self, episode: Episode, /) -> Any: ...


@final
@dataclass(frozen=True, slots=True)
class _HiddenTestsCheck:
    """Runs the sandbox once per episode and keeps its reason as the detail."""

    inner: _VerdictSource

    def __call__(self, episode: Episode, gold: Any, /) -> CheckResult:
        verdict = self.inner.verdict_for(episode)
        passed = bool(verdict.passed)
        inconclusive = bool(getattr(verdict, "inconclusive", False)) and not passed
        reason = str(getattr(verdict, "reason", "") or "")
        detail = reason or ("hidden tests passed" if passed else "hidden tests failed")
        if getattr(verdict, "tampered", False):
            detail = f"tampered: {detail}"
        elif inconclusive:
            detail = f"inconclusive: {reason or 'the hidden tests could not be judged'}"
        confinement = getattr(verdict, "confinement", None)
        return CheckResult(
            passed,
            detail,
            inconclusive=inconclusive,
            confinement=confinement if isinstance(confinement, str) and confinement else None,
        )


def hidden_tests_behind(checkers: Iterable[object]) -> list[Any]:
    """The sandbox checkers (:class:`pytest_ldd.sandbox.HiddenTests`) among *checkers*.

    What :func:`resolve_checker` made of a ``"hidden_tests:PATH"`` spec or of a
    ``hidden_tests(...)`` object, each once, in order; other checkers are left out.
    """
    found: dict[int, Any] = {}
    for checker in checkers:
        if isinstance(checker, _HiddenTestsCheck):
            # Imported only for a suite that grades by hidden tests: the sandbox is heavy.
            from pytest_ldd.sandbox import HiddenTests

            if isinstance(checker.inner, HiddenTests):
                found.setdefault(id(checker.inner), checker.inner)
    return list(found.values())


def _named_checkers() -> dict[str, Checker]:
    return {
        "final_state": FinalStateCheck(),
        "output": output_match,
        "quasi_exact": quasi_exact_match,
        "recorded": recorded_success,
    }


def resolve_checker(
    check: str | Checker,
    *,
    base_dir: str | os.PathLike[str] | None = None,
    isolation: str | None = None,
) -> Checker:
    """The checker *check* names: a known name, ``"hidden_tests:PATH"`` or a callable.

    Names are ``"output"``, ``"quasi_exact"``, ``"final_state"`` and ``"recorded"``.
    ``"hidden_tests:PATH"`` runs the hidden tests at PATH (relative to *base_dir*, else
    the current folder) in the sandbox, with *isolation* (None: the sandbox's default);
    ``"hidden_tests[isolation=process]:PATH"`` names the isolation in the spec itself,
    and wins over *isolation*.  A callable with a ``verdict_for`` method (what
    :func:`pytest_ldd.sandbox.hidden_tests` returns) is wrapped so that the verdict's
    reason becomes the detail; :func:`final_state_match` itself becomes
    :class:`FinalStateCheck` so that mismatches are explained.  Any other callable is
    returned as it is.  An unknown name is an :class:`InvalidSpecError` listing the
    known ones.
    """
    if isinstance(check, str):
        if check.startswith(_HIDDEN_TESTS_PREFIX):
            return _hidden_tests(check[len(_HIDDEN_TESTS_PREFIX) :], base_dir, isolation)
        options = _HIDDEN_TESTS_OPTIONS.match(check)
        if options is not None:
            path = check[options.end() :]
            return _hidden_tests(path, base_dir, options["isolation"])
        named = _named_checkers()
        if check in named:
            return named[check]
        known = ", ".join(repr(name) for name in (*sorted(named), "hidden_tests:PATH"))
        msg = f"'check' must be one of {known} or a callable (got {check!r})"
        raise InvalidSpecError(msg)
    given: object = check
    if given is final_state_match:
        return FinalStateCheck()
    if callable(getattr(given, "verdict_for", None)):
        return _HiddenTestsCheck(cast("_VerdictSource", given))
    if callable(given):
        return cast("Checker", given)
    msg = f"'check' must be a checker name or a callable (got {given!r})"
    raise InvalidSpecError(msg)


def _hidden_tests(
    path: str, base_dir: str | os.PathLike[str] | None, isolation: str | None
) -> Checker:
    if not path:
        msg = "'check' 'hidden_tests:PATH' needs a PATH to the hidden tests (got '')"
        raise InvalidSpecError(msg)
    tests = Path(path)
    if base_dir is not None and not tests.is_absolute():
        tests = Path(base_dir) / tests
    # The sandbox is heavy and only needed by suites that use it: import it on demand.
    from pytest_ldd.sandbox import hidden_tests

    if isolation is None:
        return _HiddenTestsCheck(hidden_tests(tests))
    return _HiddenTestsCheck(hidden_tests(tests, isolation=isolation))
