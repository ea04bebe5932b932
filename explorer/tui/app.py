"""The pgwx app: configuration, the profiles, the results store, and `run_app` for the CLI.

The main screen (`screens/lab.py`) and its controller (`controller.py`) do the work; the app
turns its arguments into one frozen `LabConfig` (`config.py`) that it hands them, so nothing
reads attributes of the app, and makes sure the bundled server the controller started is
stopped however the app ends.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from textual import events
from textual.app import App
from textual.filter import LineFilter
from textual.screen import Screen

from explorer.lab.run.bench import ServerChoice, named_choices
from explorer.lab.run.signals import TerminatingSignals
from explorer.lab.store.replay import ReplaySource
from explorer.lab.store.results import ResultStore
from explorer.models import Capabilities, Profile
from explorer.server.connect import Target
from explorer.tui.collector import AFTER_KEY, TICK, QuietCollector
from explorer.tui.commands import LabCommands
from explorer.tui.config import LabConfig, offered_profiles
from explorer.tui.glyphs import AsciiFilter, locale_wants_ascii, set_ascii
from explorer.tui.screens.lab import LabScreen

SETTLE_AFTER = 0.5
"""Seconds with no key, from the first frame, before the collector's first full collection
(~50 ms, `settle_memory`): `?` pressed as the screen appears does not wait behind it."""
EXIT_GRACE = 5.0
"""Seconds the app gets to exit by itself after a signal's undo is done; with the terminal
gone (SIGHUP) Textual cannot restore it and may never return."""


class PgwxApp(App[int]):
    """A terminal lab for the PostgreSQL write path.

    Args:
        target: A server already reached (tests inject one); None to find or start one.
        dsn: The user's connection string (None: libpq environment, else the bundled PG 18).
        data_dir: Cluster directory of the server pgwx owns.
        bindir: Programs of the installed PostgreSQL to own (`--pg N`); None: the bundled 18.
        keep_server: Leave the bundled server running on quit.
        store: Where runs go (default: $PGWX_RESULTS or ~/.local/share/pgwx).
        replay: A recorded run to play instead of talking to a server.
        profiles: The profiles offered (default: the shipped ones).
        allow_risky: Allow fsync/full_page_writes off on a server pgwx does not own.
        sample_interval: Seconds between statistics samples during a run.
        ascii: Draw ASCII only (None: when the locale is not UTF-8).
        present: The presenter layout: True on, False off, None when the terminal is
            projector-sized (wide but short).
        servers: Several servers to take turns on, in order: servers already reached
            (tests) or as named on the command line, (--dsn, --pg) each. None: one server.
    """

    CSS_PATH = "app.tcss"
    TITLE = "pgwx"
    COMMANDS = App.COMMANDS | {LabCommands}

    def __init__(
        self,
        *,
        target: Target | None = None,
        dsn: str | None = None,
        data_dir: Path | None = None,
        bindir: Path | None = None,
        keep_server: bool = False,
        store: ResultStore | None = None,
        replay: ReplaySource | None = None,
        profiles: list[Profile] | None = None,
        allow_risky: bool = False,
        sample_interval: float = 0.25,
        ascii: bool | None = None,
        present: bool | None = None,
        servers: Sequence[Target | tuple[str | None, int | None]] | None = None,
    ) -> None:
        super().__init__()
        self.ascii = locale_wants_ascii() if ascii is None else ascii
        """Draw ASCII only: a non-UTF-8 terminal (LANG=C, Latin-1) or `--ascii`."""
        set_ascii(self.ascii)
        # No animations (the tabs' sliding underline repaints its rows for a third of a
        # second): over SSH every frame costs bytes, and a projector shows no difference.
        self.animation_level = "none"
        self._ascii_filter = AsciiFilter()
        if self.ascii:
            self.add_class("-ascii")
        offered, problems = offered_profiles(profiles)
        self.config = LabConfig(
            store=store or ResultStore(),
            profiles=offered,
            profile_problems=problems,
            server=ServerChoice.of(target, dsn, data_dir, keep_server, bindir),
            servers=several_servers(servers or [], keep_server),
            replay=replay,
            allow_risky=allow_risky,
            ascii=self.ascii,
            sample_interval=sample_interval,
            present=present,
        )
        """How the lab was opened: all the screen and its controller are told."""
        self._lab: LabScreen | None = None
        self.signal_received: int | None = None
        """SIGHUP or SIGTERM, when one ended the app (the exit status is 128 + it)."""
        self._signals = TerminatingSignals()
        self.collector = QuietCollector()
        """Python's full collections, made when no key waits."""
        self._last_key_at = float("-inf")
        """When the last key came (monotonic seconds)."""

    def on_mount(self) -> None:
        """A dropped SSH session (SIGHUP) or a kill (SIGTERM) quits the way q does."""
        if self._signals.install():
            self._signals.listen(self.on_terminating_signal)
        self.call_after_refresh(self.set_timer, SETTLE_AFTER, self.settle_memory)

    def settle_memory(self) -> None:
        """Keep what start-up built out of the collector's full passes, and make those passes
        when no key waits (`collector.py`).

        The screen, the profiles and a loaded recording live as long as the app: frozen once,
        they are skipped by every full pass. The passes themselves (40–60 ms in a live matrix)
        are made after a key's screen update or in a quiet moment, not in the middle of a key.
        The first one, before the freeze, waits for `SETTLE_AFTER` seconds without a key: made
        with the first frame, it held a `?` pressed as the screen appeared.
        """
        quiet = time.monotonic() - self._last_key_at
        if quiet < SETTLE_AFTER:
            self.set_timer(SETTLE_AFTER - quiet, self.settle_memory)
            return
        self.collector.install()
        self.set_interval(TICK, self.collector.tick)

    async def on_event(self, event: events.Event) -> None:
        """Each key tells the collector (once: a key comes back up to the app as it bubbles);
        once its screen update is out, a due pass is made. It tells the lab too, whose
        periodic repaint waits for the key's frame in the same way."""
        if isinstance(event, events.Key) and not event.is_forwarded:
            self._last_key_at = time.monotonic()
            if self._lab is not None:
                self._lab.key_pressed()  # the periodic repaint waits for the key's frame
            if self.collector.installed:
                key = self.collector.key_pressed()
                self.call_after_refresh(
                    self.set_timer, AFTER_KEY, partial(self.collector.after_key, key)
                )
        await super().on_event(event)

    def on_unmount(self) -> None:
        """Give the signals back, and Python its collector and the frozen objects (tests run
        many apps in one process)."""
        self.collector.uninstall()
        self._signals.uninstall()

    def on_terminating_signal(self, signo: int) -> None:
        """Cancel the run, put the server back, stop the server pgwx started, exit."""
        if self.signal_received is None and not self.is_headless:
            threading.Thread(target=self._exit_when_stuck, args=(signo,), daemon=True).start()
        self.signal_received = self.signal_received or signo
        if self._lab is not None and self._lab.is_attached:
            self._lab.action_quit()
        else:
            self.exit()

    def get_line_filters(self) -> Sequence[LineFilter]:
        """Textual's filters, and in ASCII mode the one that leaves only ASCII on screen."""
        filters = super().get_line_filters()
        return [*filters, self._ascii_filter] if self.ascii else filters

    def get_default_screen(self) -> Screen[None]:
        """The lab is the app: made once, kept, and handed the configuration."""
        if self._lab is None:
            self._lab = LabScreen(self.config)
        return self._lab

    @property
    def lab(self) -> LabScreen:
        """The main screen."""
        if self._lab is None:
            raise RuntimeError("the lab screen is made when the app starts")
        return self._lab

    @property
    def caps(self) -> Capabilities | None:
        """The server's capabilities, as the lab screen holds them (None until known)."""
        return self._lab.caps if self._lab is not None else None

    async def action_quit(self) -> None:
        """ctrl+q and the palette quit the same careful way as q."""
        self.lab.action_quit()

    def action_help_quit(self) -> None:
        """Ctrl-C (Textual's copy key) does not quit: say which key does, every time."""
        self.notify(
            "Ctrl-C does not quit pgwx: press q (a run is cancelled and the server put back first)",
            timeout=5,
        )

    def _exit_when_stuck(self, signo: int) -> None:
        """After the undo, end the process if the app cannot (its terminal is gone)."""
        if self._lab is not None:
            self._lab.controller.put_back.wait()
        threading.Event().wait(EXIT_GRACE)
        os._exit(128 + signo)

    def release_session(self, say: Callable[[str], None] = lambda _m: None) -> None:
        """Release the server: stop the bundled one if this app started it, unless kept."""
        if self._lab is not None:
            self._lab.controller.release(say)


def several_servers(
    servers: Sequence[Target | tuple[str | None, int | None]], keep_server: bool
) -> tuple[ServerChoice, ...]:
    """The servers to take turns on (none when fewer than two): a server handed in is its
    maker's (never stopped here); one named is reached or started when the lab opens."""
    if len(servers) < 2:
        return ()
    return tuple(
        ServerChoice(target=s, keep_server=True)
        if isinstance(s, Target)
        else named_choices([s], keep_server)[0]
        for s in servers
    )


def run_app(
    dsn: str | None = None,
    data_dir: Path | None = None,
    keep_server: bool = False,
    replay: str | None = None,
    bindir: Path | None = None,
    allow_risky: bool = False,
    speed: float = 1.0,
    ascii: bool | None = None,
    present: bool | None = None,
    servers: list[tuple[str | None, int | None]] | None = None,
    results: str | None = None,
) -> int:
    """Open the app (`pgwx`), or replay a run in it (`pgwx replay RUN|FILE|NAME`).

    Args:
        speed: Replay speed (1 = recorded pace).
        present: The presenter layout (None: automatic on a projector-sized terminal).
        servers: Several servers to take turns on, as named: (--dsn, --pg) each.
        results: The results store (`--results`; None: $PGWX_RESULTS, else the local file).

    Returns:
        The process exit status.
    """
    store = ResultStore(results)
    try:
        source = ReplaySource.find(store, replay, speed) if replay else None
        app = PgwxApp(
            dsn=dsn,
            data_dir=data_dir,
            bindir=bindir,
            keep_server=keep_server,
            store=store,
            replay=source,
            allow_risky=allow_risky,
            ascii=ascii,
            present=present,
            servers=servers,
        )
        try:
            app.run()
        finally:
            # The app stops its server on quit; this covers a crash or a kill of the UI.
            app.release_session(lambda m: print(f"pgwx: {m}"))
    finally:
        store.close()
    if app.signal_received is not None:
        return 128 + app.signal_received
    return app.return_code or 0
