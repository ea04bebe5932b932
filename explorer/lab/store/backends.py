"""Where the results store keeps its rows: a local SQLite file, or a team's PostgreSQL.

`ResultStore` speaks one small SQL dialect (`?` placeholders, four tables) through either
backend. SQLite is the default (standard library, one file per person). PostgreSQL
(`PGWX_RESULTS=postgresql://…`) keeps the same tables in a schema of pgwx's own, `pgwx_results`,
with the records as `jsonb` and a long-format view for charts (`measurements`), so a team's
runs from several machines and server versions land in one history.

The store's API is synchronous (a trial is written between two trials, on purpose), while
asyncpg is asynchronous: the PostgreSQL backend runs its one connection on a private event
loop in a daemon thread and waits for each statement, as `sqlite3` would.
"""

from __future__ import annotations

import asyncio
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Coroutine, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from explorer.errors import PgwxError
from explorer.text import printable

if TYPE_CHECKING:  # the driver is loaded only for a PostgreSQL store (`pgwx report` on
    import asyncpg  # the local SQLite file loads none)

T = TypeVar("T")

BUSY_TIMEOUT = 10.0
"""Seconds a write waits for another process's transaction (those last milliseconds)."""

SCHEMA_VERSION = 1
"""The version of the PostgreSQL store's tables this pgwx writes (kept in `pgwx_results.meta`)."""

PG_SCHEMA = "pgwx_results"
"""The schema of pgwx's own in the team's database."""

SQLITE_TABLES = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, started_at TEXT NOT NULL, profile TEXT NOT NULL,
    status TEXT NOT NULL, record TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trials (
    run_id TEXT NOT NULL REFERENCES runs(id), seq INTEGER NOT NULL, result TEXT NOT NULL,
    PRIMARY KEY (run_id, seq));
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL REFERENCES runs(id), seq INTEGER NOT NULL, event TEXT NOT NULL,
    PRIMARY KEY (run_id, seq));
CREATE TABLE IF NOT EXISTS owners (
    run_id TEXT PRIMARY KEY REFERENCES runs(id), host TEXT NOT NULL, pid INTEGER NOT NULL,
    started TEXT);
"""

MEASUREMENTS_VIEW = f"""
CREATE OR REPLACE VIEW {PG_SCHEMA}.measurements AS
SELECT r.id AS run_id,
       (r.record->>'started_at')::timestamptz AS run_started_at,
       r.profile,
       t.result->>'variant' AS variant,
       p->>'name' AS phase,
       (t.result->>'repeat')::int AS trial,
       coalesce((t.result->>'warmup')::boolean, false) AS warmup,
       m.metric,
       m.value,
       jsonb_build_object(
           'pgwx', r.record->'environment'->>'pgwx_version',
           'server_version', r.record->'server'->'capabilities'->>'version',
           'server', r.record->'server'->>'dsn_masked',
           'machine', r.record->'environment'->'machine',
           'settings', r.record->'environment'->'settings',
           'scale', r.record->'scale',
           'os', r.record->'environment'->>'os',
           'kernel', r.record->'environment'->>'kernel',
           'memory_bytes', r.record->'environment'->'memory_bytes',
           'machine_model', r.record->'environment'->>'machine_model',
           'instance_type', r.record->'environment'->>'instance_type',
           'data_fs', r.record->'environment'->>'data_fs',
           'data_device', r.record->'environment'->>'data_device') AS environment,
       r.record->>'label' AS label,
       r.record->>'ref' AS ref
FROM {PG_SCHEMA}.runs r
JOIN {PG_SCHEMA}.trials t ON t.run_id = r.id
CROSS JOIN LATERAL jsonb_array_elements(t.result->'phases') AS p
CROSS JOIN LATERAL (
    SELECT v.metric, v.value FROM (VALUES
        ('seconds', (p->>'seconds')::double precision),
        ('rows', (p->>'rows')::double precision),
        ('wal_bytes', (p->'mechanism'->>'wal_bytes')::double precision),
        ('wal_fpi', (p->'mechanism'->>'wal_fpi')::double precision),
        ('wal_records', (p->'mechanism'->>'wal_records')::double precision),
        ('checkpoints', (p->'mechanism'->>'checkpoints')::double precision),
        -- 18+: the workload sessions' own WAL; 19+: the full-page images' bytes
        ('work_wal_bytes', (p->'mechanism'->>'work_wal_bytes')::double precision),
        ('work_wal_fpi', (p->'mechanism'->>'work_wal_fpi')::double precision),
        ('wal_fpi_bytes', (p->'mechanism'->>'wal_fpi_bytes')::double precision)
    ) AS v(metric, value)
    UNION ALL
    -- pg_stat_io by writer: writes_checkpointer, extends_workload, fsyncs_bgwriter …
    SELECT k.metric || '_' || w.key, (w.value->>k.field)::double precision
    FROM jsonb_each(CASE WHEN jsonb_typeof(p->'mechanism'->'writers') = 'object'
                         THEN p->'mechanism'->'writers' ELSE '{{}}'::jsonb END) AS w
    CROSS JOIN (VALUES ('writes', 'written'), ('extends', 'extended'), ('fsyncs', 'fsyncs'),
                       ('evictions', 'evicted')) AS k(metric, field)
    UNION ALL
    -- the share of the workload's sampled backends in each wait event: wait_share:IO:WalSync
    SELECT 'wait_share:' || x.key,
           (x.value #>> '{{}}')::double precision
               / nullif((p->'mechanism'->>'wait_samples')::double precision, 0)
    FROM jsonb_each(CASE WHEN jsonb_typeof(p->'mechanism'->'waits') = 'object'
                         THEN p->'mechanism'->'waits' ELSE '{{}}'::jsonb END) AS x
) AS m(metric, value)
WHERE t.result->>'status' = 'ok' AND m.value IS NOT NULL;
COMMENT ON VIEW {PG_SCHEMA}.measurements IS
    'pgwx: one row per run, variant, phase, trial and metric (seconds, rows, wal_bytes, '
    'wal_fpi, wal_records, checkpoints, work_wal_bytes/_fpi (18+), wal_fpi_bytes (19+), '
    'writes/extends/fsyncs/evictions by writer, wait shares)';
"""
"""The long view for charts: one row per run, variant, phase, trial and metric. Replaced in
place (columns only ever added at the end) when an older store gets its first verdicts."""

PG_TABLES = f"""
CREATE SCHEMA IF NOT EXISTS {PG_SCHEMA};
CREATE TABLE IF NOT EXISTS {PG_SCHEMA}.meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS {PG_SCHEMA}.runs (
    id text PRIMARY KEY, started_at text NOT NULL, profile text NOT NULL,
    status text NOT NULL, record jsonb NOT NULL);
CREATE TABLE IF NOT EXISTS {PG_SCHEMA}.trials (
    run_id text NOT NULL REFERENCES {PG_SCHEMA}.runs(id), seq integer NOT NULL,
    result jsonb NOT NULL, PRIMARY KEY (run_id, seq));
CREATE TABLE IF NOT EXISTS {PG_SCHEMA}.events (
    run_id text NOT NULL REFERENCES {PG_SCHEMA}.runs(id), seq integer NOT NULL,
    event jsonb NOT NULL, PRIMARY KEY (run_id, seq));
CREATE TABLE IF NOT EXISTS {PG_SCHEMA}.owners (
    run_id text PRIMARY KEY REFERENCES {PG_SCHEMA}.runs(id), host text NOT NULL,
    pid integer NOT NULL, started text);
{MEASUREMENTS_VIEW}"""
"""The PostgreSQL store: the SQLite tables with `jsonb` records, and the long view."""


class StoreError(PgwxError, RuntimeError):
    """The store cannot be read or written; str() is one sentence."""


class StoreLost(StoreError):
    """The store's server went away and did not come back after RETRY_WAITS."""


RETRY_WAITS = (0.5, 1.0, 2.0)
"""Seconds before each attempt to reach a lost PostgreSQL store again (then it is lost)."""


class SqlBackend(Protocol):
    """What `ResultStore` needs of a database: statements, short transactions, a name."""

    location: str
    """Where the store is, as shown to a person (a path, or a DSN without its password)."""
    trial_status: str
    """SQL for the status of trial row `t` (the JSON field)."""

    def run(self, sql: str, params: Sequence[Any] = ()) -> None:
        """One statement, no rows back."""

    def many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """One statement for each row of parameters."""

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        """The first row, or None."""

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row."""

    def begin(self) -> None:
        """Start a write transaction, waiting up to BUSY_TIMEOUT for another writer."""

    def commit(self) -> None:
        """End the transaction, durably."""

    def rollback(self) -> None:
        """Undo the transaction."""

    def close(self) -> None:
        """Close the connection."""


def is_postgres_url(location: str) -> bool:
    """True for a `postgresql://` / `postgres://` store location."""
    return location.startswith(("postgresql://", "postgres://"))


_SCHEME = re.compile(r"^\s*[A-Za-z][A-Za-z0-9+.-]*:/|^\s*postgres(ql)?:", re.I)
"""A URL of another scheme, or a mistyped one (`PostgreSQL://`, `postgresql:/`)."""


def store_kind(location: str) -> str:
    """ "postgres" for a connection string `--dsn` would accept (a URI or keyword/value pairs,
    `host=… dbname=…`), "file" for a path to a SQLite file.

    Raises:
        StoreError: neither, in one sentence that quotes none of it (it may hold a password):
            nothing is created from a string pgwx cannot read.
    """
    from explorer.server import conninfo

    text = location.strip()
    if not text:
        raise StoreError(
            "The results store is given as an empty string; give a file path or a "
            "postgresql:// connection string (--results or PGWX_RESULTS)."
        )
    if conninfo.is_uri(text):
        return "postgres"
    if _SCHEME.match(text):
        raise StoreError(
            "The results store (--results or PGWX_RESULTS) looks like a URL but does not start "
            "with postgresql:// or postgres://; write it so, or give a SQLite file's path."
        )
    if "=" in text:
        try:
            conninfo.parse_dsn(text)
        except ValueError as exc:
            raise StoreError(
                "The results store (--results or PGWX_RESULTS) is neither a connection string "
                f"pgwx can read ({exc}) nor a file path; give host=… dbname=…, a "
                "postgresql:// URL, or a SQLite file's path without '='."
            ) from None
        return "postgres"
    return "file"


class LostBackend:
    """A store given up after it was lost: every use says so at once (never waits on it)."""

    trial_status = "NULL"

    def __init__(self, location: str) -> None:
        self.location = location

    def _lost(self) -> StoreLost:
        return StoreLost(
            f"The results store {self.location} was lost during this session; pgwx no longer "
            "writes or reads it (start pgwx again once it is back)."
        )

    def run(self, sql: str, params: Sequence[Any] = ()) -> None:
        raise self._lost()

    def many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        raise self._lost()

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        raise self._lost()

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise self._lost()

    def begin(self) -> None:
        raise self._lost()

    def commit(self) -> None:
        raise self._lost()

    def rollback(self) -> None:
        pass  # nothing was begun

    def close(self) -> None:
        pass


# --------------------------------------------------------------------------- SQLite


def _create_private_file(path: Path) -> None:
    """Create the store file 0600 before SQLite does; its -wal/-shm files copy the mode."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(fd)


class SqliteBackend:
    """A local SQLite file in WAL mode; `db` is the sqlite3 connection (autocommit)."""

    trial_status = "json_extract(t.result, '$.status')"

    def __init__(self, path: Path) -> None:
        self.location = str(path)
        _create_private_file(path)
        # Autocommit: every write is one explicit, short transaction.
        self.db = sqlite3.connect(path, timeout=BUSY_TIMEOUT, isolation_level=None)
        if self.db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            self.db.execute("PRAGMA journal_mode=WAL")  # readers never wait for the writer
        self.db.execute("PRAGMA synchronous=FULL")
        have = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not {"runs", "trials", "events", "owners"} <= have:  # opening to read never writes
            self.begin()
            for statement in SQLITE_TABLES.split(";"):
                if statement.strip():
                    self.db.execute(statement)
            self.commit()

    def run(self, sql: str, params: Sequence[Any] = ()) -> None:
        self.db.execute(sql, params)

    def many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self.db.executemany(sql, rows)

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        row = self.db.execute(sql, params).fetchone()
        return tuple(row) if row is not None else None

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self.db.execute(sql, params).fetchall()]

    def begin(self) -> None:
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise StoreError(
                f"The results store {self.location} stayed busy for {BUSY_TIMEOUT:.0f} s "
                f"({exc}); try again when the other pgwx has written its trial."
            ) from None

    def commit(self) -> None:
        self.db.execute("COMMIT")

    def rollback(self) -> None:
        self.db.execute("ROLLBACK")

    def close(self) -> None:
        self.db.close()


# --------------------------------------------------------------------------- PostgreSQL

_PLACEHOLDER = re.compile(r"\?")


def to_postgres(sql: str) -> str:
    """The store's SQL for PostgreSQL: `$n` placeholders, tables in pgwx's schema."""
    counter = iter(range(1, 1000))
    sql = _PLACEHOLDER.sub(lambda _m: f"${next(counter)}", sql)
    # table names follow FROM / INTO / UPDATE / JOIN; column names never do
    return re.sub(
        r"\b(FROM|INTO|UPDATE|JOIN)\s+(runs|trials|events|owners)\b",
        lambda m: f"{m.group(1)} {PG_SCHEMA}.{m.group(2)}",
        sql,
    )


class PostgresBackend:
    """The team's PostgreSQL: one connection on a private event loop in a daemon thread."""

    trial_status = "t.result->>'status'"

    def __init__(self, url: str) -> None:
        import asyncpg

        from explorer.server.connect import ConnectError, Target

        self._failures: tuple[type[Exception], ...] = (
            asyncpg.PostgresError,
            asyncpg.InterfaceError,
            OSError,
        )
        """What the driver raises when the store's server fails (said as one sentence)."""
        self._target = Target(dsn=url)
        self.location = self._target.label()
        self._tx: list[tuple[str, list[Sequence[Any]]]] | None = None
        """The writes of the open transaction (None outside one), replayed after a reconnect."""
        self.reconnects = 0
        """How many times a lost connection was made again."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        try:
            self._conn: asyncpg.Connection = self._wait(self._target.connect("results"))
        except ConnectError as exc:
            self._stop_loop()
            raise StoreError(f"Cannot open the results store: {exc}") from None
        try:
            self._prepare()
        except BaseException:
            self.close()
            raise

    def _wait(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def _sentence(self, exc: BaseException) -> str:
        from explorer.server.conninfo import mask_secrets

        text = mask_secrets(str(exc)).strip().splitlines()
        return f"The results store {self.location} failed: {text[0] if text else exc!r}."

    def _cause(self, exc: BaseException) -> str:
        """Why the connection ended, in a few words (no DSN: the sentence names it once)."""
        from explorer.server.conninfo import mask_secrets

        lines = mask_secrets(str(exc)).strip().splitlines()
        return printable(lines[0])[:200] if lines else type(exc).__name__

    def _gone(self, exc: BaseException) -> bool:
        """The failure ended the connection (terminated, server down, network), not the SQL."""
        import asyncpg

        closed = self._conn.is_closed()
        return closed or isinstance(
            exc,
            asyncpg.ConnectionDoesNotExistError
            | asyncpg.AdminShutdownError
            | asyncpg.PostgresConnectionError
            | OSError,
        )

    def _call(self, work: Callable[[asyncpg.Connection], Coroutine[Any, Any, T]]) -> T:
        """`work` on the connection; a lost connection is made again (waits RETRY_WAITS) and
        the open transaction's writes replayed before `work` is tried again.

        Raises:
            StoreLost: the store did not come back.
            StoreError: the store refused the statement (one sentence).
        """
        from explorer.server.connect import ConnectError

        try:
            return self._wait(work(self._conn))
        except self._failures as exc:
            if not self._gone(exc):
                raise StoreError(self._sentence(exc)) from None
            why = self._cause(exc)
        for wait in RETRY_WAITS:
            self._conn.terminate()
            time.sleep(wait)
            try:
                self._conn = self._wait(self._target.connect("results"))
                if self._tx is not None:
                    self._wait(self._conn.execute("BEGIN"))
                    for sql, rows in self._tx:
                        self._wait(self._conn.executemany(sql, rows))
                result = self._wait(work(self._conn))
            except ConnectError:
                continue
            except self._failures as exc:
                if not self._gone(exc):
                    raise StoreError(self._sentence(exc)) from None
                continue
            self.reconnects += 1
            return result
        raise StoreLost(
            f"The results store {self.location} was lost ({why}) and could not be reached "
            f"again in {len(RETRY_WAITS)} tries over {sum(RETRY_WAITS):g} s."
        )

    def _prepare(self) -> None:
        """Create or check pgwx's schema; an existing one of the right version is not written."""
        version = self._stored_version()
        if version is None:
            self.begin()
            # one creator at a time: two pgwx starting together on an empty database
            self.run("SELECT pg_advisory_xact_lock(hashtext('pgwx_results'))")
            self._call(lambda c: c.execute(PG_TABLES))
            self.run(
                f"INSERT INTO {PG_SCHEMA}.meta VALUES ('schema_version', ?) "
                "ON CONFLICT (key) DO NOTHING",
                (str(SCHEMA_VERSION),),
            )
            self.commit()
            version = self._stored_version()
        if version != SCHEMA_VERSION:
            raise StoreError(
                f"The results store {self.location} has schema version {version}, and this "
                f"pgwx reads version {SCHEMA_VERSION}; use the pgwx that wrote it, or another "
                "database."
            )

    def _stored_version(self) -> int | None:
        exists = self._call(lambda c: c.fetchval("SELECT to_regclass($1)", f"{PG_SCHEMA}.meta"))
        if exists is None:
            return None
        value = self._call(
            lambda c: c.fetchval(f"SELECT value FROM {PG_SCHEMA}.meta WHERE key = 'schema_version'")
        )
        if value is None:
            return None
        try:
            return int(value)
        except ValueError:
            raise StoreError(
                f"The results store {self.location} has a schema version pgwx cannot read "
                f"({printable(str(value))[:40]!r} in {PG_SCHEMA}.meta); use another database, "
                "or ask whoever keeps the store to put the version back."
            ) from None

    def _written(self, sql: str, rows: list[Sequence[Any]]) -> None:
        """Keep a write of the open transaction, to replay it on a new connection."""
        if self._tx is not None:
            self._tx.append((sql, rows))

    def run(self, sql: str, params: Sequence[Any] = ()) -> None:
        statement = to_postgres(sql)
        self._call(lambda c: c.execute(statement, *params))
        self._written(statement, [params])

    def many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = list(rows)
        if rows:
            statement = to_postgres(sql)
            self._call(lambda c: c.executemany(statement, rows))
            self._written(statement, rows)

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        statement = to_postgres(sql)
        row = self._call(lambda c: c.fetchrow(statement, *params))
        return tuple(row) if row is not None else None

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        statement = to_postgres(sql)
        return [tuple(r) for r in self._call(lambda c: c.fetch(statement, *params))]

    def begin(self) -> None:
        self._call(lambda c: c.execute("BEGIN"))
        self._tx = []

    def commit(self) -> None:
        self._call(lambda c: c.execute("COMMIT"))
        self._tx = None

    def rollback(self) -> None:
        self._tx = None
        if not self._conn.is_closed():
            try:
                self._wait(self._conn.execute("ROLLBACK"))
            except self._failures:
                self._conn.terminate()  # a new one is made by the next statement

    def close(self) -> None:
        if not self._conn.is_closed():
            try:
                self._wait(self._conn.close(timeout=5))
            except self._failures:  # a TimeoutError is an OSError
                self._conn.terminate()
        self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
