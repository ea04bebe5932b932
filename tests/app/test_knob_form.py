"""The knob panel works as a form: arrows move between knobs, Enter opens one, and a knob
the chosen workload does not follow is struck out with the reason (issue 39)."""

from __future__ import annotations

from textual.widgets import OptionList, Static

from explorer.lab.store.results import ResultStore
from explorer.models import FkTiming, TableKind, Toast
from explorer.server.connect import Target
from explorer.tui.app import PgwxApp
from explorer.tui.widgets.knobs import KnobSelect
from tests.support.app import connected


async def test_arrows_move_between_knobs_and_enter_opens_one(
    pg18: Target, store: ResultStore
) -> None:
    async with PgwxApp(target=pg18, store=store).run_test(size=(80, 24)) as pilot:
        lab = await connected(pilot)
        panel = lab.knob_panel
        panel.choose_profile("quick-demo")
        await pilot.press("1")
        await pilot.pause()
        assert pilot.app.focused is panel.select("profile")
        await pilot.press("down")
        await pilot.pause()
        # ↓ went to the next knob; it did not open the workload list nor change the workload
        assert pilot.app.focused is panel.select("scale")
        assert not panel.select("profile").expanded
        assert panel.select("profile").value == "quick-demo"
        await pilot.press("down", "down")
        await pilot.pause()
        assert pilot.app.focused is panel.select("fk")
        await pilot.press("up")
        await pilot.pause()
        assert pilot.app.focused is panel.select("table_kind")
        await pilot.press("enter")
        await pilot.pause()
        table_kind = panel.select("table_kind")
        assert table_kind.expanded
        await pilot.press("down", "enter")
        await pilot.pause()
        assert not table_kind.expanded
        assert table_kind.value is TableKind.UNLOGGED
        assert lab.choice is not None and lab.choice.knobs.table_kind is TableKind.UNLOGGED


async def test_a_knob_the_workload_does_not_follow_is_struck_with_its_reason(
    pg18: Target, store: ResultStore
) -> None:
    async with PgwxApp(target=pg18, store=store).run_test(size=(120, 36)) as pilot:
        lab = await connected(pilot)
        panel = lab.knob_panel
        panel.choose_profile("quick-demo")  # table-kind: no foreign key, no toastable column
        await pilot.pause()
        fk = panel.select("fk")
        assert "no foreign key" in fk.unavailable[FkTiming.DEFERRED]
        # said on the knob's own row (every knob must still fit), the sentence in its tooltip
        assert fk.shown_label == "none · no FK", fk.shown_label
        assert not panel.query_one("#why-fk", Static).display
        assert fk.tooltip is not None and "changes nothing" in str(fk.tooltip)
        # shown struck out in the list, and it cannot be picked there
        overlay = fk.query_one("SelectOverlay", OptionList)
        for value in (FkTiming.IMMEDIATE, FkTiming.DEFERRED, FkTiming.AFTER_LOAD):
            assert overlay.get_option_at_index(fk.values.index(value)).disabled
        assert not overlay.get_option_at_index(fk.values.index(FkTiming.NONE)).disabled
        assert lab.choice is not None and lab.choice.knobs.fk is FkTiming.NONE
        assert Toast.LZ4 in panel.select("toast").unavailable
        # the restore load has a foreign key but no table whose kind a variant sets
        panel.choose_profile("fk-timing-restore")
        await pilot.pause()
        assert FkTiming.DEFERRED not in fk.unavailable
        assert "no table whose kind" in panel.select("table_kind").unavailable[TableKind.UNLOGGED]


def test_every_select_of_the_panel_opens_only_on_enter_or_space() -> None:
    keys = {key for b in KnobSelect.BINDINGS for key in b.key.split(",")}  # type: ignore[union-attr]
    assert {"up", "down"} <= keys
    opening = {
        key
        for b in KnobSelect.BINDINGS
        if b.action == "show_overlay"  # type: ignore[union-attr]
        for key in b.key.split(",")  # type: ignore[union-attr]
    }
    assert opening == {"enter", "space"}
