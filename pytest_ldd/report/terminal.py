"""Text from the store or the configuration, made safe to write to a terminal.

A metric's unit or description is written by hand (or by another tool) and read
back from ``metrics.json``: an ANSI or OSC escape sequence in it would be run by the
terminal (recolour, retitle, hide the text that follows), a newline would forge a
line of output.  :func:`printable` shows such characters as Python escapes instead.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["printable"]

# C0 controls but tab, DEL, C1 controls, and the bidirectional overrides and
# isolates that reorder what a terminal shows ("Trojan Source").
_UNSAFE: Final = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_KEEP_NEWLINES: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\n":
        return "\\n"
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, newlines: bool = False) -> str:
    """``text`` with every control character shown as an escape (``\\x1b``, ``\\n``).

    With ``newlines=True`` line breaks are kept (text of several lines this program
    wrote itself); the other control characters are still escaped.
    """
    pattern = _UNSAFE_KEEP_NEWLINES if newlines else _UNSAFE
    return pattern.sub(_escape, text)
