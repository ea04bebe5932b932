"""The lab's keys as data: one table from which the footer, the palette and the help are made.

Each `LabKey` says once what a key does: the footer shows its `label`, the command palette
its `title` with the `tooltip` and the key, and the help screen the key, label and tooltip.
Adding a key here adds it to all three; none of them lists keys by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding

CHART = Binding.Group("chart", compact=True)
"""The three chart keys: "i io  w waits  l wal" in the footer, or "iwl chart" when short
of room."""
SPEED = Binding.Group("speed", compact=True)
"""The replay's `<` `>`: one compact group in the footer ("<> speed")."""
PHASE = Binding.Group("phase", compact=True)
"""The replay's `[` `]` phase jumps: one compact group ("[] phase")."""
ENDS = Binding.Group("start/end", compact=True)
"""The replay's `g` `G` jumps: one compact group ("gG start/end")."""
PANES = ("knobs", "duration", "activity", "results")
"""Pane ids, which are also the tab ids on narrow terminals (tab-<id>); keys 1-4."""
PANE_FOCUS = {
    "knobs": (
        "Go to the knobs and focus the workload choice: ↑ ↓ (or Tab) move between knobs, "
        "Enter opens one, Esc closes it"
    ),
    "duration": "Go to the duration bars (or the end card: Enter opens the table)",
    "activity": "Go to the server activity chart (i, w, l change it; v: a sweep's curve)",
    "results": (
        "Go to the results table and focus it: ↑ ↓ pick a row, whose mechanism (WAL, "
        "full-page images, fsyncs, waits) the lines under the table give; ← → scroll the "
        "columns that do not fit"
    ),
}
"""What each of the keys 1-4 focuses, as the help and the palette say it."""


@dataclass(frozen=True)
class LabKey:
    """One key of the lab screen."""

    key: str
    """Textual's key name ('r', 'question_mark', 'less_than_sign')."""
    action: str
    """The screen action it runs, with its arguments ("chart('io')")."""
    label: str
    """Its word in the footer."""
    title: str
    """Its entry in the command palette."""
    tooltip: str
    """What it does, in the help screen, the footer's tooltip and the palette."""
    id: str
    """Textual's binding id (lab.<name>)."""
    display: str | None = None
    """How the key is written, when its name is not how it looks ('<' for less_than_sign)."""
    group: Binding.Group | None = None
    """A compact footer group it belongs to."""
    show: bool = True
    """Shown in the footer (the palette and the help list every key that applies)."""
    when: str = "always"
    """Where it applies: "always", "live" (a session with a server) or "replay". A key that
    does not apply is not bound, not in the footer and not in the help."""
    pinned: bool = False
    """Always in the footer, at its right end, however narrow the terminal (Help, Quit)."""
    drop: int = 0
    """How early a footer too narrow for every key leaves it out (highest first; the help
    and the palette still list it)."""
    priority: bool = False
    """Before the focused widget's own binding of the key. `space` pauses wherever the focus
    is: a Select would take it (Enter, ↑ and ↓ still open one), so moving the focus on and
    off the knobs changed the footer's keys, and each change relaid the footer and the
    screen (~40 ms of a `1` or `2` press)."""

    replay_tooltip: str | None = None
    """What it does in a replay, when that differs (`q` cancels nothing there)."""

    def says(self, replay: bool) -> str:
        """What the key does in this session (a replay, or a live one)."""
        return self.replay_tooltip if replay and self.replay_tooltip else self.tooltip

    @property
    def shown(self) -> str:
        """The key as a person types it."""
        return self.display or self.key

    def binding(self) -> Binding:
        """The Textual binding of this key."""
        return Binding(
            self.key,
            self.action,
            self.label,
            show=self.show,
            key_display=self.display,
            group=self.group,
            id=self.id,
            tooltip=self.tooltip,
            priority=self.priority,
        )

    def palette_help(self, replay: bool = False) -> str:
        """The palette's line under the title: what it does, and the key that does it."""
        return f"{self.says(replay)}  ({self.shown})"

    def applies(self, replay: bool) -> bool:
        """Whether the key does anything in this session (a replay, or a live one)."""
        return self.when == "always" or self.when == ("replay" if replay else "live")


LAB_KEYS: tuple[LabKey, ...] = (
    LabKey(
        key="r",
        action="run",
        label="Run",
        title="Run the variant",
        tooltip="Run the variant the knobs describe (on several servers: on the first checked)",
        id="lab.run",
        when="live",
    ),
    LabKey(
        key="m",
        action="matrix",
        label="Matrix",
        title="Run matrix",
        tooltip=(
            "Run every variant of the chosen profile (on several servers: on every checked "
            "one, taking turns trial by trial)"
        ),
        id="lab.matrix",
        when="live",
    ),
    LabKey(
        key="c",
        action="cancel",
        label="Cancel",
        title="Cancel the run",
        tooltip="Stop the run; the server's settings are put back",
        id="lab.cancel",
        when="live",
    ),
    LabKey(
        key="space",
        action="replay_pause",
        label="Pause",
        title="Replay: pause / resume",
        tooltip="Pause or resume the replay",
        id="lab.replay-pause",
        when="replay",
        priority=True,
    ),
    LabKey(
        key="less_than_sign",
        action="replay_speed(-1)",
        label="Slower",
        title="Replay: slower",
        tooltip="Replay slower (0.25× to 16×)",
        id="lab.replay-slower",
        when="replay",
        display="<",
        group=SPEED,
    ),
    LabKey(
        key="greater_than_sign",
        action="replay_speed(1)",
        label="Faster",
        title="Replay: faster",
        tooltip="Replay faster (0.25× to 16×)",
        id="lab.replay-faster",
        when="replay",
        display=">",
        group=SPEED,
    ),
    LabKey(
        key="left_square_bracket",
        action="replay_phase(-1)",
        label="Prev phase",
        title="Replay: previous phase",
        tooltip="Jump back to where the previous phase started",
        id="lab.replay-prev-phase",
        when="replay",
        display="[",
        group=PHASE,
    ),
    LabKey(
        key="right_square_bracket",
        action="replay_phase(1)",
        label="Next phase",
        title="Replay: next phase",
        tooltip="Jump to where the next phase starts",
        id="lab.replay-next-phase",
        when="replay",
        display="]",
        group=PHASE,
    ),
    LabKey(
        key="g",
        action="replay_jump('start')",
        label="Start",
        title="Replay: start",
        tooltip="Jump to the start of the replay",
        id="lab.replay-start",
        when="replay",
        group=ENDS,
    ),
    LabKey(
        key="G",
        action="replay_jump('end')",
        label="End",
        title="Replay: end",
        tooltip="Jump to the end of the replay",
        id="lab.replay-end",
        when="replay",
        group=ENDS,
    ),
    LabKey(
        key="i",
        action="chart('io')",
        label="io",
        title="Chart: pg_stat_io",
        tooltip="pg_stat_io writes/extends/fsyncs by backend type",
        id="lab.chart-io",
        group=CHART,
        drop=1,
    ),
    LabKey(
        key="w",
        action="chart('waits')",
        label="waits",
        title="Chart: wait events",
        tooltip="Wait events of the workload's backends, stacked",
        id="lab.chart-waits",
        group=CHART,
        drop=1,
    ),
    LabKey(
        key="l",
        action="chart('wal')",
        label="wal",
        title="Chart: WAL rate",
        tooltip="WAL MiB/s from the insert position",
        id="lab.chart-wal",
        group=CHART,
        drop=1,
    ),
    LabKey(
        key="v",
        action="chart('sweep')",
        label="sweep",
        title="Chart: the sweep of one setting",
        tooltip=(
            "A sweep's curve: each value's time ratio to the first with its interval, and "
            "its checkpoints, full-page images and WAL beside it"
        ),
        id="lab.chart-sweep",
        group=CHART,
        show=False,
    ),
    LabKey(
        key="p",
        action="next_phase",
        label="Phase",
        title="Next phase in the bars",
        tooltip="Compare the next phase in the duration bars",
        id="lab.phase",
        drop=2,
    ),
    LabKey(
        key="e",
        action="export",
        label="Export",
        title="Export the results table",
        tooltip="Write the results table as markdown under the results directory",
        id="lab.export",
        drop=3,
    ),
    LabKey(
        key="s",
        action="screenshot",
        label="Shot",
        title="Save a screenshot",
        tooltip="Save an SVG screenshot under the results directory",
        id="lab.screenshot",
        drop=4,
    ),
    LabKey(
        key="space",
        action="toggle_pause",
        label="Pause",
        title="Pause the live view",
        tooltip="Freeze the live view (the run goes on); again to catch up",
        id="lab.pause",
        when="live",
        priority=True,
    ),
    LabKey(
        key="plus",
        action="refresh_interval(-1)",
        label="Refresh faster",
        title="Refresh faster (more often)",
        tooltip="Repaint the live parts more often (down to every 0.25 s)",
        id="lab.refresh-faster",
        display="+",
        show=False,
    ),
    LabKey(
        key="minus",
        action="refresh_interval(1)",
        label="Refresh slower",
        title="Refresh slower (less often)",
        tooltip="Repaint the live parts less often (up to every 5 s; lighter over a slow link)",
        id="lab.refresh-slower",
        display="-",
        show=False,
    ),
    LabKey(
        key="P",
        action="present",
        label="Present",
        title="Presenter layout on / off",
        tooltip="Bars beside one chart, verdict in big digits; automatic if wide but short",
        id="lab.present",
        show=False,
    ),
    LabKey(
        key="question_mark",
        action="help",
        label="Help",
        title="Help",
        tooltip="Keys, panes, and why some counters land late",
        id="lab.help",
        display="?",
        pinned=True,
    ),
    LabKey(
        key="R",
        action="reconnect",
        label="Retry",
        title="Reconnect",
        tooltip="Try the server again after it could not be reached",
        id="lab.reconnect",
        when="live",
        display="R",
    ),
    LabKey(
        key="q",
        action="quit",
        label="Quit",
        title="Quit pgwx",
        tooltip="Quit; a run is cancelled and the server put back first",
        replay_tooltip="Quit the replay (it runs nothing on a server)",
        id="lab.quit",
        pinned=True,
    ),
    *(
        LabKey(
            key=str(n),
            action=f"pane('{pane}')",
            label=f"{pane.title()} pane",
            title=f"Go to the {pane} pane",
            tooltip=PANE_FOCUS[pane],
            id=f"lab.pane-{pane}",
            show=False,
        )
        for n, pane in enumerate(PANES, start=1)
    ),
)
"""Every key of the lab screen, in footer order."""


def lab_bindings() -> list[Binding | tuple[str, str] | tuple[str, str, str]]:
    """The lab screen's BINDINGS (typed as Textual's `Screen.BINDINGS` is)."""
    return [key.binding() for key in LAB_KEYS]
