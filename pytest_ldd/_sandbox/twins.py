"""Twin canaries: copies of hidden tests with one assertion's expected value perturbed.

A twin of a hidden test makes the same imports, calls the same workspace code with the
same arguments and runs the same assertions, except one, whose expectation is
perturbed so that for honest values the twin's assertion and the original's cannot
both hold.  A correct workspace therefore fails every twin, *at that assertion's
line*.  Whatever passes a hidden test without computing its result -- an outcome
rewriter that targets the tests using workspace code, an object equal to what it is
compared with, code that reads the expected value from the calling frame or the file
-- passes the twin's assertion as well, and is caught.

Which assertion, and how:

- Only assertions that **depend on workspace values** are candidates (a name the
  workspace's modules bound, a parameter or fixture, ``self``, or anything computed
  from those): ``assert True, "msg"`` keeps its meaning.  The assertions before the
  chosen one stay as they are, so the twin reaches it.
- Only assertions that **always run**: at the top of the test's body, in a ``for``
  loop over a literal that is not empty, in a ``with`` block of a context manager that
  never swallows an exception (``open``, ``mock.patch``, ``pytest.warns``...), and in a
  module-level helper (``def check(candidate): assert ...``) called from there, which
  the twin calls as a perturbed copy of its own.  Nothing after a ``return``,
  ``break`` or ``continue``, nothing inside ``try`` or ``if``.
- **Values first.**  An ``==`` (or ``assertEqual`` and the rest of unittest's equality
  family, ``pytest.approx``, ``math.isclose``, ``assertAlmostEqual``) gets one constant
  of its expected side redrawn by :func:`~probes.draw_like` -- same type, sign,
  magnitude, roundness and length, often another literal of the same file -- beyond
  any tolerance it states (``rel``, ``abs``, ``rel_tol``, ``places``, ``delta``).
  ``abs(f(x) - c) < eps`` gets another ``c``, more than ``2 * eps`` away.  A
  ``parametrize`` column compared with gets other values, where it is not also an
  input of the call (a round trip ``parse(str(x)) == x`` is never perturbed).
  Otherwise the assertion is flipped (``<`` to ``>=``, ``in`` to ``not in``,
  ``assertGreater`` to ``assertLessEqual``, ``is None`` to ``is not None``) or negated,
  and a ``pytest.raises`` block gets a ``match=`` no message holds.
- One twin per test (:data:`TWINS_PER_TEST`), on an assertion drawn among the best
  kind the test has.  A twin of a parametrized test keeps at most :data:`TWIN_ROWS`
  parameter sets, with ``ids=`` kept in step.  Tests marked ``skip``, ``skipif`` or
  ``xfail`` and property-based tests (``@given``: a failing one is shrunk, which can
  take longer than the run) get no twin.

The twins are spliced into the file's own text: the hidden tests keep their lines,
comments and source.  Each twin goes, with even odds, right before its original or
right after a randomly chosen definition that follows it, under a name made of the
words of the file's own test names.
"""

from __future__ import annotations

import ast
import io
import random
import sys
import threading
import tokenize
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from pytest_ldd._sandbox.probes import child_nodes, draw_like, shape_of, walk

__all__ = ["HEAVY_SIZE", "TWINS_PER_TEST", "TWIN_ROWS", "Twin", "parse", "plant_twins"]

# CPython 3.11 keeps the AST converter's recursion depth in state that threads share:
# two threads parsing at once can fail with "AST constructor recursion depth mismatch"
# (python/cpython#106905).  grade_many stages and judges verdicts on threads, so
# every parse of the grader's takes this lock.
_PARSING = threading.Lock()


def parse(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse``, one thread at a time."""
    with _PARSING:
        return ast.parse(source, filename=filename)


# Parameter sets a twin of a parametrized test keeps (their product, over its decorators).
TWIN_ROWS = 3
# Twins planted per test: each runs the whole test once more, and fails.
TWINS_PER_TEST = 1
# A size a test works on from which it gets no twin (see _heavy).
HEAVY_SIZE = 1000
_SLOW_CALLS = frozenset(
    {"sleep", "Thread", "Process", "ThreadPoolExecutor", "ProcessPoolExecutor"}
)

_NOT_TWINNED = frozenset({"given", "skip", "skipif", "xfail"})
# Calls that make an iterator: a twin's decorators evaluated before its original's would
# consume one the original's take from a module-level name.
_ITERATOR_CALLS = frozenset(
    {"iter", "map", "filter", "zip", "enumerate", "reversed", "count", "cycle", "chain"}
)
_RAISES = frozenset({"raises"})
_UNITTEST_RAISES = frozenset({"assertRaises", "assertRaisesRegex"})
_APPROX = frozenset({"approx"})
_ISCLOSE = frozenset({"isclose"})
# Context managers that never swallow an exception: assertions in their blocks always run.
_SAFE_CONTEXTS = frozenset(
    {
        "open", "warns", "deprecated_call", "catch_warnings", "patch", "TemporaryDirectory",
        "TemporaryFile", "NamedTemporaryFile", "StringIO", "BytesIO", "disabled", "at_level",
        "assertWarns", "assertWarnsRegex", "assertLogs", "assertNoLogs", "redirect_stdout",
        "redirect_stderr", "chdir", "context",
    }
)  # fmt: skip
_PATCH_METHODS = frozenset({"object", "dict", "multiple"})
# unittest's assertions: a module-level helper that calls one is a check of the tests.
_UNITTEST_ASSERTIONS = frozenset(
    {
        "assertTrue", "assertFalse", "assertIsNone", "assertIsNotNone", "assertIn",
        "assertNotIn", "assertIs", "assertIsNot", "assertIsInstance", "assertNotIsInstance",
        "assertRegex", "assertNotRegex", "assertEqual", "assertEquals", "assertNotEqual",
        "assertGreater", "assertLessEqual", "assertGreaterEqual", "assertLess",
        "assertAlmostEqual", "assertNotAlmostEqual",
    }
)  # fmt: skip
_UNITTEST_EQUAL = frozenset(
    {
        "assertEqual", "assertEquals", "assertListEqual", "assertTupleEqual", "assertDictEqual",
        "assertSetEqual", "assertSequenceEqual", "assertMultiLineEqual", "assertCountEqual",
    }
)  # fmt: skip
_UNITTEST_CHECKS = _UNITTEST_ASSERTIONS | _UNITTEST_EQUAL
_TEST_LIBRARIES = frozenset({"pytest", "_pytest", "hypothesis", "unittest", "mock"})
# An option's strength: a redrawn value catches liars; a ``match=`` only catches rewriters.
_VALUE, _RAISES_MATCH = 2, 1
# pytest.approx's defaults; math.isclose's.
_APPROX_REL, _APPROX_ABS = 1e-6, 1e-12
_ISCLOSE_REL = 1e-9
# A stated tolerance wider than this share of the value leaves no room for a look-alike.
_MAX_REL = 0.2


@dataclass(frozen=True, slots=True)
class Twin:
    """One planted twin: its name (``Class::name`` in a class), whose twin, what changed.

    ``lines`` are the first and last line of the test file where the twin checks its
    perturbed assertion, at its end: a failure there is the expected one.
    """

    name: str
    of: str
    change: str
    lines: tuple[int, int] = (0, 0)
    # The original's first and last line and those of the statement the twin perturbed,
    # in the same file; zeros where the perturbed statement is in a helper.
    original: tuple[int, int, int, int] = (0, 0, 0, 0)


def _called_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _short(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


def _literal_value(node: ast.expr) -> Any:
    """The value of a number, string, bytes or bool literal (``-3`` too), else ``...``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bytes)):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, (int, float))
        and not isinstance(node.operand.value, bool)
    ):
        return -node.operand.value
    return ...


def _literal(value: Any) -> ast.expr:
    if type(value) in (int, float) and value < 0:
        return ast.UnaryOp(ast.USub(), ast.Constant(-value))
    return ast.Constant(value)


_Node = TypeVar("_Node", bound=ast.AST)


def _copied(node: _Node) -> _Node:
    """A deep copy of a syntax tree (``copy.deepcopy`` costs three times as much)."""
    kind = type(node)
    new = kind.__new__(kind)
    fields = new.__dict__
    for key, value in node.__dict__.items():
        if isinstance(value, ast.AST):
            fields[key] = _copied(value)
        elif type(value) is list:
            fields[key] = [_copied(v) if isinstance(v, ast.AST) else v for v in value]
        else:
            fields[key] = value  # a name, a number, a constant's (immutable) value
    return new


def _names(node: ast.AST) -> list[str]:
    return [child.id for child in walk(node) if isinstance(child, ast.Name)]


# -- which names hold workspace values --------------------------------------------------


def _import_bindings(
    node: ast.Import | ast.ImportFrom, workspace: Callable[[str], bool]
) -> list[str]:
    if isinstance(node, ast.Import):
        return [
            (alias.asname or alias.name.partition(".")[0])
            for alias in node.names
            if workspace(alias.name.partition(".")[0])
        ]
    if node.level or node.module is None or not workspace(node.module.partition(".")[0]):
        return []
    return [alias.asname or alias.name for alias in node.names if alias.name != "*"]


def _workspace_rule(modules: frozenset[str] | None) -> Callable[[str], bool]:
    if modules is not None:
        return modules.__contains__
    stdlib: frozenset[str] = getattr(sys, "stdlib_module_names", frozenset())
    return lambda name: name not in stdlib and name not in _TEST_LIBRARIES


def _spread(tainted: set[str], nodes: Sequence[ast.AST]) -> None:
    """Taint every name bound from a tainted value in ``nodes``, until nothing changes."""
    binders: list[tuple[list[str], ast.AST]] = []
    child: ast.AST
    for node in nodes:
        for child in walk(node):
            if isinstance(child, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
                targets = child.targets if isinstance(child, ast.Assign) else [child.target]
                bound = [n for t in targets for n in _names(t)]
                if child.value is not None:
                    binders.append((bound, child.value))
            elif isinstance(child, (ast.For, ast.AsyncFor, ast.comprehension)):
                binders.append((list(_names(child.target)), child.iter))
            elif isinstance(child, (ast.With, ast.AsyncWith)):
                for item in child.items:
                    if item.optional_vars is not None:
                        # Bound by the manager, or by what its block does with it.
                        block = ast.Module([ast.Expr(item.context_expr), *child.body], [])
                        binders.append((list(_names(item.optional_vars)), block))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                binders.append(([child.name], child))
    used: dict[int, frozenset[str]] = {}  # the names each binder's value reads, once
    changed = True
    while changed:
        changed = False
        for index, (bound, value) in enumerate(binders):
            if set(bound) <= tainted:
                continue
            if index not in used:
                used[index] = frozenset(_names(value))
            if not used[index].isdisjoint(tainted):
                tainted.update(bound)
                changed = True


@dataclass(slots=True)
class _Module:
    """What the whole file tells about its names."""

    tainted: set[str]
    literals: dict[str, Any]  # module-level NAME = <literal>, assigned once
    functions: set[str]  # module-level def names
    data: set[str]  # module-level names bound once to list/tuple displays or comprehensions
    assigned: set[str]  # every module-level name bound by an assignment
    pool: dict[Any, list[Any]]
    # Module-level names bound to an iterator (a generator expression, iter(), map(), ...)
    iterators: set[str] = field(default_factory=set)


def _module_facts(tree: ast.Module, workspace: Callable[[str], bool]) -> _Module:
    tainted: set[str] = set()
    for node in walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            tainted.update(_import_bindings(node, workspace))
    top = [n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    _spread(tainted, top)
    # A module-level def or class that uses workspace names yields workspace values.
    _spread(
        tainted,
        [
            n
            for n in tree.body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        ],
    )
    counts: dict[str, int] = {}
    literals: dict[str, Any] = {}
    data: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    counts[target.id] = counts.get(target.id, 0) + 1
                    value = _literal_value(node.value)
                    if value is not ...:
                        literals[target.id] = value
                    if isinstance(node.value, (ast.List, ast.Tuple, ast.ListComp)):
                        data.add(target.id)
    literals = {k: v for k, v in literals.items() if counts.get(k) == 1}
    functions = {
        n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    pool: dict[Any, list[Any]] = {}
    for node in walk(tree):
        if isinstance(node, ast.Constant):
            shape = shape_of(node.value)
            if shape is not None:
                kept = pool.setdefault(shape, [])
                if node.value not in kept and len(kept) < 32:
                    kept.append(node.value)
    data = {d for d in data if counts.get(d) == 1}
    iterators = {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign) and _makes_iterator(node.value)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    return _Module(tainted, literals, functions, data, set(counts), pool, iterators)


def _makes_iterator(node: ast.expr) -> bool:
    """A generator expression, or a call of :data:`_ITERATOR_CALLS` (``iter(rows)``)."""
    if isinstance(node, ast.GeneratorExp):
        return True
    return isinstance(node, ast.Call) and _called_name(node.func) in _ITERATOR_CALLS


def _shares_state(function: ast.FunctionDef | ast.AsyncFunctionDef, module: _Module) -> bool:
    """Whether evaluating the test's decorators or defaults again changes what its own
    evaluation finds: they take from a module-level iterator, or call ``next``.

    A twin's copies of them are evaluated too, before or after the original's
    (marshmallow's ``fields.Integer(validate=validators_gen)`` takes its validators from a
    generator: a twin evaluated first left the original's field without any).
    """
    evaluated = [*function.decorator_list, *function.args.defaults]
    evaluated += [d for d in function.args.kw_defaults if d is not None]
    for expr in evaluated:
        for node in walk(expr):
            if isinstance(node, ast.Name) and node.id in module.iterators:
                return True
            if isinstance(node, ast.Call) and _called_name(node.func) in {"next", "send"}:
                return True
            if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)):
                return True
    return False


@dataclass(slots=True)
class _Column:
    decorator: ast.Call
    index: int
    width: int


def _parametrize_names(deco: ast.Call) -> list[str] | None:
    names_node = deco.args[0]
    if isinstance(names_node, ast.Constant) and isinstance(names_node.value, str):
        return [n.strip() for n in names_node.value.split(",") if n.strip()]
    if isinstance(names_node, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in names_node.elts
    ):
        return [e.value for e in names_node.elts]  # type: ignore[attr-defined]
    return None


def _parametrize_calls(func: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.Call]:
    for deco in func.decorator_list:
        if (
            isinstance(deco, ast.Call)
            and _called_name(deco.func) == "parametrize"
            and len(deco.args) >= 2
        ):
            yield deco


def _indirect(deco: ast.Call, names: list[str]) -> set[str]:
    for keyword in deco.keywords:
        if keyword.arg != "indirect":
            continue
        if isinstance(keyword.value, ast.Constant):
            return set(names) if keyword.value.value else set()
        if isinstance(keyword.value, (ast.List, ast.Tuple)):
            return {
                e.value
                for e in keyword.value.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str)
            }
        return set(names)
    return set()


@dataclass(slots=True)
class _Function:
    """What one test (or helper) function tells about its names."""

    node: ast.FunctionDef | ast.AsyncFunctionDef
    module: _Module
    tainted: set[str]
    columns: dict[str, _Column] = field(default_factory=dict)

    @classmethod
    def of(cls, node: ast.FunctionDef | ast.AsyncFunctionDef, module: _Module) -> _Function:
        tainted = set(module.tainted)
        columns: dict[str, _Column] = {}
        data_params: set[str] = set()
        for deco in _parametrize_calls(node):
            names = _parametrize_names(deco)
            rows = deco.args[1]
            if names is None:
                continue
            indirect = _indirect(deco, names)
            literal_rows = isinstance(rows, (ast.List, ast.Tuple))
            if any(name in module.tainted for name in _names(rows)):
                continue  # the rows hold workspace values: the parameters are tainted
            for index, name in enumerate(names):
                if name not in indirect:
                    data_params.add(name)
                    if literal_rows:
                        columns[name] = _Column(deco, index, len(names))
        arguments = node.args
        params = [a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]]
        tainted.update(p for p in params if p not in data_params)
        _spread(tainted, node.body)
        return cls(node, module, tainted, columns)

    def depends(self, node: ast.AST) -> bool:
        return any(name in self.tainted for name in _names(node))

    def loads(self, name: str) -> int:
        """How often ``name`` is read in the function's body, assertion messages aside."""
        count = 0
        for statement in self.node.body:
            for child in walk(statement):
                if isinstance(child, ast.Assert) and child.msg is not None:
                    count -= sum(
                        1
                        for n in walk(child.msg)
                        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
                    )
                if isinstance(child, ast.Name) and child.id == name:
                    count += isinstance(child.ctx, ast.Load)
        return count

    def rebinds(self, name: str) -> bool:
        """Whether the body binds ``name`` again (``expected = expected_override``), so
        that what a parameter holds at an assertion may no longer be its row's value."""
        for statement in self.node.body:
            for child in walk(statement):
                if isinstance(child, ast.Name) and child.id == name:
                    if isinstance(child.ctx, (ast.Store, ast.Del)):
                        return True
                elif isinstance(child, (ast.Global, ast.Nonlocal)) and name in child.names:
                    return True
        return False

    def number(self, node: ast.expr) -> float | None:
        """A tolerance or bound written as a literal (or a module constant), else None."""
        value = _literal_value(node)
        if value is ... and isinstance(node, ast.Name):
            value = self.module.literals.get(node.id, ...)
        return float(value) if type(value) in (int, float) else None


# -- how one assertion can be perturbed --------------------------------------------------


@dataclass(slots=True)
class _Option:
    strength: int
    apply: Callable[[random.Random], str | None]


@dataclass(slots=True)
class _Slot:
    """A literal of an expected value: where it sits, and how far a new one must be."""

    parent: ast.AST
    field: str
    index: int | None
    min_distance: float = 0.0

    def get(self) -> ast.expr:
        value = getattr(self.parent, self.field)
        return value if self.index is None else value[self.index]  # type: ignore[no-any-return]

    def set(self, node: ast.expr) -> None:
        if self.index is None:
            setattr(self.parent, self.field, node)
        else:
            getattr(self.parent, self.field)[self.index] = node


def _slots(
    parent: ast.AST,
    field_name: str,
    index: int | None,
    fn: _Function,
    distance: float = 0.0,
    *,
    keys: bool = True,
) -> list[_Slot]:
    """The literals of an expected value: displays and ``approx`` are entered, calls not.

    A dict display's values, and with ``keys`` its keys as well: an honest result may
    compare with the keys of a dict alone (an ordered set), and then only a twin that
    changed them is exclusive.  Without ``keys`` (the other side is a dict display,
    compared value by value) a changed key would make the twin fail for a lying value
    too.
    """
    node = getattr(parent, field_name)
    node = node if index is None else node[index]
    if _literal_value(node) is not ... or (
        isinstance(node, ast.Constant) and type(node.value) is bool
    ):
        return [_Slot(parent, field_name, index, distance)]
    found: list[_Slot] = []
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        for i, element in enumerate(node.elts):
            if not isinstance(element, ast.Starred):
                found += _slots(node, "elts", i, fn, distance, keys=keys)
    elif isinstance(node, ast.Dict):
        for field in ("values", "keys") if keys else ("values",):
            for i, key in enumerate(node.keys):
                if key is not None:
                    found += _slots(node, field, i, fn, distance, keys=keys)
        if not found:  # no value is a literal: a changed key makes the dicts differ
            for i, key in enumerate(node.keys):
                if key is not None:
                    found += _slots(node, "keys", i, fn, distance, keys=keys)
    elif isinstance(node, ast.Call) and _called_name(node.func) in _APPROX and node.args:
        tolerance = _approx_tolerance(node, fn)
        if tolerance is not None:
            for slot in _slots(node, "args", 0, fn):
                _widen(slot, tolerance)
                found.append(slot)
    return found


def _opaque(node: ast.expr) -> bool:
    """Whether the compared expression's value is not a dict display's, compared as dicts are."""
    if isinstance(node, (ast.Dict, ast.DictComp)):
        return False
    return not (isinstance(node, ast.Call) and _called_name(node.func) == "dict")


def _approx_tolerance(call: ast.Call, fn: _Function) -> tuple[float, float] | None:
    """``(rel, abs)`` of an ``approx`` call, or None where one is not a literal."""
    rel, absolute = _APPROX_REL, _APPROX_ABS
    for keyword in call.keywords:
        if keyword.arg in ("rel", "abs"):
            value = fn.number(keyword.value)
            if value is None:
                return None
            if keyword.arg == "rel":
                rel = value
            else:
                absolute = value
    if len(call.args) > 1:
        return None  # rel/abs given by position: read no further
    return (rel, absolute) if rel <= _MAX_REL else None


def _widen(slot: _Slot, tolerance: tuple[float, float]) -> None:
    rel, absolute = tolerance
    value = _literal_value(slot.get())
    if type(value) in (int, float):
        slot.min_distance = max(slot.min_distance, 4 * (rel * abs(value) + absolute))


def _slot_value(slot: _Slot) -> Any:
    old = slot.get()
    if isinstance(old, ast.Constant) and type(old.value) is bool:
        return old.value
    return _literal_value(old)


def _redraw(
    slot: _Slot,
    rng: random.Random,
    pool: Mapping[Any, Sequence[Any]],
    avoid: Sequence[Any] = (),
) -> str | None:
    """Redraw one literal; never to a value of ``avoid`` (the display's other literals)."""
    old = slot.get()
    value = _slot_value(slot)
    avoid = (*avoid, *_counter_steps(value))
    for _ in range(_REDRAWS):
        drawn = draw_like(value, rng, pool, min_distance=slot.min_distance)
        if drawn is None:
            return None
        if drawn not in avoid:  # literal values: numbers, strings, bytes
            break
    else:
        return None
    new = _literal(drawn)
    slot.set(new)
    return f"{_short(old)} -> {_short(new)}"


_REDRAWS = 32
_STEPS = (-3, -2, -1, 1, 2, 3)


def _counter_steps(value: Any) -> tuple[Any, ...]:
    """What a counter that showed ``value`` shows a few calls later or earlier.

    A test that reads state advancing from run to run (a global counter, an id
    generator: pydash's ``unique_id``) sees another value in its twin than in its
    original, usually the next one; a twin drawn to that value passes for honest code.
    The int 1 keeps its look-alike 0, its other bit (see ``probes.draw_like``).
    """
    if type(value) is int and value != 1:
        return tuple(value + step for step in _STEPS)
    if type(value) is str and value.isascii() and value.isdigit() and len(value) < 20:
        return tuple(str(int(value) + step).zfill(len(value)) for step in _STEPS)
    return ()


class _Perturber:
    """The ways one statement of a function (test or helper) can be perturbed."""

    def __init__(
        self, fn: _Function, pool: Mapping[Any, Sequence[Any]], draw_word: Callable[[], str]
    ) -> None:
        self.fn = fn
        self.pool = pool
        self.draw_word = draw_word

    # -- options of each statement kind ---------------------------------------------

    def options(self, statement: ast.stmt) -> list[_Option]:
        if isinstance(statement, ast.Assert):
            return self._assert(statement) if self.fn.depends(statement.test) else []
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            call = statement.value
            if isinstance(call.func, ast.Attribute) and self.fn.depends(call):
                return self._unittest(call)
        if (
            isinstance(statement, (ast.With, ast.AsyncWith))
            and _raises_item(statement) is not None
        ) and self.fn.depends(ast.Module(statement.body, [])):
            return self._raises(statement)
        return []

    def _assert(self, statement: ast.Assert) -> list[_Option]:
        test = statement.test
        found: list[_Option] = []
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            op = test.ops[0]
            if isinstance(op, ast.Eq):
                right = test.comparators[0]
                found += self._values(test, "left", None, test.left, keys=_opaque(right))
                found += self._values(test, "comparators", 0, right, keys=_opaque(test.left))
                found += self._column(test, test.left)
                found += self._column(test, test.comparators[0])
            elif isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
                found += self._offset(test)
        elif isinstance(test, ast.Call) and _called_name(test.func) in _ISCLOSE:
            found += self._isclose(test)
        return found

    def _values(
        self, parent: ast.AST, field_name: str, index: int | None, side: ast.expr, *, keys: bool
    ) -> list[_Option]:
        slots = _slots(parent, field_name, index, self.fn, keys=keys)
        if not slots:
            return []
        # Either side will do: slots never reach inside a call, so no literal that is
        # also an input of the code under test is ever redrawn.
        return [_Option(_VALUE, lambda rng: self._redraw_all(slots, rng))]

    def _redraw_all(self, slots: list[_Slot], rng: random.Random) -> str | None:
        """Every literal of one expected value redrawn.

        An honest ``__eq__`` may ignore a part of what it is compared with (a version's
        build metadata, a record's field it does not own): with one element of a
        display redrawn, honest code could still be equal to it.  With every literal
        redrawn, it would have to ignore them all.
        """
        # No literal becomes another's value: ``{2, 3}`` redrawn as ``{3, 2}`` is the
        # same set, and an ``assertCountEqual`` of a permutation still holds.
        originals = [_slot_value(slot) for slot in slots]
        changes = [
            change for slot in slots if (change := _redraw(slot, rng, self.pool, originals))
        ]
        if not changes:
            return None
        return changes[0] if len(changes) == 1 else f"{len(changes)} literals: {changes[0]}, ..."

    def _redraw_one(self, slots: list[_Slot], rng: random.Random) -> str | None:
        for slot in rng.sample(slots, len(slots)):
            change = _redraw(slot, rng, self.pool)
            if change is not None:
                return change
        return None

    def _column(self, compare: ast.Compare, side: ast.expr) -> list[_Option]:
        if not isinstance(side, ast.Name) or side.id not in self.fn.columns:
            return []
        inside = sum(1 for n in _names(compare) if n == side.id)
        if self.fn.loads(side.id) != inside or inside != 1 or self.fn.rebinds(side.id):
            # Also an input of the call, used elsewhere, or bound again before the
            # assertion (click's ``expected = expected_override``): never perturbed.
            return []
        column = self.fn.columns[side.id]
        return [_Option(_VALUE, lambda rng: self._perturb_column(column, side.id, rng))]

    def _perturb_column(self, column: _Column, name: str, rng: random.Random) -> str | None:
        rows = column.decorator.args[1]
        assert isinstance(rows, (ast.List, ast.Tuple))
        changed: list[tuple[int, ast.expr]] = []
        for position, row in enumerate(rows.elts):
            new_row = _perturb_row(row, column, rng, self.pool)
            if new_row is not None:
                changed.append((position, new_row))
        if not changed:
            return None
        changed = sorted(rng.sample(changed, min(len(changed), TWIN_ROWS)))
        if not _keep_rows(column.decorator, [p for p, _ in changed], self.fn.module):
            return None
        rows.elts = [row for _, row in changed]
        column.decorator.__dict__["_ldd_reduced"] = True
        return f"the parametrized values of {name!r}"

    def _offset(self, compare: ast.Compare) -> list[_Option]:
        """``abs(w - c) < eps`` (or ``eps > abs(c - w)``): another ``c``, beyond ``2 * eps``."""
        op = compare.ops[0]
        small, bound = (
            (compare.left, compare.comparators[0])
            if isinstance(op, (ast.Lt, ast.LtE))
            else (compare.comparators[0], compare.left)
        )
        eps = self.fn.number(bound)
        if eps is None or not (
            isinstance(small, ast.Call)
            and _called_name(small.func) in ("abs", "fabs")
            and len(small.args) == 1
            and isinstance(small.args[0], ast.BinOp)
            and isinstance(small.args[0].op, ast.Sub)
        ):
            return []
        difference = small.args[0]
        slots = []
        for name, other in (("right", difference.left), ("left", difference.right)):
            constant = getattr(difference, name)
            if self.fn.depends(other) and type(_literal_value(constant)) in (int, float):
                slots.append(_Slot(difference, name, None, 2 * abs(eps) + 1e-12))
        if not slots:
            return []
        return [_Option(_VALUE, lambda rng: self._redraw_one(slots, rng))]

    def _isclose(self, call: ast.Call) -> list[_Option]:
        rel, absolute = _ISCLOSE_REL, 0.0
        for keyword in call.keywords:
            value = self.fn.number(keyword.value)
            if keyword.arg in ("rel_tol", "abs_tol") and value is None:
                return []
            if keyword.arg == "rel_tol" and value is not None:
                rel = value
            elif keyword.arg == "abs_tol" and value is not None:
                absolute = value
        if len(call.args) != 2 or rel > _MAX_REL:
            return []
        slots = []
        for index, other in ((1, call.args[0]), (0, call.args[1])):
            if self.fn.depends(other) and type(_literal_value(call.args[index])) in (int, float):
                slot = _Slot(call, "args", index)
                _widen(slot, (rel, absolute))
                slots.append(slot)
        return [_Option(_VALUE, lambda rng: self._redraw_one(slots, rng))] if slots else []

    def _unittest(self, call: ast.Call) -> list[_Option]:
        assert isinstance(call.func, ast.Attribute)
        name = call.func.attr
        found: list[_Option] = []
        if (name in _UNITTEST_EQUAL or name == "assertAlmostEqual") and len(call.args) >= 2:
            distance = 0.0
            if name == "assertAlmostEqual":
                tolerance = self._almost_tolerance(call)
                if tolerance is None:
                    return []
                distance = 4 * tolerance
            for index in (0, 1):
                keys = _opaque(call.args[1 - index])
                slots = _slots(call, "args", index, self.fn, distance, keys=keys)
                if slots:
                    found.append(_Option(_VALUE, partial(self._redraw_all, slots)))
        return found

    def _almost_tolerance(self, call: ast.Call) -> float | None:
        places: float | None = 7.0
        arguments = {
            "places": call.args[2] if len(call.args) > 2 else None,
            "delta": call.args[4] if len(call.args) > 4 else None,
        }
        for keyword in call.keywords:
            if keyword.arg in arguments:
                arguments[keyword.arg] = keyword.value
        if arguments["delta"] is not None:
            return self.fn.number(arguments["delta"])
        if arguments["places"] is not None:
            places = self.fn.number(arguments["places"])
        return None if places is None else 0.5 * 10.0 ** (-places)

    def _raises(self, statement: ast.With | ast.AsyncWith) -> list[_Option]:
        return [_Option(_RAISES_MATCH, lambda rng: self._match(statement))]

    # -- the perturbations ------------------------------------------------------------

    def _match(self, statement: ast.With | ast.AsyncWith) -> str | None:
        item = _raises_item(statement)
        assert item is not None
        call = item.context_expr
        assert isinstance(call, ast.Call)
        pattern = f"{self.draw_word()}_{self.draw_word()}_{self.draw_word()}"
        name = _called_name(call.func)
        if name in _RAISES:
            call.keywords = [k for k in call.keywords if k.arg != "match"]
            call.keywords.append(ast.keyword("match", ast.Constant(pattern)))
            return f"raises(..., match={pattern!r})"
        assert isinstance(call.func, ast.Attribute)
        call.func.attr = "assertRaisesRegex"
        call.args = [call.args[0], ast.Constant(pattern)]
        return f"{name} -> assertRaisesRegex(..., {pattern!r})"


def _raises_item(statement: ast.With | ast.AsyncWith) -> ast.withitem | None:
    """The one ``pytest.raises(E)`` / ``self.assertRaises(E)`` item of a ``with``, if any."""
    if len(statement.items) != 1:
        return None
    item = statement.items[0]
    call = item.context_expr
    if not isinstance(call, ast.Call) or not call.args:
        return None
    name = _called_name(call.func)
    if name in _RAISES and len(call.args) == 1:
        return item
    if name in _UNITTEST_RAISES and isinstance(call.func, ast.Attribute):
        return item if len(call.args) == (1 if name == "assertRaises" else 2) else None
    return None


def _safe_context(statement: ast.With | ast.AsyncWith) -> bool:
    """Whether every context manager of the ``with`` is one that never swallows an error."""
    for item in statement.items:
        call = item.context_expr
        if not isinstance(call, ast.Call):
            return False
        name = _called_name(call.func)
        if name in _PATCH_METHODS:
            owner = call.func.value if isinstance(call.func, ast.Attribute) else None
            if owner is None or _called_name(owner) != "patch":
                return False
        elif name not in _SAFE_CONTEXTS:
            return False
    return True


def _perturb_row(
    row: ast.expr, column: _Column, rng: random.Random, pool: Mapping[Any, Sequence[Any]]
) -> ast.expr | None:
    row = _copied(row)
    holder: ast.AST
    if isinstance(row, ast.Call) and _called_name(row.func) == "param":
        if any(k.arg == "marks" for k in row.keywords) or len(row.args) != column.width:
            return None
        holder, field_name, index = row, "args", column.index
    elif column.width == 1:
        holder, field_name, index = ast.Tuple([row], ast.Load()), "elts", 0
    elif isinstance(row, (ast.Tuple, ast.List)) and len(row.elts) == column.width:
        holder, field_name, index = row, "elts", column.index
    else:
        return None
    target = getattr(holder, field_name)[index]
    if _literal_value(target) is ... and not (
        isinstance(target, ast.Constant) and type(target.value) is bool
    ):
        return None
    if _redraw(_Slot(holder, field_name, index), rng, pool) is None:
        return None
    return holder.elts[0] if holder is not row and isinstance(holder, ast.Tuple) else row


def _keep_rows(deco: ast.Call, kept: list[int], module: _Module) -> bool:
    """Keep only the rows ``kept`` of a literal ``parametrize``, with its ``ids`` in step.

    Literal ids are sliced; ids named by a module-level list are picked by index
    (``[IDS[0], IDS[4]]``); a function (``str``, a ``def`` or a ``lambda``) needs nothing.
    Ids of any other shape keep every row (False).
    """
    rows = deco.args[1]
    if not isinstance(rows, (ast.List, ast.Tuple)):
        return False
    for keyword in deco.keywords:
        if keyword.arg != "ids":
            continue
        ids = keyword.value
        if isinstance(ids, (ast.List, ast.Tuple)):
            if len(ids.elts) != len(rows.elts):
                return False
            ids.elts = [ids.elts[i] for i in kept]
        elif isinstance(ids, ast.Name) and ids.id in module.data:
            keyword.value = ast.List(
                [
                    ast.Subscript(ast.Name(ids.id, ast.Load()), ast.Constant(i), ast.Load())
                    for i in kept
                ],
                ast.Load(),
            )
        elif not (
            isinstance(ids, (ast.Lambda, ast.Attribute))
            or (isinstance(ids, ast.Name) and ids.id not in module.assigned)
        ):
            return False
    rows.elts = [rows.elts[i] for i in kept]
    return True


def _fewer_rows(
    node: ast.FunctionDef | ast.AsyncFunctionDef, rng: random.Random, module: _Module
) -> None:
    """At most :data:`TWIN_ROWS` parameter sets over all the twin's ``parametrize``."""
    budget = TWIN_ROWS
    for deco in _parametrize_calls(node):
        rows = deco.args[1]
        if deco.__dict__.get("_ldd_reduced"):
            count = len(rows.elts) if isinstance(rows, (ast.List, ast.Tuple)) else budget
            budget = max(1, budget // max(1, count))
            continue
        if isinstance(rows, ast.Name) and rows.id in module.data:
            # A module-level list or tuple: its first rows, when the ids allow it.
            if not any(k.arg == "ids" for k in deco.keywords):
                deco.args[1] = ast.Subscript(
                    rows, ast.Slice(None, ast.Constant(budget)), ast.Load()
                )
                budget = 1
            continue
        if not isinstance(rows, (ast.List, ast.Tuple)):
            continue
        if len(rows.elts) > budget:
            unmarked = [
                i for i, row in enumerate(rows.elts)
                if not (isinstance(row, ast.Call) and any(k.arg == "marks" for k in row.keywords))
            ]  # fmt: skip
            pick = unmarked if len(unmarked) >= budget else list(range(len(rows.elts)))
            if not _keep_rows(deco, sorted(rng.sample(pick, budget)), module):
                continue
        budget = max(1, budget // max(1, len(rows.elts)))


# -- where a function's assertions always run -------------------------------------------


@dataclass(slots=True)
class _Site:
    path: tuple[tuple[str, int], ...]
    options: list[_Option]
    helper: str | None = None  # the helper the test calls there, for a site inside one
    helper_path: tuple[tuple[str, int], ...] = ()

    @property
    def strength(self) -> int:
        return max(option.strength for option in self.options)


def _leaves(statement: ast.stmt) -> str | None:
    """``"return"`` if the statement may return, ``"loop"`` if it may break or continue."""
    found = None
    stack: list[tuple[ast.AST, bool]] = [(statement, False)]
    while stack:
        node, in_loop = stack.pop()
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
            and node is not statement
        ):
            continue
        if isinstance(node, ast.Return):
            return "return"
        if isinstance(node, (ast.Break, ast.Continue)) and not in_loop:
            found = "loop"
        inner = in_loop or (
            isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and node is not statement
        )
        stack.extend((child, inner) for child in child_nodes(node))
    return found


def _sites(
    body: list[ast.stmt],
    perturber: _Perturber,
    helpers: Mapping[str, Callable[[], list[_Site]]],
    path: tuple[tuple[str, int], ...] = (),
) -> tuple[list[_Site], bool]:
    """The sites of a block, and whether the block may stop early (nothing after it counts)."""
    found: list[_Site] = []
    for index, statement in enumerate(body):
        here = (*path, ("body", index))
        options = perturber.options(statement)
        if options:
            found.append(_Site(here, options))
        elif (
            isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Call)
            and isinstance(statement.value.func, ast.Name)
            and statement.value.func.id in helpers
        ):
            for inner in helpers[statement.value.func.id]():
                found.append(_Site(here, inner.options, statement.value.func.id, inner.path))
        elif isinstance(statement, (ast.With, ast.AsyncWith)) and _safe_context(statement):
            inner_sites, stopped = _sites(statement.body, perturber, helpers, here)
            found += inner_sites
            if stopped:
                return found, True
        elif (
            isinstance(statement, (ast.For, ast.AsyncFor))
            and isinstance(statement.iter, (ast.List, ast.Tuple))
            and statement.iter.elts
            and not statement.orelse
        ):
            inner_sites, stopped = _sites(statement.body, perturber, helpers, here)
            found += inner_sites
        leaves = _leaves(statement)
        if leaves == "return" or (leaves == "loop" and path):
            return found, True
    return found, False


def _follow(node: ast.AST, path: Sequence[tuple[str, int]]) -> ast.stmt:
    for field_name, index in path:
        node = getattr(node, field_name)[index]
    assert isinstance(node, ast.stmt)
    return node


_FLAG_WORDS = ("ok", "same", "valid", "good", "held", "match", "fine", "sound")


def _defer(
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    path: Sequence[tuple[str, int]],
    rng: random.Random,
) -> None:
    """Make the perturbed assertion at ``path`` record its failure; check it at the end.

    The rest of the test still runs -- its clean-up included (a twin that stopped at its
    assertion could leave a setting changed for the tests after it) -- and the check
    runs on every way out, in a ``finally``: an honest workspace fails the twin there.
    """
    taken = set(_names(function)) | {a.arg for a in walk(function) if isinstance(a, ast.arg)}
    flag = next(
        (w for w in rng.sample(_FLAG_WORDS, len(_FLAG_WORDS)) if w not in taken),
        f"ok_{rng.randrange(10**6)}",
    )
    *parents, (field_name, index) = path
    holder = _follow(function, parents) if parents else function
    statements = getattr(holder, field_name)
    site = statements[index]
    failed = ast.Assign([ast.Name(flag, ast.Store())], ast.Constant(False))
    # The assertion stays an assertion, so pytest rewrites it as it does the original's
    # (its operands stay alive until it is decided: ``hash(C()) != hash(C())`` compares
    # two live objects there, and could compare one reused address otherwise).
    handler = ast.ExceptHandler(ast.Name("AssertionError", ast.Load()), None, [failed])
    recorded = ast.Try([site], [handler], [], [])
    statements[index] = recorded
    body = list(function.body)
    docstring = (
        body[:1]
        if body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
        else []
    )
    check = ast.Assert(ast.Name(flag, ast.Load()), None)
    function.body = [
        *docstring,
        ast.Assign([ast.Name(flag, ast.Store())], ast.Constant(True)),
        ast.Try(body[len(docstring) :], [], [], [check]),
    ]


def _check_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[int, int]:
    """The lines of the final check :func:`_defer` added."""
    guard = function.body[-1]
    assert isinstance(guard, ast.Try)
    check = guard.finalbody[-1]
    assert isinstance(check, ast.Assert)
    return check.lineno, check.end_lineno or check.lineno


# -- planting ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Planted:
    """A twin (or a helper copy) to splice in, and where its perturbed assertion is."""

    node: ast.FunctionDef | ast.AsyncFunctionDef
    container: list[ast.stmt]
    original: ast.stmt | None
    owner: str | None
    twin: Twin | None = None
    site_function: str = ""
    # Where the twin's perturbed statement is in the original (None: in a helper).
    path: tuple[tuple[str, int], ...] | None = None


def _twin_of(
    original: ast.FunctionDef | ast.AsyncFunctionDef,
    module: _Module,
    helpers: Mapping[str, ast.FunctionDef],
    rng: random.Random,
    draw_name: Callable[[], str],
    draw_word: Callable[[], str],
) -> (
    tuple[
        ast.FunctionDef | ast.AsyncFunctionDef,
        str,
        ast.FunctionDef | None,
        tuple[tuple[str, int], ...] | None,
    ]
    | None
):
    """One twin of a test: the copy, its change, the helper copy it calls (if any), and
    where its perturbed statement is in the test (None: in the helper)."""
    twin = _copied(original)
    fn = _Function.of(twin, module)
    perturber = _Perturber(fn, module.pool, draw_word)
    copies: dict[str, ast.FunctionDef] = {}

    def helper_sites(name: str) -> Callable[[], list[_Site]]:
        def sites() -> list[_Site]:
            if name not in copies:
                copies[name] = _copied(helpers[name])
            helper = copies[name]
            inner = _Perturber(_Function.of(helper, module), module.pool, draw_word)
            return _sites(helper.body, inner, {})[0]

        return sites

    sites = _sites(twin.body, perturber, {name: helper_sites(name) for name in helpers})[0]
    while sites:
        best = max(site.strength for site in sites)
        site = rng.choice([s for s in sites if s.strength == best])
        sites.remove(site)
        change = None
        # The strongest way first; a weaker one where it cannot be done (a value with
        # no look-alike, rows whose ids cannot follow).
        options = sorted(rng.sample(site.options, len(site.options)), key=lambda o: -o.strength)
        for option in options:
            change = option.apply(rng)
            if change is not None:
                break
        if change is None:
            continue
        if site.helper is None:
            _defer(twin, site.path, rng)
            return twin, change, None, tuple(site.path)
        helper_copy = copies[site.helper]
        _defer(helper_copy, site.helper_path, rng)
        helper_copy.name = draw_name().replace("test_", f"{site.helper}_", 1)
        call = _follow(twin, site.path)
        assert isinstance(call, ast.Expr)
        assert isinstance(call.value, ast.Call)
        call.value.func = ast.Name(helper_copy.name, ast.Load())
        return twin, f"{site.helper}() -> {helper_copy.name}(): {change}", helper_copy, None
    return None


def _size(node: ast.AST) -> float:
    """The value of a number literal or a power or product of them (``10**5``), else 0.

    ``sys.getrecursionlimit()`` counts as its value here (1,000 unless changed): tests
    use it to build structures too deep to recurse through (cachetools' regression
    test of a cache's copy fills a thousand keys with up to a thousand uses each).
    """
    if (
        isinstance(node, ast.Call)
        and _called_name(node.func) == "getrecursionlimit"
        and not node.args
        and not node.keywords
    ):
        return float(sys.getrecursionlimit())
    value = _literal_value(node) if isinstance(node, ast.expr) else ...
    try:
        if isinstance(value, (int, float)):
            return abs(float(value))
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Pow, ast.Mult)):
            left, right = _size(node.left), _size(node.right)
            return float(left**right if isinstance(node.op, ast.Pow) else left * right)
    except OverflowError:
        return float("inf")
    return 0.0


_Def = ast.FunctionDef | ast.AsyncFunctionDef


def _heavy(
    function: _Def,
    module_defs: Mapping[str, _Def] | None = None,
    methods: Mapping[str, _Def] | None = None,
    _seen: set[int] | None = None,
) -> bool:
    """Whether a test looks slow: sizes of a thousand or more, threads, or sleeps.

    A twin runs its test whole once more, so twinning a test that runs for seconds
    costs seconds; such a test keeps the template canaries and the probes.  What
    counts is a number of at least :data:`HEAVY_SIZE` given to a call (``range(10**5)``),
    looped over or assigned (``n = 1_500``) -- never one compared with -- and a call
    of ``sleep``, ``Thread`` or ``Process``, in the test or in a helper of the file it
    calls: a module-level function by its name, a method of its class through
    ``self.`` or ``cls.`` (exceptiongroup's ``self.make_deep_eg()`` nests 150,000
    groups).
    """
    seen = _seen if _seen is not None else {id(function)}
    for node in walk(function):
        if isinstance(node, ast.Call):
            name = _called_name(node.func) or ""
            if name in _SLOW_CALLS:
                return True
            helper = _helper_called(node.func, module_defs or {}, methods or {})
            if helper is not None and id(helper) not in seen:
                seen.add(id(helper))
                if _heavy(helper, module_defs, methods, seen):
                    return True
            if name in _APPROX | _ISCLOSE or name.startswith("assert"):
                continue  # expected values, not work: ``approx(1e6)``, ``assertEqual(x, 10**6)``
            values = [*node.args, *(k.value for k in node.keywords)]
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            values = [node.iter]
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            values = [node.value] if node.value is not None else []
        else:
            continue
        if any(_size(value) >= HEAVY_SIZE for value in values):
            return True
    return False


def _helper_called(
    func: ast.expr, module_defs: Mapping[str, _Def], methods: Mapping[str, _Def]
) -> _Def | None:
    """The file's own function a call runs: ``name(...)`` or ``self.name(...)``."""
    if isinstance(func, ast.Name):
        return module_defs.get(func.id)
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id in ("self", "cls")
    ):
        return methods.get(func.attr)
    return None


def _anchors(body: Sequence[ast.stmt]) -> list[int]:
    """Indices after which a definition may be inserted: right after a def or class."""
    return [
        index + 1
        for index, node in enumerate(body)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    ]


def _position(body: Sequence[ast.stmt], original: ast.stmt | None, rng: random.Random) -> int:
    """Where a twin of ``original`` (or a helper copy, for None) goes in ``body``."""
    if original is None:
        return rng.choice(_anchors(body) or [len(body)])
    at = next(index for index, node in enumerate(body) if node is original)
    later = [anchor for anchor in _anchors(body) if anchor > at]
    if rng.random() < 0.5 or not later:
        return at  # right before it, where its decorators find the names the original's do
    return rng.choice(later)


def plant_twins(
    source: bytes,
    tree: ast.Module,
    tests: Sequence[str],
    draw_name: Callable[[], str],
    rng: random.Random,
    *,
    workspace_modules: frozenset[str] | None = None,
) -> tuple[bytes, list[Twin]]:
    """The file's source with its twins spliced in, and the twins.

    ``tests`` are the file's collectable tests (``name`` or ``Class::name``);
    ``draw_name()`` returns a fresh test name each call (and knows the taken ones).
    ``workspace_modules`` are the top-level names the workspace's modules go by (None:
    every import that is not the standard library's or a test library's).  The
    original text is kept byte for byte; a file whose twins cannot be spliced in
    cleanly gets none.
    """
    module = _module_facts(tree, _workspace_rule(workspace_modules))
    helpers = {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and not node.name.startswith("test")
        and any(
            isinstance(child, ast.Assert)
            or (isinstance(child, ast.Call) and _called_name(child.func) in _UNITTEST_CHECKS)
            for child in walk(node)
        )
    }
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    module_defs = {
        n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    class_defs = {
        name: {
            n.name: n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        for name, node in classes.items()
    }

    words = sorted(
        {part.lower() for t in tests for part in t.split("::")[-1].split("_") if part.isalpha()}
        - {"test"}
        or {"value"}
    )

    def draw_word() -> str:
        return rng.choice(words) + "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(3))

    planted: list[_Planted] = []
    for test in tests:
        *owner, name = test.split("::")
        if len(owner) > 1 or (owner and owner[0] not in classes):
            continue  # tests of nested classes: the template canaries cover them
        container = classes[owner[0]].body if owner else tree.body
        original = next(
            (
                node
                for node in container
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name
            ),
            None,
        )
        if (
            original is None
            or _NOT_TWINNED
            & {
                _called_name(d.func if isinstance(d, ast.Call) else d)
                for d in original.decorator_list
            }
            or _heavy(original, module_defs, class_defs.get(owner[0], {}) if owner else {})
            or _shares_state(original, module)
        ):
            continue
        for _ in range(TWINS_PER_TEST):
            made = _twin_of(original, module, {} if owner else helpers, rng, draw_name, draw_word)
            if made is None:
                break
            twin, change, helper_copy, path = made
            _fewer_rows(twin, rng, module)
            twin.name = draw_name()
            record = Twin("::".join([*owner, twin.name]), test, change[:200])
            site_function = helper_copy.name if helper_copy is not None else twin.name
            planted.append(
                _Planted(
                    twin,
                    container,
                    original,
                    owner[0] if owner else None,
                    record,
                    site_function,
                    path,
                )
            )
            if helper_copy is not None:
                planted.append(_Planted(helper_copy, tree.body, None, None))
    if not planted:
        return source, []
    return _splice(source, tree, planted, rng)


def _indent_of(lines: Sequence[bytes], node: ast.stmt) -> bytes:
    line = lines[node.lineno - 1]
    return line[: len(line) - len(line.lstrip(b" \t"))]


def _splice(
    source: bytes, tree: ast.Module, planted: list[_Planted], rng: random.Random
) -> tuple[bytes, list[Twin]]:
    """Insert the planted definitions into the text; locate their sites in the result."""
    try:
        encoding = tokenize.detect_encoding(io.BytesIO(source).readline)[0]
    except SyntaxError:
        return source, []
    lines = source.splitlines(keepends=True)
    inserts: dict[int, list[bytes]] = {}
    for item in planted:
        at = _position(item.container, item.original, rng)
        container = item.container
        if at < len(container):
            target = container[at]
            first = min(
                [target.lineno, *(d.lineno for d in getattr(target, "decorator_list", []))]
            )
            line_index = first - 1
            indent = _indent_of(lines, target)
        else:
            last = container[-1]
            line_index = last.end_lineno or len(lines)
            indent = _indent_of(lines, last)
        unparsed = ast.unparse(ast.fix_missing_locations(item.node))
        try:
            block = "".join(f"{line}\n" for line in unparsed.split("\n")).encode(encoding)
        except (UnicodeEncodeError, LookupError):
            return source, []
        block = b"".join(
            indent + line if line.strip() else line for line in block.splitlines(keepends=True)
        )
        inserts.setdefault(line_index, []).append(block)
    out: list[bytes] = []
    for index in range(len(lines) + 1):
        # At one place, a class's methods before module-level definitions: after a
        # module-level def, an indented block would be read as part of its body.
        for block in sorted(inserts.get(index, ()), key=_indent_width, reverse=True):
            if out and not out[-1].endswith((b"\n", b"\r")):
                out.append(b"\n")
            out.append(b"\n" + block + b"\n")
        if index < len(lines):
            out.append(lines[index])
    text = b"".join(out)
    try:
        spliced = parse(text)
    except (SyntaxError, ValueError):
        return source, []
    twins = []
    for item in planted:
        if item.twin is None:
            continue
        function = _find_function(spliced, item.owner, item.site_function)
        if function is None:
            return source, []
        try:
            lines_range = _check_lines(function)
        except (AttributeError, IndexError, AssertionError):
            return source, []
        original = _original_site(spliced, item)
        twins.append(Twin(item.twin.name, item.twin.of, item.twin.change, lines_range, original))
    return text, twins


def _original_site(tree: ast.Module, item: _Planted) -> tuple[int, int, int, int]:
    """The original's lines and those of the statement its twin perturbed, in ``tree``."""
    assert item.twin is not None
    if item.path is None:
        return (0, 0, 0, 0)
    function = _find_function(tree, item.owner, item.twin.of.rpartition("::")[2])
    try:
        site = _follow(function, item.path) if function is not None else None
    except (AttributeError, IndexError, AssertionError):
        site = None
    if function is None or site is None:
        return (0, 0, 0, 0)
    last = function.end_lineno or function.lineno
    return function.lineno, last, site.lineno, site.end_lineno or site.lineno


def _indent_width(block: bytes) -> int:
    return len(block) - len(block.lstrip(b" \t"))


def _find_function(
    tree: ast.Module, owner: str | None, name: str
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    bodies: list[list[ast.stmt]] = [tree.body]
    bodies += [n.body for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner]
    for body in bodies:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                return node
    return None
