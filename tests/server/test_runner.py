"""The runner end to end on real servers: order, events, store, undo on every ending."""

from __future__ import annotations

import asyncio

import pytest

from explorer.lab.profiles.catalog import load_profile
from explorer.lab.run.runner import interleave
from explorer.lab.store.results import ResultStore
from explorer.models import (
    FkTiming,
    Knobs,
    PhaseEnded,
    Profile,
    RunEnded,
    TableKind,
    Toast,
    TrialEnded,
    TrialStarted,
    Variant,
)
from explorer.server.connect import Target
from tests.support.runs import RunProfile, small_profile
from tests.support.server import leave_what_a_killed_pgwx_leaves, server_state


def tiny(variants: list[Variant], repeats: int = 1, rows: int = 2000) -> Profile:
    return small_profile("table-kind", variants, rows=rows, repeats=repeats)


def test_interleave_balances_the_order() -> None:
    a, b, c = (Variant(name=n) for n in "abc")
    order = [(v.name, r) for v, r in interleave([a, b, c], 2)]
    assert order == [("a", 1), ("b", 1), ("c", 1), ("c", 2), ("b", 2), ("a", 2)]


async def test_quick_demo_runs_interleaved_and_is_stored(
    pg18: Target, run_profile: RunProfile, store: ResultStore
) -> None:
    profile = load_profile("quick-demo")
    record, events = await run_profile(pg18, profile, scale=0.01, repeats=2)
    assert record.status == "finished"
    started = [(e.variant, e.repeat) for e in events if isinstance(e, TrialStarted)]
    assert started == [
        ("logged", 1),
        ("unlogged", 1),
        ("temporary", 1),
        ("temporary", 2),
        ("unlogged", 2),
        ("logged", 2),
    ]
    assert [t.status for t in record.trials] == ["ok"] * 6
    phases = [e.result.name for e in events if isinstance(e, PhaseEnded)][:6]
    assert phases == ["insert", "vacuum-analyze", "select", "update", "vacuum-analyze-2", "delete"]
    insert = record.trials[0].phases[0]
    assert insert.rows == 3_000 and insert.seconds > 0
    # the stored copy is what a later `pgwx report` reads
    again = store.load("latest")
    assert again.id == record.id and len(again.trials) == 6
    assert isinstance(events[-1], RunEnded) and events[-1].status == "finished"
    kinds = [e.kind for e in store.events(record.id)]
    assert kinds[0] == "run-started" and kinds[-1] == "run-ended"


async def test_temp_table_select_never_parallel(any_pg: Target, run_profile: RunProfile) -> None:
    # Parallelism made free for the role, so the logged table does get workers at this size:
    # only then does "0/0" for the temporary one say something about temporary tables.
    free = ("parallel_setup_cost", "parallel_tuple_cost", "min_parallel_table_scan_size")
    conn = await any_pg.connect("test")
    try:
        for name in free:
            await conn.execute(f"ALTER ROLE CURRENT_USER SET {name} = 0")
        profile = tiny(
            [
                Variant(name="logged"),
                Variant(name="temp", knobs=Knobs(table_kind=TableKind.TEMPORARY)),
            ]
        )
        record, _ = await run_profile(any_pg, profile)
    finally:
        for name in free:
            await conn.execute(f"ALTER ROLE CURRENT_USER RESET {name}")
        await conn.close()
    select = {
        t.variant: next(p for p in t.phases if p.name == "select").detail for t in record.trials
    }
    assert select["logged"]["plan"] == "Parallel Seq Scan"
    launched, planned = (int(n) for n in select["logged"]["workers"].split("/"))
    assert planned > 0 and launched <= planned
    assert select["temp"]["plan"] == "Seq Scan" and select["temp"]["workers"] == "0/0"


async def test_server_knobs_applied_in_trial_and_undone(
    any_pg: Target, run_profile: RunProfile
) -> None:
    knobs = Knobs(
        synchronous_commit="off",
        fsync=False,
        full_page_writes=False,
        temp_buffers="16MB",
        track_io_timing=True,
    )
    profile = tiny([Variant(name="base"), Variant(name="risky", knobs=knobs)])
    record, _ = await run_profile(any_pg, profile)
    base, risky = record.trials
    assert base.settings["fsync"] == "on" and base.settings["synchronous_commit"] == "on"
    assert risky.settings["fsync"] == "off"
    assert risky.settings["full_page_writes"] == "off"
    assert risky.settings["synchronous_commit"] == "off"
    assert risky.settings["temp_buffers"] == "16MB"
    assert risky.settings["track_io_timing"] == "on"
    # run_profile asserts the server's settings and auto.conf are back as they were


async def test_wal_level_minimal_restarts_bundled_server_and_back(
    pg18: Target, run_profile: RunProfile
) -> None:
    profile = tiny(
        [
            Variant(name="minimal", knobs=Knobs(wal_level="minimal")),
            Variant(name="small-buffers", knobs=Knobs(shared_buffers="32MB")),
        ]
    )
    record, events = await run_profile(pg18, profile)
    assert [t.status for t in record.trials] == ["ok", "ok"]
    assert record.trials[0].settings["wal_level"] == "minimal"
    assert record.trials[0].settings["max_wal_senders"] == "0"
    # the second variant wants neither: minimal is undone before it runs
    assert record.trials[1].settings["wal_level"] == "replica"
    assert record.trials[1].settings["shared_buffers"] == "32MB"
    assert any("restart" in getattr(e, "message", "") for e in events)


async def test_unavailable_knobs_are_skipped_with_reason(
    pg18: Target, run_profile: RunProfile
) -> None:
    external = Target(dsn=None, overrides=pg18.connect_kwargs())  # same server, not owned
    profile = tiny(
        [
            Variant(name="base"),
            Variant(name="minimal", knobs=Knobs(wal_level="minimal")),
            Variant(name="nofsync", knobs=Knobs(fsync=False)),
        ]
    )
    record, _ = await run_profile(external, profile)
    by = {t.variant: t for t in record.trials}
    assert by["base"].status == "ok"
    assert by["minimal"].status == "skipped" and "restart" in (by["minimal"].reason or "")
    assert by["nofsync"].status == "skipped" and "--allow-risky" in (by["nofsync"].reason or "")
    assert record.status == "finished"


async def test_lz4_unavailable_on_bundled_18(pg18: Target, run_profile: RunProfile) -> None:
    variants = [Variant(name="base"), Variant(name="lz4", knobs=Knobs(toast=Toast.LZ4))]
    profile = small_profile("toast", variants, rows=200)
    record, _ = await run_profile(pg18, profile)
    lz4 = next(t for t in record.trials if t.variant == "lz4")
    assert lz4.status == "skipped"
    assert "lz4 is not built into this server" in (lz4.reason or "")


async def test_a_knob_the_workload_does_not_follow_is_skipped(
    pg18: Target, run_profile: RunProfile
) -> None:
    """table-kind has no toastable column: an lz4 variant would run the same load under
    another name (issue 39), so it is skipped with that reason, whatever the server has."""
    profile = tiny([Variant(name="base"), Variant(name="lz4", knobs=Knobs(toast=Toast.LZ4))])
    record, _ = await run_profile(pg18, profile)
    lz4 = next(t for t in record.trials if t.variant == "lz4")
    assert lz4.status == "skipped"
    assert "no toastable column, so the toast knob changes nothing" in (lz4.reason or "")


async def test_cancel_mid_run_restores_settings(pg18: Target, store: ResultStore) -> None:
    from explorer.lab.run.runner import Runner, RunOptions

    before = await server_state(pg18)
    profile = tiny(
        [Variant(name="nofsync", knobs=Knobs(fsync=False, synchronous_commit="off"))],
        repeats=3,
        rows=3_000_000,
    )
    events: list = []
    runner = Runner(pg18, profile, store, RunOptions(settle_seconds=0, sample=False, warmup=0))
    task = asyncio.create_task(runner.run(events.append))
    for _ in range(600):
        await asyncio.sleep(0.05)
        if any(getattr(e, "kind", "") == "phase-started" for e in events):
            break
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    after = await server_state(pg18)
    assert after == before
    trials = [e.result for e in events if isinstance(e, TrialEnded)]
    assert trials and trials[-1].status == "cancelled"
    assert store.load(runner.run_id).status == "cancelled"
    conn = await pg18.connect("test")
    try:
        busy = await conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'pgwx-work%'"
        )
    finally:
        await conn.close()
    assert busy == 0


async def test_journal_left_by_dead_pgwx_is_undone_once_when_the_session_opens(
    pg18: Target, run_profile: RunProfile, store: ResultStore
) -> None:

    before = await server_state(pg18)
    dead = await leave_what_a_killed_pgwx_leaves(pg18, run_id="20240101-000000-dead02")
    from explorer.lab.run.session import Session

    said: list[str] = []
    session = Session(pg18, store, keep_server=True)
    await session.open(said.append)
    assert session.restored == ["synchronous_commit"]
    told = len(said)
    again = await session.open(said.append)  # once per session: nothing is done twice
    assert again is session.caps and len(said) == told
    messages = " ".join(said)
    assert "synchronous_commit" in messages and dead in messages
    assert await server_state(pg18) == before
    record, _ = await run_profile(pg18, tiny([Variant(name="base")]), caps=session.caps)
    assert record.trials[0].settings["synchronous_commit"] == "on"


def test_fk_enum_spelling() -> None:
    assert FkTiming("after-load") is FkTiming.AFTER_LOAD


async def test_per_phase_wal_shows_unlogged_skips_wal(
    pg18: Target, run_profile: RunProfile
) -> None:
    profile = tiny(
        [
            Variant(name="logged"),
            Variant(name="unlogged", knobs=Knobs(table_kind=TableKind.UNLOGGED)),
        ],
        rows=50_000,
    )
    record, _ = await run_profile(pg18, profile)
    wal = {
        t.variant: next(p for p in t.phases if p.name == "insert").detail["wal_bytes"]
        for t in record.trials
    }
    assert wal["logged"] > 50_000 * 20  # at least a few bytes per row went to WAL
    assert wal["unlogged"] < wal["logged"] / 20


async def test_sampler_summary_lands_in_trials_and_report(
    pg18: Target, run_profile: RunProfile
) -> None:
    from explorer.analysis.report import render, summarize

    profile = tiny(
        [
            Variant(name="logged"),
            Variant(name="unlogged", knobs=Knobs(table_kind=TableKind.UNLOGGED)),
        ],
        rows=300_000,
    )
    record, events = await run_profile(pg18, profile, sampler=True)
    stats = {t.variant: t.stats for t in record.trials}
    assert stats["logged"] is not None and stats["unlogged"] is not None
    assert stats["logged"].wal_bytes > 300_000 * 20
    assert stats["unlogged"].wal_bytes < stats["logged"].wal_bytes / 5
    assert stats["logged"].io["extends"] > 0  # PG 18 counts relation extension
    assert any(e.kind == "sample" for e in events)
    totals = {r.variant: r for r in summarize(record) if r.phase == "total"}
    logged = next(t for t in record.trials if t.variant == "logged")
    # the total's WAL is the phases' own (the sampler window also spans untimed steps)
    logged_total = totals["logged"].mechanism
    assert logged_total is not None
    assert logged_total.values["wal_bytes"] == sum(p.detail["wal_bytes"] for p in logged.phases)
    insert = next(p for p in logged.phases if p.name == "insert")
    assert insert.detail["extended_pages"] > 300_000 * 4 // 8192  # a fresh table grows
    unlogged_total = totals["unlogged"].mechanism
    assert unlogged_total is not None and (unlogged_total.values["extended"] or 0) > 0
    assert "ext pages" in render(record, "md")


async def test_planned_restart_is_not_a_sampler_warning(
    pg18: Target, run_profile: RunProfile
) -> None:
    profile = tiny(
        [Variant(name="base"), Variant(name="minimal", knobs=Knobs(wal_level="minimal"))]
    )
    _, events = await run_profile(pg18, profile, sampler=True)
    sampler_notes = [
        e for e in events if getattr(e, "kind", "") == "notice" and "sampler" in e.message
    ]
    assert sampler_notes, "a restart must cost the sampler its connection"
    assert all(e.level == "info" for e in sampler_notes), sampler_notes
