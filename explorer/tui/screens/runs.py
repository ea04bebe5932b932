"""The lab screen's background work: the server, the run, the replay, and quitting.

Every worker lives here, on the screen, so that one `@on(Worker.StateChanged)` handler sees
them all. Starting the bundled server blocks, so it runs in a thread; everything else is
async. The runner calls `_emit` on the event loop for every event: `_emit` folds the event
into the `RunView` at once (cheap, so nothing is lost) and posts a message to repaint.
Sample messages replace each other while queued, so a slow terminal never builds a backlog.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import RichLog, Tabs
from textual.worker import Worker, WorkerCancelled, WorkerFailed, WorkerState

from explorer.lab.runner import one_sentence
from explorer.lab.runstate import RunView
from explorer.lab.session import Session
from explorer.lab.stream import paced
from explorer.models import (
    Capabilities,
    Event,
    Knobs,
    Notice,
    Profile,
    RunEnded,
    SampleTaken,
    Variant,
)
from explorer.server.connect import Target
from explorer.tui.widgets.activity import ActivityPane
from explorer.tui.widgets.header import ServerHeader
from explorer.tui.widgets.knobs import KnobPanel

if TYPE_CHECKING:
    from explorer.tui.app import PgwxApp

WORKER_WHAT = {
    "server": "Starting the server",
    "probe": "Connecting",
    "run": "The run",
    "replay": "The replay",
    "shutdown": "Quitting",
    "stop": "Stopping the bundled server",
}
"""Worker name → what to call it in a one-sentence error."""

LEVEL_MARK = {"info": ("·", ""), "warning": ("!", "yellow"), "error": ("✗", "bold red")}
"""Log level → mark (readable without colour) and style."""


def variant_name(knobs: Knobs) -> str:
    """A short label of the knobs that differ from the defaults, e.g. 'unlogged sc=off'."""
    short = {
        "fk": "fk",
        "toast": "toast",
        "synchronous_commit": "sc",
        "fsync": "fsync",
        "full_page_writes": "fpw",
        "wal_level": "wal",
    }
    parts = [knobs.table_kind.value]
    for field, label in short.items():
        value = getattr(knobs, field)
        if value != Knobs.model_fields[field].default:
            shown = ("on" if value else "off") if isinstance(value, bool) else str(value)
            parts.append(f"{label}={getattr(value, 'value', shown)}")
    return " ".join(parts)[:40]


class RunControl(Screen[None]):
    """Base of the lab screen: owns the workers and turns engine events into messages."""

    @dataclass
    class EventArrived(Message):
        """An engine event other than a sample (already folded into the view)."""

        event: Event

    @dataclass
    class SampleArrived(Message):
        """A sampler reading (already folded into the view): repaint the live parts."""

        event: SampleTaken

        def can_replace(self, message: Message) -> bool:
            """A queued sample repaint is superseded by a newer one (Toolong's habit)."""
            return isinstance(message, RunControl.SampleArrived)

    caps: reactive[Capabilities | None] = reactive(None, init=False)
    """The server's capabilities (the connected one, or a replayed run's): the one copy,
    bound into the header, the knob panel and the activity pane with `data_bind`."""

    def __init__(self) -> None:
        super().__init__()
        self.view = RunView()
        """The run on screen."""
        self.target: Target | None = None
        """The server, once reached."""
        self.choice: KnobPanel.Changed | None = None
        """What the knob panel last said it describes (profile, size, knobs)."""
        self._runner: Any = None
        self._cancelling = False
        self._quitting = False

    @property
    def pgwx(self) -> PgwxApp:
        """The app, typed."""
        return self.app  # type: ignore[return-value]

    # ------------------------------------------------------------------ hooks
    def note(self, message: str, level: str = "info", at: float | None = None) -> None:
        """One line in the log: run clock (when it comes from a run), mark, message."""
        mark, style = LEVEL_MARK.get(level, LEVEL_MARK["info"])
        line = Text()
        line.append(f"{at:7.1f}s " if at is not None else "         ", style="dim")
        line.append(f"{mark} {message}", style=style)
        self.query_one("#log", RichLog).write(line)

    def set_tab(self, pane: str) -> None:
        """Show a pane's tab (only visible on narrow terminals)."""
        self.query_one(Tabs).active = f"tab-{pane}"

    def run_state_changed(self) -> None:
        """A run started, moved on or ended: the screen updates its status parts."""

    # ------------------------------------------------------------------ server
    @work(thread=True, exclusive=True, group="server", name="server", exit_on_error=False)
    def start_server(self) -> None:
        """Reach the user's server, or start the bundled one (blocking, so in a thread)."""
        app = self.pgwx
        if app.dsn_or_env:
            app.call_from_thread(self.note, "connecting…")
        session = Session.resolve(
            app.store,
            dsn=app.dsn,
            data_dir=app.data_dir,
            keep_server=app.keep_server,
            say=lambda msg: app.call_from_thread(self.note, msg),
        )
        app.session = session
        app.call_from_thread(self.target_ready, session.target)

    def target_ready(self, target: Target) -> None:
        """The server is reachable (or should be): open the session on it."""
        self.target = target
        if self.pgwx.session is None or self.pgwx.session.target is not target:
            # A target handed to the app (tests) belongs to whoever made it: never stopped here.
            self.pgwx.session = Session(target, self.pgwx.store, keep_server=True)
        self.query_one(ServerHeader).label = target.label()
        self.probe_server()

    @work(exclusive=True, group="probe", name="probe", exit_on_error=False)
    async def probe_server(self) -> None:
        """Open the session: probe the server, put back what a dead pgwx left (once)."""
        session = self.pgwx.session
        assert session is not None
        caps = await session.open(lambda m: self.note(m, "warning"))
        self.query_one(ServerHeader).bundled = session.target.owned
        self.caps = caps
        self.note(f"connected: PostgreSQL {caps.version} at {session.target.label()}")

    # ------------------------------------------------------------------ runs
    def busy(self) -> bool:
        """A run or replay is in flight (or about to start)."""
        active = (WorkerState.PENDING, WorkerState.RUNNING)
        return any(w.state in active for w in self.workers if w.group == "run")

    def can_start(self) -> bool:
        """Whether a run may start now; says why not in the log."""
        if self.pgwx.replay is not None:
            self.note("this is a replay: there is no server to run on", "warning")
        elif self.view.running or self.busy():
            self.note("a run is in progress; c cancels it", "warning")
        elif self.target is None or self.caps is None:
            self.note("not connected yet; wait for the header to show the server", "warning")
        else:
            return True
        return False

    def action_run(self) -> None:
        """Run the variant the knobs describe (repeats as the profile says)."""
        choice = self.choice
        if choice is None or choice.profile is None or not self.can_start():
            return
        knobs = choice.knobs
        variant = Variant(name=variant_name(knobs), knobs=knobs)
        profile = choice.profile.model_copy(update={"variants": [variant], "baseline": None})
        self.run_profile(profile, choice.scale, single=True)

    def action_matrix(self) -> None:
        """Run the chosen profile's whole matrix."""
        choice = self.choice
        if choice is not None and choice.profile is not None and self.can_start():
            self.run_profile(choice.profile, choice.scale, single=False)

    @on(KnobPanel.Changed)
    def _knobs_changed(self, message: KnobPanel.Changed) -> None:
        """The knob panel says what `r` and `m` would run now."""
        self.choice = message

    @work(exclusive=True, group="run", name="run", exit_on_error=False)
    async def run_profile(self, profile: Profile, scale: float, *, single: bool) -> None:
        """Run in the background; the runner undoes everything however it ends."""
        from explorer.cli import sampler_factory
        from explorer.lab.runner import Runner, RunOptions

        assert self.target is not None
        app = self.pgwx
        options = RunOptions(
            scale=scale, allow_risky=app.allow_risky, sample_interval=app.sample_interval
        )
        runner = Runner(
            self.target,
            profile,
            app.store,
            options,
            sampler_factory=sampler_factory(options.sample_interval),
            caps=self.caps,
        )
        self._runner, self._cancelling = runner, False
        self.view.profile, self.view.scale, self.view.accumulate = profile, scale, single
        self.set_tab("duration")
        await runner.run(self._emit)

    @work(exclusive=True, group="run", name="replay", exit_on_error=False)
    async def replay_run(self) -> None:
        """Feed a recorded run into the screen at its recorded pace (or all at once)."""
        source = self.pgwx.replay
        assert source is not None
        self.view.profile, self.view.scale = source.profile, source.scale
        if source.profile is not None:
            self.query_one(KnobPanel).show_profile(source.profile, source.scale)
        self.set_tab("duration")
        for wait, event in paced(source.events, source.speed):
            if wait:
                await asyncio.sleep(wait)
            self._emit(event)
        if source.events and isinstance(source.events[-1], RunEnded):
            last = max(e.at for e in source.events)
            self.post_message(self.EventArrived(Notice(at=last, message="end of replay")))
        self.call_later(self.query_one(ActivityPane).chart.redraw_now)

    def _emit(self, event: Event) -> None:
        """Called by the runner (or replay) on the event loop, once per event."""
        self.view.apply(event)
        if isinstance(event, SampleTaken):
            self.post_message(self.SampleArrived(event))
        else:
            self.post_message(self.EventArrived(event))

    def _cancel_run(self) -> bool:
        """Cancel the run worker once (a second cancel would cut the runner's undo short)."""
        for worker in self.workers:
            if worker.group == "run" and not worker.is_finished and not self._cancelling:
                self._cancelling = True
                worker.cancel()
                return True
        return False

    def action_cancel(self) -> None:
        """Stop the run: the runner cancels the statement and puts the settings back."""
        if self._cancelling:
            self.note("already cancelling…")
        elif self._cancel_run():
            self.note("cancelling: stopping the statement, putting settings back…")
        else:
            self.note("nothing to cancel")

    # ------------------------------------------------------------------ workers
    @on(Worker.StateChanged)
    def _worker_changed(self, event: Worker.StateChanged) -> None:
        """The one place worker failures are reported: one sentence, no traceback."""
        worker = event.worker
        if event.state == WorkerState.ERROR and worker.error is not None:
            what = WORKER_WHAT.get(worker.name, worker.name or "A background task")
            self.note(f"{what} failed: {one_sentence(worker.error)}", "error")
        if worker.group == "run" and worker.is_finished:
            self._cancelling = False
            if worker.name == "run" and self.view.running:
                # The run ended before it could say so (it failed to start).
                self.view.status = "failed"
        self.run_state_changed()

    # ------------------------------------------------------------------ quitting
    def action_quit(self) -> None:
        """Quit cleanly: cancel the run, wait for its undo, stop the bundled server."""
        if self._quitting:
            self.note("still putting the server back; one moment…")
            return
        self._quitting = True
        self.shutdown()

    @work(group="shutdown", name="shutdown", exit_on_error=False)
    async def shutdown(self) -> None:
        """Cancel, wait for the undo, stop our server, exit."""
        if self._cancel_run():
            self.note("quitting: cancelling the run, putting settings back…")
        for worker in list(self.workers):
            if worker.group in ("run", "server") and worker.is_running:
                with contextlib.suppress(WorkerCancelled, WorkerFailed):
                    await worker.wait()
        session = self.pgwx.session
        if session is not None and session.bundled_here is not None and not session.keep_server:
            self.note("stopping bundled PostgreSQL…")
            stop = self.run_worker(
                session.release, thread=True, group="stop", name="stop", exit_on_error=False
            )
            with contextlib.suppress(WorkerCancelled, WorkerFailed):
                await stop.wait()
        self.app.exit()
