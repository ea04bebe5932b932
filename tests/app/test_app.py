"""The app driven by a pilot against the real bundled PostgreSQL 18: knobs, run, cancel, quit."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import OptionList, Static

from explorer.lab.store.replay import ReplaySource
from explorer.lab.store.results import ResultStore
from explorer.models import RunStarted, SampleTaken, TableKind, Toast
from explorer.server.connect import Target
from explorer.tui.app import PgwxApp
from explorer.tui.controller import RunController
from explorer.tui.screens.help import HelpText
from explorer.tui.screens.lab import LabScreen
from explorer.tui.widgets.activity import ActivityPane
from explorer.tui.widgets.results_table import ResultsTable
from tests.support.app import connected, log_text, wait_for
from tests.support.paths import DURABILITY, ROOT
from tests.support.server import server_state

FIXTURE = DURABILITY


def lab_app(target: Target, store: ResultStore) -> PgwxApp:
    return PgwxApp(target=target, store=store)


async def test_lz4_is_disabled_with_its_reason(pg18: Target, store: ResultStore) -> None:
    async with lab_app(pg18, store).run_test(size=(120, 36)) as pilot:
        lab = await connected(pilot)
        panel = lab.knob_panel
        panel.choose_profile("toast-compression")  # a load with a toastable column
        await pilot.pause()
        toast = panel.select("toast")
        assert "not built" in toast.unavailable[Toast.LZ4]
        # shown, not hidden: the choice is in the list, disabled, and explained twice
        overlay = toast.query_one("SelectOverlay", OptionList)
        index = [v for _, v in toast._options].index(Toast.LZ4)
        assert overlay.get_option_at_index(index).disabled
        why = panel.query_one("#why-toast", Static)
        assert why.display and "not built" in str(why.render())
        assert toast.tooltip is not None and "not built" in str(toast.tooltip)
        # a server knob the bundled server can do stays enabled
        assert not panel.select("fsync").unavailable


async def test_run_variant_fills_the_results(pg18: Target, store: ResultStore) -> None:
    before = await server_state(pg18)
    async with lab_app(pg18, store).run_test(size=(120, 36)) as pilot:
        lab = await connected(pilot)
        panel = lab.knob_panel
        panel.choose_profile("quick-demo")
        panel.select("scale").value = 0.01
        panel.select("table_kind").value = TableKind.UNLOGGED
        table = lab.query_one(ResultsTable)
        assert table.row_count == 0
        await pilot.pause()  # the panel's Changed message reaches the screen
        await pilot.press("r")
        await wait_for(pilot, lambda: lab.view.status == "running", 20)
        assert panel.locked  # knobs cannot change under a run
        await wait_for(pilot, lambda: lab.view.status == "finished", 120)
        await pilot.pause(0.2)
        assert table.row_count > 0
        first = table.get_row_at(0)
        assert str(first[0]) == "unlogged"
        assert not panel.locked
        record = store.load("latest")
        assert record.status == "finished"
        assert [v.name for v in record.profile.variants] == ["unlogged"]
        assert record.trials[0].settings  # read back from the server
        # a second variant lines up in the same table, with a ratio to the first
        panel.select("table_kind").value = TableKind.TEMPORARY
        await pilot.pause()  # the panel's Changed message reaches the screen
        await pilot.press("r")
        await wait_for(pilot, lambda: lab.view.status == "running", 20)
        await wait_for(pilot, lambda: lab.view.status == "finished", 120)
        await pilot.pause(0.2)
        variants = {str(table.get_row_at(n)[0]) for n in range(table.row_count)}
        assert variants == {"unlogged", "temporary"}
        await pilot.press("e")
        exported = list((store.path.parent / "exports").glob("*.md"))
        assert exported and "| unlogged |" in exported[0].read_text()
        assert str(exported[0]) in log_text(lab)
    after = await server_state(pg18)
    assert after == before


async def test_cancel_mid_run_restores_server_settings(pg18: Target, store: ResultStore) -> None:
    before = await server_state(pg18)
    async with lab_app(pg18, store).run_test(size=(120, 36)) as pilot:
        lab = await connected(pilot)
        panel = lab.knob_panel
        panel.choose_profile("quick-demo")
        panel.select("scale").value = 1.0
        panel.select("fsync").value = False
        panel.select("synchronous_commit").value = "off"
        await pilot.pause()  # the panel's Changed message reaches the screen
        await pilot.press("r")
        await wait_for(pilot, lambda: lab.view.phase is not None, 60)
        # mid-run the server really runs with the variant's settings
        conn = await pg18.connect("test")
        try:
            assert await conn.fetchval("SHOW fsync") == "off"
            assert await conn.fetchval("SHOW synchronous_commit") == "off"
        finally:
            await conn.close()
        await pilot.press("c")
        await wait_for(pilot, lambda: not lab.busy(), 60)
        await pilot.pause(0.2)
        assert lab.view.status == "cancelled"
        assert "cancelled" in log_text(lab)
        assert not panel.locked
        assert store.load("latest").status == "cancelled"
    after = await server_state(pg18)
    assert after == before


async def test_quit_mid_run_cancels_and_puts_the_server_back(
    pg18: Target, store: ResultStore
) -> None:
    before = await server_state(pg18)
    app = lab_app(pg18, store)
    async with app.run_test(size=(80, 24)) as pilot:
        lab = await connected(pilot)
        lab.knob_panel.select("scale").value = 1.0
        lab.knob_panel.select("full_page_writes").value = False
        await pilot.pause()  # the panel's Changed message reaches the screen
        await pilot.press("m")
        await wait_for(pilot, lambda: lab.view.phase is not None, 60)
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, 60)
    assert store.load("latest").status == "cancelled"
    assert await server_state(pg18) == before


async def test_replay_fills_the_same_screen(tmp_path: Path) -> None:
    source = ReplaySource.from_file(FIXTURE)
    app = PgwxApp(replay=source, store=ResultStore(tmp_path / "r.sqlite"))
    async with app.run_test(size=(120, 36)) as pilot:
        lab = app.lab
        await wait_for(pilot, lambda: lab.view.status == "finished", 10)
        await pilot.pause(0.2)
        assert lab.query_one(ResultsTable).row_count == len(lab.view.summary) > 0
        started = next(e for e in source.events if isinstance(e, RunStarted))
        label = lab.query_one("#header").label
        assert label.startswith("REPLAY ")
        assert f"on PostgreSQL {started.server.capabilities.version} (bundled)" in label
        assert lab.view.activity.samples == sum(isinstance(e, SampleTaken) for e in source.events)
        await pilot.press("r")  # no server in a replay: says so, does nothing
        assert "replay" in log_text(lab)


async def test_chart_keys_switch_the_activity_view(tmp_path: Path) -> None:
    app = PgwxApp(replay=ReplaySource.from_file(FIXTURE), store=ResultStore(tmp_path / "r.db"))
    async with app.run_test(size=(80, 24)) as pilot:
        lab = app.lab
        await wait_for(pilot, lambda: lab.view.status == "finished", 10)
        pane = lab.query_one("#activity")
        for key, mode in (("i", "io"), ("w", "waits"), ("l", "wal")):
            await pilot.press(key)
            assert pane.mode == mode  # type: ignore[attr-defined]
            # at 80 columns the key opens its tab, when the tab's message has been handled
            await wait_for(pilot, lambda: pane.has_class("-current"), 10)


def test_sample_repaints_replace_each_other_but_events_do_not() -> None:
    sample = SampleTaken(sample={})
    older, newer = RunController.SampleArrived(sample), RunController.SampleArrived(sample)
    assert newer.can_replace(older)
    assert not RunController.EventArrived(sample).can_replace(older)


def test_only_chart_module_imports_textual_plotext() -> None:
    root = ROOT / "explorer"
    importers = sorted(
        str(p.relative_to(root)) for p in root.rglob("*.py") if "textual_plotext" in p.read_text()
    )
    assert importers == ["tui/widgets/chart.py"]


@pytest.mark.parametrize("width", [80, 120])
async def test_help_lists_every_key_of_a_replay(tmp_path: Path, width: int) -> None:
    app = PgwxApp(replay=ReplaySource([]), store=ResultStore(tmp_path / "r.sqlite"))
    async with app.run_test(size=(width, 36)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause(0.1)
        text = str(app.screen.query_one(HelpText).source)
        for key in ("`<`", "`g`", "`i`", "`w`", "`l`", "`e`", "`s`", "`+`", "`?`", "`q`"):
            assert key in text
        for key in ("`r`", "`m`", "`c`", "`R`"):  # a live session's (tests/app/test_keys.py)
            assert key not in text
        assert "client backend counters arrive when it idles" in text
        await pilot.press("escape")
        assert isinstance(app.screen, LabScreen)


async def test_palette_runs_an_action(tmp_path: Path) -> None:
    app = PgwxApp(replay=ReplaySource.from_file(FIXTURE), store=ResultStore(tmp_path / "r.db"))
    async with app.run_test(size=(120, 36)) as pilot:
        lab = app.lab
        await wait_for(pilot, lambda: lab.view.status == "finished", 10)
        await pilot.press("ctrl+p")
        await pilot.pause(0.2)
        await pilot.press(*"chart: wait")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: lab.query_one("#activity").mode == "waits", 5)  # type: ignore[attr-defined]


async def test_screenshot_and_export_say_where(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "r.sqlite")
    app = PgwxApp(replay=ReplaySource.from_file(FIXTURE), store=store)
    async with app.run_test(size=(120, 36)) as pilot:
        lab = app.lab
        await wait_for(pilot, lambda: lab.view.status == "finished", 10)
        await pilot.press("s", "e")
        await pilot.pause(0.2)
        shots = list((tmp_path / "screenshots").glob("*.svg"))
        exports = list((tmp_path / "exports").glob("*.md"))
        assert shots and exports
        assert str(shots[0]) in log_text(lab) and str(exports[0]) in log_text(lab)
        assert "| defaults | copy |" in exports[0].read_text()


async def test_unreachable_server_is_one_sentence(tmp_path: Path) -> None:
    app = PgwxApp(dsn="postgresql://nobody@127.0.0.1:9/x", store=ResultStore(tmp_path / "r.db"))
    async with app.run_test(size=(120, 36)) as pilot:
        lab = app.lab
        await wait_for(pilot, lambda: "failed" in log_text(lab), 20)
        text = log_text(lab)
        assert "Connectingfailed:" in text and "Traceback" not in text
        await pilot.press("r")  # still usable: says why it cannot run
        assert "notconnected:pressRtotrytheserveragain" in log_text(lab)


async def test_pg15_has_lz4_and_says_pg_stat_io_is_missing(
    pg15: Target, store: ResultStore
) -> None:
    async with lab_app(pg15, store).run_test(size=(120, 36)) as pilot:
        lab = await connected(pilot)
        lab.knob_panel.choose_profile("toast-compression")  # a load with a toastable column
        await pilot.pause()
        assert not lab.knob_panel.select("toast").unavailable  # Debian's 15 has lz4
        header = lab.query_one("#header")
        assert "pg_stat_io ✗" in str(header.render())
        await pilot.press("i")
        pane = lab.query_one(ActivityPane)
        assert pane.mode == "io"
        assert "pg_stat_io: not on PG 15" in pane._caption(80).plain


async def test_knob_panel_announces_what_r_runs(tmp_path: Path) -> None:
    app = PgwxApp(replay=ReplaySource([]), store=ResultStore(tmp_path / "r.sqlite"))
    async with app.run_test(size=(120, 36)) as pilot:
        lab = app.lab
        await pilot.pause()
        assert lab.choice is not None and lab.choice.panel is lab.knob_panel
        lab.knob_panel.select("table_kind").value = TableKind.UNLOGGED
        lab.knob_panel.select("scale").value = 0.01
        await pilot.pause()
        assert lab.choice.knobs.table_kind is TableKind.UNLOGGED
        assert lab.choice.scale == 0.01
        assert lab.choice.knobs == lab.knob_panel.knobs()
