"""Workload sessions that cannot outlive pgwx, and a trial that cannot outlive its sessions.

Three guards against the server and the client drifting apart:

- every workload session (and every client tool's, through PGOPTIONS) carries
  `client_connection_check_interval` (PostgreSQL 14+), so a statement whose client died is
  cancelled within seconds, and a `statement_timeout` derived from the profile's size;
- a trial whose session the server ended (pg_terminate_backend, a crash, a restart) fails
  within seconds with the reason, instead of waiting forever in asyncpg's COPY, whose flow
  control never wakes up once the connection is gone;
- recovery ends the backends a dead pgwx left running before it drops their schema.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TypeVar

import asyncpg

from explorer.lab.workloads.base import WorkloadError
from explorer.server.connect import APP_PREFIX, ConnectError, Target
from explorer.server.datadir import ServerError
from explorer.server.embedded import LocalServer

LOST_GRACE = 1.0
"""Seconds a trial may take to notice a lost session by itself before it is ended."""

SERVER_RETURN_WAIT = 120.0
"""Seconds to wait for the server to answer again after a trial lost its session."""

ORPHAN_APPS = ("work", "prepare")
"""application_name tags (pgwx-<tag>…) of sessions that run the workload's statements."""

T = TypeVar("T")


class SessionLost(WorkloadError):
    """The server ended a workload session in the middle of a trial."""


# --------------------------------------------------------------------------- lost sessions


async def postmaster_start(conn: asyncpg.Connection) -> dt.datetime | None:
    """When the server last started, to tell a restart from a terminated session."""
    with contextlib.suppress(asyncpg.PostgresError, asyncpg.InterfaceError, OSError):
        value = await conn.fetchval("SELECT pg_postmaster_start_time()")
        return value if isinstance(value, dt.datetime) else None
    return None


async def lost_reason(target: Target, started: dt.datetime | None, pids: Iterable[int] = ()) -> str:
    """Why workload sessions (server pids `pids`) are gone, as the server tells it now."""
    said = _server_log_says(target, pids)
    try:
        conn = await target.connect("admin", timeout=5.0)
    except ConnectError as exc:
        return f"the server closed the workload session and does not answer now ({exc})"
    try:
        now = await postmaster_start(conn)
    finally:
        await conn.close()
    if started is not None and now is not None and now > started:
        return "the server restarted during the trial and closed the workload session" + said
    return (
        "the server terminated the workload session (pg_terminate_backend by someone, or a "
        "backend crash)" + said
    )


def _server_log_says(target: Target, pids: Iterable[int]) -> str:
    """The FATAL line the server logged for these backends (pgwx's own server only)."""
    server = target.bundled
    if server is None:
        return ""
    try:
        with server.log_file.open("rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 256 * 1024))
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        return ""
    tags = [f"[{pid}]" for pid in pids]
    for line in reversed(lines):
        if "FATAL:" in line and any(tag in line for tag in tags):
            return ": " + line.split("FATAL:", 1)[1].strip()
    return ""


async def run_watched(
    work: Awaitable[T],
    sessions: Callable[[], Iterable[asyncpg.Connection]],
    on_lost: Callable[[list[int]], Awaitable[str]],
    *,
    poll: float = 0.2,
    grace: float = LOST_GRACE,
) -> T:
    """Await `work`; when one of `sessions` closes under it, end it and raise SessionLost.

    asyncpg waits forever in a COPY whose connection was lost, so the sessions are watched
    from outside: a workload never closes its own sessions before the trial ends.

    Args:
        work: The trial.
        sessions: The trial's sessions now (a trial may open more as it goes).
        on_lost: The reason, given the server pids of the closed sessions.
        poll: Seconds between looks.
        grace: Seconds `work` gets to fail by itself once a session is closed.
    """
    task = asyncio.ensure_future(work)
    loop = asyncio.get_running_loop()
    closed_at: float | None = None
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=poll)
            if done:
                exc = None if task.cancelled() else task.exception()
                closed = _closed(sessions())
                if exc is not None and closed:
                    # asyncpg's own error for a lost connection is often an internal one
                    # ("cannot switch to state …"); the server's words say more.
                    reason = await on_lost(closed)
                    if isinstance(exc, asyncpg.PostgresError) and str(exc) not in reason:
                        reason += f" ({exc})"
                    raise SessionLost(reason) from exc
                return task.result()
            closed = _closed(sessions())
            if closed_at is None and closed:
                closed_at = loop.time()
            if closed_at is not None and loop.time() - closed_at >= grace:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                raise SessionLost(await on_lost(closed))
    except asyncio.CancelledError:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise


def _closed(sessions: Iterable[asyncpg.Connection]) -> list[int]:
    """Server pids of the sessions that are closed."""
    return [c.get_server_pid() for c in sessions if c.is_closed()]


def lost_connection(exc: BaseException) -> bool:
    """Whether a trial failed because it lost the server (the next may run once it is back)."""
    return isinstance(
        exc,
        SessionLost
        | ConnectError
        | asyncpg.InterfaceError
        | ConnectionError
        | asyncpg.AdminShutdownError
        | asyncpg.CannotConnectNowError,
    )


COUNTDOWN_EVERY = 15.0
"""Seconds between the "still waiting" lines of a wait for the server."""


async def wait_for_server(
    target: Target,
    timeout: float = SERVER_RETURN_WAIT,
    tick: Callable[[float], None] = lambda _left: None,
    every: float = COUNTDOWN_EVERY,
    hopeless: Callable[[], None] = lambda: None,
) -> None:
    """Return once the server accepts a connection again; ConnectError after `timeout`.

    Args:
        target: The server.
        timeout: Seconds to wait at most.
        tick: Told the seconds left, every `every` seconds (the wait's countdown).
        every: Seconds between ticks.
        hopeless: Called between tries; raises to end the wait when the server cannot come
            (pgwx's own server, stopped after a PANIC).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    next_tick = loop.time() + every
    while True:
        try:
            conn = await target.connect("admin", timeout=5.0)
        except ConnectError as exc:
            if loop.time() >= deadline:
                raise ConnectError(
                    f"the server did not answer again within {timeout:g} s after the trial "
                    f"lost its session: {exc}"
                ) from None
            hopeless()
            if loop.time() >= next_tick:
                tick(max(0.0, deadline - loop.time()))
                next_tick += every
            await asyncio.sleep(0.5)
            continue
        await conn.close()
        return


START_AGAIN_FOR = 60.0
"""Seconds to keep trying to start pgwx's own server whose postmaster is gone (the killed
postmaster's backends hold its shared memory until each notices and exits)."""


class PostmasterGone(Exception):
    """pgwx's own server lost its postmaster (killed or crashed): no one else will start it."""


def _postmaster_state(server: LocalServer) -> str | None:
    """The state letter of the process postmaster.pid names ('' when there is none left,
    'Z' a zombie, …); None when the file is missing or cannot be read."""
    try:
        pid = int((server.data_dir / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return ""
    except OSError:
        return None
    return stat[stat.rindex(")") + 2]


def postmaster_gone(server: LocalServer) -> bool:
    """postmaster.pid names a process that has died (killed; a clean stop removes the file,
    and a missing file is not this)."""
    state = _postmaster_state(server)
    return state is not None and state in ("", "Z", "X")


async def start_again(server: LocalServer, say: Callable[[str], None]) -> None:
    """Start pgwx's own server whose postmaster is gone, at once, so the run can go on and
    put its settings back; whether pgwx stops it at the end is as it was before.

    Raises:
        ConnectError: it could not be started within START_AGAIN_FOR seconds (the last reason).
    """
    say(
        f"PostgreSQL in {server.data_dir} is not running (its postmaster is gone: killed or "
        "crashed); starting it again, so the run can go on and put its settings back"
    )
    started_here = server.started_here
    loop = asyncio.get_running_loop()
    deadline = loop.time() + START_AGAIN_FOR
    why = "its killed postmaster was not yet reaped"
    while True:
        # Until the dead postmaster is reaped, pg_ctl takes it for a running server.
        if _postmaster_state(server) not in ("Z", "X"):
            try:
                await asyncio.to_thread(server.start)
                if not postmaster_gone(server):
                    break
            except ServerError as exc:
                # "pre-existing shared memory block is still in use" until the old backends go
                why = str(exc)
        if loop.time() >= deadline:
            raise ConnectError(
                f"PostgreSQL in {server.data_dir} lost its postmaster and could not be started "
                f"again within {START_AGAIN_FOR:g} s: {why}"
            )
        await asyncio.sleep(0.5)
    server.started_here = started_here
    say(f"started it again (PostgreSQL in {server.data_dir})")


def server_log_panic(server: LocalServer, since: int) -> str | None:
    """The server log's first PANIC line written after byte `since`, None when none."""
    try:
        with server.log_file.open("rb") as f:
            f.seek(since)
            text = f.read(4 * 1024 * 1024).decode(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if "PANIC:" in line:
            return line.strip()
    return None


def log_size(server: LocalServer) -> int:
    """Where the server log ends now (what follows is this run's)."""
    try:
        return server.log_file.stat().st_size
    except OSError:
        return 0


# --------------------------------------------------------------------------- orphans


def _tagged(tags: Iterable[str]) -> str:
    return " OR ".join(f"application_name LIKE '{APP_PREFIX}-{tag}%'" for tag in tags)


ORPHANS_SQL = f"""
SELECT pid, application_name, state, left(query, 200) AS query
FROM pg_stat_activity
WHERE pid <> pg_backend_pid() AND state NOT IN ('idle', 'idle in transaction')
  AND ({_tagged(ORPHAN_APPS)})
"""
"""pgwx's backends busy with a workload statement."""

LIVE_SQL = f"""
SELECT pid FROM pg_stat_activity
WHERE pid <> pg_backend_pid() AND state IN ('idle', 'idle in transaction')
  AND application_name LIKE '{APP_PREFIX}-%'
"""
"""pgwx sessions waiting for their client: an idle backend ends as soon as its client is
gone, so each of these belongs to a pgwx that is alive."""


async def end_orphans(conn: asyncpg.Connection) -> tuple[list[str], list[int]]:
    """Terminate the busy workload backends a dead pgwx left.

    Nothing is ended while another pgwx is alive on the server (one of its sessions waits
    for its client): its busy backends may be its own trial, which the server cannot tell
    apart from an orphan.

    Returns:
        The backends ended, each described; the pids of the live pgwx's sessions.
    """
    live = [int(r["pid"]) for r in await conn.fetch(LIVE_SQL)]
    if live:
        return [], live
    ended = []
    for row in await conn.fetch(ORPHANS_SQL):
        if await conn.fetchval("SELECT pg_terminate_backend($1)", row["pid"]):
            ended.append(f"{row['pid']} ({row['application_name']}: {row['query']!r})")
    return ended, []


async def drop_schema(conn: asyncpg.Connection, schema: str, lock_timeout_ms: int = 10_000) -> str:
    """DROP SCHEMA … CASCADE without waiting forever; '' when dropped, else one sentence."""
    try:
        async with conn.transaction():
            await conn.execute(f"SET LOCAL lock_timeout = {int(lock_timeout_ms)}")
            await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    except asyncpg.LockNotAvailableError:
        return await _blocked_sentence(conn, schema)
    return ""


async def _blocked_sentence(conn: asyncpg.Connection, schema: str) -> str:
    """Who holds a lock on `schema`'s objects, to name in the message."""
    row = await conn.fetchrow(
        """SELECT a.pid, a.application_name, a.state, left(a.query, 120) AS query
           FROM pg_locks l JOIN pg_stat_activity a USING (pid)
           LEFT JOIN pg_class c ON l.locktype = 'relation' AND c.oid = l.relation
           WHERE l.granted AND a.pid <> pg_backend_pid() AND (
               c.relnamespace = to_regnamespace($1)
               OR (l.locktype = 'object' AND l.objid = to_regnamespace($1)::oid))
           ORDER BY a.backend_start LIMIT 1""",
        schema,
    )
    who = "another session"
    if row:
        verb = "running" if row["state"] == "active" else f"{row['state']}, last query"
        app = row["application_name"] or "no application_name"
        who = f"backend {row['pid']} ({app}; {verb} {row['query']!r})"
    return (
        f"could not drop schema {schema}: {who} holds a lock on it; end it with "
        f"SELECT pg_terminate_backend(pid) when it is not yours, and pgwx drops {schema} at "
        "its next start"
    )
