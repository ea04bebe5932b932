"""A pane key's first frame shows what it changed: the pane it brings forward, or the border
it lights (issue 39, point 7).

In the presenter layout `1`, `2`, `4` hide the pane beside the chart and show another (on a
narrow terminal, a tab). The display change reached the screen as a layout the pane asks for
when it is next idle (Textual's way): the screen's first update after the key was made before
it, for the focus leaving a pane still shown (the chart), with the old layout, and the pane
the key asked for came a frame later — `4` at 160x45 drew the results ~40-50 ms after the key
instead of ~12. Now the restyle hands the layout to the screen at once, in the key's handler
(`explorer/tui/restyle.py`). What the first frame after the key sends is read here (no time is
asserted).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.screen import Screen

from explorer.tui.screens.lab import LabScreen
from tests.support.app import settle
from tests.support.costs import screen_updates
from tests.support.presenter import FK_TIMING, replay_app

ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
"""Cursor moves, colours (CSI) and links (OSC) in what a frame sends."""
SHOWN = {"1": "Workload", "2": "Duration", "4": "variant"}
"""What each pane key's pane draws (the knob panel's first label, the duration pane's border
title, the results table's first column)."""
GONE = {"1": "variant", "2": "Workload", "4": "Workload"}
"""What the pane shown before the key (the cycle 4 → 1 → 2 → 4) drew and no longer does."""


def first_sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The lab's screen updates from now on: what the terminal is sent, its text without the
    escape sequences."""

    def sent(app: App[object], screen: Screen[object], renderable: Any) -> str | None:
        if not isinstance(screen, LabScreen):
            return None
        return ESCAPES.sub("", renderable.render_segments(app.console))

    return screen_updates(monkeypatch, sent)


@pytest.mark.parametrize(
    ("size", "present"), [((160, 45), True), ((100, 30), None), ((80, 24), None)]
)
async def test_a_pane_keys_first_frame_shows_its_pane(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int], present: bool | None
) -> None:
    async with replay_app(tmp_path, FK_TIMING, present=present).run_test(size=size) as pilot:
        await settle(pilot)
        lab = pilot.app.lab
        assert lab.has_class("-present") is (size != (80, 24))  # asked, or a projector's size
        assert lab._timer is not None
        lab._timer.stop()  # the periodic repaint: the first frame after a key is the key's
        for key in ("4", "1", "2", "4"):
            # Each pane shown once first: a pane's first showing at a size lays out its
            # children (the knob panel's ~90) over a frame or two more, as it should.
            await pilot.press(key)
            await pilot.pause(0.3)
        frames = first_sent(monkeypatch)
        for key in ("1", "2", "4"):
            frames.clear()
            await pilot.press(key)
            await pilot.pause(0.3)
            assert frames, f"no frame after {key}"
            screen = frames[0]
            assert SHOWN[key] in screen, (key, screen)
            assert GONE[key] not in screen, (key, screen)


FOCUSED = {"1": "Knobs", "2": "Duration", "3": "Server activity", "4": "Results"}
"""Each pane's border title, drawn again when a key moves the focus to it (its border lights)."""


async def test_a_pane_keys_first_frame_lights_its_panes_border_in_the_grid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the grid every pane is on screen and `1`-`4` move the focus: the border's repaint,
    asked for by the pane's restyle, came a frame (~40 ms) after the focused widget's own."""
    async with replay_app(tmp_path, FK_TIMING).run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        lab = pilot.app.lab
        assert not lab.has_class("-present") and lab.has_class("-wide")
        assert lab._timer is not None
        lab._timer.stop()
        for key in "1234":
            await pilot.press(key)
            await pilot.pause(0.3)
        frames = first_sent(monkeypatch)
        for key in "1234":
            frames.clear()
            await pilot.press(key)
            await pilot.pause(0.3)
            assert frames, f"no frame after {key}"
            assert FOCUSED[key] in frames[0], (key, frames[0])
