"""A chart key back to a chart whose data did not change builds nothing (issue 39, point 7).

Each `i`, `w`, `l` rebuilt its chart with plotext, 10-18 ms at 160x45 on a quiet machine, even
when nothing had come since that chart was last drawn (a paused or finished run, keys faster
than the samples). The chart keeps the last few specs' lines; new data is built as before.
Counted, not timed.
"""

from __future__ import annotations

from pathlib import Path

from explorer.tui.widgets.activity import ActivityPane
from tests.support.app import replay_app, settle


async def test_a_chart_shown_again_with_the_same_data_is_not_built_again(tmp_path: Path) -> None:
    async with replay_app(tmp_path).run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        lab = pilot.app.lab
        assert lab._timer is not None
        lab._timer.stop()  # nothing but the keys
        pane = lab.query_one(ActivityPane)
        chart = pane.chart
        for key in "iwl":  # each mode drawn once
            await pilot.press(key)
            await pilot.pause(0.1)
        builds = chart.builds
        shown: dict[str, list[str]] = {}
        for key in "iwliwl":
            await pilot.press(key)
            await pilot.pause(0.1)
            lines = [strip.text for strip in (chart.render_line(y) for y in range(5))]
            shown.setdefault(key, lines)
            assert lines == shown[key]
        assert chart.builds == builds  # six presses, no plotext build
        assert chart.drawn_spec is not None and "WAL" in chart.drawn_spec.ylabel

        # New data: the chart shown is built again, once, and shows it.
        act = pane.view.activity
        act.add(act.wal[-1][0] + 1.0, {"wal_bytes_per_s": 123.0 * 2**20})
        pane.data_changed()
        await pilot.press("i", "l")
        await pilot.pause(0.1)
        assert chart.builds == builds + 2  # i and l: each with the new sample
        assert "now 123.0 MiB/s" in pilot.app.export_screenshot().replace("&#160;", " ")


async def test_a_resize_builds_the_chart_again(tmp_path: Path) -> None:
    """The kept lines are for one size: another size is built for."""
    async with replay_app(tmp_path).run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        lab = pilot.app.lab
        assert lab._timer is not None
        lab._timer.stop()
        chart = lab.query_one(ActivityPane).chart
        await pilot.press("l")
        await pilot.pause(0.1)
        width = chart.size.width
        builds = chart.builds
        await pilot.resize_terminal(140, 36)
        await pilot.pause(0.3)
        assert chart.size.width != width
        assert chart.builds > builds
        assert all(len(chart.render_line(y).text) == chart.size.width for y in range(3))
