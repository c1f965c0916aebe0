"""The registry document as every backend stores it: its shape, its text, its parsing.

The document is ``metrics.json`` in the file store and one row per project in a
database; both hold the same bytes, so ``ldd store export`` writes a database's
document as the file it would have been.  What a stored document must look like
(:func:`check_document`), how it is written (:func:`document_text`: one spec or
state per line) and how its bytes are read back (:func:`parse_document`: strict JSON,
no constant such as ``NaN``, no key twice) are decided here, once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from pytest_ldd.errors import StoreCorruptError

__all__ = [
    "SCHEMA_VERSION",
    "check_document",
    "document_text",
    "parse_document",
    "reject_constant",
]

#: The ``schema_version`` of the registry document this code reads and writes.
SCHEMA_VERSION: Final = 1

_ENCODE = json.JSONEncoder(allow_nan=False, ensure_ascii=False).encode


def document_text(doc: Mapping[str, Any]) -> str:
    """The document as text: one spec or state object per line.

    A diff of the committed file shows which metric changed, line by line, and each
    line is encoded by the C JSON encoder (``indent=`` would force the pure-Python
    one, which makes every update several times slower).  Raises ``TypeError`` or
    ``ValueError`` for a document JSON cannot hold.
    """
    parts = []
    for key, value in doc.items():
        if isinstance(value, list) and value:
            items = ",\n".join(f"    {_ENCODE(item)}" for item in value)
            parts.append(f"  {_ENCODE(key)}: [\n{items}\n  ]")
        else:
            parts.append(f"  {_ENCODE(key)}: {_ENCODE(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def reject_constant(name: str) -> Any:
    """A ``parse_constant`` for :func:`json.loads`: a store never holds NaN or infinity."""
    msg = f"non-finite number {name} is not allowed"
    raise ValueError(msg)


class _DuplicateKeyError(ValueError):
    """A JSON object of the document names one key twice."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json.loads keeps the last of duplicate keys silently; a store never guesses.
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        msg = f"an object holds the key {twice!r} twice"
        raise _DuplicateKeyError(msg)
    return result


def parse_document(data: bytes, where: str, *, path: str | None = None) -> dict[str, Any]:
    """Parse and check a stored document's bytes (see :func:`check_document`).

    ``where`` names the document in messages (a file, a masked URL);
    ``path`` goes into the :class:`StoreCorruptError` (default: ``where``).
    """
    failed = where if path is None else path
    try:
        doc = json.loads(
            data.decode("utf-8"), parse_constant=reject_constant, object_pairs_hook=_unique_keys
        )
    except _DuplicateKeyError as err:
        msg = f"{where}: {err}; the file was left untouched"
        raise StoreCorruptError(msg, path=failed) from err
    except (UnicodeDecodeError, ValueError) as err:
        msg = f"{where} is not valid JSON ({err}); it was left untouched"
        raise StoreCorruptError(msg, path=failed) from err
    check_document(doc, where, path=failed)
    return doc  # type: ignore[no-any-return]


def check_document(doc: object, where: str, *, path: str | None = None) -> None:
    """Refuse a document that is not an object with ``schema_version`` 1 and the
    ``specs`` and ``promotions`` lists of objects (``generated_at`` a string if set).

    Checked on every read and before every write; ``where`` and ``path`` as in
    :func:`parse_document`.
    """

    def bad(what: str, got: object) -> StoreCorruptError:
        msg = f"{where}: {what} (got {got!r}); the file was left untouched"
        return StoreCorruptError(msg, path=where if path is None else path)

    if not isinstance(doc, Mapping):
        raise bad("expected a JSON object with 'schema_version', 'specs', 'promotions'", doc)
    version = doc.get("schema_version")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise bad(f"'schema_version' must be {SCHEMA_VERSION}", version)
    for key in ("specs", "promotions"):
        value = doc.get(key)
        if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
            raise bad(f"{key!r} must be a list of objects", value)
    generated = doc.get("generated_at")
    if generated is not None and not isinstance(generated, str):
        raise bad("'generated_at' must be an ISO timestamp string", generated)
