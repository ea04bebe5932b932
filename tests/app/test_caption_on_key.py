"""A chart key makes the shown mode's spec and caption only (issue 39, point 7).

The caption keeps the height of the tallest mode's, so a chart key measured all three
captions, and with samples come since the last repaint made all three specs again (each
ranking every sample's series). Now the key measures the shown mode and takes the others'
heights as last measured at this width; the next repaint of the live parts measures all
three. Counted, not timed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.tui.widgets.activity import ActivityPane, Mode
from explorer.tui.widgets.chart import ChartSpec
from tests.support.app import replay_app, settle


async def test_a_chart_key_makes_only_the_shown_modes_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with replay_app(tmp_path, 165).run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        lab = pilot.app.lab
        assert lab._timer is not None
        lab._timer.stop()
        pane = lab.query_one(ActivityPane)
        for key in "iwl":
            await pilot.press(key)
            await pilot.pause(0.1)
        height = pane.query_one("#activity-caption").styles.height
        made: list[str] = []
        make = ActivityPane._make_spec

        def spy(self: ActivityPane, mode: Mode) -> ChartSpec:
            made.append(mode)
            return make(self, mode)

        monkeypatch.setattr(ActivityPane, "_make_spec", spy)
        act = pane.view.activity
        act.add(act.wal[-1][0] + 1.0, {"wal_bytes_per_s": 77.0 * 2**20})
        await pilot.press("i")
        await pilot.pause(0.1)
        assert made == ["io"]  # not waits and wal as well
        assert pane.query_one("#activity-caption").styles.height == height
        await pilot.press("l")
        await pilot.pause(0.1)
        assert made == ["io", "wal"]
        assert "now 77.0 MiB/s" in pilot.app.export_screenshot().replace("&#160;", " ")
        lab._last_key -= 60.0  # no key's frame pending
        lab._live_dirty = True  # a sample came
        lab._tick()  # the live parts' repaint measures every mode's caption again
        assert sorted(made) == ["io", "waits", "wal"]
        await pilot.pause(0.1)
        assert pane.query_one("#activity-caption").styles.height == height
