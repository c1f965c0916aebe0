"""Write the bytecode of a correct calc where Python looks for calc's cache."""

import os
import py_compile
import sys
import tempfile
from pathlib import Path

workspace = Path(sys.argv[1])
right = (workspace / "calc" / "__init__.py").read_text().replace(
    "def mul(a, b):\n    return a + b", "def mul(a, b):\n    return a * b"
)
with tempfile.TemporaryDirectory() as tmp:
    source = Path(tmp) / "__init__.py"
    source.write_text(right)
    store = workspace / "store"
    store.mkdir()
    py_compile.compile(
        str(source),
        cfile=str(store / "blob.bin"),
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
os.symlink("blob.bin", store / f"__init__.{sys.implementation.cache_tag}.pyc")
os.symlink("../store", workspace / "calc" / "__pycache__")
# The same bytecode reached by a link inside a real folder, and as a sourceless module.
(workspace / "other").mkdir()
os.symlink("../store/blob.bin", workspace / "other" / "calc_fast.pyc")
