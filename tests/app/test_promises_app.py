"""The app, on connecting, puts back what a pgwx that died mid-run left on the server."""

from __future__ import annotations

from explorer.lab.store.results import ResultStore
from explorer.server.connect import Target
from explorer.tui.app import PgwxApp
from tests.support.app import connected, log_text
from tests.support.server import journal_text, leave_what_a_killed_pgwx_leaves, server_state


async def test_app_replays_a_dead_pgwxs_journal_when_it_connects(
    pg18: Target, store: ResultStore
) -> None:
    before = await server_state(pg18)
    # and the marked schema of the run it was in
    await leave_what_a_killed_pgwx_leaves(pg18, run_id="20240101-000000-dead03")
    async with PgwxApp(target=pg18, store=store).run_test(size=(120, 36)) as pilot:
        lab = await connected(pilot)
        # no run started: connecting alone must have put everything back
        assert await server_state(pg18) == before
        assert "synchronous_commit" not in journal_text()
        assert "synchronous_commit" in log_text(lab)
