"""What a server must look like after a run, and what a killed pgwx leaves on one.

`server_state` is compared before and after a run (settings, postgresql.auto.conf, no pgwx
schema); `leave_what_a_killed_pgwx_leaves` is the one set-up for "a pgwx died right after
ALTER SYSTEM", which the session, the runner and the app must each put back.
"""

from __future__ import annotations

from pathlib import Path

import asyncpg

from explorer.lab.safety.settings import Journal
from explorer.lab.scope import create_marked_schema
from explorer.paths import state_dir
from explorer.server.capabilities import probe
from explorer.server.connect import Target
from explorer.server.embedded import LocalServer

PG15_BIN = Path("/usr/lib/postgresql/15/bin")
"""Debian's postgresql-15 binaries (the `pg15` fixture and the fault cases' own PG 15)."""


async def settings_and_auto_conf(
    conn: asyncpg.Connection,
) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """Every setting in force, and the (name, value) lines of postgresql.auto.conf."""
    settings = {
        r["name"]: r["setting"]
        for r in await conn.fetch("SELECT name, setting FROM pg_settings ORDER BY name")
    }
    auto = [
        (r["name"], r["setting"])
        for r in await conn.fetch(
            "SELECT name, setting FROM pg_file_settings "
            "WHERE sourcefile LIKE '%auto.conf' ORDER BY seqno"
        )
    ]
    return settings, auto


async def durability_settings(server: LocalServer) -> dict[str, str]:
    """fsync and synchronous_commit as the bundled server has them now."""
    conn = await Target(bundled=server).connect("test")
    try:
        rows = await conn.fetch(
            "SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit')"
        )
        return {r["name"]: r["setting"] for r in rows}
    finally:
        await conn.close()


async def server_state(target: Target) -> dict[str, object]:
    """What must be the same after any run: settings, auto.conf, pgwx_lab's absence."""
    conn = await target.connect("test")
    try:
        settings, auto = await settings_and_auto_conf(conn)
        # bare pgwx_lab, or a run's own pgwx_lab_<run id>
        schema = await conn.fetchval(
            "SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname LIKE 'pgwx\\_lab%')"
        )
    finally:
        await conn.close()
    return {"settings": settings, "auto_conf": auto, "pgwx_lab": schema}


async def drop_pgwx_schemas(conn: asyncpg.Connection) -> None:
    """Drop every pgwx schema (`pgwx_lab`, and each run's `pgwx_lab_<run id>`): test cleanup."""
    for row in await conn.fetch(
        r"SELECT nspname FROM pg_namespace WHERE nspname LIKE 'pgwx\_lab%'"
    ):
        await conn.execute(f'DROP SCHEMA "{row[0]}" CASCADE')


def journal_text() -> str:
    """Everything pgwx has journaled right now (all files of its state directory)."""
    root = state_dir()
    if not root.is_dir():
        return ""
    return "".join(p.read_text() for p in sorted(root.iterdir()) if p.is_file())


async def admin_sql(target: Target, *statements: str) -> None:
    """Run `statements` on `target` as the test's superuser, one after the other."""
    conn = await target.connect("test")
    try:
        for sql in statements:
            await conn.execute(sql)
    finally:
        await conn.close()


async def leave_what_a_killed_pgwx_leaves(target: Target, *, run_id: str | None = None) -> str:
    """Leave on `target` what a pgwx killed right after ALTER SYSTEM leaves behind.

    Its undo journal (in pgwx's state directory, which the `store` fixture makes private to
    the test) names synchronous_commit as unset before; synchronous_commit=off is in
    postgresql.auto.conf and in force; with `run_id`, that run's marked schema is left too,
    and its name returned ("" without one).
    """
    conn = await target.connect("test")
    try:
        caps = await probe(conn, owned=True)
        Journal(caps.system_identifier).save({"synchronous_commit": {"auto": None}})
        await conn.execute("ALTER SYSTEM SET synchronous_commit = off")
        await conn.execute("SELECT pg_reload_conf()")
        return await create_marked_schema(conn, run_id) if run_id else ""
    finally:
        await conn.close()
