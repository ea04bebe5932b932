"""The end-of-matrix summary card: the story of a finished matrix in a few lines.

When a matrix ends it fills the duration pane: per variant one line with the verdict against
the baseline (`verdict.compare` on the per-trial totals), the total, and the mechanism in a
few words (WAL written, else fsyncs, else the top wait), e.g.
`unlogged   0.54× faster · 1.40 s · WAL 2.6 GiB → 8.7 KiB`. Bold and spaced out, to be read
from the back of a room; `Enter` opens the full table, `Escape` goes back to the bars.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static

from explorer.lab.units import human_bytes
from explorer.lab.verdict import Verdict, compare, total
from explorer.models import RunRecord, TrialResult
from explorer.tui.glyphs import glyph
from explorer.tui.widgets.fit import FitWidth


@dataclass
class CardLine:
    """One variant's line on the card.

    Args:
        variant: The variant's name.
        baseline: This is the baseline variant.
        total: Median of the per-trial totals, seconds (None: no finished trial).
        verdict: Against the baseline (None for the baseline itself or without trials).
        mechanism: A few words on why, e.g. "WAL 2.6 GiB → 8.7 KiB" ("" when nothing says).
    """

    variant: str
    baseline: bool
    total: float | None
    verdict: Verdict | None
    mechanism: str


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _stat(trials: list[TrialResult], name: str) -> float | None:
    values = []
    for trial in trials:
        stats = trial.stats
        value = None
        if stats is not None:
            value = stats.wal_bytes if name == "wal_bytes" else stats.fsyncs
        if isinstance(value, int | float):
            values.append(float(value))
    return _median(values)


def _mechanism(base: list[TrialResult], mine: list[TrialResult]) -> str:
    """The first measured difference that explains a change: WAL, fsyncs, top wait."""
    arrow = glyph("→")
    b_wal, m_wal = _stat(base, "wal_bytes"), _stat(mine, "wal_bytes")
    if b_wal is not None and m_wal is not None and (b_wal or m_wal):
        if abs(m_wal - b_wal) > 0.1 * max(b_wal, m_wal):
            return f"WAL {human_bytes(b_wal)} {arrow} {human_bytes(m_wal)}"
    b_fs, m_fs = _stat(base, "fsyncs"), _stat(mine, "fsyncs")
    if b_fs is not None and m_fs is not None and b_fs != m_fs:
        return f"fsyncs {b_fs:.0f} {arrow} {m_fs:.0f}"
    if b_wal is not None and m_wal is not None and (b_wal or m_wal):
        return f"WAL {human_bytes(m_wal)} (same)"
    return ""


def card_lines(record: RunRecord) -> list[CardLine]:
    """Per variant, in the profile's order: total, verdict against the baseline, mechanism."""
    ok = [t for t in record.trials if t.status == "ok"]
    by_variant: dict[str, list[TrialResult]] = {}
    for trial in ok:
        by_variant.setdefault(trial.variant, []).append(trial)
    totals = {
        name: [t for t in (total(p.seconds for p in tr.phases) for tr in trials) if t is not None]
        for name, trials in by_variant.items()
    }
    base_name = record.profile.baseline_name()
    base = totals.get(base_name, [])
    lines = []
    for variant in record.profile.variants:
        mine = totals.get(variant.name, [])
        is_base = variant.name == base_name
        verdict = compare(base, mine) if mine and base and not is_base else None
        mechanism = (
            _mechanism(by_variant.get(base_name, []), by_variant[variant.name])
            if not is_base and variant.name in by_variant
            else ""
        )
        if is_base and variant.name in by_variant:
            wal = _stat(by_variant[variant.name], "wal_bytes")
            mechanism = f"WAL {human_bytes(wal)}" if wal is not None else ""
        lines.append(CardLine(variant.name, is_base, _median(mine), verdict, mechanism))
    return lines


def _seconds(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def _verdict_text(line: CardLine) -> Text:
    """'0.54× faster' (reversed), '≈0.95× same', '0.86×' dim (too few runs), 'baseline'."""
    if line.baseline:
        return Text("baseline", style="bold")
    verdict = line.verdict
    if verdict is None:
        return Text(f"{glyph('✗')} no trial", style="dim")
    shown = f"{verdict.ratio:.2f}{glyph('×')}" if verdict.ratio is not None else "?"
    if verdict.too_few:
        return Text(f"{shown}?", style="dim")
    if verdict.decided:
        return Text(f"{shown} {verdict.word}", style="bold reverse")
    return Text(f"{glyph('≈')}{shown} same", style="bold")


def render_card(record: RunRecord | None, width: int, rows: int = 0) -> Text:
    """The card as text, for a pane `width` cells wide and `rows` high (0: unknown).

    Variants are spaced out by a blank line when the rows allow, so the card reads from
    afar; otherwise one line each, so it never needs scrolling.
    """
    if record is None:
        return Text()
    lines = card_lines(record)
    # Roomiest first: spaced out, then one block, then mechanisms only where they fit inline.
    for spaced, wrap_tails in ((True, True), (False, True), (False, False)):
        text = _card(record, lines, width, spaced=spaced, wrap_tails=wrap_tails)
        if not rows or text.plain.count("\n") + 1 <= rows:
            break
    return text


def _card(
    record: RunRecord, lines: list[CardLine], width: int, *, spaced: bool, wrap_tails: bool
) -> Text:
    text = Text()
    dot = glyph("·")
    # Spaces end a span rather than start the next: SVG viewers drop a span's leading ones.
    text.append(f"{record.profile.name} ", style="bold underline")
    text.append(f" {record.status} {dot} total per trial, median", style="dim")
    text.append("\n")
    longest = max((len(line.variant) for line in lines), default=8)
    name_w = min(longest, 22)
    for n, line in enumerate(lines):
        text.append("\n" if spaced or n == 0 else "")
        head = Text()
        head.append(f"{line.variant[:name_w]:<{name_w}}  ", style="bold")
        head.append_text(_verdict_text(line))
        head.append(f" {dot} ")
        head.append(f"{_seconds(line.total)}", style="bold")
        if line.variant[:name_w] != line.variant or head.cell_len > width:
            # Too narrow for one line: the name alone, the numbers under it.
            head = Text(line.variant, style="bold")
            head.append(f"\n{dot} ")
            head.append_text(_verdict_text(line))
            head.append(f" {dot} ")
            head.append(f"{_seconds(line.total)}", style="bold")
        last = head.plain.rsplit("\n", 1)[-1]
        text.append_text(head)
        if line.mechanism:
            tail = f" {dot} {line.mechanism}"
            if len(last) + len(tail) > width:
                tail = f"\n{glyph('·')} {line.mechanism}" if wrap_tails else ""
            text.append(tail)
        text.append("\n")
    text.append("\nEnter ", style="bold")
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
        self.record: RunRecord | None = None
        """The finished run the card tells."""

    def show_record(self, record: RunRecord | None) -> None:
        """Tell this run (None hides the card)."""
        self.record = record
        self.display = record is not None
        self.update(FitWidth(lambda width: render_card(self.record, width, self._room())))

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
