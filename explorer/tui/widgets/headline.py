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
from explorer.analysis.server_card import ServerCard
from explorer.analysis.servers import ServerRow
from explorer.models import RunRecord
from explorer.tui.glyphs import glyph
from explorer.tui.widgets.bigfigure import big_figure

BIG_MIN_HEIGHT = 40
"""Rows from which the headline's digits are five rows tall (below: Textual's 3-row font):
at 160x45 the 3-row digits were a fifteenth of the screen, at a projector's 100x30 the
panes need every row."""
BIG_MIN_WIDTH = 130
"""Columns from which the digits are five rows tall: `2.19×` takes 34, the words beside it
need the rest."""


def big_digits(width: int, height: int) -> bool:
    """Whether a terminal this size gets the 5-row digits."""
    return width >= BIG_MIN_WIDTH and height >= BIG_MIN_HEIGHT


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


def headline_words(
    line: CardLine, baseline: str | None, profile: str, *, spaced: bool = False
) -> Text:
    """Three lines beside the digits: who and the verdict's word; the phase that moved most
    and the mechanism; the run. `spaced`: a blank line between them, five rows beside the
    5-row digits."""
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
    gap = "\n\n" if spaced else "\n"
    text.append(gap)
    # The story first (the phase that moved most, in the table's medians), then why.
    story = f" {glyph('·')} ".join(part for part in (line.moved, line.mechanism) if part)
    if story:
        text.append(story.replace(ARROW, glyph(ARROW)), style="bold")
    text.append(gap)
    text.append(f"{profile} {glyph('·')} total per trial, median", style="dim")
    return text


def server_words(row: ServerRow, profile: str, *, spaced: bool = False) -> Text:
    """Beside the digits of a run on several servers: the variant and phase, on which server
    against which, the word; the run."""
    text = Text()
    text.append(f"{row.variant} {row.phase} on {row.server} ", style="bold")
    verdict = row.verdict
    link = {"faster": "than", "slower": "than", "same": "as"}.get(verdict.word)
    if link is None:
        # No difference to tell ('undecided'): 'on 18 vs 15: undecided', not 'on 18
        # undecided vs on 15'.
        text.append(f"vs {row.reference}: ")
        text.append(verdict.word, style="bold")
    else:
        text.append(f"{verdict.word} ", style="bold reverse" if verdict.decided else "bold")
        text.append(f"{link} on {row.reference}")
    gap = "\n\n" if spaced else "\n"
    text.append(gap)
    text.append(f"between the servers {glyph('·')} the biggest change", style="bold")
    text.append(gap)
    text.append(f"{profile} {glyph('·')} median ratio, {row.server} / {row.reference}", style="dim")
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
    Headline #headline-big {
        display: none;
        width: auto;
        height: 5;
        margin-right: 3;
        color: $accent;
        text-style: bold;
    }
    Headline.-big #headline-figure {
        display: none;
    }
    Headline.-big #headline-big {
        display: block;
    }
    Headline.-big #headline-words {
        height: 5;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.record: RunRecord | None = None
        """The finished run it tells (None: nothing to tell)."""
        self.line: CardLine | None = None
        """The card line it blows up."""
        self.servers: ServerCard | None = None
        """On several servers: the card whose biggest verdict between servers it tells."""
        self._baseline: str | None = None
        """The run's baseline variant (the words compare against it)."""

    def compose(self) -> ComposeResult:
        """The digits and the words."""
        yield Digits("", id="headline-figure")
        yield Static(id="headline-big")
        yield Static(id="headline-words")

    def fit(self, width: int, height: int) -> None:
        """The digits for a terminal this size: five rows on a large one, else three."""
        big = big_digits(width, height)
        if big != self.has_class("-big"):
            self.set_class(big, "-big")
            self._draw()

    def show_record(self, record: RunRecord | None, lines: list[CardLine] | None = None) -> bool:
        """Tell this run's biggest verdict; returns whether there is one to tell (`lines`:
        the end card's lines of it, so the run is not judged again here)."""
        self.record = record
        self.servers = None
        if lines is None:
            lines = card_lines(record) if record is not None else []
        self.line = headline_line(lines)
        self._baseline = next((line.variant for line in lines if line.baseline), None)
        self._draw()
        return self.line is not None and record is not None

    def show_servers(self, record: RunRecord, card: ServerCard) -> bool:
        """Tell the biggest verdict between the servers; returns whether there is one."""
        self.record = record
        self.line = None
        self.servers = card
        self._draw()
        return card.biggest is not None

    def _draw(self) -> None:
        """Digits and words for the line told, in the font the size chose."""
        record, line = self.record, self.line
        row = self.servers.biggest if self.servers is not None else None
        if record is not None and row is not None and row.verdict.ratio is not None:
            big = self.has_class("-big")
            figure = f"{row.verdict.ratio:.2f}x"
            self.query_one(Digits).update(figure)
            self.query_one("#headline-big", Static).update(big_figure(figure) if big else "")
            self.query_one("#headline-words", Static).update(
                server_words(row, record.profile.name, spaced=big)
            )
            return
        if line is None or record is None:
            self.query_one(Digits).update("")
            self.query_one("#headline-big", Static).update("")
            self.query_one("#headline-words", Static).update("")
            return
        big = self.has_class("-big")
        figure = headline_figure(line)
        self.query_one(Digits).update(figure)
        self.query_one("#headline-big", Static).update(big_figure(figure) if big else "")
        words = headline_words(line, self._baseline, record.profile.name, spaced=big)
        self.query_one("#headline-words", Static).update(words)
