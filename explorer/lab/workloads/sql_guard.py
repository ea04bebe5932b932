"""An early, friendly look at a profile's SQL before any of it runs; not the fence.

What keeps the SQL inside the run's schema is the server: it runs as a role that may do
nothing else (explorer.lab.safety.fence). This module only turns the plain cases into one clear
sentence that names the field, before a trial starts and in `pgwx check`:

- statements no profile needs and the fence refuses anyway (ALTER SYSTEM, CREATE ROLE or
  SCHEMA, GRANT, COPY … PROGRAM, SET ROLE, setting search_path, lo_export(),
  pg_terminate_backend() …) are named (`forbidden`);

- queries and DML (INSERT / UPDATE / DELETE / MERGE, also inside a WITH) are planned with
  `EXPLAIN (VERBOSE, FORMAT JSON)`; every ModifyTable node must write pgwx_lab or a pg_temp
  schema;
- other statements (TRUNCATE, ALTER, DROP, VACUUM, CREATE INDEX ON …) must not name an
  existing schema other than pgwx's in the part that says what they act on (before the first
  parenthesis, AS, SELECT, FROM or USING — what follows those is only read).

A statement that cannot be planned yet (it may use what setup creates) raises
`Unplannable`: it is never taken as harmless.
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
INTO = re.compile(
    r"\bINTO\s+(?:(?:TEMP|TEMPORARY|UNLOGGED|TABLE)\s+)*([A-Za-z_][A-Za-z0-9_]*)\.", re.I
)
ACTS_ON = re.compile(r"\(|\bAS\b|\bSELECT\b|\bFROM\b|\bUSING\b", re.I)


FORBIDDEN = (
    (r"^ALTER\s+SYSTEM\b", "ALTER SYSTEM"),
    (
        r"^(CREATE|ALTER|DROP)\s+(ROLE|USER|GROUP|SCHEMA|DATABASE|TABLESPACE|EXTENSION|"
        r"EVENT\s+TRIGGER|SERVER|SUBSCRIPTION|PUBLICATION|FOREIGN\s+DATA\s+WRAPPER)\b",
        "creating or changing roles, schemas, databases or extensions",
    ),
    (r"^(GRANT|REVOKE)\b", "GRANT / REVOKE"),
    (
        r"^(SET|RESET)\s+(SESSION\s+AUTHORIZATION|ROLE)\b|^SET\s+(SESSION|LOCAL)\s+ROLE\b",
        "changing the role",
    ),
    (
        r"^(SET|RESET)\s+((SESSION|LOCAL)\s+)?SEARCH_PATH\b|SET_CONFIG\s*\(\s*'SEARCH_PATH'",
        "changing search_path",
    ),
    (r"^COPY\b.*\bPROGRAM\b|^COPY\b.*\b(TO|FROM)\s+'", "COPY to or from a server file or program"),
    (
        r"\b(LO_IMPORT|LO_EXPORT|PG_TERMINATE_BACKEND|PG_CANCEL_BACKEND|PG_RELOAD_CONF|"
        r"PG_ROTATE_LOGFILE|PG_READ_FILE|PG_READ_BINARY_FILE|PG_LS_DIR|PG_STAT_FILE|DBLINK\w*)"
        r"\s*\(",
        "calling a server administration function",
    ),
)
"""(pattern on the comment-free, upper-cased statement, what it does)."""


class Unplannable(Exception):
    """A statement EXPLAIN cannot plan yet; str() is the server's reason."""


class OutsideFence(Exception):
    """Planning as the fenced role was refused a privilege; str() is the server's reason."""


def _plain(statement: str) -> str:
    """The statement without comments, identifier quotes or extra spaces (for the patterns)."""
    text = re.sub(r"--[^\n]*|/\*.*?\*/", " ", statement, flags=re.S)
    text = re.sub(r'"([A-Za-z_][A-Za-z0-9_$]*)"', r"\1", text)
    text = re.sub(r"\s*\.\s*", ".", text)
    return " ".join(text.split())


def forbidden(statement: str) -> str | None:
    """What a statement does that no profile may (see FORBIDDEN); None when nothing."""
    text = _plain(statement).upper()
    for pattern, what in FORBIDDEN:
        if re.search(pattern, text, re.S):
            return what
    return None


def not_allowed(where: str, what: str) -> str:
    """The one sentence for a statement `forbidden` names."""
    return (
        f"{where}: {what} is not allowed in a profile; pgwx runs your SQL as a role that may "
        "only work in the run's own schema"
    )


def unchecked(where: str, why: str) -> str:
    """The one sentence for a statement that cannot be checked when nothing fences it."""
    return (
        f"{where} cannot be checked before it runs ({why}), and with --trust-sql nothing "
        "else would stop it writing outside pgwx's schema; make it plannable on its own "
        "(no objects made by setup), or run without --trust-sql as a user with CREATEROLE"
    )


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
    """The user object this statement would write, or None.

    Run it inside a transaction: the EXPLAIN happens in a savepoint.

    Raises:
        Unplannable: EXPLAIN failed (say, it uses a table setup creates): not judged here.
        OutsideFence: the session's role may not use a table the statement names.
    """
    word = first_word(statement)
    if word in TRANSACTION_CONTROL:
        return None
    # SELECT … INTO makes a table: its plan has no ModifyTable node to look at.
    into = INTO.search(_plain(statement)) if word in ("select", "with") else None
    if into and into.group(1).lower() in schemas:
        return f"an object in schema {into.group(1)}"
    if word in PLANNABLE:
        try:
            async with conn.transaction():
                raw = await conn.fetchval(f"EXPLAIN (VERBOSE, FORMAT JSON) {statement}")
        except asyncpg.InsufficientPrivilegeError as exc:
            # Planned as the fenced role: the server names what lies outside the run's schema.
            raise OutsideFence(_first_line(exc)) from None
        except asyncpg.PostgresError as exc:
            raise Unplannable(_first_line(exc)) from None
        plan = (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]
        written = [name for name in _modified(plan) if not _allowed(name.split(".")[0])]
        return written[0] if written else None
    head = ACTS_ON.split(_plain(statement), maxsplit=1)[0]
    for schema in QUALIFIED.findall(head):
        if schema.lower() in schemas:
            return f"an object in schema {schema}"
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def outside_fence(where: str, why: str) -> str:
    """The one sentence for a statement the fenced role may not even plan."""
    return (
        f"{where} would write or read outside pgwx's schema ({why}); your SQL runs as a role "
        "that may only use the tables a profile declares (use {name} for them, and "
        "prepare.source to bring your data in)"
    )


def refusal(where: str, target: str) -> str:
    """The one sentence a profile gets when its SQL would write outside pgwx's schema."""
    return (
        f"{where} would write {target}, outside pgwx's schema; pgwx only writes the tables a "
        "profile declares (use {name} for them, and prepare.source to read yours)"
    )
