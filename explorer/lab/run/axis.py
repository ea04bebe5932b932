"""One experiment on several servers at once (`pgwx run --pg 15 --pg 18`): the coordinator.

Opens a session per server, gives each a `Runner` sharing one `Turnstile` (see turns.py) and a
`ServerAxis` naming its place in the group, and runs them together. Any front end that runs
several servers calls these functions, so the command line and the app take turns alike.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from explorer.analysis import servers
from explorer.errors import PgwxError, UsageError
from explorer.lab.run.request import RunOptions
from explorer.lab.run.runner import Runner
from explorer.lab.run.session import Session
from explorer.lab.run.turns import Turnstile
from explorer.lab.store.results import ResultStore
from explorer.models import Capabilities, Event, Profile, RunRecord, ServerAxis
from explorer.server import installs
from explorer.server.conninfo import mask_secrets

Named = tuple[str | None, int | None]
"""A server as named on the command line: (--dsn value, --pg value), one of them None."""


def server_failed(dsn: str | None, pg: int | None, exc: BaseException) -> str:
    """'--pg 16 cannot be used, so nothing ran on any server: …' (a DSN shown masked)."""
    what = f"--pg {pg}" if pg is not None else f"--dsn {mask_secrets(dsn or '')}"
    return f"{what} cannot be used, so nothing ran on any server: {exc}"


def resolve_servers(
    named: list[Named], store: ResultStore, keep_server: bool, say: Callable[[str], None]
) -> list[Session]:
    """A session per server named; if one cannot be had, the ones started are released and
    one sentence says which server failed and that nothing ran."""
    sessions: list[Session] = []
    for dsn, pg in named:
        try:
            bindir = None if pg is None else installs.choose(pg, None)
            sessions.append(
                Session.resolve(
                    store,
                    dsn=dsn,
                    keep_server=keep_server,
                    say=say,
                    bindir=None if bindir is None else bindir.bindir,
                )
            )
        except PgwxError as exc:
            for session in sessions:
                session.release(say)
            raise PgwxError(server_failed(dsn, pg, exc)) from None
    return sessions


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


async def run_on_servers(
    sessions: list[Session],
    named: list[Named],
    profile: Profile,
    store: ResultStore,
    options: RunOptions,
    say: Callable[[str], None],
    emit_for: Callable[[str], Callable[[Event], None]],
    runners: list[Runner],
) -> list[RunRecord]:
    """One runner per server, taking turns trial by trial; if one fails outright, the others
    are cancelled (and undo) rather than going on half-way.

    Args:
        say: Where a sentence about the servers goes.
        emit_for: The event sink for the server labelled so ("15", "18", "18b" …).
        runners: Filled with the runners as they are made, so the caller can undo them
            (and say what each server's settings are) however the run ends.
    """
    caps: list[Capabilities] = []
    for session, (dsn, pg) in zip(sessions, named, strict=True):
        try:
            caps.append(await session.open(lambda m: say(f"  ! {m}")))
        except PgwxError as exc:
            raise PgwxError(server_failed(dsn, pg, exc)) from None
    named_once(sessions, caps)
    labels = servers.labels([c.major for c in caps])
    turnstile = Turnstile(len(sessions))
    for session, c in zip(sessions, caps, strict=True):
        runners.append(Runner(session.target, profile, store, options, caps=c, turnstile=turnstile))
    run_ids = [r.run_id for r in runners]
    for i, runner in enumerate(runners):
        runner.axis = ServerAxis(
            group=run_ids[0], label=labels[i], position=i, runs=run_ids, labels=labels
        )
    say(
        "servers take turns trial by trial: "
        + ", ".join(f"{labels[i]} = {s.target.label()}" for i, s in enumerate(sessions))
    )
    tasks = [
        asyncio.create_task(runner.run(emit_for(labels[i]))) for i, runner in enumerate(runners)
    ]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
