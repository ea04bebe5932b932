"""Driving the app in a pilot: waiting on a condition, the connected lab, the log, a replay.

A replay of the recorded durability run needs no server and no clock; `settle` waits until
every pane has drawn it (the snapshots and their neighbours use both).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from textual.app import App
from textual.pilot import Pilot

from explorer.lab.store.replay import ReplaySource
from explorer.lab.store.results import ResultStore
from explorer.tui.app import PgwxApp
from explorer.tui.screens.lab import LabScreen
from explorer.tui.widgets.summary import SummaryCard
from tests.support.paths import DURABILITY

FIXTURE = DURABILITY


def rows_of(app: App[object]) -> list[str]:
    """The screen's rows as the terminal shows them."""
    return ["".join(s.text for s in strip) for strip in app.screen._compositor.render_strips()]


async def wait_for(pilot: Pilot[int], check: Callable[[], bool], timeout: float = 60.0) -> None:
    """Let the app run until `check()` holds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {check}")
        await pilot.pause(0.05)


async def connected(pilot: Pilot[int]) -> LabScreen:
    app = pilot.app
    assert isinstance(app, PgwxApp)
    await wait_for(pilot, lambda: app.caps is not None, 20)
    return app.lab


def log_text(lab: LabScreen) -> str:
    """The log without whitespace, so wrapped lines still match."""
    lines = lab.query_one("#log").lines  # type: ignore[attr-defined]
    return "".join("".join(line.text for line in lines).split())


def replay_app(tmp_path: Path, upto: int | None = None, fixture: Path = FIXTURE) -> PgwxApp:
    source = ReplaySource.from_file(fixture)
    if upto is not None:
        source = source.upto(upto)
    # ascii=False: the same images whatever locale the tests run under.
    return PgwxApp(replay=source, store=ResultStore(tmp_path / "results.sqlite"), ascii=False)


async def settle(pilot: Pilot[int]) -> None:
    """Wait until the replay has been fed and every pane has drawn it."""
    app = pilot.app
    await app.workers.wait_for_complete()
    await pilot.pause(0.6)
    # On a loaded machine a late layout pass (a caption measured again, a chart given its
    # final width) can land after the pause; a snapshot taken then shows the chart bucketed
    # for the old width. Wait until two screenshots a moment apart agree (at most ~3 s more).
    shot = app.export_screenshot()
    for _ in range(15):
        await pilot.pause(0.2)
        again = app.export_screenshot()
        if again == shot:
            return
        shot = again


async def matrix_to_servers_card(pilot: Pilot[int], lab: LabScreen) -> SummaryCard:
    """With two servers in the knob panel: press `m` and wait until the run on both has
    finished and its servers' card is shown (the card, for the caller to read)."""
    await wait_for(pilot, lambda: len(lab.knob_panel.server_boxes) == 2, 30)
    await pilot.pause(0.3)
    await pilot.press("m")
    await wait_for(pilot, lambda: lab.view.status == "running", 30)
    await wait_for(pilot, lambda: lab.view.status == "finished", 240)
    card = lab.query_one(SummaryCard)
    await wait_for(pilot, lambda: card.display and card.servers is not None, 60)
    await pilot.pause(0.5)
    return card
