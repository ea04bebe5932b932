"""SQL shared by every workload: the lab schema, DDL for the knobs, and small session helpers.

Workloads build their tables with `create_table_sql` / `table_name` (so a variant's table kind
is honoured everywhere), read sizes and plans through `relation_pages` / `explain_plan`, count
rows from a command status with `rows_affected`, and end sessions with `close_or_terminate`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

import asyncpg

from explorer.models import FkTiming, TableKind, Toast
from explorer.server.connect import APP_PREFIX

SCHEMA = "pgwx_lab"
"""Base name of pgwx's schemas: a run works in `pgwx_lab_<run id>` (see `schema()`), so two
pgwx on one server never share one; bare `pgwx_lab` is used outside a run (tests, tools)."""

_RUN: ContextVar[str | None] = ContextVar("pgwx_run", default=None)
"""The run id the current task works for (set by the runner for the life of a run)."""


@contextlib.contextmanager
def run_scope(run_id: str) -> Iterator[None]:
    """Within this block (and the tasks it starts), `schema()` and the workload's
    application_name belong to run `run_id`."""
    token = _RUN.set(run_id)
    try:
        yield
    finally:
        _RUN.reset(token)


def schema_for(run_id: str) -> str:
    """The schema of run `run_id` (a valid unquoted identifier)."""
    return f"{SCHEMA}_{run_id.replace('-', '_').lower()}"


MARKER_PREFIX = "pgwx run "
"""Comment pgwx writes on each schema and role it makes: the prefix, then the run id. Only
what carries the marker of its own name's run is pgwx's (see `is_marked`)."""


def marker(run_id: str) -> str:
    """The comment that makes a schema or role provably pgwx's own, for run `run_id`."""
    return f"{MARKER_PREFIX}{run_id}"


def marked_run(comment: str | None) -> str | None:
    """The run id a marker comment names; None when the comment is not pgwx's marker."""
    if not comment or not comment.startswith(MARKER_PREFIX):
        return None
    return comment[len(MARKER_PREFIX) :]


def marked_schema_run(name: str, comment: str | None) -> str | None:
    """The run whose schema `name` provably is (marker and name agree); None otherwise.

    A user's `pgwx_lab_mydata`, bare `pgwx_lab` or `pgwx_lab_<a run id pgwx never made>`
    carries no marker, so it is never taken for pgwx's.
    """
    run = marked_run(comment)
    return run if run is not None and schema_for(run) == name else None


async def create_marked_schema(conn: asyncpg.Connection, run_id: str) -> str:
    """Create run `run_id`'s schema with its marker, in one transaction.

    Raises:
        asyncpg.DuplicateSchemaError: a schema of that name exists (someone else's).
    """
    name = schema_for(run_id)
    async with conn.transaction():
        await conn.execute(f"CREATE SCHEMA {name}")
        await conn.execute(f"COMMENT ON SCHEMA {name} IS '{marker(run_id)}'")
    return name


def foreign_schema(name: str) -> str:
    """The sentence for a schema of pgwx's name that pgwx did not make."""
    return (
        f"a schema named {name} already exists and pgwx did not make it; pgwx leaves it "
        "alone: rename or drop it, then run again"
    )


def schema() -> str:
    """The schema the current run works in: the only one pgwx creates objects in."""
    run = _RUN.get()
    return schema_for(run) if run else SCHEMA


def work_purpose(tag: str) -> str:
    """`Target.connect` purpose of a workload session: `work-<run id>-<tag>` inside a run."""
    run = _RUN.get()
    return f"work-{run}-{tag}" if run else f"work-{tag}"


def work_app(tag: str) -> str:
    """Full application_name of a workload session or client tool (pgbench, pg_restore)."""
    return f"{APP_PREFIX}-{work_purpose(tag)}"


def work_prefix() -> str:
    """application_name prefix of exactly this run's workload sessions (sampler, cancel)."""
    run = _RUN.get()
    return f"{APP_PREFIX}-work-{run}-" if run else f"{APP_PREFIX}-work"


# --------------------------------------------------------------------------- DDL helpers


def table_name(name: str, kind: TableKind) -> str:
    """Schema-qualified name: temporary tables live in the session's pg_temp."""
    return f"pg_temp.{name}" if kind is TableKind.TEMPORARY else f"{schema()}.{name}"


def create_table_sql(name: str, columns: str, kind: TableKind, with_: str = "") -> str:
    """CREATE [UNLOGGED|TEMPORARY] TABLE for the variant's table kind."""
    prefix = {
        TableKind.LOGGED: "",
        TableKind.UNLOGGED: "UNLOGGED ",
        TableKind.TEMPORARY: "TEMPORARY ",
    }[kind]
    tail = f" WITH ({with_})" if with_ else ""
    return f"CREATE {prefix}TABLE {table_name(name, kind)} ({columns}){tail}"


def fk_clause(fk: FkTiming, ref: str) -> str:
    """Column-level REFERENCES for FKs that exist during the load; empty otherwise."""
    if fk is FkTiming.IMMEDIATE:
        return f" REFERENCES {ref}"
    if fk is FkTiming.DEFERRED:
        return f" REFERENCES {ref} DEFERRABLE INITIALLY DEFERRED"
    if fk is FkTiming.NOT_ENFORCED:
        return f" REFERENCES {ref} NOT ENFORCED"
    return ""


def fk_after_load_steps(fk: FkTiming, table: str, column: str, ref: str) -> list[tuple[str, str]]:
    """(phase, SQL) steps that add the FK after the load, for after-load and not-valid."""
    add = f"ALTER TABLE {table} ADD CONSTRAINT pgwx_fk FOREIGN KEY ({column}) REFERENCES {ref}"
    if fk is FkTiming.AFTER_LOAD:
        return [("add-fk", add)]
    if fk is FkTiming.NOT_VALID:
        return [
            ("add-fk", add + " NOT VALID"),
            ("validate-fk", f"ALTER TABLE {table} VALIDATE CONSTRAINT pgwx_fk"),
        ]
    return []


def toast_sql(toast: Toast, table: str, column: str) -> str:
    """Set the column's compression or storage for the variant (explicit even for pglz)."""
    if toast is Toast.EXTERNAL:
        return f"ALTER TABLE {table} ALTER COLUMN {column} SET STORAGE EXTERNAL"
    return f"ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION {toast.value}"


# --------------------------------------------------------------------------- session helpers


async def relation_pages(conn: Any, relation: str) -> int:
    """Size of a relation's main fork in blocks (`relation` is anything regclass accepts)."""
    return int(
        await conn.fetchval(
            "SELECT pg_relation_size($1::regclass) / current_setting('block_size')::int",
            relation,
        )
    )


async def explain_plan(conn: Any, sql: str, *options: str) -> dict[str, Any]:
    """The top plan node of `EXPLAIN (options..., FORMAT JSON) sql`, parsed.

    Args:
        conn: The session to plan in (its settings, e.g. SET LOCAL enable_seqscan, apply).
        sql: The statement to explain.
        options: EXPLAIN options before FORMAT JSON, e.g. "ANALYZE", "COSTS OFF".
    """
    raw = await conn.fetchval(f"EXPLAIN ({', '.join([*options, 'FORMAT JSON'])}) {sql}")
    # asyncpg returns json as text unless a codec is set on the connection.
    plan: dict[str, Any] = (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]
    return plan


def rows_affected(status: str) -> int:
    """Rows a command reports in its status tag ("INSERT 0 42", "UPDATE 42", "COPY 42")."""
    return int(status.split()[-1])


async def close_or_terminate(conn: asyncpg.Connection, timeout: float = 5.0) -> None:
    """Close a session politely; drop it when closing fails or takes longer than `timeout`.

    A broken connection fails to close in many ways, and a cancelled caller must not leave
    the socket open, so every way out ends with the connection gone.
    """
    try:
        await asyncio.wait_for(conn.close(), timeout)
    except asyncio.CancelledError:
        conn.terminate()
        raise
    except Exception:
        pass  # a broken connection fails to close in many ways; it is dropped below
    if not conn.is_closed():
        conn.terminate()
