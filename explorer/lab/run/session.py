"""Which server, open it, release it: the one session both front ends (CLI and app) use.

A session is resolved (`--dsn`, else the libpq environment, else the bundled PostgreSQL 18,
started when it is not running), opened once (connect, probe capabilities, mark the runs a
killed pgwx left as interrupted, put back the settings and schema it left on the server) and
released once (the bundled server is stopped if this process started it and it is not to be
kept). Runs on the session reuse its capabilities; nothing is probed or recovered twice.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg

from explorer.lab.run.fence import drop_dead_roles
from explorer.lab.run.guard import drop_schema, end_orphans
from explorer.lab.run.leftovers import repair_journaled
from explorer.lab.run.owner import (
    LOCK_CLASS,
    SETTINGS_KEY,
    ServerBusy,
    busy_sentence,
    lock_holders,
    run_key,
    settings_holder,
)
from explorer.lab.run.settings import Journal, JournalUnreadable, ServerSettings
from explorer.lab.scope import SCHEMA, marked_schema_run
from explorer.lab.store.results import ResultStore
from explorer.models import Capabilities
from explorer.server.capabilities import probe
from explorer.server.connect import LIBPQ_ENV, Target
from explorer.server.datadir import AUTO_CONF, ServerError
from explorer.server.embedded import LocalServer

Say = Callable[[str], None]
"""Where a session says what it does: one line of text per call."""


def _quiet(_message: str) -> None:
    """A `Say` that says nothing."""


_UNLOCK = "SELECT pg_advisory_unlock($1, $2)"


def uses_user_server(dsn: str | None) -> bool:
    """Whether the user named a server (`--dsn` or a libpq variable) instead of the bundled one."""
    return bool(dsn or any(os.environ.get(v) for v in LIBPQ_ENV))


async def recover(target: Target, caps: Capabilities, notify: Callable[[str], None]) -> list[str]:
    """Undo what a pgwx that died mid-run left on this server: settings and its schemas.

    Only what dead runs left is touched: the journal is replayed only while no live pgwx
    holds the settings lock, and a run's schema is dropped only when its lock is free.
    """
    restored: list[str] = []
    conn = await target.connect("admin")
    try:
        journal = Journal(caps.system_identifier)
        if journal.load():
            if await conn.fetchval("SELECT pg_try_advisory_lock($1, $2)", LOCK_CLASS, SETTINGS_KEY):
                try:
                    # The one line below says what was put back; the settings' own
                    # "restored …" would say it a second time.
                    settings = ServerSettings(
                        target, journal, lambda m: None if m.startswith("restored ") else notify(m)
                    )
                    contexts = {n: g.context for n, g in caps.gucs.items()}
                    restored = await settings.restore(contexts)
                finally:
                    if not conn.is_closed():
                        await conn.execute(
                            "SELECT pg_advisory_unlock($1, $2)", LOCK_CLASS, SETTINGS_KEY
                        )
                notify("put back settings left by an interrupted pgwx: " + ", ".join(restored))
                if conn.is_closed():
                    # Putting back a restart-only setting (wal_level) restarted the owned
                    # server, which closed this connection and released its lock with it.
                    conn = await target.connect("admin")
            else:
                holder = await settings_holder(conn)
                notify(f"server settings stay as they are: another pgwx ({holder}) is running")
        # A killed pgwx's statements may still run and hold locks in its schema.
        await _end_orphans(conn, notify)
        for name in await dead_schemas(conn):
            blocked = await drop_schema(conn, name)
            notify(blocked or f"dropped schema {name} left by an interrupted pgwx")
        live = await lock_holders(conn)
        for problem in await drop_dead_roles(conn, lambda run: run_key(run) in live):
            notify(problem)
    finally:
        await conn.close()
    return restored


async def _end_orphans(conn: asyncpg.Connection, notify: Callable[[str], None]) -> None:
    """End the statements a killed pgwx left running (they hold locks in its schema)."""
    ended, live = await end_orphans(conn)
    if ended:
        notify("ended backends an interrupted pgwx left running: " + "; ".join(ended))
    elif live:
        notify(
            "another pgwx is connected (backends "
            + ", ".join(map(str, live))
            + "), so its sessions are left alone"
        )


UNSAFE_IF_LOST = ("fsync", "full_page_writes", "synchronous_commit")
"""Settings whose journal entry, if lost, is put back to the server default (the safe side)."""


async def restore_pending(
    target: Target, caps: Capabilities, notify: Callable[[str], None]
) -> list[str]:
    """`pgwx restore`: put back whatever the journal holds for this server, damaged or not.

    From a damaged journal, every entry that can still be read is put back; fsync,
    full_page_writes and synchronous_commit left off in postgresql.auto.conf go back to the
    server default. The damaged file is kept beside the journal as `.corrupt-<time>`.

    Raises:
        ServerBusy: another live pgwx has settings in force (its journal is not ours to undo).
    """
    journal = Journal(caps.system_identifier)
    conn = await target.connect("admin")
    try:
        holder = await settings_holder(conn)
        if holder is not None:
            raise ServerBusy(busy_sentence(holder))
        try:
            journal.load()
        except JournalUnreadable:
            entries = journal.salvage()
            for name in UNSAFE_IF_LOST:
                left = await conn.fetchval(
                    """SELECT setting FROM pg_file_settings
                       WHERE name = $1 AND sourcefile LIKE '%postgresql.auto.conf'
                       ORDER BY seqno DESC LIMIT 1""",
                    name,
                )
                if name not in entries and left in ("off", "false", "0"):
                    entries[name] = {"auto": None}
            aside = journal.set_aside()
            journal.save(entries)
            notify(f"the damaged journal is kept as {aside}")
    finally:
        await conn.close()
    return await recover(target, caps, notify)


async def dead_schemas(conn: asyncpg.Connection) -> list[str]:
    """pgwx schemas whose run is gone (its lock is free).

    A schema is pgwx's only when it carries the marker pgwx wrote as it made it, naming the
    run its name says: a user's `pgwx_lab`, `pgwx_lab_mydata` or `pgwx_lab_<run id>` made by
    hand has none and is never dropped.
    """
    rows = await conn.fetch(
        "SELECT nspname, obj_description(oid, 'pg_namespace') AS comment FROM pg_namespace "
        "WHERE starts_with(nspname, $1)",
        f"{SCHEMA}_",
    )
    live = await lock_holders(conn)
    dead = []
    for row in rows:
        run = marked_schema_run(row["nspname"], row["comment"])
        if run is not None and run_key(run) not in live:
            dead.append(str(row["nspname"]))
    return dead


def resolve_target(
    dsn: str | None, data_dir: Path | None = None, say: Say = _quiet, bindir: Path | None = None
) -> Target:
    """The user's server, or one pgwx owns, started now if it is not running (blocking).

    Args:
        dsn: The user's connection string; None to use the libpq environment or the bundled
            server.
        data_dir: Cluster directory of the owned server (None: pgwx's one for its version).
        say: Told when the owned server is being started.
        bindir: Programs of the installation to own a cluster of (`--pg N`, `--pg-bin`);
            None for the bundled 18 — unless a DSN or the libpq environment names a server.
    """
    if bindir is None and uses_user_server(dsn):
        return Target(dsn=dsn)
    server = LocalServer(data_dir, bindir)
    if not server.is_running():
        say(f"starting {server.kind()} in {server.data_dir} …")
    for missing in server.install.lacks() if server.install else []:
        say(f"PostgreSQL {server.version} has no {missing}; everything else is measured")
    start_repairing(server, say)
    return Target(bundled=server)


def start_repairing(server: LocalServer, say: Say = _quiet) -> None:
    """Start the bundled server; when it cannot start, take out what pgwx set and try again.

    A value pgwx set with ALTER SYSTEM and journaled (say shared_buffers = '7TB') can keep
    the server from starting, and recovery needs a running server; so it is removed from
    postgresql.auto.conf offline, and the server started once more.

    Raises:
        ServerError: it still does not start (or pgwx set nothing there).
    """
    try:
        server.start()
    except ServerError as failed:
        try:
            repaired = repair_journaled(server)
        except ServerError:
            raise failed from None  # e.g. another pgwx holds it: its reason is the one to say
        if not repaired:
            raise
        say(
            f"PostgreSQL in {server.data_dir} could not start with what an interrupted pgwx "
            f"set; removed {', '.join(repaired)} from {server.data_dir / AUTO_CONF} and "
            "started it again"
        )
        server.start()


@dataclass
class Session:
    """One server for the life of a front end: resolved, opened once, released once.

    Args:
        target: The server.
        store: The results store (its interrupted runs are marked when the session opens).
        keep_server: Leave a bundled server this process started running on release.
    """

    target: Target
    store: ResultStore
    keep_server: bool = False
    caps: Capabilities | None = None
    """The server's capabilities, once opened."""
    interrupted: list[str] = field(default_factory=list)
    """Runs a killed pgwx left, marked incomplete when the session opened."""
    restored: list[str] = field(default_factory=list)
    """Server settings a killed pgwx left changed, put back when the session opened."""

    @classmethod
    def resolve(
        cls,
        store: ResultStore,
        *,
        dsn: str | None = None,
        data_dir: Path | None = None,
        keep_server: bool = False,
        say: Say = _quiet,
        bindir: Path | None = None,
    ) -> Session:
        """A session on the user's server or one pgwx owns (blocking: may start it)."""
        return cls(resolve_target(dsn, data_dir, say, bindir), store, keep_server)

    @property
    def bundled_here(self) -> LocalServer | None:
        """The bundled server, when this process started it."""
        server = self.target.bundled
        return server if server is not None and server.started_here else None

    async def open(self, notify: Say = _quiet) -> Capabilities:
        """Connect, probe, mark interrupted runs, put back what a dead pgwx left (once).

        Args:
            notify: Told about each interrupted run and each thing put back.

        Returns:
            The server's capabilities (the same object on every later call).
        """
        if self.caps is not None:
            return self.caps
        conn = await self.target.connect("admin")
        try:
            caps = await probe(conn, owned=self.target.owned)
        finally:
            await conn.close()
        self.interrupted = self.store.mark_interrupted()
        for run_id in self.interrupted:
            notify(f"run {run_id} was interrupted; its finished trials are kept")
        self.restored = await recover(self.target, caps, notify)
        if self.restored:
            # The probe saw the values the interrupted run left: read the server again, so
            # the knob panel's "server (…)" shows what is in force now.
            conn = await self.target.connect("admin")
            try:
                caps = await probe(conn, owned=self.target.owned)
            finally:
                await conn.close()
        self.caps = caps
        return caps

    def release(self, say: Say = _quiet) -> None:
        """Stop the bundled server if this process started it, unless it is to be kept."""
        server = self.target.bundled
        if server is None:
            return
        if self.keep_server:
            say(f"bundled server left running in {server.data_dir} (`pgwx server stop`)")
        elif server.started_here:
            server.stop()
            server.started_here = False
