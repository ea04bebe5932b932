"""The toast workload on real servers: lz4 where it is built in, a read that detoasts."""

from __future__ import annotations

import json
from pathlib import Path

from explorer.lab.profiles.catalog import load_profile
from explorer.lab.workloads.toast import (
    PIECE,
    READ_SQL,
    REPEAT,
    ToastParams,
    ToastWorkload,
    source_query,
)
from explorer.models import Knobs, PhaseResult, RunRecord, TableKind, Variant
from explorer.server.capabilities import probe
from explorer.server.connect import Target
from tests.support.runs import RunProfile

ROWS = 400
SCALE = ROWS / 10_000


def phase(record: RunRecord, variant: str, name: str) -> PhaseResult:
    trial = next(t for t in record.trials if t.variant == variant)
    assert trial.status == "ok", trial.reason
    return next(p for p in trial.phases if p.name == name)


async def test_source_rows_are_random_pieces_repeated(pg18: Target, tmp_path: Path) -> None:
    conn = await pg18.connect("test")
    try:
        caps = await probe(conn, owned=True)
    finally:
        await conn.close()
    workload = ToastWorkload(ToastParams(rows=50))
    await workload.prepare(pg18, caps, tmp_path)
    lines = workload.prepared().read_text().splitlines()
    assert len(lines) == 50
    pieces = set()
    for line in lines:
        _id, data = line.split("\t")
        assert len(data) == PIECE * REPEAT
        assert data == data[:PIECE] * REPEAT
        pieces.add(data[:PIECE])
    # one fresh random piece per row, not one for the whole load
    assert len(pieces) == 50


async def test_toast_on_pg15_lz4_runs_and_reads_detoast(
    pg15: Target, run_profile: RunProfile
) -> None:
    profile = load_profile("toast-compression")
    record, _ = await run_profile(pg15, profile, scale=SCALE, repeats=1)
    assert record.status == "finished"
    assert [t.status for t in record.trials] == ["ok", "ok", "ok"]
    pglz, lz4, external = (phase(record, v, "insert") for v in ("pglz", "lz4", "external"))
    assert pglz.rows == lz4.rows == external.rows == ROWS
    assert pglz.detail["compression"] == {"pglz": ROWS}
    assert lz4.detail["compression"] == {"lz4": ROWS}
    assert external.detail["compression"] == {"none": ROWS}
    # 16,000 characters stored as they are vs compressed to a few hundred bytes
    assert external.detail["bytes"] > 10 * pglz.detail["bytes"]
    assert lz4.detail["bytes"] < external.detail["bytes"] / 10
    for variant in ("pglz", "lz4", "external"):
        read = phase(record, variant, "read")
        assert read.rows == ROWS
        assert read.detail["bytes_read"] == ROWS * PIECE * REPEAT


async def test_toast_on_bundled_18_skips_lz4_with_reason(
    pg18: Target, run_profile: RunProfile
) -> None:
    profile = load_profile("toast-compression")
    temp = Variant(name="pglz-temp", knobs=Knobs(table_kind=TableKind.TEMPORARY))
    profile = profile.model_copy(update={"variants": [*profile.variants, temp]})
    record, _ = await run_profile(pg18, profile, scale=SCALE, repeats=1)
    by = {t.variant: t for t in record.trials}
    assert by["lz4"].status == "skipped"
    assert "not available here: lz4 is not built into this server" in (by["lz4"].reason or "")
    assert by["pglz"].status == by["external"].status == "ok"
    assert phase(record, "pglz", "insert").detail["compression"] == {"pglz": ROWS}
    assert phase(record, "external", "read").detail["bytes_read"] == ROWS * PIECE * REPEAT
    assert record.status == "finished"
    # a TEMPORARY table is loaded and read in the workload's own session
    assert phase(record, "pglz-temp", "insert").detail["compression"] == {"pglz": ROWS}


async def test_read_query_fetches_every_toast_chunk(pg18: Target) -> None:
    """The timed read follows the TOAST pointers; octet_length (for contrast) does not."""
    conn = await pg18.connect("test")
    try:
        await conn.execute("CREATE TEMPORARY TABLE toast_probe (id integer, data text)")
        await conn.execute("ALTER TABLE toast_probe ALTER COLUMN data SET STORAGE EXTERNAL")
        await conn.execute(f"INSERT INTO toast_probe {source_query(50)}")

        async def blocks(sql: str) -> int:
            raw = await conn.fetchval(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {sql}")
            plan = json.loads(raw)[0]["Plan"]
            return int(plan["Local Hit Blocks"]) + int(plan["Local Read Blocks"])

        heap_only = await blocks("SELECT sum(octet_length(data)) FROM toast_probe")
        detoasted = await blocks(READ_SQL.format(table="toast_probe"))
    finally:
        await conn.close()
    # 50 values × 16,000 bytes live in ~100 TOAST pages (plus its index), the heap in one
    assert heap_only <= 2
    assert detoasted >= 100
