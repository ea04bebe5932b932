"""What the "faults end in the truth" cases share (issue 20): pgwx to its end, its last line,
a trial held mid-run across a restart, and the journal a killed pgwx leaves."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import asyncpg

from explorer.lab.safety.journal import Journal
from explorer.server.connect import Target
from explorer.server.embedded import LocalServer
from tests.support.faults import FaultServer, finish, profile_toml, start_pgwx, wait_until


def force_stop(data_dir: Path) -> None:
    """Stop a test's cluster however it was left (immediate shutdown), and remove it."""
    server = LocalServer(data_dir)
    if server.is_running():
        server._run([str(server.tool("pg_ctl")), "-D", str(data_dir), "-m", "i", "stop"])
    shutil.rmtree(data_dir, ignore_errors=True)


async def pgwx(tmp_path: Path, *args: str, timeout: float = 180.0) -> tuple[int, str, str]:
    """`pgwx ARGS` to its end: exit status, stdout, stderr."""
    child = await start_pgwx(tmp_path, *args)
    out, err = await finish(child, timeout)
    assert child.returncode is not None
    return child.returncode, out, err


def last_line(text: str) -> str:
    """The last non-empty line (pgwx's final sentence)."""
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def sleeping_profile(variants: dict[str, str], seconds: int = 60) -> str:
    """A profile whose trials end in a `pg_sleep` phase: mid-trial, surviving a restart (the
    advisory-lock gate of tests/support/faults.py goes with a restart's sessions)."""
    text = profile_toml({}, gate=False, rows=100)
    text += f'[[params.phases]]\nname = "nap"\nsql = "SELECT pg_sleep({seconds})"\n'
    for name, knobs in variants.items():
        text += f'[[variants]]\nname = "{name}"\nknobs = {{ {knobs} }}\n'
    return text


async def napping(fs: FaultServer, timeout: float = 120.0) -> None:
    """Wait until a pgwx session sleeps in the nap phase (the server may be restarting)."""

    async def asleep() -> bool:
        # the server may restart under this look (a wal_level variant): that is a "not yet"
        try:
            conn = await fs.admin()
            try:
                return bool(
                    await conn.fetchval(
                        "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE "
                        "'pgwx%' AND query LIKE 'SELECT pg_sleep(%'"
                    )
                )
            finally:
                conn.terminate()
        except (
            OSError,
            asyncpg.PostgresError,
            asyncpg.InterfaceError,
            asyncpg.InternalClientError,  # "cannot switch to state …": the restart cut it
        ):
            return False

    await wait_until(asleep, "a trial to nap", timeout)


async def system_identifier(target: Target) -> str:
    conn = await target.connect("test")
    try:
        return str(await conn.fetchval("SELECT system_identifier FROM pg_control_system()"))
    finally:
        await conn.close()


async def leave_journal(
    fs: FaultServer, tmp_path: Path, entries: dict[str, Any] | str, alter: dict[str, str]
) -> Journal:
    """What a pgwx killed mid-run leaves: `alter` set with ALTER SYSTEM, and its journal
    (`entries`, or raw text for a damaged one) in the child's state directory."""
    conn = await fs.admin()
    try:
        for name, value in alter.items():
            sql = await conn.fetchval(
                "SELECT format('ALTER SYSTEM SET %I = %L', $1::text, $2::text)", name, value
            )
            await conn.execute(sql)
        await conn.execute("SELECT pg_reload_conf()")
    finally:
        await conn.close()
    journal = Journal(await system_identifier(Target(bundled=fs.server)), tmp_path / "state")
    journal.path.parent.mkdir(parents=True, exist_ok=True)
    text = entries if isinstance(entries, str) else json.dumps(entries)
    journal.path.write_text(text)
    return journal


async def settled(fs: FaultServer, names: list[str]) -> dict[str, str]:
    """The named settings as a fresh session sees them (a reload lands asynchronously)."""
    await asyncio.sleep(0.3)
    conn = await fs.admin()
    try:
        rows = await conn.fetch(
            "SELECT name, setting FROM pg_settings WHERE name = ANY($1::text[])", names
        )
    finally:
        await conn.close()
    return {r["name"]: r["setting"] for r in rows}
