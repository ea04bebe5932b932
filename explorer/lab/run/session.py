"""Which server, open it, release it: the one session both front ends (CLI and app) use.

A session is resolved (`--dsn`, else the libpq environment, else the bundled PostgreSQL 18,
started when it is not running), opened once (connect, probe capabilities, mark the runs a
killed pgwx left as interrupted, put back the settings and schema it left on the server) and
released once (the bundled server is stopped if this process started it and it is not to be
kept). Runs on the session reuse its capabilities; nothing is probed or recovered twice.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg

from explorer.errors import PgwxError
from explorer.lab.safety.fence import drop_dead_roles
from explorer.lab.safety.guard import drop_schema, end_orphans
from explorer.lab.safety.journal import UNSAFE_IF_LOST, Journal, JournalUnreadable, shown_name
from explorer.lab.safety.leftovers import repair_journaled
from explorer.lab.safety.owner import (
    LOCK_CLASS,
    SETTINGS_KEY,
    ServerBusy,
    busy_sentence,
    lock_holders,
    run_key,
    settings_holder,
)
from explorer.lab.safety.settings import ServerSettings
from explorer.lab.safety.undo import Undo, auto_conf_of, data_dir_option
from explorer.lab.scope import SCHEMA, marked_schema_run
from explorer.lab.store.results import ResultStore
from explorer.models import Capabilities
from explorer.server.capabilities import probe
from explorer.server.connect import LIBPQ_ENV, ConnectError, Target
from explorer.server.datadir import AUTO_CONF, ServerError
from explorer.server.embedded import LocalServer
from explorer.server.failures import one_sentence

Say = Callable[[str], None]
"""Where a session says what it does: one line of text per call."""


def _quiet(_message: str) -> None:
    """A `Say` that says nothing."""


_UNLOCK = "SELECT pg_advisory_unlock($1, $2)"


def uses_user_server(dsn: str | None) -> bool:
    """Whether the user named a server (`--dsn` or a libpq variable) instead of the bundled one."""
    return bool(dsn or any(os.environ.get(v) for v in LIBPQ_ENV))


async def recover(target: Target, caps: Capabilities, notify: Callable[[str], None]) -> list[str]:
    """Undo what a pgwx that died mid-run left on this server; the settings put back."""
    return (await recovery(target, caps, notify)).put_back


async def recovery(target: Target, caps: Capabilities, notify: Callable[[str], None]) -> Undo:
    """Undo what a pgwx that died mid-run left on this server: settings and its schemas.

    The one recovery of every front end: a session opening (`pgwx run`, the app), `pgwx
    server start|stop` and `pgwx restore`. Only what dead runs left is touched: the journal
    is replayed only while no live pgwx holds the settings lock, and a run's schema is dropped
    only when its lock is free. Putting back a restart-only setting (wal_level) restarts the
    server, which ends every session: each step after it opens its own.

    Returns:
        What the settings' undo did (what is left, if it stopped, and why).
    """
    undo = await _recover_settings(target, caps, notify)
    server = target.bundled
    if server is not None and server.repaired_offline:
        # Taken out of postgresql.auto.conf before the server could start (start_repairing):
        # put back too, and said with the rest, once.
        repaired, server.repaired_offline = server.repaired_offline, []
        undo.put_back = list(
            dict.fromkeys([*(n for n in repaired if n not in undo.left), *undo.put_back])
        )
    if undo.put_back:
        notify("put back settings left by an interrupted pgwx: " + ", ".join(undo.put_back))
    if undo.left:
        notify(
            f"could not put back {undo.left_values()}"
            + (f" ({undo.why})" if undo.why else "")
            + f"; still set in {undo.where or 'postgresql.auto.conf'}"
        )
    try:
        conn = await target.connect("admin")
    except ConnectError:
        if undo.why is None:
            raise
        return undo  # the server went away during the undo: its sentence says what is left
    try:
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
    return undo


async def _recover_settings(
    target: Target, caps: Capabilities, notify: Callable[[str], None]
) -> Undo:
    """Replay the journal under the settings lock; a failure is said, not raised."""
    journal = Journal(caps.system_identifier)
    undo = Undo(where=auto_conf_of(target))
    if not journal.load():
        return undo
    conn = await target.connect("admin")
    try:
        if not await conn.fetchval("SELECT pg_try_advisory_lock($1, $2)", LOCK_CLASS, SETTINGS_KEY):
            holder = await settings_holder(conn)
            # Its settings, in force while it runs: not this pgwx's to undo or report as left.
            notify(f"server settings stay as they are: another pgwx ({holder}) is running")
            return undo
        # The one line below says what was put back; the settings' own
        # "restored …" would say it a second time.
        settings = ServerSettings(
            target, journal, lambda m: None if m.startswith("restored ") else notify(m)
        )
        contexts = {n: g.context for n, g in caps.gucs.items()}
        try:
            undo.put_back = await settings.restore(contexts)
        except (
            asyncpg.PostgresError,
            asyncpg.InterfaceError,
            OSError,
            PgwxError,  # the server could not start again, or could not be reached
        ) as exc:
            undo.why = one_sentence(exc)
        undo.set_aside = dict(settings.set_aside)
        undo.left = journal.load()
        undo.put_back = undo.put_back or [
            n for n in settings.started_with if n not in undo.left and n not in undo.set_aside
        ]
    finally:
        # A restart for wal_level ended this session, and its lock with it.
        with contextlib.suppress(asyncpg.InterfaceError, asyncpg.PostgresError, OSError):
            if not conn.is_closed():
                await conn.execute(_UNLOCK, LOCK_CLASS, SETTINGS_KEY)
        with contextlib.suppress(asyncpg.InterfaceError, asyncpg.PostgresError, OSError):
            await conn.close()
    return undo


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


async def restore_pending(
    target: Target, caps: Capabilities, notify: Callable[[str], None]
) -> Undo:
    """`pgwx restore`: put back whatever the journal holds for this server, damaged or not.

    From a damaged journal, every entry pgwx could have written is put back; an entry naming
    a setting pgwx never changes, or whose value is not text, is set aside (kept in the
    `.corrupt-<time>` file beside the journal, and named), never applied; fsync,
    full_page_writes and synchronous_commit left off in postgresql.auto.conf without a
    readable entry go back to the server default.

    Raises:
        ServerBusy: another live pgwx has settings in force (its journal is not ours to undo).
    """
    journal = Journal(caps.system_identifier)
    set_aside: dict[str, str] = {}
    conn = await target.connect("admin")
    try:
        holder = await settings_holder(conn)
        if holder is not None:
            raise ServerBusy(busy_sentence(holder))
        try:
            journal.load()
        except JournalUnreadable:
            entries, set_aside = journal.sort_out()
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
            set_aside = {shown_name(n): why for n, why in set_aside.items()}
            named = "; ".join(f"{n} ({why})" for n, why in set_aside.items())
            notify(
                f"the damaged journal is kept as {aside}"
                + (f"; set aside, never applied: {named}" if named else "")
            )
    finally:
        await conn.close()
    undo = await recovery(target, caps, notify)
    undo.set_aside = {**set_aside, **undo.set_aside}
    return undo


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
        server.repaired_offline.extend(n.split("=", 1)[0] for n in repaired)
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
    recovered: Undo | None = None
    """What the recovery did when the session opened (what it could not put back, too)."""

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
        self.recovered = await recovery(self.target, caps, notify)
        self.restored = self.recovered.put_back
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
        """Stop the bundled server if this process started it, unless it is to be kept.

        A server left running is never left silently: `say` is told why and how to stop it.
        """
        server = self.target.bundled
        if server is None:
            return
        stop = f"`pgwx server stop{data_dir_option(server)}` stops it"
        left = f"bundled server left running in {server.data_dir}"
        if self.keep_server:
            say(f"{left}, as asked; {stop}")
        elif server.started_here:
            server.started_here = False
            if not server.stop() and server.is_running():
                say(f"{left}: another pgwx is using it; {stop} once that one is done")
        else:
            attached = server.holder is not None
            if server.leave():
                say(
                    f"stopped the bundled server in {server.data_dir}: the pgwx that started "
                    "it has left, and nobody else uses it"
                )
            elif attached:
                say(f"{left}: the pgwx that holds it is still using it, and stops it when done")
            elif server.is_running():
                say(f"{left}: it was already running when this pgwx started; {stop}")
