"""Replaying a hostile recording in the app draws its names as text (issue 19 item 3).

Textual strips only BEL, BS, VT, FF and CR from what it draws: an ESC in a variant name went
to the terminal, set its title and cleared most of the screen. Every cell of the screen, the
results table, the log, the titles and the header must hold no control
character, and show the names spelled as visible escapes.
"""

from __future__ import annotations

from pathlib import Path

from explorer.lab.store.replay import ReplaySource
from explorer.lab.store.results import ResultStore
from explorer.text import printable
from explorer.tui.app import PgwxApp
from tests.support.app import wait_for
from tests.support.hostile import CONTROL, HOSTILE, hostile_recording


def _no_control(where: str, text: str) -> None:
    found = CONTROL.search(text)
    assert found is None, (
        f"{where}: {found.group()!r} in {text[max(found.start() - 80, 0) :][:200]!r}"
    )


async def test_replayed_names_never_reach_the_terminal_raw(tmp_path: Path) -> None:
    path = hostile_recording(tmp_path)
    store = ResultStore(tmp_path / "r.sqlite")
    app = PgwxApp(replay=ReplaySource.from_file(path, speed=0), store=store)
    async with app.run_test(size=(160, 48)) as pilot:
        lab = app.lab
        await wait_for(pilot, lambda: lab.view.status == "finished", 30)
        await pilot.pause(0.3)
        screen = app.export_screenshot()
        _no_control("replay screen", screen)
        shown = screen.replace("&#160;", " ")
        assert printable(HOSTILE["logged"])[:12] in shown  # the results table's name
        assert "title \\x1b[31mred" in shown  # the header's title
        _no_control("titles", f"{app.title} {app.sub_title} {app.screen.title}")
    store.close()
