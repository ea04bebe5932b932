"""The fence around a profile's own SQL: two roles pgwx makes per run, which the server limits.

A `workload = "sql"` profile's statements (its tables' columns and indexes, setup, phases,
verify and pgbench scripts) run connected as `pgwx_run_<run id>`, a login role that is no
superuser, has no CREATEROLE, CREATEDB, REPLICATION or BYPASSRLS, is a member of no role, and
has privileges only in the run's schema (USAGE, CREATE; TEMP where a variant needs it); its
default search_path is that schema, so pgbench's sessions (and a RESET ALL) stay there. The
prepare query and `source` read as `pgwx_read_<run id>`, which may create nothing and reads
through pg_read_all_data (where pgwx may grant it), inside a READ ONLY transaction. The
server, not a guess about the SQL, then refuses ALTER SYSTEM, COPY … PROGRAM, server-side
large-object import/export, CREATE SCHEMA/ROLE, reads and writes of the user's tables and
signals to other roles' backends.

Logging in as the role (not `SET ROLE`, which the SQL could `RESET`) is what makes it a fence.
Each role gets a random password that lives only in this process and in a child's PGPASSWORD;
the server is sent its SCRAM verifier, never the password (the statement may be logged).

Before the user's SQL runs, the fence is checked from the server's side: a table, sequence or
schema outside the run's that the role could still write (a grant to PUBLIC) is named and the
run refused. Everything pgwx makes carries a marker (a comment naming the run), and only what
carries the marker of a run that is gone is ever dropped.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import hmac
import secrets
from collections.abc import Callable

import asyncpg

from explorer.errors import PgwxError
from explorer.lab.scope import marked_run, marker
from explorer.server.connect import ConnectError, Target

WORK_PREFIX = "pgwx_run_"
READ_PREFIX = "pgwx_read_"

SCRAM_ITERATIONS = 4096


class FenceUnavailable(PgwxError, RuntimeError):
    """pgwx cannot fence the profile's SQL on this server; str() names what is missing."""


def role_names(run_id: str) -> tuple[str, str]:
    """(work role, read role) of run `run_id`: valid unquoted identifiers."""
    tail = run_id.replace("-", "_").lower()
    return f"{WORK_PREFIX}{tail}", f"{READ_PREFIX}{tail}"


def scram_verifier(password: str) -> str:
    """The SCRAM-SHA-256 verifier PostgreSQL stores for `password` (RFC 5802 / 7677)."""
    salt = secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, SCRAM_ITERATIONS)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    stored_key = hashlib.sha256(client_key).digest()
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()

    def b64(raw: bytes) -> str:
        return base64.b64encode(raw).decode()

    return f"SCRAM-SHA-256${SCRAM_ITERATIONS}:{b64(salt)}${b64(stored_key)}:{b64(server_key)}"


@dataclasses.dataclass
class Fence:
    """The run's two roles and how to reach the server as each."""

    work: Target
    """The server as the work role: every session and tool that runs the profile's SQL."""
    read: Target
    """The server as the read role: the prepare query / source read."""
    roles: tuple[str, str]


def as_role(target: Target, role: str, password: str) -> Target:
    """The same server, logged in as `role` (asyncpg and client tools alike)."""
    return dataclasses.replace(
        target, overrides={**target.overrides, "user": role, "password": password}
    )


WRITABLE_SQL = """
SELECT what FROM (
  SELECT format('table %I.%I', n.nspname, c.relname) AS what
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind IN ('r', 'p', 'v', 'f') AND n.nspname <> $2
    AND n.nspname NOT IN ('pg_catalog', 'information_schema')
    AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp\\_%'
    AND has_table_privilege($1, c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE, TRIGGER')
  UNION ALL
  SELECT format('sequence %I.%I', n.nspname, c.relname)
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind = 'S' AND n.nspname <> $2
    AND CASE WHEN c.relkind = 'S' THEN has_sequence_privilege($1, c.oid, 'USAGE, UPDATE') END
  UNION ALL
  SELECT format('schema %I', nspname) FROM pg_namespace
  WHERE nspname <> $2
    AND nspname NOT LIKE 'pg\\_temp\\_%' AND nspname NOT LIKE 'pg\\_toast\\_temp\\_%'
    AND has_schema_privilege($1, oid, 'CREATE')
  UNION ALL
  SELECT format('database %I', current_database())
  WHERE has_database_privilege($1, current_database(), 'CREATE')
) w ORDER BY what LIMIT 4
"""
"""What a role could still change outside the run's schema (grants to PUBLIC do that)."""


async def build_fence(admin: Target, run_id: str, schema: str, *, temporary: bool = False) -> Fence:
    """Make the run's roles, let the work role create in `schema` only, and check it holds.

    Args:
        admin: pgwx's own connection target (it must be allowed to create roles).
        run_id: The run the roles belong to (their names and markers).
        schema: The run's schema, made (and marked) by the runner before this.
        temporary: Some variant needs TEMPORARY tables: the work role gets TEMP too.

    Raises:
        FenceUnavailable: what is missing, in one sentence, with what to do.
    """
    work, read = role_names(run_id)
    passwords = {work: secrets.token_urlsafe(24), read: secrets.token_urlsafe(24)}
    conn = await admin.connect("admin")
    try:
        row = await conn.fetchrow(
            "SELECT current_user AS me, rolsuper, rolcreaterole FROM pg_roles "
            "WHERE rolname = current_user"
        )
        if row is None or not (row["rolsuper"] or row["rolcreaterole"]):
            who = row["me"] if row else "this user"
            raise FenceUnavailable(
                f"a profile with its own SQL runs as a role pgwx creates for the run, and "
                f"{who} may not create roles here (no CREATEROLE); connect as a user with "
                f"CREATEROLE, or pass --trust-sql to run the profile's SQL as {who} unfenced"
            )
        try:
            for role, password in passwords.items():
                await _create_role(conn, role, password, run_id, schema, reads=role == read)
            await conn.execute(f"GRANT USAGE, CREATE ON SCHEMA {schema} TO {work}")
            if temporary:
                await _grant_on_database(conn, "TEMPORARY", work)
            loose = [str(r["what"]) for r in await conn.fetch(WRITABLE_SQL, work, schema)]
        except BaseException:
            await _drop_roles(conn, run_id)
            raise
        if loose:
            await _drop_roles(conn, run_id)
            raise FenceUnavailable(
                "the fence around the profile's SQL would not hold: any role may still write "
                + ", ".join(loose)
                + " (granted to PUBLIC); revoke that from PUBLIC, or pass --trust-sql"
            )
    finally:
        await conn.close()
    fence = Fence(
        work=as_role(admin, work, passwords[work]),
        read=as_role(admin, read, passwords[read]),
        roles=(work, read),
    )
    try:
        probe = await fence.work.connect("fence", timeout=10.0)
    except ConnectError as exc:
        await tear_down(admin, run_id)
        raise FenceUnavailable(
            f"pgwx could not log in as {work}, the role it runs the profile's SQL as ({exc}); "
            "allow it in pg_hba.conf (password authentication), or pass --trust-sql"
        ) from None
    await probe.close()
    return fence


async def _grant_on_database(conn: asyncpg.Connection, privilege: str, role: str) -> None:
    """GRANT a database privilege the role lacks (usually PUBLIC has it: then nothing is
    granted, and the database's ACL is not touched at all)."""
    if await conn.fetchval(
        "SELECT has_database_privilege($1, current_database(), $2)", role, privilege
    ):
        return
    name = str(await conn.fetchval("SELECT current_database()")).replace('"', '""')
    await conn.execute(f'GRANT {privilege} ON DATABASE "{name}" TO {role}')


async def _create_role(
    conn: asyncpg.Connection, role: str, password: str, run_id: str, schema: str, *, reads: bool
) -> None:
    try:
        await conn.execute(
            f"CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION "
            f"NOBYPASSRLS INHERIT CONNECTION LIMIT 600 PASSWORD '{scram_verifier(password)}'"
        )
    except asyncpg.DuplicateObjectError:
        raise FenceUnavailable(
            f"a role named {role} already exists and pgwx did not make it for this run; "
            "pgwx leaves it alone: rename or drop it, then run again"
        ) from None
    await conn.execute(f"COMMENT ON ROLE {role} IS '{marker(run_id)}'")
    await conn.execute(f"ALTER ROLE {role} SET search_path = {schema}")
    await _grant_on_database(conn, "CONNECT", role)
    if not reads:
        return
    # The read role reads the user's tables (prepare.source, a prepare query): through
    # pg_read_all_data (PostgreSQL 14+), which reads and writes nothing; without it
    # (older servers, no ADMIN on it) such a read fails with the server's sentence.
    with contextlib.suppress(asyncpg.PostgresError):
        async with conn.transaction():
            await conn.execute(f"GRANT pg_read_all_data TO {role}")


async def tear_down(admin: Target, run_id: str) -> str:
    """Drop the run's roles (and all they own or were granted); '' or one sentence."""
    conn = await admin.connect("admin")
    try:
        return await _drop_roles(conn, run_id)
    finally:
        await conn.close()


async def _drop_roles(conn: asyncpg.Connection, run_id: str, lock_timeout_ms: int = 10_000) -> str:
    """Drop each role of `run_id` that carries its marker; '' when done, else why not."""
    problems = []
    for role in role_names(run_id):
        if await role_run(conn, role) != run_id:
            continue  # not there, or not provably this run's: never touched
        await conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", role
        )
        try:
            async with conn.transaction():
                await conn.execute(f"SET LOCAL lock_timeout = {int(lock_timeout_ms)}")
                await conn.execute(f"DROP OWNED BY {role} CASCADE")
                await conn.execute(f"DROP ROLE {role}")
        except asyncpg.PostgresError as exc:
            problems.append(f"could not drop role {role}: {exc}")
    return "; ".join(problems)


async def role_run(conn: asyncpg.Connection, role: str) -> str | None:
    """The run whose marker `role` carries (and whose name it has); None otherwise."""
    comment = await conn.fetchval(
        "SELECT shobj_description(oid, 'pg_authid') FROM pg_roles WHERE rolname = $1", role
    )
    run = marked_run(comment)
    return run if run is not None and role in role_names(run) else None


async def marked_roles(conn: asyncpg.Connection) -> dict[str, str]:
    """pgwx's roles on this server (name → run id): those whose marker matches their name."""
    rows = await conn.fetch(
        "SELECT rolname, shobj_description(oid, 'pg_authid') AS comment FROM pg_roles "
        "WHERE starts_with(rolname, $1) OR starts_with(rolname, $2)",
        WORK_PREFIX,
        READ_PREFIX,
    )
    out = {}
    for row in rows:
        run = marked_run(row["comment"])
        if run is not None and row["rolname"] in role_names(run):
            out[str(row["rolname"])] = run
    return out


async def drop_dead_roles(conn: asyncpg.Connection, alive: Callable[[str], bool]) -> list[str]:
    """Drop the marked roles of runs that are not `alive`; one sentence per role left behind."""
    runs = {run for run in (await marked_roles(conn)).values() if not alive(run)}
    said = [await _drop_roles(conn, run) for run in sorted(runs)]
    return [s for s in said if s]
