"""The package layout: layers without circles, documented import paths that keep working.

The layers, bottom up (docs/contributing.md): errors < model < store < calibration <
config / report / agents / the sandbox < plugin < cli / demo.  A module imports only
from its own layer or below, and no two modules import each other, however long the
loop.  Imports under ``if TYPE_CHECKING:`` are not counted: they never run.

Paths the documentation taught before the package had its folders stay importable
as thin re-export modules; the package itself never imports them.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pytest_ldd"

#: The layer of each part of the package (the longest matching prefix decides).
LAYERS = {
    "pytest_ldd.errors": 0,
    "pytest_ldd.model": 1,
    "pytest_ldd.store": 2,
    "pytest_ldd.calibration": 3,
    "pytest_ldd.config": 4,
    "pytest_ldd.report": 4,
    "pytest_ldd.agents": 4,
    "pytest_ldd.sandbox": 4,
    "pytest_ldd._sandbox": 4,
    "pytest_ldd.plugin": 5,
    "pytest_ldd.cli": 6,
    "pytest_ldd.demo": 6,
    "pytest_ldd.__main__": 6,
}

#: Old module paths kept as re-exports of their new homes.
SHIMS = {
    "pytest_ldd.metric": "pytest_ldd.model.metric",
    "pytest_ldd.compose": "pytest_ldd.model.compose",
    "pytest_ldd.loss": "pytest_ldd.model.loss",
    "pytest_ldd.estimator": "pytest_ldd.model.estimator",
    "pytest_ldd.records": "pytest_ldd.model.records",
    "pytest_ldd.statistics": "pytest_ldd.model.statistics",
    "pytest_ldd.registry": "pytest_ldd.calibration.registry",
    "pytest_ldd.calibrator": "pytest_ldd.calibration.calibrator",
    "pytest_ldd.hookspecs": "pytest_ldd.plugin.hookspecs",
    "pytest_ldd.terminal": "pytest_ldd.report.terminal",
}

#: What the documentation (docs/, README.md, the design contract) taught before the
#: move, as ``module`` or ``module:name``: each must keep importing.
TAUGHT = [
    "pytest_ldd.agents",
    "pytest_ldd.agents.metrics",
    "pytest_ldd.calibrator:Calibrator",
    "pytest_ldd.compose:maximum",
    "pytest_ldd.compose:weighted_sum",
    "pytest_ldd.config:load_config",
    "pytest_ldd.demo",
    "pytest_ldd.errors:GamingGuardError",
    "pytest_ldd.errors:LddAdvisoryWarning",
    "pytest_ldd.errors:PriceError",
    "pytest_ldd.estimator:MeanHistoryEstimator",
    "pytest_ldd.hookspecs:pytest_ldd_episode",
    "pytest_ldd.hookspecs:pytest_ldd_observation",
    "pytest_ldd.hookspecs:pytest_ldd_register_metrics",
    "pytest_ldd.hookspecs:pytest_ldd_state_changed",
    "pytest_ldd.loss:Loss",
    "pytest_ldd.loss:Signal",
    "pytest_ldd.loss:VectorLoss",
    "pytest_ldd.metric:FORBIDDEN_PHRASES",
    "pytest_ldd.metric:bounded_rate",
    "pytest_ldd.metric:positive_count",
    "pytest_ldd.metric:signed_delta",
    "pytest_ldd.plugin",
    "pytest_ldd.records:CalibrationRecord",
    "pytest_ldd.records:check_line",
    "pytest_ldd.registry:MetricRegistry",
    "pytest_ldd.report:build_report",
    "pytest_ldd.report:write_html",
    "pytest_ldd.report:write_json",
    "pytest_ldd.sandbox:hidden_tests",
    "pytest_ldd.sandbox:run_hidden_tests",
    "pytest_ldd.statistics:CalibrationGate",
    "pytest_ldd.statistics:MetricState",
    "pytest_ldd.store:BACKENDS",
    "pytest_ldd.store:Store",
    "pytest_ldd.store:open_store",
    "pytest_ldd.store.files:TraceStore",
    "pytest_ldd.terminal:printable",
]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def package_modules() -> dict[str, Path]:
    """Every module of the package but the demo's example project (a user's code)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "demo/project" in path.as_posix():
            continue
        found[module_name(path)] = path
    return found


MODULES = package_modules()


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run (anywhere but under ``if TYPE_CHECKING``)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            yield from (n for child in node.orelse for n in _runtime_imports_of(child))
            continue
        yield from _runtime_imports_of(node)


def _runtime_imports_of(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
        return
    yield from _runtime_imports(node)


def imported_modules(name: str, path: Path) -> set[str]:
    """The package's modules that ``name`` imports at run time."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _runtime_imports(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        for target in targets:
            # `from pytest_ldd.x import y` names the module pytest_ldd.x.y when there is
            # one, else an attribute of pytest_ldd.x: the longest known module wins.
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


GRAPH = {name: imported_modules(name, path) for name, path in MODULES.items()}


def layer(name: str) -> int | None:
    best = None
    for prefix, level in LAYERS.items():
        if (name == prefix or name.startswith(prefix + ".")) and (
            best is None or len(prefix) > len(best[0])
        ):
            best = (prefix, level)
    return None if best is None else best[1]


def test_every_module_has_a_layer() -> None:
    loose = [
        name
        for name in MODULES
        if layer(name) is None and name not in SHIMS and name != "pytest_ldd"
    ]
    assert loose == [], "place these in LAYERS (and in docs/contributing.md)"


def test_a_module_imports_only_its_own_layer_or_below() -> None:
    upward = []
    for name, targets in GRAPH.items():
        if name in SHIMS or name == "pytest_ldd":
            continue
        own = layer(name)
        assert own is not None
        for target in sorted(targets):
            theirs = layer(target)
            if theirs is not None and theirs > own:
                upward.append(f"{name} (layer {own}) imports {target} (layer {theirs})")
    assert upward == []


def test_no_import_circles() -> None:
    """Tarjan's strongly connected components: any with two modules is a circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in GRAPH.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(GRAPH):
        if node not in index:
            visit(node)
    assert circles == []


def test_the_package_never_imports_an_old_path() -> None:
    users = [
        f"{name} imports {target}"
        for name, targets in GRAPH.items()
        for target in targets
        if target in SHIMS and name not in SHIMS
    ]
    assert users == []


@pytest.mark.parametrize("old", sorted(SHIMS))
def test_an_old_path_is_a_thin_re_export(old: str) -> None:
    new = SHIMS[old]
    tree = ast.parse(MODULES[old].read_text(encoding="utf-8"))
    body = [n for n in tree.body if not isinstance(n, ast.Expr)]  # the docstring
    assert all(isinstance(n, ast.ImportFrom) and n.module == new for n in body)
    shim, home = importlib.import_module(old), importlib.import_module(new)
    assert list(shim.__all__) == list(home.__all__)
    for name in home.__all__:
        assert getattr(shim, name) is getattr(home, name), name


@pytest.mark.parametrize("path", TAUGHT)
def test_a_path_the_docs_taught_still_imports(path: str) -> None:
    module, _, name = path.partition(":")
    loaded = importlib.import_module(module)
    if name:
        assert getattr(loaded, name) is not None


_FROM_IMPORT = re.compile(r"^\s*from (pytest_ldd(?:\.\w+)*) import ([\w, ]+)$", re.MULTILINE)
_DOTTED = re.compile(r"\bpytest_ldd(?:\.\w+)+")


def documented_paths() -> list[str]:
    """The import paths the documentation teaches now: imports and dotted names."""
    found: set[str] = set()
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for module, names in _FROM_IMPORT.findall(text):
            found.update(f"{module}:{n.strip()}" for n in names.split(",") if n.strip())
        found.update(_DOTTED.findall(text))
    return sorted(found)


@pytest.mark.parametrize("path", documented_paths())
def test_a_path_the_docs_teach_imports(path: str) -> None:
    if ":" in path:
        module, _, name = path.partition(":")
        assert getattr(importlib.import_module(module), name) is not None
        return
    # A dotted name: a module, or a module's attribute.
    module, name = path, ""
    while True:
        try:
            loaded = importlib.import_module(module)
            break
        except ModuleNotFoundError:
            module, _, last = module.rpartition(".")
            name = f"{last}.{name}" if name else last
            assert module, path
    value: object = loaded
    for part in filter(None, name.split(".")):
        value = getattr(value, part)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_imports_alone(module: str) -> None:
    """In a fresh interpreter: no module relies on another having been imported first."""
    result = subprocess.run(
        [sys.executable, "-c", f"import {module}"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_the_calibrator_uses_only_the_registry_s_public_api() -> None:
    tree = ast.parse(MODULES["pytest_ldd.calibration.calibrator"].read_text(encoding="utf-8"))
    private = sorted(
        {
            f"{ast.unparse(node.value)}.{node.attr}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and ast.unparse(node.value).endswith("registry")
        }
    )
    assert private == []
