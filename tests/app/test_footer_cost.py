"""The footer is laid out again only when the keys it shows change, not on every focus move."""

from __future__ import annotations

from pathlib import Path

from textual.widgets._footer import FooterKey

from explorer.lab.store.results import ResultStore
from explorer.server.connect import Target
from explorer.tui.app import PgwxApp
from explorer.tui.widgets.footer import LabFooter
from tests.support.app import connected, replay_app, settle


async def test_moving_the_focus_between_panes_does_not_lay_the_footer_out_again(
    tmp_path: Path,
) -> None:
    async with replay_app(tmp_path, 165).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        footer = pilot.app.lab.query_one(LabFooter)
        before = footer.recomposed
        for key in "2121":
            await pilot.press(key)
            await pilot.pause(0.1)
        # The knob panel and the duration pane show the same keys: nothing to redo.
        assert footer.recomposed == before
        assert "Quit" in str(pilot.app.export_screenshot())
        # (That the footer still follows a real change — the end card's `⏎ Table  esc Bars`
        # — is test_keys.py::test_help_and_quit_stay_in_the_footer_mid_run_and_at_the_end.)


async def test_space_pauses_from_the_workload_choice_so_the_footer_stays_as_it_is(
    tmp_path: Path,
) -> None:
    """In a live session `1` focuses the workload choice, a Select, which took `space` for
    itself: the footer lost `space Pause` there and relaid itself (and the whole screen) on
    every `1` / `2`. `space` now pauses wherever the focus is; Enter opens the Select."""
    async with replay_app(tmp_path, 165).run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        lab = pilot.app.lab
        footer = lab.query_one(LabFooter)
        choice = lab.knob_panel.select("profile")
        choice.disabled = False  # as in a live session between runs
        await pilot.pause()
        before = footer.recomposed
        for _ in range(2):
            choice.focus()
            await pilot.pause(0.1)
            await pilot.press("2")
            await pilot.pause(0.1)
        assert footer.recomposed == before
        choice.focus()
        await pilot.pause()
        player = lab.controller.player
        assert player is not None
        paused = player.paused
        await pilot.press("space")
        await pilot.pause()
        assert player.paused != paused and not choice.expanded
        await pilot.press("enter")
        await pilot.pause()
        assert choice.expanded


async def test_in_a_live_session_pane_keys_leave_the_footer_as_it_is(
    pg18: Target, store: ResultStore
) -> None:
    """Live, `1` focuses the workload choice: the footer lost `space Pause` there (the Select
    took the key), and Textual listed the keys in another order with it focused, so `1` / `2`
    relaid the footer and the whole screen each time. Same keys, same place, no relayout."""
    app = PgwxApp(target=pg18, store=store)
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(pilot)
        await pilot.pause(0.3)
        lab = app.lab
        footer = lab.query_one(LabFooter)
        await pilot.press("2")
        await pilot.pause(0.2)
        before, shown = footer.recomposed, footer_text(footer)
        for key in "1212":
            await pilot.press(key)
            await pilot.pause(0.2)
            assert footer_text(footer) == shown, key
        assert lab.focused is lab.knob_panel.select("profile") or key == "2"
        assert footer.recomposed == before
        assert "space Pause" in shown


def footer_text(footer: LabFooter) -> str:
    """The footer's keys as drawn, left to right."""
    keys = sorted(footer.query(FooterKey), key=lambda k: (k.region.y, k.region.x))
    return "  ".join(f"{k.key_display} {k.description}" for k in keys if k.display)
