"""Server settings: ALTER SYSTEM with an undo journal, and the settings a session runs with.

Server-level changes are journaled to disk *before* they are made (`explorer.lab.safety.journal`),
so that a pgwx killed mid-run puts them back at its next start. Values reach the server as
data (a quoted literal built by the server's own format()), never spliced into SQL.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import asyncpg

from explorer.errors import PgwxError
from explorer.lab.safety.journal import MANAGED, Journal, JournalUnreadable, shown
from explorer.lab.safety.leftovers import repair_journaled
from explorer.server.capabilities import RESTART_CONTEXTS
from explorer.server.connect import Target
from explorer.server.datadir import AUTO_CONF, PgCtlCutShort, ServerError
from explorer.server.embedded import LocalServer
from explorer.server.gucs import same_setting

__all__ = [
    "Journal",
    "JournalUnreadable",
    "ServerCannotStart",
    "ServerSettings",
    "SettingsError",
    "settings_in_force",
]


class SettingsError(PgwxError, RuntimeError):
    """A server setting cannot be changed as a variant asks (a restart pgwx may not make, a
    value the server did not take); str() is one sentence."""


class ServerCannotStart(PgwxError):
    """pgwx's own server failed to start with what pgwx set: the run ends with this sentence
    (never a wait for a server that cannot come)."""


REJECTED_STATES = ("22", "42704")
"""SQLSTATE classes of a value or name the server refuses (a damaged journal entry), as
opposed to a server that cannot write (a full disk), which is never taken for bad data."""

# --------------------------------------------------------------------------- server settings


class ServerSettings:
    """Changes server settings with ALTER SYSTEM and puts every one of them back.

    Args:
        target: The server; restarts go through its bundled LocalServer.
        journal: Where pending undos are recorded before each change.
        notify: Called with one line for each thing done (shown in the log).
        on_restart: Called just before pgwx restarts the server itself.
    """

    def __init__(
        self,
        target: Target,
        journal: Journal,
        notify: Callable[[str], None] = lambda _m: None,
        on_restart: Callable[[], None] = lambda: None,
    ) -> None:
        self.target = target
        self.journal = journal
        self.notify = notify
        self.on_restart = on_restart
        self.set_aside: dict[str, str] = {}
        """Journal entries the server rejected (name → why), taken out of the journal."""
        self.started_with: list[str] = []
        """What the journal held when the last `restore` began."""
        self.repaired: list[str] = []
        """Settings taken out of postgresql.auto.conf offline (the server could not start)."""
        self._restarting: asyncio.Future[None] | None = None
        self.cut_short: str | None = None
        """What the last restart's pg_ctl, killed half-way, left and pgwx did (to be said)."""

    async def apply(self, wanted: dict[str, str], contexts: dict[str, str]) -> bool:
        """Make the server's settings match `wanted` and undo earlier changes not wanted.

        Returns True when the server was restarted (every connection must be reopened).
        """
        pending = self.journal.load()
        conn = await self.target.connect("admin")
        try:
            current = await _settings(conn, set(wanted) | set(pending))
            to_reset = [n for n in pending if n not in wanted]
            to_set = {n: v for n, v in wanted.items() if not _same(current.get(n), v)}
            if not to_set and not to_reset:
                return False
            for name, value in to_set.items():
                if name not in pending:
                    pending[name] = {"auto": await _auto_conf_value(conn, name)}
                    if name not in MANAGED:
                        # A variant's other setting: its context tells a later pgwx whether
                        # putting it back needs a restart (and that pgwx set it).
                        pending[name]["context"] = contexts.get(name, "sighup")
                pending[name]["set"] = value
            self.journal.save(pending)
            for name in to_reset:
                await self._put_back_one(conn, name, pending[name])
            for name, value in to_set.items():
                await _alter_system(conn, name, value)
            changed = [*to_reset, *to_set]
            restart = any(
                (contexts.get(n) or pending.get(n, {}).get("context")) in RESTART_CONTEXTS
                for n in changed
            )
        finally:
            await conn.close()
        if restart:
            await self._restart(changed)
        else:
            await self._reload()
        for name in to_reset:
            pending.pop(name, None)
        self.journal.save(pending)
        if to_set:
            self.notify("applied " + ", ".join(f"{n}={v}" for n, v in to_set.items()))
        if to_reset:
            self.notify("restored " + ", ".join(to_reset))
        await self._verify(wanted)
        return restart

    async def _put_back_one(
        self, conn: asyncpg.Connection, name: str, entry: dict[str, Any]
    ) -> None:
        """ALTER SYSTEM one setting back; an earlier value the server rejects is set aside.

        Such a value cannot have been in postgresql.auto.conf before pgwx ran: the entry is
        damaged, so the setting goes back to the server default (the safe side), and the
        entry is kept beside the journal and named.
        """
        try:
            await _alter_system(conn, name, entry["auto"])
        except asyncpg.PostgresError as exc:
            if not str(exc.sqlstate or "").startswith(REJECTED_STATES):
                raise
            await _alter_system(conn, name, None)
            aside = self.journal.keep_aside({name: entry})
            why = str(exc).splitlines()[0]
            self.set_aside[name] = (
                f"the server rejects its earlier value {shown(entry['auto'])}: back to the "
                "server default"
            )
            self.notify(
                f"set aside the journal entry for {name}: the server rejects its earlier value "
                f"{shown(entry['auto'])} ({why}); {name} is back to the server default, and the "
                f"entry is kept in {aside}"
            )

    async def restore(self, contexts: dict[str, str]) -> list[str]:
        """Put back everything in the journal; returns the names put back as journaled
        (entries the server rejected are in `set_aside`)."""
        if self._restarting is not None:
            with contextlib.suppress(Exception):
                await self._restarting  # a cancelled run's restart, still under way
        pending = self.journal.load()
        self.started_with = list(pending)
        if not pending:
            return []
        await self.apply({}, contexts)
        return [n for n in pending if n not in self.set_aside]

    async def _reload(self) -> None:
        conn = await self.target.connect("admin")
        try:
            await conn.execute("SELECT pg_reload_conf()")
        finally:
            await conn.close()

    async def _restart(self, names: list[str]) -> None:
        server = self.target.bundled
        if server is None:
            raise SettingsError(
                f"{', '.join(names)} need a restart and pgwx does not own this server"
            )
        self.notify(f"restarting the server pgwx owns for {', '.join(names)}")
        self.on_restart()
        # Shielded: a Ctrl-C or SIGTERM must not leave the undo racing pg_ctl; `restore`
        # waits for this restart to end before it puts anything back.
        self._restarting = asyncio.ensure_future(
            asyncio.to_thread(self._restart_or_repair, server, names)
        )
        await asyncio.shield(self._restarting)
        if self.cut_short:
            self.notify(self.cut_short)
            self.cut_short = None

    def _restart_or_repair(self, server: LocalServer, names: list[str]) -> None:
        """Restart; when the server cannot start with what pgwx set, take that out of
        postgresql.auto.conf offline and start it again, then end the run with the reason
        (blocking). pgwx never waits for its own server once it has seen it fail."""
        try:
            server.restart()
        except PgCtlCutShort as cut:
            # pg_ctl was killed, not the server refusing the values: finish what it began
            try:
                server.start_after_cut()
            except ServerError as again:
                raise ServerCannotStart(
                    f"the restart for {', '.join(names)} was cut short: {cut}; and it does not "
                    f"start again: {again}"
                ) from None
            self.cut_short = (
                f"the restart for {', '.join(names)} was cut short: {cut}; pgwx finished it "
                f"itself, and the server runs with {', '.join(names)} as set"
            )
        except ServerError as failed:
            fatal = server.last_log_line().rstrip(".")
            repaired = repair_journaled(server, self.journal.path.parent)
            if not repaired:
                raise ServerCannotStart(str(failed)) from None
            self.repaired.extend(n.split("=", 1)[0] for n in repaired)
            removed = f"removed {', '.join(repaired)} from {server.data_dir / AUTO_CONF}"
            ours = server.started_here  # a server found running stays the user's to stop
            try:
                server.start()
                server.started_here = ours
            except ServerError as again:
                raise ServerCannotStart(
                    f"PostgreSQL in {server.data_dir} did not start with {', '.join(names)} "
                    f"({fatal}); pgwx {removed}, and it still does not start: {again}"
                ) from None
            raise ServerCannotStart(
                f"PostgreSQL in {server.data_dir} could not start with {', '.join(repaired)} "
                f"({fatal}); pgwx {removed} and started it again"
            ) from None

    async def _verify(self, wanted: dict[str, str], timeout: float = 5.0) -> None:
        """Wait until a fresh session sees the new values (a reload is asynchronous)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            conn = await self.target.connect("admin")
            try:
                now = await _settings(conn, set(wanted))
            finally:
                await conn.close()
            wrong = {n: v for n, v in wanted.items() if not _same(now.get(n), v)}
            if not wrong:
                return
            if asyncio.get_running_loop().time() > deadline:
                raise SettingsError(
                    "the server did not take "
                    + ", ".join(f"{n}={v} (still {now.get(n)})" for n, v in wrong.items())
                )
            await asyncio.sleep(0.1)


def _same(current: str | None, wanted: str) -> bool:
    if current is None:
        return False
    if same_setting(current, wanted):
        return True
    aliases = {"1": "on", "0": "off", "true": "on", "false": "off"}
    return aliases.get(current.lower(), current.lower()) == aliases.get(
        wanted.lower(), wanted.lower()
    )


async def _settings(conn: asyncpg.Connection, names: set[str]) -> dict[str, str]:
    """current_setting() of each name, units included (e.g. '8MB'); a setting this version
    does not have (io_method before 18) is left out."""
    rows = await conn.fetch(
        "SELECT name, current_setting(name, true) AS value FROM unnest($1::text[]) AS name",
        sorted(names),
    )
    return {r["name"]: str(r["value"]) for r in rows if r["value"] is not None}


async def _auto_conf_value(conn: asyncpg.Connection, name: str) -> str | None:
    """The value postgresql.auto.conf holds for `name` now, so undo can restore it exactly."""
    return await conn.fetchval(
        """SELECT setting FROM pg_file_settings
           WHERE name = $1 AND sourcefile LIKE '%postgresql.auto.conf'
           ORDER BY seqno DESC LIMIT 1""",
        name,
    )


async def _alter_system(conn: asyncpg.Connection, name: str, value: str | None) -> None:
    if value is None:
        sql = await conn.fetchval("SELECT format('ALTER SYSTEM RESET %I', $1::text)", name)
    else:
        sql = await conn.fetchval(
            "SELECT format('ALTER SYSTEM SET %I = %L', $1::text, $2::text)", name, value
        )
    await conn.execute(sql)


async def settings_in_force(conn: asyncpg.Connection, names: list[str]) -> dict[str, str]:
    """What the given session actually runs with, read back rather than assumed."""
    return await _settings(conn, set(names))
