"""Every path draws the same results table (issue 39): the table's shape is decided by the
width it is shown at alone — not by whether it was hidden when a replay jumped, nor by the
size the app had when it was filled.

Each path ends on the same finished replay of the shipped quick-demo recording with the
results pane shown at the same size; the tables drawn must be the same, line for line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot

from explorer.lab.store.replay import ReplaySource, recordings_dir
from explorer.lab.store.results import ResultStore
from explorer.tui.app import PgwxApp
from explorer.tui.widgets.results_table import ResultsTable, layout
from tests.support.app import rows_of, wait_for

SIZES = [(80, 24), (120, 36)]


def _app(tmp_path: Path, name: str) -> PgwxApp:
    source = ReplaySource.from_file(recordings_dir() / "quick-demo.pgwx")
    return PgwxApp(replay=source, store=ResultStore(tmp_path / f"{name}.sqlite"), ascii=False)


async def _drawn(pilot: Pilot[int]) -> list[str]:
    """The results table as drawn, from its first row, after `4` showed it."""
    app = pilot.app
    assert isinstance(app, PgwxApp)
    await pilot.press("4")
    await pilot.pause(0.3)
    table = app.lab.query_one(ResultsTable)
    table.move_cursor(row=0, animate=False)
    table.scroll_to(0, 0, animate=False)
    await pilot.pause(0.3)
    # The shape is the one its width calls for, whatever the path.
    width = table.size.width - table.styles.scrollbar_size_vertical
    assert table.keys == layout(table.summary_rows, width)
    return rows_of(app)[table.region.y : table.region.bottom]


async def _natural_end(pilot: Pilot[int]) -> None:
    app = pilot.app
    assert isinstance(app, PgwxApp)
    await wait_for(pilot, lambda: app.lab.view.status == "finished", 90)
    await pilot.pause(0.3)


async def _jump(pilot: Pilot[int], *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await pilot.pause(0.2)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_replay_jumps_and_resizes_draw_the_natural_ends_table(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    async with _app(tmp_path, "natural").run_test(size=size) as pilot:
        await _natural_end(pilot)
        natural = await _drawn(pilot)
    assert any("insert" in line for line in natural)

    paths = {
        "G at once": ("G",),
        "G, back, G again": ("G", "g", "right_square_bracket", "G"),
        "4 first, then G": ("4", "G"),
    }
    for name, keys in paths.items():
        async with _app(tmp_path, name.replace(" ", "")).run_test(size=size) as pilot:
            await pilot.pause(0.2)
            await _jump(pilot, "space", *keys)  # paused: the jump's moment stays
            await wait_for(pilot, lambda: pilot.app.lab.view.status == "finished", 30)  # type: ignore[attr-defined]
            assert await _drawn(pilot) == natural, name

    other = (120, 36) if size == (80, 24) else (80, 24)
    async with _app(tmp_path, "resized").run_test(size=other) as pilot:
        await _jump(pilot, "space", "G")
        await wait_for(pilot, lambda: pilot.app.lab.view.status == "finished", 30)  # type: ignore[attr-defined]
        await pilot.resize_terminal(*size)
        await pilot.pause(0.5)
        assert await _drawn(pilot) == natural, f"filled at {other}, shown at {size}"


async def test_arrows_move_a_whole_column_and_variant_and_phase_stay(tmp_path: Path) -> None:
    async with _app(tmp_path, "arrows").run_test(size=(80, 24)) as pilot:
        await _jump(pilot, "space", "G")
        await wait_for(pilot, lambda: pilot.app.lab.view.status == "finished", 30)  # type: ignore[attr-defined]
        await _drawn(pilot)
        table = pilot.app.lab.query_one(ResultsTable)  # type: ignore[attr-defined]
        assert table.max_scroll_x > 0, "nothing to scroll at 80x24: the test shows nothing"
        widths = [c.get_render_width(table) for c in table.ordered_columns]
        starts = {sum(widths[2:k]) for k in range(2, len(widths))}
        presses = 0
        while table.scroll_x < table.max_scroll_x:
            await pilot.press("right")
            await pilot.pause(0.1)
            presses += 1
            # each press lands on a column's start (or the end), never mid-column
            assert table.scroll_x in starts or table.scroll_x == table.max_scroll_x
            assert presses <= len(widths), "→ did not reach the last column"
            rows = rows_of(pilot.app)[table.region.y + 1 : table.region.bottom]
            assert any("insert" in row for row in rows), "the phase column scrolled away"
        await pilot.press("left")
        await pilot.pause(0.1)
        assert table.scroll_x < table.max_scroll_x and table.scroll_x in starts
