"""Text from outside is shown as text: the one place control characters are made visible.

A variant name, a note, a run id or a server's message comes from a profile, a recording, the
store or a server; written raw, an ESC sequence in it could set the terminal's title, clear
the screen or hide what follows. `printable` spells every such character as a visible escape
(ESC becomes the four characters `\\x1b`), so the name reads as what it is and changes
nothing. Newline, CR LF and tab stay (notes and reasons may span lines; each output decides how to
lay them out). Every front end and export goes through this module: the models apply it to
the names and messages they hold, the command line to everything it prints, the exports to
every cell.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator

CONTROL = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]|\r(?!\n)"
)
"""C0 controls but newline and tab, DEL, C1 controls (CSI, OSC… in their 8-bit form), and the
line separators and bidirectional overrides that reorder or break what a reader sees. A CR
is one only when alone: CR LF ends a line (a CSV's rows) and overwrites nothing."""


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every control character written as a visible escape (idempotent).

    >>> printable("\\x1b]0;PWNED\\x07x")
    '\\\\x1b]0;PWNED\\\\x07x'
    """
    return CONTROL.sub(_escape, text)


def printable_data(value: Any) -> Any:
    """`printable` applied to every string (keys too) in nested dicts and lists."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable_data(k): printable_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [printable_data(v) for v in value]
    return value


def _printable_field(value: Any) -> Any:
    return printable(value) if isinstance(value, str) else value


Text = Annotated[str, BeforeValidator(_printable_field)]
"""A string field that came from outside (a profile, a recording, a server): kept printable.
Escaped before the field's own limits are checked, so what is stored is what was checked
(a name of 40 ESCs is too long, not 160 characters in the store that no longer load)."""


class TextOnly:
    """A text stream that writes everything through `printable` (the command line's output).

    `unfiltered` is the stream underneath, for the one thing pgwx itself writes that is not
    text: clearing its own live progress line.
    """

    def __init__(self, stream: Any) -> None:
        self.unfiltered = stream

    def write(self, text: str) -> int:
        self.unfiltered.write(printable(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        # flush, fileno, isatty, encoding…: the stream's own
        return getattr(self.unfiltered, name)
