"""The registry document every backend stores: one shape check, one text, one parser."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from backends import Backend

from pytest_ldd.errors import StoreCorruptError
from pytest_ldd.store.document import (
    SCHEMA_VERSION,
    check_document,
    document_text,
    parse_document,
)

DOC = {
    "schema_version": SCHEMA_VERSION,
    "generated_at": "2026-12-01T08:00:00Z",
    "specs": [{"name": "a"}, {"name": "b"}],
    "promotions": [],
}


def test_the_text_holds_one_spec_or_state_per_line() -> None:
    text = document_text(DOC)
    assert json.loads(text) == DOC
    lines = text.splitlines()
    assert '    {"name": "a"},' in lines
    assert '    {"name": "b"}' in lines
    assert '  "promotions": []' in lines


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"{", "is not valid JSON"),
        (b'{"schema_version": NaN}', "is not valid JSON"),
        (b"\xff", "is not valid JSON"),
        (b'{"schema_version": 1, "specs": [], "specs": [], "promotions": []}', "'specs' twice"),
        (b"[]", "expected a JSON object"),
        (b'{"schema_version": 2, "specs": [], "promotions": []}', "'schema_version' must be 1"),
        (b'{"schema_version": true, "specs": [], "promotions": []}', "'schema_version' must be 1"),
        (b'{"schema_version": 1, "specs": [1], "promotions": []}', "'specs' must be a list"),
        (b'{"schema_version": 1, "specs": []}', "'promotions' must be a list of objects"),
        (
            b'{"schema_version": 1, "specs": [], "promotions": [], "generated_at": 5}',
            "'generated_at' must be an ISO timestamp string",
        ),
    ],
)
def test_a_malformed_document_is_refused_naming_where(data: bytes, problem: str) -> None:
    with pytest.raises(StoreCorruptError, match=r"^where: |^where is not valid") as info:
        parse_document(data, "where", path="the path")
    assert problem in str(info.value)
    assert "left untouched" in str(info.value)
    assert info.value.path == "the path"


def test_a_document_is_checked_before_it_is_written() -> None:
    check_document(DOC, "where")
    with pytest.raises(StoreCorruptError, match="'specs' must be a list of objects"):
        check_document({**DOC, "specs": None}, "where")


def test_every_backend_parses_its_document_the_same_way(
    backend: Backend, tmp_path: Path
) -> None:
    store = backend.open(tmp_path)
    try:
        assert store.parse_registry(document_text(DOC).encode()) == DOC
        twice = b'{"schema_version": 1, "specs": [], "specs": [], "promotions": []}'
        with pytest.raises(StoreCorruptError, match="'specs' twice"):
            store.parse_registry(twice)
    finally:
        store.close()
