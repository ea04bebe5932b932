"""Experiment 5: what growing the data file costs — a COPY and pgbench inserts, extending or not.

Seed 004_032e418686edbacc.txt: UNLOGGED `pgbench_history` with fillfactor 100. The "extending"
state is a freshly truncated table: every page the load fills must first be added to the file
(relation extension: a zeroed 8 KB write and the relation-extension lock). The "no extension"
state is a file that already has the pages, all empty and known to the free space map, so the
load only fills them.

The article built that state by deleting every row but the last one inserted, running a plain
VACUUM and then deleting the last row. Plain VACUUM truncates only empty pages at the *end* of
the file, so the surviving row in the last page kept the file at full size, while VACUUM
recorded every emptied page in the free space map. pgwx does the same in one step with
`VACUUM (TRUNCATE false)` (PostgreSQL 12+) after deleting all rows: the file keeps its size,
every page is empty and in the free space map. The table is created with
`autovacuum_enabled = off` in both variants, because an autovacuum would otherwise truncate the
empty pre-grown file between setup and load.

Before each timed phase the table is put back into the variant's state, untimed: TRUNCATE, and
for "pre-grown" a fill with the same number of rows that phase will write (the COPY phase
pre-grows from the very file it then loads), DELETE and VACUUM (TRUNCATE false). Each phase's
note carries the file size in pages before and after, so a reader sees whether it grew at all
(it would, for instance, if another session's old snapshot kept VACUUM from freeing the rows).

The pgbench phases run the article's insert-only script through the bundled `pgbench`, in
sessions of their own (so TEMPORARY tables cannot be used here); their tps and average latency
come from pgbench's own report.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import Field

from explorer.lab.scope import (
    create_table_sql,
    relation_pages,
    rows_affected,
    schema,
    table_name,
    work_app,
)
from explorer.lab.workloads.base import (
    Params,
    TrialContext,
    Workload,
    WorkloadError,
)
from explorer.models import Capabilities
from explorer.server.connect import Target

TABLE = "pgbench_history"
COLUMNS = "tid int, bid int, aid int, delta int, mtime timestamp, filler char(22)"
WITH = "fillfactor=100, autovacuum_enabled=off"

SCRIPT = """\\set aid random(1, 100000)
\\set bid random(1, 1)
\\set tid random(1, 10)
\\set delta random(-5000, 5000)
BEGIN;
INSERT INTO {table} (tid, bid, aid, delta, mtime)
  VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
"""
"""The article's ins-only.txt, scale fixed at 1, table qualified (pgbench 10+ reads SQL to `;`)."""
SCRIPT_FILE = "ins-only.sql"

ROWS_SQL = """SELECT 1 + floor(random() * 10)::int, 1, 1 + floor(random() * 100000)::int,
                     floor(random() * 10001)::int - 5000, localtimestamp, NULL::char(22)
              FROM generate_series(1, {rows})"""
"""Rows shaped like pgbench's: four ints, a timestamp, filler NULL (pgbench never sets it)."""


class FileExtensionParams(Params):
    """Sizes of the file-extension comparison."""

    SCALED: ClassVar[tuple[str, ...]] = ("rows", "transactions")
    rows: int = Field(default=400_000, ge=1)
    """Rows of the COPY phase (the article used 400,000)."""
    clients: list[Annotated[int, Field(ge=1, le=256)]] = [1, 4]
    """Client counts of the pgbench phases, one phase each (the article: 4 to 32)."""
    transactions: int = Field(default=10_000, ge=1)
    """pgbench transactions (one INSERT each) per client."""


def pgbench_conninfo(dsn: str | None, app: str, user: str | None = None) -> str:
    """pgbench's database argument: the DSN (if any) plus an application_name (and a user).

    pgbench takes the database as a positional argument (its `-d` means --debug) and expands
    a connection string there; whatever the string leaves out comes from PGHOST and friends.
    `user` (a plain identifier: the run's fenced role) comes last, so it wins over a user the
    DSN names.
    """
    extra = {"application_name": app, **({"user": user} if user else {})}
    if not dsn:
        return " ".join(f"{k}={v}" for k, v in extra.items())
    if "://" in dsn:
        return dsn + ("&" if "?" in dsn else "?") + "&".join(f"{k}={v}" for k, v in extra.items())
    return dsn + "".join(f" {k}={v}" for k, v in extra.items())


def parse_pgbench(out: str) -> dict[str, Any]:
    """tps, average latency and transactions processed from pgbench's report."""
    tps = re.search(r"^tps = ([0-9.]+)", out, re.M)
    latency = re.search(r"^latency average = ([0-9.]+) ms", out, re.M)
    done = re.search(r"^number of transactions actually processed: (\d+)", out, re.M)
    if tps is None or done is None:
        raise WorkloadError("pgbench finished without a tps line; cannot read its result")
    facts: dict[str, Any] = {"tps": round(float(tps.group(1)), 1), "done": int(done.group(1))}
    if latency:
        facts["latency_ms"] = float(latency.group(1))
    return facts


class FileExtensionWorkload(Workload[FileExtensionParams]):
    """COPY, then pgbench insert-only at each client count, into an extending or pre-grown file."""

    kind = "file-extension"
    uses_other_sessions = True
    title = "Relation extension: COPY and pgbench inserts into a growing vs a pre-grown file"
    params_model = FileExtensionParams
    table = TABLE
    source_sql = ROWS_SQL

    async def prepare(self, target: Target, caps: Capabilities, workdir: Path) -> None:
        (workdir / SCRIPT_FILE).write_text(SCRIPT.format(table=f"{schema()}.{TABLE}"))
        await super().prepare(target, caps, workdir)

    async def _reset(self, ctx: TrialContext, tab: str, rows: int, from_source: bool) -> None:
        """Empty the table into the variant's state: a bare file, or a pre-grown empty one."""
        db = ctx.db
        await db.execute(f"TRUNCATE {tab}")
        if not ctx.knobs.pregrown:
            return
        if from_source:
            await db.copy_to_table(TABLE, source=str(self.prepared()), schema_name=schema())
        else:
            await db.execute(f"INSERT INTO {tab} {ROWS_SQL.format(rows=rows)}")
        await db.execute(f"DELETE FROM {tab}")
        await db.execute(f"VACUUM (TRUNCATE false) {tab}")

    async def trial(self, ctx: TrialContext) -> None:
        source = self.prepared()
        script = source.with_name(SCRIPT_FILE)  # prepare wrote both in the run's workdir
        db, p, kind = ctx.db, self.params, ctx.knobs.table_kind
        tab = table_name(TABLE, kind)
        await db.execute(f"DROP TABLE IF EXISTS {tab}")
        await db.execute(create_table_sql(TABLE, COLUMNS, kind, with_=WITH))

        await self._reset(ctx, tab, p.rows, from_source=True)
        before = await relation_pages(db, tab)
        await ctx.settle()
        async with ctx.phase("copy", expected_rows=p.rows) as ph:
            status = await db.copy_to_table(TABLE, source=str(source), schema_name=schema())
            ph.rows = rows_affected(status)
        ctx.phases[-1].detail.update(pages_before=before, pages_after=await relation_pages(db, tab))

        conninfo = pgbench_conninfo(ctx.target.dsn, work_app("pgbench"))
        for c in p.clients:
            rows = c * p.transactions
            await self._reset(ctx, tab, rows, from_source=False)
            before = await relation_pages(db, tab)
            await ctx.settle()
            args = ["pgbench", "-n", "-c", str(c), "-j", str(min(c, 2))]
            args += ["-t", str(p.transactions), "-f", str(script), conninfo]
            async with ctx.phase(f"pgbench-{c}c", expected_rows=rows) as ph:
                facts = parse_pgbench(await ctx.run_tool(args))
                ph.rows = facts.pop("done")
                ph.detail.update(facts)
            ctx.phases[-1].detail.update(
                pages_before=before, pages_after=await relation_pages(db, tab)
            )
        await db.execute(f"DROP TABLE {tab}")


WORKLOAD = FileExtensionWorkload
