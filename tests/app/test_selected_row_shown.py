"""The selected results row stays in sight whatever the line under the table grows to
(issue 39): at 80x24, Enter on the card and ↓ thirty times left the detail describing
`temporary · total` while the last row shown was `temporary delete` — the row had moved
into view before the detail's waits line wrapped and the table shrank under it.

A finished replay of each shipped recording, the results shown, ↓ down every row: after
each press the selected row is drawn on screen, inside the table, above its scrollbar.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from explorer.lab.store.replay import ReplaySource, recordings_dir
from explorer.lab.store.results import ResultStore
from explorer.tui.app import PgwxApp
from explorer.tui.widgets.results_table import MechanismLine, ResultsTable
from tests.support.app import rows_of, wait_for

CASES = [((80, 24), "quick-demo"), ((120, 36), "quick-demo"), ((80, 24), "fk-timing-restore")]
"""Sizes and recordings where the detail under the table changes height down the rows (at
120x36 fk-timing-restore's detail keeps three rows: nothing to show there)."""


@pytest.mark.parametrize(("size", "recording"), CASES, ids=[f"{s[0]}x{s[1]}-{r}" for s, r in CASES])
async def test_the_selected_row_stays_in_sight_as_the_detail_grows(
    tmp_path: Path, size: tuple[int, int], recording: str
) -> None:
    source = ReplaySource.from_file(recordings_dir() / f"{recording}.pgwx")
    app = PgwxApp(replay=source, store=ResultStore(tmp_path / "r.sqlite"), ascii=False)
    async with app.run_test(size=size) as pilot:
        lab = app.lab
        await pilot.press("space", "G")
        await wait_for(pilot, lambda: lab.view.status == "finished", 30)
        await pilot.pause(0.3)
        await pilot.press("4")
        await pilot.pause(0.3)
        table, detail = lab.query_one(ResultsTable), lab.query_one(MechanismLine)
        heights = set()
        for _ in range(table.row_count + 2):
            await pilot.press("down")
            await pilot.pause(0.1)
            heights.add(detail.region.height)
            row = table.summary_rows[table.cursor_row]
            # Screen rows of the table's body: under its header, above its scrollbar.
            body = table.scrollable_content_region
            on_screen = table.region.y + 1 + table.cursor_row - round(table.scroll_y)
            assert body.y + 1 <= on_screen < body.bottom, (
                f"row {table.cursor_row} ({row.variant} {row.phase}) is out of sight: "
                f"drawn rows {body.y + 1}–{body.bottom - 1}, the row at {on_screen}"
            )
            line = rows_of(app)[on_screen]
            pattern = rf"\b{re.escape(row.variant)}\s+{re.escape(row.phase)}\s"
            assert re.search(pattern, line), (row.variant, row.phase, line)
        assert table.cursor_row == table.row_count - 1
        assert len(heights) > 1, "the detail never changed height: the test shows nothing"
