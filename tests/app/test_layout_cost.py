"""What changes often during a run does not lay the whole screen out again.

A layout pass is full-screen work (10-30 ms at 120x36 on a quiet machine), and a key pressed
meanwhile waits. RichLog sets its virtual size as lines arrive, and Textual lays out the whole
screen on each such change, though the log's own size is fixed; the detail line under the
results asked for one on every cursor move, though it mostly keeps its height.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest
from textual.content import Content
from textual.widgets import Static

from explorer.tui.widgets.log import LabLog
from explorer.tui.widgets.results_table import MechanismLine
from tests.support.app import replay_app, rows_of, settle
from tests.support.costs import layouts as count_layouts
from tests.support.costs import painted


@pytest.mark.parametrize("size", [(120, 36), (80, 24)])
async def test_lines_logged_scroll_the_log_without_a_layout_pass(
    tmp_path: Path, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    async with replay_app(tmp_path, 165).run_test(size=size) as pilot:
        await settle(pilot)
        lab = pilot.app.lab
        log = lab.query_one(LabLog)
        layouts = count_layouts(monkeypatch)
        lines_before = len(log.lines)
        for n in range(12):
            lab.note(f"line number {n} of a dozen")
            await pilot.pause(0.02)
        await pilot.pause(0.2)
        assert layouts == []
        assert len(log.lines) == lines_before + 12
        # Still scrolled to the end: the last line is on the screen, the first is not.
        assert log.scroll_y == log.max_scroll_y > 0
        shot = pilot.app.export_screenshot().replace("&#160;", " ")
        assert "line number 11 of a dozen" in shot and "line number 0 of" not in shot
        if log.styles.scrollbar_size_vertical:  # wide: the scrollbar's thumb follows
            assert log.show_vertical_scrollbar
            assert log.vertical_scrollbar.window_virtual_size == log.virtual_size.height


async def test_moving_the_results_cursor_lays_out_only_when_the_detail_changes_height(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with replay_app(tmp_path).run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        line = pilot.app.lab.query_one(MechanismLine)
        await pilot.press("4")
        await pilot.pause()
        layouts = count_layouts(monkeypatch)
        shown, heights = [], []
        for key in ["down"] * 6 + ["up"] * 6:
            await pilot.press(key)
            await pilot.pause()
            text = str(line.render())
            shown.append(text)
            # Never clipped: the line is as tall as its text at its width.
            content = line.render()
            assert isinstance(content, Content)
            assert line.size.height == min(len(content.wrap(line.content_size.width)), 5)
            heights.append(line.size.height)
        assert len(set(shown)) > 3  # the cursor moved over rows with different details
        changes = sum(a != b for a, b in pairwise(heights))
        # A change of height takes two passes (the second for the sizes the first set).
        assert len(layouts) <= 2 * changes < len(heights)


async def test_the_knob_panel_following_a_matrix_lays_nothing_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each trial of a matrix shows its variant's knobs: the read-only rows change in place
    (and so do the hidden lists' labels, for when the run ends)."""
    async with replay_app(tmp_path, 165).run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        lab = pilot.app.lab
        panel = lab.knob_panel
        assert panel.locked
        variants = {v.name: v.knobs for v in lab.config.replay.profile.variants}
        layouts = count_layouts(monkeypatch)
        for name in ["unlogged", "defaults", "unlogged", "defaults"]:
            panel.show_knobs(variants[name])
            await pilot.pause()
            kind = "unlogged" if name == "unlogged" else "logged"
            shown = [line for line in rows_of(pilot.app) if "Table kind" in line]
            assert len(shown) == 1 and shown[0].split("Table kind")[1].split()[0] == kind
            label = panel.select("table_kind").query_one("SelectCurrent #label")
            assert str(label.render()).strip() == kind  # hidden, ready for the run's end
        assert layouts == []


@pytest.mark.parametrize("size", [(80, 24), (100, 30)], ids=["80x24-tab", "100x30-present"])
async def test_showing_the_knob_panel_lays_the_screen_out_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    """`1` shows the knob panel (a tab at 80x24, beside the chart in the presenter layout):
    one layout pass for it. The panel is resized as it shows; its profile title was set again
    (the same text) on each resize, asking for a second pass of the whole screen; the trials'
    knobs that came while it was hidden were drawn for no width (a reason wrapped at ten
    columns) and drawn again once shown, another pass."""
    async with replay_app(tmp_path, 165).run_test(size=size) as pilot:
        await settle(pilot)
        lab = pilot.app.lab
        panel = lab.knob_panel
        variants = [v.knobs for v in lab.config.replay.profile.variants]
        passes = []
        for n in range(4):
            await pilot.press("2")
            await pilot.pause(0.2)
            panel.show_knobs(variants[n % len(variants)])  # a matrix's trial, meanwhile
            await pilot.pause(0.1)
            layouts = count_layouts(monkeypatch)
            await pilot.press("1")
            await pilot.pause(0.2)
            assert panel.display and panel.region.height > 10  # the panel is on screen
            passes.append(len(layouts))
            monkeypatch.undo()
            inside = rows_of(pilot.app)[panel.region.y + 1 : panel.region.bottom - 1]
            shown = [row.split("│")[1].strip() for row in inside]
            assert shown[1].startswith("Durability")  # the title, still under the workload
            # TOAST says on its row that durability has no toastable column.
            assert any(row.startswith("TOAST") and "no TOAST" in row for row in shown), shown
        assert passes[1:] == [1, 1, 1]  # (the first showing settles sizes: not counted)


@pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
async def test_the_knob_panel_under_a_run_is_painted_as_one_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    """While a run owns the panel its rows are one read-only text: showing it (`1` on a
    narrow terminal) paints the panel and that text, not ~60 labels, lists and rows; the run's
    end gives the lists back, focusable, with the values the user had."""
    async with replay_app(tmp_path, 165).run_test(size=size) as pilot:
        await settle(pilot)
        lab = pilot.app.lab
        panel = lab.knob_panel
        assert panel.locked
        await pilot.press("2")
        await pilot.pause(0.2)
        widgets = painted(monkeypatch)
        await pilot.press("1")
        await pilot.pause(0.2)
        monkeypatch.undo()
        inside = {w for w in widgets if panel in w.ancestors_with_self}  # each once
        assert 1 <= len(inside) <= 4, sorted(type(w).__name__ for w in inside)
        assert pilot.app.focused is panel  # it scrolls; nothing in it can be chosen
        rows = [row.strip("│ ") for row in rows_of(pilot.app)]
        for knob in ("Table kind", "synchronous_commit", "wal_level"):
            assert any(row.startswith(knob) for row in rows), knob
        assert not any("▼" in row for row in rows[panel.region.y : panel.region.bottom])
        panel.set_running(None)
        await pilot.pause(0.2)
        choice = panel.select("table_kind")
        assert choice.region.height == 1 and choice.focusable
        assert not any(
            isinstance(w, Static) and w.id == "knob-view" for w in panel.query("*") if w.display
        )


async def test_a_tab_switch_leaves_the_log_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log keeps its size when `1`-`4` switch tabs: its scroll state is not redone on the
    layout pass (it compared the outer size Textual passes with its content size: never
    equal, so each pass of each tab switch redid it)."""
    from textual.scroll_view import ScrollView

    async with replay_app(tmp_path, 165).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        log = pilot.app.lab.query_one(LabLog)
        redone: list[object] = []
        original = ScrollView._size_updated

        def spy(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            if self is log:
                redone.append(args)
            return original(self, *args, **kwargs)

        monkeypatch.setattr(ScrollView, "_size_updated", spy)
        layouts = count_layouts(monkeypatch)
        for key in "1234":
            await pilot.press(key)
            await pilot.pause(0.1)
        assert len(layouts) >= 4  # a pass per tab
        assert redone == []
        assert log.scroll_y == log.max_scroll_y  # still at its end
        pilot.app.lab.note("a line after the tabs")
        await pilot.pause(0.2)
        shot = pilot.app.export_screenshot().replace("&#160;", " ")
        assert "a line after the tabs" in shot
