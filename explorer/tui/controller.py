"""The lab's background work, composed into the screen: server, run, replay and quitting.

`RunController` is a widget that draws nothing: every worker lives on it, so that one
`@on(Worker.StateChanged)` handler sees them all, and it tells the screen what happens with
messages (a log line, the server reached, an engine event, a run starting or ending).
Starting the bundled server blocks, so it runs in a thread; everything else is async. The
runner calls `_emit` on the event loop for every event: `_emit` folds the event into the
`RunView` at once (cheap, so nothing is lost) and posts a message to repaint. Sample messages
replace each other while queued, so a slow terminal never builds a backlog.

It reads nothing from the app: it is handed a frozen `LabConfig` (store, server choice,
sampling, consent) and owns the server session, which the app releases through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual import on, work
from textual.message import Message
from textual.widget import Widget
from textual.worker import Worker, WorkerCancelled, WorkerFailed, WorkerState

from explorer.analysis import servers
from explorer.analysis.judge import Judgement
from explorer.errors import PgwxError
from explorer.lab.run.bench import Bench
from explorer.lab.run.request import RunOptions, RunRequest, run_plan
from explorer.lab.run.session import Session
from explorer.lab.safety.settings import JournalUnreadable
from explorer.lab.store.machine_noise import load_noise
from explorer.lab.store.replay import Player, ReplaySource
from explorer.lab.view.runstate import RunView
from explorer.models import (
    Capabilities,
    Event,
    Notice,
    Profile,
    RunEnded,
    RunRecord,
    SampleTaken,
)
from explorer.server.connect import Target
from explorer.server.failures import failure_reason
from explorer.tui.config import LabConfig
from explorer.tui.widgets.duration import DurationPane

if TYPE_CHECKING:
    from explorer.lab.run.runner import Runner

REPLAY_REPAINT_HZ = 4.0
"""Most sample repaints per second during a replay: what a live run at 4 Hz costs."""

WORKER_WHAT = {
    "server": "Starting the server",
    "probe": "Connecting",
    "run": "The run",
    "replay": "The replay",
    "shutdown": "Quitting",
    "stop": "Stopping the bundled server",
}
"""Worker name → what to call it in a one-sentence error."""


class RunController(Widget):
    """The lab's workers: reach and open the server, run, replay, cancel, quit.

    Args:
        view: The run state it feeds (the screen's widgets draw from the same object).
        config: How the lab was opened (server choice, store, sampling, consent).
    """

    DEFAULT_CSS = """
    RunController {
        display: none;
    }
    """

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
            return isinstance(message, RunController.SampleArrived)

    @dataclass
    class Rebuilt(Message):
        """A replay jumped: the view was rebuilt from the events, repaint every pane."""

    @dataclass
    class Said(Message):
        """A line for the log."""

        text: str
        level: str = "info"
        """'info', 'warning' or 'error'."""

    @dataclass
    class TargetReached(Message):
        """The server is reachable; its session opens next."""

        target: Target

    @dataclass
    class Opened(Message):
        """The session is open: the server's capabilities are known."""

        target: Target
        caps: Capabilities

    @dataclass
    class ServersOpened(Message):
        """Every one of several servers is open: their labels ('15', '18'), in order."""

        labels: list[str]

    @dataclass
    class ServersJudged(Message):
        """A run on several servers ended: the verdicts between them are in the view."""

    @dataclass
    class ConnectFailed(Message):
        """Reaching or opening the server failed; the reconnect key may try again."""

        sentence: str
        """What went wrong and what to do, in one sentence."""
        undo_pending: bool = False
        """The failure is a journal that still holds settings to put back."""

    @dataclass
    class RunStateChanged(Message):
        """A run or replay worker started, moved on or ended."""

        worker: str | None
        """The worker's name ('run', 'replay', …)."""
        finished: bool
        """It has ended (however)."""

    def __init__(self, view: RunView, config: LabConfig) -> None:
        super().__init__()
        self.view = view
        """The run on screen."""
        self.config = config
        """How the lab was opened."""
        self.target: Target | None = None
        """The server, once reached."""
        self.bench = Bench(config.store, config.servers or (config.server,))
        """The servers, their sessions (owned here: `release` stops the bundled servers
        pgwx started) and the latest run's runners, as `pgwx run` has them too."""
        self.group: list[RunRecord] = []
        """The stored runs of the latest run on several servers, the reference first."""
        self.group_judged: servers.ServerJudgement | None = None
        """Their verdicts, judged once as the run ended (the table's and the card's)."""
        self.put_back = threading.Event()
        """Set once quitting has undone the run and released the server (a thread that
        ends a process whose terminal is gone waits for it)."""
        self.failed: str | None = None
        """Why the server could not be reached or opened, until a retry succeeds."""
        self.player: Player | None = None
        """The replay's position, speed and pause (None: not a replay)."""
        self._cancelling = False

    @property
    def session(self) -> Session | None:
        """The (first) server's session, once it is had."""
        return self.bench.sessions[0] if self.bench.sessions else None

    @property
    def sessions(self) -> list[Session]:
        """Every server's session when there are several (the first is `session`)."""
        return self.bench.sessions if self.bench.several else []

    @property
    def labels(self) -> list[str]:
        """The servers' labels ('15', '18') once they are open, when there are several."""
        return self.bench.labels

    @property
    def runners(self) -> list[Runner]:
        """The runners of the latest run, one per server (the first's clock drives the
        live timer)."""
        return self.bench.runners

    @property
    def runner(self) -> Runner | None:
        """The runner of the latest run (the first server's, when it took turns)."""
        return self.runners[0] if self.runners else None

    def every_session(self) -> list[Session]:
        """The server's session, or each of several servers' (none before one is had)."""
        return list(self.bench.sessions)

    def say(self, text: str, level: str = "info") -> None:
        """A log line, through the screen (safe from a thread: post_message is)."""
        self.post_message(self.Said(text, level))

    # ------------------------------------------------------------------ server
    @work(thread=True, exclusive=True, group="server", name="server", exit_on_error=False)
    def start_server(self) -> None:
        """Reach the user's server(s), or start those pgwx owns (blocking, so in a thread);
        if one of several cannot be had, those started are stopped again and one sentence
        names it."""
        if not self.bench.several and self.config.server.user_server:
            self.say("connecting…")
        # Kept by the bench at once, from this thread: if the app dies before `target_ready`
        # runs, a server started here is still released (the app's last act is `release`).
        sessions = self.bench.resolve(self.say, adopt=lambda m: self.say(m, "warning"))
        self.app.call_from_thread(self.target_ready, sessions[0].target)

    def target_ready(self, target: Target) -> None:
        """The server is reachable (or should be): open the session on it."""
        self.target = target
        if self.session is None or self.session.target is not target:
            # A target handed to the app (tests) belongs to whoever made it: never stopped here.
            self.bench.sessions = [Session(target, self.config.store, keep_server=True)]
        self.post_message(self.TargetReached(target))
        self.open_session()

    @work(exclusive=True, group="probe", name="probe", exit_on_error=False)
    async def open_session(self) -> None:
        """Open the sessions: probe, put back what a dead pgwx left (once); of several, one
        that cannot be opened is one sentence naming it, and so is one server named twice."""
        assert self.session is not None
        caps = await self.bench.open(self._warn_about)
        self.failed = None
        if not self.sessions:
            self.post_message(self.Opened(self.session.target, caps[0]))
            return
        for n in range(len(self.sessions)):
            self.say(f"connected: {self.describe(n)}")
        self.post_message(self.ServersOpened(list(self.labels)))

    def _warn_about(self, index: int) -> Callable[[str], None]:
        """A warning in the log; of several servers, it names the one it is about."""
        if not self.sessions:
            return lambda message: self.say(message, "warning")
        server = self.sessions[index].target.label()
        return lambda message: self.say(f"{server}: {message}", "warning")

    def reconnect(self) -> None:
        """Try the server again after a failed start or connection."""
        if self.failed is None:
            self.say("connected already" if self.target is not None else "connecting already")
            return
        self.failed = None
        self.say("trying the server again…")
        if self.session is None:
            self.start_server()
        else:
            self.open_session()

    # ------------------------------------------------------------------ runs
    def busy(self) -> bool:
        """A run or replay is in flight (or about to start)."""
        active = (WorkerState.PENDING, WorkerState.RUNNING)
        return any(w.state in active for w in self.workers if w.group == "run")

    def why_not(self, caps: Capabilities | None) -> str | None:
        """Why a run may not start now (None: it may)."""
        if self.config.replay is not None:
            return "this is a replay: there is no server to run on"
        if self.view.running or self.busy():
            return "a run is in progress; c cancels it"
        if self.failed is not None:
            return "not connected: press R to try the server again"
        if self.target is None or caps is None:
            return "not connected yet; wait for the header to show the server"
        return None

    def describe(self, index: int) -> str:
        """'15 = PostgreSQL 15.20 from /usr/lib/postgresql/15/bin (…)': one of several."""
        session = self.sessions[index]
        where = session.target.label()
        if "PostgreSQL" not in where and session.caps is not None:  # a DSN: the version too
            where = f"PostgreSQL {session.caps.version} at {where}"
        return f"{self.label_of(index)} = {where}"

    def label_of(self, index: int) -> str:
        """How the server at `index` of several is named ('15', '18')."""
        return self.labels[index] if index < len(self.labels) else str(index + 1)

    @work(exclusive=True, group="run", name="run", exit_on_error=False)
    async def run_profile(
        self,
        profile: Profile,
        scale: float,
        caps: Capabilities,
        *,
        single: bool,
        on: tuple[int, ...] = (),
    ) -> None:
        """Run in the background; the runner undoes everything however it ends.

        Args:
            on: Which of several servers (their indexes): the matrix takes turns on all of
                them; a single run (`r`) runs on the first. Empty: the one server.
        """
        assert self.target is not None
        config = self.config
        # One sentence in the log, before any server work, if the run may not be.
        request = RunRequest.build(
            profile,
            scale=scale,
            allow_risky=config.allow_risky,
            sample_interval=config.sample_interval,
        )
        # The plan before the first trial, with this machine's noise if a self-test kept it.
        self.say(run_plan(request, max(len(on), 1) if not single else 1, load_noise(profile.name)))
        self.view.profile, self.view.scale, self.view.accumulate = profile, scale, single
        self._cancelling = False
        if len(on) > 1 and not single:
            await self._run_on_servers(profile, request.options, on)
            return
        targets = [s.target for s in self.bench.sessions]
        index = targets.index(self.target) if self.target in targets else 0
        if on and self.sessions:
            index, caps = on[0], self.sessions[on[0]].caps or caps
            if len(self.sessions) > 1:
                self.say(
                    f"r runs on {self.label_of(on[0])} only; m takes turns on the checked servers"
                )
        self.view.several([])
        await self.bench.run_one(index, profile, request.options, self._emit, caps)

    async def _run_on_servers(
        self, profile: Profile, options: RunOptions, on: tuple[int, ...]
    ) -> None:
        """The matrix on several servers, taking turns (the bench's, as `pgwx run --pg 15
        --pg 18`); when it ends, however, the verdicts between the servers from their stored
        runs go under the table."""
        sessions = [self.sessions[i] for i in on]
        labels = servers.labels([s.caps.major for s in sessions if s.caps is not None])
        self.view.several(labels)
        self.group, self.group_judged = [], None
        self.bench.runners = []
        store = self.config.store
        try:
            await self.bench.take_turns(on, profile, options, self.say, self._emit_for)
        finally:
            runners = self.bench.runners
            if len(runners) > 1:
                try:
                    self.group = store.group(store.load(runners[0].run_id))
                except PgwxError:
                    self.group = []  # a server's run never began: nothing to compare
                if len(self.group) > 1:
                    # judged once: each server's own verdicts are those its runner made
                    kept = {r.run_id: r.judged for r in runners if r.judged is not None}
                    self.group_judged = servers.judge_servers(self.group, kept=kept)
                self.view.judge_servers(self.group, self.group_judged)
                self.post_message(self.ServersJudged())

    def judged_of(self, record: RunRecord) -> Judgement | None:
        """The verdicts of a run this lab just made, as its runner judged them when it ended
        (None: not a run of this lab's latest, or not judged yet)."""
        for runner in self.bench.runners:
            if runner.run_id == record.id and runner.judged is not None:
                return runner.judged
        return None

    def _emit_for(self, label: str) -> Callable[[Event], None]:
        """The event sink of the server labelled `label` of several."""

        def emit(event: Event) -> None:
            self._announce(self.view.apply_on(label, event))

        return emit

    def replay_run(self, source: ReplaySource) -> None:
        """Play a recorded run into the view at its recorded pace times its speed."""
        self.view.profile, self.view.scale = source.profile, source.scale
        self.player = Player(source, self.view)
        for pane in self.screen.query(DurationPane):
            pane.player = self.player  # its round plan says the replay's time left
        self.play()

    def play(self) -> None:
        """(Re)start playing from where the player is; a playback in flight is replaced."""
        if self.player is not None and not self.player.paused:
            self._playback()

    def seek(self, position: int) -> None:
        """Show the replay as it was after `position` events, rebuilt from the events."""
        if self.player is None:
            return
        for worker in self.workers:
            if worker.name == "replay":
                worker.cancel()  # it must not fold one more event into the rebuilt view
        self.player.seek(position)
        self.post_message(self.Rebuilt())
        self._say_if_ended()
        self.play()

    @work(exclusive=True, group="run", name="replay", exit_on_error=False)
    async def _playback(self) -> None:
        """Fold the events in at their pace; ends when paused or at the end.

        At 16× samples come 64 times a second: the panes repaint for at most
        `REPLAY_REPAINT_HZ` of them (and the last), so keys stay quick.
        """
        player = self.player
        assert player is not None
        burst, painted, held, stepped = 0, 0.0, None, False
        player.start(time.monotonic())
        while not player.done and not player.paused:
            wait = player.wait(time.monotonic())
            if wait:
                burst = 0
                await asyncio.sleep(wait)
            else:
                burst += 1
                if burst % 256 == 0:
                    await asyncio.sleep(0)  # all at once, yet keys still get through
            event = player.step()  # the player folded it into the view
            stepped = True
            if isinstance(event, SampleTaken):
                now = time.monotonic()
                if now - painted < 1 / REPLAY_REPAINT_HZ:
                    held = event
                    continue
                painted, held = now, None
            self._announce(event)
        if held is not None:
            self._announce(held)
        if stepped:
            self._say_if_ended()

    def _say_if_ended(self) -> None:
        """'end of replay' in the log, once the last recorded event is shown."""
        player = self.player
        if (
            player is not None
            and player.done
            and player.events
            and isinstance(player.events[-1], RunEnded)
        ):
            last = max(player.ats)
            self.post_message(self.EventArrived(Notice(at=last, message="end of replay")))

    def _emit(self, event: Event) -> None:
        """Called by the runner (or replay) on the event loop, once per event."""
        self.view.apply(event)
        self._announce(event)

    def _announce(self, event: Event) -> None:
        """Tell the screen an event was folded into the view: repaint."""
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

    def cancel(self) -> None:
        """Stop the run: the runner cancels the statement and puts the settings back."""
        if self._cancelling:
            self.say("already cancelling…")
        elif self._cancel_run():
            self.say("cancelling: stopping the statement, putting settings back…")
        else:
            self.say("nothing to cancel")

    # ------------------------------------------------------------------ workers
    @on(Worker.StateChanged)
    def _worker_changed(self, event: Worker.StateChanged) -> None:
        """The one place worker failures are reported: one sentence; a programming error's
        traceback goes to the log, which the sentence names."""
        worker = event.worker
        if event.state == WorkerState.ERROR and worker.error is not None:
            what = WORKER_WHAT.get(worker.name, worker.name or "A background task")
            why = failure_reason(worker.error)
            self.say(f"{what} failed: {why}", "error")
            if worker.name in ("server", "probe"):
                self.failed = why
                pending = isinstance(worker.error, JournalUnreadable)
                self.post_message(self.ConnectFailed(self.failed, pending))
        if worker.group == "run" and worker.is_finished:
            self._cancelling = False
            if worker.name == "run" and self.view.running:
                # The run ended before it could say so (it failed to start).
                self.view.status = "failed"
        self.post_message(self.RunStateChanged(worker.name, worker.is_finished))

    # ------------------------------------------------------------------ quitting
    def quit(self) -> None:
        """Quit cleanly: cancel the run, wait for its undo, stop the bundled server."""
        self.bench.interrupted(self.shutdown, lambda m: self.say(f"{m}…"))

    @work(group="shutdown", name="shutdown", exit_on_error=False)
    async def shutdown(self) -> None:
        """Cancel, wait for the undo, stop our server, exit."""
        if self._cancel_run():
            self.say("quitting: cancelling the run, putting settings back…")
        for worker in list(self.workers):
            if worker.group in ("run", "server") and worker.is_running:
                with contextlib.suppress(WorkerCancelled, WorkerFailed):
                    await worker.wait()
        for session in self.every_session():
            if session.bundled_here is None or session.keep_server:
                continue
            what = session.target.label() if self.sessions else "bundled PostgreSQL"
            self.say(f"stopping {what}…")
            stop = self.run_worker(
                session.release, thread=True, group="stop", name="stop", exit_on_error=False
            )
            with contextlib.suppress(WorkerCancelled, WorkerFailed):
                await stop.wait()
        self.put_back.set()
        self.app.exit()

    def release(self, say: Callable[[str], None] = lambda _m: None) -> None:
        """Release the server: stop the bundled one if this lab started it, unless kept.

        The app's last act however it ends (a crash of the UI included); after a clean quit
        there is nothing left to do.
        """
        for session in self.every_session():
            with contextlib.suppress(Exception):
                session.release(say)
