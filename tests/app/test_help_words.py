"""The help says what the keys do in the session at hand (issue 39): a replay's help is not
titled "live" and its `q` cancels nothing."""

from __future__ import annotations

from pathlib import Path

from explorer.lab.store.replay import ReplaySource
from explorer.lab.store.results import ResultStore
from explorer.tui.app import PgwxApp
from explorer.tui.screens.help import HelpText


async def test_a_replays_help_says_replay_and_its_q_cancels_nothing(tmp_path: Path) -> None:
    app = PgwxApp(replay=ReplaySource([]), store=ResultStore(tmp_path / "r.sqlite"))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause(0.1)
        body = app.screen.query_one("#help-body")
        assert "replayed" in str(body.border_title) and "live" not in str(body.border_title)
        text = str(app.screen.query_one(HelpText).source)
        quit_line = next(line for line in text.splitlines() if line.startswith("- `q`"))
        assert "Quit the replay" in quit_line and "cancel" not in quit_line, quit_line


async def test_a_live_sessions_help_says_q_cancels_the_run(tmp_path: Path) -> None:
    app = PgwxApp(dsn="postgresql://u@/db?host=/nonexistent", store=ResultStore(tmp_path / "r"))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause(0.1)
        body = app.screen.query_one("#help-body")
        assert "live" in str(body.border_title)
        text = str(app.screen.query_one(HelpText).source)
        quit_line = next(line for line in text.splitlines() if line.startswith("- `q`"))
        assert "cancelled and the server put back" in quit_line, quit_line


async def test_a_replays_duration_pane_reads_the_players_speed(tmp_path: Path) -> None:
    """The round plan's time left is the replay's (`replayed_plan`): the pane has the player."""
    from explorer.tui.widgets.duration import DurationPane

    app = PgwxApp(replay=ReplaySource([]), store=ResultStore(tmp_path / "r.sqlite"))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(0.1)
        pane = app.lab.query_one(DurationPane)
        assert pane.player is not None and pane.player is app.lab.controller.player
        pane.player.speed = 16
        assert pane._plan_shown("round 7 of ≤ 30 · ~4 min left") == "round 7 of ≤ 30 · ~15 s left"
