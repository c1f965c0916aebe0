"""Hidden tests of the ``slugify`` task: the agent never sees these."""

from __future__ import annotations

import pytest
from slugify import slugify  # the agent's module


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        ("Hello World", "hello-world"),
        ("  Hello,   World!  ", "hello-world"),
        ("Crème brûlée", "creme-brulee"),
        ("already-a-slug", "already-a-slug"),
        ("Version 2.0 -- released", "version-2-0-released"),
    ],
)
def test_slugify(text: str, slug: str) -> None:
    assert slugify(text) == slug


def test_slugify_of_nothing_is_empty() -> None:
    assert slugify("!!!") == ""
