"""The app, on connecting, puts back what a pgwx that died mid-run left on the server."""

from __future__ import annotations

from explorer.lab.run.settings import Journal
from explorer.lab.store.results import ResultStore
from explorer.server.capabilities import probe
from explorer.server.connect import Target
from explorer.tui.app import PgwxApp
from tests.conftest import server_state
from tests.test_promises import journal_text
from tests.test_tui import connected, log_text


async def test_app_replays_a_dead_pgwxs_journal_when_it_connects(
    pg18: Target, store: ResultStore
) -> None:
    before = await server_state(pg18)
    conn = await pg18.connect("test")
    try:
        caps = await probe(conn, owned=True)
        # what a pgwx killed right after ALTER SYSTEM leaves behind
        Journal(caps.system_identifier).save({"synchronous_commit": {"auto": None}})
        await conn.execute("ALTER SYSTEM SET synchronous_commit = off")
        await conn.execute("SELECT pg_reload_conf()")
        await conn.execute("CREATE SCHEMA pgwx_lab")
    finally:
        await conn.close()
    async with PgwxApp(target=pg18, store=store).run_test(size=(120, 36)) as pilot:
        lab = await connected(pilot)
        # no run started: connecting alone must have put everything back
        assert await server_state(pg18) == before
        assert "synchronous_commit" not in journal_text()
        assert "synchronous_commit" in log_text(lab)
