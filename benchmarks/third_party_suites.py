"""Third-party test suites with and without pytest-ldd: outcomes must be identical.

``python benchmarks/third_party_suites.py [--suite pluggy --suite attrs] [--workdir DIR]``

Not run in CI (it downloads sdists). For each suite it

1. downloads the project's sdist with ``pip download --no-deps --no-binary :all:``
   (the version pinned below) and unpacks it;
2. runs the sdist's own test suite twice with this interpreter, its source folder
   first on ``sys.path``: once with ``-p no:ldd`` and once with pytest-ldd loaded and
   recording (``--ldd --ldd-dir=<a temporary folder>``), each writing JUnit XML;
3. compares the outcome of every test id (passed, failed, error, skipped) between
   the two runs, and the exit codes.

It exits 0 when every suite has identical outcomes, 1 otherwise, and prints one
line per suite (and each differing test id).  The suites need their own test
dependencies installed in this interpreter (pluggy: none beyond pytest; attrs:
hypothesis).  Tests that fail in both runs (a newer pytest than the sdist knows,
a missing optional dependency) are not differences.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Final

#: name -> (pip requirement, source folder inside the sdist, test folder)
SUITES: Final = {
    "pluggy": ("pluggy==1.5.0", "src", "testing"),
    "attrs": ("attrs==24.2.0", "src", "tests"),
}


@dataclass(frozen=True, slots=True)
class SuiteRun:
    """One run of a suite: its exit code and the outcome of each test id."""

    returncode: int
    outcomes: dict[str, str]


def download(requirement: str, into: Path) -> Path:
    """The unpacked sdist folder of ``requirement``."""
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            "--quiet",
            "-d",
            str(into),
            requirement,
        ],
        check=True,
    )
    (archive,) = sorted(into.glob("*.tar.gz"))
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / archive.name.removesuffix(".tar.gz")


def outcomes(junit: Path) -> dict[str, str]:
    """Test id -> outcome, from a JUnit XML file."""
    found: dict[str, str] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        test_id = f"{case.get('classname')}::{case.get('name')}"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = child.tag
        found[test_id] = outcome
    return found


def run_suite(root: Path, source: str, tests: str, *plugin_args: str, junit: Path) -> SuiteRun:
    """Run the sdist's tests with this interpreter, its source first on the path."""
    env = {
        **{k: v for k, v in __import__("os").environ.items() if not k.startswith("PYTEST_")},
        "PYTHONPATH": str(root / source),
    }
    command = [
        sys.executable,
        "-m",
        "pytest",
        tests,
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        # pytest-harvest (a benchmark baseline) warns at load, an error under the
        # suites' own filterwarnings.
        "-p",
        "no:harvest",
        f"--junitxml={junit}",
        *plugin_args,
    ]
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, check=False)
    return SuiteRun(done.returncode, outcomes(junit) if junit.exists() else {})


def compare(name: str, workdir: Path) -> bool:
    """Run one suite both ways; print the verdict; whether the outcomes are identical."""
    requirement, source, tests = SUITES[name]
    root = download(requirement, workdir / name)
    without = run_suite(root, source, tests, "-p", "no:ldd", junit=workdir / f"{name}-without.xml")
    store = Path(tempfile.mkdtemp(prefix="ldd-store-", dir=workdir))
    with_ldd = run_suite(
        root, source, tests, "--ldd", f"--ldd-dir={store}", junit=workdir / f"{name}-with.xml"
    )
    differing = sorted(
        test_id
        for test_id in without.outcomes.keys() | with_ldd.outcomes.keys()
        if without.outcomes.get(test_id) != with_ldd.outcomes.get(test_id)
    )
    same = not differing and without.returncode == with_ldd.returncode
    counts = {
        o: list(without.outcomes.values()).count(o) for o in sorted(set(without.outcomes.values()))
    }
    print(
        f"{name} ({requirement}): {len(without.outcomes)} tests {counts}, exit "
        f"{without.returncode} / {with_ldd.returncode}: "
        + ("identical" if same else f"{len(differing)} DIFFERENT")
    )
    for test_id in differing:
        print(f"  {test_id}: {without.outcomes.get(test_id)} -> {with_ldd.outcomes.get(test_id)}")
    return same


def main(argv: list[str] | None = None) -> int:
    """Compare the named suites (all by default)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", action="append", choices=sorted(SUITES), default=None)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="ldd-suites-"))
    results = [compare(name, workdir) for name in args.suite or sorted(SUITES)]
    return 0 if all(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
