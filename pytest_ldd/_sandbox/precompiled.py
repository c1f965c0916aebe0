"""The sandbox's own modules, copied into a run's folder with their code compiled.

A cold run copies the runner's modules (and, in process isolation, the judge's) into
its ``runner/`` folder, and its child compiled each of them from source: some 40 ms
for the runner's, about 100 ms for the judge's, on every verdict.  Each copy now has
beside it ``<name>.code``: a first line saying which interpreters may load it (the
bytecode tag and the optimization level it was compiled at), then the module compiled
under the copy's own path, as marshal data.  The child loads it where its interpreter
matches the first line, and compiles the source where it does not
(``runner.load_file``).  Each module is compiled once per process: a run only names
the code after its own copy.

The file is written by the sandbox beside the source it was compiled from, in the
folder the kernel confinement lets the child read and not write, and its bytes are in
the snapshot the run is checked against afterwards, as the source's are.
"""

from __future__ import annotations

import marshal
import threading
import types
from pathlib import Path

from pytest_ldd._sandbox.boot import bytecode_tag

__all__ = ["CODE_SUFFIX", "copy_module", "tag"]

CODE_SUFFIX = ".code"
# The level the code is compiled at: the child runs without -O.
_OPTIMIZE = 0
_COMPILED: dict[tuple[str, bytes], types.CodeType] = {}
_LOCK = threading.Lock()  # grade_many lays runs out on threads


def tag() -> str:
    """What an interpreter must say of itself to load code compiled here: the subject's
    bytecode tag (:func:`boot.bytecode_tag`) and the optimization level.

    ``runner.py`` computes the same string from its own interpreter.
    """
    return f"{bytecode_tag()}:{_OPTIMIZE}"


def copy_module(source: Path, destination: Path) -> None:
    """Copy a module of the sandbox to ``destination``, its code beside it."""
    data = source.read_bytes()
    destination.write_bytes(data)
    if destination.suffix != ".py":
        return
    key = (source.name, data)
    with _LOCK:
        code = _COMPILED.get(key)
        if code is None:
            code = _COMPILED[key] = compile(
                data, f"<ldd-{source.name}>", "exec", dont_inherit=True, optimize=_OPTIMIZE
            )
    named = _named(code, str(destination))
    blob = tag().encode("ascii") + b"\n" + marshal.dumps(named)
    destination.with_suffix(CODE_SUFFIX).write_bytes(blob)


def _named(code: types.CodeType, filename: str) -> types.CodeType:
    """``code`` and every code object in it, as if compiled from ``filename``.

    Tracebacks, and the runner's test of whether a frame is its own, read it.
    """
    consts = tuple(
        _named(const, filename) if isinstance(const, types.CodeType) else const
        for const in code.co_consts
    )
    return code.replace(co_filename=filename, co_consts=consts)
