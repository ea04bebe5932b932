"""The results table's columns are as wide as their cells as soon as rows are shown
(issue 39): a live run on PG 15 and 18 ended at 120x36 with every column at its header's
width — `none @`, `commi`, `baselin`, and `n` showing `1` of 11 — DataTable's measure of new
cells, left for a moment its message queue runs empty, never made after the last rows came.

Rows of each variant on two servers are shown from a finished replay; with no pause between
`show` and the check, each column already fits its widest cell.
"""

from __future__ import annotations

import copy
from pathlib import Path

from rich.text import Text

from explorer.lab.store.replay import ReplaySource, recordings_dir
from explorer.lab.store.results import ResultStore
from explorer.tui.app import PgwxApp
from explorer.tui.widgets.results_table import ResultsTable, cells
from tests.support.app import wait_for


async def test_columns_fit_their_cells_as_soon_as_rows_are_shown(tmp_path: Path) -> None:
    source = ReplaySource.from_file(recordings_dir() / "fk-timing-restore.pgwx")
    app = PgwxApp(replay=source, store=ResultStore(tmp_path / "r.sqlite"), ascii=False)
    async with app.run_test(size=(120, 36)) as pilot:
        lab = app.lab
        await pilot.press("space", "G")
        await wait_for(pilot, lambda: lab.view.status == "finished", 30)
        await pilot.pause(0.3)
        table = lab.query_one(ResultsTable)
        rows = []
        for label in ("15", "18"):
            for row in lab.view.summary:
                mine = copy.copy(row)
                mine.variant = f"{row.variant} @ {label} with a longer name"
                rows.append(mine)
        table.show(rows)  # a new order: the table is rebuilt, every row new
        widths = {str(c.label): c.content_width for c in table.ordered_columns}
        for row in rows:
            for column, value in zip(table.ordered_columns, cells(row, table.keys), strict=True):
                width = value.cell_len if isinstance(value, Text) else len(value)
                assert widths[str(column.label)] >= width, (str(column.label), value, widths)
