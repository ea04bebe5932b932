"""Keep a profile's SQL from writing outside pgwx's schema, before any of it runs.

The workload's session already has `search_path = pgwx_lab`, so only a schema-qualified name
can reach the user's tables. Two checks look for one, without executing anything:

- queries and DML (INSERT / UPDATE / DELETE / MERGE, also inside a WITH) are planned with
  `EXPLAIN (VERBOSE, FORMAT JSON)`; every ModifyTable node must write pgwx_lab or a pg_temp
  schema;
- other statements (TRUNCATE, ALTER, DROP, VACUUM, CREATE INDEX ON …) must not name an
  existing schema other than pgwx's in the part that says what they act on (before the first
  parenthesis, AS, SELECT, FROM or USING — what follows those is only read).

A function that writes when called cannot be seen this way; the README says so.
"""

from __future__ import annotations

import json
import re
from typing import Any

import asyncpg

from explorer.lab.scope import schema as run_schema

PLANNABLE = {"select", "insert", "update", "delete", "with", "values", "table", "merge"}
"""First words of statements that PREPARE and EXPLAIN accept."""
TRANSACTION_CONTROL = {"begin", "commit", "end", "rollback", "start", "savepoint", "release"}
PGBENCH_VAR = re.compile(r"(?<![:\w]):([A-Za-z_][A-Za-z0-9_]*)")
QUALIFIED = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\.\s*[A-Za-z_\"]")
ACTS_ON = re.compile(r"\(|\bAS\b|\bSELECT\b|\bFROM\b|\bUSING\b", re.I)


def first_word(statement: str) -> str:
    """The statement's first keyword, lower case (comments skipped)."""
    text = re.sub(r"--[^\n]*|/\*.*?\*/", " ", statement, flags=re.S)
    words = re.findall(r"[A-Za-z]+", text)
    return words[0].lower() if words else ""


def pgbench_as_sql(script: str) -> str:
    """A pgbench script as plain SQL: meta-commands dropped, `:variables` as NULL."""
    lines = [ln for ln in script.splitlines() if not ln.lstrip().startswith("\\")]
    return PGBENCH_VAR.sub("NULL", "\n".join(lines))


def _allowed(schema: str) -> bool:
    return schema == run_schema() or schema.startswith("pg_temp")


async def other_schemas(conn: asyncpg.Connection) -> set[str]:
    """Schemas of this database that are not pgwx's (lower case)."""
    rows = await conn.fetch("SELECT nspname FROM pg_namespace")
    return {r["nspname"].lower() for r in rows if not _allowed(r["nspname"])}


def _modified(plan: dict[str, Any]) -> list[str]:
    out = []
    if plan.get("Node Type") == "ModifyTable" and plan.get("Schema"):
        out.append(f"{plan['Schema']}.{plan.get('Relation Name', '?')}")
    for child in plan.get("Plans", []):
        out += _modified(child)
    return out


async def outside_write(conn: asyncpg.Connection, statement: str, schemas: set[str]) -> str | None:
    """The user object this statement would write, or None (also when it cannot be planned).

    Run it inside a transaction: the EXPLAIN happens in a savepoint.
    """
    word = first_word(statement)
    if word in TRANSACTION_CONTROL:
        return None
    if word in PLANNABLE:
        try:
            async with conn.transaction():
                raw = await conn.fetchval(f"EXPLAIN (VERBOSE, FORMAT JSON) {statement}")
        except asyncpg.PostgresError:
            return None  # it may depend on what an earlier statement creates
        plan = (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]
        written = [name for name in _modified(plan) if not _allowed(name.split(".")[0])]
        return written[0] if written else None
    head = ACTS_ON.split(statement, maxsplit=1)[0]
    for schema in QUALIFIED.findall(head):
        if schema.lower() in schemas:
            return f"an object in schema {schema}"
    return None


def refusal(where: str, target: str) -> str:
    """The one sentence a profile gets when its SQL would write outside pgwx's schema."""
    return (
        f"{where} would write {target}, outside pgwx's schema; pgwx only writes the tables a "
        "profile declares (use {name} for them, and prepare.source to read yours)"
    )
