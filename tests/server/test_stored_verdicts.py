"""Verdicts kept in the store, on both backends (a SQLite file and a team's PostgreSQL).

A run's end, an import and a push write one row per variant × phase — what the judge says,
with the run, the server and its version — into `verdicts`; the view `verdict_series` has one
row per run × variant × phase × server; rows judged under older rules are written again by the
next push; and opening a store to read it creates nothing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from explorer.analysis.judge import judge
from explorer.lab.store import verdicts
from explorer.lab.store.backends import PG_SCHEMA, PostgresBackend
from explorer.lab.store.push import push
from explorer.lab.store.results import ResultStore
from explorer.models import PhaseResult, TrialResult
from explorer.server.embedded import LocalServer
from tests.support.stored import fresh_database, record, store_url


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where a fresh store lives: a file, or a new database on PG 18."""
    if request.param == "sqlite":
        yield str(tmp_path / "r.sqlite")
        return
    server: LocalServer = request.getfixturevalue("pg18_server")
    with fresh_database(server) as database:
        yield store_url(server, database)


def _trial(run_id: str, variant: str, repeat: int, secs: float) -> TrialResult:
    return TrialResult(
        run_id=run_id,
        variant=variant,
        repeat=repeat,
        status="ok",
        started_at=dt.datetime.now(dt.UTC),
        phases=[
            PhaseResult(name="load", seconds=secs, rows=10),
            PhaseResult(name="tiny", seconds=secs / 100, rows=1),
        ],
    )


def _finished_run(store: ResultStore, run_id: str, minutes_ago: float, unlogged: float) -> None:
    """A quick-demo run with ten trials a side: logged 1 s, unlogged `unlogged` s."""
    store.begin_run(record(run_id, minutes_ago))
    for rep in range(1, 11):
        store.add_trial(run_id, _trial(run_id, "logged", rep, 1.0 + rep / 1000))
        store.add_trial(run_id, _trial(run_id, "unlogged", rep, unlogged + rep / 1000))
    store.end_run(run_id, "finished")


def _view(store: ResultStore) -> list[tuple[object, ...]]:
    view = (
        f"{PG_SCHEMA}.verdict_series"
        if isinstance(store.sql, PostgresBackend)
        else "verdict_series"
    )
    return store.sql.all(
        "SELECT run_id, variant, phase, server_version, measure, "
        f"coalesce(ratio, difference_seconds), ci_low, ci_high, word FROM {view} "
        "ORDER BY run_started_at, variant, phase"
    )


def test_a_run_s_end_writes_what_the_judge_says(location: str) -> None:
    store = ResultStore(location)
    try:
        assert not verdicts.exists(store.sql)  # opening wrote nothing
        _finished_run(store, "r1", 60, 0.5)
        stored = verdicts.read(store.sql, "r1")
        judged = judge(store.load("r1"))
        assert [(r["variant"], r["phase"]) for r in stored] == sorted(judged.verdicts)
        by_cell = {(r["variant"], r["phase"]): r for r in stored}
        for key, v in judged.verdicts.items():
            row = by_cell[key]
            assert row["word"] == v.word and row["verdict"] == v.label()
            assert (row["p_value"], row["p_adjusted"], row["look"]) == (
                v.p_value, v.p_adjusted, v.look,
            )  # fmt: skip
            assert (row["n_baseline"], row["n_candidate"]) == (v.n_baseline, v.n_candidate)
            assert row["threshold"] == v.threshold and row["rules"] == verdicts.RULES
            assert row["server_version"] == "18.6" and row["profile"] == "quick-demo"
            assert row["status"] == "finished" and row["baseline"] == "logged"
        load = by_cell[("unlogged", "load")]
        assert load["measure"] == "ratio" and load["word"] == "faster"
        assert load["ci_low"] < load["value"] < load["ci_high"] < 1
        tiny = by_cell[("unlogged", "tiny")]  # 5–10 ms: what the judge says, kept as said
        v = judged.verdicts[("unlogged", "tiny")]
        if v.ratio is not None:
            assert (tiny["measure"], tiny["value"]) == ("ratio", v.ratio)
        else:
            assert (tiny["measure"], tiny["value"]) == ("difference_seconds", v.difference_seconds)
        rows = _view(store)
        assert [(r[0], r[1], r[2]) for r in rows] == [
            ("r1", "unlogged", p) for p in ("load", "tiny", "total")
        ]
    finally:
        store.close()


def test_import_and_push_write_verdicts_and_rejudge_old_rules(
    location: str, tmp_path: Path
) -> None:
    local = ResultStore(tmp_path / "local.sqlite")
    team = ResultStore(location)
    try:
        _finished_run(local, "a", 60, 0.5)
        _finished_run(local, "b", 30, 0.8)
        done = push(local, team, ["all"])
        assert done.copied == ["a", "b"]
        assert {r[0] for r in _view(team)} == {"a", "b"}
        # one row per run × variant × phase × server
        keys = [(r[0], r[1], r[2], r[3]) for r in _view(team)]
        assert len(keys) == len(set(keys)) == 6
        # rows judged by an older pgwx's rules are judged again on the next push
        table = f"{PG_SCHEMA}.verdicts" if isinstance(team.sql, PostgresBackend) else "verdicts"
        team.sql.begin()
        team.sql.run(f"UPDATE {table} SET rules = 0, word = 'stale' WHERE run_id = ?", ("a",))
        team.sql.commit()
        assert verdicts.stale(team.sql, ["a", "b"]) == ["a"]
        again = push(local, team, ["all"])
        assert again.already == ["a", "b"] and again.rejudged == ["a"]
        assert "stale" not in {r["word"] for r in verdicts.read(team.sql, "a")}
        assert verdicts.stale(team.sql, ["a", "b"]) == []
    finally:
        local.close()
        team.close()
