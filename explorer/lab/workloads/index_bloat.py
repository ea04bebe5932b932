"""Experiment 3, second part: index bloat raises the planner's cost of an Index Only Scan.

Seed 002_88089e2e7746b81a.txt: `tab1(c1 integer PRIMARY KEY)` filled to 10^6 rows, VACUUM
ANALYZE; 90% of the rows deleted (c1 > 10^5) and VACUUM ANALYZE again; then REINDEX. After each
step the article read the index's pages and the estimated cost of
`SELECT * FROM tab1 WHERE c1 <= 5000` (an Index Only Scan): 2,745 pages and cost 140 after the
fill, still 2,745 pages and cost 621 after the delete and VACUUM, 276 pages and cost 141 after
REINDEX. VACUUM empties the index pages but never gives them back to the file; the planner
estimates the pages a scan visits as (rows wanted / rows in index) × pages in the file, so the
same 5,000 rows look 10 times as expensive to fetch.

Phases: "fill" (INSERT, then an untimed VACUUM ANALYZE so the measurement sees settled
statistics and an all-visible heap, as in the article), "delete-90pct", "vacuum" (VACUUM
ANALYZE), "reindex" (REINDEX TABLE). Each phase's note has the index's size in pages and the
Index Only Scan's estimated total cost, read with EXPLAIN (FORMAT JSON) in a transaction that
turns off sequential and bitmap scans, so the cost is that of the index-only plan even where the
planner would rather not use it. Right after the DELETE the cost has not moved yet: the planner
still believes the table's old row count until VACUUM ANALYZE updates it.

The table has `autovacuum_enabled = off`, so an autovacuum cannot clean or analyze it between
the steps and blur which step changed what. The range scanned is the first 0.5% of the keys
(5,000 of the article's 10^6 rows), so the costs stay comparable at any `rows`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from explorer.lab.scope import (
    create_table_sql,
    explain_plan,
    relation_pages,
    rows_affected,
    table_name,
)
from explorer.lab.workloads.base import Params, TrialContext, Workload

TABLE = "bloat_t"
INDEX = "bloat_t_pkey"


class IndexBloatParams(Params):
    """Size of the index-bloat sequence."""

    SCALED: ClassVar[tuple[str, ...]] = ("rows",)
    rows: int = Field(default=1_000_000, ge=1)
    """Rows inserted before 90% of them are deleted (the article: 10^6)."""


async def measure(conn: Any, table: str, index: str, upto: int) -> dict[str, Any]:
    """Index pages on disk and the estimated cost of the index-only range scan (untimed)."""
    index_pages = await relation_pages(conn, index)
    async with conn.transaction():
        await conn.execute("SET LOCAL enable_seqscan = off")
        await conn.execute("SET LOCAL enable_bitmapscan = off")
        plan = await explain_plan(conn, f"SELECT c1 FROM {table} WHERE c1 <= {upto}")
    facts: dict[str, Any] = {
        "index_pages": index_pages,
        "ioscan_cost": float(plan["Total Cost"]),
    }
    if plan["Node Type"] != "Index Only Scan":
        facts["plan"] = plan["Node Type"]
    return facts


class IndexBloatWorkload(Workload[IndexBloatParams]):
    """Fill, delete 90%, VACUUM, REINDEX — the index's pages and scan cost after each."""

    kind = "index-bloat"
    title = "Index bloat: pages and Index Only Scan cost after DELETE, VACUUM and REINDEX"
    params_model = IndexBloatParams
    table = TABLE

    async def trial(self, ctx: TrialContext) -> None:
        db, n, kind = ctx.db, self.params.rows, ctx.knobs.table_kind
        tab = table_name(TABLE, kind)
        # An index of a temporary table lives in pg_temp too; elsewhere beside its table.
        idx = tab.rsplit(".", 1)[0] + "." + INDEX
        keep, upto = max(1, n // 10), max(1, n // 200)
        await db.execute(f"DROP TABLE IF EXISTS {tab}")
        await db.execute(
            create_table_sql(
                TABLE,
                f"c1 integer CONSTRAINT {INDEX} PRIMARY KEY",
                kind,
                with_="autovacuum_enabled=off",
            )
        )
        await ctx.settle()

        async def measure_last_phase() -> None:
            ctx.phases[-1].detail.update(await measure(db, tab, idx, upto))

        async with ctx.phase("fill", expected_rows=n) as ph:
            await db.execute(f"INSERT INTO {tab} SELECT generate_series(1, {n})")
            ph.rows = n
        await db.execute(f"VACUUM ANALYZE {tab}")
        await measure_last_phase()
        async with ctx.phase("delete-90pct", expected_rows=n - keep) as ph:
            status = await db.execute(f"DELETE FROM {tab} WHERE c1 > {keep}")
            ph.rows = rows_affected(status)
        await measure_last_phase()
        async with ctx.phase("vacuum"):
            await db.execute(f"VACUUM ANALYZE {tab}")
        await measure_last_phase()
        async with ctx.phase("reindex", expected_rows=keep) as ph:
            await db.execute(f"REINDEX TABLE {tab}")
            ph.rows = keep
        await measure_last_phase()
        await db.execute(f"DROP TABLE {tab}")


WORKLOAD = IndexBloatWorkload
