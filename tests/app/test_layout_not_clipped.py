"""Layout that never clips its answer (issue 21): header line 2, the log's wrapped rows, the
knob panel at 120x36 (io_method included, issue 22) and its open lists inside its border.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.text import Text
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import OptionList, Static

from explorer.lab.profiles.catalog import list_profiles
from explorer.lab.store.results import ResultStore
from explorer.models import Capabilities, Profile
from explorer.server.capabilities import probe
from explorer.server.connect import Target
from explorer.tui.app import PgwxApp
from explorer.tui.widgets.header import ServerHeader, short_run
from explorer.tui.widgets.knobs import KNOB_DEFS, KnobPanel
from tests.support.app import connected, replay_app, rows_of, settle, wait_for


# ---------------------------------------------------------------------- header
@pytest.mark.parametrize("width", [80, 100, 120])
async def test_header_line_two_never_cuts_the_run(tmp_path: Path, width: int) -> None:
    async with replay_app(tmp_path).run_test(size=(width, 24)) as pilot:
        await settle(pilot)
        header = pilot.app.lab.query_one(ServerHeader)
        for run in ("fk-timing-restore 155/155 finished", "durability 10/10 cancelled"):
            header.run = run
            header.refresh()
            await pilot.pause(0.1)
            rows = rows_of(pilot.app)[: header.region.height]
            assert any(run in row for row in rows), rows
            assert not any("…" in row and "finis" in row for row in rows), rows


def test_a_long_run_name_is_cut_before_its_count_and_status() -> None:
    text = short_run("a-profile-with-a-very-long-name-indeed 155/155 finished", 30)
    assert text.cell_len <= 30
    assert text.plain.endswith("… 155/155 finished"), text.plain


# ---------------------------------------------------------------------- log
async def test_log_wraps_under_its_message_not_at_column_zero(tmp_path: Path) -> None:
    async with replay_app(tmp_path).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        lab = pilot.app.lab
        path = "/root/.local/share/pgwx/clusters/pg18/sock"
        lab.note(f"connected: PostgreSQL 18.6 at bundled PostgreSQL 18.6 ({path})")
        lab.note("a warning long enough to wrap twice at eighty columns, " * 2, "warning", at=3.5)
        await pilot.pause(0.3)
        log = lab.query_one("#log")
        lines = [strip.text for strip in log.lines]  # type: ignore[attr-defined]
        continuation = 0
        for line in lines:
            # A first row: the clock (9 cells), then the mark; any other row starts under
            # the message, past both — never at column 0.
            if line[9:11] in ("· ", "! ", "✗ "):
                continue
            assert line[:11].strip() == "", line
            continuation += 1
        assert continuation >= 3, lines
        assert any(f"({path})" in line for line in lines), lines  # the path is not split


# ---------------------------------------------------------------------- knob panel
async def caps_of(target: Target, *, owned: bool) -> Capabilities:
    conn = await target.connect("test")
    try:
        return await probe(conn, owned=owned)
    finally:
        await conn.close()


def shipped() -> list[Profile]:
    return [p for _, p in list_profiles() if isinstance(p, Profile)]


class PanelApp(App[None]):
    """The knob panel alone, in a pane as tall as the lab gives it at 120x36 (16 rows)."""

    CSS = "KnobPanel { width: 42; height: 18; border: round $border; padding: 0 1; }"

    def compose(self) -> ComposeResult:
        yield KnobPanel(shipped())


def assert_every_knob_shown(panel: KnobPanel) -> None:
    if panel.max_scroll_y:
        print("\n".join(rows_of(panel.app)[: panel.region.bottom]))
    inside = panel.region.shrink((1, 1, 1, 1))
    # Unlocked, the form may scroll for its last stop, the other settings row (issue 37: one
    # scrolling form, reached with ↓); every knob still shows without scrolling.
    assert panel.scroll_y == 0
    assert panel.max_scroll_y == 0 or not panel.locked, (
        f"{panel.profile.name if panel.profile else ''} scrolls"
    )
    if panel.locked:
        # A run owns the panel: its rows are one read-only text, each knob a line of it.
        screen = rows_of(panel.app)
        for knob in KNOB_DEFS:
            ys = [
                y
                for y in range(inside.y, inside.bottom)
                if screen[y][inside.x : inside.right].strip().startswith(f"{knob.label:<19}")
            ]
            value = panel.select(knob.field).shown_label
            assert len(ys) == 1, (knob.field, screen[inside.y : inside.bottom])
            assert value and value in screen[ys[0]][inside.x : inside.right], (knob.field, value)
        return
    for knob in KNOB_DEFS:
        row = panel.select(knob.field).region
        assert row.height == 1 and inside.contains_region(row), (knob.field, row, inside)


async def test_every_knob_fits_at_120x36_on_the_bundled_18(
    pg18: Target, store: ResultStore
) -> None:
    app = PgwxApp(target=pg18, store=store)
    async with app.run_test(size=(120, 36)) as pilot:
        lab = await connected(pilot)
        panel = lab.knob_panel
        await pilot.pause(0.3)
        for profile in panel.profiles:
            panel.choose_profile(profile)
            await pilot.pause(0.2)
            assert_every_knob_shown(panel)
            panel.set_running(Text("now: a-variant"))  # a run says so in the border title
            await pilot.pause(0.1)
            assert "now: a-variant" in str(panel.border_title)
            assert_every_knob_shown(panel)
            panel.set_running(None)
        # io_method is a knob; what the bundled build lacks is struck out, with the reason
        io = panel.select("io_method")
        assert {"sync", "worker"} <= set(io.values) - set(io.unavailable)
        if "io_uring" in io.unavailable:
            why = str(panel.query_one("#why-io_method", Static).render())
            assert why.strip() == "✗ io_uring: not built (no liburing)", why
            assert "liburing" in str(io.tooltip)


async def test_an_open_list_stays_inside_the_panel(pg18: Target, store: ResultStore) -> None:
    app = PgwxApp(target=pg18, store=store)
    async with app.run_test(size=(120, 36)) as pilot:
        lab = await connected(pilot)
        panel = lab.knob_panel
        inside = panel.region.shrink((1, 1, 1, 1))
        for field in ("wal_level", "io_method"):
            select = panel.select(field)
            select.focus()
            await pilot.press("enter")
            await pilot.pause(0.3)
            overlay = select.query_one("SelectOverlay", OptionList)
            assert select.expanded and overlay.region.height >= 4
            assert inside.contains_region(overlay.region), (field, overlay.region, inside)
            await pilot.press("escape")
            await pilot.pause(0.1)


async def test_io_method_says_why_not_on_a_server_pgwx_does_not_own(pg18: Target) -> None:
    caps = await caps_of(pg18, owned=False)
    app = PanelApp()
    async with app.run_test(size=(120, 40)) as pilot:
        panel = app.query_one(KnobPanel)
        panel.caps = caps
        await pilot.pause(0.2)
        io = panel.select("io_method")
        current = caps.gucs["io_method"].setting
        assert all(v in io.unavailable for v in io.values if v not in (None, current))
        assert "restart" in str(panel.query_one("#why-io_method", Static).render())


@pytest.mark.pg15
async def test_io_method_is_struck_out_on_15(pg15: Target) -> None:
    caps = await caps_of(pg15, owned=True)
    app = PanelApp()
    async with app.run_test(size=(120, 40)) as pilot:
        panel = app.query_one(KnobPanel)
        panel.caps = caps
        await pilot.pause(0.2)
        io = panel.select("io_method")
        assert set(io.unavailable) == {"sync", "worker", "io_uring"}
        why = str(panel.query_one("#why-io_method", Static).render())
        assert why.strip() == f"✗ io_method: not in PostgreSQL {caps.version}", why


async def test_at_80x24_the_panel_says_how_to_reach_the_knobs_below(pg18: Target) -> None:
    caps = await caps_of(pg18, owned=False)  # every reason shown: more rows than fit

    class Short(PanelApp):
        CSS = "KnobPanel { height: 16; border: round $border; padding: 0 1; }"

    app = Short()
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one(KnobPanel)
        panel.caps = caps
        await pilot.pause(0.3)
        assert panel.max_scroll_y > 0
        assert "below: Tab" in str(panel.border_subtitle), panel.border_subtitle
        await tab_to(pilot, panel, "io_method")
        inside = panel.region.shrink((1, 1, 1, 1))
        assert inside.contains_region(panel.select("io_method").region)
        await pilot.pause(0.2)
        assert not panel.border_subtitle  # nothing left below
        # Under a run the rows are one read-only text in the focused panel: ↓ scrolls it.
        panel.scroll_home(animate=False)
        panel.set_running(Text("now: a-variant"))
        await pilot.pause(0.3)
        assert pilot.app.focused is panel
        assert str(panel.border_subtitle).endswith("below: ↓"), panel.border_subtitle
        for _ in range(panel.max_scroll_y):
            await pilot.press("down")
        await pilot.pause(0.2)
        assert not panel.border_subtitle
        assert any(row.strip("│ ").startswith("io_method") for row in rows_of(app))


async def tab_to(pilot: Pilot[None], panel: KnobPanel, field: str) -> None:
    for _ in range(len(KNOB_DEFS) + 3):
        if pilot.app.focused is panel.select(field):
            await pilot.pause(0.2)
            return
        await pilot.press("tab")
        await pilot.pause(0.05)
    raise AssertionError(f"Tab never reached {field}")


async def test_a_recording_without_io_method_does_not_claim_it_is_missing(
    tmp_path: Path,
) -> None:
    # The durability recording's server was probed before pgwx read io_method: unknown there.
    async with replay_app(tmp_path).run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        panel = pilot.app.lab.knob_panel
        assert panel.caps is not None and panel.caps.major >= 18
        assert "io_method" not in panel.caps.gucs
        assert not panel.select("io_method").unavailable
        assert not panel.query_one("#why-io_method", Static).display


@pytest.mark.pg15
async def test_every_knob_fits_at_120x36_with_two_servers(
    pg15: Target, pg18: Target, store: ResultStore
) -> None:
    app = PgwxApp(servers=[pg15, pg18], store=store)
    async with app.run_test(size=(120, 36)) as pilot:
        panel = app.lab.knob_panel
        await wait_for(pilot, lambda: len(panel.server_boxes) == 2, 30)
        await pilot.pause(0.3)
        # The knobs describe the first server checked: 15 (no io_method), then 18 (no lz4).
        for uncheck in (None, 0):
            if uncheck is not None:
                await pilot.click(panel.server_boxes[uncheck])
                await pilot.pause(0.3)
            for profile in panel.profiles:
                panel.choose_profile(profile)
                await pilot.pause(0.2)
                assert_every_knob_shown(panel)
                inside = panel.region.shrink((1, 1, 1, 1))
                for box in panel.server_boxes:
                    assert box.region.height == 1 and inside.contains_region(box.region)
