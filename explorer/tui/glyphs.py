"""One glyph table: what the app draws instead of non-ASCII characters on a non-UTF-8 terminal.

Under `LANG=C`, a Latin-1 PuTTY or a Linux console, braille, box lines and marks such as
✓ ✗ ⟳ ▸ ≈ × arrive as mojibake. In ASCII mode (`--ascii`, or a locale that is not UTF-8)
the app's own text asks `glyph()` for each mark, and `AsciiFilter`, a Textual line filter
installed by the app, turns whatever else would reach the screen (Textual's borders,
scrollbars, tabs, plotext's blocks) into ASCII of the same width, so layouts do not move.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from rich.cells import cell_len
from rich.segment import Segment
from textual.color import Color
from textual.filter import LineFilter

WORDS = {
    "→": "->",
    "←": "<-",
    "…": "...",
    "—": "--",
    "⟳": "(r)",
}
"""Marks that read better as several ASCII characters (used by `glyph`, where width may
change)."""

CELLS = {
    "✓": "+",
    "✗": "x",
    "⟳": "~",
    "▸": ">",
    "▼": "v",
    "▲": "^",
    "▶": ">",
    "◀": "<",
    "≈": "~",
    "×": "x",
    "·": "-",
    "•": "*",
    "–": "-",
    "—": "-",
    "…": ".",
    "→": ">",
    "←": "<",
    "↑": "^",
    "↓": "v",
    "█": "#",
    "■": "#",
    "▓": "#",
    "▒": ":",
    "░": ".",
    "╌": "-",
    "╍": "-",
    "━": "-",
    "─": "-",
    "┄": "-",
    "═": "=",
    "│": "|",
    "┃": "|",
    "║": "|",
    "┆": "|",
    "▕": "|",
    "▏": "|",
    "°": "o",
    "µ": "u",
    "Δ": "d",
    "⏎": "<",
    "›": ">",
    "‹": "<",
    "−": "-",
    "±": "~",
    "≤": "<",
    "≥": ">",
    "⚠": "!",
    "⚑": "!",
    "α": "a",
}
"""One character for one: what the line filter (and `glyph`) draws instead."""

_CORNERS = "╭╮╰╯┌┐└┘┏┓┗┛╔╗╚╝├┤┬┴┼┣┫┳┻╋╠╣╦╩╬"
_BLOCKS = "▁▂▃▄▅▆▇▔▀▐▌▍▎▊▋▉▖▗▘▙▚▛▜▝▞▟"


def _table() -> dict[int, str]:
    # Any box-drawing character not named below is a corner or a crossing.
    table = {cp: "+" for cp in range(0x2500, 0x2580)}
    table.update({ord(c): "-" for c in "╴╶╸╺╼╾"})
    table.update({ord(c): "|" for c in "╵╷╹╻╽╿"})
    table.update({ord(k): v for k, v in CELLS.items()})
    table.update({ord(c): "+" for c in _CORNERS})
    table.update({ord(c): " " for c in _BLOCKS})
    # Braille (plotext's high-resolution dots): a dot where any is set.
    table.update({cp: "." for cp in range(0x2801, 0x2900)})
    table[0x2800] = " "
    return table


TRANSLATE = _table()

_state = {"ascii": False}


def locale_wants_ascii(env: Mapping[str, str] | None = None) -> bool:
    """True when the terminal's locale is not UTF-8 (`pgwx --ascii` is passed to the app).

    Python itself may have switched to UTF-8 (PEP 538/540); what matters is what the
    terminal can show, which the first of LC_ALL, LC_CTYPE, LANG says.
    """
    env = os.environ if env is None else env
    for name in ("LC_ALL", "LC_CTYPE", "LANG"):
        value = env.get(name)
        if value:
            return "utf-8" not in value.lower() and "utf8" not in value.lower()
    return False


def set_ascii(on: bool) -> None:
    """Switch ASCII mode on or off (the app does, once, at start)."""
    _state["ascii"] = on


def ascii_mode() -> bool:
    """Whether the app draws ASCII only."""
    return _state["ascii"]


def glyph(mark: str) -> str:
    """`mark`, or its ASCII stand-in in ASCII mode."""
    if not _state["ascii"]:
        return mark
    return WORDS.get(mark) or asciify(mark)


def asciify(text: str) -> str:
    """Text with every non-ASCII character replaced by ASCII of the same width."""
    if text.isascii():
        return text
    out = text.translate(TRANSLATE)
    if out.isascii():
        return out
    return "".join(c if c.isascii() else "?" * max(cell_len(c), 1) for c in out)


class AsciiFilter(LineFilter):
    """A Textual line filter that leaves only ASCII on screen, cell for cell."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        """Translate each segment's text (styles and control codes are kept)."""
        return [
            seg if seg.control or seg.text.isascii() else Segment(asciify(seg.text), seg.style)
            for seg in segments
        ]
