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

from explorer.lab.results import ResultStore
from explorer.lab.settings import Journal, ServerSettings
from explorer.lab.sql import SCHEMA
from explorer.models import Capabilities
from explorer.server.capabilities import probe
from explorer.server.connect import LIBPQ_ENV, Target
from explorer.server.embedded import LocalServer

Say = Callable[[str], None]
"""Where a session says what it does: one line of text per call."""


def _quiet(_message: str) -> None:
    """A `Say` that says nothing."""


def uses_user_server(dsn: str | None) -> bool:
    """Whether the user named a server (`--dsn` or a libpq variable) instead of the bundled one."""
    return bool(dsn or any(os.environ.get(v) for v in LIBPQ_ENV))


async def recover(target: Target, caps: Capabilities, notify: Callable[[str], None]) -> list[str]:
    """Undo what a pgwx that died mid-run left on this server: settings and pgwx_lab."""
    restored: list[str] = []
    journal = Journal(caps.system_identifier)
    if journal.load():
        # The one line below says what was put back; the settings' own "restored …" would
        # say it a second time.
        settings = ServerSettings(
            target, journal, lambda m: None if m.startswith("restored ") else notify(m)
        )
        contexts = {n: g.context for n, g in caps.gucs.items()}
        restored = await settings.restore(contexts)
        notify("put back settings left by an interrupted pgwx: " + ", ".join(restored))
    conn = await target.connect("admin")
    try:
        if await conn.fetchval("SELECT to_regnamespace($1) IS NOT NULL", SCHEMA):
            await conn.execute(f"DROP SCHEMA {SCHEMA} CASCADE")
            notify(f"dropped schema {SCHEMA} left by an interrupted pgwx")
    finally:
        await conn.close()
    return restored


def resolve_target(dsn: str | None, data_dir: Path | None = None, say: Say = _quiet) -> Target:
    """The user's server, or the bundled one, started now if it is not running (blocking).

    Args:
        dsn: The user's connection string; None to use the libpq environment or the bundled
            server.
        data_dir: Cluster directory of the bundled server (None: the default one).
        say: Told when the bundled server is being started.
    """
    if uses_user_server(dsn):
        return Target(dsn=dsn)
    server = LocalServer(data_dir)
    if not server.is_running():
        say(f"starting bundled PostgreSQL {server.version} in {server.data_dir} …")
    server.start()
    return Target(bundled=server)


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
    ) -> Session:
        """A session on the user's server or the bundled one (blocking: may start it)."""
        return cls(resolve_target(dsn, data_dir, say), store, keep_server)

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
