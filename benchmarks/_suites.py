"""Generated test suites: the same tests, recording through different tools.

Every suite is a folder with a ``pyproject.toml`` (its own rootdir) and test
modules of plain test functions.  Test ``j`` records ``observations`` values;
value ``i`` of test ``j`` carries a prediction iff ``(i + j)`` is even, so half
of all values have one.  The values are the same whatever the flavour:

- ``ldd``: ``ldd.observe("m<i>", observed, predicted=...)`` through the fixture,
  metrics declared in ``[tool.ldd.metrics.*]``;
- ``record_property``: pytest's own ``record_property("m<i>", observed)`` (and
  ``"m<i>_predicted"``);
- ``harvest``: pytest-harvest's ``results_bag.m<i> = observed`` (and
  ``m<i>_predicted``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final, Literal

__all__ = [
    "FLAVOURS",
    "METRICS",
    "Flavour",
    "expected_value",
    "metric_tables",
    "write_suite",
]

Flavour = Literal["ldd", "record_property", "harvest"]
FLAVOURS: Final[tuple[Flavour, ...]] = ("ldd", "record_property", "harvest")

#: The metric names a suite records into (value ``i`` goes to ``METRICS[i % 5]``).
METRICS: Final[tuple[str, ...]] = ("m0", "m1", "m2", "m3", "m4")

_FIXTURE: Final[dict[Flavour, str]] = {
    "ldd": "ldd",
    "record_property": "record_property",
    "harvest": "results_bag",
}


def expected_value(test: int, index: int) -> tuple[float, float | None]:
    """The (observed, predicted) values of value ``index`` of test ``test``.

    Observed values lie in [0.01, 0.97]; predictions differ from them by at most
    0.03, so every metric calibrates (MAE about 0.015).
    """
    observed = ((test * 37 + index * 11) % 97 + 1) / 100
    if (test + index) % 2:
        return observed, None
    predicted = min(1.0, max(0.0, observed + ((test + index) % 7 - 3) / 100))
    return observed, round(predicted, 2)


def metric_tables(description: str = "share of the generated benchmark values") -> str:
    """The ``[tool.ldd.metrics.*]`` tables declaring :data:`METRICS`."""
    return "".join(
        f'[tool.ldd.metrics.{name}]\nkind = "bounded"\ndescription = "{description} ({name})"\n\n'
        for name in METRICS
    )


def _record_lines(flavour: Flavour, metric: str, observed: float, predicted: float | None) -> str:
    if flavour == "ldd":
        if predicted is None:
            return f"    ldd.observe({metric!r}, {observed!r})\n"
        return f"    ldd.observe({metric!r}, {observed!r}, predicted={predicted!r})\n"
    if flavour == "record_property":
        text = f"    record_property({metric!r}, {observed!r})\n"
        if predicted is not None:
            text += f"    record_property({metric + '_predicted'!r}, {predicted!r})\n"
        return text
    text = f"    results_bag.{metric} = {observed!r}\n"
    if predicted is not None:
        text += f"    results_bag.{metric}_predicted = {predicted!r}\n"
    return text


def write_suite(
    root: Path,
    flavour: Flavour,
    *,
    tests: int = 2000,
    observations: int = 5,
    modules: int = 20,
    loop: bool = False,
) -> Path:
    """Write the suite into ``root`` (created); return ``root``.

    With ``loop=True`` each test records its values in a loop over a computed
    range instead of one written-out line per value (for suites of very many
    values per test, e.g. the memory benchmark).
    """
    if tests < 1 or observations < 1 or modules < 1:
        got = f"{tests}, {observations}, {modules}"
        msg = f"'tests', 'observations' and 'modules' must be >= 1 (got {got})"
        raise ValueError(msg)
    root.mkdir(parents=True, exist_ok=True)
    pyproject = "[tool.pytest.ini_options]\n# generated benchmark suite\n\n"
    if flavour == "ldd":
        pyproject += metric_tables()
    (root / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    modules = min(modules, tests)
    per_module = -(-tests // modules)
    fixture = _FIXTURE[flavour]
    test = 0
    for module in range(modules):
        lines = [f'"""Generated benchmark module {module} ({flavour})."""\n\n']
        if loop:
            lines.append(_loop_helper(flavour, observations))
        for _ in range(per_module):
            if test >= tests:
                break
            lines.append(f"\ndef test_{test:05d}({fixture}):\n")
            if loop:
                lines.append(f"    _record({fixture}, {test})\n")
            else:
                for index in range(observations):
                    observed, predicted = expected_value(test, index)
                    metric = METRICS[index % len(METRICS)]
                    lines.append(_record_lines(flavour, metric, observed, predicted))
            test += 1
        (root / f"test_gen_{module:03d}.py").write_text("".join(lines), encoding="utf-8")
    return root


def _loop_helper(flavour: Flavour, observations: int) -> str:
    """A module-level ``_record(target, test)`` computing :func:`expected_value` inline."""
    if flavour == "ldd":
        record = (
            "        if predicted is None:\n"
            "            target.observe(name, observed)\n"
            "        else:\n"
            "            target.observe(name, observed, predicted=predicted)\n"
        )
    elif flavour == "record_property":
        record = (
            "        target(name, observed)\n"
            "        if predicted is not None:\n"
            "            target(name + '_predicted', predicted)\n"
        )
    else:
        record = (
            "        setattr(target, name, observed)\n"
            "        if predicted is not None:\n"
            "            setattr(target, name + '_predicted', predicted)\n"
        )
    return (
        "def _record(target, test):\n"
        f"    for index in range({observations}):\n"
        "        observed = ((test * 37 + index * 11) % 97 + 1) / 100\n"
        "        predicted = None\n"
        "        if (test + index) % 2 == 0:\n"
        "            shift = ((test + index) % 7 - 3) / 100\n"
        "            predicted = round(min(1.0, max(0.0, observed + shift)), 2)\n"
        f"        name = {METRICS!r}[index % {len(METRICS)}]\n" + record
    )
