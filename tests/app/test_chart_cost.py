"""What the screen costs: the points plotext is given, and what a change repaints or lays out.

Over SSH every repainted cell is bytes, and a layout pass repaints more than the widget that
asked for it; a chart key press must also answer within a frame or two (issue 11).
"""

from __future__ import annotations

import gc
import math
import random
import time
from dataclasses import replace
from pathlib import Path

import pytest
from plotext import _matrix as plotext_matrix
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.dom import DOMNode
from textual.geometry import Region
from textual.pilot import Pilot
from textual.visual import Visual, visualize
from textual.widget import Widget
from textual.widgets import DataTable

from explorer.lab.store.replay import ReplaySource, recordings_dir
from explorer.lab.store.results import ResultStore
from explorer.lab.view.runstate import RunView
from explorer.tui import collector as collector_module
from explorer.tui.app import PgwxApp
from explorer.tui.widgets.activity import ActivityPane, Mode
from explorer.tui.widgets.chart import ChartSpec, LineSpec, TimeChart, thin
from explorer.tui.widgets.duration import DurationPane
from explorer.tui.widgets.header import ServerHeader
from explorer.tui.widgets.results_table import WARM_AFTER, ResultsTable
from tests.support.app import FIXTURE, replay_app, settle, wait_for
from tests.support.costs import full_passes, make_garbage_until

Points = list[tuple[float, float]]


def column_ranges(points: Points, columns: int) -> dict[int, tuple[float, float]]:
    """Per screen column, the lowest and highest y drawn there."""
    x0, x1 = points[0][0], points[-1][0]
    out: dict[int, tuple[float, float]] = {}
    for x, y in points:
        at = min(columns - 1, int((x - x0) / (x1 - x0) * columns))
        low, high = out.get(at, (y, y))
        out[at] = (min(low, y), max(high, y))
    return out


def test_thin_keeps_every_columns_extremes_and_the_ends() -> None:
    rng = random.Random(7)
    points = [(t * 0.25, rng.random() * 100 + 50 * math.sin(t / 9)) for t in range(480)]
    thinned = thin(points, 50)
    assert len(thinned) <= 2 * 50 + 2 < len(points)
    assert thinned[0] == points[0] and thinned[-1] == points[-1]
    assert [p[0] for p in thinned] == sorted(p[0] for p in thinned)  # still in time order
    assert column_ranges(thinned, 50) == column_ranges(points, 50)
    short = points[:60]
    assert thin(short, 50) == short  # nothing to gain: untouched


async def test_chart_key_costs_no_layout_pass(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The caption keeps the tallest mode's height: i / w / l ask for no layout pass."""
    app = PgwxApp(replay=ReplaySource.from_file(FIXTURE), store=ResultStore(tmp_path / "r.db"))
    async with app.run_test(size=(120, 36)) as pilot:
        lab = app.lab
        await wait_for(pilot, lambda: lab.view.status == "finished", 10)
        pane = lab.query_one(ActivityPane)
        # A replay played at once can end before the first grid layout (a loaded machine):
        # the steady state is the pane in its own column, its caption measured there.
        await wait_for(pilot, lambda: 0 < pane.region.width < lab.size.width // 2, 10)
        await pilot.pause(0.3)
        layouts: list[str] = []
        original = Widget.refresh

        def counted(self, *regions, **kwargs):  # type: ignore[no-untyped-def]
            if kwargs.get("layout") and (self is pane or pane in self.ancestors):
                layouts.append(f"{type(self).__name__}#{self.id}")
            return original(self, *regions, **kwargs)

        monkeypatch.setattr(Widget, "refresh", counted)
        for key, mode in (("i", "io"), ("w", "waits"), ("l", "wal"), ("i", "io")):
            await pilot.press(key)
            await pilot.pause(0.1)
            assert pane.mode == mode
        assert layouts == []
        chart = pane.chart
        assert chart.drawn_spec is not None and "pg_stat_io" in chart.drawn_spec.ylabel


async def test_a_new_trial_repaints_only_the_run_in_the_header(
    tmp_path: Path,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    """The run's counter changes every trial; the badges and the server line stay put."""
    app = PgwxApp(replay=ReplaySource.from_file(FIXTURE), store=ResultStore(tmp_path / "r.db"))
    async with app.run_test(size=(80, 24)) as pilot:
        lab = app.lab
        await wait_for(pilot, lambda: lab.view.status == "finished", 10)
        header = lab.query_one(ServerHeader)
        header.run = "durability 5/10 running"
        await pilot.pause(0.2)
        assert header.content_region.height == 2  # 80 columns: badges and run on line 2
        regions: list[Region] = []
        original = Widget.refresh

        def spy(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            if self is header:
                regions.extend(args or [header.size.region])
            return original(self, *args, **kwargs)

        monkeypatch.setattr(Widget, "refresh", spy)
        header.run = "durability 6/10 running"
        await pilot.pause(0.2)
        line = next(t for t in header._drawn if "durability" in t.plain)
        assert "durability 6/10 running" in line.plain  # what the screen now shows
        changed = line.plain.index("6/10")
        assert regions and all(r.y == 1 and r.height == 1 for r in regions)  # line 2 only
        assert min(r.x for r in regions) == changed  # from the changed cell, not the badges
        header.run = "durability 10/10 finished"  # longer: still only the tail of line 2
        await pilot.pause(0.2)
        assert all(r.y == 1 for r in regions)


class DurationOnly(App[None]):
    """The duration pane alone, fed event by event as a live run feeds it."""

    def __init__(self, view: RunView) -> None:
        super().__init__()
        self.view = view

    def compose(self) -> ComposeResult:
        yield DurationPane(self.view, id="duration")


async def test_the_trial_block_keeps_its_height_through_a_run(
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    """Phases with and without progress alternate; the bars under them must not jump."""
    source = ReplaySource.from_file(recordings_dir() / "quick-demo.pgwx")
    view = RunView(profile=source.profile, scale=source.scale)
    app = DurationOnly(view)
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.query_one(DurationPane)
        now = pane.query_one("#duration-now")
        clock = pane.query_one("#duration-clock")
        layouts: list[int] = []
        original = Widget.refresh

        def spy(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            if self in (now, clock) and kwargs.get("layout"):
                layouts.append(view.trial_index)

            return original(self, *args, **kwargs)

        monkeypatch.setattr(Widget, "refresh", spy)
        heights = set()
        for event in source.events:
            view.apply(event)
            pane.update_now()
            await pilot.pause(0)
            if 2 <= view.trial_index < view.total_trials:
                heights.add((now.region.height, clock.region.height))
        assert view.total_trials > 10
        # Six phases a trial, some with a progress bar: the block grows to its tallest in
        # the first trials and then holds it.
        assert len(heights) <= 2, heights
        assert len([t for t in layouts if t >= 2]) <= 2, layouts


async def test_what_start_up_built_is_kept_out_of_full_collections(tmp_path: Path) -> None:
    """A full collection walking the screen and a loaded recording took 40–100 ms mid-replay."""
    assert gc.get_freeze_count() == 0
    app = PgwxApp(replay=ReplaySource.from_file(FIXTURE), store=ResultStore(tmp_path / "r.db"))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: gc.get_freeze_count() > 0, 5)
        assert gc.get_freeze_count() > 1000  # the DOM and the events, not a handful
    assert gc.get_freeze_count() == 0  # given back when the app ends: nothing kept for good


async def test_a_full_collection_waits_until_a_keys_screen_update_is_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python began its full passes (40–60 ms in a live matrix) in the middle of a key's work,
    and the key's screen update waited for them."""
    before = gc.get_threshold()
    monkeypatch.setattr(collector_module, "QUIET", 60.0)  # only the key may trigger it here
    order: list[str] = []
    display = App._display

    def frame(self: App[object], screen: object, renderable: object) -> None:
        if renderable is not None:
            order.append("frame")
        display(self, screen, renderable)  # type: ignore[arg-type]

    monkeypatch.setattr(App, "_display", frame)
    app = PgwxApp(replay=ReplaySource.from_file(FIXTURE), store=ResultStore(tmp_path / "r.db"))
    async with app.run_test(size=(80, 24)) as pilot:
        collector = app.collector
        await wait_for(pilot, lambda: collector.installed, 5)
        assert gc.get_threshold()[2] == collector_module.NEVER
        await pilot.press("w")
        with full_passes(order) as passes:
            make_garbage_until(collector.due)
            order.clear()
            await pilot.press("i")
            await wait_for(pilot, lambda: bool(passes), 5)
            assert collector.made == ["after key"]
            assert passes == [1]  # Python started none by itself
        # The key's screen update went out before the pass began.
        assert "frame" in order and order.index("frame") < order.index("pass"), order
    assert gc.get_threshold() == before


async def test_a_chart_key_makes_each_modes_spec_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The caption is measured in every mode and drawn in one, and the chart draws the same
    spec: a chart key made five specs (each ranking every sample's series), now each mode's at
    most once per new sample."""
    async with replay_app(tmp_path, 165).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        # The chart drawn once (at 80x24 a tab: the first frame no longer stacks every pane).
        await pilot.press("3")
        await settle(pilot)
        pane = pilot.app.lab.query_one(ActivityPane)
        made: list[str] = []
        make = ActivityPane._make_spec

        def spy(self: ActivityPane, mode: Mode) -> ChartSpec:
            made.append(mode)
            return make(self, mode)

        monkeypatch.setattr(ActivityPane, "_make_spec", spy)
        for key in "iwl":
            await pilot.press(key)
            await pilot.pause(0.1)
        assert made == []  # nothing came since: each mode's spec is kept
        act = pane.view.activity
        act.add(act.wal[-1][0] + 1.0, {"wal_bytes_per_s": 123.0 * 2**20})
        pane.data_changed()
        for key in "iwl":
            await pilot.press(key)
            await pilot.pause(0.1)
        assert sorted(made) == ["io", "waits", "wal"]  # one each for the new sample
        shot = pilot.app.export_screenshot().replace("&#160;", " ")
        assert "now 123.0 MiB/s" in shot  # the new sample is what is shown


async def test_the_waits_chart_is_one_plot_per_part_not_per_bar(tmp_path: Path) -> None:
    """plotext's stacked bars drew each bar of each part as a plot of its own: 140 at 80x24,
    20–30 ms of a `w` press. One scatter per part draws the same cells."""
    app = PgwxApp(replay=ReplaySource.from_file(FIXTURE), store=ResultStore(tmp_path / "r.db"))
    async with app.run_test(size=(80, 24)) as pilot:
        lab = app.lab
        await wait_for(pilot, lambda: lab.view.status == "finished", 10)
        await pilot.press("3", "w")
        pane = lab.query_one(ActivityPane)
        chart = pane.chart
        await wait_for(pilot, lambda: chart.drawn_spec is not None and pane.mode == "waits", 5)
        chart.render()
        spec = chart.drawn_spec
        assert spec is not None and hasattr(spec, "parts") and len(spec.points) >= 10
        assert 0 < chart.plt.monitor.signals <= len(spec.parts)  # type: ignore[attr-defined]
        drawn = chart.render().plain  # type: ignore[union-attr]
        assert "█" in drawn and "by wait event" in drawn


async def test_a_slow_chart_redraws_less_often_and_a_key_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a busy machine a chart's build takes longer: new data redraws it only after ten
    times its last build (its share of the app's time stays a tenth), so a key is less
    often stuck behind a redraw; a chart key still redraws at once."""
    app = PgwxApp(replay=ReplaySource.from_file(FIXTURE), store=ResultStore(tmp_path / "r.db"))
    async with app.run_test(size=(120, 36)) as pilot:
        lab = app.lab
        await wait_for(pilot, lambda: lab.view.status == "finished", 10)
        pane = lab.query_one(ActivityPane)
        chart = pane.chart
        await pilot.pause(0.3)
        builds: list[float] = []
        build = TimeChart._build

        def slow(self: TimeChart) -> Text:
            time.sleep(0.2)  # a build on a machine far busier than this one
            builds.append(time.monotonic())
            return build(self)

        monkeypatch.setattr(TimeChart, "_build", slow)
        act = pane.view.activity

        def new_sample() -> None:  # (the chart keeps what it drew of data it has drawn)
            act.add(act.wal[-1][0] + 1.0, {"wal_bytes_per_s": 5.0 * 2**20})

        new_sample()
        chart.redraw_now()
        await wait_for(pilot, lambda: len(builds) >= 1, 10)
        draws = chart.draws
        new_sample()
        chart.mark_dirty()  # new data
        await pilot.pause(0.6)  # two ticks at 4 Hz: each would have redrawn
        assert chart.draws == draws  # (a repaint of the same data may build; no redraw)
        built = len(builds)
        # ~2.2 s after the first build: the redraw, and its build
        await wait_for(pilot, lambda: chart.draws > draws and len(builds) > built, 10)
        assert builds[-1] - builds[0] >= 2.0
        pressed = time.monotonic()  # just after a build: new data would wait ~2.2 s now
        await pilot.press("w")  # a key waits for nothing
        await wait_for(pilot, lambda: builds[-1] > pressed, 10)
        assert pane.mode == "waits" and builds[-1] - pressed < 1.5


class CountedPoints(list[tuple[float, float]]):
    """A series that counts the samples read from it."""

    reads = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        for point in super().__iter__():
            CountedPoints.reads += 1
            yield point


async def replayed_line_chart(pilot: Pilot[int], app: PgwxApp, key: str) -> TimeChart:
    """The activity chart once the replay has ended, shown with `key` (a line chart)."""
    await wait_for(pilot, lambda: app.lab.view.status == "finished", 10)
    await pilot.press("3", key)
    chart = app.lab.query_one(ActivityPane).chart
    await wait_for(pilot, lambda: isinstance(chart.drawn_spec, LineSpec), 5)
    return chart


async def test_a_line_chart_reads_each_sample_a_few_times_whatever_its_phases(
    tmp_path: Path,
) -> None:
    """A line chart found its time span for each phase rule again over every sample (a
    matrix's io chart: 14 ms of an `i` press); it reads each sample a bounded number of
    times, however many phases the window holds, and still rules and labels them."""
    app = PgwxApp(replay=ReplaySource.from_file(FIXTURE), store=ResultStore(tmp_path / "r.db"))
    async with app.run_test(size=(80, 24)) as pilot:
        chart = await replayed_line_chart(pilot, app, "l")
        samples = 2000
        for phases in (2, 40):
            series = {
                name: CountedPoints((t / 10, (t * k) % 97) for t in range(samples))
                for k, name in enumerate(("a", "b", "c"), start=1)
            }
            marks = [(n * samples / 10 / phases, f"phase{n % 3}") for n in range(phases)]
            chart.drawn_spec = LineSpec(series, "MiB/s", marks=marks)
            CountedPoints.reads = 0
            drawn = chart.render().plain  # type: ignore[union-attr]
            assert CountedPoints.reads <= 2 * 3 * samples, (phases, CountedPoints.reads)
            assert "MiB/s" in drawn and "│" in drawn  # titled, phases ruled


async def test_a_charts_phase_rules_and_variant_letters_cost_plotext_nothing(
    tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """plotext draws each rule and text inside its build at a cost per cell, per text and
    per column (half of the io chart's build at 80x24: ~100 texts for the letters under a
    long matrix); they are drawn onto its matrix after the build, so a chart with 40 phase
    rules and 30 trials costs plotext's build what the same chart without them does, and
    still shows them."""
    app = PgwxApp(replay=ReplaySource.from_file(FIXTURE), store=ResultStore(tmp_path / "r.db"))
    async with app.run_test(size=(80, 24)) as pilot:
        chart = await replayed_line_chart(pilot, app, "i")
        inserted: list[int] = []
        insert = plotext_matrix.matrix_class.insert_element

        def counted(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            inserted.append(1)
            return insert(self, *args, **kwargs)

        monkeypatch.setattr(plotext_matrix.matrix_class, "insert_element", counted)
        series = {
            name: [(t / 10, (t * k) % 97) for t in range(600)] for k, name in enumerate("abc", 1)
        }
        marks = [(n * 1.5, f"phase{n % 3}") for n in range(40)]
        bands = [(n * 2.0, ("baseline", "unlogged")[n % 2]) for n in range(30)]
        cells = {}
        for label, spec in (
            ("bare", LineSpec(series, "MiB/s")),
            ("ruled", LineSpec(series, "MiB/s", marks=marks, bands=bands)),
        ):
            chart.drawn_spec = spec
            inserted.clear()
            drawn = chart.render().plain  # type: ignore[union-attr]
            cells[label] = len(inserted)
        assert cells["ruled"] <= cells["bare"] + 5, cells
        assert "│" in drawn and "b" in drawn and "u" in drawn and "P" in drawn, drawn


async def test_a_chart_is_cut_into_lines_as_textual_would_and_only_after_a_build(
    tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """Textual turned the chart's Text into lines again on every repaint (3–9 ms at 80x24,
    as long as building it), and a repaint without new data (a focus, a restyle) built the
    chart again. The chart cuts its lines itself: the same segments, styles and offsets as
    Textual's, in each mode; a repaint without new data builds nothing; new data does."""
    app = PgwxApp(replay=ReplaySource.from_file(FIXTURE), store=ResultStore(tmp_path / "r.db"))
    async with app.run_test(size=(80, 24)) as pilot:
        lab = app.lab
        await wait_for(pilot, lambda: lab.view.status == "finished", 10)
        await pilot.press("3")
        pane = lab.query_one(ActivityPane)
        chart = pane.chart
        for key in ("i", "w", "l"):
            await pilot.press(key)
            await pilot.pause()
            drawn = chart.draws
            await wait_for(pilot, lambda: chart.drawn_spec is not None, 5)
            ours = [chart.render_line(y) for y in range(chart.size.height)]
            visual = visualize(chart, chart.render())
            theirs = Visual.to_strips(chart, visual, *chart.size, chart.visual_style)
            assert [list(line) for line in ours] == [list(line) for line in theirs], key
            assert chart.draws == drawn
        builds: list[int] = []
        render_spec = TimeChart._render_spec

        def counted(self):  # type: ignore[no-untyped-def]
            builds.append(1)
            return render_spec(self)

        monkeypatch.setattr(TimeChart, "_render_spec", counted)
        chart.refresh()
        await pilot.pause()
        await pilot.pause()
        assert builds == []
        act = pane.view.activity
        act.add(act.wal[-1][0] + 1.0, {"wal_bytes_per_s": 5.0 * 2**20})  # new data
        chart.redraw_now()
        await pilot.pause()
        await pilot.pause()
        assert len(builds) == 1


async def replayed_table(pilot: Pilot[int], app: PgwxApp) -> ResultsTable:
    """The results table once the replay has ended and filled it."""
    await wait_for(pilot, lambda: app.lab.view.status == "finished", 10)
    table = app.lab.query_one(ResultsTable)
    await wait_for(pilot, lambda: table.row_count > 6, 5)
    return table


def table_text(table: ResultsTable) -> list[str]:
    return [strip.text for strip in table.render_lines(table.region.reset_offset)]


def rendering(table: ResultsTable, monkeypatch) -> list[int]:  # type: ignore[no-untyped-def]
    """Counts the cells DataTable renders through Rich from now on (one call a cell)."""
    calls: list[int] = []
    console = table.app.console
    render_lines = console.render_lines
    render_cell = DataTable._render_cell
    inside: list[int] = []

    def cell(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        inside.append(1)
        try:
            return render_cell(self, *args, **kwargs)
        finally:
            inside.pop()

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        if inside:
            calls.append(1)
        return render_lines(*args, **kwargs)

    monkeypatch.setattr(DataTable, "_render_cell", cell)
    monkeypatch.setattr(console, "render_lines", counted)
    return calls


async def test_a_changed_cell_renders_that_cell_not_the_table(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """DataTable renders every visible cell again after any `update_cell` and on a focus
    change (20–25 ms a screenful); the results table renders only cells whose look changed,
    and still shows each change and the focused cursor."""
    app = PgwxApp(replay=ReplaySource.from_file(FIXTURE), store=ResultStore(tmp_path / "r.db"))
    async with app.run_test(size=(120, 36)) as pilot:
        table = await replayed_table(pilot, app)
        await pilot.pause(0.2)
        before = table_text(table)
        calls = rendering(table, monkeypatch)
        rows = list(table.summary_rows)
        rows[2] = replace(rows[2], median=99.0)
        table.show(rows)
        await pilot.pause(0.2)  # the screen repaints the table
        after = table_text(table)
        assert any("99.000" in line for line in after)
        # (the table may have lost a line to the detail line under it)
        assert [n for n, (a, b) in enumerate(zip(before, after, strict=False)) if a != b] == [3]
        assert 1 <= len(calls) <= 2  # the cell (DataTable: every cell on screen, ~90)
        # Focus restyles the cursor row: shown, not a cell kept from before the focus.
        style_before = table.render_lines(table.region.reset_offset)[1]
        table.focus()
        await pilot.pause(0.2)
        style_after = table.render_lines(table.region.reset_offset)[1]
        assert style_after.text == style_before.text
        assert list(style_after) != list(style_before)  # the cursor's colours changed
        app.lab.query_one(ActivityPane).focus()
        await pilot.pause(0.2)
        calls.clear()
        table.focus()
        await pilot.pause(0.2)
        table_text(table)
        assert calls == []  # back to a look already rendered: nothing rendered again


def rows_rendered(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The row keys DataTable renders a line of from now on (one per row line rendered)."""
    rendered: list[object] = []
    render_row = DataTable._render_line_in_row

    def counted(self, row_key, *args, **kwargs):  # type: ignore[no-untyped-def]
        rendered.append(row_key)
        return render_row(self, row_key, *args, **kwargs)

    monkeypatch.setattr(DataTable, "_render_line_in_row", counted)
    return rendered


async def test_focusing_the_table_renders_the_rows_that_look_different(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`4` focuses the table: DataTable rendered every visible row again (its row cache is
    keyed by the focus and by a counter each trial's update bumps). Only the header, the
    cursor's row and a row that changed meanwhile look different: only they are rendered,
    and the screen shows the change and the focused cursor."""
    app = PgwxApp(replay=ReplaySource.from_file(FIXTURE), store=ResultStore(tmp_path / "r.db"))
    async with app.run_test(size=(120, 36)) as pilot:
        lab = app.lab
        table = await replayed_table(pilot, app)
        table.focus()
        await pilot.pause(0.2)
        lab.query_one(ActivityPane).focus()
        await pilot.pause(0.2)
        unfocused = table_text(table)
        rows = list(table.summary_rows)
        rows[4] = replace(rows[4], median=77.0)
        table.show(rows)  # a trial, while the table is not focused
        await pilot.pause(0.2)
        rendered = rows_rendered(monkeypatch)
        table.focus()
        await pilot.pause(0.2)
        focused = table_text(table)
        assert any("77.000" in line for line in focused)
        # At most the header, the cursor row and the changed row (none when their focused
        # looks were rendered before): DataTable rendered every visible row (7 here).
        assert len(set(rendered)) <= 3, len(set(rendered))
        cursor = table.cursor_row + 1  # (under the header)
        lines = table.render_lines(table.region.reset_offset)
        assert focused[cursor] == unfocused[cursor]
        assert list(lines[cursor]) != list(lines[cursor + 2])  # the cursor row stands out


async def test_a_table_repaint_works_out_each_style_once_not_per_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DataTable walked up the widget tree twice a line for the line's and the row's style
    (0.2 ms a line: most of repainting the table `4` shows again). A repaint works each
    style out once — the table's, the header's, even and odd rows' — and draws the same."""
    app = PgwxApp(replay=ReplaySource.from_file(FIXTURE), store=ResultStore(tmp_path / "r.db"))
    async with app.run_test(size=(120, 36)) as pilot:
        table = await replayed_table(pilot, app)
        table.focus()
        await pilot.pause(0.2)
        crop = table.region.reset_offset
        table.render_lines(crop)  # each row's line drawn (kept: see _render_line_in_row)
        walks: list[DOMNode] = []
        rich_style = DOMNode.rich_style

        def walked(node: DOMNode) -> Style:
            walks.append(node)
            return rich_style.fget(node)  # type: ignore[attr-defined]

        monkeypatch.setattr(DOMNode, "rich_style", property(walked))
        table._styles_cache.clear()
        table._line_cache.clear()  # every line through the row styles, none drawn anew
        lines = table.render_lines(crop)
        assert len(lines) >= 6  # (7 to 10: the detail line under the table takes a few)
        assert 1 <= len(walks) <= 4, len(walks)  # DataTable: 2 a line
        # Between repaints the styles are worked out afresh; the lines are the same.
        walks.clear()
        table._styles_cache.clear()
        table._line_cache.clear()
        plain = DataTable.render_lines(table, crop)
        assert len(walks) >= 2 * len(lines) - 2
        assert [list(line) for line in plain] == [list(line) for line in lines]


@pytest.mark.parametrize("size", [(80, 24), (100, 30)], ids=["80x24-tab", "100x30-present"])
async def test_a_hidden_table_draws_its_changed_rows_before_4_shows_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    """At 80x24 the table is a hidden tab while a matrix fills it, and `4` rendered every
    row a trial had changed with the key waiting. A hidden table draws its changed rows in
    a quiet moment instead: `4` then renders at most the rows the focus changes (the header
    and the cursor's row), and shows the change."""
    app = PgwxApp(replay=ReplaySource.from_file(FIXTURE), store=ResultStore(tmp_path / "r.db"))
    async with app.run_test(size=size) as pilot:
        lab = app.lab
        table = await replayed_table(pilot, app)
        await pilot.press("4")
        await pilot.pause(0.2)
        await pilot.press("2")  # the table is hidden now (a tab, or the pane beside the chart)
        await pilot.pause(0.2)
        assert not table.is_on_screen
        rows = list(table.summary_rows)
        for n in range(1, 6):
            rows[n] = replace(rows[n], median=70.0 + n)  # trials, while hidden
        table.show(rows)
        await pilot.pause(WARM_AFTER + 0.5)  # a quiet moment
        rendered = rows_rendered(monkeypatch)
        await pilot.press("4")
        await pilot.pause(0.2)
        assert lab.current_pane() == "results" and table.has_focus
        assert any("73.000" in line for line in table_text(table))
        assert len(set(rendered)) <= 2, len(set(rendered))
