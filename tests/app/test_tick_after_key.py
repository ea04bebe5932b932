"""The periodic repaint of the live parts waits for a key's screen update (issue 39, point 7).

The lab repaints its live parts (the chart rebuilt for new samples, the clock, the log) once
per refresh interval. When that tick fell while a key's frame was being made, the key's frame
waited for the chart's rebuild as well. Now a tick within `KEY_FRAME` of a key waits, once,
until the key's frame is out. These tests count the live repaints (no timing is asserted); a
key counts as recent for `SLOW` seconds here, as the test's own presses take long on a loaded
machine.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import explorer.tui.screens.lab as lab_module
from explorer.tui.screens.lab import AFTER_KEY_FRAME
from explorer.tui.widgets.activity import ActivityPane
from tests.support.app import replay_app, settle

SLOW = 30.0
"""KEY_FRAME in these tests."""


async def test_a_tick_right_after_a_key_waits_for_the_keys_frame(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with replay_app(tmp_path, 165).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        lab = pilot.app.lab
        assert lab._timer is not None
        lab._timer.stop()  # only the ticks made here
        pane = lab.query_one(ActivityPane)
        repaints: list[str] = []
        data_changed = pane.data_changed
        monkeypatch.setattr(
            pane, "data_changed", lambda: (repaints.append("chart"), data_changed())
        )

        monkeypatch.setattr(lab_module, "KEY_FRAME", SLOW)
        await pilot.press("3")
        await pilot.pause()
        repaints.clear()
        lab._live_dirty = True
        lab._tick()  # due while the key's frame is made
        assert repaints == []  # not in the key's frame
        await pilot.pause(AFTER_KEY_FRAME + 0.3)
        assert repaints == ["chart"]  # right after it, once
        assert lab._live_dirty is False

        # With no key in the last KEY_FRAME seconds the tick repaints at once.
        lab._last_key -= SLOW
        lab._live_dirty = True
        lab._tick()
        assert repaints == ["chart", "chart"]


async def test_keys_held_down_never_starve_the_live_parts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tick waits for a key's frame once: keys coming faster than KEY_FRAME (a held key)
    still let each tick repaint, one key's frame later."""
    async with replay_app(tmp_path, 165).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        lab = pilot.app.lab
        assert lab._timer is not None
        lab._timer.stop()
        pane = lab.query_one(ActivityPane)
        repaints: list[str] = []
        data_changed = pane.data_changed
        monkeypatch.setattr(
            pane, "data_changed", lambda: (repaints.append("chart"), data_changed())
        )
        monkeypatch.setattr(lab_module, "KEY_FRAME", SLOW)
        for key in "3iwl":  # keys keep coming: every tick is within KEY_FRAME of one
            await pilot.press(key)
            await pilot.pause()
            repaints.clear()
            lab._live_dirty = True
            lab._tick()
            assert repaints == []
            await pilot.pause(AFTER_KEY_FRAME + 0.3)
            assert repaints == ["chart"]  # it waited once, then repainted
