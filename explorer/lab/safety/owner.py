"""Who is working on a server: one advisory lock per run, and one for server settings.

Two pgwx may share a server: each run works in its own schema and ends only its own
sessions. What they cannot share is the server's configuration, so a run that changes server
settings holds a server-wide advisory lock for its whole life, on a session tagged
`pgwx-run-<run id> <pid>@<host>`; a second pgwx that wants to change settings is refused with
a sentence naming the first. Every run also holds a lock of its own, so recovery can tell a
live run's schema (locked) from one a dead pgwx left (its lock went with its session).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
import socket
import zlib

import asyncpg

from explorer.errors import PgwxError
from explorer.server.connect import Target
from explorer.text import printable

LOCK_CLASS = 0x70677778
"""First key of every pgwx advisory lock ("pgwx" in ASCII), so they never meet a user's."""
SETTINGS_KEY = 0
"""Second key of the lock held while a run's server settings may be in force."""

RECOVERY_APP = "pgwx-admin"
"""application_name of the session that takes the settings lock to put back a dead pgwx's
settings (`explorer.lab.run.session`)."""

_OWNER_APP = re.compile(r"^pgwx-run-(?P<run>\S+) (?P<pid>\d+)@(?P<host>\S*)")

_HOLDERS_SQL = """
SELECT l.objid::bigint AS key, l.pid, a.application_name, a.usename, p.gid, p.owner
FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
LEFT JOIN pg_locks x
  ON l.pid IS NULL AND x.pid IS NULL AND x.locktype = 'transactionid'
  AND x.virtualtransaction = l.virtualtransaction
LEFT JOIN pg_prepared_xacts p ON p.transaction = x.transactionid
WHERE l.locktype = 'advisory' AND l.classid = $1::bigint::oid AND l.objsubid = 2 AND l.granted
"""
"""Every session (or prepared transaction) holding one of pgwx's advisory keys."""


@dataclasses.dataclass(frozen=True)
class Holder:
    """Who holds one of pgwx's advisory keys: a pgwx's owner session, or someone else.

    Any session may take any advisory lock, the run's fenced roles too: only a session of a
    user that is not one of those roles, tagged as an owner session, is taken for a pgwx.
    """

    application_name: str | None
    user: str | None
    pid: int | None
    """None for a prepared transaction (it has no session)."""
    gid: str | None = None
    """The prepared transaction's id, when a prepared transaction holds it."""
    owner: str | None = None
    """The prepared transaction's owner."""
    own_key: bool = False
    """The same session also holds the key of the run its application_name names."""
    may_alter_system: bool = True
    """For the settings key: its user may change server settings (a superuser, or granted
    ALTER SYSTEM on a parameter), as a pgwx that holds that key must. A name and a key any
    session can take; this the server grants."""

    @property
    def is_pgwx(self) -> bool:
        """A pgwx's session, not logged in as a profile's fenced role: a run's owner session
        (see `owner_purpose`) holding its run's own key too, or the `pgwx-admin` session in
        which a starting pgwx puts back what a dead one left; holding the settings key, only
        as a user that may change server settings (`may_alter_system`)."""
        if self.pid is None or (self.user or "").startswith(("pgwx_run_", "pgwx_read_")):
            return False
        if not self.may_alter_system:
            return False
        app = self.application_name or ""
        return app == RECOVERY_APP or (self.own_key and _OWNER_APP.match(app) is not None)

    def describe(self) -> str:
        """Who it is, in words (printable: the names come from whoever took the lock)."""
        if self.is_pgwx:
            return describe_holder(self.application_name)
        if self.pid is None:
            gid = printable(self.gid or "?")[:64]
            return (
                f"a prepared transaction that is not a pgwx's (gid {gid!r}, owner "
                f"{printable(self.owner or '?')[:64]}); ROLLBACK PREPARED it to free the lock"
            )
        app = printable(self.application_name or "")[:64]
        return (
            f"a session that is not a pgwx's (pid {self.pid}, user "
            f"{printable(self.user or '?')[:64]}, application_name {app!r}); end it with "
            f"SELECT pg_terminate_backend({self.pid}) to free the lock"
        )


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


async def all_holders(conn: asyncpg.Connection) -> dict[int, Holder]:
    """Second key → who holds it, for every pgwx key held on the server (by anyone)."""
    rows = await conn.fetch(_HOLDERS_SQL, LOCK_CLASS)
    held = {(r["pid"], int(r["key"])) for r in rows if r["pid"] is not None}

    def own_key(app: str | None, pid: int | None) -> bool:
        m = _OWNER_APP.match(app or "")
        return m is not None and (pid, run_key(m["run"])) in held

    settings_user = next(
        (r["usename"] for r in rows if int(r["key"]) == SETTINGS_KEY and r["pid"] is not None),
        None,
    )
    may_set = settings_user is None or await may_alter_system(conn, settings_user)
    return {
        int(r["key"]): Holder(
            r["application_name"],
            r["usename"],
            r["pid"],
            r["gid"],
            r["owner"],
            own_key(r["application_name"], r["pid"]),
            may_alter_system=may_set if int(r["key"]) == SETTINGS_KEY else True,
        )
        for r in rows
    }


async def may_alter_system(conn: asyncpg.Connection, user: str) -> bool:
    """Whether `user` may change server settings: a superuser, or (PostgreSQL 15+) granted
    ALTER SYSTEM on some parameter. A catalog that cannot be read says no."""
    try:
        if await conn.fetchval("SELECT rolsuper FROM pg_roles WHERE rolname = $1", user):
            return True
        if await conn.fetchval("SELECT current_setting('server_version_num')::int") < 150000:
            return False
        return bool(
            await conn.fetchval(
                "SELECT EXISTS (SELECT 1 FROM pg_parameter_acl p "
                "CROSS JOIN LATERAL aclexplode(p.paracl) a "
                "WHERE a.grantee = (SELECT oid FROM pg_roles WHERE rolname = $1) "
                "AND a.privilege_type = 'ALTER SYSTEM')",
                user,
            )
        )
    except asyncpg.PostgresError:
        return False


async def lock_holders(conn: asyncpg.Connection) -> dict[int, str | None]:
    """Second key → application_name of every live pgwx lock on the server (keys taken by
    anyone else do not keep a run alive)."""
    holders = await all_holders(conn)
    return {key: h.application_name for key, h in holders.items() if h.is_pgwx}


async def settings_holder(conn: asyncpg.Connection) -> Holder | None:
    """Who holds the settings lock, None when nobody does."""
    return (await all_holders(conn)).get(SETTINGS_KEY)


def busy_sentence(holder: Holder | None) -> str:
    """The one sentence a refused pgwx shows: another pgwx, or what else holds the lock."""
    if holder is not None and not holder.is_pgwx:
        return (
            f"pgwx's server-settings lock is held by {holder.describe()}; until then, run "
            "only variants without server settings"
        )
    who = holder.describe() if holder is not None else "one that just finished"
    return (
        f"another pgwx ({who}) has server settings changed on this server; "
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
                raise ServerBusy(busy_sentence(await settings_holder(conn)))
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
