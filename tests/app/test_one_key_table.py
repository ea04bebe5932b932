"""One key table: every key of the lab is in its footer bindings, the palette and the help.

The bindings, the command palette's entries and the help screen's list are all made from
`explorer.tui.keys.LAB_KEYS`; these tests read what the running app actually offers, so a
key that one of them drops (or a list typed by hand again) fails here.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from textual.binding import Binding

from explorer.lab.store.replay import ReplaySource
from explorer.lab.store.results import ResultStore
from explorer.tui.app import PgwxApp
from explorer.tui.commands import LabCommands
from explorer.tui.keys import LAB_KEYS
from explorer.tui.screens.help import HelpScreen, HelpText
from explorer.tui.screens.lab import LabScreen


def _bindings() -> list[Binding]:
    return [b for b in LabScreen.BINDINGS if isinstance(b, Binding)]


def test_the_screen_binds_every_key_of_the_table_and_can_run_it() -> None:
    bindings = _bindings()
    assert [(b.key, b.action, b.id) for b in bindings] == [
        (k.key, k.action, k.id) for k in LAB_KEYS
    ]
    assert len({b.id for b in bindings}) == len(bindings) == 28  # v, the sweep view, is the 28th
    for binding in bindings:
        assert hasattr(LabScreen, f"action_{binding.action.split('(')[0]}"), binding.action


async def test_every_binding_is_in_the_palette_and_the_help(tmp_path: Path) -> None:
    app = PgwxApp(replay=ReplaySource([]), store=ResultStore(tmp_path / "r.sqlite"))
    async with app.run_test(size=(120, 36)) as pilot:
        lab = app.lab
        hits = [hit async for hit in LabCommands(lab).discover()]
        palette: dict[str, str] = {}
        for hit in hits:
            command = hit.command
            if isinstance(command, partial) and command.func == lab.run_action:
                palette[command.args[0]] = hit.help or ""
        await pilot.press("question_mark")
        await pilot.pause(0.1)
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one(HelpText).source)
    for key in LAB_KEYS:
        if not key.applies(replay=True):
            # A live session's keys (r, m, c, the view's space) are not offered in a replay.
            assert key.action not in palette, f"{key.action} is in a replay's palette"
            assert f"**{key.label}** — {key.tooltip}" not in text
            continue
        binding = key.binding()
        shown = binding.key_display or binding.key
        assert binding.action in palette, f"{binding.action} is not in the palette"
        assert palette[binding.action].endswith(f"({shown})"), palette[binding.action]
        # In a replay a key says what it does there (q cancels nothing: `LabKey.says`).
        assert key.says(replay=True) in palette[binding.action]
        assert f"- `{shown}` **{binding.description}** — {key.says(replay=True)}" in text
