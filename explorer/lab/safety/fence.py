"""The fence around a profile's own SQL: two roles pgwx makes per run, which the server limits.

A `workload = "sql"` profile's statements (its tables' columns and indexes, setup, phases,
verify and pgbench scripts) run connected as `pgwx_run_<run id>`, a login role that is no
superuser, has no CREATEROLE, CREATEDB, REPLICATION or BYPASSRLS, is a member of no role, and
has privileges only in the run's schema (USAGE, CREATE; TEMP where a variant needs it); its
default search_path is that schema, so pgbench's sessions (and a RESET ALL) stay there. The
prepare query and `source` read as `pgwx_read_<run id>`, which may create nothing and may
read only the table `prepare.source` names (SELECT granted for the run, never a catalog; no
pg_read_all_data, so no pg_authid), inside a READ ONLY transaction. The
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
from explorer.text import printable

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
    verifiers: dict[str, str] = dataclasses.field(default_factory=dict)
    """Role → the SCRAM verifier pgwx gave it (to tell, at the end, whether the profile set
    its own password)."""


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


async def build_fence(
    admin: Target,
    run_id: str,
    schema: str,
    *,
    temporary: bool = False,
    reads: list[str] | tuple[str, ...] = (),
) -> Fence:
    """Make the run's roles, let the work role create in `schema` only, and check it holds.

    Args:
        admin: pgwx's own connection target (it must be allowed to create roles).
        run_id: The run the roles belong to (their names and markers).
        schema: The run's schema, made (and marked) by the runner before this.
        temporary: Some variant needs TEMPORARY tables: the work role gets TEMP too.
        reads: The user's tables ("schema.table") the prepare step names: the read role may
            SELECT them (and USAGE their schemas) for the run, and read nothing else.

    Raises:
        FenceUnavailable: what is missing, in one sentence, with what to do.
    """
    work, read = role_names(run_id)
    passwords = {work: secrets.token_urlsafe(24), read: secrets.token_urlsafe(24)}
    verifiers = {role: scram_verifier(password) for role, password in passwords.items()}
    conn = await admin.connect("admin")
    try:
        why = await _no_roles(conn)
        if why:
            raise FenceUnavailable(why)
        try:
            for role in passwords:
                await _create_role(conn, role, verifiers[role], run_id, schema, reads=role == read)
            await conn.execute(f"GRANT USAGE, CREATE ON SCHEMA {schema} TO {work}")
            if temporary:
                await _grant_on_database(conn, "TEMPORARY", work)
            for table in reads:
                await _grant_read(conn, table, read)
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
        verifiers=verifiers,
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


async def _no_roles(conn: asyncpg.Connection) -> str | None:
    """Why this user cannot make the fence's roles (no CREATEROLE); None when it can."""
    row = await conn.fetchrow(
        "SELECT current_user AS me, rolsuper, rolcreaterole FROM pg_roles "
        "WHERE rolname = current_user"
    )
    if row is not None and (row["rolsuper"] or row["rolcreaterole"]):
        return None
    who = row["me"] if row else "this user"
    return (
        f"a profile with its own SQL runs as a role pgwx creates for the run, and "
        f"{who} may not create roles here (no CREATEROLE); connect as a user with "
        f"CREATEROLE, or pass --trust-sql to run the profile's SQL as {who} unfenced"
    )


async def fence_refusal(admin: Target) -> str | None:
    """Before a run is stored: why its fence cannot be made here (a refusal, exit 2)."""
    conn = await admin.connect("admin")
    try:
        return await _no_roles(conn)
    finally:
        await conn.close()


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
    conn: asyncpg.Connection, role: str, verifier: str, run_id: str, schema: str, *, reads: bool
) -> None:
    try:
        await conn.execute(
            f"CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION "
            f"NOBYPASSRLS INHERIT CONNECTION LIMIT 600 PASSWORD '{verifier}'"
        )
    except asyncpg.DuplicateObjectError:
        raise FenceUnavailable(
            f"a role named {role} already exists and pgwx did not make it for this run; "
            "pgwx leaves it alone: rename or drop it, then run again"
        ) from None
    await conn.execute(f"COMMENT ON ROLE {role} IS '{marker(run_id)}'")
    await conn.execute(f"ALTER ROLE {role} SET search_path = {schema}")
    await _grant_on_database(conn, "CONNECT", role)


async def _grant_read(conn: asyncpg.Connection, table: str, role: str) -> None:
    """SELECT on one named table (and USAGE on its schema) for the read role.

    Names are quoted by the server (`format('%I')`), as unquoted SQL names read them (lower
    case). A grant the server refuses (no such table, no GRANT OPTION) is left out: the
    prepare step's read then fails with the server's own sentence.
    """
    nsp, rel = (part.lower() for part in table.split(".", 1))
    if nsp.startswith("pg_") or nsp == "information_schema":
        return  # never a catalog (pg_authid): the profile's model refuses one already
    statements = [
        await conn.fetchval("SELECT format('GRANT USAGE ON SCHEMA %I TO %I', $1::text, $2::text)",
                            nsp, role),
        await conn.fetchval(
            "SELECT format('GRANT SELECT ON TABLE %I.%I TO %I', $1::text, $2::text, $3::text)",
            nsp, rel, role,
        ),
    ]  # fmt: skip
    with contextlib.suppress(asyncpg.PostgresError):
        async with conn.transaction():
            for sql in statements:
                await conn.execute(sql)


async def release(admin: Target, run_id: str) -> str:
    """End the sessions of run `run_id`'s roles and roll back their prepared transactions.

    Done before the run's schema is dropped: a session or a `PREPARE TRANSACTION` of the
    profile's holds locks in it (and may hold pgwx's own advisory keys). '' or one sentence
    naming what is left and how to remove it.
    """
    conn = await admin.connect("admin")
    try:
        return "; ".join(await _release(conn, run_id))
    finally:
        await conn.close()


async def _release(conn: asyncpg.Connection, run_id: str) -> list[str]:
    roles = [role for role in role_names(run_id) if await role_run(conn, role) == run_id]
    if not roles:
        return []
    problems = []
    with contextlib.suppress(asyncpg.PostgresError):
        await conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE usename = ANY($1::text[]) AND pid <> pg_backend_pid()",
            roles,
        )
    rows = await conn.fetch(
        "SELECT gid, owner, database, database = current_database() AS here "
        "FROM pg_prepared_xacts WHERE owner = ANY($1::text[])",
        roles,
    )
    for row in rows:
        gid = printable(str(row["gid"]))[:64]
        if not row["here"]:
            problems.append(
                f"a prepared transaction of {row['owner']} ({gid!r}) is left in database "
                f"{printable(str(row['database']))[:64]}; connect there and ROLLBACK PREPARED it"
            )
            continue
        try:
            # The gid is the profile's text: quoted by the server, never by pgwx.
            sql = await conn.fetchval("SELECT format('ROLLBACK PREPARED %L', $1::text)", row["gid"])
            await conn.execute(sql)
        except asyncpg.PostgresError as exc:
            problems.append(
                f"could not roll back the prepared transaction {gid!r} of {row['owner']} "
                f"({exc}); a superuser can, with ROLLBACK PREPARED"
            )
    return problems


async def release_dead(conn: asyncpg.Connection, alive: Callable[[str], bool]) -> list[str]:
    """`release` for the marked roles of every run that is not `alive` (recovery)."""
    runs = {run for run in (await marked_roles(conn)).values() if not alive(run)}
    return [p for run in sorted(runs) for p in await _release(conn, run)]


async def role_changes(admin: Target, fence: Fence, run_id: str, schema: str) -> list[str]:
    """What the profile changed on its own roles during the run: 'pgwx_run_…: its password,
    work_mem=64MB' per role changed (nothing, normally).

    Any role may set its own password and its own settings (`ALTER ROLE CURRENT_USER …`,
    which the server allows and no fence can refuse); they go when the role is dropped at
    the end, and are said. The password is compared with the verifier pgwx set, which only
    a superuser can read; the settings, anyone.
    """
    conn = await admin.connect("admin")
    try:
        superuser = await conn.fetchval(
            "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
        )
        out = []
        for role in fence.roles:
            if await role_run(conn, role) != run_id:
                continue
            changed = []
            if superuser and role in fence.verifiers:
                stored = await conn.fetchval(
                    "SELECT rolpassword FROM pg_authid WHERE rolname = $1", role
                )
                if stored != fence.verifiers[role]:
                    changed.append("its password")
            rows = await conn.fetch(
                "SELECT unnest(s.setconfig) AS setting FROM pg_db_role_setting s "
                "JOIN pg_roles r ON r.oid = s.setrole WHERE r.rolname = $1",
                role,
            )
            ours = f"search_path={schema}"
            changed += [printable(str(r["setting"]))[:100] for r in rows if r["setting"] != ours][
                :5
            ]
            if changed:
                out.append(f"{role}: {', '.join(changed)}")
        return out
    finally:
        await conn.close()


async def leftovers(conn: asyncpg.Connection, run_id: str, schema: str) -> list[str]:
    """What of run `run_id` is still on the server: its roles, schema, prepared transactions."""
    left = []
    for role in role_names(run_id):
        if await conn.fetchval("SELECT 1 FROM pg_roles WHERE rolname = $1", role):
            left.append(f"role {role}")
    if await conn.fetchval("SELECT to_regnamespace($1)", schema) is not None:
        left.append(f"schema {schema}")
    count = await conn.fetchval(
        "SELECT count(*) FROM pg_prepared_xacts WHERE owner = ANY($1::text[])",
        list(role_names(run_id)),
    )
    if count:
        left.append(f"{count} prepared transaction(s)")
    return left


async def tear_down(admin: Target, run_id: str) -> str:
    """Drop the run's roles (and all they own or were granted); '' or one sentence."""
    conn = await admin.connect("admin")
    try:
        return await _drop_roles(conn, run_id)
    finally:
        await conn.close()


async def _drop_roles(conn: asyncpg.Connection, run_id: str, lock_timeout_ms: int = 10_000) -> str:
    """Drop each role of `run_id` that carries its marker; '' when done, else why not."""
    problems = await _release(conn, run_id)
    for role in role_names(run_id):
        if await role_run(conn, role) != run_id:
            continue  # not there, or not provably this run's: never touched
        try:
            async with conn.transaction():
                await conn.execute(f"SET LOCAL lock_timeout = {int(lock_timeout_ms)}")
                await conn.execute(f"DROP OWNED BY {role} CASCADE")
                await conn.execute(f"DROP ROLE {role}")
        except asyncpg.PostgresError as exc:
            detail = f" ({printable(exc.detail)[:200]})" if getattr(exc, "detail", None) else ""
            problems.append(
                f"could not drop role {role}: {exc}{detail}; drop what it owns with DROP OWNED "
                f"BY {role} in each database named, then DROP ROLE {role}"
            )
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
