"""``metrics.json``: the file store's registry document, read as bytes, replaced whole.

Reads never lock and never create anything; a file that cannot be read or parsed is
a :class:`StoreCorruptError` naming it, and the file is never touched.  A write
replaces the file atomically (temp file, fsync, ``os.replace``, the folder fsync-ed)
under the store's lock.  The document's shape and text are every backend's
(:mod:`pytest_ldd.store.document`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_ldd.errors import StoreCorruptError
from pytest_ldd.store.document import check_document, document_text, parse_document
from pytest_ldd.store.files.disk import os_errors, regular, replace_file

if TYPE_CHECKING:
    from pytest_ldd.store.files.lock import FolderLock

__all__ = ["MetricsFile"]


class MetricsFile:
    """The ``metrics.json`` at ``path``; ``lock`` is the store's, held for a write."""

    __slots__ = ("lock", "path")

    def __init__(self, path: Path, lock: FolderLock) -> None:
        self.path = path
        self.lock = lock

    def read_bytes(self) -> bytes | None:
        """The bytes of the file, or ``None`` when it does not exist."""
        path = self.path
        try:
            if regular(path) is None:
                return None
            return path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as err:
            msg = f"cannot read {path}: {err.strerror or err}"
            raise StoreCorruptError(msg, path=str(path)) from err

    def parse(self, data: bytes) -> dict[str, Any]:
        """Parse and check the file's bytes."""
        return parse_document(data, str(self.path))

    def write(self, doc: Mapping[str, Any]) -> bytes:
        """Replace the file atomically under the store's lock; return the bytes written."""
        check_document(doc, str(self.path))
        try:
            text = document_text(doc)
        except (TypeError, ValueError) as err:
            msg = f"metrics document for {self.path} is not valid JSON: {err}"
            raise StoreCorruptError(msg, path=str(self.path)) from err
        payload = text.encode("utf-8")
        with self.lock.held(), os_errors(self.path, "write"):
            replace_file(self.path, payload, durable=True)
        return payload
