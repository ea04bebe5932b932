"""Who is working on a server: one advisory lock per run, and one for server settings.

Two pgwx may share a server: each run works in its own schema and ends only its own
sessions. What they cannot share is the server's configuration, so a run that changes server
settings holds a server-wide advisory lock for its whole life, on a session tagged
`pgwx-run-<run id> <pid>@<host>`; a second pgwx that wants to change settings is refused with
a sentence naming the first. Every run also holds a lock of its own, so recovery can tell a
live run's schema (locked) from one a dead pgwx left (its lock went with its session).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import socket
import zlib

import asyncpg

from explorer.errors import PgwxError
from explorer.server.connect import Target

LOCK_CLASS = 0x70677778
"""First key of every pgwx advisory lock ("pgwx" in ASCII), so they never meet a user's."""
SETTINGS_KEY = 0
"""Second key of the lock held while a run's server settings may be in force."""

_OWNER_APP = re.compile(r"^pgwx-run-(?P<run>\S+) (?P<pid>\d+)@(?P<host>\S*)")

_HOLDERS_SQL = """
SELECT l.objid::bigint AS key, a.application_name
FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.classid = $1::bigint::oid AND l.objsubid = 2 AND l.granted
"""


class ServerBusy(PgwxError):
    """Another live pgwx has server settings in force on this server."""


def run_key(run_id: str) -> int:
    """Second key of run `run_id`'s own lock: positive, never SETTINGS_KEY."""
    return (zlib.crc32(run_id.encode()) & 0x7FFFFFFF) or 1


def owner_purpose(run_id: str) -> str:
    """`Target.connect` purpose of a run's owner session: names the run, pid and host."""
    # application_name holds 63 bytes; the host is what gets shortened.
    head = f"run-{run_id} {os.getpid()}@"
    return head + socket.gethostname()[: max(0, 58 - len(head))]


def describe_holder(application_name: str | None) -> str:
    """ "pid 123 on host, running since …" from an owner session's application_name."""
    m = _OWNER_APP.match(application_name or "")
    if m is None:
        return "a pgwx whose pid and host the server does not show"
    since = m["run"]
    try:
        since = dt.datetime.strptime(m["run"][:15], "%Y%m%d-%H%M%S").strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        pass
    return f"pid {m['pid']} on {m['host'] or 'an unnamed host'}, running since {since}"


async def lock_holders(conn: asyncpg.Connection) -> dict[int, str | None]:
    """Second key → application_name of every live pgwx lock on the server."""
    rows = await conn.fetch(_HOLDERS_SQL, LOCK_CLASS)
    return {int(r["key"]): r["application_name"] for r in rows}


async def settings_holder(conn: asyncpg.Connection) -> str | None:
    """Who holds the settings lock (see `describe_holder`), None when nobody does."""
    holders = await lock_holders(conn)
    if SETTINGS_KEY not in holders:
        return None
    return describe_holder(holders[SETTINGS_KEY])


def busy_sentence(holder: str) -> str:
    """The one sentence a refused pgwx shows."""
    return (
        f"another pgwx ({holder}) has server settings changed on this server; "
        "wait until it finishes, or run only variants without server settings"
    )


class RunOwner:
    """The session that marks a run as alive (and, if asked, as the one changing settings).

    Args:
        target: The server.
        run_id: The run this session stands for.
    """

    def __init__(self, target: Target, run_id: str) -> None:
        self.target = target
        self.run_id = run_id
        self.settings = False
        """Whether this run holds the server-wide settings lock."""
        self._conn: asyncpg.Connection | None = None

    async def open(self, *, settings: bool) -> None:
        """Take the run's lock, and the settings lock when `settings`.

        Raises:
            ServerBusy: another pgwx holds the settings lock (one sentence naming it).
        """
        conn = await self.target.connect(owner_purpose(self.run_id))
        try:
            await conn.execute("SELECT pg_advisory_lock($1, $2)", LOCK_CLASS, run_key(self.run_id))
            if settings and not await conn.fetchval(
                "SELECT pg_try_advisory_lock($1, $2)", LOCK_CLASS, SETTINGS_KEY
            ):
                holder = await settings_holder(conn)
                raise ServerBusy(busy_sentence(holder or "one that just finished"))
        except BaseException:
            await conn.close()
            raise
        self._conn = conn
        self.settings = settings

    async def ensure(self) -> None:
        """Take the locks again after a server restart ended the owner session."""
        if self._conn is not None and not self._conn.is_closed():
            try:
                await self._conn.fetchval("SELECT 1")
                return
            except (asyncpg.PostgresError, OSError, asyncpg.InterfaceError):
                pass  # the restart ended it: open a new one below
        await self.close()
        await self.open(settings=self.settings)

    async def close(self) -> None:
        """Give both locks back (closing the session releases them)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                await conn.close()
            except Exception:
                conn.terminate()
