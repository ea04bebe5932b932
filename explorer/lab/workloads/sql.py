"""Your own load: the tables, data and SQL a profile describes, under the same knobs.

The profile declares tables (created by pgwx in its own schema, for every trial), an optional
prepare step that makes the data once per run (a query, a file, or rows read from one of the
user's tables inside a READ ONLY transaction), timed phases (an SQL script, a COPY of the
prepared data, or a pgbench script), and a verify query. pgwx applies the variant's table kind
to the tables that follow it, its foreign-key timing to the declared FKs that follow it, and
its TOAST setting to the named columns; the user never writes one DDL per variant.

The user's schemas are only read: the workload's session runs with `search_path = pgwx_lab`,
so an unqualified name can only mean one of pgwx's tables, and everything pgwx creates goes
when the runner drops its schema (or with the session, for TEMPORARY tables). A phase whose
SQL fails ends its trial with the server's one-line message; the run goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import asyncpg

from explorer.analysis.mechanism import fold_late
from explorer.analysis.units import human_bytes
from explorer.files import input_problem
from explorer.lab.scope import (
    close_or_terminate,
    create_table_sql,
    fk_clause,
    schema,
    table_name,
    toast_sql,
    work_app,
)
from explorer.lab.workloads.base import Params, TrialContext, Workload, WorkloadError
from explorer.lab.workloads.data_bounds import NOTE_LARGE
from explorer.lab.workloads.file_extension import parse_pgbench, pgbench_conninfo
from explorer.lab.workloads.sql_guard import (
    TRANSACTION_CONTROL,
    OutsideFence,
    Unplannable,
    first_word,
    forbidden,
    not_allowed,
    other_schemas,
    outside_fence,
    outside_write,
    pgbench_as_sql,
    refusal,
    unchecked,
)
from explorer.lab.workloads.sql_prepare import write_rows
from explorer.lab.workloads.sql_spec import (
    ForeignKeySpec,
    PhaseSpec,
    SqlParams,
    TableSpec,
    field_name,
    mentions,
    split_statements,
    substitute,
)
from explorer.models import Capabilities, FkTiming, Knobs, TableKind, Toast
from explorer.server.connect import Target

PREPARED = "prepared.copy"
"""The prepared data in the run's workdir (COPY text format)."""
ROWS = re.compile(r"^(?:INSERT \d+|UPDATE|DELETE|SELECT|COPY|MERGE|MOVE|FETCH) (\d+)$")


WATCH_SECONDS = 0.5
"""How often a pgbench phase's statements are looked at (held to `statement_seconds`)."""
COUNTED_STATEMENTS = 50
"""Most statements of one phase run one by one so that each one's rows count."""
WRITE_TAGS = {"INSERT", "UPDATE", "DELETE", "MERGE", "COPY"}
"""Command tags whose rows are rows written: a phase's rows are theirs when it has any."""


def status_rows(status: str | None) -> int | None:
    """Rows from a command tag ("INSERT 0 500" → 500); None for tags without a count."""
    match = ROWS.match((status or "").strip())
    return int(match.group(1)) if match else None


def one_line(exc: asyncpg.PostgresError) -> str:
    """The server's message on one line."""
    lines = str(exc).strip().splitlines()
    return lines[0].strip() if lines else type(exc).__name__


async def run_one(db: asyncpg.Connection, sql: str) -> str:
    """Run `sql` as exactly one statement; its command tag.

    The extended protocol's Parse takes one statement only ("cannot insert multiple commands
    into a prepared statement"), so text of a profile spliced into pgwx's DDL (a table's
    columns, its `with`, its indexes, a foreign key's columns) cannot add a second one.
    """
    statement = await db.prepare(sql)
    await statement.fetch()
    return statement.get_statusmsg()


class SqlWorkload(Workload):
    """Tables, data and timed SQL / COPY / pgbench phases described by the profile itself."""

    kind = "sql"
    follows = frozenset({"table_kind", "fk", "toast"})  # per declared table: see below
    title = "Your own tables and SQL, under the same knobs"
    params_model = SqlParams
    runs_user_sql = True
    params: SqlParams

    def __init__(self, params: Params) -> None:
        super().__init__(params)
        self._data: Path | None = None
        self._rows: int | None = None
        """Rows of the prepared data, when known (the COPY phases' expected rows)."""

    # ------------------------------------------------------------------ what a variant does
    def kind_of(self, table: TableSpec, knobs: Knobs) -> TableKind:
        """The table's kind in this variant."""
        return knobs.table_kind if table.table_kind else TableKind.LOGGED

    def declared(self, name: str) -> TableSpec:
        """A declared table by name."""
        return next(t for t in self.params.tables if t.name == name)

    def names(self, knobs: Knobs) -> dict[str, str]:
        """What `{name}` stands for in this variant: tables, sizes, constants, schema."""
        out = {k: str(v) for k, v in self.params.constants.items()}
        out.update({k: str(v) for k, v in self.params.sizes.items()})
        out["schema"] = schema()
        for t in self.params.tables:
            out[t.name] = table_name(t.name, self.kind_of(t, knobs))
        return out

    def fk_timing(self, fk: ForeignKeySpec, knobs: Knobs) -> FkTiming:
        """The FK's timing in this variant."""
        return knobs.fk if fk.follows_knob else FkTiming.IMMEDIATE

    def create_steps(self, knobs: Knobs) -> list[str]:
        """CREATE TABLE / SET COMPRESSION / CREATE INDEX statements, in order, for a variant."""
        names = self.names(knobs)
        steps: list[str] = []
        for t in self.params.tables:
            kind = self.kind_of(t, knobs)
            columns = substitute(t.columns.strip(), names)
            for fk in t.foreign_keys:
                clause = fk_clause(
                    self.fk_timing(fk, knobs), f"{names[fk.ref_table]} ({fk.ref_columns})"
                )
                if clause:
                    columns += f", FOREIGN KEY ({fk.columns}){clause}"
            steps.append(create_table_sql(t.name, columns, kind, with_=t.with_))
            steps += [toast_sql(knobs.toast, names[t.name], col) for col in t.toast]
            steps += [
                f"CREATE INDEX ON {names[t.name]} {substitute(ix, names)}" for ix in t.indexes
            ]
        return steps

    def fk_steps(self, knobs: Knobs) -> dict[str, list[tuple[str, str]]]:
        """Phase name → timed (phase, SQL) steps that add FKs after it (after-load, not-valid)."""
        names = self.names(knobs)
        late = [
            (t, i, fk)
            for t in self.params.tables
            for i, fk in enumerate(t.foreign_keys, start=1)
            if self.fk_timing(fk, knobs) in (FkTiming.AFTER_LOAD, FkTiming.NOT_VALID)
        ]
        out: dict[str, list[tuple[str, str]]] = {}
        for t, i, fk in late:
            timing = self.fk_timing(fk, knobs)
            constraint = f"pgwx_fk_{t.name}_{i}"
            tag = "" if len(late) == 1 else f"-{t.name}-{i}"
            add = (
                f"ALTER TABLE {names[t.name]} ADD CONSTRAINT {constraint} FOREIGN KEY "
                f"({fk.columns}) REFERENCES {names[fk.ref_table]} ({fk.ref_columns})"
            )
            steps = [(f"add-fk{tag}", add)]
            if timing is FkTiming.NOT_VALID:
                steps = [
                    (f"add-fk{tag}", add + " NOT VALID"),
                    (
                        f"validate-fk{tag}",
                        f"ALTER TABLE {names[t.name]} VALIDATE CONSTRAINT {constraint}",
                    ),
                ]
            out.setdefault(fk.add_after or self.params.phases[-1].name, []).extend(steps)
        return out

    def describe(self, knobs: Knobs) -> list[str]:
        """What a trial of this variant does, one line per step (for `pgwx check`)."""
        names = self.names(knobs)
        lines = [f"create: {' '.join(s.split())}" for s in self.create_steps(knobs)]
        if self.params.setup.strip():
            lines.append("setup (untimed): the setup SQL")
        after = self.fk_steps(knobs)
        for p in self.params.phases:
            if p.kind == "copy":
                what = f"COPY the prepared data into {names[p.copy_ or '']}"
            elif p.kind == "pgbench":
                amount = (
                    f"{p.duration:g} s" if p.duration else f"{p.transactions} transactions each"
                )
                what = f"pgbench, {p.clients} client(s), {amount}"
            else:
                what = "SQL" + (" in one transaction, COMMIT timed apart" if p.commit_apart else "")
            lines.append(f"phase {p.name}: {what}")
            lines += [f"phase {name}: {sql}" for name, sql in after.get(p.name, [])]
        if self.params.verify.strip():
            lines.append("verify: the verify query, into the notes")
        return lines

    def statements(
        self, names: dict[str, str], *, prepare: bool = True
    ) -> list[tuple[tuple[Any, ...], str]]:
        """(TOML location, statement) of every SQL statement the profile holds, in order.

        Args:
            names: What `{name}` stands for.
            prepare: Include the prepare query (it runs once, as the read role, not in trials).
        """
        p = self.params
        out: list[tuple[tuple[Any, ...], str]] = []

        def add(loc: tuple[Any, ...], script: str) -> None:
            out.extend((loc, s) for s in split_statements(substitute(script, names)))

        query = self.prepare_query()
        if prepare and query is not None and p.prepare is not None:
            add(("params", "prepare", p.prepare.kind), query)
        add(("params", "setup"), p.setup)
        for i, phase in enumerate(p.phases):
            if phase.sql is not None:
                add(("params", "phases", i, "sql"), phase.sql)
            if phase.pgbench is not None:
                add(("params", "phases", i, "pgbench"), pgbench_as_sql(phase.pgbench))
        add(("params", "verify"), p.verify)
        return out

    async def guard(self, db: asyncpg.Connection, names: dict[str, str], fenced: bool) -> None:
        """Refuse, before any of it runs, SQL that plainly would write outside pgwx's schema.

        An early, friendly error only: the fence (the role the session logs in as) is what
        stops the rest. Unfenced (--trust-sql), a statement that cannot be planned now is
        refused too, as nothing else would stop it.
        """
        schemas = await other_schemas(db)
        for loc, statement in self.statements(names, prepare=False):
            if loc == ("params", "verify"):
                # Read from inside a subquery (`_verify`), where the server takes no
                # data-modifying WITH and no SELECT INTO: it cannot write. Not planned here
                # either: EXPLAIN VERBOSE would send back a 50 MB constant it folded.
                continue
            what = forbidden(statement)
            if what:
                raise WorkloadError(not_allowed(field_name(loc), what))
            try:
                written = await outside_write(db, statement, schemas)
            except OutsideFence as exc:
                raise WorkloadError(outside_fence(field_name(loc), str(exc))) from None
            except Unplannable as exc:
                if fenced:
                    continue  # it may use what setup creates; the server's fence decides
                raise WorkloadError(unchecked(field_name(loc), str(exc))) from None
            if written:
                raise WorkloadError(refusal(field_name(loc), written))

    # ------------------------------------------------------------------ availability
    def unavailable_reason(self, knobs: Knobs, caps: Capabilities) -> str | None:
        p = self.params
        if knobs.pregrown or knobs.load_in_create_txn:
            return "the sql workload has no pre-grown or create-in-transaction load"
        following = [t for t in p.tables if t.table_kind]
        if knobs.table_kind is not TableKind.LOGGED and not following:
            return "no declared table follows table_kind (table_kind = false on every one)"
        if knobs.fk is not FkTiming.NONE and not any(
            fk.follows_knob for t in p.tables for fk in t.foreign_keys
        ):
            return "the fk knob is set but no declared foreign key follows it"
        if knobs.toast is not Toast.PGLZ and not any(t.toast for t in p.tables):
            return "the toast knob is set but no table names a column in toast = [...]"
        if knobs.table_kind is TableKind.TEMPORARY:
            for phase in p.phases:
                used = [
                    t.name for t in following if phase.pgbench and mentions(phase.pgbench, t.name)
                ]
                if used:
                    return (
                        f"TEMPORARY tables live in one session, and phase {phase.name} loads "
                        f"{used[0]} through pgbench's own sessions"
                    )
        for t in p.tables:
            for fk in t.foreign_keys:
                if fk.ref_table == t.name:
                    continue
                mine, theirs = (
                    self.kind_of(t, knobs),
                    self.kind_of(self.declared(fk.ref_table), knobs),
                )
                temp = TableKind.TEMPORARY
                if (mine is temp) != (theirs is temp) or (
                    mine is TableKind.LOGGED and theirs is TableKind.UNLOGGED
                ):
                    return (
                        f"a {mine.value} {t.name} cannot have a foreign key onto a "
                        f"{theirs.value} {fk.ref_table} (set table_kind alike on both)"
                    )
        return None

    def relations(self, knobs: Knobs) -> list[str]:
        return [
            table_name(t.name, self.kind_of(t, knobs))
            for t in self.params.tables
            if self.kind_of(t, knobs) is not TableKind.TEMPORARY
        ]

    # ------------------------------------------------------------------ running
    def source_tables(self) -> list[str]:
        prep = self.params.prepare
        return [prep.source] if prep is not None and prep.source is not None else []

    def prepare_query(self) -> str | None:
        """The query that makes the data (prepare sql or source); None for a file."""
        prep = self.params.prepare
        if prep is None or prep.file is not None:
            return None
        if prep.sql is not None:
            return substitute(prep.sql.strip().rstrip(";"), self.names(Knobs()))
        order = f" ORDER BY {prep.order_by}" if prep.order_by else ""
        return f"SELECT {prep.columns} FROM {prep.source}{order} LIMIT {prep.limit}"

    async def prepare(self, target: Target, caps: Capabilities, workdir: Path) -> None:
        prep = self.params.prepare
        if prep is None:
            return
        if prep.file is not None:
            self._data = Path(prep.file)
            problem = input_problem(self._data)
            if problem is not None:
                raise WorkloadError(f"the prepare file {prep.file} {problem}")
            size = self._data.stat().st_size
            if size > self.bounds.prepared_bytes:
                raise WorkloadError(
                    self.bounds.too_much(
                        f"the prepare file {prep.file}",
                        human_bytes(size),
                        human_bytes(self.bounds.prepared_bytes),
                    )
                )
            return
        query = self.prepare_query()
        assert query is not None
        path = workdir / PREPARED
        # `target` logs in as the run's read role (see explorer.lab.safety.fence): the query is
        # one statement in a READ ONLY transaction, and its rows are written by pgwx.
        conn = await target.connect("prepare")
        try:
            await conn.execute(f"SET search_path = {schema()}")
            self._rows = await asyncio.wait_for(
                write_rows(conn, query, path, self.bounds), self.params.statement_seconds
            )
        except asyncpg.PostgresError as exc:
            raise WorkloadError(f"prepare failed: {one_line(exc)}") from None
        except TimeoutError:
            raise WorkloadError(self._too_long("prepare")) from None
        finally:
            await close_or_terminate(conn)
        self._data = path

    async def trial(self, ctx: TrialContext) -> None:
        db, knobs = ctx.db, ctx.knobs
        names = self.names(knobs)
        await db.execute(f"SET search_path = {schema()}")
        drop = ", ".join(names[t.name] for t in reversed(self.params.tables))
        await _drop_tables(db, drop)
        for step in self.create_steps(knobs):
            await self._run(db, "create", step, one=True)
        await self.guard(db, names, ctx.fenced)
        if self.params.setup.strip():
            await self._run(db, "setup", substitute(self.params.setup, names))
        await ctx.settle()
        after = self.fk_steps(knobs)
        for phase in self.params.phases:
            await self._phase(ctx, phase, names)
            for name, sql in after.get(phase.name, []):
                async with ctx.phase(name):
                    await self._run(db, name, sql, one=True)
        if self.params.verify.strip():
            note = await self._verify(db, substitute(self.params.verify, names))
            if note is not None and ctx.phases:
                ctx.phases[-1].detail["verify"] = note
        await _drop_tables(db, drop)

    async def _phase(self, ctx: TrialContext, phase: PhaseSpec, names: dict[str, str]) -> None:
        db = ctx.db
        if phase.kind == "copy":
            assert self._data is not None and phase.copy_ is not None, "prepare() made the data"
            table = self.declared(phase.copy_)
            temp = self.kind_of(table, ctx.knobs) is TableKind.TEMPORARY
            prep = self.params.prepare
            fmt = prep.format if prep is not None and prep.file is not None else "text"
            async with ctx.phase(phase.name, expected_rows=self._rows) as ph:
                copy = db.copy_to_table(
                    table.name,
                    source=str(self._data),
                    schema_name="pg_temp" if temp else schema(),
                    format=fmt,
                    header=bool(prep and prep.file and prep.header) or None,
                )
                try:
                    # bounded like every statement of the profile: a trigger of its own, or
                    # `SET statement_timeout = 0` in setup, cannot make the COPY hang the run
                    status = await asyncio.wait_for(copy, self.params.statement_seconds)
                except asyncpg.PostgresError as exc:
                    raise WorkloadError(f"phase {phase.name}: {one_line(exc)}") from None
                except TimeoutError:
                    raise WorkloadError(self._too_long(f"phase {phase.name}")) from None
                ph.rows = status_rows(status)
        elif phase.kind == "pgbench":
            await self._pgbench(ctx, phase, names)
        else:
            script = substitute(phase.sql or "", names)
            if phase.commit_apart:
                await db.execute("BEGIN")
            async with ctx.phase(phase.name) as ph:
                ph.rows = await self._script(db, phase.name, script, phase.commit_apart)
            if phase.commit_apart:
                async with ctx.phase(f"{phase.name}-commit"):
                    await self._run(db, f"{phase.name}-commit", "COMMIT")
                work, commit = ctx.phases[-2], ctx.phases[-1]
                if work.mechanism is not None and commit.mechanism is not None:
                    # The backend publishes its pg_stat_io and FPI counts when the
                    # transaction ends: they are the statement's work, not the COMMIT's, so
                    # they go on its row and the COMMIT's row says "work in <phase>".
                    fold_late(work.mechanism, commit.mechanism, work.name)

    async def _pgbench(self, ctx: TrialContext, phase: PhaseSpec, names: dict[str, str]) -> None:
        script = ctx.workdir / f"pgbench-{phase.name}.sql"
        script.write_text(substitute(phase.pgbench or "", names))
        args = ["pgbench", "-n", "-c", str(phase.clients), "-j", str(min(phase.clients, 2))]
        if phase.duration:
            args += ["-T", str(max(1, round(phase.duration)))]
        else:
            args += ["-t", str(phase.transactions)]
        user = ctx.target.overrides.get("user")
        args += ["-f", str(script), pgbench_conninfo(ctx.target.dsn, work_app("pgbench"), user)]
        async with ctx.phase(phase.name) as ph:
            try:
                facts = parse_pgbench(await self._watched(ctx, ctx.run_tool(args), phase.name))
            except WorkloadError as exc:
                if str(exc).startswith(f"phase {phase.name}:"):
                    raise
                raise WorkloadError(f"phase {phase.name}: {exc}") from None
            ph.rows = facts.pop("done")
            ph.detail.update(facts)

    async def _watched(self, ctx: TrialContext, tool: Awaitable[str], phase: str) -> str:
        """A pgbench phase's output, its sessions' statements held to `statement_seconds`.

        pgbench's statements are not pgwx's to wrap, and its script may `SET
        statement_timeout = 0`: pgwx looks at its sessions from the trial's own session
        every WATCH_SECONDS and, when a statement has run longer than the bound, kills
        pgbench (its sessions are ended with the trial's) and fails the trial saying so.
        """
        task = asyncio.ensure_future(tool)
        bound = self.params.statement_seconds
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=min(WATCH_SECONDS, bound))
                if done:
                    return task.result()
                longest = await ctx.db.fetchval(
                    "SELECT max(extract(epoch FROM clock_timestamp() - query_start)) "
                    "FROM pg_stat_activity WHERE application_name = $1 AND state = 'active'",
                    work_app("pgbench"),
                )
                if longest is not None and float(longest) > bound:
                    raise WorkloadError(self._too_long(f"phase {phase}"))
        finally:
            if not task.done():
                task.cancel()  # run_tool kills pgbench
                await asyncio.wait({task})

    async def _script(
        self, db: asyncpg.Connection, step: str, script: str, in_block: bool
    ) -> int | None:
        """Run a phase's SQL; the rows of every statement, not only the last one's.

        A string of several statements returns only its last command tag, so two UPDATEs
        reported the second's rows. Up to `COUNTED_STATEMENTS` statements run one by one in
        one transaction — what the server does with the string (an implicit block), at a
        round trip each — and their rows add up (the writes' only, when there are writes).
        Longer scripts, or ones with their own BEGIN/COMMIT, run as one string; their rows
        are then unknown rather than the last statement's.
        """
        statements = split_statements(script)
        if len(statements) <= 1:
            return status_rows(await self._run(db, step, script))
        own = any(first_word(s) in TRANSACTION_CONTROL for s in statements)
        if own or len(statements) > COUNTED_STATEMENTS:
            await self._run(db, step, script)
            return None
        if not in_block:
            await db.execute("BEGIN")
        tags: list[tuple[str, int]] = []
        try:
            for statement in statements:
                status = await self._run(db, step, statement)
                rows = status_rows(status)
                if rows is not None:
                    tags.append((status.split()[0].upper(), rows))
            if not in_block:
                await self._run(db, step, "COMMIT")
        except WorkloadError:
            if not in_block:
                with contextlib.suppress(asyncpg.PostgresError, OSError):
                    await db.execute("ROLLBACK")
            raise
        writes = [n for tag, n in tags if tag in WRITE_TAGS]
        counted = writes or [n for _, n in tags]
        return sum(counted) if counted else None

    async def _run(self, db: asyncpg.Connection, step: str, sql: str, *, one: bool = False) -> str:
        """Run a step's SQL (`one`: pgwx's DDL around the profile's text, one statement),
        cancelled after the profile's `statement_seconds` whatever the session's settings."""
        try:
            work = run_one(db, sql) if one else db.execute(sql)
            return str(await asyncio.wait_for(work, self.params.statement_seconds))
        except asyncpg.PostgresError as exc:
            raise WorkloadError(f"{_step_label(step)}: {one_line(exc)}") from None
        except TimeoutError:
            raise WorkloadError(self._too_long(_step_label(step))) from None

    async def _verify(self, db: asyncpg.Connection, sql: str) -> str | None:
        """The verify query's first row as 'name=value, …', cut on the server.

        Each value comes back at most `bounds.note_chars` characters long with its full
        length beside it: a verify returning 50 MB sends a few kB, not 50 MB then cut here.
        The query stays one statement (a prepared statement takes only one), run as the
        fenced role like every other statement of the profile.
        """
        query = sql.strip().rstrip(";")
        wrapped = (
            "SELECT key, left(value, $1::int) AS value, length(value) AS length "
            f"FROM json_each_text((SELECT row_to_json(v) FROM ({query}\n) v LIMIT 1))"
        )
        try:
            rows = await asyncio.wait_for(
                db.fetch(wrapped, self.bounds.note_chars), self.params.statement_seconds
            )
        except asyncpg.PostgresSyntaxError as exc:
            raise WorkloadError(
                f"verify: {one_line(exc)} (the verify query must be one query pgwx can "
                "select from: SELECT, VALUES, TABLE or WITH … SELECT)"
            ) from None
        except asyncpg.PostgresError as exc:
            raise WorkloadError(f"verify: {one_line(exc)}") from None
        except TimeoutError:
            raise WorkloadError(self._too_long("verify")) from None
        if not rows:
            return None
        return bounded_note(
            [(str(r["key"]), r["value"], int(r["length"] or 0)) for r in rows],
            self.bounds.note_chars,
            "" if self.bounds.allow_large else f", {NOTE_LARGE:,} with --allow-large",
        )

    def _too_long(self, where: str) -> str:
        return (
            f"{where}: a statement ran longer than {self.params.statement_seconds:g} s and was "
            "cancelled (pgwx bounds each statement by params.statement_seconds, whatever "
            "statement_timeout the SQL sets)"
        )


def bounded_note(cells: list[tuple[str, str | None, int]], limit: int, more: str = "") -> str:
    """'name=value, …' of (name, value as cut by the server, full length) cut to `limit`
    characters, saying how long it was and (`more`) how to keep more (a NULL reads None, as
    before)."""
    parts = [f"{name}={'None' if value is None else value}" for name, value, _ in cells]
    text = ", ".join(parts)
    full = sum(len(name) + 1 + (4 if value is None else length) for name, value, length in cells)
    full += 2 * (len(cells) - 1)
    if full <= limit and len(text) <= limit:
        return text
    return f"{text[:limit]}… (cut: {full:,} characters; notes keep {limit:,}{more})"


DROP_LOCK_WAIT = "10s"
"""How long pgwx's own DROP of a trial's tables waits for a lock (a profile's prepared
transaction or a session it left may hold one for ever)."""


async def _drop_tables(db: asyncpg.Connection, tables: str) -> None:
    """Drop the trial's tables, waiting at most DROP_LOCK_WAIT for a lock the profile holds."""
    try:
        async with db.transaction():
            await db.execute(f"SET LOCAL lock_timeout = '{DROP_LOCK_WAIT}'")
            await db.execute(f"DROP TABLE IF EXISTS {tables} CASCADE")
    except asyncpg.LockNotAvailableError:
        raise WorkloadError(
            f"the trial's tables could not be dropped: something the profile left (a prepared "
            f"transaction, another session) held a lock on them for {DROP_LOCK_WAIT}"
        ) from None


def _step_label(step: str) -> str:
    return step if step in ("create", "setup") else f"phase {step}"


WORKLOAD = SqlWorkload
