"""What a chart key press costs: the points plotext is given, and no layout pass."""

from __future__ import annotations

import math
import random
from pathlib import Path

from textual.screen import Screen

from explorer.lab.replay import ReplaySource
from explorer.lab.results import ResultStore
from explorer.tui.app import PgwxApp
from explorer.tui.widgets.activity import ActivityPane
from explorer.tui.widgets.chart import thin
from tests.test_tui import FIXTURE, wait_for


def column_ranges(points: list[tuple[float, float]], columns: int) -> dict[int, tuple[float, float]]:
    """Per screen column, the lowest and highest y drawn there."""
    x0, x1 = points[0][0], points[-1][0]
    out: dict[int, tuple[float, float]] = {}
    for x, y in points:
        at = min(columns - 1, int((x - x0) / (x1 - x0) * columns))
        low, high = out.get(at, (y, y))
        out[at] = (min(low, y), max(high, y))
    return out


def test_thin_keeps_every_columns_extremes_and_the_ends() -> None:
    rng = random.Random(7)
    points = [(t * 0.25, rng.random() * 100 + 50 * math.sin(t / 9)) for t in range(480)]
    thinned = thin(points, 50)
    assert len(thinned) <= 2 * 50 + 2 < len(points)
    assert thinned[0] == points[0] and thinned[-1] == points[-1]
    assert [p[0] for p in thinned] == sorted(p[0] for p in thinned)  # still in time order
    assert column_ranges(thinned, 50) == column_ranges(points, 50)
    short = points[:60]
    assert thin(short, 50) == short  # nothing to gain: untouched


async def test_chart_key_costs_no_layout_pass(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The caption keeps the tallest mode's height, so i / w / l repaint the pane only."""
    app = PgwxApp(replay=ReplaySource.from_file(FIXTURE), store=ResultStore(tmp_path / "r.db"))
    async with app.run_test(size=(120, 36)) as pilot:
        lab = app.lab
        await wait_for(pilot, lambda: lab.view.status == "finished", 10)
        await pilot.pause(0.3)
        layouts: list[int] = []
        original = Screen._refresh_layout

        def counted(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            layouts.append(1)
            return original(self, *args, **kwargs)

        monkeypatch.setattr(Screen, "_refresh_layout", counted)
        pane = lab.query_one(ActivityPane)
        for key, mode in (("i", "io"), ("w", "waits"), ("l", "wal"), ("i", "io")):
            await pilot.press(key)
            await pilot.pause(0.1)
            assert pane.mode == mode
        assert layouts == []
        chart = pane.chart
        assert chart.drawn_spec is not None and "pg_stat_io" in chart.drawn_spec.ylabel
