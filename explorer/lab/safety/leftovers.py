"""Server settings left behind: by someone else, by a failed undo, in a cluster that cannot start.

pgwx's undo journal is per OS user and per machine, so it cannot know what another account's
pgwx (or a person) left. What it can do is look: before measuring, the risky settings are
compared with their defaults and any off-default value it did not set is named; an undo that
fails names each value still in force and the file it lives in; and its own bundled cluster,
when a value pgwx journaled keeps it from starting, is repaired offline.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg

from explorer.lab.safety.journal import Journal
from explorer.models import RISKY_SETTINGS
from explorer.server import datadir
from explorer.server.connect import Target
from explorer.server.embedded import LocalServer

CHECKED = (*RISKY_SETTINGS, "synchronous_commit")
"""Settings that change what a write costs (and what a crash loses): named when off-default."""


# --------------------------------------------------------------------------- before measuring


async def off_defaults(conn: asyncpg.Connection, not_ours: Callable[[str], bool]) -> list[str]:
    """The CHECKED settings whose value differs from the built-in default, described.

    Args:
        conn: Any session on the server.
        not_ours: Whether a setting was not changed by this pgwx (e.g. not in its journal).

    Returns:
        One phrase per setting, e.g. "fsync=off (default on; set in /…/postgresql.auto.conf)".
    """
    rows = await conn.fetch(
        """SELECT name, setting, boot_val, source, sourcefile
           FROM pg_settings WHERE name = ANY($1::text[]) ORDER BY name""",
        list(CHECKED),
    )
    found = []
    for row in rows:
        if row["setting"] == row["boot_val"] or not not_ours(row["name"]):
            continue
        where = f"set in {row['sourcefile']}" if row["sourcefile"] else f"source: {row['source']}"
        found.append(f"{row['name']}={row['setting']} (default {row['boot_val']}; {where})")
    return found


def foreign_notice(found: list[str]) -> str:
    """One sentence for settings someone else left off their defaults."""
    return (
        "this server runs with "
        + ", ".join(found)
        + ", not set by this pgwx: every variant is measured with it; if nobody meant it, "
        "run ALTER SYSTEM RESET for it and SELECT pg_reload_conf()"
    )


# --------------------------------------------------------------------------- a failed undo


async def auto_conf_path(conn: asyncpg.Connection, target: Target) -> str | None:
    """Where the server keeps ALTER SYSTEM's values, when it can be known."""
    if target.bundled is not None:
        return str(target.bundled.data_dir / datadir.AUTO_CONF)
    try:
        data_dir = await conn.fetchval("SELECT current_setting('data_directory')")
    except asyncpg.PostgresError:  # needs superuser or pg_read_all_settings
        return None
    return str(Path(str(data_dir)) / datadir.AUTO_CONF) if data_dir else None


def still_in_force(pending: dict[str, dict[str, Any]], path: str | None, why: str) -> str:
    """One sentence naming each setting a failed undo left, its value and its file."""
    values = ", ".join(
        f"{name}={entry['set']!r}" if entry.get("set") is not None else name
        for name, entry in pending.items()
    )
    where = path or "postgresql.auto.conf in the server's data directory (SHOW data_directory)"
    return (
        f"could not put back {values}: {why}; still set in {where}, and in force once the "
        "server reloads or restarts; pgwx puts them back when it next opens this server, or "
        "run ALTER SYSTEM RESET for each"
    )


# --------------------------------------------------------------------------- offline repair


def system_identifier(server: LocalServer) -> str | None:
    """The cluster's system identifier, read offline with pg_controldata."""
    try:
        proc = subprocess.run(
            [str(server.tool("pg_controldata")), "-D", str(server.data_dir)],
            capture_output=True,
            text=True,
            timeout=30,
            env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    for line in proc.stdout.splitlines():
        if line.startswith("Database system identifier:"):
            return line.split(":", 1)[1].strip()
    return None


def repair_journaled(server: LocalServer, journal_dir: Path | None = None) -> list[str]:
    """Remove from a stopped bundled cluster's postgresql.auto.conf what pgwx journaled.

    Only settings in this OS user's journal for this cluster are touched. An entry whose
    earlier value was "not set" is then put back exactly and leaves the journal; one that
    had a value stays, so the next session sets it back with ALTER SYSTEM.

    Returns:
        The settings removed, each as name='value' when the journal knows the value.
    """
    sysid = system_identifier(server)
    if sysid is None:
        return []
    journal = Journal(sysid, journal_dir)
    pending = journal.load()
    in_file = set(datadir.auto_conf_settings(server.data_dir))
    names = [n for n in pending if n.lower() in in_file]
    if not names:
        return []
    removed = set(server.repair_auto_conf(names))
    done = [n for n in names if n.lower() in removed]
    journal.save({n: e for n, e in pending.items() if not (n in done and e.get("auto") is None)})
    return [f"{n}={pending[n]['set']!r}" if pending[n].get("set") is not None else n for n in done]
