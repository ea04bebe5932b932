"""What every workload is, and the context the runner hands it for one trial."""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

import asyncpg
from pydantic import BaseModel, ConfigDict

from explorer.errors import PgwxError
from explorer.lab.sql import close_or_terminate, table_name, work_app, work_purpose
from explorer.models import (
    Capabilities,
    Event,
    Knobs,
    PhaseEnded,
    PhaseResult,
    PhaseStarted,
    TableKind,
)
from explorer.server.connect import Target


class WorkloadError(PgwxError, RuntimeError):
    """A workload step failed; str() is one sentence."""


class Params(BaseModel):
    """Base of every workload's parameters. Fields listed in SCALED grow with --scale."""

    model_config = ConfigDict(extra="forbid")
    SCALED: ClassVar[tuple[str, ...]] = ()

    def scaled(self, scale: float) -> Params:
        """A copy with the size fields multiplied by `scale` (at least 1)."""
        changes = {name: max(1, math.ceil(getattr(self, name) * scale)) for name in self.SCALED}
        return self.model_copy(update=changes)


P = TypeVar("P", bound=Params)
"""A workload's parameter model."""


@dataclass
class PhaseHandle:
    """What a workload fills in while a phase runs."""

    rows: int | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class TrialContext:
    """Everything one trial may touch. Built by the runner, one per variant × repeat."""

    target: Target
    caps: Capabilities
    knobs: Knobs
    variant: str
    repeat: int
    workdir: Path
    """Private scratch directory of the run (dump files, generated data)."""
    emit: Callable[[Event], None]
    settle: Callable[[], Awaitable[None]]
    """CHECKPOINT and pause; call it after setup, before the first timed phase."""
    clock: Callable[[], float]
    """Seconds since the run started (monotonic)."""
    counters: Callable[[], Awaitable[dict[str, int]]] | None = None
    """Cumulative server counters read from a side session (WAL bytes, extended pages);
    their difference across a phase goes into the phase's detail."""
    conn: asyncpg.Connection | None = None
    """The workload's own session (application_name pgwx-work-main)."""
    phases: list[PhaseResult] = field(default_factory=list)
    extra_conns: list[asyncpg.Connection] = field(default_factory=list)
    processes: list[asyncio.subprocess.Process] = field(default_factory=list)

    @property
    def db(self) -> asyncpg.Connection:
        """The workload session (opened by the runner before the trial)."""
        assert self.conn is not None, "the runner opens the workload connection"
        return self.conn

    async def connect(self, tag: str) -> asyncpg.Connection:
        """Another workload session, tagged pgwx-work-<run id>-<tag>, closed after the trial."""
        conn = await self.target.connect(work_purpose(tag))
        self.extra_conns.append(conn)
        return conn

    @contextlib.asynccontextmanager
    async def phase(
        self, name: str, expected_rows: int | None = None
    ) -> AsyncIterator[PhaseHandle]:
        """Time one phase on the monotonic clock and announce it."""
        self.emit(
            PhaseStarted(
                at=self.clock(),
                variant=self.variant,
                repeat=self.repeat,
                phase=name,
                expected_rows=expected_rows,
            )
        )
        handle = PhaseHandle()
        before = await self._read_counters()
        start = time.perf_counter()
        yield handle
        seconds = time.perf_counter() - start
        after = await self._read_counters()
        for key, value in after.items():
            if key in before:
                handle.detail.setdefault(key, value - before[key])
        self.record(name, seconds, handle)

    async def _read_counters(self) -> dict[str, int]:
        """Flush this session's pending statistics, then read the counters (untimed)."""
        if self.counters is None:
            return {}
        if self.conn is not None and self.caps.major >= 15:
            # A backend publishes pg_stat_io only when idle and at most once a second;
            # forcing it keeps setup's extensions out of the phase and the phase's in.
            with contextlib.suppress(asyncpg.PostgresError):
                await self.conn.execute("SELECT pg_stat_force_next_flush()")
        return await self.counters()

    def record(self, name: str, seconds: float, handle: PhaseHandle) -> None:
        """Keep a phase timed some other way (e.g. split from one external process)."""
        result = PhaseResult(name=name, seconds=seconds, rows=handle.rows, detail=handle.detail)
        self.phases.append(result)
        self.emit(
            PhaseEnded(at=self.clock(), variant=self.variant, repeat=self.repeat, result=result)
        )

    async def run_tool(
        self, args: Sequence[str], *, stdin: Path | None = None, appname: str | None = None
    ) -> str:
        """Run a client tool for this trial (see `run_tool`); killed if the trial is cancelled.

        Its sessions are tagged pgwx-work-<run id>-<tool> unless `appname` says otherwise, so the
        sampler sees them and a cancel can end them.
        """
        name = appname or work_app(Path(args[0]).name)
        return await run_tool(
            self.target, args, appname=name, stdin=stdin, processes=self.processes
        )

    async def close(self) -> None:
        """Close every session and process the trial opened."""
        for proc in self.processes:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        for conn in [*self.extra_conns, *([self.conn] if self.conn else [])]:
            await close_or_terminate(conn)


async def write_copy_source(target: Target, path: Path, query: str, *args: Any) -> Path:
    """Generate a load's input once, server-side, into a COPY text file (untimed prepare)."""
    conn = await target.connect("prepare")
    try:
        await conn.copy_from_query(query, *args, output=str(path))
    finally:
        await conn.close()
    return path


async def run_tool(
    target: Target,
    args: Sequence[str],
    *,
    appname: str,
    stdin: Path | None = None,
    processes: list[asyncio.subprocess.Process] | None = None,
) -> str:
    """Run pg_dump / pg_restore / pgbench (args[0], by name) against the target.

    The tool's sessions carry `appname` (PGAPPNAME). Cancelling the caller kills the process.

    Returns:
        The tool's stdout.

    Raises:
        WorkloadError: the tool exited non-zero (with its last line of stderr).
    """
    env = target.tool_env()
    env["PGAPPNAME"] = appname
    stdin_file = stdin.open("rb") if stdin else None
    try:
        proc = await asyncio.create_subprocess_exec(
            target.tool(args[0]),
            *args[1:],
            stdin=stdin_file or asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        if processes is not None:
            processes.append(proc)
        try:
            out, err = await proc.communicate()
        except asyncio.CancelledError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            raise
    finally:
        if stdin_file:
            stdin_file.close()
    if proc.returncode != 0:
        lines = [ln for ln in err.decode(errors="replace").splitlines() if ln.strip()]
        last = lines[-1] if lines else f"exit {proc.returncode}"
        raise WorkloadError(f"{Path(args[0]).name} failed: {last}")
    return out.decode(errors="replace")


class Workload(ABC, Generic[P]):
    """One kind of load. Subclasses live one per module in `explorer.lab.workloads`.

    Lifecycle per run: `prepare` once, then `trial` for every variant × repeat, then
    `cleanup`. All objects go in the pgwx_lab schema (or pg_temp); the runner drops it.
    """

    kind: ClassVar[str]
    """Name used in profiles (`workload = "..."`)."""
    title: ClassVar[str]
    """One line for lists."""
    params_model: ClassVar[type[Params]]
    uses_other_sessions: ClassVar[bool] = False
    """Loads through other processes (pg_restore, pgbench): TEMPORARY tables impossible."""

    def __init__(self, params: P) -> None:
        self.params: P = params
        self.source: Path | None = None
        """What `prepare` wrote once for every trial to read (a COPY file, a dump)."""

    def prepared(self) -> Path:
        """`source`, or a WorkloadError when prepare has not made it."""
        if self.source is None:
            raise WorkloadError(
                f"the {self.kind} workload has no prepared data: prepare did not run"
            )
        return self.source

    def unavailable_reason(self, knobs: Knobs, caps: Capabilities) -> str | None:
        """Why this workload cannot run these knobs on this server (beyond the generic checks)."""
        if self.uses_other_sessions and knobs.table_kind is TableKind.TEMPORARY:
            return (
                "TEMPORARY tables live in one session, and this workload loads through "
                "other sessions"
            )
        return None

    table: ClassVar[str | None] = None
    """The target table's unqualified name, when the workload has one."""

    def relations(self, knobs: Knobs) -> list[str]:
        """Tables whose size the sampler should follow during a trial.

        A temporary table lives in another session, where the sampler cannot size it.
        """
        if self.table is None or knobs.table_kind is TableKind.TEMPORARY:
            return []
        return [table_name(self.table, knobs.table_kind)]

    source_sql: ClassVar[str | None] = None
    """A query whose rows the default `prepare` writes once into the run's COPY file
    (`source`); its {placeholders} are filled from the parameters, e.g. {rows}."""

    async def prepare(self, target: Target, caps: Capabilities, workdir: Path) -> None:
        """Build what every trial reuses (source data, dump files); untimed, once per run.

        By default: write the rows of `source_sql` to `<workdir>/<kind>.copy` (generating
        them is never timed; a trial only reads the file).
        """
        if self.source_sql is not None:
            query = self.source_sql.format(**self.params.model_dump())
            self.source = await write_copy_source(target, workdir / f"{self.kind}.copy", query)

    @abstractmethod
    async def trial(self, ctx: TrialContext) -> None:
        """Set up, `await ctx.settle()`, then run the timed phases with `ctx.phase(...)`."""

    async def cleanup(self, target: Target) -> None:
        """Drop what prepare made outside pgwx_lab (rarely anything)."""
