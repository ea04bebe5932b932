"""`explorer.lab.run.axis`: the coordinator any front end calls to run on several servers.

Called here directly, as the app will call it (the command line's own tests drive it through
`pgwx run --pg 15 --pg 18`): a tiny run on the owned PostgreSQL 15 and the bundled 18 takes
turns, tags each server's events with its label, and leaves both servers as they were.
"""

from __future__ import annotations

import pytest

from explorer.errors import PgwxError
from explorer.lab.run.axis import run_on_servers, server_failed
from explorer.lab.run.request import RunOptions
from explorer.lab.run.runner import Runner
from explorer.lab.run.session import Session
from explorer.lab.store.results import ResultStore
from explorer.models import Event, TrialStarted, Variant
from explorer.server.connect import Target
from tests.support.runs import small_profile
from tests.support.server import server_state

pytestmark = pytest.mark.pg15


async def test_two_servers_take_turns_through_the_coordinator(
    pg15: Target, pg18: Target, store: ResultStore
) -> None:
    before = {t.label(): await server_state(t) for t in (pg15, pg18)}
    profile = small_profile("table-kind", [Variant(name="unlogged")], rows=500, repeats=2)
    sessions = [Session(t, store, keep_server=True) for t in (pg15, pg18)]
    said: list[str] = []
    seen: list[tuple[str, Event]] = []
    runners: list[Runner] = []
    try:
        records = await run_on_servers(
            sessions,
            [(None, 15), (None, 18)],
            profile,
            store,
            RunOptions(repeats=2, warmup=0, settle_seconds=0.0, sample=False),
            said.append,
            lambda label: lambda event: seen.append((label, event)),
            runners,
        )
    finally:
        for session in sessions:
            session.release()
    assert [r.status for r in records] == ["finished", "finished"]
    assert [r.axis.label for r in records if r.axis] == ["15", "18"]
    assert records[0].axis and records[0].axis.runs == [r.id for r in records]
    started = [label for label, e in seen if isinstance(e, TrialStarted)]
    assert started == ["15", "18", "15", "18"]  # the servers alternate, trial by trial
    assert any("servers take turns" in s for s in said)
    assert all(r.undo.complete for r in runners)
    assert {r.id for r in store.group(records[1])} == {r.id for r in records}
    for t in (pg15, pg18):
        after = await server_state(t)
        assert after["pgwx_lab"] is False
        assert after["settings"] == before[t.label()]["settings"]


def test_a_server_that_fails_is_named_masked() -> None:
    text = server_failed("postgresql://me:hunter2@db/x", None, PgwxError("refused"))
    assert "hunter2" not in text and "nothing ran on any server: refused" in text
    assert server_failed(None, 16, PgwxError("not installed")).startswith("--pg 16 cannot")
