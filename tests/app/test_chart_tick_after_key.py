"""The chart's redraw for new data waits one tick when a key's frame is pending (issue 39, 7).

The lab's once-a-second repaint marks the chart dirty; the chart's own 4 Hz timer then
rebuilds it (10-18 ms at 160x45 on a quiet machine, four times that on a loaded one). When
that timer fired just after a key, the key's screen update waited for the build. Now a tick
within `KEY_FRAME` of a key waits, once, until just after the key's frame; a chart key still
draws at once. Counted, not timed (a key counts as recent for `SLOW` seconds here).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import explorer.tui.screens.lab as lab_module
from explorer.tui.widgets.activity import ActivityPane
from explorer.tui.widgets.chart import AFTER_KEY_FRAME
from tests.support.app import replay_app, settle

SLOW = 30.0
"""KEY_FRAME in these tests."""


async def test_the_charts_redraw_waits_for_a_keys_frame_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with replay_app(tmp_path, 165).run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        lab = pilot.app.lab
        assert lab._timer is not None
        lab._timer.stop()
        chart = lab.query_one(ActivityPane).chart
        monkeypatch.setattr(lab_module, "KEY_FRAME", SLOW)
        await pilot.press("3")  # a key that does not redraw the chart
        await pilot.pause()
        for timer in list(chart._timers):
            timer.stop()  # its 4 Hz ticks: only the ones made here, and the waiting one
        draws = chart.draws
        chart._next_draw = 0.0
        chart.mark_dirty()
        chart._tick()  # due while the key's frame may be in the making
        assert chart.draws == draws  # not in the key's frame
        await pilot.pause(AFTER_KEY_FRAME + 0.3)
        assert chart.draws == draws + 1  # just after it (the waiting tick), once
        # Keys held down: every tick is within KEY_FRAME of one, and each waits once.
        chart._next_draw = 0.0
        chart.mark_dirty()
        chart._tick()
        assert chart.draws == draws + 1
        await pilot.pause(AFTER_KEY_FRAME + 0.3)
        assert chart.draws == draws + 2

        # With no key in the last KEY_FRAME seconds the tick redraws at once.
        lab._last_key -= SLOW
        chart._next_draw = 0.0
        chart.mark_dirty()
        chart._tick()
        assert chart.draws == draws + 3

        # A chart key draws at once, however recent.
        await pilot.press("i")
        await pilot.pause()
        assert chart.draws == draws + 4
