"""The `sql` workload's prepare read: one statement the server parses, rows written by pgwx.

The prepare query (or the `source` read) is sent as a prepared statement, which the server
accepts only as one statement, and its rows come through a cursor inside a READ ONLY
transaction. pgwx writes them to the COPY text file itself: the query is never spliced into
the text of another statement (`COPY (…) TO STDOUT` would let `SELECT 1) TO PROGRAM …` out).

Each column is received in the server's own text form (a text codec per scalar type, so the
file holds what COPY would have written); arrays of those are written back as array literals.
Other column types (composites, ranges) are refused with a sentence: cast them to text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import asyncpg

from explorer.lab.workloads.base import WorkloadError
from explorer.lab.workloads.data_bounds import DataBounds

FETCH_ROWS = 1000
"""Rows the cursor fetches at a time."""

_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_ARRAY_SPECIAL = set('{},"\\ \t\n\r\v\f')


def _raw(value: str) -> str:
    return value


def array_literal(items: list[Any]) -> str:
    """A list of server texts (nested for more dimensions) as a PostgreSQL array literal."""
    parts = []
    for item in items:
        if item is None:
            parts.append("NULL")
        elif isinstance(item, list):
            parts.append(array_literal(item))
        elif item == "" or item.upper() == "NULL" or _ARRAY_SPECIAL & set(item):
            parts.append('"' + item.replace("\\", "\\\\").replace('"', '\\"') + '"')
        else:
            parts.append(item)
    return "{" + ",".join(parts) + "}"


def copy_line(row: asyncpg.Record) -> str:
    """One row in COPY text format (tab-separated, \\N for NULL, backslash escapes)."""
    cells = []
    for value in row.values():
        if value is None:
            cells.append("\\N")
        else:
            text = array_literal(value) if isinstance(value, list) else str(value)
            cells.append(text.translate(_COPY_ESCAPES))
    return "\t".join(cells) + "\n"


async def _text_codecs(conn: asyncpg.Connection, stmt: Any) -> None:
    """Receive every column of `stmt` as the server's text; WorkloadError for other kinds."""
    for attr in stmt.get_attributes():
        kind = attr.type
        if kind.kind == "array":
            base = await conn.fetchrow(
                "SELECT e.typname, n.nspname, e.typtype::text AS typtype FROM pg_type a "
                "JOIN pg_type e ON e.oid = a.typelem JOIN pg_namespace n ON n.oid = e.typnamespace "
                "WHERE a.oid = $1",
                kind.oid,
            )
            name, schema, typtype = base["typname"], base["nspname"], base["typtype"]
        else:
            name, schema, typtype = kind.name, kind.schema, "b" if kind.kind == "scalar" else "c"
        if typtype not in ("b", "e", "d") or name in ("record", "unknown"):
            raise WorkloadError(
                f"prepare: column {attr.name} is of type {kind.name}, which pgwx cannot write "
                f"to its data file; cast it to text in the query ({attr.name}::text)"
            )
        await conn.set_type_codec(name, schema=schema, encoder=str, decoder=_raw, format="text")


async def write_rows(
    conn: asyncpg.Connection, query: str, path: Path, bounds: DataBounds | None = None
) -> int:
    """Run `query` as one read-only statement and write its rows to `path` as COPY text.

    Args:
        bounds: The run's bounds; the data stops at `bounds.prepared_bytes` with one sentence.

    Returns:
        The number of rows written.

    Raises:
        asyncpg.PostgresError: the server refused the query (more than one statement, a
            write, a missing privilege …).
        WorkloadError: a column of a type pgwx cannot write, or more data than the bound.
    """
    bounds = bounds or DataBounds()
    rows = written = 0
    async with conn.transaction(readonly=True):
        stmt = await conn.prepare(query)
        await _text_codecs(conn, stmt)
        stmt = await conn.prepare(query)  # again: the codecs apply to statements made after
        with path.open("w", encoding="utf-8", newline="") as out:
            async for row in stmt.cursor(prefetch=FETCH_ROWS):
                line = copy_line(row)
                written += len(line)
                if written > bounds.prepared_bytes:
                    raise WorkloadError(bounds.prepared_over(bounds.prepared_bytes, rows))
                out.write(line)
                rows += 1
    return rows
