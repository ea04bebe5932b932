"""The keyboard over SSH (issue 21): `? Help` and `q Quit` always in the footer, no key cut
in half, `1`–`4` focusing each pane's main widget, a help that lists only the keys of its
session, and refresh keys named by what they do.

The replay tests need no server (the recorded durability run stands in for a matrix); the
live ones run on the bundled PostgreSQL 18.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets._footer import FooterKey

from explorer.lab.store.results import ResultStore
from explorer.server.connect import Target
from explorer.tui.app import PgwxApp
from explorer.tui.keys import LAB_KEYS
from explorer.tui.screens.help import HelpScreen, HelpText
from explorer.tui.widgets.duration import DurationPane
from explorer.tui.widgets.footer import LabFooter
from explorer.tui.widgets.results_table import ResultsTable
from explorer.tui.widgets.summary import SummaryCard
from explorer.tui.widgets.tabs import PaneTabs
from tests.support.app import connected, replay_app, settle, wait_for

SIZES = [(80, 24), (100, 30), (120, 36), (200, 50)]


def footer_line(app: PgwxApp) -> str:
    """The footer's row as the terminal shows it."""
    footer = app.screen.query_one(LabFooter)
    y = footer.region.y
    strips = app.screen._compositor.render_strips()
    return "".join(segment.text for segment in strips[y])


async def assert_footer_whole(pilot: Pilot[int]) -> str:
    """`? Help` and `q Quit` on the footer row, and every key on it whole (none cut by the
    edge or hidden under the pinned keys); the row's text."""
    app = pilot.app
    assert isinstance(app, PgwxApp)
    await wait_for(pilot, lambda: "Quit" in footer_line(app), 5)  # recomposed after a refresh
    await pilot.pause(0.1)
    footer = app.screen.query_one(LabFooter)
    line = footer_line(app)
    assert line.rstrip().endswith("? Help q Quit") or "? Help  q Quit" in line, line
    pinned = footer.query_one("#footer-pinned")
    for key in footer.query(FooterKey):
        if not key.display or pinned in key.ancestors:
            continue
        region = key.region
        assert region.width > 0, key.key
        assert region.right <= pinned.region.x, f"{key.key_display} is under ? Help: {line}"
        drawn = f"{key.key_display} {key.description}".strip()
        assert drawn in line, f"{drawn!r} is cut: {line!r}"
    return line


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_help_and_quit_stay_in_the_footer_mid_run_and_at_the_end(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    # Mid-run: the replay stops after 60 events, a matrix in its second trial.
    async with replay_app(tmp_path, upto=60).run_test(size=size) as pilot:
        await settle(pilot)
        app = pilot.app
        assert app.lab.view.status == "running"
        await assert_footer_whole(pilot)
        await pilot.press("4")
        await pilot.pause(0.2)
        assert isinstance(app.focused, ResultsTable)
        line = await assert_footer_whole(pilot)
        assert "<> speed" in line or "< Slower" in line
    # The end: the card has the focus and puts `⏎ Table  esc Bars` first.
    async with replay_app(tmp_path).run_test(size=size) as pilot:
        await settle(pilot)
        app = pilot.app
        assert isinstance(app.focused, SummaryCard)
        line = await assert_footer_whole(pilot)
        assert "⏎ Table" in line and "esc Bars" in line


async def test_the_footer_spells_out_the_chart_keys_when_there_is_room(tmp_path: Path) -> None:
    async with replay_app(tmp_path, upto=60).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        line = footer_line(pilot.app)
        assert "i io w waits l wal" in line, line  # not the cryptic "iwl chart"
        # what did not fit is left out whole, and said to be in the help
        footer = pilot.app.screen.query_one(LabFooter)
        assert "screenshot" in footer.left_out and "s Shot" not in line
        await pilot.resize_terminal(200, 50)
        await pilot.pause(0.3)
        wide = footer_line(pilot.app)
        assert "s Shot" in wide and "< Slower" in wide
        assert not footer.left_out


@pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
async def test_number_keys_focus_each_panes_main_widget(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    async with replay_app(tmp_path, upto=60).run_test(size=size) as pilot:
        await settle(pilot)
        app = pilot.app
        lab = app.lab
        expected = {
            "1": lab.knob_panel,  # locked by the replay: the panel itself (it scrolls)
            "2": lab.query_one(DurationPane),  # no card yet: the bars
            "3": lab.query_one("#activity"),
            "4": lab.query_one(ResultsTable),
        }
        for key, widget in expected.items():
            await pilot.press(key)
            await pilot.pause(0.1)
            assert app.focused is widget, (key, app.focused)
            assert widget.region.width > 0, f"{key} focused a hidden widget"
        # `4` then ↓ moves the table's cursor at once: no Tab needed.
        table = lab.query_one(ResultsTable)
        assert table.row_count > 1
        await pilot.press("down")
        assert table.cursor_row == 1
        # Tab never lands on a widget that is not on screen (a hidden tab's).
        for _ in range(6):
            await pilot.press("tab")
            await pilot.pause(0.05)
            focused = app.focused
            assert focused is not None and focused.region.width > 0, focused


async def test_two_focuses_the_end_card_when_it_is_up(tmp_path: Path) -> None:
    async with replay_app(tmp_path).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app = pilot.app
        await pilot.press("4")
        await pilot.pause(0.1)
        await pilot.press("2")
        await pilot.pause(0.1)
        card = app.lab.query_one(SummaryCard)
        assert app.focused is card and card.region.height > 0
        assert app.lab.query_one(PaneTabs).active == "duration"


async def test_a_replays_help_lists_its_keys_once_and_starts_at_the_top(tmp_path: Path) -> None:
    async with replay_app(tmp_path).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause(0.2)
        help_screen = pilot.app.screen
        assert isinstance(help_screen, HelpScreen)
        text = str(help_screen.query_one(HelpText).source)
        key_lines = [line for line in text.splitlines() if line.startswith("- `")]
        keys = [line.split("`")[1] for line in key_lines]
        assert len(keys) == len(set(keys)), keys  # one `space` line, not two
        assert "- `space` **Pause** — Pause or resume the replay" in text
        assert "Freeze the live view" not in text
        for key in LAB_KEYS:
            listed = f"**{key.label}** — {key.says(replay=True)}" in text
            assert listed == key.applies(replay=True), key.id
        # The first row inside the border is the key list's heading, not blank lines.
        body = help_screen.query_one("#help-body")
        strips = help_screen._compositor.render_strips()
        first = "".join(s.text for s in strips[body.region.y + 1])
        assert "Keys" in first, first
        assert "↑ ↓ pick a" in text.replace("**", "")  # how to reach the mechanism


async def test_a_live_sessions_help_and_footer_have_no_replay_keys(
    pg18: Target, store: ResultStore
) -> None:
    app = PgwxApp(target=pg18, store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(pilot)
        await pilot.pause(0.3)
        line = await assert_footer_whole(pilot)
        assert "r Run" in line and "m Matrix" in line
        assert "speed" not in line and "start/end" not in line
        await pilot.press("question_mark")
        await pilot.pause(0.2)
        text = str(app.screen.query_one(HelpText).source)
        for key in LAB_KEYS:
            listed = f"**{key.label}** — {key.says(replay=False)}" in text
            assert listed == key.applies(replay=False), key.id
        assert "- `+` **Refresh faster**" in text and "- `-` **Refresh slower**" in text


async def test_help_and_quit_stay_in_the_footer_during_a_live_matrix(
    pg18: Target, store: ResultStore
) -> None:
    app = PgwxApp(target=pg18, store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        lab = await connected(pilot)
        lab.knob_panel.choose_profile("quick-demo")
        lab.knob_panel.select("scale").value = 0.1
        await pilot.pause()  # the panel's Changed message reaches the screen
        await pilot.press("m")
        await wait_for(pilot, lambda: lab.view.phase is not None, 60)
        await pilot.pause(0.3)
        line = await assert_footer_whole(pilot)
        assert "c Cancel" in line
        await pilot.press("4")
        await pilot.pause(0.3)
        assert isinstance(app.focused, ResultsTable)
        await assert_footer_whole(pilot)
        await pilot.press("c")
        await wait_for(pilot, lambda: not lab.busy(), 60)


async def test_at_80_columns_the_results_pane_says_how_to_reach_the_mechanism(
    tmp_path: Path,
) -> None:
    async with replay_app(tmp_path).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        lab = pilot.app.lab
        results = lab.query_one("#results")
        assert "←→ WAL" in str(results.border_subtitle)
        await pilot.press("4")
        table = lab.query_one(ResultsTable)
        assert table.max_scroll_x > 0  # the mechanism columns are off to the right
        for _ in range(40):
            await pilot.press("right")
        await pilot.pause(0.1)
        assert table.scroll_x > 0, "← → do not reach the columns the hint names"
        await pilot.resize_terminal(120, 36)
        await pilot.pause(0.2)
        assert not results.border_subtitle  # every column on screen: nothing to say
