"""Experiment 3: the same INSERT / SELECT / UPDATE / DELETE on logged, UNLOGGED and TEMP tables.

Seed 002_88089e2e7746b81a.txt: CREATE [UNLOGGED|TEMPORARY] TABLE tab(c1 integer), INSERT from
generate_series, VACUUM ANALYZE, SELECT count(*), UPDATE c1 = c1 + 1, VACUUM ANALYZE, DELETE.
The rows come from generate_series as in the article: that *is* the workload, not setup.
Each read phase records its plan, because TEMP tables never get a parallel scan.
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


class TableKindParams(Params):
    """Size of the table-kind sequence."""

    SCALED: ClassVar[tuple[str, ...]] = ("rows",)
    rows: int = Field(default=2_000_000, ge=1)
    """Rows inserted, updated and deleted (the article used 1e8)."""


async def plan_summary(conn: Any, sql: str) -> dict[str, Any]:
    """Top plan node and parallel workers planned/launched, from EXPLAIN ANALYZE (untimed)."""
    plan = await explain_plan(conn, sql, "ANALYZE", "COSTS OFF", "TIMING OFF")
    nodes = []

    def walk(node: dict[str, Any]) -> None:
        nodes.append(node)
        for child in node.get("Plans", []):
            walk(child)

    walk(plan)
    scans = [n for n in nodes if "Scan" in n["Node Type"]] or [plan]
    scan = ("Parallel " if scans[0].get("Parallel Aware") else "") + scans[0]["Node Type"]
    launched = sum(int(n.get("Workers Launched", 0)) for n in nodes)
    planned = sum(int(n.get("Workers Planned", 0)) for n in nodes)
    return {"plan": scan, "workers": f"{launched}/{planned}"}


class TableKindWorkload(Workload[TableKindParams]):
    """INSERT, VACUUM ANALYZE, SELECT count(*), UPDATE, VACUUM ANALYZE, DELETE."""

    kind = "table-kind"
    title = "INSERT/SELECT/UPDATE/DELETE sequence on one table"
    params_model = TableKindParams
    table = "tab"

    async def trial(self, ctx: TrialContext) -> None:
        db, n = ctx.db, self.params.rows
        tab = table_name("tab", ctx.knobs.table_kind)
        await db.execute(f"DROP TABLE IF EXISTS {tab}")
        await db.execute(create_table_sql("tab", "c1 integer", ctx.knobs.table_kind))
        await ctx.settle()
        async with ctx.phase("insert", expected_rows=n) as ph:
            await db.execute(f"INSERT INTO {tab} SELECT generate_series(1, {n})")
            ph.rows = n
        async with ctx.phase("vacuum-analyze"):
            await db.execute(f"VACUUM ANALYZE {tab}")
        async with ctx.phase("select") as ph:
            ph.rows = int(await db.fetchval(f"SELECT count(*) FROM {tab}"))
        ctx.phases[-1].detail.update(await plan_summary(db, f"SELECT count(*) FROM {tab}"))
        ctx.phases[-1].detail["pages"] = await relation_pages(db, tab)
        async with ctx.phase("update", expected_rows=n) as ph:
            status = await db.execute(f"UPDATE {tab} SET c1 = c1 + 1")
            ph.rows = rows_affected(status)
        async with ctx.phase("vacuum-analyze-2"):
            await db.execute(f"VACUUM ANALYZE {tab}")
        async with ctx.phase("delete", expected_rows=n) as ph:
            status = await db.execute(f"DELETE FROM {tab}")
            ph.rows = rows_affected(status)
        await db.execute(f"DROP TABLE {tab}")


WORKLOAD = TableKindWorkload
