"""The sampler's units and the pg_stat_io byte columns, checked against what a server really did.

The 16–17 shape of pg_stat_io (op_bytes) cannot be read from a live server here (there is no
PG 16 or 17), so the counters query built for it runs on PG 18 against session-local views of
that shape, with a distinct number in every column: a swapped column cannot go unnoticed.
"""

from __future__ import annotations

import asyncio
import json
import time

import asyncpg

from explorer.lab.measure.stats import Reading, counters_query
from explorer.models import Capabilities, TrialStats
from explorer.server.connect import Target
from tests.support.sampling import flush, lab, samples, sampling

MB = 1024 * 1024


async def lsn(conn: asyncpg.Connection) -> int:
    return int(await conn.fetchval("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn"))


async def test_wal_rate_is_bytes_per_second(pg18: Target) -> None:
    async with lab(pg18) as (conn, _schema), sampling(pg18, interval=0.1) as (sampler, events):
        assert await sampler.sample_now()
        first = len(samples(events))
        start, t0 = await lsn(conn), time.monotonic()
        for _ in range(8):  # 8 MB of WAL in about a second, in steady steps
            await conn.execute("SELECT pg_logical_emit_message(false, 'pgwx', repeat('x', $1))", MB)
            await asyncio.sleep(0.12)
        written, seconds = await lsn(conn) - start, time.monotonic() - t0
        assert await sampler.sample_now()
        window = samples(events)[first:]
    covered = sum(s["interval"] for s in window)
    counted = sum(s["wal_bytes_per_s"] * s["interval"] for s in window)
    # bytes/s × s gives back the bytes; kB/s, bits/s or bytes per poll would not
    assert written * 0.95 <= counted <= written * 1.5 + MB, (written, counted)
    mean_rate = counted / covered
    assert written / seconds / 3 <= mean_rate <= written / seconds * 1.5, (mean_rate, written)
    assert max(s["wal_bytes_per_s"] for s in window) >= MB / 0.5  # 1 MB within one poll


def client_relation(summary: TrialStats, key: str) -> int:
    return int(
        sum(
            r[key]
            for r in summary.io_rows
            if r["backend_type"] == "client backend" and r["object"] == "relation"
        )
    )


async def test_a_load_that_only_extends_shows_extend_bytes_on_18(pg18: Target) -> None:
    async with lab(pg18) as (conn, schema), sampling(pg18, interval=0.1) as (sampler, _):
        await conn.execute(f"CREATE TABLE {schema}.t (i int, pad text)")
        await flush(conn, sampler)
        sampler.begin_trial([f"{schema}.t"])
        await conn.execute(
            f"INSERT INTO {schema}.t SELECT g, repeat('x', 200) FROM generate_series(1, 20000) g"
        )
        await flush(conn, sampler)
        await asyncio.sleep(0.3)
        await flush(conn, sampler)
        summary = sampler.end_trial()
        size = int(await conn.fetchval(f"SELECT pg_relation_size('{schema}.t')"))
    extended = client_relation(summary, "extend_bytes")
    written = client_relation(summary, "write_bytes")
    assert size > 400 * 8192
    # a fresh table in ample shared buffers grows by extension; nothing is written out yet
    assert extended >= size * 0.9, (extended, size)
    assert written < extended / 10, (written, extended)


# --------------------------------------------------------------------------- both SQL shapes

IO_COLUMNS = (
    "reads writes writebacks extends hits evictions reuses fsyncs "
    "read_time write_time writeback_time extend_time fsync_time"
).split()
FAKE_COUNTS = dict(zip(IO_COLUMNS, range(1, len(IO_COLUMNS) + 1), strict=True))
"""reads=1, writes=2, ..., extends=4: every column its own value."""


def caps(version_num: int, shape: str) -> Capabilities:
    return Capabilities(
        version_num=version_num,
        version=f"{version_num // 10000}.0",
        lz4=False,
        pg_stat_io=shape,  # type: ignore[arg-type]
        pg_stat_checkpointer=True,
        superuser=True,
        pg_monitor=True,
        alter_system=True,
        owned=True,
        system_identifier="1",
    )


async def io_bytes_through_query(target: Target, capabilities: Capabilities, view: str) -> dict:
    """Run the counters query for `capabilities` with pg_stat_io (and, before 18, pg_stat_wal)
    replaced by one fake row; return the IoDelta the parser makes of it."""
    conn = await target.connect("test")
    try:
        # pg_temp comes before pg_catalog when it is not in search_path: these shadow the views.
        await conn.execute(f"CREATE TEMP VIEW pg_stat_io AS {view}")
        if capabilities.version_num < 180000:
            await conn.execute(
                "CREATE TEMP VIEW pg_stat_wal AS SELECT 1::bigint AS wal_records, "
                "2::bigint AS wal_fpi, 3::numeric AS wal_bytes, 4::bigint AS wal_buffers_full, "
                "5::bigint AS wal_write, 6::bigint AS wal_sync, 7::float8 AS wal_write_time, "
                "8::float8 AS wal_sync_time"
            )
        row = await conn.fetchrow(counters_query(capabilities).sql, "pgwx-work", [])
    finally:
        await conn.close()
    assert row is not None
    decoded = {k: json.loads(v) if isinstance(v, str) else v for k, v in dict(row).items()}
    empty = {**decoded, "io": []}
    (delta,) = Reading(decoded).since(Reading(empty))["io"]
    return delta.model_dump()


def fake_row(extra: str) -> str:
    counts = ", ".join(f"{v}::bigint AS {k}" for k, v in FAKE_COUNTS.items())
    return f"SELECT 'client backend'::text AS backend_type, 'relation'::text AS object, 'normal'::text AS context, {counts}, {extra}"  # noqa: E501


async def test_pg16_17_shape_multiplies_each_count_by_op_bytes(pg18: Target) -> None:
    delta = await io_bytes_through_query(
        pg18, caps(170000, "op_bytes"), fake_row("8192::bigint AS op_bytes")
    )
    assert delta["extends"] == FAKE_COUNTS["extends"] and delta["writes"] == FAKE_COUNTS["writes"]
    assert delta["read_bytes"] == FAKE_COUNTS["reads"] * 8192
    assert delta["write_bytes"] == FAKE_COUNTS["writes"] * 8192
    assert delta["extend_bytes"] == FAKE_COUNTS["extends"] * 8192


async def test_pg18_shape_reads_each_bytes_column_into_its_own_field(pg18: Target) -> None:
    delta = await io_bytes_through_query(
        pg18,
        caps(180000, "split_bytes"),
        fake_row(
            "100::numeric AS read_bytes, 200::numeric AS write_bytes, 300::numeric AS extend_bytes"
        ),
    )
    assert (delta["read_bytes"], delta["write_bytes"], delta["extend_bytes"]) == (100, 200, 300)
    assert delta["extends"] == FAKE_COUNTS["extends"] and delta["writes"] == FAKE_COUNTS["writes"]


async def test_per_phase_extended_pages_query_on_both_shapes(pg18: Target) -> None:
    from explorer.lab.run.runner import counters_sql

    shapes = {
        (170000, "op_bytes"): fake_row("8192::bigint AS op_bytes"),
        (180000, "split_bytes"): fake_row(
            "100::numeric AS read_bytes, 200::numeric AS write_bytes, "
            f"{7 * 8192}::numeric AS extend_bytes"
        ),
    }
    expected = {170000: FAKE_COUNTS["extends"], 180000: 7}
    for (num, shape), view in shapes.items():
        conn = await pg18.connect("test")
        try:
            await conn.execute(f"CREATE TEMP VIEW pg_stat_io AS {view}")
            row = await conn.fetchrow(counters_sql(caps(num, shape)))
        finally:
            await conn.close()
        assert row is not None and row["extended_pages"] == expected[num], (num, dict(row or {}))
