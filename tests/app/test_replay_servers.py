"""A replay of one server's share of a run on several servers opens, plays, and names them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from explorer.lab.store.replay import ReplaySource
from explorer.lab.store.results import ResultStore
from explorer.models import RunRecord, RunStarted, ServerAxis, TrialEnded
from explorer.tui.app import PgwxApp
from explorer.tui.widgets.header import ServerHeader
from explorer.tui.widgets.results_table import ResultsTable
from tests.support.app import settle
from tests.support.paths import DURABILITY

RUNS = ["20261126-120000-aaaaa0", "20261126-120001-aaaaa1"]


def share_of_two_servers() -> ReplaySource:
    """The durability recording, as PG 18's share of a run on 15 and 18."""
    tape = ReplaySource.from_file(DURABILITY, speed=0)
    started = next(e for e in tape.events if isinstance(e, RunStarted))
    record = RunRecord(
        id=RUNS[1],
        profile=tape.profile,
        scale=tape.scale,
        server=started.server,
        started_at=dt.datetime(2026, 11, 26, 12, tzinfo=dt.UTC),
        status="finished",
        trials=[e.result for e in tape.events if isinstance(e, TrialEnded)],
        axis=ServerAxis(group=RUNS[0], label="18", position=1, runs=RUNS, labels=["15", "18"]),
    )
    return ReplaySource(tape.events, tape.profile, tape.scale, 0, record.started_at, record)


async def test_the_replay_of_a_two_server_run_names_the_servers(tmp_path: Path) -> None:
    app = PgwxApp(replay=share_of_two_servers(), store=ResultStore(tmp_path / "r.sqlite"))
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        header = app.lab.query_one(ServerHeader)
        assert header.label.endswith("on PostgreSQL 18.6 (bundled) · 18 of servers 15, 18")
        assert app.lab.query_one(ResultsTable).row_count > 0  # the table played to its end
