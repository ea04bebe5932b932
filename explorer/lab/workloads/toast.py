"""Experiment 4: TOAST compression, pglz vs lz4 vs uncompressed (storage EXTERNAL).

Seed 003_90d5a065b3bbd6a8.txt: tables `(id int, data text)` with `data` compressed by pglz,
compressed by lz4, or stored EXTERNAL (out of line, never compressed); 10,000 rows of a 16 KB
compressible text (200 random characters repeated 80 times, different per row). The article
timed the INSERT, the total size and an `EXPLAIN ANALYZE SELECT id, data`.

That read measured nothing: EXPLAIN ANALYZE never sends the rows to a client, so the TOAST
pointers are never followed and the values never decompressed — hence ~4.5 ms for all three.
Here the read is `SELECT count(*), sum(length(textsend(data)))`: `textsend` builds the bytes a
client would be sent, so every value must be decompressed (or, for EXTERNAL, fetched chunk by
chunk from the TOAST table), and `length()` of the result is free. `sum(length(data))` detoasts
too, but on a UTF-8 server it then counts 160 million characters one by one, which costs over ten
times more than the detoasting itself and would drown the difference between the variants;
`octet_length(data)` answers from the TOAST pointer and detoasts nothing. An untimed VACUUM
before the read sets the hint bits the first scan after a load would otherwise set, so the
read times detoasting, not the load's aftermath.

The rows are generated once per run, on the server, into a COPY file in the run's workdir;
the timed "insert" phase is a COPY of that file, so generating random text is never timed.
After the insert the phase records the table's total size and `pg_column_compression()`
counts ("none" = stored uncompressed), which prove what each variant really did.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from explorer.lab.scope import create_table_sql, rows_affected, schema, table_name, toast_sql
from explorer.lab.workloads.base import Params, TrialContext, Workload
from explorer.models import TableKind

TABLE = "toast_t"
PIECE = 200
"""Random characters per row…"""
REPEAT = 80
"""…repeated this many times: 16,000 characters per value, as in the article."""
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
READ_SQL = "SELECT count(*) AS n, sum(length(textsend(data))) AS bytes FROM {table}"
"""The timed read: every value detoasted in full, as for a client (see the module docstring)."""


class ToastParams(Params):
    """Size of the TOAST comparison."""

    SCALED: ClassVar[tuple[str, ...]] = ("rows",)
    ROW_BYTES: ClassVar[int] = 16500
    """16 KB of text before compression."""
    rows: int = Field(default=10_000, ge=1)
    """Rows of 16 KB text inserted (the article used 10,000)."""


# The LATERAL subquery refers to `i`, so it is evaluated once per row, not once in all.
SOURCE_SQL = f"""
        SELECT i, repeat(r.piece, {REPEAT})
        FROM generate_series(1, {{rows}}) AS i,
        LATERAL (
            SELECT string_agg(substr('{ALPHABET}', 1 + floor(random() * {len(ALPHABET)})::int, 1),
                              '') AS piece
            FROM generate_series(1, {PIECE}) AS g
            WHERE i IS NOT NULL
        ) AS r"""
"""Rows `id, data` with a fresh random 200-character piece repeated 80 times per row."""


def source_query(rows: int) -> str:
    """SOURCE_SQL for `rows` rows."""
    return SOURCE_SQL.format(rows=rows)


async def table_facts(conn: Any, table: str) -> dict[str, Any]:
    """Total size (heap + TOAST + indexes) and how the values are stored."""
    size = await conn.fetchrow(
        "SELECT pg_total_relation_size($1::regclass) AS bytes, "
        "pg_size_pretty(pg_total_relation_size($1::regclass)) AS pretty",
        table,
    )
    counts = await conn.fetch(
        f"SELECT coalesce(pg_column_compression(data), 'none') AS method, count(*) AS n "
        f"FROM {table} GROUP BY 1 ORDER BY 2 DESC"
    )
    return {
        "size": size["pretty"],
        "bytes": int(size["bytes"]),
        "compression": {r["method"]: int(r["n"]) for r in counts},
    }


class ToastWorkload(Workload[ToastParams]):
    """COPY 16 KB compressible texts into a pglz / lz4 / EXTERNAL column, then read them all."""

    kind = "toast"
    follows = frozenset({"table_kind", "toast"})
    title = "TOAST: pglz vs lz4 vs EXTERNAL — insert time, size, a read that detoasts"
    params_model = ToastParams
    table = TABLE
    source_sql = SOURCE_SQL

    async def trial(self, ctx: TrialContext) -> None:
        source = self.prepared()
        db, n, kind = ctx.db, self.params.rows, ctx.knobs.table_kind
        tab = table_name(TABLE, kind)
        await db.execute(f"DROP TABLE IF EXISTS {tab}")
        await db.execute(create_table_sql(TABLE, "id integer, data text", kind))
        await db.execute(toast_sql(ctx.knobs.toast, tab, "data"))
        await ctx.settle()
        async with ctx.phase("insert", expected_rows=n) as ph:
            status = await db.copy_to_table(
                TABLE,
                source=str(source),
                schema_name="pg_temp" if kind is TableKind.TEMPORARY else schema(),
            )
            ph.rows = rows_affected(status)
        ctx.phases[-1].detail.update(await table_facts(db, tab))
        # The first scan after a load sets hint bits on every heap and TOAST tuple (80,000
        # chunks for EXTERNAL) and dirties their pages; that is not the cost of detoasting.
        await db.execute(f"VACUUM {tab}")
        async with ctx.phase("read", expected_rows=n) as ph:
            row = await db.fetchrow(READ_SQL.format(table=tab))
            ph.rows = int(row["n"])
            ph.detail["bytes_read"] = int(row["bytes"] or 0)
        await db.execute(f"DROP TABLE {tab}")


WORKLOAD = ToastWorkload
