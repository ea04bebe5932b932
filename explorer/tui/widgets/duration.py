"""The "Duration" pane: the trial in flight, then one bar per variant as trials finish.

Each candidate's bar carries its verdict's 95 % interval, turned into seconds on the
baseline's median: ``█████▒▒▒───┤`` — solid to the interval's low end, shaded to the median,
a line to its high end. The baseline's bar is plain: it is what the others are measured by.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from explorer.analysis.judge import Judgement
from explorer.analysis.report import SummaryRow
from explorer.analysis.rounds import replayed_plan
from explorer.analysis.server_card import ServerCard
from explorer.lab.store.replay import Player
from explorer.lab.view.runstate import RunView
from explorer.models import RunRecord
from explorer.tui.restyle import NoFocusStyles
from explorer.tui.widgets.fit import FitWidth
from explorer.tui.widgets.summary import SummaryCard, card_rows, servers_card_rows

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


def interval_seconds(row: SummaryRow) -> tuple[float, float] | None:
    """The verdict's interval as seconds of this variant's phase; None without one."""
    v = row.verdict
    if v is None or v.median_baseline is None:
        return None
    if v.ci_low is not None and v.ci_high is not None:
        return v.ci_low * v.median_baseline, v.ci_high * v.median_baseline
    if v.diff_ci_low is not None and v.diff_ci_high is not None:
        # A duration is never below zero: a difference's interval reaching below is clipped
        # (the header says so), not printed as `4 ms [-4–7]`.
        lo = max(0.0, v.median_baseline + v.diff_ci_low)
        return lo, max(lo, v.median_baseline + v.diff_ci_high)
    return None


def clipped(row: SummaryRow) -> bool:
    """The row's interval reached below zero seconds and was clipped at 0."""
    v = row.verdict
    return (
        v is not None
        and v.median_baseline is not None
        and v.ci_low is None
        and v.diff_ci_low is not None
        and v.median_baseline + v.diff_ci_low < 0
    )


def interval_bar(median: float, lo: float, hi: float, top: float, width: int) -> Text:
    """A bar to `median` with the interval lo–hi drawn over it (see the module docstring)."""

    # One cell is kept for the whisker's end, so a narrow interval still shows one.
    scale = max(width - 1, 1)

    def cell(x: float) -> int:
        return min(max(round(x / top * scale), 0), scale)

    lo_c, med_c, hi_c = cell(lo), cell(median), cell(hi)
    lo_c = min(lo_c, med_c)
    text = Text(BAR * lo_c)
    text.append("▒" * (med_c - lo_c))
    text.append("─" * max(hi_c - med_c - 1, 0) + "┤", style="dim")
    return text


def verdict_tail(row: SummaryRow) -> tuple[str, str]:
    """(' baseline', 'dim'), (' faster', 'bold'), (' same', 'dim'), (' undecided', 'dim'),
    (' too few runs (n=2)', 'dim') — the table's words — or (' no baseline trial yet', 'dim')
    while the baseline has only run its warm-up."""
    if row.baseline:
        return (" baseline (drifted)", "bold yellow") if row.drift else (" baseline", "dim")
    v = row.verdict
    if v is None:
        return "", "dim"
    if v.too_few:
        if not v.n_baseline:
            return " no baseline trial yet", "dim"
        return f" too few runs (n={min(v.n_baseline, v.n_candidate)})", "dim"
    if v.decided:
        return f" {v.word}", "bold"
    return f" {v.word}", "dim"


def triplet_bounds(span: tuple[float, float], top: float) -> tuple[str, str]:
    """An interval's ends in the unit `triplet` chose for this scale, without the unit."""
    ms = top < 1
    factor, digits = (1000, 0) if ms else (1, 2)
    return f"{span[0] * factor:.{digits}f}", f"{span[1] * factor:.{digits}f}"


def phases_of(rows: list[SummaryRow]) -> list[str]:
    """Phases present in the summary, 'total' first when there is one."""
    seen: list[str] = []
    for row in rows:
        if row.phase != "—" and row.phase not in seen:
            seen.append(row.phase)
    return sorted(seen, key=lambda p: p != "total")


def phase_strip(
    phases: list[tuple[str, float | None]], current: str | None, elapsed: float | None = None
) -> Text:
    """'load 1.20 s › COMMIT 0.4 s': the trial's phases so far, the one running highlighted."""
    text = Text()
    for n, (name, seconds) in enumerate(phases):
        if n:
            text.append(" › ", style="dim")
        if seconds is None and name == current:
            text.append(f" {name.upper()} ", style="bold reverse")
            if elapsed is not None:  # the live clock has its own line (#duration-clock)
                text.append(f" {elapsed:.1f} s")
        else:
            text.append(name, style="dim")
            # A phase still open under the current one (a restore's load spans its COMMIT).
            text.append(f" {fmt_seconds(seconds)}" if seconds is not None else " …", style="dim")
    return text


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


class DurationPane(NoFocusStyles, VerticalScroll):
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
        self._now_floor = 0
        """Rows the trial block keeps during a run: the most it has needed so far."""
        self.bar_gaps = 0
        """Variants whose bar gets a blank line before it (rows to spare under the card)."""
        self.player: Player | None = None
        """The replay's player when this pane shows a replay (its speed and pause say the
        time left); None live."""

    DEFAULT_CSS = """
    DurationPane #duration-clock.-empty {
        display: none;
    }
    DurationPane.-summary #duration-now,
    DurationPane.-summary #duration-clock,
    DurationPane.-summary #duration-bars {
        display: none;
    }
    DurationPane.-summary.-bars-under #duration-bars {
        display: block;
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

    def show_summary(self, record: RunRecord | None, judged: Judgement | None = None) -> None:
        """Fill the pane with the finished matrix's card (None: back to the bars); `judged`,
        the run's verdicts when the caller has them."""
        self.card.show_record(record, judged)
        self.set_class(record is not None, "-summary")
        self.fit_under_card()

    def show_servers(self, record: RunRecord, card: ServerCard) -> None:
        """Fill the pane with the card of a run on several servers (`record`: the
        reference server's run)."""
        self.card.show_servers(record, card)
        self.add_class("-summary")
        self.fit_under_card()

    def on_resize(self) -> None:
        """A new size: the bars under the card only if both still fit."""
        self.fit_under_card()

    def fit_under_card(self) -> None:
        """Where the pane has rows to spare under the end card (a large terminal, the
        presenter layout at 160x45), the median bars fill them; where both would not fit
        without scrolling, the card alone."""
        card = self.card
        fits = False
        gaps, self.bar_gaps = self.bar_gaps, 0
        region = self.scrollable_content_region
        if card.display and card.record is not None and region.width > 0 and region.height > 0:
            if card.servers is None:
                used = card_rows(card.record, region.width, region.height, card.lines)
            else:
                # Several servers: the bars are each variant on each server ('unlogged @ 18').
                name = card.record.profile.name
                used = servers_card_rows(card.servers, name, region.width, region.height)
            bars = self._bars_text(region.width).plain.count("\n") + 1
            fits = used + bars <= region.height
            if fits:
                self.bar_gaps = region.height - used - bars
        self.set_class(fits, "-bars-under")
        if card.fill == fits:
            # Where the bars fill the rows under the card it is not spread; else it is.
            card.fill = not fits
            card.refresh(layout=True)
        if self.bar_gaps != gaps:
            self.update_bars()

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
        if self.view.running:
            rows = self._now_text(max(now.content_size.width, 1)).plain.count("\n") + 1
            self._now_floor = max(self._now_floor, rows)
        else:
            self._now_floor = 0
        self._now_lines = _repaint(now, self._now_padded, self._now_lines)
        clock = self.query_one("#duration-clock", Static)
        self._clock_lines = _repaint(clock, self._clock_text, self._clock_lines)
        clock.set_class(not self._clock_lines[1].split("|", 1)[1], "-empty")

    def _now_padded(self, width: int) -> Text:
        """The trial block at the height it keeps during a run.

        Phases with and without a progress bar alternate within a trial; if the block shrank
        and grew with them, the bars under it would jump, and each jump is a layout pass that
        repaints the whole pane and every scrollbar on screen (most of the bytes a run sent
        to an 80x24 terminal).
        """
        text = self._now_text(width)
        missing = self._now_floor - (text.plain.count("\n") + 1)
        if missing > 0:
            text.append("\n " * missing)  # a space: a trailing empty line would not count
        return text

    def _plan_shown(self, plan: str) -> str:
        """The round plan, its time left at the replay's speed when this is a replay."""
        player = getattr(self, "player", None)  # a bare pane (tests) has none
        if player is None:
            return plan
        return replayed_plan(plan, player.speed, player.paused)

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
            # One counter: the plan's round (warm-ups apart) where there is one, else the rep.
            rep = "" if v.round_plan else f" · rep {v.repeat}"
            text.append(f"{rep} · {v.count}")
            if v.round_plan:
                text.append(f"\n{self._plan_shown(v.round_plan)}", style="dim")
            if v.phase and v.trial_phases:
                text.append("\n")
                text.append_text(phase_strip(v.trial_phases, v.phase))
            elif v.phase:
                text.append("\nphase ", style="dim")
                text.append(v.phase.upper(), style="bold")
            elif v.last_phase:
                name, secs = v.last_phase
                text.append(f"\n{name} took {fmt_seconds(secs)}", style="dim")
            else:
                text.append("\nsetting up (CHECKPOINT, settle)", style="dim")
            # Where a progress view measures the statement, it says enough; where none does
            # (a COMMIT, a constraint check), what the backend does fills the silence.
            doing = v.doing() if v.progress.fraction is None else ""
            if doing:
                # What the backend does now (its wait, the WAL, the table), not just a clock.
                text.append(f"\n{doing}", style="bold" if "deferred" in doing else "")
            sized = v.progress.fraction is None and v.progress.text.startswith("table ")
            if v.phase and v.progress.text and not (doing and sized):
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
            text.append(f"\n{v.count} trials", style="dim")
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
        elif v.running:
            text.append(" ")  # between trials: the line stays, so nothing under it moves
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
        by_name = {r.variant: r for r in rows if r.phase == phase}
        failed = {r.variant: r for r in rows if r.phase == "—"}
        spans = {name: interval_seconds(r) for name, r in by_name.items()}
        # The header names what the rows under it show: an interval, a min–max, or both.
        shown = {
            "ci" if spans.get(name) is not None else "range"
            for name, r in by_name.items()
            if r.median is not None and (spans.get(name) is not None or r.n > 1)
        }
        # Spaces end a span rather than start the next: SVG viewers drop a span's leading ones.
        text.append(f"\n{phase or 'total'} median ", style="bold")
        ci = "[95% CI, clipped at 0]" if any(clipped(r) for r in by_name.values()) else "[95% CI]"
        brackets = [b for k, b in (("ci", ci), ("range", "(min–max)")) if k in shown]
        if brackets:
            text.append(" or ".join(brackets) + "  ", style="dim")
        if len(phases) > 1:
            text.append("[p] phase", style="dim")
        top = max(
            [r.max or 0.0 for r in by_name.values()]
            + [span[1] for span in spans.values() if span is not None],
            default=0.0,
        )
        tails = {name: verdict_tail(r) for name, r in by_name.items()}
        base = record.profile.baseline_name() if record else None
        if base is not None and not any(r.variant == base and r.phase != "—" for r in rows):
            # The baseline has only run its warm-up: nothing is missing, it is just not yet.
            for name, r in by_name.items():
                if r.verdict is not None and r.verdict.no_baseline:
                    tails[name] = (" no baseline trial yet", "dim")
        # The verdict goes at the end of the bar line; every bar gives up the same room for
        # it, so lengths stay comparable between variants.
        room = max((len(t) for t, _ in tails.values()), default=0)
        width = max(width - 2 - room, 10)
        for index, name in enumerate(names):
            # Under the card on a large pane: the spare rows as blank lines between the bars,
            # spread evenly (more than one each where rows outnumber the bars).
            share, rest = divmod(self.bar_gaps, len(names))
            text.append("\n" * (share + (index < rest)))
            text.append(f"\n{name}", style="bold" if name != self.view.variant else "italic")
            row = by_name.get(name)
            if row is not None and row.median is not None and top > 0:
                median, spread = triplet(row, top)
                text.append("  ")
                text.append(median, style="bold")
                span = spans.get(name)
                if span is not None:
                    lo, hi = triplet_bounds(span, top)
                    text.append(f" [{lo}–{hi}]", style="dim")
                else:
                    text.append(spread, style="dim")
                text.append("\n")
                if span is not None:
                    drawn = interval_bar(row.median, *span, top, width)
                else:
                    # No interval (the baseline, or too few runs): the min–max spread, dashed.
                    body = bar(row.median / top, width)
                    whisker = max(round((row.max or row.median) / top * width) - len(body), 0)
                    drawn = Text(body)
                    drawn.append("╌" * whisker, style="dim")
                text.append_text(drawn)
                tail, style = tails[name]
                text.append(" " * (width - drawn.cell_len))
                text.append(tail, style=style)
            elif name == self.view.variant:
                text.append("  (running)", style="italic")
            elif name in failed and failed[name].note.endswith("warm-up, not counted"):
                # A warm-up is not a failure: no ✗, and no bar or verdict drawn from it.
                text.append(f"  {failed[name].note}", style="dim")
            elif name in failed:
                text.append(f"  ✗ {failed[name].note}", style="dim")
            else:
                text.append("  ·", style="dim")
        return text
