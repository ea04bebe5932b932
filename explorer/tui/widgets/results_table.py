"""The results table: `report.summarize` rows, filled in as trials finish.

Under it, `MechanismLine` shows what the server did in the selected row's phase: WAL, FPI,
the writers' pg_stat_io and the workload's waits.
"""

from __future__ import annotations

from typing import Any

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region
from textual.strip import Strip
from textual.timer import Timer
from textual.widgets import DataTable, Static

from explorer.analysis.mechanism import UNKNOWN, MechanismSummary, detail_lines
from explorer.analysis.report import SummaryRow
from explorer.analysis.units import human_bytes, human_count
from explorer.tui.restyle import FocusStylesKept

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
WARM_AFTER = 0.3
"""Seconds of quiet after the rows of a hidden table changed before its lines are drawn
ahead of time (see `ResultsTable._warm`)."""

CELL_CACHE = 4000
"""Rendered cells, and rendered row lines, kept by `ResultsTable` (a screenful is ~150
cells; each cache is forgotten all at once when full)."""
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
    # One form for the whole column (`5.6k` beside `11.5k`, not `5580`): `human_count`.
    return Text(human_count(float(value)), justify="right")


def _wal(m: MechanismSummary | None) -> Text:
    if m is None:
        return Text("")
    value = m.values.get("wal_bytes")
    return Text(UNKNOWN if value is None else human_bytes(value), justify="right")


def _extended(m: MechanismSummary | None) -> Text:
    if m is None:
        return Text("")
    value = m.values.get("extended")
    if value is None:
        return Text(UNKNOWN, justify="right")
    if "extended_workload" in m.folded and m.late_in:
        # The workload's share is on another row; say so rather than show a bare 0.
        return Text(f"↑{m.late_in}", justify="right", style="dim")
    return _count(value)


def _top_wait(m: MechanismSummary | None) -> str:
    if m is None:
        return ""
    if m.waits is None:
        return UNKNOWN
    shares = m.wait_shares()
    return f"{shares[0][0]} {shares[0][1]:.0%}" if shares else ""


COMPACT_DROPS = ("min", "max")
"""Columns a narrow table leaves out: they go to the line under the selected row."""
SHOWN_WHOLE = ("variant", "phase", "n", "min", "median", "max", "verdict")
"""Columns that must never be cut: a table too narrow for them all goes compact."""
ALL_KEYS = tuple(key for key, _ in COLUMNS)
"""Every column, in order: the full table."""


def _verdict_short(row: SummaryRow) -> Text:
    label = row.verdict_short()
    if row.baseline:
        return Text(label, style="bold yellow" if row.drift else "dim")
    decided = row.verdict is not None and row.verdict.decided
    return Text(label, style="bold" if decided else "dim")


def cells(row: SummaryRow, keys: tuple[str, ...] = ALL_KEYS) -> list[Text | str]:
    """One table row, formatted, for the columns `keys`. Names are Text: DataTable reads a
    str as Rich markup.

    Without min and max (the compact row) the verdict loses its interval (`2.30× slower`);
    the line under the selected row has them.
    """
    compact = "min" not in keys
    out = []
    for (key, _), value in zip(COLUMNS, _cells(row), strict=True):
        if key in keys:
            out.append(_verdict_short(row) if compact and key == "verdict" else value)
    return out


def _widths(rows: list[SummaryRow], compact: bool) -> dict[str, int]:
    """Each column's width: its header or its widest cell, as the compact or full row."""
    keys = ALL_KEYS if not compact else tuple(k for k in ALL_KEYS if k not in COMPACT_DROPS)
    widths = {key: len(header) for key, header in COLUMNS if key in keys}
    for row in rows:
        for key, value in zip(keys, cells(row, keys), strict=True):
            width = value.cell_len if isinstance(value, Text) else len(value)
            widths[key] = max(widths[key], width)
    return widths


def layout(rows: list[SummaryRow], width: int) -> tuple[str, ...]:
    """The columns to show in `width` cells.

    Min, median, max and every verdict whole when they fit, else the compact row (no min
    and max, the verdict without its interval). Of the mechanism columns after them only
    those that fit whole — a WAL figure cut to `49.` is a wrong number — and the note last,
    cut on purpose (the line under the selected row and the export have them all).
    """
    full = _widths(rows, compact=False)
    compact = sum(full[k] + 2 for k in SHOWN_WHOLE) > width
    widths = _widths(rows, compact=True) if compact else full
    keys = [k for k in SHOWN_WHOLE if not (compact and k in COMPACT_DROPS)]
    used = sum(widths[k] + 2 for k in keys)
    for key in ("wal", "extends", "wait"):
        used += widths[key] + 2
        if used > width:
            break
        keys.append(key)
    keys.append("note")
    return tuple(k for k in ALL_KEYS if k in keys)


def _cells(row: SummaryRow) -> list[Text | str]:
    m = row.mechanism
    return [
        Text(row.variant),
        Text(row.phase),
        Text(str(row.n), justify="right"),
        _s(row.min),
        _s(row.median),
        _s(row.max),
        _verdict(row),
        _wal(m),
        _extended(m),
        Text(_top_wait(m)),
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


class ResultsTable(FocusStylesKept, DataTable[Text | str]):
    """The run's comparison table (variant × phase), rebuilt when a trial ends."""

    DEFAULT_CSS = """
    ResultsTable {
        height: 1fr;
        scrollbar-size-vertical: 1;
        /* The note is the last column: cut it rather than show a scrollbar row. */
        overflow-x: hidden;
    }
    ResultsTable:focus, ResultsTable:focus > .datatable--header {
        /* The focused pane's border lights up and the cursor row takes the accent: without
           DataTable's tint on focus, only those rows look different focused (_row_lines). */
        background-tint: $foreground 0%;
    }
    """

    summary_rows: list[SummaryRow] = []
    """The rows shown, in table order."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: list[tuple[str, list[tuple[str, str]]]] = []
        """(row key, what each cell shows) of the rows on screen."""
        self.keys: tuple[str, ...] = ALL_KEYS
        """The columns shown (see `layout`)."""
        self._cells: dict[tuple[object, ...], list[list[Segment]]] = {}
        """Rendered cells by what decides their look (see `_render_cell`)."""
        self._rows: dict[tuple[object, ...], tuple[Any, Any]] = {}
        """Rendered row lines by what decides their look (see `_render_line_in_row`)."""
        self._repaint_styles: dict[object, Style] | None = None
        """Styles worked out once per repaint (see `render_lines`); None between repaints."""
        self._warm_timer: Timer | None = None
        self.warmed = 0
        """How many times the lines were drawn ahead of time (tests read it)."""

    @property
    def compact(self) -> bool:
        """Too narrow for min, median, max and the whole verdict: the compact row is shown
        (`2.30× slower`), the interval and min–max in the line under the selected row."""
        return "min" not in self.keys

    def on_mount(self) -> None:
        """Columns, once (again when the width calls for the other row)."""
        self.cursor_type = "row"
        self.zebra_stripes = True
        self.fixed_columns = 2  # variant and phase stay while the rest scrolls
        self._add_columns()

    def _add_columns(self) -> None:
        for key, header in COLUMNS:
            if key in self.keys:
                self.add_column(header, key=key)

    def action_cursor_right(self) -> None:
        """`→`: the next column whole into view, after the frozen variant and phase (DataTable
        scrolled a row table by one cell a press: 45 presses from phase to note at 80x24)."""
        if self.cursor_type != "row":
            super().action_cursor_right()
            return
        self._scroll_columns(1)

    def action_cursor_left(self) -> None:
        """`←`: the previous column whole into view."""
        if self.cursor_type != "row":
            super().action_cursor_left()
            return
        self._scroll_columns(-1)

    def _scroll_columns(self, by: int) -> None:
        widths = [column.get_render_width(self) for column in self.ordered_columns]
        frozen = sum(widths[: self.fixed_columns])
        starts, x = [], frozen
        for width in widths[self.fixed_columns :]:
            starts.append(x - frozen)
            x += width
        here = round(self.scroll_x)
        if by > 0:
            target = next((s for s in starts if s > here), None)
        else:
            target = next((s for s in reversed(starts) if s < here), None)
        if target is not None:
            self.scroll_to(x=min(target, self.max_scroll_x), animate=False, immediate=True)

    def on_resize(self) -> None:
        """A new width may need the other row shape; a new height (the line under the table
        took another number of rows) must not leave the selected row out of sight."""
        self._fit()
        if self.row_count and self.cursor_type == "row":
            # The cursor scrolled itself into view before the line under the table grew (its
            # waits wrapped to one more row): the table shrank under it, so scroll again.
            self._scroll_cursor_into_view()

    def refit(self) -> None:
        """After the table is shown or laid out again (a pane key, a tab, a resize while it
        was hidden): its shape follows the width it is shown at, decided after the layout.
        A hidden table has no width to decide by and keeps its shape (a replay's jump may
        have filled it hidden), and a pane shown again has the same size: no resize says so."""
        self.call_after_refresh(self._fit)

    def _fit(self) -> bool:
        """Show the columns the width allows whole; True when the shape changed."""
        # Always leave room for the vertical scrollbar: measured with and without it, the
        # same rows flipped shape (and rebuilt) whenever the scrollbar came or went.
        width = self.size.width - self.styles.scrollbar_size_vertical
        if width <= 0:
            return False
        keys = layout(self.summary_rows, width)
        if keys == self.keys:
            return False
        self.keys = keys
        cursor = self.cursor_row
        self.clear(columns=True)
        self._shown = []
        self._add_columns()
        self._fill(self.summary_rows, cursor)
        return True

    def show(self, rows: list[SummaryRow]) -> None:
        """Show these rows, keeping the cursor where it was.

        Over a slow link every repainted row costs bytes: rows already shown keep their
        place and only the cells that changed are updated; new rows are appended; the
        table is rebuilt only when the rows' order changed.
        """
        self.summary_rows = list(rows)
        if not self._fit():
            self._fill(rows, -1)
        if not self.is_on_screen:
            self._warm_later()

    def _warm_later(self) -> None:
        """Draw a hidden table's lines once its rows have been quiet for `WARM_AFTER`."""
        if self._warm_timer is not None:
            self._warm_timer.stop()
        self._warm_timer = self.set_timer(WARM_AFTER, self._warm)

    def _warm(self) -> None:
        """A hidden table's visible lines, drawn ahead of time into the row cache.

        On a narrow terminal the table is a hidden tab while a matrix fills it; `4` then
        rendered every row a trial had changed (and all of them when a column widened)
        with the key waiting: ~13 ms of `4` at 80x24, twice that beside a busy process.
        Drawn in a quiet moment instead, `4` finds them cached and draws only the rows the
        focus changes (the cursor row and the header).
        """
        self._warm_timer = None
        if self.is_on_screen or not self.is_mounted or self.cursor_type != "row":
            return
        # Hidden, the table has no size: the rows the screen would show from where it is
        # scrolled, as many as the terminal has lines at most.
        first = int(self.scroll_offset.y)
        keys = [self._header_row_key] if self.show_header else []
        for index in range(first, min(first + self.app.size.height, self.row_count)):
            key = self._row_locations.get_key(index)
            if key is not None:
                keys.append(key)
        for key in keys:
            # What DataTable's own line rendering asks for each row (`_render_line`).
            self._render_line_in_row(
                key,
                0,
                self.rich_style,
                cursor_location=self.cursor_coordinate,
                hover_location=self.hover_coordinate,
            )
        self.warmed += 1

    def _fill(self, rows: list[SummaryRow], keep: int) -> None:
        """Show `rows`, updating in place what is already shown (see `show`); `keep`: a
        cursor row to restore after a rebuild (-1: none)."""
        keys = [f"{n}:{row.variant}:{row.phase}" for n, row in enumerate(rows)]
        shown = self._shown
        if keys[: len(shown)] != [k for k, _ in shown]:
            cursor = self.cursor_row
            self.clear()
            shown = self._shown = []
            if rows:
                self.move_cursor(row=0, animate=False)
        else:
            cursor = keep
        col_keys = list(self.keys)
        under_cursor_changed = cursor >= 0
        for n, (key, row) in enumerate(zip(keys, rows, strict=True)):
            values = cells(row, self.keys)
            look = [_look(v) for v in values]
            if n < len(shown):
                for col, value, old, new in zip(col_keys, values, shown[n][1], look, strict=True):
                    if old != new:
                        # Grow the column with its content: a count of 3 that becomes 30,
                        # or "undecided" that becomes a longer verdict, is never cut.
                        self.update_cell(key, col, value, update_width=True)
                        under_cursor_changed |= n == self.cursor_row
                shown[n] = (key, look)
            else:
                self.add_row(*values, key=key)
                shown.append((key, look))
                under_cursor_changed |= n == self.cursor_row
        self._measure_now()
        if rows and cursor >= 0:
            self.move_cursor(row=min(cursor, len(rows) - 1), animate=False)
        if rows and under_cursor_changed:
            # The cursor may not have moved, but the row under it is new or changed: say so,
            # so the mechanism line follows (and only then: nothing to repaint otherwise).
            row_key = self._row_locations.get_key(self.cursor_row)
            if row_key is not None:
                self.post_message(DataTable.RowHighlighted(self, self.cursor_row, row_key))

    def _measure_now(self) -> None:
        """The columns' widths from the cells just added or changed, at once.

        DataTable measures them when its message queue next runs empty (`_on_idle`); a live
        run on two servers ended at 120x36 with every column at its header's width (`none @`,
        `commi`, `n` showing `1` of 11), that measure never made after the last rows came.
        At most once per finished trial, measuring here costs little and cannot be missed.
        """
        if self._updated_cells:
            updated = self._updated_cells.copy()
            self._updated_cells.clear()
            self._update_column_widths(updated)
        if self._require_update_dimensions:
            self._require_update_dimensions = False
            new_rows = self._new_rows.copy()
            self._new_rows.clear()
            self._update_dimensions(new_rows)

    def render_lines(self, crop: Region) -> list[Strip]:
        """A repaint works out the table's own style and each kind of row's style once.

        DataTable walked up the widget tree for each line's base style (`rich_style`) and
        again for its row style — 0.2 ms a line, most of a repaint whose lines all come
        from the caches (the table shown again by `4`, a trial's changed cell). Nothing
        restyles during a repaint, so one walk per style holds for all its lines.
        """
        self._repaint_styles = {}
        try:
            return super().render_lines(crop)
        finally:
            self._repaint_styles = None

    @property
    def rich_style(self) -> Style:
        """DataTable's base style for a line: once per repaint (see `render_lines`)."""
        kept = self._repaint_styles
        if kept is None:
            return super().rich_style
        style = kept.get("table")
        if style is None:
            style = kept["table"] = super().rich_style
        return style

    def _get_row_style(self, row_index: int, base_style: Style) -> Style:
        """A row's style by its kind (header, fixed, even or odd), once per repaint."""
        kept = self._repaint_styles
        if kept is None:
            return super()._get_row_style(row_index, base_style)
        if row_index == -1 or row_index < self.fixed_rows:
            kind: object = min(row_index, 0)  # -1: the header; 0: the fixed rows
        else:
            kind = ("row", row_index % 2 if self.zebra_stripes else None)
        key = (kind, base_style)
        style = kept.get(key)
        if style is None:
            style = kept[key] = super()._get_row_style(row_index, base_style)
        return style

    def _render_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ) -> list[list[Segment]]:
        """A cell rendered once per look, kept across DataTable's own cache resets.

        DataTable keys its cell cache on a counter every `update_cell` bumps and on the
        focus state, so a trial that changed three cells, or `4` focusing the table (a tab
        shown at 80x24), rendered every visible cell again through Rich: 20–25 ms for a
        screenful, twice that beside a busy process. Here the key is what the cell looks
        like — its text and styles, the row's base style, the cursor and component styles,
        width and height — so only cells that changed are rendered.
        """
        if column_index < 0:  # row labels: none here, DataTable's way
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        header = row_index < 0
        column_key = self._column_locations.get_key(column_index)
        column = self.columns.get(column_key) if column_key is not None else None
        value: Text | str | None
        if header:
            value, height = (column.label if column else None), self.header_height
        else:
            row_key = self._row_locations.get_key(row_index)
            row = self.rows.get(row_key) if row_key is not None else None
            value = self._data.get(row_key, {}).get(column_key) if row and column else None  # type: ignore[arg-type]
            height = row.height if row else 0
        if value is None or height < 1:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        fixed = not header and (row_index < self.fixed_rows or column_index < self.fixed_columns)
        styles = self._get_styles_to_render_cell(
            header,
            False,
            fixed,
            hover,
            cursor,
            self.show_cursor,
            self._show_hover_cursor,
            self.cursor_foreground_priority == "css",
            self.cursor_background_priority == "css",
        )
        key = (
            row_index,
            column_index,
            _look(value),
            base_style,
            styles,
            cursor,
            hover,
            width,
            height,
            self.cell_padding,
        )
        lines = self._cells.get(key)
        if lines is None:
            lines = super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
            if len(self._cells) >= CELL_CACHE:
                self._cells.clear()
            self._cells[key] = lines
        return lines

    def _render_line_in_row(
        self,
        row_key: Any,
        line_no: int,
        base_style: Style,
        cursor_location: Any,
        hover_location: Any,
    ) -> tuple[Any, Any]:
        """A row's line rendered once per look, kept across DataTable's cache resets.

        DataTable keys its row cache on a counter every `update_cell` bumps, on the cursor's
        and the hover's coordinates and on the focus: a trial's three changed cells, a
        cursor move or `4` focusing the table re-rendered every visible row (~1 ms each).
        With a row cursor, a row's look depends on its own cells, whether the cursor or the
        hover is on it, and (on that row and the header only) the focus; that is the key
        here, with the styles, widths and theme.
        """
        header = row_key is self._header_row_key
        index = -1 if header else self._row_locations.get(row_key)
        if self.cursor_type != "row" or index is None or (not header and index >= len(self._shown)):
            return super()._render_line_in_row(
                row_key, line_no, base_style, cursor_location, hover_location
            )
        if header:
            look: object = tuple(str(column.label) for column in self.ordered_columns)
        else:
            look = tuple(self._shown[index][1])
        cursor_here = self.show_cursor and cursor_location.row == index
        hover_here = self._show_hover_cursor and hover_location.row == index
        key = (
            row_key,
            index,
            line_no,
            look,
            base_style,
            self._get_row_style(index, base_style),
            cursor_here,
            hover_here,
            self.has_focus if (cursor_here or hover_here or header) else None,
            tuple(column.get_render_width(self) for column in self.ordered_columns),
            self.app.theme,
            self.zebra_stripes,
            self.fixed_columns,
            self.fixed_rows,
            self.cell_padding,
        )
        lines = self._rows.get(key)
        if lines is None:
            lines = super()._render_line_in_row(
                row_key, line_no, base_style, cursor_location, hover_location
            )
            if len(self._rows) >= CELL_CACHE:
                self._rows.clear()
            self._rows[key] = lines
        return lines

    def row_at(self, index: int) -> SummaryRow | None:
        """The summary row at a table index, None outside the table."""
        rows = self.summary_rows
        return rows[index] if 0 <= index < len(rows) else None


class MechanismLine(Static):
    """What the server did in the selected row's phase, beside its timing (two lines)."""

    DEFAULT_CSS = """
    MechanismLine {
        height: auto;
        max-height: 5;
        color: $text-muted;
    }
    """

    _rows: tuple[int, int] | None = None
    """The width the last text was shown at and the rows it took (None: not shown yet)."""

    def _show(self, text: Text) -> None:
        """Show `text`; lay the screen out again only if it takes another number of rows
        (moving the table's cursor changes the line, and a layout pass is full-screen work
        a key pressed meanwhile waits for)."""
        width = self.content_size.width
        rows = len(text.wrap(self.app.console, width)) if width > 0 and text.plain else 0
        self.update(text, layout=width <= 0 or (width, rows) != self._rows)
        self._rows = (width, rows) if width > 0 else None

    def show_row(self, row: SummaryRow | None, *, compact: bool = False) -> None:
        """Describe `row` (None: nothing selected); `compact`: the table shows the compact
        row, so its verdict in full, min–max and note come first."""
        if row is None:
            self._show(Text())
            return
        if row.phase == "—":
            # A failed or skipped variant: its reason, which a narrow table may not show.
            self._show(Text(f"{row.variant}: {row.note}") if compact and row.note else Text())
            return
        # A row with no mechanism of its own (a verdict between servers) says what it is.
        told = row.mechanism is None and bool(row.note)
        first, second = (row.note, "") if told else detail_lines(row.mechanism)
        text = Text()
        text.append(f"{row.variant} · {row.phase}: ", style="bold")
        if compact:
            text.append(row.verdict_label(), style="bold")
            if row.min is not None and row.max is not None:
                text.append(f" · min–max {row.min:.3f}–{row.max:.3f} s")
            if row.note and not told:
                text.append(f" · {row.note}")
            text.append("\n")
        text.append(first)
        if second:
            text.append("\n" + second)
        self._show(text)
