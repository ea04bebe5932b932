"""Issue 34, point 4: a refusal exits 2 and leaves no stored run, from the command itself.

A refusal that comes after pgwx opened the server (a profile with its own SQL on a user
without CREATEROLE; a run that would change settings while the settings lock is held) is
a refusal like a bad option: `pgwx run` exits 2 with one sentence, stores no run and keeps no
undo journal. It once ended rc 1 and was stored as a failed run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from explorer.lab.safety.owner import LOCK_CLASS, SETTINGS_KEY
from explorer.lab.store.results import ResultStore
from explorer.server.connect import Target
from tests.support.server import admin_sql

OWN_SQL = """title = "own sql"
workload = "sql"
repeats = 1
warmup = 0
settle_seconds = 0

[params]
[[params.tables]]
name = "t"
columns = "a int"

[[params.phases]]
name = "load"
sql = "INSERT INTO {t} VALUES (1)"

[[variants]]
name = "a"

[[variants]]
name = "b"
[variants.knobs.settings]
checkpoint_completion_target = "0.8"
"""


@pytest.fixture
def plain(pg18: Target) -> Iterator[str]:
    """A DSN of the test server as a user without CREATEROLE."""
    import asyncio

    asyncio.run(
        admin_sql(pg18, "DROP ROLE IF EXISTS pgwx_t_norole", "CREATE ROLE pgwx_t_norole LOGIN")
    )
    assert pg18.bundled is not None
    yield f"postgresql://pgwx_t_norole@/postgres?host={pg18.bundled.socket_dir}&port=5432"
    asyncio.run(admin_sql(pg18, "DROP OWNED BY pgwx_t_norole CASCADE", "DROP ROLE pgwx_t_norole"))


def refused(proc: Any, tmp_path: Path, *words: str) -> None:
    """Exit 2, the last line one sentence with `words`, no run stored, no undo journal."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("pgwx: ") and all(w in last for w in words), last
    results = tmp_path / "results.sqlite"
    if results.exists():
        store = ResultStore(results)
        try:
            assert store.list_entries() == []
        finally:
            store.close()
    state = tmp_path / "state"
    assert not (list(state.glob("undo-*")) if state.exists() else [])


def profile_file(tmp_path: Path) -> Path:
    path = tmp_path / "own.toml"
    path.write_text(OWN_SQL)
    return path


def test_no_createrole_exits_2_and_stores_nothing(
    plain: str, cli: Callable[..., Any], tmp_path: Path
) -> None:
    proc = cli("run", str(profile_file(tmp_path)), "--dsn", plain, "--no-sample")
    refused(proc, tmp_path, "no CREATEROLE", "--trust-sql")


async def test_a_held_settings_lock_exits_2_and_stores_nothing(
    pg18: Target, cli: Callable[..., Any], tmp_path: Path
) -> None:
    assert pg18.bundled is not None
    kw = pg18.bundled.connect_kwargs()
    dsn = f"postgresql://{kw['user']}@/postgres?host={kw['host']}&port={kw['port']}"
    holder = await pg18.connect("admin")  # a pgwx putting a dead one's settings back
    try:
        await holder.execute("SELECT pg_advisory_lock($1, $2)", LOCK_CLASS, SETTINGS_KEY)
        proc = cli("run", str(profile_file(tmp_path)), "--dsn", dsn, "--no-sample")
    finally:
        await holder.close()
    refused(proc, tmp_path, "another pgwx")
