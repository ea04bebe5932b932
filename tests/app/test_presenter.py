"""The presenter layout (issue 21): bars and one chart side by side, the verdict in large
digits, nothing clipped at a projector's 100x30, and a key to leave it.

Replays of recorded runs (no server, no clock); waits are on conditions, never on time.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Digits, Footer

from explorer.analysis.card import card_lines
from explorer.lab.store.replay import ReplaySource
from explorer.lab.store.results import ResultStore
from explorer.tui.app import PgwxApp
from explorer.tui.glyphs import set_ascii
from explorer.tui.widgets.activity import ActivityPane
from explorer.tui.widgets.bigfigure import big_figure
from explorer.tui.widgets.duration import DurationPane
from explorer.tui.widgets.headline import Headline, big_digits, headline_figure, headline_line
from explorer.tui.widgets.summary import SummaryCard
from explorer.tui.widgets.tabs import PaneTabs
from tests.support.app import wait_for
from tests.support.paths import FIXTURES
from tests.support.presenter import FK_TIMING, finished, replay_app, screen_rows, squeezed

QUICK_DEMO = FIXTURES / "quick-demo.json"
"""quick-demo with five measured rounds: every candidate has a verdict with a ratio."""


@pytest.fixture(autouse=True)
def _unicode_again() -> object:
    """ASCII mode is process-wide: each test starts (and ends) in Unicode."""
    set_ascii(False)
    yield None
    set_ascii(False)


def inside(widget: Widget, screen: Region) -> bool:
    """The widget is drawn, and all of it is on the screen."""
    region = widget.region
    return region.area > 0 and screen.contains_region(region)


async def assert_presented(pilot: Pilot[int], fixture: Path) -> None:
    """Bars (the card) beside the chart, the big verdict, the card and the footer's keys
    all on screen and none of them cut."""
    app = await finished(pilot)
    lab = app.lab
    screen = lab.region
    assert lab.has_class("-present")
    assert not lab.query_one(PaneTabs).display
    duration, activity = lab.query_one(DurationPane), lab.query_one(ActivityPane)
    assert inside(duration, screen) and inside(activity, screen)
    # side by side: the same rows, the bars on the left
    assert duration.region.right <= activity.region.x
    assert duration.region.y == activity.region.y
    assert activity.chart.region.height >= 10  # a chart a room can read

    headline = lab.query_one(Headline)
    assert inside(headline, screen)
    # large type: the 3-row digits, or the 5-row ones on a large terminal
    if big_digits(screen.width, screen.height):
        assert headline.query_one("#headline-big").region.height == 5
    else:
        assert lab.query_one(Digits).region.height == 3
    record = lab.view.record
    assert record is not None
    lines = card_lines(record)
    told = headline_line(lines)
    assert told is not None and told.verdict is not None and told.verdict.ratio is not None

    rows = screen_rows(app)
    text = squeezed("".join(rows))
    words = squeezed(f"{told.variant} {told.verdict.word}")
    assert words in text, f"the headline's verdict is cut: {words!r} not on screen"
    card = lab.query_one(SummaryCard)
    assert inside(card, screen)
    assert duration.max_scroll_y == 0, "the card must fit its pane without scrolling"
    for line in lines:
        assert squeezed(line.variant) in text
        if line.verdict is not None and line.verdict.ratio is not None:
            shown = squeezed(f"{line.verdict.ratio:.2f}×")
            assert shown in text, f"{line.variant}'s ratio {shown} is cut"
            if not line.verdict.too_few:
                assert squeezed(f"{shown} {line.verdict.word}") in text
    footer = rows[-1]
    assert "? Help" in footer.replace("?Help", "? Help")
    assert "q Quit" in footer.replace("qQuit", "q Quit")
    assert inside(lab.query_one(Footer), screen)


@pytest.mark.parametrize("fixture", [QUICK_DEMO, FK_TIMING], ids=["quick-demo", "fk-timing"])
async def test_a_projectors_100x30_gets_the_presenter_layout(tmp_path: Path, fixture: Path) -> None:
    async with replay_app(tmp_path, fixture).run_test(size=(100, 30)) as pilot:
        await assert_presented(pilot, fixture)


async def test_present_at_120x36(tmp_path: Path) -> None:
    async with replay_app(tmp_path, FK_TIMING, present=True).run_test(size=(120, 36)) as pilot:
        await assert_presented(pilot, FK_TIMING)


async def test_without_present_120x36_keeps_the_mockups_panes(tmp_path: Path) -> None:
    async with replay_app(tmp_path, QUICK_DEMO).run_test(size=(120, 36)) as pilot:
        app = await finished(pilot)
        assert not app.lab.has_class("-present")
        assert not app.lab.query_one(Headline).display
        assert app.lab.query_one("#knobs").region.area > 0


async def test_p_leaves_the_presenter_layout_and_comes_back(tmp_path: Path) -> None:
    async with replay_app(tmp_path, QUICK_DEMO).run_test(size=(100, 30)) as pilot:
        app = await finished(pilot)
        lab = app.lab
        assert lab.has_class("-present")
        await pilot.press("P")
        await pilot.pause()
        assert not lab.has_class("-present")
        assert lab.query_one(PaneTabs).display  # 100 columns: the four panes as tabs again
        assert not lab.query_one(Headline).display
        await pilot.press("P")
        await pilot.pause()
        assert lab.has_class("-present")
        assert lab.query_one(Headline).display


async def test_one_and_four_show_their_pane_beside_the_chart(tmp_path: Path) -> None:
    async with replay_app(tmp_path, QUICK_DEMO).run_test(size=(100, 30)) as pilot:
        app = await finished(pilot)
        lab = app.lab
        activity = lab.query_one(ActivityPane)
        for key, pane in (("4", "#results"), ("1", "#knobs"), ("2", "#duration")):
            await pilot.press(key)
            await pilot.pause()
            shown = lab.query_one(pane)
            assert shown.region.area > 0, f"{key} did not show {pane}"
            assert activity.region.area > 0, f"{key} hid the chart"
            assert shown.region.right <= activity.region.x
        # 3 and the chart keys keep the pane on the left as it was
        await pilot.press("3", "w")
        await pilot.pause()
        assert lab.query_one("#duration").region.area > 0
        assert activity.mode == "waits"


async def test_the_big_verdict_goes_with_the_card(tmp_path: Path) -> None:
    async with replay_app(tmp_path, QUICK_DEMO).run_test(size=(100, 30)) as pilot:
        app = await finished(pilot)
        headline = app.lab.query_one(Headline)
        assert headline.display
        await pilot.press("escape")
        await pilot.pause()
        assert not app.lab.query_one(SummaryCard).display
        assert not headline.display
        assert app.lab.query_one("#duration-bars").region.height > 0


async def test_a_jump_back_takes_the_big_verdict_away_and_g_end_brings_it(
    tmp_path: Path,
) -> None:
    source = ReplaySource.from_file(QUICK_DEMO, speed=1.0)
    app = PgwxApp(replay=source, store=ResultStore(tmp_path / "r.sqlite"), ascii=False)
    async with app.run_test(size=(100, 30)) as pilot:
        lab = app.lab
        headline = lab.query_one(Headline)
        await pilot.press("space")  # paused: the jumps alone move the replay
        await pilot.press("G")
        await wait_for(pilot, lambda: headline.display, 20)
        await pilot.press("g")
        await wait_for(pilot, lambda: not lab.query_one(SummaryCard).display, 20)
        await pilot.pause()
        assert not headline.display, "the big verdict outlived the card after a jump back"
        await pilot.press("G")
        await wait_for(pilot, lambda: headline.display, 20)


def rows_left_under_the_card(app: PgwxApp) -> int:
    """Empty rows between the last thing the duration pane draws (the card, or the bars
    under it) and the pane's bottom edge."""
    duration = app.lab.query_one(DurationPane)
    drawn = [duration.card]
    bars = duration.query_one("#duration-bars")
    if bars.display and bars.region.height > 0:
        drawn.append(bars)
    bottom = max(widget.region.bottom for widget in drawn)
    return duration.scrollable_content_region.bottom - bottom


async def test_160x45_draws_five_row_digits_and_fills_under_the_card(tmp_path: Path) -> None:
    async with replay_app(tmp_path, FK_TIMING, present=True).run_test(size=(160, 45)) as pilot:
        await assert_presented(pilot, FK_TIMING)
        app = pilot.app
        assert isinstance(app, PgwxApp)
        lab = app.lab
        headline = lab.query_one(Headline)
        big = headline.query_one("#headline-big")
        assert big.region.height == 5, "the digits stay 3 rows on a 45-row terminal"
        assert not headline.query_one(Digits).display
        assert headline.line is not None
        figure = big_figure(headline_figure(headline.line)).plain.split("\n")
        rows = screen_rows(app)
        drawn = [
            start
            for start in range(len(rows) - len(figure))
            if all(squeezed(px) in squeezed(rows[start + i]) for i, px in enumerate(figure))
        ]
        assert drawn, f"the 5-row digits of {headline_figure(headline.line)} are not on screen"
        # Under the card: the median bars, down to the pane's bottom edge.
        duration = lab.query_one(DurationPane)
        card = duration.card
        bars = duration.query_one("#duration-bars")
        assert bars.region.height > 0 and bars.region.y >= card.region.bottom
        assert rows_left_under_the_card(app) <= 1
        assert duration.max_scroll_y == 0


async def test_100x30_keeps_three_row_digits_and_spreads_the_card(tmp_path: Path) -> None:
    async with replay_app(tmp_path, FK_TIMING).run_test(size=(100, 30)) as pilot:
        await assert_presented(pilot, FK_TIMING)
        app = pilot.app
        assert isinstance(app, PgwxApp)
        headline = app.lab.query_one(Headline)
        assert headline.query_one(Digits).region.height == 3
        assert not headline.query_one("#headline-big").display
        # No room for the bars too: the card alone, spread down to the pane's bottom.
        assert not app.lab.query_one(DurationPane).query_one("#duration-bars").region.height
        assert rows_left_under_the_card(app) <= 1


async def test_growing_to_160x45_brings_the_big_digits_and_back(tmp_path: Path) -> None:
    async with replay_app(tmp_path, FK_TIMING, present=True).run_test(size=(100, 30)) as pilot:
        app = await finished(pilot)
        headline = app.lab.query_one(Headline)
        big = headline.query_one("#headline-big")
        await pilot.resize_terminal(160, 45)
        await wait_for(pilot, lambda: big.region.height == 5, 20)
        await pilot.resize_terminal(100, 30)
        await wait_for(pilot, lambda: headline.query_one(Digits).region.height == 3, 20)
        assert not big.display


def test_the_big_font_draws_every_figure_character() -> None:
    for figure in ("0.123456789x", "+0.38", "-1.50"):
        lines = big_figure(figure).plain.split("\n")
        assert len(lines) == 5
        assert len({len(line) for line in lines}) == 1, "rows of one figure differ in width"
    # a figure's characters each take room: 2.19x is wider than 2.1x
    assert len(big_figure("2.19x").plain.split("\n")[0]) > len(
        big_figure("2.1x").plain.split("\n")[0]
    )
