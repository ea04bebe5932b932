"""The presenter layout's headline: a finished matrix's biggest verdict, in large digits.

Textual has no font sizes. On a projector the end card's lines are read from the back of a
room only if the one number that matters is drawn big: `Digits` (a 3×3 block font) draws the
ratio, `2.06×`, and beside it, in bold, what it means — `deferred slower than none` — with
the phase that moved most and the mechanism the card gives for it. The numbers are the
card's (`analysis.card`), which are the table's: this widget only picks which line to blow
up and draws it.
"""

from __future__ import annotations

import math

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Digits, Static

from explorer.analysis.card import ARROW, CardLine, card_lines
from explorer.models import RunRecord
from explorer.tui.glyphs import glyph


def headline_line(lines: list[CardLine]) -> CardLine | None:
    """The line the headline tells: a decided verdict before an undecided one, then the
    biggest change (ratio furthest from 1, or the largest shift in seconds); None when no
    candidate has a verdict with a number."""

    def size(line: CardLine) -> float:
        verdict = line.verdict
        assert verdict is not None
        if verdict.ratio is not None and verdict.ratio > 0:
            return abs(math.log(verdict.ratio))
        base = verdict.median_baseline or 1.0
        return abs(verdict.difference_seconds or 0.0) / base

    numbered = [
        line
        for line in lines
        if not line.baseline
        and line.verdict is not None
        and not line.verdict.too_few
        and (line.verdict.ratio is not None or line.verdict.difference_seconds is not None)
    ]
    if not numbered:
        return None
    return max(numbered, key=lambda line: (bool(line.verdict and line.verdict.decided), size(line)))


def headline_figure(line: CardLine) -> str:
    """What the big digits say: '2.06x' (Digits draws x as ×) or '+0.38' (seconds)."""
    verdict = line.verdict
    assert verdict is not None
    if verdict.ratio is not None:
        return f"{verdict.ratio:.2f}x"
    return f"{verdict.difference_seconds or 0.0:+.2f}"


def headline_words(line: CardLine, baseline: str | None, profile: str) -> Text:
    """Three lines beside the digits: who and the verdict's word; the phase that moved most
    and the mechanism; the run."""
    verdict = line.verdict
    assert verdict is not None
    text = Text()
    # Spaces end a span rather than start the next: SVG viewers drop a span's leading ones.
    text.append(f"{line.variant} ", style="bold")
    if verdict.ratio is None:
        text.append("s ", style="bold")  # the digits are a shift in seconds: +0.38 s
    text.append(f"{verdict.word} ", style="bold reverse" if verdict.decided else "bold")
    if baseline:
        link = {"faster": "than", "slower": "than", "same": "as"}.get(verdict.word, "vs")
        text.append(f"{link} {baseline}")
    text.append("\n")
    # The story first (the phase that moved most, in the table's medians), then why.
    story = f" {glyph('·')} ".join(part for part in (line.moved, line.mechanism) if part)
    if story:
        text.append(story.replace(ARROW, glyph(ARROW)), style="bold")
    text.append("\n")
    text.append(f"{profile} {glyph('·')} total per trial, median", style="dim")
    return text


class Headline(Horizontal):
    """The big ratio and its words, shown above the panes in the presenter layout when a
    matrix's end card is up (the screen's CSS decides when it shows).

    Args:
        id: Widget id.
    """

    DEFAULT_CSS = """
    Headline {
        display: none;
        height: auto;
        border: heavy $accent;
        padding: 0 1;
    }
    Headline Digits {
        width: auto;
        margin-right: 2;
        text-style: bold;
    }
    Headline #headline-words {
        width: 1fr;
        height: 3;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.record: RunRecord | None = None
        """The finished run it tells (None: nothing to tell)."""
        self.line: CardLine | None = None
        """The card line it blows up."""

    def compose(self) -> ComposeResult:
        """The digits and the words."""
        yield Digits("", id="headline-figure")
        yield Static(id="headline-words")

    def show_record(self, record: RunRecord | None) -> bool:
        """Tell this run's biggest verdict; returns whether there is one to tell."""
        self.record = record
        lines = card_lines(record) if record is not None else []
        self.line = headline_line(lines)
        if self.line is None or record is None:
            self.query_one(Digits).update("")
            self.query_one("#headline-words", Static).update("")
            return False
        baseline = next((line.variant for line in lines if line.baseline), None)
        self.query_one(Digits).update(headline_figure(self.line))
        words = headline_words(self.line, baseline, record.profile.name)
        self.query_one("#headline-words", Static).update(words)
        return True
