"""Time-series charts drawn with plotext. The only module that imports textual_plotext.

A chart does not redraw when data arrives. Its owner calls `mark_dirty()`; a timer redraws
at most `REDRAW_HZ` times a second, and only while the chart is on screen, so a hidden tab
or a fast replay costs nothing, and a slow SSH link never sees a storm of repaints.
"""

from __future__ import annotations

import itertools
import math
import pickle
import random
import re
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from plotext import _utility as plotext_utility
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import App, RenderResult
from textual.strip import Strip
from textual_plotext import PlotextPlot

from explorer.tui.glyphs import ascii_mode
from explorer.tui.widgets import plotext_speed

plotext_speed.install()

REDRAW_HZ = 4.0
"""Upper bound on redraws per second of one chart."""

BUILD_SHARE = 0.1
"""The share of the app's time a chart's own redraws may take: after a build of B ms the
next redraw for new data waits at least B / BUILD_SHARE (a key's redraw never waits). On a
quiet machine that is REDRAW_HZ; on a busy one the chart redraws less often rather than
have a key wait behind it."""

AFTER_KEY_FRAME = 0.05
"""Seconds after a key's screen update before a redraw that waited for it (`_tick`): the
terminal's writer sends the frame first (as the lab's repaint waits, `screens/lab.py`)."""

KEPT_SPECS = 4
"""Views whose last drawn lines a chart keeps (one per mode of the activity pane)."""

RECENT_S = 5.0
"""How old a view's last lines may be for a chart key to show them in its own screen update
while the samples that came since are built just after it (`show_for_key`)."""

MAX_BARS = 40
"""Stacked bars drawn at most: plotext's stacked bars cost ~0.6 ms each to build, so longer
series are averaged into this many buckets (a 480-sample window would take 300 ms)."""


def buckets(
    points: Sequence[tuple[float, dict[str, float]]], limit: int = MAX_BARS
) -> list[tuple[float, dict[str, float]]]:
    """At most `limit` points: consecutive ones averaged, x = the bucket's first x."""
    if len(points) <= limit:
        return list(points)
    out = []
    size = len(points) / limit
    for n in range(limit):
        group = points[round(n * size) : round((n + 1) * size)]
        total: dict[str, float] = {}
        for _, values in group:
            for key, value in values.items():
                total[key] = total.get(key, 0.0) + value
        out.append((group[0][0], {k: v / len(group) for k, v in total.items()}))
    return out


def thin(points: Sequence[tuple[float, float]], columns: int) -> list[tuple[float, float]]:
    """At most two points per screen column: each column's lowest and highest, in time order.

    A column shows the range its points span, so drawing only its extremes draws the same
    ink — but plotext's cost grows with the points it is given, and a two-minute window holds
    480 samples for ~50 columns. The first and last points are always kept.
    """
    if columns < 1 or len(points) <= 2 * columns:
        return list(points)
    x0, x1 = points[0][0], points[-1][0]
    span = (x1 - x0) or 1.0
    out: list[tuple[float, float]] = []
    group: list[tuple[float, float]] = []
    column = 0
    for point in points:
        at = min(columns - 1, int((point[0] - x0) / span * columns))
        if at != column and group:
            out.extend(_extremes(group))
            group = []
        column = at
        group.append(point)
    out.extend(_extremes(group))
    if out[0] != points[0]:
        out.insert(0, points[0])
    if out[-1] != points[-1]:
        out.append(points[-1])
    return out


def _extremes(group: list[tuple[float, float]]) -> list[tuple[float, float]]:
    low = min(range(len(group)), key=lambda i: group[i][1])
    high = max(range(len(group)), key=lambda i: group[i][1])
    return [group[i] for i in sorted({low, high})]


PALETTE: tuple[tuple[str, tuple[int, int, int]], ...] = (
    ("orange", (230, 159, 0)),
    ("sky blue", (86, 180, 233)),
    ("bluish green", (0, 158, 115)),
    ("yellow", (240, 228, 66)),
    ("blue", (0, 114, 178)),
    ("vermillion", (213, 94, 0)),
    ("reddish purple", (204, 121, 167)),
    ("grey", (153, 153, 153)),
)
"""Okabe–Ito's colour-blind-safe palette (names, RGB); grey is kept for 'other'."""

MARKERS = ("o", "x", "+", "*", "#", "%", "@", "=")
"""Per palette slot, the series' glyph when colour is off (NO_COLOR) or ASCII only."""

KNOWN: dict[str, int] = {
    # WAL and the workload's own writes.
    "WAL": 4,
    "client writes": 5,
    "client extends": 0,
    "client fsyncs": 6,
    "client wal-writes": 1,
    "client wal-fsyncs": 3,
    # Background processes: colours apart from the client's.
    "walwriter wal-writes": 4,
    "walwriter wal-fsyncs": 2,
    "ckpt writes": 2,
    "ckpt fsyncs": 3,
    "bgwriter writes": 3,
    # Wait events.
    "CPU": 1,
    "LWLock:WALWrite": 6,
    "IO:WalWrite": 0,
    "IO:WalSync": 5,
    "IO:DataFileExtend": 2,
    "IO:DataFileWrite": 3,
    "IO:WalInitWrite": 4,
    "other": 7,
}
"""Series seen in every run, each with its own colour: the same colour in every run."""


def series_slots(names: Sequence[str]) -> dict[str, int]:
    """Name → palette slot for series drawn together: stable across runs, never shared.

    Known names take their fixed slot, others a hash of the name (crc32, the same on every
    machine and run); a slot already taken in this chart moves on to the next free one.
    """
    out: dict[str, int] = {}
    taken: set[int] = set()
    ordered = sorted(names, key=lambda n: n not in KNOWN)  # fixed slots first; stable sort
    for name in ordered:
        slot = KNOWN[name] if name in KNOWN else zlib.crc32(name.encode()) % (len(PALETTE) - 1)
        for step in range(len(PALETTE)):
            candidate = (slot + step) % len(PALETTE)
            if candidate not in taken or len(taken) >= len(PALETTE):
                slot = candidate
                break
        taken.add(slot)
        out[name] = slot
    return out


FEW_COLOR_SYSTEMS = {"standard", "windows"}
"""Rich colour systems of 16 colours: the palette's eight colours fold onto fewer there
(`TERM=xterm`, `screen`), so 'client extends' and 'client writes' came out alike."""


def uses_glyphs(no_color: bool, color_system: str | None, headless: bool = False) -> bool:
    """Whether series are told apart by glyph: no colour, ASCII only, or 16 colours at most.

    Args:
        no_color: NO_COLOR is set.
        color_system: The terminal's colour system as Rich detected it (None: no colour).
        headless: No terminal at all (tests, screenshots): draw as a full-colour one would.
    """
    if no_color or ascii_mode():
        return True
    return not headless and (color_system is None or color_system in FEW_COLOR_SYSTEMS)


def app_uses_glyphs(app: App[object]) -> bool:
    """`uses_glyphs` for a running app's terminal."""
    return uses_glyphs(app.no_color, app.console.color_system, app.is_headless)


MARK_GAP = 2
"""Columns kept free between a phase rule's label and the next rule."""


def phase_labels(names: Sequence[str]) -> dict[str, str]:
    """A short label per phase name, distinct within the chart.

    The initial when that is unambiguous ('load' → 'L'); a trailing number is kept
    ('vacuum-analyze-2' → 'V2'); names sharing an initial take their words' initials, then
    longer prefixes ('copy' → 'Cop', 'commit' → 'Com').
    """
    unique = list(dict.fromkeys(names))

    def candidates(name: str) -> list[str]:
        number = re.search(r"[-_ ]?(\d+)$", name)
        digits = number.group(1) if number else ""
        stem = name[: number.start()] if number else name
        words = [w for w in re.split(r"[^0-9A-Za-z]+", stem) if w] or [stem or "?"]
        first = words[0]
        out = [first[:1].upper() + digits, "".join(w[:1] for w in words).upper() + digits]
        out += [first[:k].capitalize() + digits for k in range(2, len(first) + 1)]
        return [*out, name]

    out: dict[str, str] = {}
    level = 0
    while len(out) < len(unique):
        pending = [n for n in unique if n not in out]
        labels = {n: candidates(n)[min(level, len(candidates(n)) - 1)] for n in pending}
        taken = set(out.values())
        for name, label in labels.items():
            clash = label in taken or sum(v == label for v in labels.values()) > 1
            if not clash or level >= len(candidates(name)) - 1:
                out[name] = label
        level += 1
    return out


def thin_marks(
    marks: Sequence[tuple[float, str]], x0: float, x1: float, columns: int
) -> list[tuple[float, str]]:
    """The phase rules that fit: each at least its label's width plus `MARK_GAP` columns after
    the one before, so a long matrix shows a few readable rules instead of a picket fence."""
    labels = phase_labels([name for _, name in marks])
    span = (x1 - x0) or 1.0
    out: list[tuple[float, str]] = []
    free_from = -1.0
    for x, name in sorted(marks):
        column = (x - x0) / span * columns
        if column < free_from:
            continue
        out.append((x, name))
        free_from = column + len(labels[name]) + MARK_GAP
    return out


def variant_labels(names: Sequence[str]) -> dict[str, str]:
    """One lower-case letter per variant, distinct within the chart ('deferred' → 'd',
    'none' and 'not-valid' → 'n' and 'o'): one column each, so a trial one column wide still
    shows whose it is; lower case, so it never reads as a phase's initial (upper case). On
    several servers the letter is followed by the server's label ('l15', 'l18')."""
    unique = list(dict.fromkeys(names))
    split = [name.rpartition(" @ ") for name in unique]
    if unique and all(sep and server for _, sep, server in split):
        # Variants on several servers ('logged @ 15'): the variant's letter, then the server
        # ('l15', 'l18', 'u15'), so six pairs read apart on a projector; the same variant
        # keeps its letter on every server.
        initial = variant_labels([variant for variant, _, _ in split])
        return {
            name: initial[variant] + "".join(server.split())
            for name, (variant, _, server) in zip(unique, split, strict=True)
        }
    out: dict[str, str] = {}
    taken: set[str] = set()
    spare = iter("abcdefghijklmnopqrstuvwxyz0123456789")
    for name in unique:
        letters = [c for c in name.lower() if c.isalnum()]
        label = next((c for c in letters if c not in taken), None)
        while label is None or label in taken:
            label = next(spare, "?")
            if label == "?":
                break
        out[name] = label
        taken.add(label)
    return out


def ribbon(
    bands: Sequence[tuple[float, str]],
    x0: float,
    x1: float,
    columns: int,
    labels: Mapping[str, str] | None = None,
) -> str:
    """A row of `columns` cells: each the letter of the variant whose trial runs there.

    A trial's first column shows its letter, the rest of its band '─', so where one trial
    ends and the next begins is visible even when they are of the same variant; a trial
    narrower than a column shares it with the one before (the later one wins). Blank where
    no trial runs (before the first). `labels`: the chart's letters (else made from `bands`),
    so the key under the chart matches whichever trials the window shows."""
    labels = labels if labels is not None else variant_labels([name for _, name in bands])
    span = (x1 - x0) or 1.0
    cells = [" "] * columns
    ordered = sorted(bands)
    for n, (x, name) in enumerate(ordered):
        if x > x1:
            continue
        # A trial starting at the window's right edge is in its last column.
        start = min(max(int((x - x0) / span * columns), 0), columns - 1)
        stop = ordered[n + 1][0] if n + 1 < len(ordered) else x1
        end = min(int((stop - x0) / span * columns), columns)
        label = labels[name]
        # A label of several cells ('l15') where the trial has room for it, else its first.
        label = label if end - start >= len(label) else label[:1]
        for c, char in enumerate(label):
            if start + c < columns:
                cells[start + c] = char
        for c in range(start + len(label), end):
            cells[c] = "─"
    return "".join(cells)


def rich_color(slot: int) -> str:
    """A palette slot as a Rich colour ('#e69f00')."""
    r, g, b = PALETTE[slot][1]
    return f"#{r:02x}{g:02x}{b:02x}"


def _short(n: float, top: float) -> str:
    """A tick label with as many decimals as the axis' range needs (0.05, 2.5, 120, 12.4k)."""
    if n == 0:
        return "0"
    for unit, size in (("M", 1e6), ("k", 1e3)):
        if abs(top) >= size:
            return f"{n / size:.1f}{unit}"
    digits = 2 if top < 1 else 1 if top < 10 else 0
    return f"{n:.{digits}f}"


def legend(labels: Sequence[str], *, no_color: bool, stacked: bool = False) -> list[Text]:
    """One entry per series, marked as the chart marks it (colour, or a glyph in NO_COLOR)."""
    slots = series_slots(labels)
    entries = []
    if stacked and no_color:
        entries.append(Text("bottom to top:"))
    for label in labels:
        entry = Text()
        slot = slots[label]
        if no_color or ascii_mode():
            entry.append(MARKERS[slot], style="bold")
        else:
            entry.append("■" if stacked else "━", style=rich_color(slot))
        entry.append(f" {label}")
        entries.append(entry)
    return entries


@dataclass
class LineSpec:
    """Lines over time.

    Args:
        series: Label → (x, y) points, x in seconds.
        ylabel: Unit of y, shown as the chart title.
        empty: Text shown when there is nothing to draw.
    """

    series: Mapping[str, Sequence[tuple[float, float]]]
    ylabel: str
    empty: str = "waiting for samples"
    marks: Sequence[tuple[float, str]] = ()
    """(seconds, phase) where a phase starts: a thin rule with the phase's initial."""
    bands: Sequence[tuple[float, str]] = ()
    """(seconds, variant) where a trial starts: its band is labelled under the zero line."""


@dataclass
class StackSpec:
    """Stacked bars over time: per x, values of several parts.

    Args:
        points: (x, {part: value}) per sample.
        parts: Parts in stacking order (others are dropped by the caller).
        ylabel: Unit of y, shown as the chart title.
        empty: Text shown when there is nothing to draw.
    """

    points: Sequence[tuple[float, dict[str, float]]]
    parts: list[str]
    ylabel: str
    empty: str = "waiting for samples"
    marks: Sequence[tuple[float, str]] = ()
    """(seconds, phase) where a phase starts: a thin rule with the phase's initial."""
    bands: Sequence[tuple[float, str]] = ()
    """(seconds, variant) where a trial starts: its band is labelled under the zero line."""


ChartSpec = LineSpec | StackSpec


class TimeChart(PlotextPlot):
    """A plotext chart fed by a callable that returns what to draw.

    Args:
        source: Returns the chart's current `LineSpec` or `StackSpec`; called only when
            the chart redraws.
        id: Widget id.
        classes: CSS classes.
    """

    DEFAULT_CSS = """
    TimeChart {
        height: 1fr;
        min-height: 6;
    }
    """

    def __init__(
        self,
        source: Callable[[], ChartSpec],
        *,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self._source = source
        self._dirty = True
        self.draws = 0
        """How many times the chart was rebuilt (benchmarks and tests read it)."""
        self.drawn_spec: ChartSpec | None = None
        """What the last rebuild drew."""
        self._next_draw = 0.0
        """time.monotonic() before which new data waits (see BUILD_SHARE)."""
        self._overlay = plotext_speed.Overlay()
        """The phase rules and labels and the variant letters, drawn after plotext's build."""
        self._cut: tuple[object, list[Strip]] | None = None
        """(what the lines were drawn from, the lines): see `render_line`."""
        self._kept: dict[tuple[object, ...], tuple[ChartSpec, float, list[Strip]]] = {}
        """Each view's last lines (its spec, when they were built, the lines), by the view
        and what else they were drawn for (`_lines_for`): a key back to a chart whose data
        did not change since it was drawn builds nothing."""
        self._for_key = False
        """The next lines are for a chart key: a view's recent lines may stand in for a
        build until just after the key's frame (`show_for_key`)."""
        self.builds = 0
        """How many times plotext built the chart for the screen (tests read it)."""
        self._tick_waited = False
        """The redraw for new data already waited one tick for a key's frame (`_tick`)."""

    def on_mount(self) -> None:
        """Start the redraw timer (PlotextPlot's own on_mount runs too: Textual calls each
        class's handler)."""
        self.set_interval(1 / REDRAW_HZ, self._tick)

    def mark_dirty(self) -> None:
        """New data: redraw at the next tick if on screen."""
        self._dirty = True

    def redraw_now(self) -> None:
        """Rebuild immediately, when visible; otherwise when it next shows."""
        self._dirty = True
        if self.is_mounted and self.display:
            self._draw()

    def show_for_key(self) -> None:
        """A chart key: the view it asks for, in the key's own screen update.

        Drawn within `RECENT_S` seconds, the view's last lines are shown at once and the
        samples that came since are built just after the key's frame (a build is 6-11 ms
        of a chart key's ~22 at 160x45 on a quiet machine, more on a loaded one); older
        or never drawn at this size, it is built now, as `redraw_now` does."""
        self._for_key = self.is_mounted and self.display
        self.redraw_now()

    def _catch_up(self) -> None:
        """After a chart key's frame: build the samples its recent lines left out."""
        if self._dirty and self.is_on_screen:
            self._tick_waited = False
            self._draw()

    def _tick(self) -> None:
        if self._dirty and self.is_on_screen and time.monotonic() >= self._next_draw:
            if not self._tick_waited and self._key_frame_pending():
                # A build now (10-18 ms at 160x45, the more on a loaded machine) would hold
                # the key's screen update: new data redraws just after it (not at the next
                # tick, which at a few keys a second lands in the next key's). Once: keys
                # held down still let the chart follow its data.
                self._tick_waited = True
                self.call_after_refresh(self.set_timer, AFTER_KEY_FRAME, self._tick)
                return
            self._tick_waited = False
            self._draw()

    def _key_frame_pending(self) -> bool:
        """Whether the screen says a key's screen update may be in the making (the lab's
        `key_frame_pending`; a screen without it: never)."""
        pending = getattr(self.screen, "key_frame_pending", None)
        return bool(pending()) if callable(pending) else False

    def on_show(self) -> None:
        """A hidden chart that missed data catches up when it shows."""
        if self._dirty:
            self._draw()

    def _draw(self) -> None:
        self._dirty = False
        self.drawn_spec = self._source()
        self.draws += 1
        self.refresh()

    def render_line(self, y: int) -> Strip:
        """Line `y` of the chart, cut straight from plotext's cells.

        Through `render`, Textual turned the chart's Text (~100 spans) into lines again
        whenever anything refreshed the chart — as long again as building it (3–9 ms at
        80x24). Here the lines are made once per build, from the same runs of cells, and
        kept until the data, the size, the theme or the chart's own style change.
        """
        base = self.visual_style.rich_style
        key = (self.draws, self.size, self.app.theme, base)
        if self._cut is None or self._cut[0] != key:
            self._cut = (key, self._lines_for(base))
        lines = self._cut[1]
        return lines[y] if 0 <= y < len(lines) else Strip.blank(self.size.width, base)

    def _lines_for(self, base: Style) -> list[Strip]:
        """The lines of the spec drawn now: kept from an earlier draw of the same spec (the
        pane makes a mode's spec again only when a sample, a phase or a trial came) at the
        same size, theme, style and marking, else built. `i w l` back and forth on a paused
        or finished run, or faster than the samples come, then cost no plotext build."""
        spec = self.drawn_spec
        for_key, self._for_key = self._for_key, False
        view = None if spec is None else (type(spec), spec.ylabel)
        key = (view, self.size, self.app.theme, base, app_uses_glyphs(self.app))
        kept = self._kept.get(key)
        if kept is not None:
            kept_spec, built, lines = kept
            if kept_spec is spec:
                return lines
            if for_key and time.monotonic() - built <= RECENT_S:
                # The key's frame shows the view as drawn a moment ago; its new samples
                # follow just after the frame, as a tick's redraw that waited for one does.
                self._dirty = True
                self.call_after_refresh(self.set_timer, AFTER_KEY_FRAME, self._catch_up)
                return lines
        lines = self._strips(base)
        if spec is not None:
            self._kept.pop(key, None)
            self._kept[key] = (spec, time.monotonic(), lines)
            while len(self._kept) > KEPT_SPECS:
                del self._kept[next(iter(self._kept))]
        return lines

    def _strips(self, base: Style) -> list[Strip]:
        self.builds += 1
        width, height = self.size
        out = []
        # The chart's style under each of the few colours plotext drew: one addition per
        # colour, not two additions and a new Style per run of cells (~1,200 runs at 160x45).
        styled: dict[Style | None, Style] = {}
        for y, row in enumerate(self._timed(self._render_spec)[:height]):
            segments = []
            x = 0
            for part, style in row:
                under = styled.get(style)
                if under is None:
                    under = styled[style] = base + style
                # Each run carries its offset as Textual's own text lines do (selection
                # reads it; a screenshot keeps runs apart by it).
                segments.append(Segment(part, at_offset(under, x, y)))
                x += len(part)
            out.append(Strip(segments).adjust_cell_length(width, base))
        return out

    def render(self) -> RenderResult:
        """Plot the last fetched spec from a clean figure, at the size we have now (as
        Text; the screen takes the same runs of cells through `render_line`).

        Plotext keeps computed ticks in the figure between builds, so the plotting calls
        are replayed on every render rather than once per data change: a render after a
        resize then never reuses the ticks of the old size.
        """
        return runs_text(self._timed(self._render_spec))

    def _timed(self, build: Callable[[], Runs]) -> Runs:
        """A build; how long it took sets when new data may redraw it next (BUILD_SHARE)."""
        started = time.monotonic()
        try:
            return build()
        finally:
            took = time.monotonic() - started
            self._next_draw = started + took + took / BUILD_SHARE

    def _render_spec(self) -> Runs:
        spec = self.drawn_spec
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        self._overlay.clear()
        if spec is None:
            empty = super().render()
            return text_runs(empty if isinstance(empty, Text) else Text(str(empty)))
        glyphs = app_uses_glyphs(self.app)
        if isinstance(spec, LineSpec):
            drawn = self._lines(spec, glyphs)
        else:
            drawn = self._stack(spec, glyphs)
        if not drawn:
            plt.title(spec.empty)
            plt.xticks([])
            plt.yticks([])
        else:
            plt.title(spec.ylabel)
            plt.xlabel("s")
        return self._build()

    def _build(self) -> Runs:
        """PlotextPlot.render without the round trip through ANSI text: plotext's cell
        matrix straight into runs of cells (writing the ANSI canvas and parsing it back was
        a fifth of a chart key's time)."""
        plt = self.plt
        width, height = self.size
        plt.plotsize(width, height)
        plt._set_size(width, height)  # PlotextPlot.render's belt and braces: the same here
        plt.theme(self._get_plotext_theme_name(self.app.theme))
        figure: Any = plt  # plotext's figure, past what textual-plotext's stubs declare
        figure._set_sizes()
        self._overlay.fit(figure)
        figure._build_matrix()
        self._overlay.draw(figure)
        return matrix_runs(figure.monitor.matrix)

    def _lines(self, spec: LineSpec, glyphs: bool) -> bool:
        plt = self.plt
        drawn = False
        slots = series_slots(list(spec.series))
        columns = max(1, self.size.width - 6)  # less the y axis' labels
        # Each column's extremes keep the highest point and the first and last: the top and
        # the time span come from the thinned series (a pass over every sample cost a
        # millisecond a build).
        thinned = {name: thin(points, columns) for name, points in spec.series.items() if points}
        for name, points in thinned.items():
            xs = [p[0] for p in points]
            ys = [p[1] for p in points]
            slot = slots[name]
            plt.plot(
                xs,
                ys,
                marker=MARKERS[slot] if glyphs else "braille",
                color=PALETTE[slot][1],
            )
            drawn = True
        if drawn:
            top = max(max(p[1] for p in points) for points in thinned.values())
            self._yaxis(top)
            x0 = min(p[0] for points in thinned.values() for p in points)
            x1 = max(p[0] for points in thinned.values() for p in points)
            inside = [(at, name) for at, name in spec.marks if x0 <= at <= x1]
            self._marks(thin_marks(inside, x0, x1, columns), top, spec.marks)
            self._bands(spec.bands, x0, x1, columns, top)
        return drawn

    def _bands(
        self,
        bands: Sequence[tuple[float, str]],
        x0: float,
        x1: float,
        columns: int,
        top: float,
    ) -> None:
        """Each trial's variant in a row under the zero line: which trial belongs to which
        variant, after the phase rules were thinned to a few."""
        # The trial in flight at the window's left edge started before it: it counts too.
        before = [(x0, name) for at, name in bands if at <= x0][-1:]
        shown = [*before, *(b for b in bands if x0 < b[0] <= x1)]
        if not shown:
            return
        top = top * 1.1 if top > 0 else 1.0
        rows = max(self.size.height - 4, 3)  # less the title, x ticks and x label
        below = top / (rows - 1) * 1.5  # a text row clear of the lines drawn at zero
        self.plt.ylim(-below, top)
        row = ribbon(shown, x0, x1, columns, variant_labels([name for _, name in bands]))
        span = (x1 - x0) or 1.0
        for n, cell in enumerate(row):
            if cell != " ":
                at = x0 + (n + 0.5) / columns * span
                self._overlay.text(self.plt, cell, at, -below * 0.7, "gray", "center")

    def _marks(
        self, marks: Sequence[tuple[float, str]], top: float, every: Sequence[tuple[float, str]]
    ) -> None:
        """A rule where each phase starts, its label at the top: 'COPY ends, COMMIT starts'.

        Labels come from all the chart's phases (`every`), so a phase keeps its label
        whichever rules are thinned away, and the caption's key matches.
        """
        top = top * 1.1 if top > 0 else 1.0
        labels = phase_labels([name for _, name in every])
        for x, name in marks:
            self._overlay.vline(self.plt, x, "gray")
            self._overlay.text(self.plt, labels.get(name, name[:1].upper()), x, top, "gray", "left")

    def _yaxis(self, top: float) -> None:
        """0 to a bit above the top, ticks labelled short (12k, 1.5M): four steps when the
        plot has the rows for them, fewer on a short chart. Two ticks on one row collide, and
        plotext settles a collision through a set, so which label showed changed from run to
        run (110.5k or 220.9k at 80x24)."""
        top = top * 1.1 if top > 0 else 1.0
        plot_rows = self.size.height - 4  # less the title, x ticks, x label and frame
        steps = 4 if plot_rows >= 12 else 2 if plot_rows >= 4 else 1
        ticks = [top * n / steps for n in range(steps + 1)]
        self.plt.ylim(0, top)
        self.plt.yticks(ticks, [_short(t, top) for t in ticks])

    def _stack(self, spec: StackSpec, glyphs: bool) -> bool:
        plt = self.plt
        if not spec.points or not spec.parts:
            return False
        # Bars at integer positions, labelled with seconds: plotext turns other x values
        # into strings and orders them through a set, which differs from run to run.
        # Bars two columns wide or more: narrower ones cost plotext time and show nothing.
        points = buckets(spec.points, max(8, min(MAX_BARS, (self.size.width - 6) // 2)))
        xs = list(range(len(points)))
        ys = [[p[1].get(part, 0.0) for p in points] for part in spec.parts]
        slots = series_slots(spec.parts)
        top = max((sum(col) for col in zip(*ys, strict=True)), default=0.0)
        columns = max(1, self.size.width - 6)
        rows = max(1, self.size.height - 4)
        for part, (bx, by) in zip(spec.parts, bar_cells(ys, columns, rows, top), strict=True):
            if bx:
                slot = slots[part]
                # Without colour the parts differ by glyph (a solid block would merge them).
                marker = MARKERS[slot] if glyphs else "sd"
                plt.scatter(bx, by, color=PALETTE[slot][1], marker=marker)
        plt.xlim(-0.5, len(xs) - 0.5)
        step = max(1, len(xs) // 5)
        plt.xticks([float(x) for x in xs[::step]], [f"{points[i][0]:.0f}" for i in xs[::step]])
        self._yaxis(top)
        # Bars sit at indices: a phase starting at t is ruled at the first bar at or after t.
        ats = [p[0] for p in points]
        placed = [(next((i for i, a in enumerate(ats) if a >= t), -1), n) for t, n in spec.marks]
        inside = [(float(i), n) for i, n in placed if 0 < i]
        self._marks(thin_marks(inside, 0.0, float(max(1, len(xs) - 1)), columns), top, spec.marks)
        at_bar = [
            (float(max(next((i for i, a in enumerate(ats) if a >= t), len(ats)), 0)), n)
            for t, n in spec.bands
        ]
        self._bands(at_bar, 0.0, float(max(1, len(xs) - 1)), columns, top)
        return True


def bar_cells(
    parts: Sequence[Sequence[float]], columns: int, rows: int, top: float
) -> list[tuple[list[float], list[float]]]:
    """Stacked bars as points, one list per part: plotext's own stacked bars draw each bar of
    each part as a filled rectangle (a plot of its own, ~0.15 ms apiece: 140 of them took
    20–30 ms at 80x24), where a scatter per part of the cells it covers draws the same ink.

    Bar `i` spans x from i-0.5 to i+0.5 and a part from the parts below it to its own top;
    points are spaced at most half a column and half a row apart, so every cell a part
    covers gets one; a part above zero always gets at least its lowest point. Parts later in
    `parts` are drawn later, so where two share a cell the upper one shows.
    """
    bars = len(parts[0]) if parts else 0
    if not bars:
        return [([], []) for _ in parts]
    per_bar = max(1, math.ceil(2 * columns / bars))
    offsets = [-0.5 + (j + 0.5) / per_bar for j in range(per_bar)]
    dy = (top * 1.1 if top > 0 else 1.0) / (2 * rows)
    base = [0.0] * bars
    out: list[tuple[list[float], list[float]]] = []
    for values in parts:
        px: list[float] = []
        py: list[float] = []
        for i, value in enumerate(values):
            low, high = base[i], base[i] + value
            base[i] = high
            if value <= 0:
                continue
            ys = [low + min(dy, value) / 2]
            while ys[-1] + dy < high:
                ys.append(ys[-1] + dy)
            for offset in offsets:
                px.extend([i + offset] * len(ys))
                py.extend(ys)
        out.append((px, py))
    return out


_OFFSET_IDS = itertools.count(random.getrandbits(24))
"""Link ids of the styles `at_offset` makes, as Rich numbers those of `Style.from_meta`."""


_STYLE_SLOTS = (
    "_ansi",
    "_style_definition",
    "_color",
    "_bgcolor",
    "_attributes",
    "_set_attributes",
    "_link",
    "_link_id",
    "_meta",
    "_null",
    "_hash",
)
_FAST_OFFSET = all(hasattr(Style(bold=True), name) for name in _STYLE_SLOTS)
"""Rich's Style has the private slots `at_offset` fills (rich is not pinned: another release
may not, and then the offset is added the slow, public way)."""


def at_offset(style: Style, x: int, y: int) -> Style:
    """`style + Style.from_meta({"offset": (x, y)})`, made in one step: an equal style with
    the same meta, without the meta-only Style and the addition made per run of cells.

    A style with meta or a link of its own, or a null one, takes Rich's own addition."""
    if not _FAST_OFFSET or style._null or style._meta is not None or style._link:
        return style + Style.from_meta({"offset": (x, y)})
    meta = pickle.dumps({"offset": (x, y)})
    new: Style = Style.__new__(Style)
    new._ansi = None
    new._style_definition = None
    new._color = style._color
    new._bgcolor = style._bgcolor
    new._attributes = style._attributes
    new._set_attributes = style._set_attributes
    new._link = None
    new._link_id = f"{next(_OFFSET_IDS)}{hash(meta)}"
    new._meta = meta
    new._null = False
    new._hash = None
    return new


Runs = list[list[tuple[str, Style | None]]]
"""A chart's rows, top first, each as (text, style) runs."""


def text_runs(text: Text) -> Runs:
    """Text (PlotextPlot's own, for an empty chart) as runs."""
    out: Runs = []
    for line in text.split("\n", allow_blank=True):
        plain = line.plain
        row: list[tuple[str, Style | None]] = []
        at = 0
        for span in sorted(line.spans, key=lambda s: s.start):
            if span.start > at:
                row.append((plain[at : span.start], None))
            style = span.style if isinstance(span.style, Style) else Style.parse(span.style)
            row.append((plain[span.start : span.end], style))
            at = span.end
        if at < len(plain):
            row.append((plain[at:], None))
        out.append(row)
    return out


def runs_text(rows: Runs) -> Text:
    """Runs as one Text, each row ended by a newline as plotext's canvas ends them."""
    text = Text()
    append = text.append
    for row in rows:
        for part, style in row:
            append(part, style)
        append("\n")
    return text


_STYLES: dict[tuple[object, object, object], Style] = {}
"""(fullground, style, background) of a plotext cell → the Rich style its ANSI codes mean."""


def cell_style(fullground: object, style: object, background: object) -> Style:
    """The Rich style plotext's ANSI codes give a cell: decoded once per colour triple by
    the same decoder `Text.from_ansi` uses, so the chart looks as it did through ANSI."""
    key = (fullground, style, background)
    if key not in _STYLES:
        codes = plotext_utility.colors_to_ansi(fullground, style, background)
        decoded = Text.from_ansi(f"{codes}x{plotext_utility.ansi_end}")
        found = decoded.spans[0].style if decoded.spans else Style.null()
        _STYLES[key] = Style.parse(found) if isinstance(found, str) else found
    return _STYLES[key]


def matrix_runs(matrix: object) -> Runs:
    """Plotext's cell matrix (markers and colours, bottom row first) as runs, top row first:
    each run of cells of one colour one run."""
    markers: list[list[str]] = matrix.marker  # type: ignore[attr-defined]
    fore: list[list[object]] = matrix.fullground  # type: ignore[attr-defined]
    styles: list[list[object]] = matrix.style  # type: ignore[attr-defined]
    back: list[list[object]] = matrix.background  # type: ignore[attr-defined]
    out: Runs = []
    for row in range(len(markers) - 1, -1, -1):
        cells = markers[row]
        colours = list(zip(fore[row], styles[row], back[row], strict=True))
        runs: list[tuple[str, Style | None]] = []
        start = 0
        for col in range(1, len(cells) + 1):
            if col == len(cells) or colours[col] != colours[start]:
                runs.append(("".join(cells[start:col]), cell_style(*colours[start])))
                start = col
        out.append(runs)
    return out


def matrix_text(matrix: object) -> Text:
    """Plotext's cell matrix as Rich Text, top row first: each run of cells of one colour
    one span."""
    return runs_text(matrix_runs(matrix))
