"""A pane key (`1`–`4`) restyles the panes it touches, not every widget inside them.

Textual restyles a node's whole subtree when its classes or focus change; with a
`:focus-within` border and class-driven pane display that was ~290 nodes per key press (the
knob panel's ~90 each time), a third of the key's latency over SSH. The lab restyles the pane
alone; these tests count what a press restyles and check the focused pane still lights up.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.style import Style
from textual.strip import Strip

from explorer.tui.glyphs import ascii_mode
from explorer.tui.keys import PANES
from explorer.tui.widgets.duration import DurationPane
from explorer.tui.widgets.headline import Headline
from explorer.tui.widgets.results_table import ResultsTable
from explorer.tui.widgets.tabs import PaneTabs
from tests.support.app import replay_app, settle
from tests.support.costs import restyled as count_restyled

MOST_NODES_PER_KEY = 30
"""A press moves the focus and marks two panes: a handful of nodes, never a pane's subtree."""


@pytest.mark.parametrize("size", [(120, 36), (80, 24), (100, 30)])
async def test_a_pane_key_restyles_a_handful_of_nodes(
    tmp_path: Path, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    async with replay_app(tmp_path, 165).run_test(size=size) as pilot:
        await settle(pilot)
        restyled = count_restyled(monkeypatch)
        for key in "1234121":
            restyled.clear()
            await pilot.press(key)
            await pilot.pause()
            assert 0 < len(restyled) <= MOST_NODES_PER_KEY, (key, size, len(restyled))


@pytest.mark.parametrize("size", [(120, 36), (100, 30)])
async def test_keys_leave_hidden_tabs_alone_and_the_tabs_follow_when_shown(
    tmp_path: Path, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the grid and the presenter layout the tabs are hidden, yet 1–4 and the chart keys
    set the hidden tab bar's tab, which restyled its tabs and underline (a fifth of `4`).
    Now they leave it be; when the terminal narrows and the tabs show, their tab is the
    pane the keys chose, and its pane is the one shown."""
    async with replay_app(tmp_path, 165).run_test(size=size) as pilot:
        await settle(pilot)
        lab = pilot.app.lab
        await pilot.press("2")  # the focus leaves where the app put it at the start
        await pilot.pause()
        restyled = count_restyled(monkeypatch)
        for key in "4i1w4":
            await pilot.press(key)
            await pilot.pause()
        assert not [n for n in restyled if isinstance(n, PaneTabs)]
        assert lab.current_pane() == "results"
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        await pilot.pause()
        assert lab.query_one(PaneTabs).active == "results"
        shown = [
            n
            for n in ("knobs", "duration", "activity", "results")
            if lab.query_one(f"#{n}").display
        ]
        assert shown == ["results"]
        await pilot.press("2")
        await pilot.pause()
        assert lab.query_one(PaneTabs).active == "duration"


async def test_the_pane_holding_the_focus_has_the_bright_border(tmp_path: Path) -> None:
    async with replay_app(tmp_path, 165).run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        lab = pilot.app.lab
        panes = {name: lab.query_one(f"#{name}") for name in ("knobs", "duration", "results")}
        bright = pilot.app.current_theme.to_color_system().generate()["border"]
        for key, name in (("1", "knobs"), ("2", "duration"), ("4", "results"), ("1", "knobs")):
            await pilot.press(key)
            await pilot.pause()
            assert [n for n, p in panes.items() if p.has_class("-focused")] == [name]
            colours = {n: p.styles.border.top[1].hex for n, p in panes.items()}
            assert colours[name] == bright.upper() or colours[name] == bright
            assert all(c != colours[name] for n, c in colours.items() if n != name)
        # Tab within the results pane (or out of it) keeps the mark on the pane it lands in.
        await pilot.press("tab")
        await pilot.pause()
        holder = lab._pane_of(lab.focused)
        assert holder is not None and holder.has_class("-focused")
        assert sum(p.has_class("-focused") for p in lab.query(".pane")) == 1


async def test_the_end_card_brings_the_headline_without_restyling_the_screen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`-card` on the screen shows the presenter's big verdict; the class is the headline's
    business alone, and restyling the whole screen for it held a key back ~150 ms."""
    quick_demo = Path(__file__).parents[1] / "fixtures" / "quick-demo.json"
    async with replay_app(tmp_path, fixture=quick_demo).run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        lab = pilot.app.lab
        headline = lab.query_one(Headline)
        card = lab.query_one(DurationPane).card
        assert lab.has_class("-present", "-card") and headline.region.height > 0
        restyled = count_restyled(monkeypatch)
        for shown in (False, True, False, True):
            restyled.clear()
            card.display = shown
            lab.sync_headline()
            await pilot.pause()
            assert lab.has_class("-card") == shown
            assert (headline.region.height > 0) == shown
            assert len(restyled) <= MOST_NODES_PER_KEY, len(restyled)


def look(table: ResultsTable) -> tuple[object, ...]:
    """What the table's styles make of it: its own rules and each component's style."""
    components = sorted(table.COMPONENT_CLASSES)
    return (
        table.styles.base.get_rules(),
        table.rich_style,
        [table.get_component_styles(name).rich_style for name in components],
    )


async def test_the_results_table_works_its_styles_out_once_per_look(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DataTable worked its styles out on each focus change — a dozen component classes,
    each matched against every rule: 2–4 ms of `4` at 80x24, and again on leaving it. The
    results table keeps them per look (focused or not, its classes and its ancestors'), and
    what it puts back is what a fresh restyle gives."""
    async with replay_app(tmp_path, 165).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        lab = pilot.app.lab
        table = lab.query_one(ResultsTable)
        for key in "4141":  # each look once (the panes' marks settle too)
            await pilot.press(key)
            await pilot.pause()
        restyled = count_restyled(monkeypatch)
        looks: dict[bool, tuple[object, ...]] = {}
        for key in "4141":
            await pilot.press(key)
            await pilot.pause()
            assert lab.current_pane() == ("results" if key == "4" else "knobs")
            looks[table.has_focus] = look(table)
        assert table not in restyled
        assert set(looks) == {True, False} and looks[True] != looks[False]  # the cursor's
        for key in "41":
            await pilot.press(key)
            await pilot.pause()
            pilot.app.stylesheet.update_nodes([table])  # fresh, as DataTable would
            assert look(table) == looks[table.has_focus]


async def test_a_pane_key_repaints_one_tab_bar_and_a_click_on_a_name_goes_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Textual's Tabs was six widgets: each pane key at 80x24 restyled the old and the new
    tab and repainted the bar, every tab and the underline (~5 ms of a key's ~40). The tab
    bar is one widget, restyled by no key and drawn once; it lights the pane the key
    chose and marks the rule under its name; a click on a name goes there as its key does."""
    async with replay_app(tmp_path, 165).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        lab = pilot.app.lab
        tabs = lab.query_one(PaneTabs)
        restyled = count_restyled(monkeypatch)
        drawn: list[str] = []
        draw = PaneTabs._draw

        def drawing(bar: PaneTabs, base: Style) -> list[Strip]:
            drawn.append(bar.active)
            return draw(bar, base)

        monkeypatch.setattr(PaneTabs, "_draw", drawing)
        for key, pane in zip("1234", PANES, strict=True):
            restyled.clear()
            drawn.clear()
            await pilot.press(key)
            await pilot.pause()
            assert tabs.active == pane and lab.current_pane() == pane
            assert tabs not in restyled
            assert drawn == [pane]  # drawn once, for this pane
            names, rule = (strip.text for strip in tabs.render_lines(tabs.region.reset_offset))
            label = f" {pane.title()} "
            start, heavy = names.index(label), "=" if ascii_mode() else "━"
            assert rule[start : start + len(label)] == heavy * len(label)
            assert rule.count(heavy) == len(label)  # under this name alone
        await pilot.click(PaneTabs, offset=(names.index("Duration"), 0))
        await pilot.pause()
        assert lab.current_pane() == "duration" and tabs.active == "duration"
        assert lab.focused is lab.main_widget("duration")  # as `2` goes there


@pytest.mark.parametrize("size", [(80, 24), (100, 30)], ids=["80x24-tab", "100x30-present"])
async def test_a_pane_key_restyles_each_node_once(
    tmp_path: Path, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pane key marks one pane current and focused and unmarks another: each change was a
    restyle of its own (its tab, its focus mark, then its own focus), two or three per pane.
    Each node is now restyled once a key, and a pane's own focus restyles nothing — no rule
    styles a pane by its focus, which a fresh restyle of each focused pane shows here."""
    async with replay_app(tmp_path, 165).run_test(size=size) as pilot:
        await settle(pilot)
        lab = pilot.app.lab
        restyled = count_restyled(monkeypatch)
        for key in "1234i21w4":
            restyled.clear()
            await pilot.press(key)
            await pilot.pause()
            await pilot.pause()
            assert restyled, key
            twice = {node for node in restyled if restyled.count(node) > 1}
            assert not twice, (key, twice)
        for pane in lab.query(".pane"):
            if not pane.can_focus:
                continue  # the results pane: its table takes the focus
            lab.set_focus(pane)
            await pilot.pause()
            assert pane.has_focus and pane.has_class("-focused")
            look = pane.styles.base.get_rules()
            pilot.app.stylesheet.update_nodes([pane])
            assert pane.styles.base.get_rules() == look, pane
