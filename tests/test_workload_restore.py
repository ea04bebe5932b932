"""The restore workload on real servers: a real pg_dump / pg_restore, load and COMMIT apart."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from explorer.lab.profiles import load_profile
from explorer.lab.results import ResultStore
from explorer.lab.workloads.restore import (
    CHILD,
    PARENT,
    RESTORE_APP,
    CommitWatcher,
    RestoreWorkload,
    create_child_sql,
    fk_state,
    split_restore,
)
from explorer.models import (
    FkTiming,
    Knobs,
    PhaseEnded,
    PhaseStarted,
    Profile,
    TableKind,
    TrialEnded,
    TrialResult,
    Variant,
)
from explorer.server.connect import Target
from tests.conftest import RunProfile, server_state, small_profile

FK_VARIANTS = [Variant(name=fk.value, knobs=Knobs(fk=fk)) for fk in FkTiming]


def restore_profile(variants: list[Variant], rows: int, repeats: int = 1) -> Profile:
    return small_profile("restore", variants, rows=rows, repeats=repeats, name="t-restore")


def phases(trial: TrialResult) -> dict[str, object]:
    return {p.name: p for p in trial.phases}


def test_split_restore_scales_server_split_to_client_total() -> None:
    t0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    commit = t0 + dt.timedelta(seconds=3)
    t1 = t0 + dt.timedelta(seconds=4)
    load, com = split_restore(t0, commit, t1, client_seconds=8.0)
    assert load == pytest.approx(6.0) and com == pytest.approx(2.0)
    assert split_restore(t0, None, t1, client_seconds=8.0) == (8.0, 0.0)


def test_profile_loads_with_every_fk_timing() -> None:
    profile = load_profile("fk-timing-restore")
    assert profile.baseline_name() == "none"
    assert [v.knobs.fk for v in profile.variants] == list(FkTiming)


async def test_every_fk_variant_restores_and_has_its_phases(
    pg18: Target, run_profile: RunProfile
) -> None:
    rows = 20_000
    record, events = await run_profile(pg18, restore_profile(FK_VARIANTS, rows))
    assert record.status == "finished"
    by = {t.variant: t for t in record.trials}
    assert all(t.status == "ok" for t in by.values()), [t.reason for t in by.values()]
    expected_phases = {
        "none": ["load", "commit"],
        "immediate": ["load", "commit"],
        "deferred": ["load", "commit"],
        "after-load": ["load", "commit", "add-fk"],
        "not-valid": ["load", "commit", "add-fk", "validate-fk"],
    }
    for name, trial in by.items():
        assert [p.name for p in trial.phases] == expected_phases[name]
        load = trial.phases[0]
        assert load.seconds > 0 and load.rows == rows
        assert trial.phases[1].seconds >= 0
        # the FK was in the asked form while pg_restore loaded (read from pg_constraint)
        assert load.detail["fk"] == {"after-load": "none", "not-valid": "none"}.get(name, name)
        assert load.detail["wal_bytes"] > 0
    after = phases(by["after-load"])
    assert after["add-fk"].detail["fk"] == "immediate"  # type: ignore[attr-defined]
    not_valid = phases(by["not-valid"])
    assert not_valid["add-fk"].detail["fk"] == "not valid"  # type: ignore[attr-defined]
    assert not_valid["validate-fk"].detail["fk"] == "immediate"  # type: ignore[attr-defined]
    # load and commit are announced live (commit only when the watcher saw it)
    started = [(e.variant, e.phase) for e in events if isinstance(e, PhaseStarted)]
    assert ("deferred", "load") in started and ("not-valid", "validate-fk") in started
    ended = [e.result.name for e in events if isinstance(e, PhaseEnded)]
    assert ended.count("load") == len(FK_VARIANTS)


async def test_deferred_fk_moves_the_check_to_commit(pg18: Target, run_profile: RunProfile) -> None:
    variants = [Variant(name=n, knobs=Knobs(fk=FkTiming(n))) for n in ("immediate", "deferred")]
    record, _ = await run_profile(pg18, restore_profile(variants, 150_000))
    share = {}
    for trial in record.trials:
        assert trial.status == "ok", trial.reason
        p = phases(trial)
        total = p["load"].seconds + p["commit"].seconds  # type: ignore[attr-defined]
        share[trial.variant] = p["commit"].seconds / total  # type: ignore[attr-defined]
    assert share["deferred"] > 0.3, share
    assert share["immediate"] < 0.1, share


async def test_temporary_child_is_skipped(pg18: Target, run_profile: RunProfile) -> None:
    profile = restore_profile(
        [Variant(name="none"), Variant(name="temp", knobs=Knobs(table_kind=TableKind.TEMPORARY))],
        2_000,
    )
    record, _ = await run_profile(pg18, profile)
    by = {t.variant: t for t in record.trials}
    assert by["none"].status == "ok"
    assert by["temp"].status == "skipped" and "TEMPORARY" in (by["temp"].reason or "")


@pytest.mark.pg15
async def test_restore_on_pg15(pg15: Target, run_profile: RunProfile) -> None:
    variants = [Variant(name=n, knobs=Knobs(fk=FkTiming(n))) for n in ("deferred", "not-valid")]
    record, _ = await run_profile(pg15, restore_profile(variants, 10_000))
    assert record.server.capabilities.major == 15
    assert [t.status for t in record.trials] == ["ok", "ok"], [t.reason for t in record.trials]
    nv = phases(record.trials[1])
    assert nv["load"].rows == 10_000  # type: ignore[attr-defined]
    assert nv["validate-fk"].detail["fk"] == "immediate"  # type: ignore[attr-defined]


async def test_ddl_builder_makes_the_asked_fk(pg18: Target) -> None:
    conn = await pg18.connect("test")
    try:
        await conn.execute("CREATE SCHEMA pgwx_lab")
        await conn.execute(f"CREATE TABLE {PARENT} (id serial PRIMARY KEY, val text)")
        seen = {}
        for fk in FkTiming:
            await conn.execute(f"DROP TABLE IF EXISTS {CHILD}")
            await conn.execute(create_child_sql(fk))
            seen[fk] = await fk_state(conn)
            deferrable = await conn.fetchval(
                "SELECT condeferrable FROM pg_constraint "
                "WHERE conrelid = $1::regclass AND contype = 'f'",
                CHILD,
            )
            if fk is FkTiming.DEFERRED:
                assert deferrable is True
    finally:
        await conn.execute("DROP SCHEMA IF EXISTS pgwx_lab CASCADE")
        await conn.close()
    assert seen == {
        FkTiming.NONE: "none",
        FkTiming.IMMEDIATE: "immediate",
        FkTiming.DEFERRED: "deferred",
        FkTiming.AFTER_LOAD: "none",
        FkTiming.NOT_VALID: "none",
    }


@pytest.mark.parametrize("copy_progress", [True, False], ids=["pg14+", "pg13"])
async def test_watcher_sees_a_slow_commit(pg18: Target, copy_progress: bool) -> None:
    """A deferred trigger that sleeps makes COMMIT long enough to be seen for certain."""
    admin = await pg18.connect("test")
    watched = await pg18.connect("work-restore")
    watch = await pg18.connect("watch-test")
    try:
        await admin.execute("CREATE SCHEMA pgwx_lab")
        await admin.execute("""
            CREATE TABLE pgwx_lab.t (x int);
            CREATE FUNCTION pgwx_lab.slow() RETURNS trigger LANGUAGE plpgsql AS
              $$ BEGIN PERFORM pg_sleep(0.3); RETURN NULL; END $$;
            CREATE CONSTRAINT TRIGGER slow AFTER INSERT ON pgwx_lab.t
              DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION pgwx_lab.slow();
        """)
        watcher = CommitWatcher(watch, RESTORE_APP, expected_rows=1, copy_progress=copy_progress)
        stop = asyncio.Event()
        task = asyncio.create_task(watcher.run(stop))
        async with watched.transaction():
            await watched.execute("INSERT INTO pgwx_lab.t VALUES (1)")
            before_commit = await watched.fetchval("SELECT clock_timestamp()")
        stop.set()
        await task
    finally:
        await admin.execute("DROP SCHEMA IF EXISTS pgwx_lab CASCADE")
        for c in (admin, watched, watch):
            await c.close()
    assert watcher.seen and watcher.commit_start is not None
    assert watcher.commit_start >= before_commit
    assert watcher.polls > 10


async def test_cancel_during_pg_restore_leaves_nothing(pg18: Target, store: ResultStore) -> None:
    from explorer.lab.runner import Runner, RunOptions

    before = await server_state(pg18)
    profile = restore_profile(
        [Variant(name="deferred", knobs=Knobs(fk=FkTiming.DEFERRED))], 300_000
    )
    events: list = []
    runner = Runner(pg18, profile, store, RunOptions(settle_seconds=0, sample=False, warmup=0))
    task = asyncio.create_task(runner.run(events.append))
    for _ in range(600):
        await asyncio.sleep(0.05)
        if any(isinstance(e, PhaseStarted) and e.phase == "load" for e in events):
            break
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await server_state(pg18) == before
    trials = [e.result for e in events if isinstance(e, TrialEnded)]
    assert trials and trials[-1].status == "cancelled"
    conn = await pg18.connect("test")
    try:
        for _ in range(40):  # a terminated or closed backend takes a moment to go
            left = await conn.fetch(
                "SELECT application_name FROM pg_stat_activity "
                "WHERE application_name LIKE 'pgwx-%' "
                "AND pid <> pg_backend_pid()"
            )
            if not left:
                break
            await asyncio.sleep(0.05)
    finally:
        await conn.close()
    assert [r["application_name"] for r in left] == []


def test_workload_declares_other_sessions() -> None:
    assert RestoreWorkload.uses_other_sessions is True
