"""The sampler against real servers: deltas, live signals mid-statement, versions, recovery.

Each test works in its own schema. Loads end with `pg_stat_force_next_flush()` on the
workload connection: a backend that goes idle within a second of its previous flush otherwise
holds its pg_stat_io / pg_stat_wal counters for 10 s.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Callable

import asyncpg

from explorer.lab.measure.sampler import Sample, SamplerNotice
from explorer.models import TrialStats
from explorer.server.connect import Target
from tests.support.sampling import flush, lab, samples, sampling


async def until(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Whether `predicate` became true within `timeout` seconds."""
    for _ in range(int(timeout / 0.05)):
        if predicate():
            return True
        await asyncio.sleep(0.05)
    return predicate()


def client_relation_extends(summary: TrialStats) -> int:
    return sum(
        r["extends"]
        for r in summary.io_rows
        if r["backend_type"] == "client backend" and r["object"] == "relation"
    )


async def test_trial_deltas_on_each_version(any_pg: Target) -> None:
    rows = 50_000
    async with lab(any_pg) as (conn, schema), sampling(any_pg, interval=0.1) as (sampler, events):
        table = f"{schema}.t"
        # Autovacuum off: its visit to the loaded table would write WAL in the idle window.
        await conn.execute(
            f"CREATE TABLE {table} (id int, pad text) WITH (autovacuum_enabled = off)"
        )
        await flush(conn, sampler)
        sampler.begin_trial([table])
        await conn.execute(
            f"INSERT INTO {table} SELECT g, repeat('x', 100) FROM generate_series(1, {rows}) g"
        )
        await flush(conn, sampler)
        loaded = sampler.end_trial()
        # An idle window right after must not see the load again.
        sampler.begin_trial([table])
        await asyncio.sleep(0.3)
        await flush(conn, sampler)
        idle = sampler.end_trial()

    assert loaded.wal_bytes > rows * 100
    assert loaded.wal_records >= rows
    assert loaded.relation_bytes[table] > rows * 100
    assert idle.wal_records < rows / 100
    assert idle.wal_bytes < loaded.wal_bytes / 100
    got = samples(events)
    for s in got:
        Sample.model_validate(s)
    # Rates use the measured interval: each one is exactly the gap since the previous sample.
    for before, s in itertools.pairwise(got):
        assert abs(s["interval"] - (s["t"] - before["t"])) < 1e-6
        assert 0 < s["interval"] < 1.0
    notices = [e.message for e in events if isinstance(e, SamplerNotice)]
    if sampler.caps.major < 16:
        assert loaded.unsupported.count(f"pg_stat_io: not on PG {sampler.caps.major}") == 1
        assert len(loaded.unsupported) == 1
        assert notices == loaded.unsupported
        assert loaded.io == {} and all(s["io"] == [] for s in samples(events))
        assert samples(events)[-1]["wal"]["writes"] is not None
    else:
        assert loaded.unsupported == [] and notices == []
        assert loaded.io_by_backend["client backend"]["extends"] > 0
        assert client_relation_extends(loaded) * 8192 <= loaded.relation_bytes[table]


async def test_one_long_copy_moves_live_signals(any_pg: Target) -> None:
    seconds = 4.0
    chunk = "".join(f"{i}\t{'y' * 200}\n" for i in range(4000)).encode()

    async def source() -> AsyncIterator[bytes]:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            yield chunk

    async with lab(any_pg) as (conn, schema), sampling(any_pg, interval=0.2) as (sampler, events):
        await conn.execute(f"CREATE TABLE {schema}.big (id int, pad text)")
        table = f"{schema}.big"
        sampler.begin_trial([table])
        started = time.monotonic()
        await conn.copy_to_table("big", schema_name=schema, source=source())
        ended = time.monotonic()
        sampler.end_trial()

    assert ended - started >= seconds
    during = [s for s in samples(events) if started + 0.5 < s["t"] < ended - 0.3]
    assert len(during) >= 8, "the sampler did not keep polling during the COPY"
    # Most readings see WAL move, early and late in the one statement (not only at its end).
    # Not every one: a 2-core machine can starve the COPY's client for a reading or two.
    moving = [s["wal_bytes_per_s"] > 0 for s in during]
    assert sum(moving) >= 0.75 * len(moving)
    assert any(moving[: len(moving) // 2]) and any(moving[len(moving) // 2 :])
    sizes = [s["relation_bytes"][table] for s in during]
    assert sizes[-1] > sizes[0] > 0
    copies = [c for s in during for c in s["progress"]["copy"]]
    assert copies and copies[-1]["relation"] == table
    assert copies[-1]["tuples_processed"] > copies[0]["tuples_processed"] > 0
    assert sum(sum(s["waits"].values()) for s in during) > 0


async def test_unlogged_load_writes_almost_no_wal(any_pg: Target) -> None:
    rows = 100_000
    insert = f"INSERT INTO {{}} SELECT g, repeat('z', 100) FROM generate_series(1, {rows}) g"
    async with lab(any_pg) as (conn, schema), sampling(any_pg, interval=0.1) as (sampler, _):
        wal = {}
        # Autovacuum off: its freezing of the logged table would write WAL in the other trial.
        for kind in ("unlogged", "logged"):
            table = f"{schema}.{kind}"
            await conn.execute(
                f"CREATE {'UNLOGGED' if kind == 'unlogged' else ''} TABLE "
                f"{table} (id int, pad text) WITH (autovacuum_enabled = off)"
            )
            await flush(conn, sampler)
            sampler.begin_trial([table])
            await conn.execute(insert.format(table))
            await flush(conn, sampler)
            wal[kind] = sampler.end_trial().wal_bytes

    assert wal["logged"] > rows * 100
    assert wal["unlogged"] < 0.05 * wal["logged"]


async def no_older_snapshots(conn: asyncpg.Connection, within: float = 10.0) -> None:
    """Wait for a moment when no other session holds a snapshot (backend_xmin)."""
    deadline = asyncio.get_running_loop().time() + within
    query = (
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE backend_xmin IS NOT NULL AND pid <> pg_backend_pid()"
    )
    while await conn.fetchval(query):
        assert asyncio.get_running_loop().time() < deadline, "another session kept a snapshot"
        await asyncio.sleep(0.01)


async def test_pregrown_table_needs_no_extends(pg18: Target) -> None:
    rows = 100_000
    async with lab(pg18) as (conn, schema), sampling(pg18, interval=0.1) as (sampler, _):
        pre, fresh = f"{schema}.pre", f"{schema}.fresh"
        for table in (pre, fresh):
            await conn.execute(
                f"CREATE UNLOGGED TABLE {table} (id int, pad text) WITH (autovacuum_enabled = off)"
            )
        fill = f"INSERT INTO {{}} SELECT g, repeat('p', 100) FROM generate_series(1, {rows}) g"
        # Grow, empty, and let the free space map know every page is free again.
        await conn.execute(fill.format(pre))
        await conn.execute(f"DELETE FROM {pre}")
        # A snapshot older than the DELETE (the sampler's poll running as it committed) keeps
        # the deleted rows from VACUUM, and the INSERT then extends: the premise, not the
        # sampler, failed. Any snapshot taken from a moment with none left is newer.
        await no_older_snapshots(conn)
        await conn.execute(f"VACUUM (TRUNCATE false) {pre}")
        grown = await conn.fetchval("SELECT pg_table_size($1::regclass)", pre)
        await flush(conn, sampler)
        summaries = {}
        for table in (pre, fresh):
            sampler.begin_trial([table])
            await conn.execute(fill.format(table))
            await flush(conn, sampler)
            summaries[table] = sampler.end_trial()

    assert grown > rows * 100
    assert client_relation_extends(summaries[pre]) == 0
    assert summaries[pre].relation_bytes[pre] == grown
    assert client_relation_extends(summaries[fresh]) > 1000
    assert summaries[fresh].relation_bytes[fresh] > rows * 100


async def test_waits_count_only_active_workload_backends(pg18: Target) -> None:
    others = [await pg18.connect("other"), await pg18.connect("work-idle")]
    try:
        async with lab(pg18) as (conn, _), sampling(pg18, interval=0.2) as (sampler, _):
            sampler.begin_trial([])
            await asyncio.gather(
                conn.execute("SELECT pg_sleep(1)"), others[0].execute("SELECT pg_sleep(1)")
            )
            summary = sampler.end_trial()
    finally:
        for c in others:
            await c.close()
    # One sleeping workload backend, seen once per wait poll; the other sleeper and the idle
    # workload connection are not counted.
    assert summary.top_wait == "Timeout:PgSleep"
    assert 5 <= summary.waits["Timeout:PgSleep"] <= summary.wait_polls
    assert "Client:ClientRead" not in summary.waits


async def test_locked_relation_does_not_stall_sampling(pg18: Target) -> None:
    async with lab(pg18) as (conn, schema), sampling(pg18, interval=0.1) as (sampler, events):
        table = f"{schema}.locked"
        await conn.execute(f"CREATE TABLE {table} AS SELECT 1 AS id")
        sampler.begin_trial([table])
        assert await sampler.sample_now()
        async with conn.transaction():
            await conn.execute(f"TRUNCATE {table}")
            before = len(samples(events))
            # Wait for samples rather than a fixed second: a loaded CI machine polls slower,
            # but a sampler stalled behind the lock produces none however long we wait.
            await until(lambda: len(samples(events)) - before >= 5, timeout=10.0)
            while_locked = samples(events)[before:]
        assert await sampler.sample_now()
        after = samples(events)[-1]
        sampler.end_trial()
    assert len(while_locked) >= 5, "sampling stalled behind the TRUNCATE's lock"
    assert all(table not in s["relation_bytes"] for s in while_locked)
    assert table in after["relation_bytes"]


async def test_bounded_history_and_recovery_from_a_lost_connection(pg18: Target) -> None:
    def recovered_and_sampling() -> bool:
        messages = [e.message if isinstance(e, SamplerNotice) else "" for e in events]
        done = [i for i, m in enumerate(messages) if m.startswith("sampler reconnected")]
        return bool(done) and bool(samples(events[done[0] + 1 :]))

    async def sampler_backends() -> int:
        return await killer.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgwx-sampler'"
        )

    killer = await pg18.connect("killer")
    try:
        async with sampling(pg18, interval=0.05, wait_interval=0.05, history=5) as (
            sampler,
            events,
        ):
            assert await until(lambda: len(samples(events)) >= 8)
            assert sampler.latest.maxlen == 5 and len(sampler.latest) == 5
            assert list(sampler.latest) == samples(events)[-5:]
            old_pid = sampler.backend_pid
            assert await killer.fetchval("SELECT pg_terminate_backend($1)", old_pid)
            assert await until(recovered_and_sampling), "no samples after a reconnect"
            new_pid = sampler.backend_pid
        # Cancelled: its connection must be gone too (the backend exits just after the close).
        for _ in range(40):
            if await sampler_backends() == 0:
                break
            await asyncio.sleep(0.05)
        assert await sampler_backends() == 0, "the sampler's connection outlived its task"
    finally:
        await killer.close()

    notices = [e.message for e in events if isinstance(e, SamplerNotice)]
    assert len(notices) == 2, notices
    assert notices[0].startswith("sampler lost its connection")
    assert notices[1].startswith("sampler reconnected")
    assert new_pid is not None and new_pid != old_pid
    assert len(sampler.latest) == 5
