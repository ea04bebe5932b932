"""The footer is laid out again only when the keys it shows change, not on every focus move."""

from __future__ import annotations

from pathlib import Path

from explorer.tui.widgets.footer import LabFooter
from tests.support.app import replay_app, settle


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
