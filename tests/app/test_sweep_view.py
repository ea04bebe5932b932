"""A sweep of one setting drawn in the app (issue 37, point 2): the chart pane's `v` view.

Replayed from a real recorded max_wal_size sweep (tests/fixtures/max-wal-size-sweep.pgwx,
bundled PostgreSQL 18), and live on a real server: `v` shows each value's ratio with its
interval and the checkpoints, full-page images and WAL beside it, every number as
`analysis.sweep.points` gives it for the same run folded independently.
"""

from __future__ import annotations

from pathlib import Path

from explorer.analysis.report import summarize
from explorer.analysis.sweep import points
from explorer.lab.store.replay import ReplaySource
from explorer.lab.store.results import ResultStore
from explorer.lab.view.runstate import RunView
from explorer.models import Profile
from explorer.server.connect import Target
from explorer.tui.app import PgwxApp
from explorer.tui.widgets.activity import ActivityPane
from explorer.tui.widgets.sweepchart import SweepChart, SweepView
from tests.support.app import connected, log_text, wait_for
from tests.support.paths import DURABILITY, ROOT

SWEEP = ROOT / "tests" / "fixtures" / "max-wal-size-sweep.pgwx"
"""A real run: `pgwx run max-wal-size --scale 0.4 --repeats 6` on the bundled 18, exported."""


def folded(source: ReplaySource) -> RunView:
    view = RunView(profile=source.profile, scale=source.scale)
    for event in source.events:
        view.apply(event)
    return view


def caption(pane: ActivityPane) -> str:
    """The caption as drawn: the pane builds it for the width it is given (FitWidth)."""
    width = pane.query_one("#activity-caption").content_size.width
    return pane._caption(width).plain


async def test_v_draws_the_recorded_sweep_as_the_analysis_gives_it(tmp_path: Path) -> None:
    source = ReplaySource.from_file(SWEEP)
    expected = folded(ReplaySource.from_file(SWEEP))
    assert expected.record is not None and expected.record.profile.sweep is not None
    want = points(expected.record, summarize(expected.record))
    app = PgwxApp(replay=source, store=ResultStore(tmp_path / "r.db"))
    async with app.run_test(size=(80, 24)) as pilot:
        lab = app.lab
        await wait_for(pilot, lambda: lab.view.status == "finished", 20)
        pane = lab.query_one(ActivityPane)
        sweep = pane.query_one(SweepView)
        assert not sweep.display and "sweep" in str(pane.border_subtitle)
        await pilot.press("v")
        await wait_for(pilot, lambda: pane.has_class("-current"), 10)
        await pilot.pause()
        assert pane.mode == "sweep" and sweep.display and not pane.chart.display
        # 80 columns: both charts side by side, each drew the run's sweep
        charts = sweep.charts()
        assert all(c.display for c in charts) and sweep.side_by_side
        for chart in charts:
            await wait_for(pilot, lambda c=chart: c.drawn_sweep is not None, 10)  # type: ignore[misc]
            assert chart.drawn_sweep is not None
            assert chart.drawn_sweep.drawn == want
        # checkpoints fall across the values, and the caption says so, value by value
        ckpts = [p.checkpoints for p in want]
        assert ckpts[0] and ckpts[-1] == 0, ckpts
        text = caption(pane)
        for p in want:
            line = next(li for li in text.splitlines() if li.startswith(p.value + " "))
            assert f"{p.ratio:.2f}×" in line and p.word in line and "ckpt" in line, line
        # another chart key leaves the sweep; v brings it back
        await pilot.press("l")
        assert pane.mode == "wal" and pane.chart.display and not sweep.display
        await pilot.press("v")
        assert pane.mode == "sweep"


async def test_v_again_shows_the_other_chart_where_one_fits(tmp_path: Path) -> None:
    app = PgwxApp(replay=ReplaySource.from_file(SWEEP), store=ResultStore(tmp_path / "r.db"))
    async with app.run_test(size=(120, 36)) as pilot:
        lab = app.lab
        await wait_for(pilot, lambda: lab.view.status == "finished", 20)
        pane = lab.query_one(ActivityPane)
        sweep = pane.query_one(SweepView)
        await pilot.press("v")
        await pilot.pause()
        ratio, mechanism = (
            sweep.query_one(f"#sweep-{k}", SweepChart) for k in ("ratio", "mechanism")
        )
        # the grid's chart pane is too narrow for two: the ratio first, its numbers under it
        assert not sweep.side_by_side and ratio.display and not mechanism.display
        assert "ckpt" not in caption(pane) and "×" in caption(pane)
        await pilot.press("v")
        await pilot.pause()
        assert mechanism.display and not ratio.display and pane.mode == "sweep"
        assert "ckpt" in caption(pane) and "×" not in caption(pane)


async def test_v_on_a_run_that_is_no_sweep_says_so_and_changes_nothing(tmp_path: Path) -> None:
    app = PgwxApp(replay=ReplaySource.from_file(DURABILITY), store=ResultStore(tmp_path / "r.db"))
    async with app.run_test(size=(80, 24)) as pilot:
        lab = app.lab
        await wait_for(pilot, lambda: lab.view.status == "finished", 20)
        pane = lab.query_one(ActivityPane)
        assert "sweep" not in str(pane.border_subtitle)
        await pilot.press("v")
        await pilot.pause()
        assert pane.mode == "wal" and not pane.query_one(SweepView).display
        assert "nosweeponscreen" in log_text(lab)


async def test_a_live_sweep_draws_as_its_trials_end(pg18: Target, store: ResultStore) -> None:
    values = ["32MB", "1GB"]
    profile = Profile(
        name="sweep",
        title="sweep",
        workload="bulk-write",
        params={"rows": 60_000},
        repeats=2,
        settle_seconds=0,
        sweep={"setting": "max_wal_size", "values": values},  # type: ignore[arg-type]
    )
    app = PgwxApp(target=pg18, store=store, profiles=[profile])
    async with app.run_test(size=(80, 24)) as pilot:
        lab = await connected(pilot)
        await pilot.press("m")
        await wait_for(pilot, lambda: lab.view.trial_index >= 1, 120)
        await pilot.press("v")
        pane = lab.query_one(ActivityPane)
        assert pane.mode == "sweep"
        await wait_for(pilot, lambda: lab.view.status == "finished", 240)
        await pilot.pause(0.5)
        ratio = pane.query_one("#sweep-ratio", SweepChart)
        record = lab.view.record
        assert record is not None
        # the run's last trial is drawn: the chart shows what the analysis gives for the run
        want = points(record, summarize(record))
        await wait_for(
            pilot, lambda: ratio.drawn_sweep is not None and ratio.drawn_sweep.drawn == want, 10
        )
        assert [p.value for p in want] == values and want[0].word == "baseline"
        assert all(p.ratio is not None and p.wal_bytes for p in want)
