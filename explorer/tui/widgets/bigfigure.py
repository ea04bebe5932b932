"""Digits five rows tall, for the presenter headline on a large terminal.

Textual's `Digits` draws a 3×3 font: on a projector at 160x45 that is a tenth of the
screen's height and the rest of the headline's room stays empty. This is a 3×5 pixel font
drawn in full blocks, each pixel two cells wide so it looks square (a cell is about twice as
tall as wide): `2.19×` takes 5 rows and 34 columns. ASCII mode turns the blocks into `#`
(the app's line filter does that for every `█`).
"""

from __future__ import annotations

from itertools import groupby

from rich.text import Text

FONT_ROWS = 5
"""Rows the big figure takes."""

_FONT: dict[str, tuple[str, ...]] = {
    "0": (".#.", "#.#", "#.#", "#.#", ".#."),
    "1": (".#.", "##.", ".#.", ".#.", "###"),
    "2": ("###", "..#", "###", "#..", "###"),
    "3": ("###", "..#", "###", "..#", "###"),
    "4": ("#.#", "#.#", "###", "..#", "..#"),
    "5": ("###", "#..", "###", "..#", "###"),
    "6": ("###", "#..", "###", "#.#", "###"),
    "7": ("###", "..#", "..#", "..#", "..#"),
    "8": ("###", "#.#", "###", "#.#", "###"),
    "9": ("###", "#.#", "###", "..#", "###"),
    ".": (".", ".", ".", ".", "#"),
    "x": ("...", "#.#", ".#.", "#.#", "..."),
    "+": ("...", ".#.", "###", ".#.", "..."),
    "-": ("...", "...", "###", "...", "..."),
    " ": ("..", "..", "..", "..", ".."),
}
"""Each glyph as five rows of pixels (# on, . off). `x` is drawn as a multiplication sign."""

_ALIASES = {"×": "x", "−": "-", "–": "-"}


def big_figure(figure: str) -> Text:
    """`figure` ('2.19x', '+0.38') in the 3×5 font, one pixel blank between glyphs; a
    character the font lacks is left out."""
    glyphs = [_FONT[c] for c in (_ALIASES.get(ch, ch) for ch in figure) if c in _FONT]
    text = Text()
    for row in range(FONT_ROWS):
        if row:
            text.append("\n")
        pixels = ".".join(glyph[row] for glyph in glyphs)
        # Blank pixels are a span of their own (dim spaces): an SVG viewer drops a span's
        # leading spaces, which would shift a row's first block to the left in a screenshot.
        for lit, run in groupby(pixels, key=lambda p: p == "#"):
            cells = 2 * len(list(run))
            text.append("█" * cells if lit else " " * cells, style="" if lit else "dim")
    return text


def figure_width(figure: str) -> int:
    """Columns `big_figure(figure)` takes at most."""
    return max((len(line) for line in big_figure(figure).plain.split("\n")), default=0)
