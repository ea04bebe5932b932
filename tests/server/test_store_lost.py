"""Issue 34, point 5: a team store lost mid-run is retried; lost for good, the run is kept.

`pgwx run` writes to a PostgreSQL store in a database of the PG 18 server while measuring
the same server. Once a trial is stored, the store's backend is ended with
pg_terminate_backend:

- once: pgwx connects again (and writes the transaction again), the run finishes, every
  trial is in the team's store;
- for good (the database takes no more connections): the trial in hand and the ones before
  are kept in the local store named in the last line, the run ends with a failed run's exit
  status (1, not 2) and the last line says the server settings were put back (they are).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from explorer.lab.store.results import ResultStore, StoreLost
from explorer.server.embedded import LocalServer
from tests.support.cli import private_env
from tests.support.stored import fresh_database, store_url

PROFILE = """title = "slow enough"
workload = "sql"
repeats = 3
warmup = 0
settle_seconds = 0

[params]
[[params.tables]]
name = "t"
columns = "a int"

[[params.phases]]
name = "wait"
sql = "SELECT pg_sleep(0.4)"

[[variants]]
name = "a"

[[variants]]
name = "b"
[variants.knobs.settings]
checkpoint_completion_target = "0.8"
"""


@pytest.fixture
def team(pg18_server: LocalServer) -> Iterator[str]:
    with fresh_database(pg18_server, "pgwx_lost") as database:
        yield database


def sql(server: LocalServer, statement: str, database: str = "postgres") -> object:
    async def go() -> object:
        conn = await asyncpg.connect(**server.connect_kwargs(database))  # type: ignore[arg-type]
        try:
            return await conn.fetchval(statement)
        finally:
            await conn.close()

    return asyncio.run(go())


def start_run(server: LocalServer, tmp_path: Path, database: str) -> subprocess.Popen[str]:
    (tmp_path / "tmp").mkdir(exist_ok=True)
    profile = tmp_path / "slow.toml"
    profile.write_text(PROFILE)
    kw = server.connect_kwargs()
    dsn = f"postgresql://{kw['user']}@/postgres?host={kw['host']}&port={kw['port']}"
    env = {
        **private_env(tmp_path),
        "TMPDIR": str(tmp_path / "tmp"),
        "PGWX_RESULTS": store_url(server, database),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "explorer.cli", "run", str(profile), "--dsn", dsn, "--no-sample"],
        env=env, cwd=tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def wait_for_a_stored_trial(server: LocalServer, database: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if sql(server, "SELECT count(*) FROM pgwx_results.trials", database):
                return
        except asyncpg.UndefinedTableError:
            pass
        time.sleep(0.1)
    raise AssertionError("no trial was stored within 60 s")


def end_store_sessions(server: LocalServer, database: str) -> None:
    sql(
        server,
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        f"WHERE datname = '{database}' AND pid <> pg_backend_pid()",
    )


def test_a_store_lost_once_is_reached_again(
    pg18_server: LocalServer, team: str, tmp_path: Path
) -> None:
    proc = start_run(pg18_server, tmp_path, team)
    wait_for_a_stored_trial(pg18_server, team)
    end_store_sessions(pg18_server, team)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode in (0, 4), err
    assert "saved as run" in err.strip().splitlines()[-1], err
    store = ResultStore(store_url(pg18_server, team))
    try:
        (run,) = store.list_runs()
        assert run.status == "finished"
        assert len(store.load(run.id).trials) == 6
    finally:
        store.close()


def test_a_store_lost_for_good_keeps_the_run_locally_and_puts_settings_back(
    pg18_server: LocalServer, team: str, tmp_path: Path
) -> None:
    before = sql(pg18_server, "SHOW checkpoint_completion_target")
    proc = start_run(pg18_server, tmp_path, team)
    try:
        wait_for_a_stored_trial(pg18_server, team)
        sql(pg18_server, f"ALTER DATABASE {team} ALLOW_CONNECTIONS false")
        end_store_sessions(pg18_server, team)
        _out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        sql(pg18_server, f"ALTER DATABASE {team} ALLOW_CONNECTIONS true")
    assert "Traceback" not in err, err
    assert proc.returncode == 1, err
    last = err.strip().splitlines()[-1]
    local = tmp_path / "data" / "pgwx" / "results.sqlite"
    assert last.startswith("pgwx: The results store postgresql://"), last
    assert "was lost (" in last and "could not be reached again in 3 tries" in last, last
    assert f"are kept in the local store {local}" in last, last
    assert "server settings put back (checkpoint_completion_target)" in last, last
    assert sql(pg18_server, "SHOW checkpoint_completion_target") == before
    kept = ResultStore(local)
    try:
        (run,) = kept.list_runs()
        record = kept.load(run.id)
        assert record.status == "failed" and "kept in the local store" in (record.reason or "")
        assert len(record.trials) >= 2  # the one the team store has, and the one in hand
        assert all(t.status == "ok" for t in record.trials)
    finally:
        kept.close()


def test_a_store_given_up_says_so_at_once(pg18_server: LocalServer, team: str) -> None:
    """After a run gave the store up, the app's later reads of it (its runs list, the servers'
    comparison) end in one sentence at once, never waiting on a stopped connection."""
    store = ResultStore(store_url(pg18_server, team))
    store.abandon()
    began = time.monotonic()
    with pytest.raises(StoreLost, match="was lost during this session"):
        store.list_runs()
    assert time.monotonic() - began < 1
    store.close()  # writes nothing, raises nothing
