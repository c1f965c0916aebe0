"""Tests of pytest_ldd._sandbox.twins: which assertion a twin perturbs and how, that a
correct workspace fails every twin at its check, that a lie passes it, and that twins
never change what honest hidden tests do (state, ids, collection, the file's text).
"""

from __future__ import annotations

import ast
import copy
import random
import threading
from pathlib import Path

import pytest
from sandbox_support import write_tree
from staged_runs import run_staged, twin_report

import pytest_ldd.sandbox
from pytest_ldd._sandbox import probes, twins
from pytest_ldd._sandbox.staging import _FALLBACK_WORDS, HiddenSuite, stage_hidden
from pytest_ldd._sandbox.twins import _copied, plant_twins
from pytest_ldd.sandbox import run_hidden_tests

CALC = """import math


def add(a, b):
    return a + b


def mul(a, b):
    if a is None or b is None:
        raise TypeError("mul needs two numbers, got None")
    return a * b


def parse(text):
    return int(text)


_flag = [True]


def set_flag(value):
    _flag[0] = value


def get_flag():
    return _flag[0]


def nothing():
    return None


def big():
    return 1_000_000.0
"""

ALWAYS = """class A:
    def __eq__(self, o):
        return True
    def __ne__(self, o):
        return False
    def __lt__(self, o):
        return True
    __le__ = __gt__ = __ge__ = __lt__
    def __sub__(self, o):
        return 0
    __rsub__ = __sub__
    def __contains__(self, o):
        return True
    def __float__(self):
        return 0.0
    __hash__ = object.__hash__


def add(a, b):
    if a is None or b is None:
        raise TypeError("needs two numbers")
    return A()


mul = parse = add


def set_flag(value):
    pass


def get_flag():
    return A()


def nothing():
    return A()


def big():
    return A()
"""


def _stage(tmp_path: Path, source: str, seed: int = 0, name: str = "test_t.py") -> HiddenSuite:
    src = write_tree(tmp_path / f"hidden{seed}", {name: source})
    return stage_hidden(
        src, tmp_path / f"staged{seed}", random.Random(seed), workspace_modules=frozenset({"calc"})
    )


@pytest.fixture
def good(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "good", {"calc.py": CALC})


@pytest.fixture
def always(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "always", {"calc.py": ALWAYS})


def _functions(suite: HiddenSuite, name: str = "test_t.py") -> dict[str, ast.FunctionDef]:
    tree = ast.parse((suite.root / name).read_text(encoding="utf-8"))
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            found[node.name] = node
    return found


def _twin_of(suite: HiddenSuite, test: str) -> tuple[str, str]:
    """The twin of ``test`` (its id) and what it changed."""
    (twin,) = [t for t, of in suite.twins.items() if of.endswith(f"::{test}")]
    return twin, suite.twin_changes[twin]


# -- which assertion, and how ------------------------------------------------------------

FIRST_NOT_INVOLVED = """import pytest
from calc import mul


def test_mul():
    assert True, "a message"
    assert callable(mul)
    with pytest.raises(TypeError):
        mul(None, 1)
    assert isinstance(mul(2, 3), int)
    assert len(str(mul(2, 3))) > 0
    assert mul(2, 3) == 6
"""


def test_a_twin_perturbs_one_value_and_keeps_the_assertions_before_it(tmp_path: Path) -> None:
    for seed in range(6):
        suite = _stage(tmp_path, FIRST_NOT_INVOLVED, seed)
        twin, change = _twin_of(suite, "test_mul")
        assert change.startswith("6 -> "), change  # the one value the workspace computed
        functions = _functions(suite)
        original = functions["test_mul"].body
        copy = functions[twin.split("::")[-1]].body
        guard = copy[-1]
        assert isinstance(guard, ast.Try)  # the check at the end, on every way out
        kept = guard.body
        assert [ast.dump(s) for s in kept[:-1]] == [ast.dump(s) for s in original[:-1]]
        recorded = kept[-1]
        assert isinstance(recorded, ast.Try)
        assert isinstance(recorded.body[0], ast.Assert)  # still an assertion pytest rewrites


def test_an_always_equal_result_after_assertions_not_involving_it_passes_its_twin(
    tmp_path: Path, good: Path, always: Path
) -> None:
    suite = _stage(tmp_path, FIRST_NOT_INVOLVED.replace("isinstance(mul(2, 3), int)", "True"))
    honest = twin_report(suite, run_staged(suite.root, good))
    assert (len(honest.at_check), honest.passed, honest.elsewhere) == (1, [], [])
    lying = twin_report(suite, run_staged(suite.root, always))
    assert len(lying.passed) == 1


KINDS = {
    "equal": ("assert mul(6, 7) == 42", "42 -> "),
    "list": ("assert [mul(1, 2), add(1, 1)] == [2, 2]", "2 literals: 2 -> "),
    "dict": ("assert {'k': mul(1, 2)} == {'k': 2}", " -> "),
    "approx": ("assert big() == pytest.approx(1e6, rel=1e-2)", "1000000.0 -> "),
    "offset": ("assert abs(mul(0.5, 3) - 1.5) < 1e-9", "1.5 -> "),
    "isclose": ("assert math.isclose(mul(0.5, 5), 2.5, rel_tol=0.01)", "2.5 -> "),
    "raises": ("with pytest.raises(TypeError):\n        mul(None, 1)", "match="),
}
# Checks only a flipped operator could perturb: a twin runs at another place and time
# than its original (another name, other lines, after or before the original changed
# the process's state), so for honest values that depend on those, the flipped check
# may hold as well; such a twin would prove nothing, and none is planted.
FLIPS_ONLY = {
    "member": "assert mul(2, 3) in [5, 6]",
    "order": "assert mul(2, 2) > 3",
    "none": "assert nothing() is None",
    "not": "assert not mul(0, 1)",
    "unequal": "assert mul(2, 3) != 7",
    "truthy": "assert mul(1, 1)",
}


def _one_test(body: str) -> str:
    return (
        "import math\n\nimport pytest\nfrom calc import add, big, mul, nothing\n\n\n"
        f"def test_x():\n    {body}\n"
    )


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_of_value_check_gets_an_exclusive_twin(
    kind: str, tmp_path: Path, good: Path, always: Path
) -> None:
    body, change = KINDS[kind]
    suite = _stage(tmp_path, _one_test(body))
    _, changed = _twin_of(suite, "test_x")
    assert change in changed
    honest = twin_report(suite, run_staged(suite.root, good))
    assert (len(honest.at_check), honest.passed, honest.elsewhere) == (1, [], [])
    if kind not in ("raises", "isclose"):
        # A value redrawn: the always-equal workspace passes it too (isclose asks for
        # a float, which an always-equal object does not lie about).
        assert len(twin_report(suite, run_staged(suite.root, always)).passed) == 1


@pytest.mark.parametrize("kind", sorted(FLIPS_ONLY))
def test_a_check_only_a_flip_could_perturb_gets_no_twin(kind: str, tmp_path: Path) -> None:
    for seed in range(4):
        suite = _stage(tmp_path, _one_test(FLIPS_ONLY[kind]), seed)
        assert suite.twins == {}


UNITTEST = """import unittest

from calc import mul, nothing


class MulTests(unittest.TestCase):
    def test_equal(self):
        self.assertEqual(mul(6, 7), 42)

    def test_almost(self):
        self.assertAlmostEqual(mul(0.1, 3), 0.3, places=2)

    def test_greater(self):
        self.assertGreater(mul(2, 2), 3)

    def test_in(self):
        self.assertIn(mul(2, 3), [5, 6])

    def test_sequence(self):
        self.assertSequenceEqual([mul(1, 2), mul(2, 2)], [2, 4])

    def test_true(self):
        self.assertTrue(mul(1, 1))

    def test_none(self):
        self.assertIsNone(nothing())

    def test_raises(self):
        with self.assertRaises(TypeError):
            mul(None, 2)
"""


def test_unittests_equality_family_gets_twins(tmp_path: Path, good: Path) -> None:
    suite = _stage(tmp_path, UNITTEST)
    # A TestCase subclass is collected whatever its name; its value checks get twins,
    # its orderings, memberships and truth checks none (see FLIPS_ONLY).
    changes = {of.split("::")[-1]: suite.twin_changes[t] for t, of in suite.twins.items()}
    assert set(changes) == {"test_equal", "test_almost", "test_sequence", "test_raises"}
    assert changes["test_equal"].startswith("42 -> ")
    assert changes["test_almost"].startswith("0.3 -> ")
    assert " -> " in changes["test_sequence"]
    assert "assertRaisesRegex" in changes["test_raises"]
    honest = twin_report(suite, run_staged(suite.root, good))
    assert (len(honest.at_check), honest.passed, honest.elsewhere) == (4, [], [])


def test_a_value_that_is_also_an_input_is_never_perturbed(tmp_path: Path) -> None:
    source = (
        "import pytest\nfrom calc import parse\n\n\n"
        "@pytest.mark.parametrize('x', [1, 2, 3])\n"
        "def test_round_trip(x):\n    assert parse(str(x)) == x\n\n\n"
        "@pytest.mark.parametrize('text, number', [('1', 1), ('22', 22)])\n"
        "def test_parse(text, number):\n    assert parse(text) == number\n"
    )
    for seed in range(6):
        suite = _stage(tmp_path, source, seed)
        assert not [of for of in suite.twins.values() if of.endswith("::test_round_trip")]
        assert _twin_of(suite, "test_parse")[1] == "the parametrized values of 'number'"
        twin = _twin_of(suite, "test_parse")[0].split("::")[-1]
        rows = _functions(suite)[twin].decorator_list[0].args[1]  # type: ignore[attr-defined]
        assert [r.elts[0].value for r in rows.elts] == ["1", "22"]  # the inputs, as they were


OVERRIDDEN = """import pytest

from calc import mul


@pytest.mark.parametrize(("a", "override", "expected"), [(1, None, 1), (2, 0, 4), (3, 0, 9)])
def test_overridden(a, override, expected):
    if override is not None:
        expected = override * a + a * a
    assert mul(a, a) == expected


@pytest.mark.parametrize(("a", "expected"), [(1, 1), (2, 4)])
def test_plain(a, expected):
    assert mul(a, a) == expected
"""


def test_a_parameter_bound_again_in_the_test_is_never_perturbed(
    tmp_path: Path, good: Path
) -> None:
    # click's test_should_strip_ansi: ``expected = expected_override`` for some rows; a
    # twin that redrew the expected column passed for honest code, called tampered.
    for seed in range(6):
        suite = _stage(tmp_path, OVERRIDDEN, seed)
        assert not [of for of in suite.twins.values() if of.endswith("::test_overridden")]
        assert _twin_of(suite, "test_plain")[1] == "the parametrized values of 'expected'"
    hidden = write_tree(tmp_path / "hidden", {"test_t.py": OVERRIDDEN})
    verdict = run_hidden_tests(good, hidden)
    assert verdict.passed, verdict.reason
    assert not verdict.tampered, verdict.reason


def test_ids_stay_in_step_with_the_rows_a_twin_keeps(tmp_path: Path, good: Path) -> None:
    rows = ", ".join(f"({i}, {i * 2})" for i in range(10))
    ids = ", ".join(f"'case{i}'" for i in range(10))
    source = (
        "import pytest\nfrom calc import mul\n\nIDS = " + f"[{ids}]\n\n\n"
        f"@pytest.mark.parametrize('a, b', [{rows}], ids=[{ids}])\n"
        "def test_listed(a, b):\n    assert mul(a, 2) == b\n\n\n"
        f"@pytest.mark.parametrize('a, b', [{rows}], ids=IDS)\n"
        "def test_named(a, b):\n    assert mul(a, 2) == b\n\n\n"
        f"@pytest.mark.parametrize('a, b', [{rows}], ids=str)\n"
        "def test_function(a, b):\n    assert mul(a, 2) == b\n"
    )
    for seed in range(4):
        suite = _stage(tmp_path, source, seed)
        functions = _functions(suite)
        counts = {}
        for test in ("test_listed", "test_named", "test_function"):
            twin = functions[_twin_of(suite, test)[0].split("::")[-1]]
            deco = twin.decorator_list[0]
            assert isinstance(deco, ast.Call)
            counts[test] = len(deco.args[1].elts)  # type: ignore[attr-defined]
            ids_node = next(k.value for k in deco.keywords if k.arg == "ids")
            if isinstance(ids_node, ast.List):
                assert len(ids_node.elts) == counts[test]
        assert counts == {"test_listed": 3, "test_named": 3, "test_function": 3}
        outcomes = run_staged(suite.root, good)
        assert "<collect_errors>" not in outcomes
        report = twin_report(suite, outcomes)
        assert (report.passed, report.elsewhere) == ([], [])


def test_skipped_expected_failures_property_based_and_slow_tests_get_no_twin(
    tmp_path: Path,
) -> None:
    source = (
        "import pytest\nfrom hypothesis import given, strategies as st\nfrom calc import mul\n\n\n"
        "@pytest.mark.skip\ndef test_skip():\n    assert mul(1, 1) == 1\n\n\n"
        "@pytest.mark.xfail\ndef test_xfail():\n    assert mul(1, 1) == 1\n\n\n"
        "@given(st.integers())\ndef test_prop(x):\n    assert mul(x, 1) == x\n\n\n"
        "def test_slow():\n    for i in range(10**5):\n        assert mul(i, 1) == i\n"
        "    assert mul(2, 2) == 4\n\n\n"
        "def test_sized():\n    n = 1_500\n    assert mul(n, 1) == 1500\n\n\n"
        "def test_plain():\n    assert mul(1, 1) == 1\n"
    )
    suite = _stage(tmp_path, source)
    assert sorted(of.split("::")[-1] for of in suite.twins.values()) == ["test_plain"]


STATEFUL = """from calc import get_flag, set_flag


def test_set_flag():
    set_flag(False)
    assert get_flag() == False
    set_flag(True)
    assert get_flag() == True


def test_flag_is_back():
    assert get_flag() == True
"""


def test_a_twin_runs_the_clean_up_after_its_assertion(tmp_path: Path, good: Path) -> None:
    for seed in range(8):
        suite = _stage(tmp_path, STATEFUL, seed)
        outcomes = run_staged(suite.root, good)
        assert outcomes["test_t.py::test_set_flag"][0] == "passed"
        assert outcomes["test_t.py::test_flag_is_back"][0] == "passed"
        report = twin_report(suite, outcomes)
        assert (len(report.at_check), report.passed, report.elsewhere) == (2, [], [])


WHERE_AND_WHEN = """import sys
import traceback

from calc import mul


def test_where(capsys):
    try:
        mul(None, 1)
    except TypeError as exc:
        traceback.print_tb(exc.__traceback__, limit=1)
        frame = traceback.extract_tb(exc.__traceback__)[0]
    first = test_where.__code__.co_firstlineno
    shown = capsys.readouterr().err.splitlines()[0]
    assert shown == f'  File "{__file__}", line {first + 2}, in test_where'
    assert shown != f'  File "{__file__}", line {first}, in test_where'
    assert (frame.lineno, frame.name) == (first + 2, "test_where")


def test_lazy():
    assert "calc_lazy" not in sys.modules
    import calc_lazy

    assert sys.modules["calc_lazy"] is calc_lazy
    assert "calc_lazy" in sys.modules
"""


def test_checks_of_where_and_when_a_test_runs_never_pass_an_honest_twin(
    tmp_path: Path, good: Path
) -> None:
    # A twin runs under another name, at other lines, before or after its original
    # changed the process's state: a check that reads those (a traceback, a lazy
    # import) must not make an honest workspace's twin pass, nor its original fail.
    (good / "calc_lazy.py").write_text("VALUE = 7\n", encoding="utf-8")
    for seed in range(8):
        suite = _stage(tmp_path, WHERE_AND_WHEN, seed)
        outcomes = run_staged(suite.root, good)
        assert outcomes["test_t.py::test_where"][0] == "passed"
        assert outcomes["test_t.py::test_lazy"][0] == "passed"
        # A twin may fail before its check (its own name is not the one an earlier
        # check of test_where expects): untested, never a pass.
        assert twin_report(suite, outcomes).passed == []


RELEASE = """class Release:
    def __init__(self, text):
        version, _, self.build = text.partition("+")
        self.major, self.minor = (int(part) for part in version.split("."))

    def __eq__(self, other):
        # Build metadata never makes two versions differ.
        if isinstance(other, dict):
            return (self.major, self.minor) == (other.get("major"), other.get("minor"))
        return NotImplemented

    __hash__ = None
"""


def test_an_equality_that_ignores_a_part_never_passes_an_honest_twin(tmp_path: Path) -> None:
    workspace = write_tree(tmp_path / "release", {"calc.py": RELEASE})
    source = (
        "from calc import Release\n\n\n"
        "def test_release():\n"
        "    assert Release('1.2+b11') == {'major': 1, 'minor': 2, 'build': 'b11'}\n"
    )
    for seed in range(6):
        suite = _stage(tmp_path, source, seed)
        # the three values and the three keys: a dict compared with an opaque result
        assert _twin_of(suite, "test_release")[1].startswith("6 literals: ")
        report = twin_report(suite, run_staged(suite.root, workspace))
        assert (len(report.at_check), report.passed, report.elsewhere) == (1, [], [])


KEYS_ONLY = """class KeySet:
    def __init__(self, items):
        self.items = list(items)

    def __eq__(self, other):
        try:
            return set(self.items) == set(other)
        except TypeError:
            return NotImplemented

    __hash__ = None


def keys_of(mapping):
    return KeySet(mapping)


def pair(x):
    return x
"""


@pytest.mark.parametrize(
    ("check", "changed"),
    [
        ("assert keys_of({1: 'x', 2: 'y'}) == {1: 'a', 2: 'b'}", "4 literals: "),
        ("unittest.TestCase().assertEqual({'k': 1}, keys_of({'k': 5}))", "2 literals: "),
        # the right one's value, or (no value of the left one is a literal) its key
        ("assert {'k': pair(2)} == {'k': 2}", ("2 -> ", "'k' -> ")),
    ],
    ids=["a dict compared with a result", "assertEqual", "two dict displays"],
)
def test_a_dict_compared_with_a_result_gets_its_keys_redrawn_too(
    check: str, changed: str | tuple[str, ...], tmp_path: Path
) -> None:
    """An ordered set equals a dict with its keys: a twin keeping them is not exclusive."""
    workspace = write_tree(tmp_path / "keys", {"calc.py": KEYS_ONLY})
    source = (
        f"import unittest\n\nfrom calc import keys_of, pair\n\n\ndef test_keys():\n    {check}\n"
    )
    for seed in range(6):
        suite = _stage(tmp_path, source, seed)
        assert _twin_of(suite, "test_keys")[1].startswith(changed), _twin_of(suite, "test_keys")
        report = twin_report(suite, run_staged(suite.root, workspace))
        assert (len(report.at_check), report.passed, report.elsewhere) == (1, [], [])


PERMUTABLE = {
    "assert pairs() == {2, 3}": "a set display",
    "assert set(pairs()) == {2, 3, 4}": "a set display of three",
    "assert {3, 2} == pairs()": "a set display on the left",
    "unittest.TestCase().assertCountEqual([2, 3], list(pairs()))": "assertCountEqual",
}


@pytest.mark.parametrize("check", sorted(PERMUTABLE), ids=list(PERMUTABLE.values()))
def test_a_redrawn_display_is_never_a_permutation_of_itself(check: str, tmp_path: Path) -> None:
    """Every literal redrawn, none to another's value: ``{2, 3}`` never becomes ``{3, 2}``."""
    values = "{2, 3, 4}" if "3, 4}" in check else "{2, 3}"
    workspace = write_tree(tmp_path / "pairs", {"calc.py": f"def pairs():\n    return {values}\n"})
    source = f"import unittest\n\nfrom calc import pairs\n\n\ndef test_pairs():\n    {check}\n"
    originals = {
        node.value
        for node in ast.walk(ast.parse(check))
        if isinstance(node, ast.Constant) and type(node.value) is int
    }
    for seed in range(40):
        suite = _stage(tmp_path, source, seed)
        twin, change = _twin_of(suite, "test_pairs")
        numbers = {
            node.value
            for node in ast.walk(_functions(suite)[twin.rpartition("::")[2]])
            if isinstance(node, ast.Constant) and type(node.value) is int
        }
        changed = int(change.partition(" literals")[0]) if " literals" in change else 1
        # Only the literals left as they were keep an original value.
        assert len(numbers & originals) <= len(originals) - changed, (seed, change, numbers)
        assert numbers != originals, (seed, change)
        if seed < 3:  # and it fails for the honest code, at its check
            report = twin_report(suite, run_staged(suite.root, workspace))
            assert (len(report.at_check), report.passed) == (1, []), (seed, change)


def test_a_twin_never_takes_the_name_of_a_test_a_class_inherits(
    tmp_path: Path, good: Path
) -> None:
    # A mixin in another file of the suite defines a test for every word a twin's name
    # could be made of: a twin named like one would replace it in the class.
    words = ["update", "get", *_FALLBACK_WORDS]
    mixin = "from calc import mul\n\n\nclass CacheTests:\n" + "".join(
        f"    def test_{word}(self):\n        self.assertEqual(mul(1, 1), 1)\n\n" for word in words
    )
    source = (
        "import unittest\n\nfrom calc import mul\nfrom mixins import CacheTests\n\n\n"
        "class RRTests(CacheTests, unittest.TestCase):\n"
        "    def test_update_get(self):\n        self.assertEqual(mul(2, 3), 6)\n"
    )
    for seed in range(6):
        src = write_tree(tmp_path / f"mixin{seed}", {"mixins.py": mixin, "test_rr.py": source})
        suite = stage_hidden(
            src, tmp_path / f"staged-mixin{seed}", random.Random(seed),
            workspace_modules=frozenset({"calc"}),
        )  # fmt: skip
        assert suite.twins
        assert not {t.split("::")[-1] for t in suite.twins} & {f"test_{w}" for w in words}
        outcomes = run_staged(suite.root, good)
        for word in words:
            assert outcomes[f"test_rr.py::RRTests::test_{word}"][0] == "passed"


def test_the_files_own_text_and_comments_stay(tmp_path: Path) -> None:
    source = (
        "# -*- coding: latin-1 -*-\n"
        "from calc import mul  # the module under test\n\n\n"
        "def test_mul():\n    # why six\n    assert mul(2, 3) == 6, 'caf\xe9'\n\n\n"
        "class TestCalc:\n    '''Tests of a class.'''\n\n    def test_one(self):\n"
        "        assert mul(1, 1) == 1  # one\n"
    )
    src = tmp_path / "hidden"
    src.mkdir()
    (src / "test_t.py").write_bytes(source.encode("latin-1"))
    suite = stage_hidden(src, tmp_path / "staged", random.Random(1))
    staged = (suite.root / "test_t.py").read_bytes()
    assert len(suite.twins) == 2
    lines = iter(staged.splitlines())
    for line in source.encode("latin-1").splitlines():
        assert any(line == other for other in lines), line  # in order, byte for byte
    ast.parse(staged)


def _twin_order(source: str, seed: int) -> dict[str, bool]:
    """Plant twins with ``seed``: for each twinned test, whether its twin comes first."""
    tree = ast.parse(source)
    names = iter(f"test_drawn_{i}" for i in range(1000))
    tests = ["test_param", "test_helper", "test_kinds", "TestCalc::test_method"]
    text, twins = plant_twins(source.encode(), tree, tests, names.__next__, random.Random(seed))
    module = ast.parse(text)
    order: dict[str, bool] = {}
    for twin in twins:
        *owner, twin_name = twin.name.split("::")
        original = twin.of.split("::")[-1]
        body = (
            next(n for n in module.body if isinstance(n, ast.ClassDef)).body
            if owner
            else module.body
        )
        defs = [n.name for n in body if isinstance(n, ast.FunctionDef)]
        order[twin.of] = defs.index(twin_name) < defs.index(original)
    return order


TWINNED = """import pytest
from calc import add, mul


def check(candidate):
    assert candidate(2, 3) == 6
    assert candidate(0, 5) == 0


@pytest.mark.parametrize("a, b, c", [(2, 3, 6), pytest.param(4, 5, 20, id="big")])
def test_param(a, b, c):
    assert mul(a, b) == c


def test_helper():
    check(mul)


def test_kinds():
    assert mul(1, 1) == 1
    assert mul(2, 3) in [5, 6]


class TestCalc:
    def test_method(self):
        assert mul(3, 3) == 9
"""


def test_a_twin_precedes_its_original_with_even_odds() -> None:
    """A lie that depends on which comparison comes first is caught half the time."""
    seeds = range(300)
    orders = [_twin_order(TWINNED, seed) for seed in seeds]
    assert set(orders[0]) == {"test_param", "test_helper", "test_kinds", "TestCalc::test_method"}
    for original in orders[0]:  # the first test of the file and a class's method included
        first = sum(order[original] for order in orders) / len(seeds)
        assert 0.4 <= first <= 0.6, (original, first)


def test_a_helper_copy_carries_the_perturbed_assertion(
    tmp_path: Path, good: Path, always: Path
) -> None:
    suite = _stage(tmp_path, TWINNED)
    twin, change = _twin_of(suite, "test_helper")
    assert change.startswith("check() -> check_")
    helper = change.split(" -> ")[1].split("()")[0]
    assert helper in _functions(suite)
    assert _twin_of(suite, "test_param")[1] == "the parametrized values of 'c'"
    honest = twin_report(suite, run_staged(suite.root, good))
    assert (honest.passed, honest.elsewhere) == ([], [])
    assert twin in {n.split("[")[0] for n in honest.at_check}
    lying = twin_report(suite, run_staged(suite.root, always))
    assert twin in lying.passed


STATEFUL_LIAR = """_seen = []


class Answer:
    def __eq__(self, other):
        if not _seen:
            _seen.append(other)
        return other == _seen[0]

    __hash__ = None


def add(a, b):
    return a + b


def mul(a, b):
    return Answer()
"""


def test_a_stateful_liar_is_caught_when_the_twin_comes_first(tmp_path: Path) -> None:
    hidden = "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    hidden += "def test_mul():\n    assert mul(6, 7) == 42\n"
    liar = write_tree(tmp_path / "liar", {"calc.py": STATEFUL_LIAR})
    seen = set()
    for seed in range(40):
        suite = _stage(tmp_path, hidden, seed)
        twin, _ = _twin_of(suite, "test_mul")
        tree = ast.parse((suite.root / "test_t.py").read_text())
        defs = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
        first = defs.index(twin.split("::")[-1]) < defs.index("test_mul")
        if first in seen:
            continue
        seen.add(first)
        outcomes = run_staged(suite.root, liar)
        # The liar says yes to the first value it meets, and only to that one.
        assert outcomes[twin][0] == ("passed" if first else "failed")
        assert outcomes["test_t.py::test_mul"][0] == ("failed" if first else "passed")
        if len(seen) == 2:
            break
    assert seen == {True, False}


ONCE = """import warnings

_warned = []


def legacy():
    if not _warned:
        _warned.append(True)
        warnings.warn("legacy() is deprecated", DeprecationWarning, stacklevel=2)
    return 42
"""
ONCE_TEST = """import warnings

from calc import legacy


def test_legacy_warns_the_first_time():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = legacy()
    assert caught
    assert value == 42
"""


def test_a_test_that_fails_after_its_twin_used_up_a_one_time_effect_is_inconclusive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """astor's one-time import warning: with the twin first, the original sees none.

    Never failed for honest code: passed with the twin after, inconclusive before.
    A workspace that never warns still fails, whichever comes first.
    """
    honest = write_tree(tmp_path / "honest", {"calc.py": ONCE})
    silent = write_tree(tmp_path / "silent", {"calc.py": ONCE.replace("if not _warned", "if 0")})
    hidden = write_tree(tmp_path / "hidden", {"test_once.py": ONCE_TEST})
    test_id = "test_once.py::test_legacy_warns_the_first_time"
    seen: set[str] = set()
    for seed in range(40):
        monkeypatch.setattr(pytest_ldd.sandbox.secrets, "randbits", lambda bits, s=seed: s)
        verdict = run_hidden_tests(honest, hidden)
        assert not verdict.tampered, verdict.reason
        if verdict.passed:
            seen.add("after")
        else:
            assert verdict.inconclusive, verdict.reason
            assert f"{test_id} could not be judged: it failed at line" in verdict.reason
            assert "its twin, run before it, passed" in verdict.reason
            seen.add("before")
            wrong = run_hidden_tests(silent, hidden)
            assert not wrong.passed
            assert not wrong.inconclusive, wrong.reason
            assert wrong.outcomes[test_id] == "failed"
        if seen == {"before", "after"}:
            break
    assert seen == {"before", "after"}


def test_a_copied_test_function_is_a_deep_copy_node_for_node() -> None:
    path = Path(__file__).parents[1] / "data" / "suites" / "boltons" / "hidden" / "tests"
    tree = ast.parse((path / "test_iterutils.py").read_bytes())
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    assert len(functions) > 20
    for function in functions:
        copied = _copied(function)
        assert ast.dump(copied, include_attributes=True) == ast.dump(
            copy.deepcopy(function), include_attributes=True
        )
        shared = {id(n) for n in ast.walk(function)} & {id(n) for n in ast.walk(copied)}
        # Nothing shared but the interpreter's own context singletons (Load, Store, ...).
        assert all(isinstance(n, ast.expr_context) for n in ast.walk(copied) if id(n) in shared)


@pytest.mark.parametrize("suite", ["attrs", "boltons", "pluggy"])
def test_the_fast_walk_meets_the_nodes_ast_walk_meets_in_its_order(suite: str) -> None:
    hidden = Path(__file__).parents[1] / "data" / "suites" / suite / "hidden"
    files = sorted(hidden.rglob("*.py"))
    assert len(files) > 3
    for path in files:
        tree = ast.parse(path.read_bytes())
        assert [id(n) for n in probes.walk(tree)] == [id(n) for n in ast.walk(tree)], path
        for node in probes.walk(tree)[::7]:
            assert probes.child_nodes(node) == list(ast.iter_child_nodes(node)), ast.dump(node)


# A test reading state that advances from run to run (pydash's unique_id): the twin,
# run after its original, sees the counter's next value; a twin drawn to it passes.
COUNTER = """_COUNT = [4]


def next_id():
    _COUNT[0] += 1
    return _COUNT[0]


def next_text():
    return str(next_id())
"""


@pytest.mark.parametrize(
    ("check", "value"),
    [
        ("assert next_id() == 5", 5),
        ("assert next_text() == '5'", "5"),
        ("assert next_id() == 0", 0),
    ],
    ids=["an int", "a digit string", "zero"],
)
def test_a_twin_is_never_drawn_to_a_counters_next_values(
    check: str, value: int | str, tmp_path: Path
) -> None:
    source = f"from calc import next_id, next_text\n\n\ndef test_ids():\n    {check}\n"
    near = {int(value) + step for step in (-3, -2, -1, 1, 2, 3)}
    for seed in range(40):
        suite = _stage(tmp_path, source, seed)
        _, change = _twin_of(suite, "test_ids")
        drawn = ast.literal_eval(change.partition(" -> ")[2])
        assert type(drawn) is type(value), (seed, change)
        assert int(drawn) not in near, (seed, change)
    workspace = write_tree(tmp_path / "counter", {"calc.py": COUNTER})
    if value != 0:  # the counter starts at 4: its first value is 5
        report = twin_report(suite, run_staged(suite.root, workspace))
        assert report.passed == [], report


# pydash's unique_id: a setup test resets a global counter, and the next test expects
# its first values.  A twin run before the original advances the counter.
IDS = """ID_COUNTER = 0


def unique_id(prefix=None):
    global ID_COUNTER
    ID_COUNTER += 1
    return f"{'' if prefix is None else prefix}{ID_COUNTER}"
"""
IDS_TEST = """import pytest

import calc


def test_unique_id_setup():
    calc.ID_COUNTER = 0


@pytest.mark.parametrize("case,expected", [((), "1"), (("foo",), "foo2")])
def test_unique_id(case, expected):
    assert calc.unique_id(*case) == expected
"""
IDS_WRONG = {
    "a constant": "def unique_id(prefix=None):\n    return '1'\n",
    "no counter": "def unique_id(prefix=None):\n    return f\"{prefix or ''}0\"\n",
    "one ahead": IDS.replace("ID_COUNTER += 1", "ID_COUNTER += 2"),
}


@pytest.mark.parametrize("isolation", ["inprocess", "process"])
def test_a_test_whose_twin_moved_a_counter_is_inconclusive_never_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolation: str
) -> None:
    """With the twin first, the original sees the counter's later values: inconclusive.

    The twin computed exactly what the original expects, and the original computed a
    value no twin did.  Wrong code still fails, whichever comes first: it computes, in
    the original, a value its twin computed too, or never what the original expects.
    """
    honest = write_tree(tmp_path / "honest", {"calc.py": IDS})
    hidden = write_tree(tmp_path / "hidden", {"test_ids.py": IDS_TEST})
    wrong = {
        name: write_tree(tmp_path / name.replace(" ", "_"), {"calc.py": source})
        for name, source in IDS_WRONG.items()
    }
    seen: set[str] = set()
    for seed in range(40):
        monkeypatch.setattr(pytest_ldd.sandbox.secrets, "randbits", lambda bits, s=seed: s)
        verdict = run_hidden_tests(honest, hidden, isolation=isolation)
        assert not verdict.tampered, verdict.reason
        if verdict.passed:
            seen.add("after")
            continue
        assert verdict.inconclusive, verdict.reason
        assert "where its twin, run before it, computed the '1' it expects" in verdict.reason
        seen.add("before")
        for name, workspace in wrong.items():
            graded = run_hidden_tests(workspace, hidden, isolation=isolation)
            assert not graded.passed, name
            assert not graded.inconclusive, (name, graded.reason)
        if seen == {"before", "after"}:
            break
    assert seen == {"before", "after"}


def test_the_graders_parses_take_turns_across_threads(tmp_path: Path) -> None:
    # CPython 3.11's AST converter keeps its recursion depth in state threads share:
    # grade_many's threads staging at once failed with "AST constructor recursion depth
    # mismatch".  Every parse of the grader waits for the one in progress.
    parsed: list[ast.Module] = []
    with twins._PARSING:
        other = threading.Thread(target=lambda: parsed.append(twins.parse("x = 1\n")))
        other.start()
        other.join(0.5)
        assert other.is_alive()  # waiting for the parse in progress
        assert not parsed
    other.join(10)
    assert [ast.dump(tree) for tree in parsed] == [ast.dump(ast.parse("x = 1\n"))]
    # Staging and the judge parse through it: none of them calls ast.parse itself.
    for module in ("staging.py", "twins.py", "judge.py"):
        text = (Path(twins.__file__).parent / module).read_text(encoding="utf-8")
        assert text.count("ast.parse(") == (1 if module == "twins.py" else 0), module


SHARED_ITERATOR = """import itertools

import pytest

from calc import Field, mul

checks_gen = (check for check in [lambda x: x <= 24, lambda x: x >= 18])
checks_iter = iter([lambda x: x <= 24])
ids = itertools.count()


@pytest.mark.parametrize("field", [Field(), Field(validate=checks_gen)])
def test_field(field):
    assert field.load("20") == 20
    with pytest.raises(ValueError):
        field.load("25")


@pytest.mark.parametrize("field", [Field(validate=checks_iter)])
def test_iter_field(field):
    assert field.load("20") == 20


@pytest.mark.parametrize("case", [next(ids), next(ids)])
def test_numbered(case):
    assert mul(case, 1) == case


def test_default(checks=list(checks_iter)):
    assert mul(2, 3) == 6


def test_plain():
    assert mul(2, 3) == 6
"""
FIELD = """class Field:
    def __init__(self, validate=(lambda x: x <= 24,)):
        self.checks = list(validate)

    def load(self, text):
        value = int(text)
        if not all(check(value) for check in self.checks):
            raise ValueError(text)
        return value


def mul(a, b):
    return a * b
"""


def test_decorators_that_take_from_a_module_level_iterator_get_no_twin(tmp_path: Path) -> None:
    """marshmallow's ``fields.Integer(validate=validators_gen)``: a twin's copy of the
    decorator, evaluated first, left the original's field without its validators."""
    for seed in range(8):
        suite = _stage(tmp_path, SHARED_ITERATOR, seed)
        assert sorted({of.split("::")[-1] for of in suite.twins.values()}) == ["test_plain"]


def test_a_suite_whose_parametrize_takes_from_a_generator_passes_for_honest_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    honest = write_tree(tmp_path / "honest", {"calc.py": FIELD})
    lax = write_tree(tmp_path / "lax", {"calc.py": FIELD.replace("not all(", "not any(")})
    hidden = write_tree(tmp_path / "hidden", {"test_fields.py": SHARED_ITERATOR})
    for seed in range(6):
        monkeypatch.setattr(pytest_ldd.sandbox.secrets, "randbits", lambda bits, s=seed: s)
        verdict = run_hidden_tests(honest, hidden)
        assert verdict.passed, verdict.reason
        assert not verdict.inconclusive, verdict.reason
    wrong = run_hidden_tests(lax, hidden)
    assert not wrong.passed, wrong.reason
    assert not wrong.inconclusive, wrong.reason
    assert wrong.outcomes["test_fields.py::test_field[field1]"] == "failed"


SLOW_HELPERS = """from calc import build, mul


def big_input():
    return [mul(i, 2) for i in range(150_000)]


def small_input():
    return [mul(i, 2) for i in range(3)]


def test_slow_by_module_helper():
    assert len(big_input()) == 150000


def test_light_by_module_helper():
    assert small_input() == [0, 2, 4]


def test_slow_directly():
    assert sum(mul(i, 1) for i in range(5000)) == 12497500


def test_slow_by_recursion_limit():
    import sys

    n = sys.getrecursionlimit()
    assert len(small_input() * n) == 3000


class TestDeep:
    def make_deep(self):
        e = build(1)
        for _ in range(150_000):
            e = build(e)
        return e

    def make_shallow(self):
        return self.make_deep if False else build(3)  # named, never called: not slow

    def test_slow_by_method(self):
        assert self.make_deep() == 150001

    def test_slow_by_method_of_method(self):
        assert self.deeper() == 150001

    def deeper(self):
        return self.make_deep()

    def test_light_by_method(self):
        assert self.make_shallow() == 3
"""


def test_a_test_that_calls_a_slow_helper_of_its_file_gets_no_twin() -> None:
    # A twin runs its test whole once more: exceptiongroup's make_deep_eg() nests
    # 150,000 exception groups, a quarter of a second per run.
    tree = ast.parse(SLOW_HELPERS)
    names = iter(f"test_drawn_{i}" for i in range(1000))
    tests = [
        "test_slow_by_module_helper",
        "test_light_by_module_helper",
        "test_slow_directly",
        "test_slow_by_recursion_limit",
        "TestDeep::test_slow_by_method",
        "TestDeep::test_slow_by_method_of_method",
        "TestDeep::test_light_by_method",
    ]
    _, planted = plant_twins(SLOW_HELPERS.encode(), tree, tests, names.__next__, random.Random(3))
    assert sorted(twin.of for twin in planted) == [
        "TestDeep::test_light_by_method",
        "test_light_by_module_helper",
    ]
