"""What the server's statistics views say, version by version: the SQL and the deltas it yields.

Everything the sampler reads in one poll comes back in a single row of one SELECT (JSON in
subselects), so a poll is one round trip however many views it touches. Arrays rather than
objects keep that row small; the column orders below are the contract between the SQL and
the parsing. Needs PostgreSQL 12+ (CTE MATERIALIZED); pgwx is tested on 15 and 18.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from explorer.models import Capabilities

# --------------------------------------------------------------------------- result shapes


class WalDelta(BaseModel):
    """pg_stat_wal counters over one interval (published by backends when they go idle)."""

    records: int = 0
    """WAL records generated."""
    fpi: int = 0
    """Full-page images written into WAL."""
    bytes: int = 0
    """WAL bytes generated."""
    buffers_full: int = 0
    """Times WAL was written because the WAL buffers were full."""
    writes: int | None = None
    """WAL buffer writes (≤17; on 18 see pg_stat_io object='wal')."""
    syncs: int | None = None
    """WAL file syncs (≤17; on 18 see pg_stat_io object='wal')."""
    write_time: float | None = None
    """Milliseconds writing WAL (≤17, with track_wal_io_timing)."""
    sync_time: float | None = None
    """Milliseconds syncing WAL (≤17, with track_wal_io_timing)."""
    fpi_bytes: int | None = None
    """Bytes of the full-page images (19+: pg_stat_wal.wal_fpi_bytes); None before."""


class IoDelta(BaseModel):
    """One pg_stat_io row's change over an interval."""

    backend_type: str
    """'client backend', 'checkpointer', 'background writer', 'autovacuum worker'…"""
    object: str
    """'relation', 'temp relation', or (PG 18) 'wal'."""
    context: str
    """'normal', 'bulkread', 'bulkwrite', 'vacuum', or (PG 18 WAL) 'init'."""
    reads: int = 0
    """Read operations."""
    writes: int = 0
    """Write operations."""
    writebacks: int = 0
    """Writeback requests to the kernel."""
    extends: int = 0
    """Relation extensions, counted in blocks."""
    hits: int = 0
    """Shared-buffer hits."""
    evictions: int = 0
    """Buffers evicted to make room."""
    reuses: int = 0
    """Ring buffers reused (bulk contexts)."""
    fsyncs: int = 0
    """fsync calls."""
    read_time: float = 0.0
    """Milliseconds reading (track_io_timing)."""
    write_time: float = 0.0
    """Milliseconds writing (track_io_timing)."""
    writeback_time: float = 0.0
    """Milliseconds in writeback (track_io_timing)."""
    extend_time: float = 0.0
    """Milliseconds extending (track_io_timing)."""
    fsync_time: float = 0.0
    """Milliseconds in fsync (track_io_timing)."""
    read_bytes: int = 0
    """Bytes read (16–17: op_bytes × reads)."""
    write_bytes: int = 0
    """Bytes written (16–17: op_bytes × writes)."""
    extend_bytes: int = 0
    """Bytes added by extension (16–17: op_bytes × extends)."""


class OwnDelta(BaseModel):
    """The workload sessions' own counters over one interval (PostgreSQL 18+:
    pg_stat_get_backend_wal / pg_stat_get_backend_io of each session carrying the workload's
    application_name), summed over the sessions read at both ends of the interval.

    Per-backend statistics vanish with their backend, so a session that ended in the
    interval took its last counts with it: `changed` then says the sums are not the whole
    workload's, and so does a session that appeared (or any new session on the server, which
    may have been a workload session too short to be seen).
    """

    wal_records: int = 0
    """WAL records the sessions generated."""
    wal_fpi: int = 0
    """Full-page images they wrote into WAL."""
    wal_bytes: int = 0
    """WAL bytes they generated."""
    write_bytes: int = 0
    """Bytes they wrote to relation files (relation and temp relation objects)."""
    extend_bytes: int = 0
    """Bytes they added to relation files by extension."""
    fsyncs: int = 0
    """fsync calls (every object, WAL included, as pg_stat_io on 18)."""
    evictions: int = 0
    """Buffers they evicted to make room (relation and temp relation objects)."""
    sessions: int = 0
    """Workload sessions read at both ends of the interval."""
    changed: bool = False
    """A workload session ended or appeared, or another session connected, in the interval:
    the sums may miss a session's counts."""


OWN_FIELDS = (
    "wal_records",
    "wal_fpi",
    "wal_bytes",
    "write_bytes",
    "extend_bytes",
    "fsyncs",
    "evictions",
)
"""The per-session numbers of the `own` column, after the pid, in order."""


class CheckpointerDelta(BaseModel):
    """Checkpoint activity over an interval."""

    checkpoints: int = 0
    """Checkpoints: num_done (18), num_timed + num_requested (17), timed + req (≤16)."""
    buffers_written: int = 0
    """Buffers the checkpointer wrote (buffers_checkpoint on ≤16)."""
    write_time: float = 0.0
    """Milliseconds the checkpointer spent writing."""
    sync_time: float = 0.0
    """Milliseconds the checkpointer spent syncing."""


class CopyProgress(BaseModel):
    """pg_stat_progress_copy of one workload backend."""

    pid: int
    """Backend running the COPY."""
    relation: str | None
    """Target table, None for COPY (query)."""
    command: str
    """'COPY FROM' or 'COPY TO'."""
    type: str
    """'FILE', 'PROGRAM', 'PIPE' or 'CALLBACK'."""
    bytes_processed: int
    """Input bytes consumed so far."""
    bytes_total: int
    """Size of the source file, 0 when unknown (STDIN)."""
    tuples_processed: int
    """Rows copied so far."""


class CreateIndexProgress(BaseModel):
    """pg_stat_progress_create_index of one workload backend."""

    pid: int
    """Backend building the index."""
    relation: str | None
    """Table being indexed."""
    index: str | None
    """Index being built (None until it exists)."""
    phase: str
    """Current phase, e.g. 'building index: scanning table'."""
    blocks_done: int
    """Blocks processed in this phase."""
    blocks_total: int
    """Blocks to process in this phase."""
    tuples_done: int
    """Tuples processed in this phase."""
    tuples_total: int
    """Tuples to process in this phase."""


class VacuumProgress(BaseModel):
    """pg_stat_progress_vacuum of one workload backend."""

    pid: int
    """Backend running VACUUM."""
    relation: str | None
    """Table being vacuumed."""
    phase: str
    """Current phase, e.g. 'scanning heap'."""
    heap_blks_scanned: int
    """Heap blocks scanned."""
    heap_blks_total: int
    """Heap blocks when the scan began."""
    heap_blks_vacuumed: int
    """Heap blocks vacuumed."""


class Progress(BaseModel):
    """Progress views of the workload's backends (lists: a workload may run several)."""

    # `copy` would shadow BaseModel.copy; the JSON key stays "copy" through the alias.
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    copies: list[CopyProgress] = Field(default=[], alias="copy")
    """COPY statements in flight (key "copy" in the JSON)."""
    create_index: list[CreateIndexProgress] = []
    """CREATE INDEX / REINDEX in flight."""
    vacuum: list[VacuumProgress] = []
    """VACUUMs in flight."""


# --------------------------------------------------------------------------- column orders

IO_COUNTS = ("reads", "writes", "writebacks", "extends", "hits", "evictions", "reuses", "fsyncs")
IO_TIMES = ("read_time", "write_time", "writeback_time", "extend_time", "fsync_time")
IO_BYTES = ("read_bytes", "write_bytes", "extend_bytes")
IO_FIELDS = IO_COUNTS + IO_TIMES + IO_BYTES
"""Every number of one pg_stat_io row, after backend_type, object and context."""
WAL_FIELDS = tuple(WalDelta.model_fields)
CHECKPOINTER_FIELDS = tuple(CheckpointerDelta.model_fields)
COPY_FIELDS = tuple(CopyProgress.model_fields)
CREATE_INDEX_FIELDS = tuple(CreateIndexProgress.model_fields)
VACUUM_FIELDS = tuple(VacuumProgress.model_fields)

# --------------------------------------------------------------------------- SQL

ACTIVE_STATES = "('active', 'fastpath function call')"
"""Backend states that count as working; idle ones wait for their client, not the server."""
_WAIT = (
    "coalesce(CASE WHEN wait_event_type = 'Buffer' AND wait_event = 'BufferPin' "
    "THEN 'BufferPin' ELSE wait_event_type END || ':' || wait_event, 'CPU')"
)
"""A wait as 'Type:Event' ('CPU' when none). PostgreSQL 19 renames the type BufferPin to
Buffer: its BufferPin wait keeps the older name, so a run on 18 and 19 compares like with
like."""

WAITS_SQL = f"""
SELECT {_WAIT} AS wait, count(*)::int AS n
FROM pg_stat_activity
WHERE starts_with(application_name, $1) AND pid <> pg_backend_pid()
  AND state IN {ACTIVE_STATES}
GROUP BY 1
"""
"""Wait events of the workload's backends right now; `$1` is the application_name prefix."""


@dataclass
class CountersQuery:
    """The counters SELECT for one server version.

    Attributes:
        sql: Takes `$1` the workload application_name prefix and `$2` the relation names.
        unsupported: One line per signal this server lacks, e.g. "pg_stat_io: not on PG 15".
    """

    sql: str
    unsupported: list[str] = field(default_factory=list)


def _coalesced(columns: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f"coalesce({c}, 0)" for c in columns)


def _io_sql(caps: Capabilities) -> str:
    if caps.pg_stat_io == "split_bytes":
        nbytes = _coalesced(IO_BYTES)
    else:
        # 16–17 give one block size per row instead of byte counts.
        nbytes = _coalesced([f"{op} * op_bytes" for op in ("reads", "writes", "extends")])
    # Rows that never saw an operation are most of the view; leave them on the server.
    active = " + ".join(f"coalesce({c}, 0)" for c in IO_COUNTS)
    return (
        "(SELECT coalesce(json_agg(json_build_array(backend_type, object, context, "
        f"{_coalesced(IO_COUNTS)}, {_coalesced(IO_TIMES)}, {nbytes})), '[]') "
        f"FROM pg_stat_io WHERE {active} > 0)"
    )


def _wal_sql(caps: Capabilities) -> str:
    # 18 moved the write/sync counters to pg_stat_io object='wal'.
    extra = (
        "NULL, NULL, NULL, NULL"
        if caps.version_num >= 180000
        else "wal_write, wal_sync, wal_write_time, wal_sync_time"
    )
    # 19 reports the full-page images' bytes; before, that is unknown (NULL), never 0.
    fpi_bytes = "wal_fpi_bytes" if caps.version_num >= 190000 else "NULL"
    return (
        f"(SELECT json_build_array(wal_records, wal_fpi, wal_bytes, wal_buffers_full, "
        f"{extra}, {fpi_bytes}) FROM pg_stat_wal)"
    )


_REL = "object IN ('relation', 'temp relation')"

OWN_SQL = (
    "(SELECT coalesce(json_agg(json_build_array(w.pid, b.wal_records, b.wal_fpi, b.wal_bytes, "
    "io.write_bytes, io.extend_bytes, io.fsyncs, io.evictions)), '[]') "
    "FROM work w CROSS JOIN LATERAL pg_stat_get_backend_wal(w.pid) b "
    "CROSS JOIN LATERAL (SELECT "
    f"coalesce(sum(write_bytes) FILTER (WHERE {_REL}), 0) AS write_bytes, "
    f"coalesce(sum(extend_bytes) FILTER (WHERE {_REL}), 0) AS extend_bytes, "
    "coalesce(sum(fsyncs), 0) AS fsyncs, "
    f"coalesce(sum(evictions) FILTER (WHERE {_REL}), 0) AS evictions "
    "FROM pg_stat_get_backend_io(w.pid)) io "
    # a session gone between the CTE and the call has no statistics any more (NULL)
    "WHERE b.wal_records IS NOT NULL)"
)
"""18+: each workload session's own cumulative WAL and I/O, `[pid, *OWN_FIELDS]` per row."""


def _checkpointer_sql(caps: Capabilities) -> str:
    if caps.version_num >= 180000:
        # num_timed/num_requested also count checkpoints skipped on an idle server; 18 added
        # num_done for the ones that ran.
        return (
            "(SELECT json_build_array(num_done, buffers_written, write_time, sync_time) "
            "FROM pg_stat_checkpointer)"
        )
    if caps.pg_stat_checkpointer:
        return (
            "(SELECT json_build_array(num_timed + num_requested, buffers_written, "
            "write_time, sync_time) FROM pg_stat_checkpointer)"
        )
    return (
        "(SELECT json_build_array(checkpoints_timed + checkpoints_req, buffers_checkpoint, "
        "checkpoint_write_time, checkpoint_sync_time) FROM pg_stat_bgwriter)"
    )


def _progress_sql(view: str, columns: str) -> str:
    return (
        "(SELECT coalesce(json_agg(json_build_array(p.pid, nullif(p.relid, 0)::regclass::text, "
        f"{columns})), '[]') FROM {view} p WHERE p.pid IN (SELECT pid FROM work))"
    )


def counters_query(caps: Capabilities) -> CountersQuery:
    """Build the one-row SELECT of every counter and gauge this server has.

    Args:
        caps: What the server is (version, pg_stat_io shape).

    Returns:
        The SQL, and the signals left out because the server lacks them.
    """
    unsupported: list[str] = []
    major = caps.major
    parts = [
        # Live during a long statement: the insert position moves with every record.
        "pg_wal_lsn_diff(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
        "ELSE pg_current_wal_insert_lsn() END, '0/0')::int8 AS lsn",
    ]
    if caps.version_num >= 140000:
        parts.append(f"{_wal_sql(caps)} AS wal")
    else:
        parts.append("NULL::json AS wal")
        unsupported.append(f"pg_stat_wal: not on PG {major}")
    if caps.pg_stat_io != "none":
        parts.append(f"{_io_sql(caps)} AS io")
    else:
        parts.append("'[]'::json AS io")
        unsupported.append(f"pg_stat_io: not on PG {major}")
    parts.append(f"{_checkpointer_sql(caps)} AS checkpointer")
    if caps.version_num >= 180000:
        parts.append(f"{OWN_SQL} AS own")
        # Sessions established (pg_stat_database.sessions, 14+): one that came and went
        # between two readings is otherwise invisible to the per-session sums.
        parts.append("(SELECT sum(sessions) FROM pg_stat_database)::int8 AS sessions")
    else:
        parts.append("NULL::json AS own, NULL::int8 AS sessions")
    # pg_table_size takes an AccessShareLock: the session's lock_timeout keeps a TRUNCATE in
    # an open transaction from stalling the sampler. to_regclass hides what is gone or not
    # visible here (another session's temp table).
    parts.append(
        "(SELECT coalesce(json_agg(json_build_array(n, s)), '[]') FROM "
        "(SELECT n, pg_table_size(to_regclass(n)) AS s FROM unnest($2::text[]) AS n) x "
        "WHERE s IS NOT NULL) AS sizes"
    )
    if caps.version_num >= 140000:
        parts.append(
            _progress_sql(
                "pg_stat_progress_copy",
                "p.command, p.type, p.bytes_processed, "
                "coalesce(p.bytes_total, 0), p.tuples_processed",
            )
            + " AS copy"
        )
    else:
        parts.append("'[]'::json AS copy")
        unsupported.append(f"pg_stat_progress_copy: not on PG {major}")
    parts.append(
        _progress_sql(
            "pg_stat_progress_create_index",
            "nullif(p.index_relid, 0)::regclass::text, p.phase, "
            "p.blocks_done, p.blocks_total, p.tuples_done, p.tuples_total",
        )
        + " AS create_index"
    )
    parts.append(
        _progress_sql(
            "pg_stat_progress_vacuum",
            "p.phase, p.heap_blks_scanned, p.heap_blks_total, p.heap_blks_vacuumed",
        )
        + " AS vacuum"
    )
    parts.append(
        "(SELECT coalesce(json_agg(json_build_array(wait, n)), '[]') FROM "
        f"(SELECT {_WAIT} AS wait, count(*)::int AS n FROM work "
        f"WHERE state IN {ACTIVE_STATES} GROUP BY 1) w) AS waits"
    )
    # One read of the backend table serves the progress and wait subselects alike.
    sql = (
        "WITH work AS MATERIALIZED (SELECT pid, state, wait_event_type, wait_event "
        "FROM pg_stat_activity WHERE starts_with(application_name, $1) "
        "AND pid <> pg_backend_pid())\nSELECT " + ",\n       ".join(parts)
    )
    return CountersQuery(sql=sql, unsupported=unsupported)


# --------------------------------------------------------------------------- parsing


def _delta(cur: float, prev: float) -> float:
    # A counter that went down was reset (pg_stat_reset_shared, crash): count from zero.
    return cur - prev if cur >= prev else cur


class Reading:
    """The cumulative counters of one poll, kept to diff the next poll against.

    Args:
        row: The counters query's row (json columns already decoded).
    """

    def __init__(self, row: Any) -> None:
        self.lsn: int | None = row["lsn"]
        self.wal: list[Any] | None = row["wal"]
        self.io: dict[tuple[str, str, str], list[float]] = {
            (r[0], r[1], r[2]): [float(x) for x in r[3:]] for r in row["io"]
        }
        self.checkpointer: list[Any] = row["checkpointer"]
        own = row.get("own")
        self.own: dict[int, list[float]] | None = (
            None if own is None else {int(r[0]): [float(x) for x in r[1:]] for r in own}
        )
        self.sessions: int | None = row.get("sessions")

    def own_since(self, prev: Reading) -> OwnDelta | None:
        """The workload sessions' own counters from `prev` to this reading (None before 18).

        Summed over the sessions read at both readings; `changed` when the set of sessions
        differs or any session connected to the server in between.
        """
        if self.own is None or prev.own is None:
            return None
        both = self.own.keys() & prev.own.keys()
        sums = [0.0] * len(OWN_FIELDS)
        for pid in both:
            for i, (c, p) in enumerate(zip(self.own[pid], prev.own[pid], strict=True)):
                sums[i] += _delta(c, p)
        connected = self.sessions is None or prev.sessions is None or self.sessions != prev.sessions
        return OwnDelta.model_validate(
            {
                **dict(zip(OWN_FIELDS, sums, strict=True)),
                "sessions": len(both),
                "changed": self.own.keys() != prev.own.keys() or connected,
            }
        )

    def since(self, prev: Reading) -> dict[str, Any]:
        """Counter deltas from `prev` to this reading, keyed as `Sample` fields."""
        out: dict[str, Any] = {"io": []}
        if self.lsn is not None and prev.lsn is not None:
            out["wal_bytes"] = round(_delta(self.lsn, prev.lsn))
        if self.wal is not None and prev.wal is not None:
            # Whole floats validate as ints; NULL (moved to pg_stat_io on 18) stays None.
            out["wal"] = WalDelta.model_validate(
                {
                    name: None if c is None or p is None else _delta(float(c), float(p))
                    for name, c, p in zip(WAL_FIELDS, self.wal, prev.wal, strict=True)
                }
            )
        for key, values in self.io.items():
            before = prev.io.get(key, [0.0] * len(values))
            d = [_delta(c, p) for c, p in zip(values, before, strict=True)]
            if any(d):
                fields = dict(zip(IO_FIELDS, d, strict=True))
                out["io"].append(
                    IoDelta.model_validate(
                        {"backend_type": key[0], "object": key[1], "context": key[2], **fields}
                    )
                )
        out["own"] = self.own_since(prev)
        out["checkpointer"] = CheckpointerDelta.model_validate(
            {
                name: _delta(float(c), float(p))
                for name, c, p in zip(
                    CHECKPOINTER_FIELDS, self.checkpointer, prev.checkpointer, strict=True
                )
            }
        )
        return out


def progress(row: Any) -> Progress:
    """The progress columns of a counters row as a `Progress`."""

    def rows(names: tuple[str, ...], column: str) -> list[dict[str, Any]]:
        return [dict(zip(names, r, strict=True)) for r in row[column]]

    return Progress.model_validate(
        {
            "copy": rows(COPY_FIELDS, "copy"),
            "create_index": rows(CREATE_INDEX_FIELDS, "create_index"),
            "vacuum": rows(VACUUM_FIELDS, "vacuum"),
        }
    )
