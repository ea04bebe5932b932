"""The "Server activity" pane: WAL rate, pg_stat_io rates or wait events, switchable by key."""

from __future__ import annotations

from typing import Literal

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Static

from explorer.analysis.units import human_bytes, human_count
from explorer.lab.view.runstate import RunView
from explorer.models import Capabilities
from explorer.tui.restyle import NoFocusStyles
from explorer.tui.widgets.chart import (
    ChartSpec,
    LineSpec,
    StackSpec,
    TimeChart,
    app_uses_glyphs,
    legend,
    phase_labels,
    variant_labels,
)
from explorer.tui.widgets.fit import FitWidth, flow
from explorer.tui.widgets.sweepchart import SweepView, is_sweep
from explorer.tui.widgets.sweepchart import caption as sweep_caption

Mode = Literal["wal", "io", "waits", "sweep"]

MODES: dict[Mode, tuple[str, str]] = {
    "io": ("i", "io"),
    "waits": ("w", "waits"),
    "wal": ("l", "wal"),
    "sweep": ("v", "sweep"),
}
"""Mode → (key, label) in the order the mode line shows them (sweep: only when the run on
screen is a sweep of one setting)."""

IO_SERIES = 6
"""pg_stat_io lines drawn at most (the busiest in the window)."""
WAIT_PARTS = 5
"""Wait events stacked at most; the rest are summed as 'other'."""
CAPTION_MAX = 4
"""Rows of the caption at most (but the sweep's: a line per value)."""
SWEEP_CAPTION_MAX = 13
"""Rows of the sweep's caption at most: its legend and twelve values."""
FLUSH_NOTE = "client backend counters arrive when it idles"
"""Why the client backend's pg_stat_io rows jump: they are published when it goes idle."""


class ActivityPane(NoFocusStyles, Vertical):
    """Chart of what the server is doing, with a one-line reading under it.

    Args:
        view: The run state it draws from.
        id: Widget id.
    """

    DEFAULT_CSS = """
    ActivityPane #activity-caption {
        height: auto;
        max-height: 4;
    }
    """

    mode: reactive[Mode] = reactive("wal")
    """What the chart shows: WAL MiB/s, pg_stat_io rates, or wait events."""

    caps: reactive[Capabilities | None] = reactive(None, init=False)
    """The connected server's capabilities (bound from the screen), for what it lacks."""

    def __init__(self, view: RunView, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="pane")
        self.view = view
        self._caption_stale = True
        self._caption_lines = -1
        self._specs: dict[Mode, tuple[tuple[object, ...], ChartSpec]] = {}
        """Each mode's last spec, with what it was made from (`_spec`)."""
        self._mode_lines: dict[Mode, tuple[int, int]] = {}
        """Each mode's caption rows as last measured: (width, rows) (`update_caption`)."""

    def compose(self) -> ComposeResult:
        """Chart and caption."""
        yield TimeChart(self._spec, id="activity-chart")
        sweep = SweepView(self.view, id="activity-sweep")
        sweep.display = False
        yield sweep
        yield Static(id="activity-caption")

    def on_mount(self) -> None:
        """Title and first caption."""
        self.border_title = "Server activity"
        self._mode_line()
        self.update_caption()

    @property
    def chart(self) -> TimeChart:
        """The chart widget."""
        return self.query_one(TimeChart)

    @property
    def sweep(self) -> SweepView:
        """The sweep's two charts (the `v` view)."""
        return self.query_one(SweepView)

    def watch_mode(self, old: Mode, new: Mode) -> None:
        """Switch at once: a key press must show within a frame."""
        if not self.is_mounted:
            return
        if "sweep" in (old, new):
            self.chart.display = new != "sweep"
            self.sweep.display = new == "sweep"
            caption = self.query_one("#activity-caption", Static)
            caption.styles.max_height = SWEEP_CAPTION_MAX if new == "sweep" else CAPTION_MAX
        self._mode_line()
        self.update_caption(force=True, shown_only=True)
        if new == "sweep":
            self.sweep.redraw_now()
        else:
            self.chart.show_for_key()

    def _mode_line(self) -> None:
        parts = Text()
        shown = [m for m in MODES if m != "sweep" or self.mode == m or is_sweep(self.view)]
        for n, mode in enumerate(shown):
            key, label = MODES[mode]
            if n:
                parts.append(" · " if len(shown) < len(MODES) else " ")
            gap = " " if len(shown) < len(MODES) else ""  # four: it fits a narrow pane
            if mode == self.mode:
                parts.append(f"▸[{key}]{gap}{label}", style="bold reverse")
            else:
                parts.append(f"[{key}]{gap}{label}")
        self.border_subtitle = parts

    def data_changed(self) -> None:
        """New sample: caption now, chart at its next tick."""
        self.chart.mark_dirty()
        self.sweep.mark_dirty()
        self.update_caption()

    def reset(self, view: RunView) -> None:
        """Follow another run's state."""
        self.view = view
        self.sweep.view = view
        if self.mode == "sweep" and not is_sweep(view):
            self.mode = "wal"
        self._mode_line()
        self.chart.redraw_now()
        self.sweep.redraw_now()
        self.update_caption()

    # ------------------------------------------------------------------ what to draw
    def watch_caps(self, _old: Capabilities | None, _new: Capabilities | None) -> None:
        """The server is known: say now what it lacks."""
        if self.is_mounted:
            self.update_caption()
            self.chart.redraw_now()

    def _no_io(self) -> str | None:
        caps = self.view.caps or self.caps
        if caps is not None and caps.pg_stat_io == "none":
            return f"pg_stat_io: not on PG {caps.major}"
        return None

    def _spec(self, mode: Mode | None = None) -> ChartSpec:
        """What the chart draws in `mode` (default: the mode shown), made again only when a
        sample, a phase or a trial came since: a caption is measured in every mode and drawn
        in one, and the chart draws the same spec (five specs a chart key, one now)."""
        mode = mode or self.mode
        act = self.view.activity
        phases, trials = self.view.phase_marks, self.view.trial_marks
        made_from: tuple[object, ...] = (act, act.samples, self._no_io())
        made_from += (len(phases), phases[-1] if phases else None)
        made_from += (len(trials), trials[-1] if trials else None)
        kept = self._specs.get(mode)
        if kept is not None and kept[0][0] is act and kept[0][1:] == made_from[1:]:
            return kept[1]
        spec = self._make_spec(mode)
        self._specs[mode] = (made_from, spec)
        return spec

    def _make_spec(self, mode: Mode) -> ChartSpec:
        act = self.view.activity
        marks = list(self.view.phase_marks)
        bands = list(self.view.trial_marks)
        if mode == "wal":
            return LineSpec(
                {"WAL": list(act.wal)}, "WAL MiB/s (insert position)", marks=marks, bands=bands
            )
        if mode == "io":
            ranked = sorted(act.io.items(), key=lambda kv: -sum(v for _, v in kv[1]))
            series = {k: list(v) for k, v in ranked[:IO_SERIES] if any(y for _, y in v)}
            empty = self._no_io() or "no pg_stat_io activity yet"
            return LineSpec(
                series, "pg_stat_io operations/s", empty=empty, marks=marks, bands=bands
            )
        totals: dict[str, float] = {}
        for _, waits in act.waits:
            for name, value in waits.items():
                totals[name] = totals.get(name, 0.0) + value
        top = sorted(totals, key=lambda k: -totals[k])[:WAIT_PARTS]
        points = []
        for at, waits in act.waits:
            row = {k: waits.get(k, 0.0) for k in top}
            other = sum(v for k, v in waits.items() if k not in top)
            if other:
                row["other"] = other
            points.append((at, row))
        parts = [*top, *(["other"] if len(totals) > len(top) else [])]
        return StackSpec(
            points if parts else [],
            parts,
            "workload backends by wait event",
            marks=marks,
            bands=bands,
        )

    def update_caption(self, *, force: bool = False, shown_only: bool = False) -> None:
        """The legend and the numbers behind the chart, as text (readable without colour).

        A hidden pane is not repainted (it catches up when it shows), and a layout pass,
        which repaints every scrollbar on screen, is asked for only when the height changes.
        The height is the tallest of the three modes' captions, so switching the chart by
        key changes no layout: the press costs the chart and the caption, nothing else.

        `shown_only` (a chart key): the other modes' heights are the ones last measured at
        this width, so the key makes the shown mode's spec and caption only, not all three
        (each ranking every sample's series when samples came since); the next repaint of
        the live parts measures them all again.
        """
        caption = self.query_one("#activity-caption", Static)
        if not force and not self.is_on_screen:
            self._caption_stale = True
            return
        self._caption_stale = False
        width = max(caption.content_size.width, 1)
        # The sweep's caption (a line per value) sets the height only while it shows.
        modes: list[Mode] = (
            ["sweep"] if self.mode == "sweep" else [m for m in MODES if m != "sweep"]
        )
        lines = max(self._caption_height(width, mode, shown_only) for mode in modes)
        if lines != self._caption_lines:
            caption.styles.height = lines  # a layout pass, once per change of height
            self._caption_lines = lines
        caption.update(FitWidth(self._caption), layout=False)

    def _caption_height(self, width: int, mode: Mode, kept: bool) -> int:
        """Rows of `mode`'s caption at `width`: measured, or with `kept` for a mode not shown,
        as last measured at this width."""
        if kept and mode != self.mode:
            last = self._mode_lines.get(mode)
            if last is not None and last[0] == width:
                return last[1]
        lines = self._caption(width, mode).plain.count("\n") + 1
        self._mode_lines[mode] = (width, lines)
        return lines

    def on_resize(self) -> None:
        """A new width wraps the caption anew: its height is measured again (once drawn at
        the full width of a layout not yet final, it kept that height, and the first chart
        key then paid a layout pass)."""
        if self._caption_lines >= 0:
            self.call_after_refresh(self.update_caption)

    def on_sweep_view_arranged(self) -> None:
        """The sweep's charts now show side by side, or one at a time: its caption follows."""
        if self.mode == "sweep":
            self.update_caption(force=True)

    def on_show(self) -> None:
        """A pane that was hidden while data came in draws it now."""
        if self._caption_stale:
            self.update_caption(force=True)

    def _marks_legend(self) -> list[Text]:
        """What the initials on the chart's phase rules stand for, each phase once."""
        seen: dict[str, None] = {}
        for _, name in self.view.phase_marks:
            seen.setdefault(name, None)
        labels = phase_labels(list(seen))
        entries = []
        for name in seen:
            entry = Text(labels[name], style="bold")
            entry.append(f" {name}")
            entries.append(entry)
        # The trials' variants, labelled under the zero line (lower case).
        variants: dict[str, None] = {}
        for _, name in self.view.trial_marks:
            variants.setdefault(name, None)
        short = variant_labels(list(variants))
        for name in variants:
            entry = Text(short[name], style="bold")
            entry.append(f" {name}")
            entries.append(entry)
        return entries

    def _caption(self, width: int, mode: Mode | None = None) -> Text:
        act = self.view.activity
        text = Text()
        mode = mode or self.mode
        if mode == "sweep":
            if not is_sweep(self.view):
                return text if self.mode != "sweep" else sweep_caption(None, width, False)
            sweep = self.sweep
            return sweep_caption(sweep.source(), width, app_uses_glyphs(self.app), sweep.part())
        spec = self._spec(mode)
        no_color = app_uses_glyphs(self.app)
        if isinstance(spec, LineSpec) and len(spec.series) > 1:
            text.append_text(flow(legend(list(spec.series), no_color=no_color), width))
            text.append("\n")
        elif isinstance(spec, StackSpec) and spec.parts:
            entries = legend(spec.parts, no_color=no_color, stacked=True)
            text.append_text(flow(entries, width, gap=" · " if no_color else "  "))
            text.append("\n")
        if mode == "wal":
            marks = self._marks_legend()
            if marks:
                text.append_text(flow(marks, width, gap=" · "))
                text.append("\n")
            now = act.wal[-1][1] if act.wal else 0.0
            peak = max((v for _, v in act.wal), default=0.0)
            text.append(f"now {now:.1f} MiB/s · peak {peak:.1f} MiB/s")
            if act.relation_bytes is not None:
                text.append(f" · table {human_bytes(act.relation_bytes)}")
        elif mode == "io":
            missing = self._no_io()
            if missing:
                text.append(missing)
            elif act.last_io:
                top = sorted(act.last_io.items(), key=lambda kv: -kv[1])[:2]
                text.append("last flush Δ: " + " · ".join(f"{k} {human_count(v)}" for k, v in top))
            else:
                text.append("no pg_stat_io flush yet")
            text.append(f"\n({FLUSH_NOTE})", style="dim")
        else:
            latest = act.waits[-1][1] if act.waits else {}
            if latest:
                top = sorted(latest.items(), key=lambda kv: -kv[1])[:3]
                text.append("now: " + " · ".join(f"{k} {v:.1f}" for k, v in top))
            else:
                text.append("now: no workload backend active")
            text.append("\n(avg. workload backends per wait)", style="dim")
        return text
