"""The main screen: knobs, duration, server activity, results and log, and every key.

Layout, keys and repainting live here; the workers (server, run, replay, quit) live in the
`RunController` (tui/controller.py) that this screen composes and listens to. At 110×31 and
up the panes sit side by side as in the mockup; below that they become tabs. A wide but
short terminal — a projector's, from 100 columns at 30 rows or fewer — or `--present` gets
the presenter layout: one pane (the duration bars, or knobs or results on 1 and 4) beside
the chart, and a finished matrix's verdict in large digits. `layout_classes` decides which,
from the terminal's size; the CSS for each is in app.tcss.
"""

from __future__ import annotations

import os
import time

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Container, Vertical
from textual.reactive import Reactive, reactive
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import DataTable

from explorer.analysis import servers
from explorer.analysis.report import to_markdown
from explorer.analysis.server_card import server_card
from explorer.analysis.servers import ServerJudgement
from explorer.files import SHARED, FileRefused, private_dir, write_new
from explorer.lab.profiles.naming import variant_name
from explorer.lab.store.replay import speed_label
from explorer.lab.store.results import write_private
from explorer.lab.view.runstate import RunView
from explorer.lab.view.stream import LEVEL_MARK, level, narrate
from explorer.models import (
    Capabilities,
    PhaseEnded,
    Profile,
    RunEnded,
    RunRecord,
    RunStarted,
    TrialEnded,
    TrialStarted,
    Variant,
)
from explorer.paths import exports_dir, screenshots_dir
from explorer.server.connect import Target
from explorer.text import printable
from explorer.tui.config import LabConfig
from explorer.tui.controller import RunController
from explorer.tui.keys import LAB_KEYS, PANES, lab_bindings
from explorer.tui.restyle import restyle, restyled_once
from explorer.tui.screens.help import HelpScreen
from explorer.tui.widgets.activity import ActivityPane
from explorer.tui.widgets.duration import DurationPane
from explorer.tui.widgets.footer import LabFooter
from explorer.tui.widgets.header import ServerHeader
from explorer.tui.widgets.headline import Headline
from explorer.tui.widgets.knobs import KnobPanel
from explorer.tui.widgets.log import LabLog
from explorer.tui.widgets.results_table import MechanismLine, ResultsTable
from explorer.tui.widgets.summary import SummaryCard
from explorer.tui.widgets.sweepchart import NOT_A_SWEEP, is_sweep
from explorer.tui.widgets.tabs import PaneTabs

LEVEL_STYLE = {"info": "", "warning": "yellow", "error": "bold red"}
"""Log level → style (the mark, readable without colour, is `stream.LEVEL_MARK`'s)."""

WHEN = {key.action.split("(")[0]: key.when for key in LAB_KEYS}
"""Action name → where its key applies ("always", "live", "replay"): from the key table, so
the bindings, the footer and the help agree (in a replay space pauses the replay itself,
in a live session only the view)."""
RESULTS_HINT = "4, then ↑↓ a row · ←→ WAL, waits, note"
"""The results pane's subtitle below 110 columns, where those columns are off to the right."""
KEY_FRAME = 0.15
"""Seconds after a key during which the periodic repaint waits for that key's screen update:
a key's frame takes 15-60 ms to make on a loaded machine, and a repaint of the live parts
landing in it (the chart rebuilt for new samples, the clock, the log) made it that much later."""
AFTER_KEY_FRAME = 0.05
"""Seconds after the key's frame before the waiting repaint: the terminal's writer thread
sends the frame first (as the collector waits, `collector.AFTER_KEY`)."""
LOG_RETOLD = 200
"""Log lines written again after a replay jump (the latest ones)."""
REFRESH_STEPS = (0.25, 0.5, 1.0, 2.0, 5.0)
"""Refresh intervals `+` (faster: a shorter one) / `-` (slower) step through, in seconds."""
DEFAULT_REFRESH = 1.0
"""Seconds between repaints of the live parts (clock, progress, chart, caption)."""
WIDE = 110
"""Columns from which the panes sit side by side (and the footer is not compact)."""
TALL = 30
"""Rows from which, when wide too, the panes sit side by side (below: tabs)."""
PRESENT_MIN_WIDTH = 100
"""Columns from which a short terminal gets the presenter layout by itself."""
PRESENT_MAX_HEIGHT = 30
"""Rows at most of a terminal that gets the presenter layout by itself: a projector's
enlarged font leaves a wide but short screen (100x30, 120x30, 160x28), where the mockup's
three columns over the results leave the chart 7 rows and every pane too small to read."""
LEFT_PANES = ("knobs", "duration", "results")
"""Panes the presenter layout shows beside the chart, one at a time (1, 2, 4)."""


def presenting(width: int, height: int, present: bool | None) -> bool:
    """Whether the presenter layout is on: as asked (`--present`, `P`), else on a wide but
    short terminal (at least `PRESENT_MIN_WIDTH` columns, `PRESENT_MAX_HEIGHT` rows at most)."""
    if present is not None:
        return present
    return width >= PRESENT_MIN_WIDTH and height <= PRESENT_MAX_HEIGHT


def layout_classes(width: int, height: int, present: bool | None) -> dict[str, bool]:
    """The screen's layout classes for a terminal size (app.tcss styles each).

    `-wide` / `-narrow` by width; `-tall` / `-short` by height, except in the presenter
    layout (`-present`), which has neither, so the grid and tab rules stay out of its way.
    """
    present_on = presenting(width, height, present)
    tall = height >= TALL
    return {
        "-present": present_on,
        "-wide": width >= WIDE,
        "-narrow": width < WIDE,
        "-tall": not present_on and tall,
        "-short": not present_on and not tall,
    }


class LabScreen(Screen[None]):
    """Knobs, live duration and server activity, results, log."""

    BINDINGS = lab_bindings()
    """Made from the key table (`tui/keys.py`), as the palette and the help are."""

    HORIZONTAL_BREAKPOINTS: list[tuple[int, str]] = []
    VERTICAL_BREAKPOINTS: list[tuple[int, str]] = []
    """Empty, so Textual sets no breakpoint classes: `on_resize` sets them from
    `layout_classes`, which knows the presenter layout too."""

    focused: Reactive[Widget | None] = Reactive(None, repaint=False)
    """The focused widget, as on every Screen, but a change of focus does not repaint the
    whole screen: the widgets whose look depends on focus (`:focus`, `:focus-within`) are
    restyled and repaint themselves. Over SSH a full repaint is ~8 KB at 80x24, and the
    end-of-matrix card takes the focus so that Enter opens the table."""

    caps: reactive[Capabilities | None] = reactive(None, init=False)
    """The server's capabilities (the connected one, or a replayed run's): the one copy,
    bound into the header, the knob panel and the activity pane with `data_bind`."""

    def __init__(self, config: LabConfig) -> None:
        super().__init__()
        self.config = config
        """How the lab was opened (the app's arguments, frozen)."""
        self.view = RunView()
        """The run on screen (the controller feeds it, the panes draw it)."""
        self.controller = RunController(self.view, config)
        """The workers: server, run, replay, quit."""
        self.choice: KnobPanel.Changed | None = None
        """What the knob panel last said it describes (profile, size, knobs)."""
        self._footer_busy: bool | None = None
        self.refresh_interval = DEFAULT_REFRESH
        """Seconds between repaints of the live parts; `+` shortens it, `-` lengthens it."""
        self.paused = False
        """The live view is frozen (space); the run goes on and the view catches up after."""
        self._live_dirty = False
        self._stale = False
        self._timer: Timer | None = None
        self._last_key = float("-inf")
        """When the last key arrived (`key_pressed`), monotonic seconds."""
        self._tick_waited = False
        """The periodic repaint already waited once for a key's frame (`_tick`)."""
        self._running_key: object = None
        self.present: bool | None = config.present
        """The presenter layout as asked (`--present`, then `P`); None: by the size."""
        self._laid_out_present = False
        """The presenter layout was on at the last `_lay_out` (its note is said as it comes
        on; the classes themselves are set before the first one, in `compose`)."""

    @property
    def target(self) -> Target | None:
        """The server, once reached."""
        return self.controller.target

    def busy(self) -> bool:
        """A run or replay is in flight (or about to start)."""
        return self.controller.busy()

    def note(self, message: str, level: str = "info", at: float | None = None) -> None:
        """One line in the log: run clock (when it comes from a run), mark, message."""
        mark, style = LEVEL_MARK.get(level, "·"), LEVEL_STYLE.get(level, "")
        line = Text()
        line.append(f"{at:7.1f}s " if at is not None else "         ", style="dim")
        # exceptions and servers' messages are text too, like the names the models hold
        line.append(f"{mark} ", style=style)
        hang = line.cell_len  # wrapped rows start under the message, not at column 0
        line.append(printable(message), style=style)
        # A run's routine lines wait for the next refresh tick (one scroll of the log for
        # several lines); anything else, and anything louder, shows at once.
        defer = at is not None and level == "info" and self.view.running
        self.query_one(LabLog).add(line, defer=defer, hang=hang)

    def set_tab(self, pane: str) -> None:
        """Make a pane the current one: the one shown, its tab lit, where the tabs show
        (narrow or short terminals); beside the chart in the presenter layout; marked in the
        grid. The tab bar follows even while hidden (one widget: nothing is restyled), so
        it is right when a narrower terminal shows it."""
        self.query_one(PaneTabs).active = pane
        self._show_pane(pane)

    def _tabs_shown(self) -> bool:
        """Whether the layout shows the tabs (app.tcss), from the layout classes: the tab
        bar's own display lags a class change until the next restyle."""
        return (self.has_class("-narrow") or self.has_class("-short")) and not self.has_class(
            "-present"
        )

    def current_pane(self) -> str:
        """The pane made current (see `set_tab`): the tab bar's, shown or not."""
        return self.query_one(PaneTabs).active

    def _show_pane(self, pane: str) -> None:
        """Mark the pane current (the one shown on narrow terminals, and beside the chart in
        the presenter layout). A focus left in a pane that is now hidden moves to this pane's
        main widget, so Tab and the arrows never act on a pane the user cannot see."""
        for name in PANES:
            widget = self.query_one(f"#{name}")
            classes = {"-current": name == pane}
            if pane in LEFT_PANES and name in LEFT_PANES:
                # The presenter layout keeps the chart and shows this one beside it.
                classes["-left"] = name == pane
            if any(widget.has_class(c) != on for c, on in classes.items()):
                # Only the pane's own look depends on these classes (its display): restyle
                # the pane alone. Textual's own update restyles the whole subtree (the knob
                # panel's ~90 nodes), a third of a key press over SSH.
                widget.update_classes(classes, update=False)
                restyle(widget)
        if pane == "results":
            self.query_one(ResultsTable).refit()
        focused = self.focused
        one_at_a_time = self._tabs_shown() or self.has_class("-present")
        if focused is None or not one_at_a_time:
            return
        if self.has_class("-present") and pane not in LEFT_PANES:
            return  # the chart: the pane beside it stays
        for name in PANES:
            if name == pane or (self.has_class("-present") and name not in LEFT_PANES):
                continue
            if self.query_one(f"#{name}") in (focused, *focused.ancestors):
                # At once (not after this handler, as `focus()` does): the pane's focus
                # mark is then restyled with its tab (see `restyled_once`).
                self.set_focus(self.main_widget(pane))
                return

    def watch_focused(self, old: Widget | None, new: Widget | None) -> None:
        """Mark the pane that holds the focus (`-focused`: its border lights up).

        In place of a `:focus-within` rule, with which Textual restyles the whole pane, every
        widget in it, on each move of the focus."""
        before, after = self._pane_of(old), self._pane_of(new)
        if before is not after:
            for pane, on in ((before, False), (after, True)):
                if pane is not None:
                    pane.set_class(on, "-focused", update=False)
                    restyle(pane)

    def _pane_of(self, widget: Widget | None) -> Widget | None:
        """The pane a widget is in (None: not in a pane, or gone)."""
        for node in () if widget is None else widget.ancestors_with_self:
            if isinstance(node, Widget) and node.has_class("pane"):
                return node
        return None

    def main_widget(self, pane: str) -> Widget:
        """The widget `1`–`4` focus in a pane: the profile choice (the panel itself while a
        run locks it), the end card when it is up (else the bars), the chart pane, the
        results table (so that ↑ ↓ work at once)."""
        if pane == "knobs":
            panel = self.knob_panel
            return panel if panel.locked else panel.select("profile")
        if pane == "duration":
            card = self.query_one(SummaryCard)
            return card if card.display else self.query_one(DurationPane)
        if pane == "results":
            return self.query_one(ResultsTable)
        return self.query_one(f"#{pane}")

    @property
    def knob_panel(self) -> KnobPanel:
        """The knob panel (the command palette chooses profiles through it)."""
        return self.query_one(KnobPanel)

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        """Header, tabs (narrow terminals), the four panes, log, footer.

        The layout's classes are set first, from the terminal's size: set by the first
        resize, after the first frame, they restyled the whole screen (~130 nodes) and drew
        it a second time, the first frame a stack of every pane without tabs or footer."""
        width, height = self.app.size
        self.update_classes(layout_classes(width, height, self.present), update=False)
        yield ServerHeader(id="header").data_bind(LabScreen.caps)
        yield PaneTabs(PANES, id="tabs")
        yield Headline(id="headline")
        with Container(id="panes"):
            # Current and on the left from the start: marked after mounting, its ~90 nodes
            # were styled again at every start.
            yield (
                KnobPanel(
                    list(self.config.profiles), allow_risky=self.config.allow_risky, id="knobs"
                )
                .add_class("-current", "-left", update=False)
                .data_bind(LabScreen.caps)
            )
            yield DurationPane(self.view, id="duration")
            yield ActivityPane(self.view, id="activity").data_bind(LabScreen.caps)
            with Vertical(id="results", classes="pane"):
                yield ResultsTable(id="results-table")
                yield MechanismLine(id="mechanism")
        yield LabLog(id="log")
        yield LabFooter(wide=self.app.size.width >= WIDE)
        yield self.controller

    def on_mount(self) -> None:
        """Start: replay, an injected target, or find/start the server."""
        self.query_one("#results").border_title = "Results"
        # `3` focuses the chart pane (its keys are i w l), so Tab reaches it too.
        self.query_one(ActivityPane).can_focus = True
        self._timer = self.set_interval(self.refresh_interval, self._tick)
        config = self.config
        for problem in config.profile_problems:
            self.note(problem, "warning")
        header = self.query_one(ServerHeader)
        if config.replay is not None:
            self.show_replay_header()
            if config.replay.profile is not None:
                self.knob_panel.show_profile(config.replay.profile, config.replay.scale)
            self.set_tab("duration")
            self.controller.replay_run(config.replay)
        elif config.server.target is not None and not config.servers:
            self.controller.target_ready(config.server.target)
        elif config.servers:
            header.label = f"reaching {len(config.servers)} servers…"
            self.controller.start_server()
        else:
            header.label = "connecting…"
            if not config.server.user_server:
                owned = "bundled PostgreSQL" if config.server.bindir is None else "PostgreSQL"
                header.label = f"starting {owned}…"
            self.controller.start_server()

    def on_resize(self, event: events.Resize) -> None:
        """The layout for the new size; a compact footer below 110 columns, so every lab
        key still fits in 80 (the palette's ctrl+p is then in the help instead)."""
        self._lay_out(event.size.width, event.size.height)
        footer = self.query_one(LabFooter)
        wide = event.size.width >= WIDE
        if footer.show_command_palette != wide:
            footer.compact, footer.show_command_palette = not wide, wide
            self.refresh_bindings()
        # Where the mechanism columns are off to the right, the pane says how to reach them.
        results = self.query_one("#results")
        results.border_subtitle = "" if wide else RESULTS_HINT

    def _lay_out(self, width: int, height: int) -> None:
        """Set the layout classes; say once when the presenter layout comes on by itself."""
        was, self._laid_out_present = (
            self._laid_out_present,
            presenting(width, height, self.present),
        )
        classes = layout_classes(width, height, self.present)
        self.update_classes(classes, animate=False)
        self.query_one(ResultsTable).refit()
        self.query_one(Headline).fit(width, height)
        if classes["-present"] and not was and self.present is None:
            self.note(f"presenter layout at {width}x{height}; P for the usual panes")

    def action_present(self) -> None:
        """Turn the presenter layout on or off (it stays as chosen whatever the size)."""
        self.present = not self.has_class("-present")
        self._lay_out(self.size.width, self.size.height)
        self.note("presenter layout " + ("on" if self.present else "off") + " (P toggles)")

    @on(PaneTabs.Chosen)
    def _tab_chosen(self, event: PaneTabs.Chosen) -> None:
        """A click on a tab: that pane, as its key (1–4) goes there."""
        self.action_pane(event.pane)

    # ------------------------------------------------------------------ repaint
    @on(RunController.Said)
    def _said(self, message: RunController.Said) -> None:
        self.note(message.text, message.level)

    @on(RunController.TargetReached)
    def _target_reached(self, message: RunController.TargetReached) -> None:
        self.query_one(ServerHeader).label = message.target.label()

    @on(RunController.ConnectFailed)
    def _connect_failed(self, message: RunController.ConnectFailed) -> None:
        header = self.query_one(ServerHeader)
        header.failure = message.sentence
        header.undo_pending = header.undo_pending or message.undo_pending
        self.refresh_bindings()

    @on(RunController.Opened)
    def _opened(self, message: RunController.Opened) -> None:
        header = self.query_one(ServerHeader)
        # Opening put back whatever an interrupted run left: nothing is pending any more.
        header.failure, header.undo_pending = "", False
        self.refresh_bindings()
        header.label, header.bundled = message.target.label(), message.target.owned
        self.caps = message.caps
        self.note(f"connected: PostgreSQL {message.caps.version} at {message.target.label()}")

    @on(RunController.ServersOpened)
    def _servers_opened(self, message: RunController.ServersOpened) -> None:
        """Several servers are open: the knob panel lists them, each checked."""
        header = self.query_one(ServerHeader)
        header.failure, header.undo_pending = "", False
        self.refresh_bindings()
        sessions = self.controller.sessions
        about = [self.controller.describe(n) for n in range(len(sessions))]
        self.knob_panel.show_servers(message.labels, about)
        self._servers_checked(tuple(range(len(sessions))))

    @on(KnobPanel.ServersChanged)
    def _servers_changed(self, message: KnobPanel.ServersChanged) -> None:
        if message.kept is not None:
            self.note(f"{message.kept} stays checked: the runs need at least one server", "warning")
        self._servers_checked(message.checked)

    def _servers_checked(self, checked: tuple[int, ...]) -> None:
        """The header and the knob panel describe the first checked server (the one `r`
        runs on); the header names every checked one (those `m` takes turns on)."""
        if not checked:
            return
        controller = self.controller
        first = controller.sessions[checked[0]]
        names = " + ".join(controller.label_of(n) for n in checked)
        header = self.query_one(ServerHeader)
        header.servers = f"m on {names} · r on {controller.label_of(checked[0])}"
        header.label = first.target.label()
        header.bundled = first.target.owned
        controller.target = first.target
        self.caps = first.caps

    @on(RunController.ServersJudged)
    def _servers_judged(self, _message: RunController.ServersJudged) -> None:
        """The verdicts between the servers join the table."""
        self.query_one(ResultsTable).show(self.view.summary)
        if self.view.between:
            self.note("between the servers: " + "; ".join(self.view.between))
        self.show_servers_card(self.controller.group, self.controller.group_judged)

    def show_servers_card(
        self, group: list[RunRecord], judged: ServerJudgement | None = None
    ) -> None:
        """A run on several servers ended: its card (the biggest verdict between the
        servers, each server's lines) fills the duration pane, as one server's does
        (`judged`: the group's verdicts as the controller judged them once)."""
        card = server_card(group, judged)
        if card is None:
            return
        duration = self.query_one(DurationPane)
        duration.show_servers(card.judged.runs[0], card)
        self.sync_headline()
        self.set_tab("duration")
        duration.card.focus()

    @on(RunController.RunStateChanged)
    def _run_state_changed(self, message: RunController.RunStateChanged) -> None:
        if message.worker in ("run", "replay") and message.finished:
            # The stream stopped: show its last state now, not at the next refresh tick.
            self.query_one(LabLog).flush()
            if not self.paused:
                self._live_dirty = False
                self.query_one(DurationPane).update_now()
                self.query_one(ActivityPane).data_changed()
            if message.worker == "replay":
                self.query_one(ActivityPane).chart.redraw_now()
        self.run_state_changed()

    @on(KnobPanel.Changed)
    def _knobs_changed(self, message: KnobPanel.Changed) -> None:
        """The knob panel says what `r` and `m` would run now."""
        self.choice = message

    @on(RunController.SampleArrived)
    def _sample_arrived(self, _message: RunController.SampleArrived) -> None:
        # Painted by the next tick: at most once per refresh interval, over any link.
        self._live_dirty = True

    @on(DataTable.RowHighlighted, "#results-table")
    def _row_chosen(self, event: DataTable.RowHighlighted) -> None:
        table = self.query_one(ResultsTable)
        self.query_one(MechanismLine).show_row(
            table.row_at(event.cursor_row), compact=table.compact
        )

    @on(RunController.EventArrived)
    def _event_arrived(self, message: RunController.EventArrived) -> None:
        event = message.event
        duration = self.query_one(DurationPane)
        line = narrate(event)
        if line is not None and not isinstance(event, PhaseEnded):
            # Phases have their own pane (the duration bars); the log keeps the story.
            self.note(line, level(event), at=event.at)
        if isinstance(event, RunStarted) and not self.view.servers:
            # (On several servers the header keeps naming them all.)
            header = self.query_one(ServerHeader)
            header.bundled = event.server.bundled
            if self.config.replay is None:
                header.label = event.server.dsn_masked
            self.caps = event.server.capabilities
        if self.paused:
            # The view is frozen; the view state goes on folding events (the controller did).
            self._stale = True
            return
        if isinstance(event, RunStarted):
            duration.show_summary(None)
            self.sync_headline()
            self.query_one(ActivityPane).reset(self.view)
            self.query_one(ResultsTable).show(self.view.summary)
        elif isinstance(event, TrialEnded):
            self.query_one(ResultsTable).show(self.view.summary)
            self.query_one(ActivityPane).sweep.redraw_now()  # a new point (when shown)
        elif isinstance(event, RunEnded):
            self.query_one(ActivityPane).chart.redraw_now()
            self.query_one(ActivityPane).sweep.redraw_now()
            self._matrix_ended()
        duration.update_bars()
        if isinstance(event, RunStarted | TrialStarted | TrialEnded | RunEnded):
            duration.update_now()
        else:
            self._live_dirty = True  # a notice: the clock line can wait for the next tick
        self.run_state_changed()

    def _matrix_ended(self) -> None:
        """A matrix with something to compare ended: its card fills the duration pane."""
        record = self.view.record
        if record is None or self.view.accumulate or not record.trials:
            return
        if self.view.servers:
            # The card judges variants within one run: on several servers the table has
            # each server's own verdicts and those between the servers.
            self.set_tab("results")
            return
        if len(record.profile.variants) < 2:
            return
        if record.profile.sweep is not None:
            self.note(f"a sweep of {record.profile.sweep.setting}: v draws its curve")
        duration = self.query_one(DurationPane)
        # a run this lab just made was judged as it ended; a replay, as its table last was
        judged = self.controller.judged_of(record) or self.view.judgement_of(record)
        duration.show_summary(record, judged)
        self.sync_headline()
        if self.config.replay is None or self.current_pane() == "duration":
            self.set_tab("duration")
            duration.card.focus()

    def sync_headline(self) -> None:
        """The presenter layout's big verdict follows the end card: shown with it, gone
        with it (`-card` on the screen; app.tcss shows it only in the presenter layout)."""
        card = self.query_one(DurationPane).card
        record = card.record if card.display else None
        headline = self.query_one(Headline)
        if record is headline.record and card.servers is headline.servers:
            return  # the tick's check: nothing changed (and a card with no verdict to tell)
        if record is not None and card.servers is not None:
            told = headline.show_servers(record, card.servers)
        else:
            told = headline.show_record(record, card.lines if record is not None else [])
        # Only the headline's display depends on `-card`: restyle it alone, not the ~300
        # nodes under the screen (a key pressed as a matrix ended waited ~150 ms for that).
        self.set_class(told, "-card", update=False)
        restyle(headline)

    @on(SummaryCard.OpenTable)
    def _open_table(self) -> None:
        """Enter on the card: the full results table."""
        self.action_pane("results")

    @on(SummaryCard.Dismissed)
    def _card_dismissed(self) -> None:
        """Escape on the card: back to the duration bars."""
        self.query_one(DurationPane).show_summary(None)
        self.sync_headline()

    def run_state_changed(self) -> None:
        """Header, knob panel lock and the footer's Cancel follow the run."""
        view, panel = self.view, self.knob_panel
        if view.record is not None:
            name = view.record.profile.name
            self.query_one(ServerHeader).run = f"{name} {view.count} {view.status}"
            live = view.running or self.config.replay is not None
            key = (live, view.variant, view.record.id)
            if key == self._running_key:
                pass  # the panel already shows this: repainting it would cost a layout pass
            elif live:
                now = Text("now: ", style="dim")
                label = view.variant or ("replay" if self.config.replay else "preparing")
                now.append(label, style="bold reverse")
                panel.set_running(now)
                variants = view.record.profile.variants
                variant = next((v for v in variants if v.name == view.variant), None)
                if variant is not None:
                    panel.show_knobs(variant.knobs)
            else:
                panel.set_running(None)
                panel.show_knobs(None)
            self._running_key = key
        busy = self.busy()
        if busy != self._footer_busy:
            # Each refresh recomposes the footer: only when Cancel's state changes.
            self._footer_busy = busy
            self.refresh_bindings()

    def key_pressed(self) -> None:
        """A key arrived (the app says so once per key): a periodic repaint due while its
        screen update is being made waits until that update is out (`_tick`)."""
        self._last_key = time.monotonic()

    def key_frame_pending(self) -> bool:
        """Whether a key came within `KEY_FRAME`: its screen update may still be in the
        making, and a background repaint now would make it wait (the charts ask too)."""
        return time.monotonic() - self._last_key < KEY_FRAME

    def _tick(self) -> None:
        """Repaint the live parts, once per refresh interval: the clock between samples
        (replays keep the recorded clock), the progress, the chart and its caption.

        Within `KEY_FRAME` of a key it waits, once, until the key's screen update is out and
        runs `AFTER_KEY_FRAME` later: the key's frame then holds only what the key changed.
        """
        if not self._tick_waited and self.key_frame_pending():
            self._tick_waited = True
            self.call_after_refresh(self.set_timer, AFTER_KEY_FRAME, self._tick)
            return
        self._tick_waited = False
        self.query_one(LabLog).flush()
        # Whoever showed or hid the card, the headline follows within a tick.
        self.sync_headline()
        if self.paused:
            return
        runner = self.controller.runner
        live = self._live_dirty
        if runner is not None and self.view.running:
            self.view.now = max(self.view.now, runner.clock())
            live = True
        if live:
            self._live_dirty = False
            self.query_one(DurationPane).update_now()
            self.query_one(ActivityPane).data_changed()

    def catch_up(self) -> None:
        """Repaint every pane from the run's state (after a pause)."""
        self._stale = False
        activity = self.query_one(ActivityPane)
        activity.reset(self.view)
        self.query_one(ResultsTable).show(self.view.summary)
        duration = self.query_one(DurationPane)
        duration.update_bars()
        duration.update_now()
        self.run_state_changed()

    def action_toggle_pause(self) -> None:
        """Freeze or resume the live view; the run (or replay) goes on underneath.

        Replay mode may extend this (pausing the replay itself); in a live run only the
        view stops, as in pg_activity.
        """
        self.paused = not self.paused
        duration = self.query_one(DurationPane)
        if self.paused:
            duration.border_subtitle = Text("PAUSED · space resumes", style="bold reverse")
            self.note("view paused (the run goes on); space resumes")
        else:
            duration.border_subtitle = ""
            self.catch_up()

    def action_refresh_interval(self, step: int) -> None:
        """Repaint the live parts more (`+`, step -1: a shorter interval) or less (`-`) often."""
        steps = REFRESH_STEPS
        here = min(range(len(steps)), key=lambda n: abs(steps[n] - self.refresh_interval))
        self.refresh_interval = steps[min(max(here + step, 0), len(steps) - 1)]
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_interval(self.refresh_interval, self._tick)
        self.note(f"refresh every {self.refresh_interval:g} s (+ faster, - slower)")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A replay shows its own keys instead of the run keys; Cancel is dimmed when there
        is nothing to cancel."""
        replay = self.config.replay is not None
        when = WHEN.get(action, "always")
        if when != "always" and when != ("replay" if replay else "live"):
            return False
        if action == "cancel":
            return True if self.busy() else None
        if action == "reconnect":
            # Only offered (and shown in the footer) while the server could not be reached.
            return self.controller.failed is not None
        return True

    # ------------------------------------------------------------------ runs
    def can_start(self) -> bool:
        """Whether a run may start now; says why not in the log."""
        why = self.controller.why_not(self.caps)
        if why is not None:
            self.note(why, "warning")
        return why is None

    def action_run(self) -> None:
        """Run the variant the knobs describe (repeats as the profile says)."""
        choice = self.choice
        if choice is None or choice.profile is None or not self.can_start():
            return
        # Runs of one variant line up in one table: a new label must not take an old one's.
        record = self.view.record
        taken = {v.name: v.knobs for v in record.profile.variants} if record else {}
        variant = Variant(name=variant_name(choice.knobs, taken), knobs=choice.knobs)
        profile = choice.profile.model_copy(update={"variants": [variant], "baseline": None})
        self._start(profile, choice.scale, single=True)

    def action_matrix(self) -> None:
        """Run the chosen profile's whole matrix."""
        choice = self.choice
        if choice is not None and choice.profile is not None and self.can_start():
            profile = choice.profile
            base = next(
                (v.knobs for v in profile.variants if v.name == profile.baseline_name()), None
            )
            chosen = choice.knobs.server_settings()
            if base is not None and chosen != base.server_settings():
                # The panel keeps showing them: say plainly that the matrix does not use them.
                shown = ", ".join(f"{k}={v}" for k, v in chosen.items()) or "server defaults"
                self.note(
                    f"the matrix runs {profile.name}'s variants as written; the panel's "
                    f"server settings ({shown}) apply to r only",
                    "warning",
                )
            self._start(profile, choice.scale, single=False)

    def _start(self, profile: Profile, scale: float, *, single: bool) -> None:
        assert self.caps is not None
        self.set_tab("duration")
        on = self.knob_panel.checked_servers()
        self.controller.run_profile(profile, scale, self.caps, single=single, on=on)

    def action_cancel(self) -> None:
        """Stop the run: the runner cancels the statement and puts the settings back."""
        self.controller.cancel()

    def action_reconnect(self) -> None:
        """Try the server again after a failed connection (the header said why)."""
        if self.controller.failed is not None:
            header = self.query_one(ServerHeader)
            header.failure = ""
            if self.target is None:
                header.label = "connecting…"
        self.controller.reconnect()

    def action_quit(self) -> None:
        """Quit cleanly: cancel the run, wait for its undo, stop the bundled server."""
        self.controller.quit()

    # ------------------------------------------------------------------ replay
    def show_replay_header(self) -> None:
        """'REPLAY 4× · recorded 2026-11-22 14:03 on PostgreSQL 18.6 (bundled)'."""
        replay, player = self.config.replay, self.controller.player
        if replay is None:
            return
        speed = player.speed if player is not None else replay.speed
        state = speed_label(speed) if speed > 0 else "all at once"
        if player is not None and player.paused:
            state += " paused"
        header = self.query_one(ServerHeader)
        header.label = f"REPLAY {state} · {replay.headline()}"
        # Two rows: what is replayed, and when and where it was recorded, must not be cut
        # short by the recorded server's badges.
        header.styles.height = 2

    def action_replay_pause(self) -> None:
        """Pause or resume the replay."""
        player = self.controller.player
        if player is None:
            return
        player.paused = not player.paused
        if player.paused:
            for worker in self.controller.workers:
                if worker.name == "replay":
                    worker.cancel()
        else:
            self.controller.play()
        self.show_replay_header()

    def action_replay_speed(self, steps: int) -> None:
        """Step the replay's speed through 0.25× … 16×."""
        player = self.controller.player
        if player is None:
            return
        player.faster(steps)
        self.controller.play()  # the wait in flight was planned at the old speed
        self.show_replay_header()

    def action_replay_phase(self, direction: int) -> None:
        """Jump to the previous or next phase start."""
        player = self.controller.player
        if player is None:
            return
        if direction > 0:
            target = player.next_boundary()
            if target is None:
                self.note("no later phase in this recording")
                return
        else:
            target = player.previous_boundary()
        self.controller.seek(target)

    def action_replay_jump(self, where: str) -> None:
        """Jump to the start (the run just started) or the end of the replay."""
        player = self.controller.player
        if player is not None:
            count = len(player.events)
            self.controller.seek(min(1, count) if where == "start" else count)

    @on(RunController.Rebuilt)
    def _rebuilt(self, _message: RunController.Rebuilt) -> None:
        """After a jump every pane draws the rebuilt state; the log retells it."""
        view = self.view
        player = self.controller.player
        self.query_one(LabLog).reset()
        if player is not None:
            for event in player.told_before(LOG_RETOLD):
                line = narrate(event)
                if line is not None and not isinstance(event, PhaseEnded):
                    self.note(line, level(event), at=event.at)
        self.query_one(ActivityPane).reset(view)
        self.query_one(ResultsTable).show(view.summary)
        duration = self.query_one(DurationPane)
        # What a natural replay shows at this moment: the card only once the run has ended.
        ended = (
            player is not None
            and player.done
            and bool(player.events)
            and isinstance(player.events[-1], RunEnded)
        )
        if ended:
            self._matrix_ended()
        else:
            duration.show_summary(None)
            self.sync_headline()
        duration.update_bars()
        duration.update_now()
        self.show_replay_header()
        self.run_state_changed()

    # ------------------------------------------------------------------ small actions
    def action_chart(self, mode: str) -> None:
        """Show WAL, pg_stat_io or wait events in the activity chart (or a sweep's curve)."""
        if mode == "sweep" and not is_sweep(self.view):
            self.note(f"no sweep on screen: {NOT_A_SWEEP}")
            return
        activity = self.query_one(ActivityPane)
        if mode == "sweep" and activity.mode == "sweep" and activity.is_on_screen:
            activity.sweep.toggle()  # where one chart fits: the other
            activity.update_caption(force=True)
        activity.mode = mode  # type: ignore[assignment]
        with restyled_once():
            self.set_tab("activity")

    def action_next_phase(self) -> None:
        """Compare another phase in the duration bars, and show them.

        On a narrow terminal the duration pane may be a hidden tab: it is brought forward,
        so the key never changes something the user cannot see.
        """
        duration = self.query_one(DurationPane)
        if duration.cycle_phase() is None:
            self.note("no finished trial yet to compare")
            return
        duration.show_summary(None)
        self.sync_headline()
        if not duration.is_on_screen or self._tabs_shown():
            self.set_tab("duration")

    def action_pane(self, pane: str) -> None:
        """Go to a pane (a tab on narrow terminals) and focus its main widget: each pane
        the key marks (current, focused) restyled once."""
        with restyled_once():
            self.set_tab(pane)
            self.set_focus(self.main_widget(pane))

    def action_help(self) -> None:
        """Keys and panes."""
        replay = self.config.replay is not None
        keys = [key for key in LAB_KEYS if key.applies(replay)]
        self.app.push_screen(HelpScreen(keys, replay=replay))

    def action_export(self) -> None:
        """Write the table as markdown next to the results store, and say where."""
        record = self.view.record
        if record is None or not record.trials:
            self.note("nothing to export yet: no trial has finished")
            return
        folder = exports_dir(self.config.store.files_dir)
        group = self.controller.group if self.view.servers else []
        # On several servers: each server's table and the verdicts between them, as
        # `pgwx report` writes them.
        text = servers.to_markdown(group) if len(group) > 1 else to_markdown(record)
        try:
            path = write_private(folder / f"{record.id}.md", text)
        except (OSError, FileRefused) as exc:  # a link put where the table goes, a full disk
            self.note(f"table not written: {exc}", "warning")
            return
        self.note(f"table written to {path}")

    def action_screenshot(self) -> None:
        """Save an SVG of the screen next to the results store, and say where."""
        folder = private_dir(screenshots_dir(self.config.store.files_dir))
        # The next free number: a new session never overwrites an earlier session's shots.
        stem = f"pgwx-{self.view.run_id or 'idle'}"
        n = 1
        while os.path.lexists(folder / f"{stem}-{n}.svg"):
            n += 1
        try:
            path = write_new(folder / f"{stem}-{n}.svg", self.app.export_screenshot(), mode=SHARED)
        except (OSError, FileRefused) as exc:
            self.note(f"screenshot not saved: {exc}", "warning")
            return
        self.note(f"screenshot saved to {path}")
