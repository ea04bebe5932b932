"""Server settings: ALTER SYSTEM with an undo journal, and the settings a session runs with.

Server-level changes are journaled to disk *before* they are made, keyed by the server's
system identifier, so that a pgwx killed mid-run puts them back at its next start.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg

from explorer.errors import PgwxError
from explorer.paths import journal_path
from explorer.server.capabilities import RESTART_CONTEXTS
from explorer.server.connect import Target

# --------------------------------------------------------------------------- journal

_ENTRY = re.compile(
    r'"(?P<name>[a-z_][a-z0-9_.]*)"\s*:\s*\{\s*"auto"\s*:\s*(?P<auto>null|"(?:[^"\\]|\\.)*")'
)
"""One `"name": {"auto": …}` entry, found even in a damaged journal."""


class SettingsError(PgwxError, RuntimeError):
    """A server setting cannot be changed as a variant asks (a restart pgwx may not make, a
    value the server did not take); str() is one sentence."""


class JournalUnreadable(PgwxError):
    """The undo journal exists but cannot be read: settings may be left changed."""


class Journal:
    """Server-level changes not yet undone, on disk, one file per server."""

    def __init__(self, system_identifier: str, directory: Path | None = None) -> None:
        self.path = journal_path(system_identifier, directory)

    def load(self) -> dict[str, dict[str, Any]]:
        """Setting name → {"auto": previous postgresql.auto.conf value or None,
        "set": the value pgwx set (absent in journals of older pgwx)}.

        Raises:
            JournalUnreadable: the file exists but cannot be read or parsed. It is never
                taken for empty: it is what tells pgwx that fsync may be off on a server.
        """
        try:
            entries = json.loads(self.path.read_text())
            if not isinstance(entries, dict) or not all(
                isinstance(v, dict) and "auto" in v for v in entries.values()
            ):
                raise ValueError("not a journal")
            return dict(entries)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "it is damaged"
            raise JournalUnreadable(
                f"the undo journal {self.path} cannot be read ({why.lower()}), so server "
                "settings pgwx changed may still be changed: run `pgwx restore` (with the "
                "same --dsn) to put them back; the file is kept until then"
            ) from None

    def salvage(self) -> dict[str, dict[str, Any]]:
        """What can still be read from a damaged journal (for `pgwx restore` only)."""
        try:
            return self.load()
        except JournalUnreadable:
            pass
        try:
            text = self.path.read_bytes().decode("utf-8", "replace")
        except OSError:
            return {}
        found: dict[str, dict[str, Any]] = {}
        for m in _ENTRY.finditer(text):
            found[m["name"]] = {"auto": json.loads(m["auto"])}
        return found

    def set_aside(self) -> Path:
        """Keep a damaged journal as `<name>.corrupt-<time>` once its salvage is journaled."""
        aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
        self.path.replace(aside)
        return aside

    def save(self, entries: dict[str, dict[str, Any]]) -> None:
        """Write durably (tmp + fsync + rename); remove the file when empty."""
        if not entries:
            self.path.unlink(missing_ok=True)
            return
        _private_dir(self.path.parent)
        tmp = self.path.with_suffix(".tmp")
        tmp.unlink(missing_ok=True)
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
            json.dump(entries, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(self.path)


def _private_dir(path: Path) -> None:
    """Make the journal's directory, 0700: server names and settings are the user's business.

    pgwx's own state directory is tightened if an older pgwx left it open; a directory named
    by $PGWX_STATE_DIR that exists is the user's, and is left as it is.
    """
    if not path.exists():
        path.mkdir(mode=0o700, parents=True)
        path.chmod(0o700)  # mkdir's mode is filtered by the umask
    elif not os.environ.get("PGWX_STATE_DIR") and path.stat().st_mode & 0o077:
        path.chmod(0o700)


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
                pending[name]["set"] = value
            self.journal.save(pending)
            for name in to_reset:
                await _alter_system(conn, name, pending[name]["auto"])
            for name, value in to_set.items():
                await _alter_system(conn, name, value)
            changed = [*to_reset, *to_set]
            restart = any(contexts.get(n) in RESTART_CONTEXTS for n in changed)
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

    async def restore(self, contexts: dict[str, str]) -> list[str]:
        """Put back everything in the journal; returns the names restored."""
        pending = self.journal.load()
        if not pending:
            return []
        await self.apply({}, contexts)
        return list(pending)

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
        await asyncio.to_thread(server.restart)

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
