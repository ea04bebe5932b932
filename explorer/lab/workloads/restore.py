"""Experiment 1: foreign-key timing on a data-only restore, with load and COMMIT timed apart.

Seed 000_c96f8fd18b80eeaf.txt: `parent(id serial primary key, val text)` with one row, a child
`(id serial, parent_id int, val text, created_at timestamp)` filled with
`parent_id=1, val=repeat('hoge',100)`, `pg_dump -Fc`, then per trial a fresh child and
`pg_restore --data-only --single-transaction --table=child`. The child's foreign key follows
the variant: none, immediate, DEFERRABLE INITIALLY DEFERRED, added after the load, or added
NOT VALID and then validated.

pg_restore is one process and one transaction, so its COPY and its COMMIT cannot be timed
from the client. A second session watches `pg_stat_activity` for pg_restore's backend (it
runs with `application_name` pgwx-work-restore) and takes the `query_start` of its COMMIT on
the server's clock; load and commit are split at that instant and scaled to the client's
monotonic total. A COMMIT shorter than one poll is recorded as 0 and says so. (A DSN that sets
its own application_name overrides PGAPPNAME; the COMMIT is then reported as not observed.)

Method choices (not in the article): the child is created per trial (like the article's
TRUNCATE, a new empty file); it has autovacuum off so a background ANALYZE never collides with
the timed ADD FOREIGN KEY; and the row count is verified after the FK phases, so the check's
scan does not set the hint bits the FK validation would otherwise pay for.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import asyncpg
from pydantic import Field

from explorer.lab.sql import (
    close_or_terminate,
    fk_after_load_steps,
    fk_clause,
    schema,
    work_app,
)
from explorer.lab.workloads.base import (
    Params,
    PhaseHandle,
    TrialContext,
    Workload,
    WorkloadError,
    run_tool,
)
from explorer.models import Capabilities, FkTiming, Knobs, PhaseStarted
from explorer.server.connect import APP_PREFIX, Target

DUMP_FILE = "child.dump"


def parent_table() -> str:
    """The parent table, in the current run's schema."""
    return f"{schema()}.parent"


def child_table() -> str:
    """The child table that every trial restores, in the current run's schema."""
    return f"{schema()}.child"


def restore_app() -> str:
    """application_name of pg_restore's session, so the watcher (and the sampler) can find it."""
    return work_app("restore")


POLL_SECONDS = 0.005
"""How often the watcher looks for pg_restore's COMMIT once it may be near."""
SLOW_POLL_SECONDS = 0.05
"""How often it looks while pg_stat_progress_copy says the COPY is far from done."""
NEAR_END = 0.9
"""Share of the rows copied after which the watcher polls fast again."""
CHILD_COLUMNS = "id serial, parent_id int{fk}, val text, created_at timestamp"
NO_AUTOVACUUM = "autovacuum_enabled = off"

_WATCH_SQL = """
SELECT a.query, a.query_start, pg_current_wal_insert_lsn() - '0/0'::pg_lsn AS wal,
       {copied} AS copied
FROM pg_stat_activity a {join}
WHERE a.application_name = $1 AND a.pid <> pg_backend_pid()
"""
WATCH_SQL = _WATCH_SQL.format(
    copied="p.tuples_processed", join="LEFT JOIN pg_stat_progress_copy p ON p.pid = a.pid"
)
"""The watcher's poll on PostgreSQL 14+ (pg_stat_progress_copy exists)."""
WATCH_SQL_13 = _WATCH_SQL.format(copied="NULL::bigint", join="")
"""The same before 14: no COPY progress, so every poll is a fast one."""
_MARK_SQL = "SELECT clock_timestamp() AS now, pg_current_wal_insert_lsn() - '0/0'::pg_lsn AS wal"
"""The server's clock and WAL insert position, read just before and just after pg_restore."""


class RestoreParams(Params):
    """Size of the dump that every trial restores."""

    SCALED: ClassVar[tuple[str, ...]] = ("rows",)
    rows: int = Field(default=1_000_000, ge=1)
    """Child rows in the dump (the article used 1,000,000 of repeat('hoge', 100))."""


def create_child_sql(fk: FkTiming) -> str:
    """The child table as the variant wants it during the load (FK only for immediate/deferred)."""
    columns = CHILD_COLUMNS.format(fk=fk_clause(fk, parent_table()))
    return f"CREATE TABLE {child_table()} ({columns}) WITH ({NO_AUTOVACUUM})"


async def fk_state(conn: asyncpg.Connection) -> str:
    """The child's foreign key as the catalog has it: none, immediate, deferred, not valid…"""
    rows = await conn.fetch(
        """SELECT condeferrable, condeferred, convalidated FROM pg_constraint
           WHERE conrelid = $1::regclass AND contype = 'f'""",
        child_table(),
    )
    if not rows:
        return "none"
    if len(rows) > 1:
        return f"{len(rows)} foreign keys"
    r = rows[0]
    if not r["convalidated"]:
        return "not valid"
    if r["condeferred"]:
        return "deferred"
    return "deferrable" if r["condeferrable"] else "immediate"


EXPECTED_FK = {
    FkTiming.NONE: ("none", "none"),
    FkTiming.IMMEDIATE: ("immediate", "immediate"),
    FkTiming.DEFERRED: ("deferred", "deferred"),
    FkTiming.AFTER_LOAD: ("none", "immediate"),
    FkTiming.NOT_VALID: ("none", "immediate"),
}
"""What pg_constraint must say about the child's FK (while pg_restore loads, at the end)."""


def split_restore(
    t0: dt.datetime, commit_start: dt.datetime | None, t1: dt.datetime, client_seconds: float
) -> tuple[float, float]:
    """(load, commit) seconds: the server-clock split of the client's monotonic total."""
    server_total = (t1 - t0).total_seconds()
    if commit_start is None or server_total <= 0:
        return client_seconds, 0.0
    commit = min(max((t1 - commit_start).total_seconds(), 0.0), server_total)
    share = commit / server_total
    return client_seconds * (1 - share), client_seconds * share


def _is_commit(query: str | None) -> bool:
    return (query or "").strip().rstrip(";").strip().upper() in {"COMMIT", "END"}


def database_args(target: Target, dbname: str) -> list[str]:
    """`-d` for libpq tools: the DSN when there is one, else the database the session uses.

    pg_restore without -d prints the script instead of restoring it, so it must always get one.
    """
    args = target.tool_conn_args()
    if args:
        return args
    quoted = dbname.replace("\\", "\\\\").replace("'", "\\'")
    return ["-d", f"dbname='{quoted}'"]


class CommitWatcher:
    """Polls pg_stat_activity for one application_name and remembers when its COMMIT began.

    Polling every few milliseconds costs the restore a few percent of a 2-core machine, so
    while pg_stat_progress_copy shows the COPY far from `expected_rows` it polls ten times
    slower; the COMMIT can only start after the last row.
    """

    def __init__(
        self,
        conn: asyncpg.Connection,
        appname: str,
        on_commit: Callable[[], None] | None = None,
        *,
        expected_rows: int | None = None,
        copy_progress: bool = True,
    ) -> None:
        self.conn = conn
        self.appname = appname
        self.on_commit = on_commit
        self.expected_rows = expected_rows
        self.sql = WATCH_SQL if copy_progress else WATCH_SQL_13
        self.seen = False
        """pg_restore's backend showed up at least once."""
        self.commit_start: dt.datetime | None = None
        self.commit_wal: int | None = None
        """WAL insert position when the COMMIT was first seen (bytes)."""
        self.polls = 0
        self.far_from_end = False
        """The last poll saw a COPY with less than NEAR_END of the rows done."""

    async def poll(self) -> None:
        """One look at pg_stat_activity."""
        rows = await self.conn.fetch(self.sql, self.appname)
        self.polls += 1
        self.far_from_end = False
        for row in rows:
            self.seen = True
            if self.commit_start is None and _is_commit(row["query"]):
                self.commit_start = row["query_start"]
                self.commit_wal = int(row["wal"])
                if self.on_commit is not None:
                    self.on_commit()
            copied = row["copied"]
            if copied is not None and self.expected_rows:
                self.far_from_end = copied < NEAR_END * self.expected_rows

    async def run(self, stop: asyncio.Event) -> None:
        """Poll until `stop` is set."""
        while not stop.is_set():
            await self.poll()
            pause = SLOW_POLL_SECONDS if self.far_from_end else POLL_SECONDS
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(pause):
                    await stop.wait()


class RestoreWorkload(Workload[RestoreParams]):
    """pg_restore --data-only --single-transaction into a child whose FK follows the variant."""

    kind = "restore"
    title = "Data-only pg_restore with the FK immediate, deferred, after the load, or none"
    params_model = RestoreParams
    uses_other_sessions = True

    def relations(self, knobs: Knobs) -> list[str]:
        return [child_table()]

    async def prepare(self, target: Target, caps: Capabilities, workdir: Path) -> None:
        """Parent with one row, a filled child, and its data-only custom-format dump."""
        conn = await target.connect("prepare")
        try:
            dbname = str(await conn.fetchval("SELECT current_database()"))
            await conn.execute(f"DROP TABLE IF EXISTS {child_table()}, {parent_table()}")
            await conn.execute(f"CREATE TABLE {parent_table()} (id serial PRIMARY KEY, val text)")
            await conn.execute(f"INSERT INTO {parent_table()} (val) VALUES ('hogehoge')")
            # Stable plans for the FK checks: autovacuum must not ANALYZE parent mid-run.
            await conn.execute(f"ANALYZE {parent_table()}")
            await conn.execute(create_child_sql(FkTiming.NONE))
            await conn.execute(
                f"INSERT INTO {child_table()} (parent_id, val, created_at) "
                f"SELECT 1, repeat('hoge', 100), now() FROM generate_series(1, $1)",
                self.params.rows,
            )
            dump = workdir / DUMP_FILE
            await run_tool(
                target,
                [
                    "pg_dump",
                    "--format=custom",
                    "--data-only",
                    "--no-sync",
                    f"--table={child_table()}",
                    f"--file={dump}",
                    *database_args(target, dbname),
                ],
                appname=f"{APP_PREFIX}-prepare-dump",
            )
            await conn.execute(f"DROP TABLE {child_table()}")
        finally:
            await conn.close()
        self.source = dump

    async def trial(self, ctx: TrialContext) -> None:
        self.prepared()
        db, n, fk = ctx.db, self.params.rows, ctx.knobs.fk
        await db.execute(f"DROP TABLE IF EXISTS {child_table()}")
        await db.execute(create_child_sql(fk))
        during, at_end = EXPECTED_FK[fk]
        form = await fk_state(db)
        if form != during:
            raise WorkloadError(f"before the load the child's FK is {form}, not {during}")
        await ctx.settle()

        (load_s, load), (commit_s, commit) = await self._restore(ctx)
        load.detail["fk"] = form
        ctx.record("load", load_s, load)
        ctx.record("commit", commit_s, commit)

        for name, sql in fk_after_load_steps(
            fk, child_table(), "parent_id", f"{parent_table()} (id)"
        ):
            async with ctx.phase(name, expected_rows=n) as ph:
                await db.execute(sql)
                ph.rows = n
            ctx.phases[-1].detail["fk"] = await fk_state(db)

        restored = int(await db.fetchval(f"SELECT count(*) FROM {child_table()}"))
        if restored != n:
            raise WorkloadError(f"pg_restore left {restored} rows in the child, not {n}")
        final = await fk_state(db)
        if final != at_end:
            raise WorkloadError(f"after the trial the child's FK is {final}, not {at_end}")
        await db.execute(f"DROP TABLE {child_table()}")

    async def _restore(
        self, ctx: TrialContext
    ) -> tuple[tuple[float, PhaseHandle], tuple[float, PhaseHandle]]:
        """Run pg_restore and watch it from another session: (seconds, handle) of load, commit."""
        dump = self.prepared()
        # pg_restore names the database itself: the one the workload session is in.
        dbname = str(await ctx.db.fetchval("SELECT current_database()"))
        n = self.params.rows
        args = [
            "pg_restore",
            "--data-only",
            "--single-transaction",
            f"--schema={schema()}",
            "--table=child",
            *database_args(ctx.target, dbname),
            str(dump),
        ]

        def commit_seen() -> None:
            ctx.emit(
                PhaseStarted(at=ctx.clock(), variant=ctx.variant, repeat=ctx.repeat, phase="commit")
            )

        # Not a pgwx-work session: its polling must not count as the workload's CPU time.
        watch_conn = await ctx.target.connect("watch-restore")
        try:
            watcher = CommitWatcher(
                watch_conn,
                restore_app(),
                commit_seen,
                expected_rows=n,
                copy_progress=ctx.caps.major >= 14,
            )
            mark0 = await watch_conn.fetchrow(_MARK_SQL)
            ctx.emit(
                PhaseStarted(
                    at=ctx.clock(),
                    variant=ctx.variant,
                    repeat=ctx.repeat,
                    phase="load",
                    expected_rows=n,
                )
            )
            stop = asyncio.Event()
            start = time.perf_counter()
            watch = asyncio.create_task(watcher.run(stop))
            try:
                await ctx.run_tool(args, appname=restore_app())
                client_seconds = time.perf_counter() - start
            finally:
                stop.set()
                # A watcher failure must not hide pg_restore's own error; it is noted below.
                (watch_error,) = await asyncio.gather(watch, return_exceptions=True)
            mark1 = await watch_conn.fetchrow(_MARK_SQL)
            if watcher.commit_start is None and watch_error is None:
                await watcher.poll()  # the backend may linger, idle after its COMMIT
        finally:
            await close_or_terminate(watch_conn)

        assert mark0 is not None and mark1 is not None
        load_s, commit_s = split_restore(
            mark0["now"], watcher.commit_start, mark1["now"], client_seconds
        )
        wal0, wal1 = int(mark0["wal"]), int(mark1["wal"])
        split_wal = wal1 if watcher.commit_wal is None else watcher.commit_wal
        load = PhaseHandle(rows=n, detail={"wal_bytes": split_wal - wal0})
        commit = PhaseHandle(detail={"wal_bytes": wal1 - split_wal})
        if watcher.commit_start is None:
            if isinstance(watch_error, BaseException):
                why = f"not observed: the watcher failed ({watch_error})"
            elif not watcher.seen:
                why = "not observed: pg_restore's session never appeared in pg_stat_activity"
            else:
                why = "shorter than the poll interval"
            commit.detail["commit"] = why
        return (load_s, load), (commit_s, commit)


WORKLOAD = RestoreWorkload
