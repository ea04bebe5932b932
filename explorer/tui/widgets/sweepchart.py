"""A sweep of one setting drawn in the app (issue 37, point 2): the chart pane's `v` view.

Two plotext charts side by side (stacked when the pane is narrow): each value's time ratio to
the first value with its interval, and the mechanism counters (checkpoints, full-page images,
WAL bytes per trial) beside it, each as a share of its largest value so that all three fall or
rise on one scale. The caption under them gives the numbers. Every number comes from
`analysis.sweep.points` — the same summary rows and verdicts as the results table and the
report's curve; nothing is recomputed here.

The charts are `TimeChart`s (widgets/chart.py, the one module that imports the plotext widget) that
draw points over the sweep's values instead of a time axis: they redraw when marked dirty and
on screen, like the other charts, so live runs and replays feed them the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Container
from textual.message import Message

from explorer.analysis.sweep import SweepPoint, points
from explorer.analysis.units import human_bytes, human_count
from explorer.lab.view.runstate import RunView
from explorer.tui.glyphs import ascii_mode
from explorer.tui.widgets.chart import (
    MARKERS,
    PALETTE,
    LineSpec,
    Runs,
    TimeChart,
    app_uses_glyphs,
    rich_color,
    series_slots,
)

COUNTERS: tuple[tuple[str, str], ...] = (
    ("checkpoints", "checkpoints"),
    ("fpi", "full-page images"),
    ("wal_bytes", "WAL bytes"),
)
"""SweepPoint field → its name in the mechanism chart's legend, in drawing order."""
SIDE_BY_SIDE = 60
"""Columns from which the two charts sit side by side (below: one over the other)."""
NOT_A_SWEEP = "not a sweep: `pgwx run PROFILE --sweep NAME=V1,V2,…` or a profile's `sweep`"
"""What the view says when the run on screen does not sweep a setting."""


@dataclass
class Sweep:
    """What the two charts draw: the swept setting and its values in order."""

    setting: str
    phase: str
    drawn: list[SweepPoint] = field(default_factory=list)


def sweep_of(view: RunView, phase: str = "total") -> Sweep | None:
    """The sweep on screen (None when the run is not a sweep of one setting)."""
    record = view.record
    if record is None or record.profile.sweep is None:
        return None
    return Sweep(record.profile.sweep.setting, phase, points(record, view.summary, phase))


def is_sweep(view: RunView) -> bool:
    """Whether the run on screen sweeps one setting."""
    return view.record is not None and view.record.profile.sweep is not None


class SweepChart(TimeChart):
    """One of the two sweep charts: "ratio" (time ratio with its interval) or "mechanism".

    Args:
        source: The sweep on screen, or None.
        kind: "ratio" or "mechanism".
    """

    def __init__(self, source: Callable[[], Sweep | None], kind: str, *, id: str) -> None:
        super().__init__(self._placeholder, id=id)
        self._sweep_source = source
        self.kind = kind
        self.drawn_sweep: Sweep | None = None
        """What the last rebuild drew."""

    def _placeholder(self) -> LineSpec:
        return LineSpec({}, "", empty=NOT_A_SWEEP)

    def _draw(self) -> None:
        self.drawn_sweep = self._sweep_source()
        super()._draw()

    def _render_spec(self) -> Runs:
        sweep = self.drawn_sweep
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        self._overlay.clear()
        glyphs = app_uses_glyphs(self.app)
        drawn = sweep is not None and (
            self._ratio(sweep, glyphs) if self.kind == "ratio" else self._mechanism(sweep, glyphs)
        )
        if not drawn:
            plt.title(
                NOT_A_SWEEP
                if sweep is None
                else "no trial measured yet"
                if self.kind == "ratio"
                else "no counters yet"
            )
            plt.xticks([])
            plt.yticks([])
        return self._build()

    def _beside(self) -> bool:
        """Whether the other chart shows beside this one."""
        parent = self.parent
        return not isinstance(parent, SweepView) or parent.side_by_side

    def _xaxis(self, sweep: Sweep) -> None:
        n = len(sweep.drawn)
        self.plt.xlim(-0.5, n - 0.5)
        self.plt.xticks([float(i) for i in range(n)], [p.value for p in sweep.drawn])

    def _ratio(self, sweep: Sweep, glyphs: bool) -> bool:
        """The ratio to the first value at each value, its interval a vertical bar, the
        baseline's 1.0 a dotted rule."""
        plt = self.plt
        known = [(i, p) for i, p in enumerate(sweep.drawn) if p.ratio is not None]
        if not known:
            return False
        ends = [v for _, p in known for v in (p.ratio, p.low, p.high) if v is not None]
        low, high = min([*ends, 1.0]), max([*ends, 1.0])
        pad = (high - low) * 0.12 or 0.05
        bottom, top = max(0.0, low - pad), high + pad
        plt.ylim(bottom, top)
        plt.yticks(*ratio_ticks(bottom, top, self.size.height - 4))
        self._xaxis(sweep)
        grey = PALETTE[7][1]
        plt.plot(
            [-0.5, len(sweep.drawn) - 0.5],
            [1.0, 1.0],
            color=grey,
            marker="·" if not ascii_mode() else ".",
        )
        colour = PALETTE[4][1]
        for i, p in known:
            if p.low is not None and p.high is not None:
                plt.plot([i, i], [p.low, p.high], color=colour, marker="|" if glyphs else "│")
        xs = [float(i) for i, _ in known]
        ys = [p.ratio for _, p in known if p.ratio is not None]
        plt.plot(xs, ys, color=colour, marker="o" if glyphs else "braille")
        plt.scatter(xs, ys, color=PALETTE[5][1], marker="O" if glyphs or ascii_mode() else "•")
        first = sweep.drawn[0].value
        plt.title(
            f"ratio to {first} ({sweep.phase}), interval │"
            if self._beside()
            else f"ratio to {first} · v: mechanism"
        )
        return True

    def _mechanism(self, sweep: Sweep, glyphs: bool) -> bool:
        """Checkpoints, full-page images and WAL bytes at each value, each as a share of its
        own largest value (the caption gives the numbers)."""
        plt = self.plt
        slots = series_slots([name for _, name in COUNTERS])
        drawn = False
        for key, name in COUNTERS:
            values = [(i, getattr(p, key)) for i, p in enumerate(sweep.drawn)]
            known = [(i, v) for i, v in values if v is not None]
            top = max((v for _, v in known), default=0.0)
            if not known or top <= 0:
                continue
            slot = slots[name]
            plt.plot(
                [float(i) for i, _ in known],
                [v / top for _, v in known],
                color=PALETTE[slot][1],
                marker=MARKERS[slot] if glyphs else "braille",
            )
            drawn = True
        if not drawn:
            return False
        plt.ylim(0.0, 1.1)
        plt.yticks([0.0, 0.5, 1.0], ["0", "0.5", "max"])
        self._xaxis(sweep)
        plt.title(
            "mechanism, share of its largest"
            if self._beside()
            else "mechanism, share of max · v: ratio"
        )
        return True


def ratio_ticks(bottom: float, top: float, rows: int) -> tuple[list[float], list[str]]:
    """The ratio axis' ticks: 1.00 (the baseline) always, and evenly spaced ones that keep a
    row or more away from it (two ticks on one row collide)."""
    steps = 4 if rows >= 10 else 2 if rows >= 4 else 1
    span = (top - bottom) or 1.0
    even = [bottom + span * n / steps for n in range(steps + 1)]
    apart = span / max(rows, 1) * 2
    ticks = sorted({1.0, *(t for t in even if abs(t - 1.0) >= apart)})
    return ticks, [f"{t:.2f}" for t in ticks]


def caption(sweep: Sweep | None, width: int, no_color: bool, part: str = "both") -> Text:
    """One line per value: its ratio, interval and verdict ("ratio"), its checkpoints,
    full-page images and WAL ("mechanism"), or both on one line ("both"); the mechanism
    chart's legend first when that chart shows. Each line cut to the width."""
    if sweep is None:
        return Text(NOT_A_SWEEP, style="dim")
    lines: list[Text] = []
    if part != "ratio":
        legend = Text()
        slots = series_slots([name for _, name in COUNTERS])
        for n, (_key, name) in enumerate(COUNTERS):
            if n:
                legend.append("  ")
            slot = slots[name]
            if no_color or ascii_mode():
                legend.append(MARKERS[slot], style="bold")
            else:
                legend.append("━", style=rich_color(slot))
            legend.append(f" {SHORT[name]}")
        lines.append(legend)
    value_width = max(len(p.value) for p in sweep.drawn) if sweep.drawn else 0
    for p in sweep.drawn:
        line = Text(f"{p.value:<{value_width}} ", style="bold")
        if part != "mechanism":
            ratio = f"{p.ratio:.2f}×" if p.ratio is not None else "?"
            interval = (
                f"{p.low:.2f}–{p.high:.2f}" if p.low is not None and p.high is not None else ""
            )
            line.append(f"{ratio:>6} {interval:<9} ")
            line.append(f"{p.word:<9} ", style="bold" if p.word in ("faster", "slower") else "")
        if part != "ratio":
            ckpt = human_count(p.checkpoints) if p.checkpoints is not None else "?"
            fpi = human_count(p.fpi) if p.fpi is not None else "?"
            wal = human_bytes(p.wal_bytes) if p.wal_bytes is not None else "?"
            line.append(f"ckpt {ckpt} · FPI {fpi} · WAL {wal}")
        line.rstrip()
        line.truncate(max(width, 1), overflow="ellipsis")
        lines.append(line)
    return Text("\n").join(lines)


SHORT = {"checkpoints": "checkpoints", "full-page images": "FPI", "WAL bytes": "WAL"}
"""The counters' names in the caption's legend."""


class SweepView(Container):
    """The two sweep charts: side by side when the pane is wide enough, else one at a time
    (`v` again shows the other)."""

    DEFAULT_CSS = """
    SweepView {
        height: 1fr;
        layout: horizontal;
    }
    SweepView SweepChart {
        width: 1fr;
        height: 1fr;
        min-height: 5;
    }
    """

    def __init__(self, view: RunView, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.view = view
        self.showing = "ratio"
        """The chart shown when only one fits: "ratio" or "mechanism"."""
        self.side_by_side = True
        """Both charts show (the pane is at least `SIDE_BY_SIDE` columns wide)."""

    class Arranged(Message):
        """Both charts, or one, now show: the caption follows."""

    def source(self) -> Sweep | None:
        """The sweep the charts draw now."""
        return sweep_of(self.view)

    def compose(self) -> ComposeResult:
        yield SweepChart(self.source, "ratio", id="sweep-ratio")
        yield SweepChart(self.source, "mechanism", id="sweep-mechanism")

    def part(self) -> str:
        """What the caption gives: "both", or the one chart shown."""
        return "both" if self.side_by_side else self.showing

    def on_resize(self) -> None:
        self._arrange()

    def toggle(self) -> None:
        """Show the other chart (where only one fits)."""
        self.showing = "mechanism" if self.showing == "ratio" else "ratio"
        self._arrange()
        self.redraw_now()

    def _arrange(self) -> None:
        before = self.side_by_side
        self.side_by_side = self.size.width >= SIDE_BY_SIDE
        for chart in self.charts():
            chart.display = self.side_by_side or chart.kind == self.showing
        if before != self.side_by_side:
            self.post_message(self.Arranged())

    def charts(self) -> list[SweepChart]:
        """The ratio chart and the mechanism chart."""
        return list(self.query(SweepChart))

    def mark_dirty(self) -> None:
        """New data: both charts redraw at their next tick when on screen."""
        for chart in self.charts():
            chart.mark_dirty()

    def redraw_now(self) -> None:
        """Redraw both at once (a key, a run's end, a jump)."""
        for chart in self.charts():
            chart.redraw_now()
