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
    ("ratio", "ratio"),
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


def _ratio(row: SummaryRow) -> Text:
    if row.ratio is None:
        return Text("")
    # "≈" says what colour cannot: the ranges overlap, the repeats cannot tell them apart.
    text = ("≈" if row.within_noise else "") + f"{row.ratio:.2f}"
    return Text(text, justify="right", style="dim" if row.within_noise else "bold")


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
        _ratio(row),
        Text(human_bytes(stats.get("wal_bytes")), justify="right"),
        _count(stats.get("extends")),
        str(stats.get("top_wait") or ""),
        Text(
            row.note if len(row.note) <= NOTE_WIDTH else row.note[: NOTE_WIDTH - 1] + "…",
            style="dim",
        ),
    ]


def _look(value: Text | str) -> tuple[str, str]:
    """What a cell shows (text and style), to tell a changed cell from an unchanged one."""
    if isinstance(value, Text):
        return value.plain, f"{value.style}|{value.justify}|{value.spans}"
    return value, ""


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

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: list[tuple[str, list[tuple[str, str]]]] = []
        """(row key, what each cell shows) of the rows on screen."""

    def on_mount(self) -> None:
        """Columns, once."""
        self.cursor_type = "row"
        self.zebra_stripes = True
        self.fixed_columns = 1
        for key, header in COLUMNS:
            self.add_column(header, key=key)

    def show(self, rows: list[SummaryRow]) -> None:
        """Show these rows, keeping the cursor where it was.

        Over a slow link every repainted row costs bytes: rows already shown keep their
        place and only the cells that changed are updated; new rows are appended; the
        table is rebuilt only when the rows' order changed.
        """
        keys = [f"{n}:{row.variant}:{row.phase}" for n, row in enumerate(rows)]
        shown = self._shown
        if keys[: len(shown)] != [k for k, _ in shown]:
            cursor = self.cursor_row
            self.clear()
            shown = self._shown = []
            if rows:
                self.move_cursor(row=0, animate=False)
        else:
            cursor = -1
        col_keys = [key for key, _ in COLUMNS]
        for n, (key, row) in enumerate(zip(keys, rows, strict=True)):
            values = cells(row)
            look = [_look(v) for v in values]
            if n < len(shown):
                for col, value, old, new in zip(col_keys, values, shown[n][1], look, strict=True):
                    if old != new:
                        self.update_cell(key, col, value)
                shown[n] = (key, look)
            else:
                self.add_row(*values, key=key)
                shown.append((key, look))
        if rows and cursor >= 0:
            self.move_cursor(row=min(cursor, len(rows) - 1), animate=False)
