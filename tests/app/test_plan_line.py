"""The app says the run's plan in its log before the first trial (issue 35, point 3)."""

from __future__ import annotations

from explorer.lab.store.results import ResultStore
from explorer.server.connect import Target
from explorer.tui.app import PgwxApp
from tests.support.app import connected, log_text, wait_for


async def test_the_app_says_the_plan_before_the_first_trial(
    pg18: Target, store: ResultStore
) -> None:
    async with PgwxApp(target=pg18, store=store).run_test(size=(120, 36)) as pilot:
        lab = await connected(pilot)
        panel = lab.knob_panel
        panel.choose_profile("quick-demo")
        panel.select("scale").value = 0.01
        await pilot.pause()
        await pilot.press("r")
        # log_text drops whitespace (wrapped lines still match).
        # The panel's `r` runs the one variant chosen: nothing to compare, and it says so.
        await wait_for(pilot, lambda: "Plan:looksatrounds5,8" in log_text(lab), 20)
        assert "onevariant,nothingtocompareitwith" in log_text(lab)
        assert lab.view.status != "finished"  # said at the run's start, before its trials
        await wait_for(pilot, lambda: lab.view.status in ("finished", "failed", "cancelled"), 180)
