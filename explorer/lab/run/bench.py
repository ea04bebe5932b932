"""The bench: the servers one front end works on, from naming them to releasing them.

Both front ends drive it — `pgwx run` and the app's controller — so they do alike what each
used to do by hand: resolve the servers named (starting those pgwx owns), adopt a bundled
server a dead pgwx left running (the app), open each once and refuse one server named twice,
run on one server or take turns on several (one `Runner` each, sharing a `Turnstile`, see
turns.py), apply the one interrupt policy (the first interrupt cancels; later ones are only
counted while the settings are put back), say what each server's settings are now, and
release what this process started.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from explorer.analysis import servers
from explorer.errors import PgwxError, UsageError
from explorer.lab.run.request import RunOptions
from explorer.lab.run.runner import Runner
from explorer.lab.run.session import Session, uses_user_server
from explorer.lab.run.turns import Turnstile
from explorer.lab.safety.owner import ServerBusy
from explorer.lab.safety.undo import restore_command
from explorer.lab.store.results import ResultStore
from explorer.models import Capabilities, Event, Profile, RunRecord, ServerAxis
from explorer.server import installs
from explorer.server.connect import Target
from explorer.server.conninfo import mask_secrets

Say = Callable[[str], None]
"""Where the bench says what it does: one line of text per call."""

Named = tuple[str | None, int | None]
"""A server as named on the command line: (--dsn value, --pg value), one of them None."""

STILL_PUTTING_BACK = "still putting the server back; one moment"
"""The answer to every interrupt after the first, while the settings are put back."""


@dataclass(frozen=True)
class ServerChoice:
    """Which server to work on, as the user (or a test) chose it: one type for both front ends."""

    target: Target | None = None
    """A server already reached (tests inject one); None to find or start one."""
    dsn: str | None = None
    """The user's connection string (None: libpq environment, else the bundled PG 18)."""
    data_dir: Path | None = None
    """Cluster directory of the bundled server."""
    keep_server: bool = False
    """Leave the bundled server running on quit."""
    user_server: bool = False
    """The user named a server (`--dsn` or a libpq variable) instead of one pgwx owns."""
    bindir: Path | None = None
    """Programs of the installed PostgreSQL to own a cluster of (`--pg N`); None: bundled 18."""
    pg: int | None = None
    """The major version `--pg N` named, when this is one of several servers (its programs
    are found when the server is started, as `pgwx run --pg 15 --pg 18` finds them)."""

    @property
    def named(self) -> Named:
        """The server as the command line names it: (--dsn, --pg), for a sentence about it."""
        return self.dsn, self.pg

    @classmethod
    def of(
        cls,
        target: Target | None,
        dsn: str | None,
        data_dir: Path | None,
        keep_server: bool,
        bindir: Path | None = None,
    ) -> ServerChoice:
        """The choice, with whether it names the user's server decided now (from the
        environment as it is at start); `--pg N` (bindir) wins over the libpq environment."""
        user = bindir is None and uses_user_server(dsn)
        return cls(target, dsn, data_dir, keep_server, user_server=user, bindir=bindir)


def named_choices(named: Sequence[Named], keep_server: bool) -> list[ServerChoice]:
    """Several servers as named (`--pg 15 --pg 18`, or several --dsn), in that order."""
    return [
        ServerChoice(dsn=dsn, pg=pg, keep_server=keep_server, user_server=pg is None)
        for dsn, pg in named
    ]


def server_failed(
    dsn: str | None, pg: int | None, exc: BaseException, label: str | None = None
) -> str:
    """'--pg 16 cannot be used, so nothing ran on any server: …' (a DSN shown masked; a
    server handed in by its label)."""
    if pg is not None:
        what = f"--pg {pg}"
    elif dsn or label is None:
        what = f"--dsn {mask_secrets(dsn or '')}"
    else:
        what = label
    return f"{what} cannot be used, so nothing ran on any server: {exc}"


def named_once(sessions: list[Session], caps: list[Capabilities]) -> None:
    """One sentence when two of the servers named are one server (the same system
    identifier, reached by two names): a run would take turns with itself."""
    ids = [c.system_identifier for c in caps]
    for i, sysid in enumerate(ids):
        if sysid in ids[:i]:
            raise UsageError(
                f"{sessions[i].target.label()} is the same server as "
                f"{sessions[ids.index(sysid)].target.label()}; name each server once."
            )


class Bench:
    """The servers one front end works on, for its whole life.

    Args:
        store: The results store (runs go there; a session marks the interrupted ones).
        choices: The servers named, in order (one, or several to take turns on).
    """

    def __init__(self, store: ResultStore, choices: Sequence[ServerChoice]) -> None:
        self.store = store
        self.choices = list(choices)
        """The servers named."""
        self.sessions: list[Session] = []
        """A session per server, once resolved (none if one could not be had)."""
        self.labels: list[str] = []
        """The servers' labels ('15', '18', '18b') once several are open."""
        self.runners: list[Runner] = []
        """The runners of the latest run, one per server it ran on."""
        self.interrupts = 0
        """Interrupts received (Ctrl-C, SIGTERM, SIGHUP, q): the first one cancels."""

    @property
    def several(self) -> bool:
        """More than one server was named: runs take turns on them."""
        return len(self.choices) > 1

    # ------------------------------------------------------------------ servers
    def resolve(self, say: Say, *, adopt: Say | None = None) -> list[Session]:
        """A session per server named (blocking: may start the servers pgwx owns).

        If one of several cannot be had, those started are released and one sentence says
        which failed and that nothing ran.

        Args:
            say: Told what is being started.
            adopt: Told about a bundled server a dead pgwx left running, which is then
                stopped on release like one started here (unless kept). None: left as
                found (its release says so).
        """
        chosen = self.choices
        if all(c.target is not None for c in chosen):
            # Handed in (tests): their maker's, never stopped here.
            sessions = [Session(c.target, self.store, keep_server=True) for c in chosen if c.target]
        elif not self.several:
            c = chosen[0]
            sessions = [
                Session.resolve(
                    self.store,
                    dsn=c.dsn,
                    data_dir=c.data_dir,
                    keep_server=c.keep_server,
                    say=say,
                    bindir=c.bindir,
                )
            ]
        else:
            sessions = self._resolve_each(say)
        self.sessions = sessions
        if adopt is not None:
            for session in sessions:
                self._adopt(session, adopt)
        return sessions

    def _resolve_each(self, say: Say) -> list[Session]:
        """Several servers, each by --dsn or --pg; one that fails releases the others."""
        sessions: list[Session] = []
        for choice in self.choices:
            dsn, pg = choice.named
            try:
                bindir = None if pg is None else installs.choose(pg, None)
                sessions.append(
                    Session.resolve(
                        self.store,
                        dsn=dsn,
                        keep_server=choice.keep_server,
                        say=say,
                        bindir=None if bindir is None else bindir.bindir,
                    )
                )
            except PgwxError as exc:
                for session in sessions:
                    session.release(say)
                raise PgwxError(server_failed(dsn, pg, exc)) from None
        return sessions

    @staticmethod
    def _adopt(session: Session, say: Say) -> None:
        """A bundled server running, not started by this process, held by nobody: a pgwx
        that died left it. Said; stopped on release like one started here, unless kept."""
        server = session.target.bundled
        if server is None or server.started_here or server.holder is not None:
            return
        found = f"found {server.kind()} in {server.data_dir} left running by an earlier pgwx"
        if session.keep_server:
            say(f"{found}; --keep-server leaves it running")
        else:
            say(f"{found}; it is stopped when you quit")
            server.started_here = True  # ours now: released (stopped) like one we started

    async def open(self, warn: Callable[[int], Say]) -> list[Capabilities]:
        """Open every session once: probe, mark interrupted runs, put back what a dead pgwx
        left. Of several, one that cannot be opened is one sentence naming it, and so is
        one server named twice; their labels are set.

        Args:
            warn: The sink of the server at each index, for what its opening found.
        """
        if not self.several:
            return [await self.sessions[0].open(warn(0))]
        caps: list[Capabilities] = []
        for i, (session, choice) in enumerate(zip(self.sessions, self.choices, strict=True)):
            try:
                caps.append(await session.open(warn(i)))
            except PgwxError as exc:
                dsn, pg = choice.named
                failed = server_failed(dsn, pg, exc, session.target.label())
                raise PgwxError(failed) from None
        named_once(self.sessions, caps)
        self.labels = servers.labels([c.major for c in caps])
        return caps

    # ------------------------------------------------------------------ runs
    async def run_one(
        self,
        index: int,
        profile: Profile,
        options: RunOptions,
        emit: Callable[[Event], None],
        caps: Capabilities,
    ) -> RunRecord:
        """The matrix on the server at `index` alone; the runner undoes however it ends."""
        runner = Runner(self.sessions[index].target, profile, self.store, options, caps=caps)
        self.runners = [runner]
        return await runner.run(emit)

    async def take_turns(
        self,
        on: Sequence[int],
        profile: Profile,
        options: RunOptions,
        say: Say,
        emit_for: Callable[[str], Callable[[Event], None]],
    ) -> list[RunRecord]:
        """One runner per server at the indexes `on`, taking turns trial by trial; if one
        fails outright, the others are cancelled (and undo) rather than going on half-way.

        Args:
            say: Where a sentence about the servers goes.
            emit_for: The event sink for the server labelled so ("15", "18", "18b" …).
        """
        sessions = [self.sessions[i] for i in on]
        caps = [s.caps for s in sessions if s.caps is not None]
        assert len(caps) == len(sessions), "open the bench before running on it"
        labels = servers.labels([c.major for c in caps])
        turnstile = Turnstile(len(sessions))
        # the request's workload goes to the first server's run; each other builds its own
        runners = [
            Runner(
                s.target,
                profile,
                self.store,
                options if i == 0 else options.for_another_run(),
                caps=c,
                turnstile=turnstile,
            )
            for i, (s, c) in enumerate(zip(sessions, caps, strict=True))
        ]
        self.runners = runners
        run_ids = [r.run_id for r in runners]
        for i, runner in enumerate(runners):
            runner.axis = ServerAxis(
                group=run_ids[0], label=labels[i], position=i, runs=run_ids, labels=labels
            )
        say(
            "servers take turns trial by trial: "
            + ", ".join(f"{labels[i]} = {s.target.label()}" for i, s in enumerate(sessions))
        )

        async def run_on(i: int, runner: Runner) -> RunRecord:
            try:
                return await runner.run(emit_for(labels[i]))
            except ServerBusy as exc:
                # "another pgwx … on this server": of several, this one is named
                raise ServerBusy(f"on {labels[i]} ({sessions[i].target.label()}): {exc}") from None

        tasks = [asyncio.create_task(run_on(i, runner)) for i, runner in enumerate(runners)]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    # ------------------------------------------------------------------ interrupts
    def interrupted(self, cancel: Callable[[], object], say: Say) -> None:
        """The one interrupt policy: the first interrupt (Ctrl-C, SIGTERM, SIGHUP, q)
        calls `cancel`; each later one is counted and answered, never a second cancel (that
        would cut the undo short)."""
        self.interrupts += 1
        if self.interrupts == 1:
            cancel()
        else:
            say(STILL_PUTTING_BACK)

    @contextlib.contextmanager
    def holding_interrupts(self, say: Say) -> Iterator[None]:
        """While the settings are put back and the servers released outside an event loop:
        Ctrl-C is counted and answered instead of raising KeyboardInterrupt; Python's
        handler is back after it (from the main thread only; elsewhere nothing changes)."""

        def counted(_signo: int, _frame: object) -> None:
            self.interrupts += 1
            say(STILL_PUTTING_BACK)

        try:
            previous = signal.signal(signal.SIGINT, counted)
        except ValueError:  # not the main thread
            yield
            return
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

    # ------------------------------------------------------------------ the end
    def settings_sentence(self) -> str:
        """What each server's settings are now, from what its undo (or recovery) did."""
        parts = []
        for i, session in enumerate(self.sessions):
            runner = self.runners[i] if i < len(self.runners) else None
            clause = _settings_clause(runner, session)
            tag = runner.axis.label if runner is not None and runner.axis is not None else None
            parts.append(
                f"on {tag or session.target.label()}: {clause}" if self.several else clause
            )
        return "; ".join(parts) or "no server settings were changed"

    def release(self, say: Say) -> None:
        """Stop the servers this process started (or adopted), unless they are to be kept."""
        for session in self.sessions:
            session.release(say)


def _settings_clause(runner: Runner | None, session: Session) -> str:
    """What one server's settings are now, from what the undo (or the recovery) did."""
    if runner is not None:
        return runner.undo_outcome().sentence(restore_command(runner.target))
    if session.recovered is not None:
        return session.recovered.sentence(restore_command(session.target))
    return "no server settings were changed"
