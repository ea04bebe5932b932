"""What a server can do: version, lz4, pg_stat_io's shape, privileges, setting contexts."""

from __future__ import annotations

from typing import Literal

import asyncpg

from explorer.models import SERVER_KNOBS, Capabilities
from explorer.server.gucs import WRITE_PATH, all_names, read_gucs

RESTART_CONTEXTS = {"postmaster"}
"""pg_settings.context values whose change needs a server restart."""
RELOAD_CONTEXTS = {"sighup", "superuser", "user", "superuser-backend", "backend"}
"""pg_settings.context values that a configuration reload (or a new session) picks up."""

WATCHED_GUCS = (
    *SERVER_KNOBS,
    "max_wal_senders",
    "checkpoint_timeout",
    "max_wal_size",
    "statement_timeout",
)
"""Settings pgwx reads (and, for the knobs, may change)."""


async def probe(conn: asyncpg.Connection, *, owned: bool) -> Capabilities:
    """Ask the server what it is and what this user may do there."""
    version_num = int(await conn.fetchval("SHOW server_version_num"))
    version = str(await conn.fetchval("SHOW server_version")).split(" ")[0]
    lz4 = await _has_lz4(conn, version_num)
    io_shape: Literal["none", "op_bytes", "split_bytes"] = "none"
    if version_num >= 160000:
        io_shape = "split_bytes" if version_num >= 180000 else "op_bytes"
    row = await conn.fetchrow(
        """SELECT rolsuper,
                  rolsuper OR pg_has_role(current_user, 'pg_monitor', 'USAGE') AS monitor
           FROM pg_roles WHERE rolname = current_user"""
    )
    superuser = bool(row["rolsuper"])
    alter_system = superuser
    if not superuser and version_num >= 150000:
        # The undo reads postgresql.auto.conf's earlier value from pg_file_settings, which
        # even pg_read_all_settings may not read: without it every trial would fail there.
        alter_system = bool(
            await conn.fetchval(
                "SELECT has_parameter_privilege('fsync', 'ALTER SYSTEM') "
                "AND has_table_privilege('pg_file_settings', 'SELECT') "
                "AND has_function_privilege('pg_show_all_file_settings()', 'EXECUTE')"
            )
        )
    try:
        sysid = str(await conn.fetchval("SELECT system_identifier FROM pg_control_system()"))
    except asyncpg.PostgresError:
        sysid = "unknown"
    gucs = await read_gucs(conn, list(dict.fromkeys([*WATCHED_GUCS, *WRITE_PATH])))
    # io_uring is among io_method's values only in a build --with-liburing.
    methods = await conn.fetchval("SELECT enumvals FROM pg_settings WHERE name = 'io_method'")
    return Capabilities(
        version_num=version_num,
        version=version,
        lz4=lz4,
        pg_stat_io=io_shape,
        pg_stat_checkpointer=version_num >= 170000,
        superuser=superuser,
        pg_monitor=bool(row["monitor"]),
        alter_system=alter_system,
        owned=owned,
        system_identifier=sysid,
        gucs=gucs,
        io_methods=list(methods or []),
        setting_names=await all_names(conn),
    )


async def _has_lz4(conn: asyncpg.Connection, version_num: int) -> bool:
    """Whether the server was built --with-lz4 (the GUC accepts lz4 only then)."""
    if version_num < 140000:
        return False
    vals = await conn.fetchval(
        "SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'"
    )
    return bool(vals) and "lz4" in vals
