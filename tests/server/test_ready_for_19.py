"""Ready for PostgreSQL 19 (issue 37, point 5), on the servers there are.

PostgreSQL 19 makes lz4 the default TOAST compression. A PostgreSQL 17 whose server default is
lz4 stands in for it here: the workload's sessions must run with default_toast_compression
pinned to the variant's TOAST knob, and every trial must record it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from explorer.lab.measure.stats import Reading, counters_query
from explorer.models import FkTiming, Knobs, Toast, Variant
from explorer.server.capabilities import probe
from explorer.server.connect import Target
from tests.support.runs import RunProfile, small_profile


async def alter(target: Target, sql: str) -> None:
    conn = await target.connect("test")
    try:
        await conn.execute(sql)
        await conn.execute("SELECT pg_reload_conf()")
    finally:
        await conn.close()


@pytest.fixture
def lz4_default(pg17: Target) -> Iterator[Target]:
    """PostgreSQL 17 with lz4 as the server's default TOAST compression, as 19 has it."""
    import asyncio

    asyncio.run(alter(pg17, "ALTER SYSTEM SET default_toast_compression = 'lz4'"))
    yield pg17
    asyncio.run(alter(pg17, "ALTER SYSTEM RESET default_toast_compression"))


async def test_default_toast_compression_is_pinned_to_the_toast_knob_and_recorded(
    lz4_default: Target, run_profile: RunProfile
) -> None:
    profile = small_profile(
        "toast",
        [Variant(name="pglz"), Variant(name="lz4", knobs=Knobs(toast=Toast.LZ4))],
        rows=200,
    )
    record, _ = await run_profile(lz4_default, profile)
    assert all(t.status == "ok" for t in record.trials), [t.reason for t in record.trials]
    seen = {t.variant: t.settings.get("default_toast_compression") for t in record.trials}
    assert seen == {"pglz": "pglz", "lz4": "lz4"}
    # effective_wal_level is read where the server has it (19+), never made up before
    assert all("effective_wal_level" not in t.settings for t in record.trials)


async def test_19s_buffer_wait_type_reads_as_the_bufferpin_it_was(pg18: Target) -> None:
    """pg_stat_activity of PostgreSQL 19's shape (type Buffer) through the real counters
    query, on a session-local view that shadows the catalog's."""
    conn = await pg18.connect("test")
    try:
        caps = await probe(conn, owned=True)
        await conn.execute(
            "CREATE TEMP VIEW pg_stat_activity AS SELECT * FROM (VALUES "
            "(1, 'active', 'Buffer', 'BufferPin', 'pgwx-work-x'), "
            "(2, 'active', 'BufferPin', 'BufferPin', 'pgwx-work-x'), "
            "(3, 'active', 'Buffer', 'BufferExclusive', 'pgwx-work-x'), "
            "(4, 'active', NULL, NULL, 'pgwx-work-x')) "
            "AS a(pid, state, wait_event_type, wait_event, application_name)"
        )
        row = await conn.fetchrow(counters_query(caps).sql, "pgwx-work", [])
    finally:
        await conn.close()
    assert row is not None
    waits = dict(json.loads(row["waits"]))
    assert waits == {"BufferPin:BufferPin": 2, "Buffer:BufferExclusive": 1, "CPU": 1}


async def test_not_enforced_is_an_fk_value_on_18_and_skipped_before(
    pg18: Target, pg15: Target, run_profile: RunProfile
) -> None:
    variants = [Variant(name="none"), Variant(name="ne", knobs=Knobs(fk=FkTiming.NOT_ENFORCED))]
    profile = small_profile("bulk-write", variants, rows=1000).model_copy(
        update={"workload": "restore", "params": {"rows": 2000}}
    )
    on18, _ = await run_profile(pg18, profile)
    ne = next(t for t in on18.trials if t.variant == "ne")
    assert ne.status == "ok", ne.reason
    assert ne.phases[0].detail["fk"] == "not enforced"  # read back from pg_constraint
    on15, _ = await run_profile(pg15, profile)
    skipped = next(t for t in on15.trials if t.variant == "ne")
    assert skipped.status == "skipped"
    assert "NOT ENFORCED needs PostgreSQL 18+" in (skipped.reason or "")


async def test_19s_fpi_bytes_are_read_where_reported_and_unknown_before(pg18: Target) -> None:
    """pg_stat_wal of PostgreSQL 19's shape (wal_fpi_bytes) through the real counters query
    and its parser, on a session-local view that shadows the catalog's."""
    conn = await pg18.connect("test")
    try:
        caps = await probe(conn, owned=True)
        real = await conn.fetchrow(counters_query(caps).sql, "pgwx-work", [])
        await conn.execute(
            "CREATE TEMP VIEW pg_stat_wal AS SELECT 10::bigint AS wal_records, "
            "3::bigint AS wal_fpi, 900::numeric AS wal_bytes, 0::bigint AS wal_buffers_full, "
            "24576::numeric AS wal_fpi_bytes"
        )
        nineteen = caps.model_copy(update={"version_num": 190000, "version": "19beta1"})
        fake = await conn.fetchrow(counters_query(nineteen).sql, "pgwx-work", [])
    finally:
        await conn.close()
    assert real is not None and fake is not None

    def decoded(row: object) -> dict:
        return {k: json.loads(v) if isinstance(v, str) else v for k, v in dict(row).items()}  # type: ignore[call-overload]

    before = {**decoded(fake), "wal": [0, 0, 0, 0, None, None, None, None, 0]}
    wal = Reading(decoded(fake)).since(Reading(before))["wal"]
    assert (wal.fpi, wal.fpi_bytes) == (3, 24576)
    # 18 does not report it: unknown, never 0
    assert decoded(real)["wal"][-1] is None
