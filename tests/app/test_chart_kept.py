"""A chart key builds nothing in its frame when the chart's data did not change since it was
drawn, or when it was drawn a moment ago (issue 39, point 7).

Each `i`, `w`, `l` rebuilt its chart with plotext, 10-18 ms at 160x45 on a quiet machine, even
when nothing had come since that chart was last drawn (a paused or finished run, keys faster
than the samples). The chart keeps the last few specs' lines; new data is built as before.
Counted, not timed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.screen import Screen

import explorer.tui.widgets.chart as chart_module
from explorer.tui.widgets.activity import ActivityPane
from explorer.tui.widgets.chart import TimeChart
from tests.support.app import replay_app, settle
from tests.support.costs import screen_updates


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
        for key in "il":
            await pilot.press(key)
            await pilot.pause(0.3)
        assert chart.builds == builds + 2  # i and l: each with the new sample, once
        assert "now 123.0 MiB/s" in pilot.app.export_screenshot().replace("&#160;", " ")


def first_frames(monkeypatch: pytest.MonkeyPatch, chart: TimeChart) -> list[tuple[int, str]]:
    """The chart's builds and its lines as each screen update after this is made."""

    def drawn(_app: App[object], _screen: Screen[object], _renderable: Any) -> tuple[int, str]:
        lines = "\n".join(chart.render_line(y).text for y in range(chart.size.height))
        return chart.builds, lines

    return screen_updates(monkeypatch, drawn)


async def test_a_chart_key_shows_the_view_as_just_drawn_and_its_new_data_after_the_frame(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """During a run every chart key had new samples to build (6-11 ms of its ~22 at 160x45):
    a view drawn within RECENT_S seconds is shown as it was in the key's frame, and built
    with the new samples just after it. An older one is built in the key's frame."""
    async with replay_app(tmp_path).run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        lab = pilot.app.lab
        assert lab._timer is not None
        lab._timer.stop()
        pane = lab.query_one(ActivityPane)
        chart = pane.chart
        for key in "lw":  # each drawn now, w on screen
            await pilot.press(key)
            await pilot.pause(0.2)
        await pilot.press("l")
        await pilot.pause(0.2)
        before = "\n".join(chart.render_line(y).text for y in range(chart.size.height))
        await pilot.press("w")
        await pilot.pause(0.2)
        act = pane.view.activity
        act.add(act.wal[-1][0] + 1.0, {"wal_bytes_per_s": 123.0 * 2**20})  # a new top
        pane.data_changed()
        await pilot.pause(0.3)  # the caption, and w built for the new sample
        builds = chart.builds
        frames = first_frames(monkeypatch, chart)
        await pilot.press("l")
        await pilot.pause(0.3)
        assert frames, "no screen update after l"
        assert frames[0] == (builds, before)  # the key's frame: as drawn, no build
        assert chart.builds == builds + 1  # just after it, the new sample
        after = "\n".join(chart.render_line(y).text for y in range(chart.size.height))
        assert after != before  # the time axis runs to the new sample

        # Drawn longer ago than RECENT_S: built in the key's own frame.
        monkeypatch.setattr(chart_module, "RECENT_S", 0.0)
        act.add(act.wal[-1][0] + 1.0, {"wal_bytes_per_s": 77.0 * 2**20})
        pane.data_changed()
        await pilot.press("w")
        await pilot.pause(0.5)
        builds = chart.builds
        frames.clear()
        await pilot.press("l")
        await pilot.pause(0.3)
        assert frames and frames[0][0] == builds + 1
        assert chart.builds == builds + 1


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
