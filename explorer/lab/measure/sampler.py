"""Polls the server's statistics and turns counters into per-interval deltas and rates.

One `Sampler` runs beside a workload on its own connection. Every `interval` it takes one
reading (one SELECT, see `explorer.lab.measure.stats`) and emits a `Sample`; in between it polls the
wait events of the workload's backends every `wait_interval`. Counters that a backend publishes
only when it goes idle (pg_stat_io, pg_stat_wal) land late, so the live signals during one long
statement are the WAL insert position, relation sizes, progress views and wait events.
`begin_trial` / `end_trial` bracket one trial and sum what happened inside it.

A backend that goes idle less than a second after its previous flush holds its counters for
10 s (PGSTAT_IDLE_INTERVAL), not 1 s. Run `SELECT pg_stat_force_next_flush()` on the workload
connection after a load (PG 15+), then `await sampler.sample_now()` before `end_trial()`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import asyncpg
from pydantic import BaseModel

from explorer.lab.measure import stats
from explorer.lab.measure.stats import CheckpointerDelta, IoDelta, OwnDelta, Progress, WalDelta
from explorer.lab.scope import close_or_terminate
from explorer.models import (
    BLOCK_SIZE,
    WRITERS,
    Capabilities,
    PhaseMechanism,
    TrialStats,
    WorkSource,
    WriterIo,
)
from explorer.server.connect import ConnectError, Target
from explorer.server.failures import one_sentence

__all__ = [
    "CheckpointerDelta",
    "IoDelta",
    "OwnDelta",
    "Progress",
    "Sample",
    "Sampler",
    "SamplerNotice",
    "TrialSampler",
    "WalDelta",
]

BACKOFF_MIN = 0.25
"""First wait, in seconds, before reconnecting after a lost connection."""
BACKOFF_MAX = 5.0
"""Cap of the doubling reconnect wait."""
LOCK_TIMEOUT_MS = 25
"""How long a poll may wait to size a relation that a TRUNCATE or DDL holds locked."""
QUERY_TIMEOUT = 5.0
"""A poll slower than this counts as a lost connection."""


@dataclass(frozen=True)
class SamplerNotice:
    """Something the sampler wants said (a lost or regained connection, a missing signal)."""

    message: str
    """One line for the log."""
    t: float = field(default_factory=time.monotonic)
    """time.monotonic() when it happened."""


Emit = Callable[[dict[str, Any] | SamplerNotice], None]
"""Receives each sample (as its JSON dict) and each SamplerNotice."""


class TrialSampler(Protocol):
    """What the runner needs from a statistics sampler (`Sampler` is the one pgwx has)."""

    def begin_trial(self, relations: list[str]) -> None:
        """Open a trial's window and size `relations` in every sample."""

    async def sample_now(self, timeout: float = 2.0) -> bool:
        """Take a reading now; False when none came within `timeout`."""

    def end_trial(self) -> TrialStats:
        """Close the window and return what it summed."""

    async def run(self, emit: Emit) -> None:
        """Sample until cancelled, passing every sample and notice to `emit`."""

    def begin_phase(self, name: str, *, sharp: bool = True) -> None:
        """Open a phase's window at the last reading (await `sample_now()` first)."""

    def split_phase(self, name: str) -> None:
        """Close the open phase at the next reading (taken at once) and open `name`."""

    def end_phase(self, *, sharp: bool = True) -> dict[str, PhaseMechanism]:
        """Close the phase window(s): phase name → what happened in it."""


_CONNECTION_TROUBLE = (
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    asyncpg.exceptions.InternalClientError,
    OSError,
    TimeoutError,
    ConnectError,
)
"""What a lost or refused connection (or a poll failing on it) raises: retried, not raised."""


class Sample(BaseModel):
    """One reading: every counter as a delta over the measured interval, gauges as they are."""

    kind: Literal["sample"] = "sample"
    """Tags the dict in the event stream."""
    t: float
    """time.monotonic() when the server answered (midpoint of the poll's round trip)."""
    interval: float
    """Measured seconds since the previous reading; every rate divides by this."""
    wal_bytes: int = 0
    """WAL written in the interval, from pg_current_wal_insert_lsn() (live mid-statement)."""
    wal_bytes_per_s: float = 0.0
    """wal_bytes / interval."""
    wal: WalDelta | None = None
    """pg_stat_wal deltas; None where the server lacks the view."""
    io: list[IoDelta] = []
    """pg_stat_io deltas per backend_type/object/context, changed rows only; empty on ≤15."""
    checkpointer: CheckpointerDelta | None = None
    """Checkpoint deltas."""
    own: OwnDelta | None = None
    """The workload sessions' own WAL and I/O (18+, per-backend statistics); None before."""
    waits: dict[str, int] = {}
    """'Type:Event' (or 'CPU') → observations of active workload backends in this interval."""
    wait_polls: int = 0
    """Wait-event polls in this interval, to turn counts into shares."""
    relation_bytes: dict[str, int] = {}
    """pg_table_size() of the trial's relations (heap + TOAST + FSM/VM, no indexes)."""
    progress: Progress = Progress()
    """COPY / CREATE INDEX / VACUUM progress of the workload's backends."""


class _Trial:
    """What one trial (or phase) window has summed so far."""

    def __init__(self, started: float | None = None) -> None:
        self.started = time.monotonic() if started is None else started
        self.samples = 0
        self.seconds = 0.0
        self.wal_bytes = 0
        self.wal: WalDelta | None = None
        self.io: dict[tuple[str, str, str], IoDelta] = {}
        self.checkpointer = CheckpointerDelta()
        self.waits: Counter[str] = Counter()
        self.wait_polls = 0
        self.relation_bytes: dict[str, int] = {}
        self.own: OwnDelta | None = None
        self.own_whole = True
        """Every reading had the sessions' own counters and no session came or went."""

    def add(self, s: Sample) -> None:
        self.samples += 1
        self.seconds += s.interval
        self.wal_bytes += s.wal_bytes
        if s.wal is not None:
            self.wal = self.wal or WalDelta()
            for name in ("records", "fpi", "bytes", "buffers_full"):
                setattr(self.wal, name, getattr(self.wal, name) + getattr(s.wal, name))
            if s.wal.fpi_bytes is not None:
                self.wal.fpi_bytes = (self.wal.fpi_bytes or 0) + s.wal.fpi_bytes
        for row in s.io:
            key = (row.backend_type, row.object, row.context)
            total = self.io.setdefault(
                key, IoDelta(backend_type=key[0], object=key[1], context=key[2])
            )
            for name in stats.IO_FIELDS:
                setattr(total, name, getattr(total, name) + getattr(row, name))
        if s.checkpointer is not None:
            for name in stats.CHECKPOINTER_FIELDS:
                setattr(
                    self.checkpointer,
                    name,
                    getattr(self.checkpointer, name) + getattr(s.checkpointer, name),
                )
        if s.own is None:
            self.own_whole = False
        else:
            self.own = self.own or OwnDelta()
            for name in stats.OWN_FIELDS:
                setattr(self.own, name, getattr(self.own, name) + getattr(s.own, name))
            self.own.sessions = max(self.own.sessions, s.own.sessions)
            self.own_whole = self.own_whole and not s.own.changed
        self.waits.update(s.waits)
        self.wait_polls += s.wait_polls
        self.relation_bytes.update(s.relation_bytes)

    def summary(self, unsupported: list[str]) -> TrialStats:
        def io_sum(rows: list[IoDelta]) -> dict[str, int | float]:
            return {name: sum(getattr(r, name) for r in rows) for name in stats.IO_FIELDS}

        by_backend: dict[str, list[IoDelta]] = {}
        for row in self.io.values():
            by_backend.setdefault(row.backend_type, []).append(row)
        top = self.waits.most_common(1)
        wal = self.wal
        return TrialStats(
            seconds=self.seconds,
            samples=self.samples,
            wal_bytes=self.wal_bytes,
            wal_records=wal.records if wal else None,
            wal_fpi=wal.fpi if wal else None,
            wal_fpi_bytes=wal.fpi_bytes if wal else None,
            wal_buffers_full=wal.buffers_full if wal else None,
            io=io_sum(list(self.io.values())) if self.io else {},
            io_by_backend={k: io_sum(v) for k, v in sorted(by_backend.items())},
            io_rows=[r.model_dump(mode="json") for r in self.io.values()],
            checkpoints=self.checkpointer.checkpoints,
            buffers_written=self.checkpointer.buffers_written,
            waits=dict(self.waits.most_common()),
            top_wait=top[0][0] if top else None,
            wait_samples=sum(self.waits.values()),
            wait_polls=self.wait_polls,
            relation_bytes=dict(self.relation_bytes),
            unsupported=list(unsupported),
        )


def writer_of(backend_type: str) -> str:
    """Which of WRITERS a pg_stat_io backend_type belongs to.

    pg_stat_io sums per backend type, not per session: "workload" is every client backend
    (pgwx's workload, pg_restore's and pgbench's sessions, and the few queries of pgwx's own
    sampler) and parallel workers ("background worker").
    """
    if backend_type in ("client backend", "background worker", "standalone backend"):
        return "workload"
    if backend_type == "checkpointer":
        return "checkpointer"
    if backend_type == "background writer":
        return "bgwriter"
    return "other"


def _own_writer(own: OwnDelta) -> WriterIo:
    return WriterIo(
        written=own.write_bytes // BLOCK_SIZE,
        extended=own.extend_bytes // BLOCK_SIZE,
        fsyncs=own.fsyncs,
        evicted=own.evictions,
    )


def work_source(window: _Trial, *, complete: bool, has_io: bool) -> WorkSource | None:
    """Where a phase's work columns come from (None: not measured at all).

    "sessions" when every reading had the workload sessions' own statistics (18+) and no
    session came or went; "types" (pg_stat_io summed per backend type, every client backend)
    otherwise (see `explorer.models.WorkSource`).
    """
    if not complete or not window.samples:
        return None
    if window.own is not None and window.own_whole:
        return "sessions"
    if window.own is not None:
        return "types: a session came or went"
    return "types" if has_io or window.wal is not None else None


def phase_mechanism(
    window: _Trial, *, has_io: bool, complete: bool, unsupported: list[str]
) -> PhaseMechanism:
    """A phase window's sums as a `PhaseMechanism`; what was not measured stays None.

    Args:
        window: The window's sums.
        has_io: The server has pg_stat_io.
        complete: Every reading between the phase's edges was taken (no reconnect, no edge
            reading missing); otherwise only the wait profile is kept.
        unsupported: Signals the server lacks, copied to `unknown`.
    """
    unknown = list(unsupported)
    if not complete:
        unknown.append("the sampler missed a reading at this phase's edges")
    writers: dict[str, WriterIo] | None = None
    if has_io and complete:
        writers = {w: WriterIo(evicted=0) for w in WRITERS}
        for row in window.io.values():
            w = writers[writer_of(row.backend_type)]
            if row.object in ("relation", "temp relation"):
                w.written += int(row.write_bytes) // BLOCK_SIZE
                w.extended += int(row.extend_bytes) // BLOCK_SIZE
                w.evicted = (w.evicted or 0) + int(row.evictions)
            w.fsyncs += int(row.fsyncs)
    wal = window.wal if complete else None
    own = window.own if complete and window.own_whole and window.own is not None else None
    if own is not None and writers is not None:
        # The workload's own sessions; every other client backend (an unrelated session, a
        # monitoring tool) moves from "workload" to "other".
        by_type, mine = writers["workload"], _own_writer(own)
        rest = writers["other"]
        for kind in ("written", "extended", "fsyncs", "evicted"):
            extra = max((getattr(by_type, kind) or 0) - (getattr(mine, kind) or 0), 0)
            setattr(rest, kind, (getattr(rest, kind) or 0) + extra)
        writers["workload"] = mine
    return PhaseMechanism(
        samples=window.samples,
        wal_bytes=window.wal_bytes if complete else None,
        wal_fpi=wal.fpi if wal else None,
        wal_fpi_bytes=wal.fpi_bytes if wal else None,
        wal_records=wal.records if wal else None,
        writers=writers,
        checkpoints=window.checkpointer.checkpoints if complete else None,
        work_source=work_source(window, complete=complete, has_io=has_io),
        work_wal_bytes=own.wal_bytes if own else None,
        work_wal_fpi=own.wal_fpi if own else None,
        work_wal_records=own.wal_records if own else None,
        waits=dict(window.waits.most_common()) if window.wait_polls else None,
        wait_samples=sum(window.waits.values()),
        unknown=unknown,
    )


class Sampler:
    """Samples one server's statistics on a dedicated connection until cancelled.

    Args:
        target: The server.
        caps: What it can do (from `explorer.server.capabilities.probe`).
        interval: Nominal seconds between samples.
        wait_interval: Nominal seconds between wait-event polls.
        workload_app_prefix: application_name prefix of the backends whose waits and
            progress are watched.
        history: How many samples `latest` keeps.
    """

    def __init__(
        self,
        target: Target,
        caps: Capabilities,
        *,
        interval: float = 0.25,
        wait_interval: float = 0.1,
        workload_app_prefix: str = "pgwx-work",
        history: int = 36000,
    ) -> None:
        self.target = target
        self.caps = caps
        self.interval = interval
        self.wait_interval = wait_interval
        self.prefix = workload_app_prefix
        self.latest: deque[dict[str, Any]] = deque(maxlen=history)
        """The most recent sample dicts, oldest first."""
        self.poll_seconds: deque[float] = deque(maxlen=1000)
        """Round-trip seconds of recent counter polls."""
        self.wait_poll_seconds: deque[float] = deque(maxlen=1000)
        """Round-trip seconds of recent wait-only polls."""
        self.backend_pid: int | None = None
        """Server pid of the sampler's connection while it is connected."""
        self._query = stats.counters_query(caps)
        self.unsupported: list[str] = list(self._query.unsupported)
        """Signals this server lacks, each listed once, e.g. "pg_stat_io: not on PG 15"."""
        self._prev: stats.Reading | None = None
        self._prev_t = 0.0
        self._prev_started = 0.0
        self._waits: Counter[str] = Counter()
        self._wait_polls = 0
        self._relations: list[str] = []
        self._trial: _Trial | None = None
        self._phase: tuple[str, _Trial] | None = None
        self._phases: dict[str, _Trial] = {}
        self._phase_sharp = True
        self._split_to: str | None = None
        self._baselines = 0
        self._phase_baselines = 0
        self._wake = asyncio.Event()
        self._waiters: list[tuple[float, asyncio.Future[None]]] = []

    # ------------------------------------------------------------------ trial window
    def begin_trial(self, relations: list[str]) -> None:
        """Start a new accumulation window and size `relations` in every sample.

        Args:
            relations: regclass-able names, e.g. 'pgwx_lab.t1'. What cannot be sized (gone,
                another session's temp table) is skipped quietly.
        """
        self._relations = list(relations)
        self._trial = _Trial()
        # Read now, so the window starts close to this call rather than up to an interval ago.
        self._wake.set()

    def end_trial(self) -> TrialStats:
        """Close the window and sum the samples whose whole interval lay inside it.

        Counters count as of the last reading; await `sample_now()` first for a sharp edge.

        Returns:
            The window's sums (see `TrialStats`).
        """
        trial, self._trial = self._trial, None
        self._relations = []
        return (trial or _Trial()).summary(self.unsupported)

    # ------------------------------------------------------------------ phase windows
    def begin_phase(self, name: str, *, sharp: bool = True) -> None:
        """Open a phase's window at the last reading: its later readings count towards it.

        Await `sample_now()` just before, so the window starts at the phase's edge.

        Args:
            name: The phase.
            sharp: That reading came (False: the window's counters are unknown).
        """
        self._phases = {}
        self._phase = (name, _Trial(self._prev_started if self._prev else time.monotonic()))
        self._phase_sharp = sharp and self._prev is not None
        self._phase_baselines = self._baselines
        self._split_to = None

    def split_phase(self, name: str) -> None:
        """Close the open phase at the next reading, taken at once, and open `name` there.

        For two phases one process runs back to back (pg_restore's load and its COMMIT).
        """
        self._split_to = name
        self._wake.set()

    def end_phase(self, *, sharp: bool = True) -> dict[str, PhaseMechanism]:
        """Close the phase window(s) opened by `begin_phase` (and `split_phase`).

        Await `sample_now()` just before (after the workload's statistics were flushed).

        Returns:
            Phase name → its mechanism, in the order the phases ran.
        """
        if self._phase is not None:
            self._phases[self._phase[0]] = self._phase[1]
        complete = sharp and self._phase_sharp and self._baselines == self._phase_baselines
        phases, self._phases, self._phase = self._phases, {}, None
        has_io = self.caps.pg_stat_io != "none"
        return {
            name: phase_mechanism(
                window, has_io=has_io, complete=complete, unsupported=self.unsupported
            )
            for name, window in phases.items()
        }

    async def sample_now(self, timeout: float = 2.0) -> bool:
        """Ask for a reading now and wait until it has been emitted.

        Returns:
            False when none came within `timeout` (not running, or disconnected).
        """
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        # Only a reading that starts after this call answers it (not one already in flight).
        entry = (time.monotonic(), waiter)
        self._waiters.append(entry)
        self._wake.set()
        try:
            await asyncio.wait_for(waiter, timeout)
        except TimeoutError:
            return False
        finally:
            if entry in self._waiters:
                self._waiters.remove(entry)
        return True

    # ------------------------------------------------------------------ the loop
    async def run(self, emit: Emit) -> None:
        """Poll until cancelled, calling `emit` with each sample dict and each notice.

        Connection problems never escape: each loss is announced once as a `SamplerNotice`,
        retried with capped backoff, and the recovery announced the same way. Lacking signals
        are announced once at the start.
        """
        for line in self.unsupported:
            emit(SamplerNotice(line))
        self._prev = None
        backoff = BACKOFF_MIN
        lost_at: float | None = None
        while True:
            conn = None
            try:
                conn = await self.target.connect("sampler")
                await conn.set_type_codec(
                    "json", encoder=json.dumps, decoder=json.loads, schema="pg_catalog"
                )
                # Autocommit throughout: statistics snapshots are cached per transaction.
                await conn.execute(f"SET lock_timeout = {LOCK_TIMEOUT_MS}")
                self.backend_pid = conn.get_server_pid()
                if lost_at is not None:
                    lost_for = time.monotonic() - lost_at
                    emit(SamplerNotice(f"sampler reconnected after {lost_for:.1f} s"))
                    lost_at = None
                backoff = BACKOFF_MIN
                await self._poll_forever(conn, emit)
            except _CONNECTION_TROUBLE as exc:
                if lost_at is None:
                    lost_at = time.monotonic()
                    what = "lost its connection" if conn is not None else "cannot connect"
                    emit(SamplerNotice(f"sampler {what} ({one_sentence(exc)}); retrying"))
            finally:
                self.backend_pid = None
                if conn is not None:
                    await close_or_terminate(conn, 1.0)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX)

    async def _poll_forever(self, conn: asyncpg.Connection, emit: Emit) -> None:
        now = time.monotonic()
        next_sample, next_wait = now, now + self.wait_interval
        while True:
            now = time.monotonic()
            if self._wake.is_set() or now >= next_sample:
                woken = self._wake.is_set() and now < next_sample
                self._wake.clear()
                await self._sample(conn, emit)
                now = time.monotonic()
                # An extra reading on request restarts the period instead of pushing the
                # schedule a whole interval further out each time.
                next_sample = (
                    now + self.interval if woken else max(next_sample + self.interval, now)
                )
                # The reading included a wait poll.
                next_wait = now + self.wait_interval
            elif now >= next_wait:
                await self._poll_waits(conn)
                next_wait = max(next_wait + self.wait_interval, time.monotonic())
            delay = min(next_sample, next_wait) - time.monotonic()
            if delay > 0 and not self._wake.is_set():
                try:
                    async with asyncio.timeout(delay):
                        await self._wake.wait()
                except TimeoutError:
                    pass

    async def _poll_waits(self, conn: asyncpg.Connection) -> None:
        started = time.monotonic()
        rows = await conn.fetch(stats.WAITS_SQL, self.prefix, timeout=QUERY_TIMEOUT)
        self.wait_poll_seconds.append(time.monotonic() - started)
        self._waits.update({r["wait"]: r["n"] for r in rows})
        self._wait_polls += 1

    async def _sample(self, conn: asyncpg.Connection, emit: Emit) -> None:
        started = time.monotonic()
        try:
            row = await conn.fetchrow(
                self._query.sql, self.prefix, self._relations, timeout=QUERY_TIMEOUT
            )
        except asyncpg.LockNotAvailableError:
            # A relation is locked (TRUNCATE or DDL in an open transaction): go without sizes.
            row = await conn.fetchrow(self._query.sql, self.prefix, [], timeout=QUERY_TIMEOUT)
        done = time.monotonic()
        self.poll_seconds.append(done - started)
        if row is None:  # a SELECT without FROM always returns its one row
            raise asyncpg.InterfaceError("the counters query returned no row")
        t = (started + done) / 2
        self._waits.update(dict(row["waits"]))
        self._wait_polls += 1
        reading, prev, prev_started = stats.Reading(row), self._prev, self._prev_started
        self._prev, self._prev_started = reading, started
        if prev is None:
            # The first reading is only the baseline the next one is diffed against.
            self._prev_t = t
            self._waits.clear()
            self._wait_polls = 0
            self._baselines += 1
            return
        interval = max(t - self._prev_t, 1e-6)
        self._prev_t = t
        fields = reading.since(prev)
        sample = Sample(
            t=t,
            interval=interval,
            **fields,
            wal_bytes_per_s=fields.get("wal_bytes", 0) / interval,
            waits=dict(self._waits),
            wait_polls=self._wait_polls,
            relation_bytes={n: int(s) for n, s in row["sizes"]},
            progress=stats.progress(row),
        )
        self._waits.clear()
        self._wait_polls = 0
        # A reading counts towards the trial only when its whole interval lies inside it.
        if self._trial is not None and prev_started >= self._trial.started:
            self._trial.add(sample)
        if self._phase is not None and prev_started >= self._phase[1].started:
            self._phase[1].add(sample)
            if self._split_to is not None:
                self._phases[self._phase[0]] = self._phase[1]
                self._phase = (self._split_to, _Trial(started))
                self._split_to = None
        data = sample.model_dump(mode="json", by_alias=True)
        self.latest.append(data)
        emit(data)
        answered = [w for w in self._waiters if w[0] <= started]
        for _, waiter in answered:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters = [w for w in self._waiters if w[0] > started]
