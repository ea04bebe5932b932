"""The results table: `report.summarize` rows, filled in as trials finish."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from explorer.lab.report import SummaryRow
from explorer.lab.units import human_bytes

COLUMNS = (
    ("variant", "variant"),
    ("phase", "phase"),
    ("n", "n"),
    ("min", "min s"),
    ("median", "median s"),
    ("max", "max s"),
    ("verdict", "verdict"),
    ("wal", "WAL"),
    ("extends", "ext pages"),
    ("wait", "top wait"),
    ("note", "note"),
)
"""Column key → header."""
NOTE_WIDTH = 24
"""Notes (plans, sizes, failure reasons) are cut here; the export has them whole."""


def _s(value: float | None) -> Text:
    return Text("" if value is None else f"{value:.3f}", justify="right")


def _verdict(row: SummaryRow) -> Text:
    # The same words as the report; bold only where the trials support a difference, so the
    # eye (and a monochrome projector) lands on findings, not on noise.
    label = row.verdict_label()
    if row.baseline:
        return Text(label, style="bold yellow" if row.drift else "dim")
    decided = row.verdict is not None and row.verdict.decided
    return Text(label, style="bold" if decided else "dim")


def _count(value: object) -> Text:
    if not isinstance(value, int | float):
        return Text("")
    n = float(value)
    shown = f"{n / 1000:.1f}k" if n >= 10_000 else f"{n:.0f}"
    return Text(shown, justify="right")


def cells(row: SummaryRow) -> list[Text | str]:
    """One table row, formatted."""
    stats = row.stats or {}
    return [
        row.variant,
        row.phase,
        Text(str(row.n), justify="right"),
        _s(row.min),
        _s(row.median),
        _s(row.max),
        _verdict(row),
        Text(human_bytes(stats.get("wal_bytes")), justify="right"),
        _count(stats.get("extends")),
        str(stats.get("top_wait") or ""),
        Text(
            row.note if len(row.note) <= NOTE_WIDTH else row.note[: NOTE_WIDTH - 1] + "…",
            style="dim",
        ),
    ]


class ResultsTable(DataTable[Text | str]):
    """The run's comparison table (variant × phase), rebuilt when a trial ends."""

    DEFAULT_CSS = """
    ResultsTable {
        height: 1fr;
        scrollbar-size-vertical: 1;
        /* The note is the last column: cut it rather than show a scrollbar row. */
        overflow-x: hidden;
    }
    """

    def on_mount(self) -> None:
        """Columns, once."""
        self.cursor_type = "row"
        self.zebra_stripes = True
        self.fixed_columns = 1
        for key, header in COLUMNS:
            self.add_column(header, key=key)

    def show(self, rows: list[SummaryRow]) -> None:
        """Replace the rows, keeping the cursor where it was."""
        cursor = self.cursor_row
        self.clear()
        for n, row in enumerate(rows):
            self.add_row(*cells(row), key=f"{n}:{row.variant}:{row.phase}")
        if rows:
            self.move_cursor(row=min(cursor, len(rows) - 1), animate=False)
