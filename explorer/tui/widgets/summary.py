"""The end-of-matrix summary card: the story of a finished matrix in a few lines.

When a matrix ends it fills the duration pane: per variant one line with the verdict against
the baseline, the total, the phase that moved most with its own before → after, and the
mechanism when a counter moved — rows from `explorer.analysis.card` (the judged verdicts and
medians the table shows); this widget only draws, e.g.
`deferred  2.31× slower · 6.36 s · commit 5.4 ms → 3.60 s`. Bold and spaced out, to be read
from the back of a room; `Enter` opens the full table, `Escape` goes back to the bars.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static

from explorer.analysis.card import ARROW, CardLine, card_lines, seconds_text
from explorer.analysis.judge import Judgement
from explorer.analysis.server_card import ServerCard
from explorer.models import RunRecord
from explorer.tui.glyphs import glyph
from explorer.tui.widgets.fit import FitWidth


def _verdict_text(line: CardLine) -> Text:
    """'0.54× faster' (reversed), '1.01× same', '1.04× undecided', '0.86×?' dim (too few
    runs), 'baseline' — the judged word, never a sign the word does not say."""
    if line.baseline:
        return Text("baseline", style="bold")
    verdict = line.verdict
    if verdict is None:
        return Text(f"{glyph('✗')} no trial", style="dim")
    if verdict.ratio is None and verdict.difference_seconds is None:
        return Text(verdict.label(), style="dim")
    if verdict.too_few:
        # The point with a '?': too few runs for a word (the card's key says so).
        shown = verdict.point_text().replace("×", glyph("×"))
        return Text(f"{shown}?", style="dim")
    # The table's point and word (`2.31× slower`, `+3.59 s slower` below the floor).
    words = verdict.short_label().replace("×", glyph("×"))
    if verdict.decided:
        return Text(words, style="bold reverse")
    return Text(words, style="bold" if verdict.settled else "dim")


def render_card(
    record: RunRecord | None, width: int, rows: int = 0, lines: list[CardLine] | None = None
) -> Text:
    """The card as text, for a pane `width` cells wide and `rows` high (0: unknown);
    `lines`, the run's card lines when the caller has them (else made here, judging it).

    Variants are spaced out by a blank line when the rows allow, so the card reads from
    afar; otherwise packed, so it never needs scrolling. The phase that moved most is the
    story and the last thing given up; the mechanism goes first.
    """
    if record is None:
        return Text()
    lines = lines if lines is not None else card_lines(record)
    # Roomiest first: spaced out; packed; the mechanism only inline, then not at all; the
    # moved phase only inline.
    ladder: tuple[tuple[bool, bool, str], ...] = (
        (True, True, "wrap"),
        (False, True, "wrap"),
        (False, True, "inline"),
        (False, True, "none"),
        (False, False, "none"),
    )
    for spaced, wrap_moved, mechanism in ladder:
        text = _card(
            record, lines, width, spaced=spaced, wrap_moved=wrap_moved, mechanism=mechanism
        )
        used = _rows(text, width)
        if not rows or used <= rows:
            break
    if rows and not spaced and used < rows:
        # Packed with rows to spare: a blank line before as many variants as they allow,
        # so no rows stay empty under the card.
        gaps = min(rows - used, len(lines))
        text = _card(
            record,
            lines,
            width,
            spaced=False,
            wrap_moved=wrap_moved,
            mechanism=mechanism,
            gaps=gaps,
        )
    return text


def render_servers_card(
    card: ServerCard, profile: str, width: int, rows: int = 0, *, fill: bool = True
) -> Text:
    """A run on several servers as a card: the biggest verdict between the servers, then per
    server each variant's verdict and total (`n of m` servers finished). Blank lines
    between the blocks where `rows` (0: unknown) allow, else packed; with rows still to
    spare and `fill`, a blank line before as many variant lines as they allow, so the pane
    (the presenter's at 160x45) is not left empty under the card."""
    text = _servers_card(card, profile, width, spaced=True)
    used = _rows(text, width)
    if rows and used > rows:
        return _servers_card(card, profile, width, spaced=False)
    if fill and rows and used < rows:
        lines = sum(len(ls) for _, ls in card.servers)
        text = _servers_card(card, profile, width, spaced=True, gaps=min(rows - used, lines))
    return text


def servers_card_rows(card: ServerCard, profile: str, width: int, rows: int) -> int:
    """Rows the servers' card takes, unspread, in a pane `width` cells wide and `rows` high."""
    return _rows(render_servers_card(card, profile, width, rows, fill=False), width)


def _servers_card(
    card: ServerCard, profile: str, width: int, *, spaced: bool, gaps: int = 0
) -> Text:
    gap = "\n" if spaced else ""
    dot = glyph("·")
    text = Text()
    finished = sum(run.status == "finished" for run in card.judged.runs)
    names = ", ".join(name for name, _ in card.servers)
    text.append(f"{profile} ", style="bold underline")
    text.append(
        f" {finished} of {len(card.servers)} servers finished ({names}) {dot} total per trial,"
        " median\n",
        style="dim",
    )
    row = card.biggest
    if row is not None:
        text.append(
            f"{gap}{row.variant} {row.phase} on {row.server} vs {row.reference}  ", style="bold"
        )
        words = row.verdict.short_label().replace("×", glyph("×"))
        text.append(words, style="bold reverse" if row.verdict.decided else "bold")
        text.append("\n")
    name_w = min(max((len(line.variant) for _, ls in card.servers for line in ls), default=8), 22)
    index = 0
    for server, lines in card.servers:
        text.append(f"{gap}on {server}\n", style="bold underline")
        for line in lines:
            # Rows to spare: a blank line before the first `gaps` variant lines.
            text.append("\n" if index < gaps else "")
            index += 1
            head = Text(f"  {line.variant[:name_w]:<{name_w}}  ", style="bold")
            head.append_text(_verdict_text(line))
            head.append(f" {dot} ")
            head.append(seconds_text(line.total), style="bold")
            if width and head.cell_len > width:
                # Too narrow for one line (120x36's middle pane): the name, the numbers under
                # it, rather than a total wrapped from its unit (`240` then `ms`).
                head = Text(f"  {line.variant}", style="bold")
                head.append("\n    ")
                head.append_text(_verdict_text(line))
                head.append(f" {dot} ")
                head.append(seconds_text(line.total), style="bold")
            text.append_text(head)
            text.append("\n")
    text.append(f"{gap}Enter ", style="bold")
    text.append("full table  ", style="dim")
    text.append("Esc ", style="bold")
    text.append("bars", style="dim")
    return text


def card_rows(record: RunRecord, width: int, rows: int, lines: list[CardLine] | None = None) -> int:
    """Rows the card takes in a pane `width` cells wide and `rows` high."""
    return _rows(render_card(record, width, rows, lines), width)


def _rows(text: Text, width: int) -> int:
    """Rows `text` takes in a pane `width` cells wide, its own line breaks and wraps counted."""
    return sum(max(1, -(-cell_len(line) // max(width, 1))) for line in text.plain.split("\n"))


def _card(
    record: RunRecord,
    lines: list[CardLine],
    width: int,
    *,
    spaced: bool,
    wrap_moved: bool,
    mechanism: str,
    gaps: int = 0,
) -> Text:
    text = Text()
    dot = glyph("·")
    # Spaces end a span rather than start the next: SVG viewers drop a span's leading ones.
    text.append(f"{record.profile.name} ", style="bold underline")
    text.append(f" {record.status} {dot} total per trial, median", style="dim")
    text.append("\n")
    longest = max((len(line.variant) for line in lines), default=8)
    name_w = min(longest, 22)
    for index, line in enumerate(lines):
        # Spaced: a blank line before each variant; packed: none, or before the first
        # `gaps` variants where the pane has that many rows to spare.
        text.append("\n" if spaced or index < gaps else "")
        head = Text()
        head.append(f"{line.variant[:name_w]:<{name_w}}  ", style="bold")
        head.append_text(_verdict_text(line))
        head.append(f" {dot} ")
        head.append(f"{seconds_text(line.total)}", style="bold")
        if line.variant[:name_w] != line.variant or head.cell_len > width:
            # Too narrow for one line: the name alone, the numbers under it.
            head = Text(line.variant, style="bold")
            head.append(f"\n{dot} ")
            head.append_text(_verdict_text(line))
            head.append(f" {dot} ")
            head.append(f"{seconds_text(line.total)}", style="bold")
        last = len(head.plain.rsplit("\n", 1)[-1])
        text.append_text(head)
        # The story first (the phase that moved, in the table's medians), then why.
        tails = [(line.moved, "bold", wrap_moved)]
        if mechanism != "none":
            tails.append((line.mechanism, "", mechanism == "wrap"))
        for words, style, wrap in tails:
            if not words:
                continue
            words = words.replace(ARROW, glyph(ARROW))
            if last + len(words) + 3 <= width:
                text.append(f" {dot} ")
                last += 3
            elif wrap:
                text.append(f"\n{dot} ")
                last = 2
            else:
                continue
            text.append(words, style=style)
            last += len(words)
        text.append("\n")
    text.append("\nEnter " if spaced else "Enter ", style="bold")
    text.append("full table  ", style="dim")
    text.append("Esc ", style="bold")
    text.append("bars", style="dim")
    if any(line.verdict is not None and line.verdict.too_few for line in lines):
        text.append(f" {dot} ?: too few runs for a verdict", style="dim")
    return text


class SummaryCard(Static, can_focus=True):
    """The finished matrix in a few big lines; Enter opens the results table.

    Args:
        id: Widget id.
    """

    BINDINGS = [
        Binding(
            "enter",
            "open_table",
            "Table",
            id="card.table",
            tooltip="Open the full results table",
        ),
        Binding(
            "escape",
            "dismiss",
            "Bars",
            id="card.dismiss",
            tooltip="Back to the duration bars",
        ),
    ]

    DEFAULT_CSS = """
    SummaryCard {
        display: none;
        height: auto;
        padding: 0;
    }
    SummaryCard:focus {
        background: $boost;
    }
    """

    class OpenTable(Message):
        """The user asked for the full results table."""

    class Dismissed(Message):
        """The user went back to the bars."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.fill = True
        """Spread the servers' card over the pane's spare rows (False: the duration bars
        fill them, see `DurationPane.fit_under_card`)."""
        self.record: RunRecord | None = None
        """The finished run the card tells."""
        self.servers: ServerCard | None = None
        """On several servers: what the card tells of them (None: one server's run)."""
        self.lines: list[CardLine] = []
        """One server's run: its card lines, made (and the run judged) once as it is shown."""

    def show_record(self, record: RunRecord | None, judged: Judgement | None = None) -> None:
        """Tell this run (None hides the card); `judged`, its verdicts when the caller has
        them (the runner's, judged as the run ended), else it is judged here, once."""
        self.record = record
        self.servers = None
        self.lines = card_lines(record, judged) if record is not None else []
        self.display = record is not None
        self.update(
            FitWidth(lambda width: render_card(self.record, width, self._room(), self.lines))
        )

    def show_servers(self, record: RunRecord, card: ServerCard) -> None:
        """Tell a run on several servers (`record`: the reference server's run)."""
        self.record = record
        self.servers = card
        self.display = True
        name = record.profile.name
        self.update(
            FitWidth(
                lambda width: render_servers_card(card, name, width, self._room(), fill=self.fill)
            )
        )

    def _room(self) -> int:
        """Rows the pane has for the card (0 before the first layout)."""
        parent = self.parent
        return parent.scrollable_content_region.height if isinstance(parent, Widget) else 0

    def action_open_table(self) -> None:
        """Enter: the full table."""
        self.post_message(self.OpenTable())

    def action_dismiss(self) -> None:
        """Escape: back to the bars."""
        self.post_message(self.Dismissed())
