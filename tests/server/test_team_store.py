"""A team's lab: runs made on two servers, pushed into one PostgreSQL store, read back.

Two real runs of one small profile — one on the bundled PostgreSQL 18, one on PostgreSQL 15 —
are kept in a local SQLite store, pushed with `pgwx push` into a store in a database of the
PG 18 server, and read back from there with `pgwx runs`, `compare`, `history` and the
long-format view a Grafana panel would query.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from explorer import cli
from explorer.lab.store.backends import PG_SCHEMA
from explorer.lab.store.results import ResultStore
from explorer.models import Knobs, RunRecord, TableKind, Variant
from explorer.server.connect import Target
from explorer.server.embedded import LocalServer
from tests.support.runs import RunProfile, small_profile
from tests.support.stored import fresh_database, store_url


@pytest.fixture
def team_url(pg18_server: LocalServer) -> Iterator[str]:
    with fresh_database(pg18_server, "pgwx_team") as database:
        yield store_url(pg18_server, database)


PROFILE = small_profile(
    "table-kind",
    [Variant(name="logged"), Variant(name="unlogged", knobs=Knobs(table_kind=TableKind.UNLOGGED))],
    rows=3000,
    repeats=5,
    name="team-kind",
)


async def test_runs_from_two_servers_pushed_and_read_back(
    pg18: Target,
    pg15: Target,
    run_profile: RunProfile,
    store: ResultStore,
    team_url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `--results` sets PGWX_RESULTS for the process; put it back after this test
    monkeypatch.setenv("PGWX_RESULTS", str(store.path))
    on18, _ = await run_profile(pg18, PROFILE)
    on15, _ = await run_profile(pg15, PROFILE)
    local = str(store.path)
    store.close()

    assert cli.main(["push", on15.id, on18.id, "--from", local, "--to", team_url]) == 0
    out = capsys.readouterr().out
    assert f"copied {on15.id}" in out and f"copied {on18.id}" in out
    # pushing again copies nothing and changes nothing
    assert cli.main(["push", "all", "--from", local, "--to", team_url]) == 0
    assert "already in" in capsys.readouterr().out

    team = ResultStore(team_url)
    try:
        for ours in (on15, on18):
            theirs: RunRecord = team.load(ours.id)
            assert theirs.status == ours.status == "finished"
            assert [t.model_dump() for t in theirs.trials] == [t.model_dump() for t in ours.trials]
            assert len(list(team.events(ours.id))) > 0
        view = team.sql.all(
            f"SELECT variant, phase, metric, value, environment->>'server_version' "
            f"FROM {PG_SCHEMA}.measurements WHERE run_id = ? AND metric = 'seconds'",
            (on15.id,),
        )
    finally:
        team.close()
    measured = [p for t in on15.trials if t.status == "ok" for p in t.phases]
    assert len(view) == len(measured)
    assert {row[4] for row in view} == {on15.server.capabilities.version}

    # every reader takes the team's store from --results
    assert cli.main(["--results", team_url, "compare", on15.id, on18.id, "--format", "json"]) == 0
    cross = json.loads(capsys.readouterr().out)
    assert {r["variant"] for r in cross["rows"]} == {"logged", "unlogged"}
    assert cli.main(["--results", team_url, "history", "team-kind", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["run_id"] for r in rows] == [on18.id, on15.id] or [r["run_id"] for r in rows] == [
        on15.id,
        on18.id,
    ]
    assert {r["variant"] for r in rows} == {"unlogged"}
    assert all(r["server"].startswith("PostgreSQL ") for r in rows)
    assert cli.main(["--results", team_url, "runs"]) == 0
    listed = capsys.readouterr().out
    assert on15.id in listed and on18.id in listed


def test_history_flags_a_ratio_that_left_the_last_interval(tmp_path: Path) -> None:
    from explorer.analysis import history
    from tests.support.stored import record, trial

    runs = []
    for n, slow in enumerate((2.0, 2.0, 1.0)):  # unlogged: 2× the baseline, then the same
        rec = record(f"2026010{n + 1}-000000-aaaaa{n}", minutes_ago=60 - n)
        rec.profile.variants[1:] = [rec.profile.variants[1]]
        for rep in range(1, 8):
            rec.trials.append(trial(rec.id, "logged", rep, secs=1.0 + rep / 1000))
            rec.trials.append(trial(rec.id, rec.profile.variants[1].name, rep, slow + rep / 1000))
        runs.append(rec)
    rows = history.history(runs)
    assert [bool(r.change) for r in rows] == [False, False, True]
    assert "moved from 2.00× to 1.00×" in rows[2].change
    text = history.to_markdown("quick-demo", rows)
    assert text.count("⚑") == 2  # the flagged row and the legend
