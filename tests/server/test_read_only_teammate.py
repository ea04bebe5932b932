"""A teammate with read-only rights on the team store reads runs, history, reports and the
views — the verdicts written by the team's pgwx, never a table created by reading."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections.abc import Iterator

import asyncpg
import pytest

from explorer import cli
from explorer.lab.store.backends import PG_SCHEMA
from explorer.lab.store.results import ResultStore
from explorer.models import PhaseResult, TrialResult
from explorer.server.embedded import LocalServer
from tests.support.stored import fresh_database, record, store_url


@pytest.fixture
def team(pg18_server: LocalServer) -> Iterator[tuple[LocalServer, str]]:
    with fresh_database(pg18_server, "pgwx_ro") as database:
        yield pg18_server, database


async def _grant_reader(server: LocalServer, database: str) -> None:
    conn = await asyncpg.connect(**server.connect_kwargs(database))  # type: ignore[arg-type]
    try:
        await conn.execute(
            "DO $$ BEGIN CREATE ROLE pgwx_reader LOGIN; "
            "EXCEPTION WHEN duplicate_object THEN NULL; END $$"
        )
        await conn.execute(f"GRANT USAGE ON SCHEMA {PG_SCHEMA} TO pgwx_reader")
        await conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {PG_SCHEMA} TO pgwx_reader")
    finally:
        await conn.close()


def test_a_reader_reads_everything_and_writes_nothing(
    team: tuple[LocalServer, str], capsys: pytest.CaptureFixture[str]
) -> None:
    server, database = team
    writer = ResultStore(store_url(server, database))
    run_id = "20260101-000000-abcdef"
    try:
        writer.begin_run(record(run_id))
        for rep in range(1, 11):
            for variant, secs in (("logged", 1.0), ("unlogged", 0.5)):
                writer.add_trial(
                    run_id,
                    TrialResult(
                        run_id=run_id,
                        variant=variant,
                        repeat=rep,
                        status="ok",
                        started_at=dt.datetime.now(dt.UTC),
                        phases=[PhaseResult(name="load", seconds=secs + rep / 1000, rows=1)],
                    ),
                )
        writer.end_run(run_id, "finished")
    finally:
        writer.close()
    asyncio.run(_grant_reader(server, database))
    kw = server.connect_kwargs(database)
    reader = f"postgresql://pgwx_reader@/{database}?host={kw['host']}&port={kw['port']}"

    assert cli.main(["--results", reader, "runs"]) == 0
    assert run_id in capsys.readouterr().out
    assert cli.main(["--results", reader, "history", "quick-demo", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["run_id"] for r in rows] == [run_id]
    assert cli.main(["--results", reader, "report", run_id, "--format", "bmf"]) == 0
    assert "quick-demo/unlogged/load" in json.loads(capsys.readouterr().out)
    store = ResultStore(reader)
    try:
        words = store.sql.all(
            f"SELECT word FROM {PG_SCHEMA}.verdict_series WHERE run_id = ?", (run_id,)
        )
    finally:
        store.close()
    assert words == [("faster",)]
