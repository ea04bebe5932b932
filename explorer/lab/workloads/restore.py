"""Experiment 1: foreign-key timing on a data-only restore, with load and COMMIT timed apart.

Seed 000_c96f8fd18b80eeaf.txt: `parent(id serial primary key, val text)` with one row, a child
`(id serial, parent_id int, val text, created_at timestamp)` filled with
`parent_id=1, val=repeat('hoge',100)`, `pg_dump -Fc`, then per trial a fresh child and
`pg_restore --data-only --single-transaction --table=child`. The child's foreign key follows
the variant: none, immediate, DEFERRABLE INITIALLY DEFERRED, added after the load, or added
NOT VALID and then validated.

pg_restore is one process and one transaction, so its COPY and its COMMIT cannot be timed
from the client. On a server pgwx owns, pg_restore's session runs with
`log_min_duration_statement=0` (through PGOPTIONS; pgwx is the superuser there) and the COMMIT
is the duration the server itself logged for that backend's `COMMIT` (microseconds). Elsewhere
a second session watches `pg_stat_activity` for pg_restore's backend (it runs with
`application_name` pgwx-work-restore): the COMMIT starts at its `query_start` and ends at its
`state_change` when a poll finds it idle, or between the last poll that saw it running and the
first that found it gone; the commit phase's `commit_resolution` says which, and how wide.
The load is the client's monotonic total of pg_restore minus the COMMIT. (A DSN that sets its
own application_name overrides PGAPPNAME; the COMMIT is then reported as not observed.)
The phases' mechanism is split at the same instant (`TrialContext.split_mechanism`), except
what pg_restore's backend publishes only when its one transaction ends (FPI, its pg_stat_io):
that is on the load's row, and the COMMIT's says so (`restore_mechanisms`).

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

from explorer.analysis.mechanism import fold_late
from explorer.lab.scope import (
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
    session_settings,
)
from explorer.models import (
    Capabilities,
    FkTiming,
    Knobs,
    PhaseMechanism,
    PhaseStarted,
    WriterIo,
)
from explorer.server.connect import APP_PREFIX, Target
from explorer.server.statement_log import LOG_ALL_OPTION, StatementDuration, StatementLog

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
SELECT c.now, c.wal, a.pid, a.query, a.state, a.query_start, a.state_change, {copied} AS copied
FROM (SELECT clock_timestamp() AS now, pg_current_wal_insert_lsn() - '0/0'::pg_lsn AS wal) c
LEFT JOIN {activity} ON a.application_name = $1 AND a.pid <> pg_backend_pid()
"""
WATCH_SQL = _WATCH_SQL.format(
    copied="p.tuples_processed",
    activity="(pg_stat_activity a LEFT JOIN pg_stat_progress_copy p ON p.pid = a.pid)",
)
"""The watcher's poll on PostgreSQL 14+ (pg_stat_progress_copy exists); always one row."""
WATCH_SQL_13 = _WATCH_SQL.format(copied="NULL::bigint", activity="pg_stat_activity a")
"""The same before 14: no COPY progress, so every poll is a fast one."""
_MARK_SQL = "SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn AS wal"
"""The WAL insert position, read just before and just after pg_restore."""
LOG_RESOLUTION = "server log, 0.001 ms"
"""commit_resolution when the COMMIT's duration is the one the server logged."""
LOG_WAIT_SECONDS = 2.0
"""How long to wait for pg_restore's COMMIT line to reach the server log."""


class RestoreParams(Params):
    """Size of the dump that every trial restores."""

    SCALED: ClassVar[tuple[str, ...]] = ("rows",)
    ROW_BYTES: ClassVar[int] = 450
    """Repeat('hoge', 100) and three narrow columns."""
    rows: int = Field(default=1_000_000, ge=1)
    """Child rows in the dump (the article used 1,000,000 of repeat('hoge', 100))."""


def create_child_sql(fk: FkTiming) -> str:
    """The child table as the variant wants it during the load (FK only for immediate/deferred)."""
    columns = CHILD_COLUMNS.format(fk=fk_clause(fk, parent_table()))
    return f"CREATE TABLE {child_table()} ({columns}) WITH ({NO_AUTOVACUUM})"


async def fk_state(conn: asyncpg.Connection) -> str:
    """The child's foreign key as the catalog has it: none, immediate, deferred, not valid…"""
    rows = await conn.fetch(
        """SELECT condeferrable, condeferred, convalidated,
                  (to_jsonb(c) ->> 'conenforced')::bool IS NOT FALSE AS enforced
           FROM pg_constraint c
           WHERE conrelid = $1::regclass AND contype = 'f'""",
        child_table(),
    )
    if not rows:
        return "none"
    if len(rows) > 1:
        return f"{len(rows)} foreign keys"
    r = rows[0]
    if not r["enforced"]:
        return "not enforced"  # 18+: declared, never checked (and never validated)
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
    FkTiming.NOT_ENFORCED: ("not enforced", "not enforced"),
}
"""What pg_constraint must say about the child's FK (while pg_restore loads, at the end)."""


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def commit_from_watcher(watcher: CommitWatcher) -> tuple[float, str]:
    """(seconds, resolution) of pg_restore's COMMIT as the watcher's polls bound it.

    The start is the server's `query_start`. The end is its `state_change` when a poll found
    the backend idle after the COMMIT (exact), else the middle of the gap between the last
    poll that saw the COMMIT running and the first that found the backend gone. A COMMIT no
    poll saw is 0, shorter than the gap in which it must have run.
    """
    if watcher.commit_start is None:
        gap = watcher.unseen_gap()
        if gap is None:
            return 0.0, "not observed"
        return 0.0, f"polling, shorter than {_ms(gap)}"
    if watcher.commit_end is None:
        return 0.0, "polling, end not observed"
    if watcher.commit_end_exact:
        seconds = (watcher.commit_end - watcher.commit_start).total_seconds()
        return max(seconds, 0.0), "polling, state_change 0.001 ms"
    running = watcher.commit_running_at or watcher.commit_start
    half = (watcher.commit_end - running).total_seconds() / 2
    seconds = (watcher.commit_end - watcher.commit_start).total_seconds() - half
    return max(seconds, 0.0), f"polling, ±{_ms(half)}"


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
    """Polls pg_stat_activity for one application_name and bounds its COMMIT on the server clock.

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
        self.pid: int | None = None
        """Its backend's process id."""
        self.commit_start: dt.datetime | None = None
        self.commit_wal: int | None = None
        """WAL insert position when the COMMIT was first seen (bytes)."""
        self.commit_running_at: dt.datetime | None = None
        """Server time of the last poll that saw the COMMIT still running."""
        self.commit_end: dt.datetime | None = None
        """When the COMMIT had ended: its state_change, or the first poll without the backend."""
        self.commit_end_exact = False
        """commit_end is the backend's own state_change (it was seen idle after COMMIT)."""
        self.last_busy_at: dt.datetime | None = None
        """Server time of the last poll that saw the backend before any COMMIT."""
        self.gone_at: dt.datetime | None = None
        """Server time of the first poll that no longer found the backend."""
        self.polls = 0
        self.far_from_end = False
        """The last poll saw a COPY with less than NEAR_END of the rows done."""

    def unseen_gap(self) -> float | None:
        """Seconds between the last poll that saw the backend busy and the first without it."""
        if self.last_busy_at is None or self.gone_at is None:
            return None
        return (self.gone_at - self.last_busy_at).total_seconds()

    async def poll(self) -> None:
        """One look at pg_stat_activity."""
        rows = await self.conn.fetch(self.sql, self.appname)
        self.polls += 1
        self.far_from_end = False
        now = rows[0]["now"]
        present = [r for r in rows if r["pid"] is not None]
        for row in present:
            self.seen = True
            self.pid = row["pid"]
            if not _is_commit(row["query"]):
                if self.commit_start is None:
                    self.last_busy_at = now
            else:
                if self.commit_start is None:
                    self.commit_start = row["query_start"]
                    self.commit_wal = int(row["wal"])
                    if self.on_commit is not None:
                        self.on_commit()
                if row["state"] == "active":
                    self.commit_running_at = now
                elif self.commit_end is None:
                    self.commit_end = row["state_change"]
                    self.commit_end_exact = True
            copied = row["copied"]
            if copied is not None and self.expected_rows:
                self.far_from_end = copied < NEAR_END * self.expected_rows
        if not present and self.seen:
            if self.gone_at is None:
                self.gone_at = now
            if self.commit_start is not None and self.commit_end is None:
                self.commit_end = now

    async def settle_end(self, attempts: int = 50) -> None:
        """Poll after pg_restore exited until the COMMIT's end is bounded (or it never showed).

        The backend can outlive its client for a moment, still listed as it was.
        """
        for _ in range(attempts):
            await self.poll()
            if self.commit_end is not None or self.gone_at is not None or not self.seen:
                return
            await asyncio.sleep(POLL_SECONDS)

    async def run(self, stop: asyncio.Event) -> None:
        """Poll until `stop` is set."""
        while not stop.is_set():
            await self.poll()
            pause = SLOW_POLL_SECONDS if self.far_from_end else POLL_SECONDS
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(pause):
                    await stop.wait()


async def statement_log(target: Target, conn: asyncpg.Connection) -> StatementLog | None:
    """The server log to read pg_restore's statement durations from, when pgwx can.

    Only on a server pgwx owns (its log is a file pgwx wrote), only as a superuser (the
    per-session log_min_duration_statement needs one), and only when the log's lines carry
    the pid and application_name.
    """
    if target.bundled is None:
        return None
    row = await conn.fetchrow(
        "SELECT current_setting('is_superuser') AS su, current_setting('log_line_prefix') AS p,"
        " current_setting('logging_collector') AS c"
    )
    if row is None or row["su"] != "on":
        return None
    path = target.bundled.log_file
    return StatementLog(path) if StatementLog.usable(path, row["p"], row["c"]) else None


async def logged_commit(log: StatementLog, pid: int | None) -> StatementDuration | None:
    """pg_restore's COMMIT line from the server log (waits briefly for it to be written)."""
    deadline = time.monotonic() + LOG_WAIT_SECONDS
    while True:
        mine = [
            d
            for d in log.read()
            if d.app == restore_app()
            and (pid is None or d.pid == pid)
            and d.verb in {"COMMIT", "END"}
        ]
        if mine or time.monotonic() > deadline:
            return mine[-1] if mine else None
        await asyncio.sleep(0.02)


def restore_mechanisms(
    mechs: dict[str, PhaseMechanism], load: PhaseHandle, commit: PhaseHandle
) -> tuple[PhaseMechanism | None, PhaseMechanism | None]:
    """The load's and COMMIT's mechanisms from pg_restore's window(s), split at its COMMIT.

    One transaction publishes its FPI and pg_stat_io counts only at its end, so those go on
    the load's row (`fold_late`); WAL bytes come from the insert LSN at the split.
    """
    load_m = mechs.get("load")
    if load_m is None:
        return None, None
    commit_m = mechs.get("commit")
    if commit_m is None:
        # The COMMIT was over before a poll saw it: everything is in the load's window.
        commit_m = PhaseMechanism(
            wal_fpi=0 if load_m.wal_fpi is not None else None,
            wal_records=0 if load_m.wal_records is not None else None,
            writers=None
            if load_m.writers is None
            else {w: WriterIo(evicted=0) for w in load_m.writers},
            checkpoints=0 if load_m.checkpoints is not None else None,
            waits={},
            unknown=["COMMIT not seen apart from the load: its counters are on the load's row"],
        )
    fold_late(load_m, commit_m, "load")
    for m, handle in ((load_m, load), (commit_m, commit)):
        if isinstance(handle.detail.get("wal_bytes"), int):
            m.wal_bytes = handle.detail["wal_bytes"]
    return load_m, commit_m


class RestoreWorkload(Workload[RestoreParams]):
    """pg_restore --data-only --single-transaction into a child whose FK follows the variant."""

    kind = "restore"
    follows = frozenset({"fk"})
    title = "Data-only pg_restore with the FK immediate, deferred, after the load, or none"
    params_model = RestoreParams
    uses_other_sessions = True

    def relations(self, knobs: Knobs) -> list[str]:
        return [child_table()]

    async def prepare(self, target: Target, caps: Capabilities, workdir: Path) -> None:
        """Parent with one row, a filled child, and its data-only custom-format dump."""
        guard = session_settings(caps, self.params)
        conn = await target.connect("prepare", settings=guard)
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
                server_major=caps.major,
                settings=guard,
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
        mechs = await ctx.end_mechanism()
        load_m, commit_m = restore_mechanisms(mechs, load, commit)
        ctx.record("load", load_s, load, load_m)
        ctx.record("commit", commit_s, commit, commit_m)

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
            ctx.split_mechanism("commit")
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
            log = await statement_log(ctx.target, watch_conn)
            await ctx.begin_mechanism("load")
            wal0 = int(await watch_conn.fetchval(_MARK_SQL))
            ctx.emit(
                PhaseStarted(
                    at=ctx.clock(),
                    variant=ctx.variant,
                    repeat=ctx.repeat,
                    phase="load",
                    expected_rows=n,
                )
            )
            if log is not None:
                log.mark()
            stop = asyncio.Event()
            start = time.perf_counter()
            watch = asyncio.create_task(watcher.run(stop))
            try:
                await ctx.run_tool(
                    args, appname=restore_app(), pgoptions=LOG_ALL_OPTION if log else None
                )
                client_seconds = time.perf_counter() - start
            finally:
                stop.set()
                # A watcher failure must not hide pg_restore's own error; it is noted below.
                (watch_error,) = await asyncio.gather(watch, return_exceptions=True)
            wal1 = int(await watch_conn.fetchval(_MARK_SQL))
            if watch_error is None:
                await watcher.settle_end()
        finally:
            await close_or_terminate(watch_conn)

        logged = await logged_commit(log, watcher.pid) if log is not None else None
        if logged is not None:
            commit_s, resolution = logged.seconds, LOG_RESOLUTION
        else:
            commit_s, resolution = commit_from_watcher(watcher)
            if isinstance(watch_error, BaseException):
                resolution = f"not observed: the watcher failed ({watch_error})"
            elif not watcher.seen and watcher.commit_start is None:
                resolution = "not observed: pg_restore's session never appeared"
            if log is not None:
                resolution += " (no COMMIT line in the server log)"
        commit_s = min(commit_s, client_seconds)
        split_wal = wal1 if watcher.commit_wal is None else watcher.commit_wal
        load = PhaseHandle(rows=n, detail={"wal_bytes": split_wal - wal0})
        commit = PhaseHandle(detail={"wal_bytes": wal1 - split_wal})
        commit.detail["commit_resolution"] = resolution
        return (client_seconds - commit_s, load), (commit_s, commit)


WORKLOAD = RestoreWorkload
