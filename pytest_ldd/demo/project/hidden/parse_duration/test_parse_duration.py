"""Hidden tests of the ``parse_duration`` task: the agent never sees these."""

from __future__ import annotations

import pytest
from parse_duration import parse_duration  # the agent's module


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("45m", 2700),
        ("1h30m", 5400),
        ("2h 5m 10s", 7510),
        (" 1h ", 3600),
    ],
)
def test_parse_duration(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5", "h", "5x", "1h30"])
def test_malformed_is_rejected(text: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - any ValueError message will do
        parse_duration(text)
