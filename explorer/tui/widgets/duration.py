"""The "Duration" pane: the trial in flight, then one bar per variant as trials finish."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from explorer.lab.report import SummaryRow
from explorer.lab.runstate import RunView
from explorer.models import RunRecord
from explorer.tui.widgets.fit import FitWidth
from explorer.tui.widgets.summary import SummaryCard

BAR = "█"
PARTIAL = " ▏▎▍▌▋▊▉"
"""Eighth blocks, so short bars still differ."""


def bar(fraction: float, width: int) -> str:
    """A left-aligned bar of `fraction` × `width` cells, in eighths."""
    fraction = min(max(fraction, 0.0), 1.0)
    eighths = round(fraction * width * 8)
    full, rest = divmod(eighths, 8)
    return BAR * full + (PARTIAL[rest] if rest else "")


def fmt_seconds(value: float | None) -> str:
    """6.48 s, 312 ms."""
    if value is None:
        return "—"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    return f"{value:.2f} s"


def triplet(row: SummaryRow, top: float) -> tuple[str, str]:
    """('2.60 s', ' (2.29–2.91)') or ('961 ms', ' (464–1460)'): median, min–max, one unit."""
    ms = top < 1
    unit, factor, digits = ("ms", 1000, 0) if ms else ("s", 1, 2)

    def f(v: float | None) -> str:
        return "—" if v is None else f"{v * factor:.{digits}f}"

    spread = f" ({f(row.min)}–{f(row.max)})" if row.n > 1 else ""
    return f"{f(row.median)} {unit}", spread


def phases_of(rows: list[SummaryRow]) -> list[str]:
    """Phases present in the summary, 'total' first when there is one."""
    seen: list[str] = []
    for row in rows:
        if row.phase != "—" and row.phase not in seen:
            seen.append(row.phase)
    return sorted(seen, key=lambda p: p != "total")


def _repaint(
    static: Static, build: Callable[[int], Text], last: tuple[int, str]
) -> tuple[int, str]:
    """Update `static` with `build`'s text only if it changed; lay out only if its height did.

    Over a slow link each repainted row costs bytes, and a layout pass repaints every
    scrollbar on screen. Returns what was drawn (width, text and styles) for the next call.
    """
    width = static.content_size.width
    text = build(max(width, 1))
    look = f"{width}|{text.plain}|{text.spans}"
    if look == last[1]:
        return last
    lines = text.plain.count("\n")
    static.update(FitWidth(build), layout=lines != last[0])
    return lines, look


class DurationPane(VerticalScroll):
    """Elapsed time, phase and progress of the trial in flight; median bars per variant.

    Args:
        view: The run state it draws from.
        id: Widget id.
    """

    def __init__(self, view: RunView, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="pane")
        self.view = view
        self.phase: str | None = None
        """Phase the bars compare; None follows the first ('total' for multi-phase runs)."""
        self._now_lines: tuple[int, str] = (-1, "")
        self._bars_lines: tuple[int, str] = (-1, "")
        self._clock_lines: tuple[int, str] = (-1, "")

    DEFAULT_CSS = """
    DurationPane #duration-clock.-empty {
        display: none;
    }
    DurationPane.-summary #duration-now,
    DurationPane.-summary #duration-clock,
    DurationPane.-summary #duration-bars {
        display: none;
    }
    """

    def compose(self) -> ComposeResult:
        """The trial line, its clock, the bars, and the end-of-matrix card (hidden)."""
        yield SummaryCard(id="summary-card")
        yield Static(id="duration-now")
        yield Static(id="duration-clock")
        yield Static(id="duration-bars")

    @property
    def card(self) -> SummaryCard:
        """The end-of-matrix summary card."""
        return self.query_one(SummaryCard)

    def show_summary(self, record: RunRecord | None) -> None:
        """Fill the pane with the finished matrix's card (None: back to the bars)."""
        self.card.show_record(record)
        self.set_class(record is not None, "-summary")

    def on_mount(self) -> None:
        """Title and first draw."""
        self.border_title = "Duration"
        self.update_now()
        self.update_bars()

    def reset(self, view: RunView) -> None:
        """Follow another run's state."""
        self.view = view
        self.update_now()
        self.update_bars()

    def cycle_phase(self) -> str | None:
        """Compare the next phase; returns its name."""
        phases = phases_of(self.view.summary)
        if not phases:
            return None
        current = self.phase if self.phase in phases else phases[0]
        self.phase = phases[(phases.index(current) + 1) % len(phases)]
        self.update_bars()
        return self.phase

    # ------------------------------------------------------------------ drawing
    def update_now(self) -> None:
        """Trial, phase, progress and elapsed time.

        A layout pass repaints every scrollbar on screen (Textual re-sizes them all), so
        one is asked for only when the text's height changes, not on every clock tick.
        """
        now = self.query_one("#duration-now", Static)
        self._now_lines = _repaint(now, self._now_text, self._now_lines)
        clock = self.query_one("#duration-clock", Static)
        self._clock_lines = _repaint(clock, self._clock_text, self._clock_lines)
        clock.set_class(not self._clock_lines[1].split("|", 1)[1], "-empty")

    def _now_text(self, width: int) -> Text:
        v = self.view
        text = Text()
        if v.status == "idle":
            text.append("no run yet — ", style="dim")
            text.append("r", style="bold")
            text.append(" runs the knobs, ", style="dim")
            text.append("m", style="bold")
            text.append(" the whole profile", style="dim")
        elif v.variant:
            text.append("now: ", style="dim")
            text.append(v.variant, style="bold")
            text.append(f" · rep {v.repeat} · {v.trial_index}/{v.total_trials}")
            if v.phase:
                text.append("\nphase ", style="dim")
                text.append(v.phase.upper(), style="bold")
            elif v.last_phase:
                name, secs = v.last_phase
                text.append(f"\n{name} took {fmt_seconds(secs)}", style="dim")
            else:
                text.append("\nsetting up (CHECKPOINT, settle)", style="dim")
            if v.phase and v.progress.text:
                text.append("\n")
                if v.progress.fraction is not None:
                    text.append(f"{v.progress.fraction:.0%} · ", style="bold")
                text.append(v.progress.text)
                if v.progress.fraction is not None:
                    done = bar(v.progress.fraction, max(width - 1, 8))
                    text.append("\n" + done)
                    text.append("░" * (max(width - 1, 8) - len(done)), style="dim")
        else:
            text.append(f"run {v.status}", style="bold")
            if v.reason:
                text.append(f": {v.reason}")
            text.append(f"\n{v.trial_index}/{v.total_trials} trials", style="dim")
        return text

    def _clock_text(self, _width: int) -> Text:
        """The one line that changes every tick: its own widget, so only it is repainted."""
        v = self.view
        text = Text()
        if v.status != "idle" and v.variant:
            phase_s, trial_s = v.elapsed()
            # Spaces end a span rather than start the next: SVG viewers drop leading ones.
            if v.phase:
                text.append(f"{phase_s:.1f} s ", style="bold")
                text.append("phase · ", style="dim")
            text.append(f"{trial_s:.1f} s ", style="bold" if not v.phase else "")
            text.append("trial", style="dim")
        return text

    def update_bars(self) -> None:
        """One bar per variant: median of the compared phase, with min–max."""
        bars = self.query_one("#duration-bars", Static)
        self._bars_lines = _repaint(bars, self._bars_text, self._bars_lines)

    def _bars_text(self, width: int) -> Text:
        rows = self.view.summary
        phases = phases_of(rows)
        phase = self.phase if self.phase in phases else (phases[0] if phases else None)
        text = Text()
        record = self.view.record
        names = [v.name for v in record.profile.variants] if record else []
        if not names or names == ["?"]:
            return text
        text.append(f"\n{phase or 'total'} median", style="bold")
        text.append(" (min–max)", style="dim")
        if len(phases) > 1:
            text.append("  [p] phase", style="dim")
        by_name = {r.variant: r for r in rows if r.phase == phase}
        failed = {r.variant: r for r in rows if r.phase == "—"}
        top = max((r.max or 0.0 for r in by_name.values()), default=0.0)
        width = max(width - 2, 10)
        for name in names:
            text.append(f"\n{name}", style="bold" if name != self.view.variant else "italic")
            row = by_name.get(name)
            if row is not None and row.median is not None and top > 0:
                median, spread = triplet(row, top)
                text.append(f"  {median}", style="bold")
                text.append(spread, style="dim")
                body = bar(row.median / top, width)
                whisker = max(round((row.max or row.median) / top * width) - len(body), 0)
                text.append("\n" + body)
                text.append("╌" * whisker, style="dim")
            elif name == self.view.variant:
                text.append("  (running)", style="italic")
            elif name in failed:
                text.append(f"  ✗ {failed[name].note}", style="dim")
            else:
                text.append("  ·", style="dim")
        return text
