"""Experiment 2: COPY then UPDATE of every row, under durability settings and table kinds.

Seed 001_3f5cfd25c8943240.txt: a pgbench_accounts-shaped table
`(aid int not null primary key, bid int, abalance int, filler char(84))`, COPY N rows into it,
then `UPDATE ... SET abalance = abalance + 1` on all of them, once per variant (defaults,
synchronous_commit, fsync, full_page_writes, UNLOGGED, wal_level=minimal).

The primary key is there from the start, as on a pgbench_accounts a user loads into: COPY
maintains the index row by row, and the UPDATE (fillfactor 100, full pages, so no HOT) inserts
a new index entry for every row. The COPY input is generated once per run, server-side, into a
file; a trial only reads it. With `load_in_create_txn` the timed COPY runs as
`BEGIN; TRUNCATE; COPY; COMMIT`: under wal_level=minimal PostgreSQL skips WAL for a relation
only when its file was created in the same transaction, and syncs the file at COMMIT instead
(part of the timed phase). Each phase records the WAL it generated (the runner's
insert-LSN delta, `wal_bytes`), which is where the variants differ.
The table has autovacuum off so a background VACUUM never runs beside the timed UPDATE.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from explorer.lab.scope import create_table_sql, rows_affected, schema, table_name
from explorer.lab.workloads.base import (
    Params,
    TrialContext,
    Workload,
    WorkloadError,
)
from explorer.models import TableKind

TABLE = "accounts"
COLUMNS = "aid int NOT NULL PRIMARY KEY, bid int, abalance int, filler char(84)"
WITH = "fillfactor = 100, autovacuum_enabled = off"


class BulkWriteParams(Params):
    """Size of the load."""

    SCALED: ClassVar[tuple[str, ...]] = ("rows",)
    ROW_BYTES: ClassVar[int] = 120
    """Pgbench_accounts-like rows: four narrow columns."""
    rows: int = Field(default=1_000_000, ge=1)
    """Rows copied and then updated (the article used 10,000,000, about 1.2 GB)."""


class BulkWriteWorkload(Workload[BulkWriteParams]):
    """COPY into a pgbench_accounts-shaped table, CHECKPOINT, then UPDATE every row."""

    kind = "bulk-write"
    title = "COPY then UPDATE all rows of a pgbench_accounts-shaped table"
    params_model = BulkWriteParams
    table = TABLE
    source_sql = "SELECT g, (g - 1) / 100000 + 1, 0, '' FROM generate_series(1, {rows}) g"
    """The COPY input: aid, bid (100,000 accounts a branch), 0, empty filler."""

    async def trial(self, ctx: TrialContext) -> None:
        data = self.prepared()
        db, n, kind = ctx.db, self.params.rows, ctx.knobs.table_kind
        tab = table_name(TABLE, kind)
        where = "pg_temp" if kind is TableKind.TEMPORARY else schema()
        await db.execute(f"DROP TABLE IF EXISTS {tab}")
        await db.execute(create_table_sql(TABLE, COLUMNS, kind, with_=WITH))
        await ctx.settle()

        async with ctx.phase("copy", expected_rows=n) as ph:
            if ctx.knobs.load_in_create_txn:
                async with db.transaction():
                    await db.execute(f"TRUNCATE {tab}")
                    status = await db.copy_to_table(TABLE, schema_name=where, source=str(data))
                ph.detail["txn"] = "TRUNCATE + COPY"
            else:
                status = await db.copy_to_table(TABLE, schema_name=where, source=str(data))
            ph.rows = rows_affected(status)
        if ctx.phases[-1].rows != n:
            raise WorkloadError(f"COPY loaded {ctx.phases[-1].rows} rows, not {n}")

        await ctx.settle()
        async with ctx.phase("update", expected_rows=n) as ph:
            status = await db.execute(f"UPDATE {tab} SET abalance = abalance + 1")
            ph.rows = rows_affected(status)
        await db.execute(f"DROP TABLE {tab}")


WORKLOAD = BulkWriteWorkload
