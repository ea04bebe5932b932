"""Opening a run: the first of the runner's three parts (`explorer.lab.run.context`).

Probe the server (unless the session did), check every variant's settings, look at the
settings in force, take the run's locks, store the run as begun and say it started
(`open_run`); then make the run's schema, the fence for a profile's own SQL, the workload's
data and start the sampler (`prepare`). Nothing here calls back into the runner: each
function takes the run's context and returns what the next part needs.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import asyncpg

from explorer.lab.measure.environment import MachineLoad
from explorer.lab.measure.environment import capture as capture_environment
from explorer.lab.measure.sampler import Sampler
from explorer.lab.profiles.anysetting import learn_settings, split
from explorer.lab.profiles.availability import unavailable_reason
from explorer.lab.run.context import RunContext, RunScope
from explorer.lab.safety.fence import Fence, FenceUnavailable, build_fence, fence_refusal
from explorer.lab.safety.guard import log_size
from explorer.lab.safety.leftovers import auto_conf_path, foreign_notice, off_defaults
from explorer.lab.safety.owner import RunOwner
from explorer.lab.safety.settings import Journal, ServerSettings
from explorer.lab.scope import create_marked_schema, foreign_schema, schema, work_prefix
from explorer.lab.workloads.base import Workload, WorkloadError
from explorer.models import (
    Capabilities,
    Environment,
    RunRecord,
    RunStarted,
    ServerInfo,
    TableKind,
    Variant,
)
from explorer.server.capabilities import probe
from explorer.server.connect import ConnectError
from explorer.server.failures import one_sentence


async def open_run(
    ctx: RunContext, workdir: Path, workload: Workload, plan: list[tuple[Variant, int]]
) -> RunScope:
    """Probe (unless the session did), look at the settings in force, take the run's
    locks, store the run as begun and say it started: what every trial then shares.

    Args:
        workdir: The run's scratch directory.
        workload: The profile's workload, built once for the run.
        plan: The trials planned at the start, in order.
    """
    caps = await capabilities(ctx)
    conn = await ctx.target.connect("admin")
    try:
        # A typo or a value out of range is said before anything runs (one sentence).
        await learn_settings(conn, caps, [v for v, _ in plan])
    finally:
        await conn.close()
    journal = ctx.journal = Journal(caps.system_identifier)
    if ctx.target.bundled is not None:
        ctx.log_from = log_size(ctx.target.bundled)
    foreign = await look_at_settings(ctx, journal)
    reasons = {
        v.name: unavailable_reason(
            v.knobs, caps, allow_risky=ctx.options.allow_risky, workload=workload
        )
        for v, _ in plan
    }
    if workload.runs_user_sql and not ctx.options.trust_sql:
        # A refusal, before anything is stored: not a failed run.
        why = await fence_refusal(ctx.target)
        if why:
            raise FenceUnavailable(why)
    owner = RunOwner(ctx.target, ctx.run_id)
    # Only a run that changes server settings takes the server-wide lock, and only such
    # a run may touch settings at all (another pgwx's may be in force).
    await owner.open(
        settings=any(
            split(v.knobs, caps, fenced=workload.runs_user_sql)[0] and not reasons[v.name]
            for v, _ in plan
        )
    )
    rounds = ctx.round_plan()
    # The most trials the run may take, said once and kept: an auto run's count never
    # grows under the reader (`18 trials`, then `[27/27]`), it may only end sooner.
    ctx.most_trials = sum(1 for v in ctx.variants() if not reasons[v.name]) * (
        ctx.profile.warmup + rounds.most_rounds
    )
    record = await begin(ctx, caps, foreign, owner, upto=rounds.auto)
    for name, why in reasons.items():
        if why:
            ctx.notice(f"{name}: not available here: {why}", "warning")
    return RunScope(
        workload=workload,
        caps=caps,
        workdir=workdir,
        settings=ServerSettings(ctx.target, journal, ctx.notice, on_restart=ctx.mark_restart),
        contexts={n: g.context for n, g in caps.gucs.items()},
        record=record,
        sampler=(
            Sampler(
                ctx.target,
                caps,
                interval=ctx.options.sample_interval,
                workload_app_prefix=work_prefix(),
            )
            if ctx.options.sample
            else None
        ),
        owner=owner,
        plan=plan,
        reasons=reasons,
    )


async def capabilities(ctx: RunContext) -> Capabilities:
    """The server's capabilities: the session's probe, or one made now (kept in `ctx`)."""
    if ctx.caps is not None:
        return ctx.caps
    conn = await ctx.target.connect("admin")
    try:
        ctx.caps = await probe(conn, owned=ctx.target.owned)
    finally:
        await conn.close()
    return ctx.caps


async def begin(
    ctx: RunContext, caps: Capabilities, foreign: list[str], owner: RunOwner, *, upto: bool
) -> RunRecord:
    """Store the run as begun and say it started with `ctx.most_trials` (at most, `upto`,
    with auto repeats); the owner's locks go if storing fails."""
    server = ServerInfo(
        dsn_masked=ctx.target.label(),
        bundled=ctx.target.owned,
        capabilities=caps,
        off_defaults=foreign,
    )
    record = RunRecord(
        id=ctx.run_id,
        profile=ctx.profile,
        scale=ctx.options.scale,
        server=server,
        started_at=dt.datetime.now(dt.UTC),
        environment=await environment(ctx, caps),
        axis=ctx.axis,
        label=ctx.options.label,
        ref=ctx.options.ref,
    )
    ctx.load = MachineLoad()
    try:
        ctx.store.begin_run(record)
    except BaseException:
        await owner.close()
        raise
    ctx.record = record  # kept locally, should the store be lost mid-run
    ctx.emit(
        RunStarted(
            at=ctx.clock(),
            run_id=ctx.run_id,
            profile=ctx.profile.name,
            server=server,
            total_trials=ctx.most_trials,
            upto=upto,
        )
    )
    if foreign:
        ctx.notice(foreign_notice(foreign), "warning")
    return record


async def prepare(ctx: RunContext, scope: RunScope) -> asyncio.Task[None] | None:
    """The run's schema, the fence for the profile's own SQL, the workload's data (in
    this server's turn); then the sampler starts (its task, None when sampling is off)."""
    await make_schema(ctx)
    if scope.workload.runs_user_sql:
        scope.fence = await fence(ctx, scope.plan, scope.workload.source_tables())
    ctx.notice(f"preparing {scope.workload.kind} data")
    reader = scope.fence.read if scope.fence is not None else ctx.target
    async with ctx.turn():  # never while another server is measured
        await scope.workload.prepare(reader, scope.caps, scope.workdir)
    if scope.sampler is None:
        return None
    return asyncio.create_task(scope.sampler.run(ctx.on_sample))


async def make_schema(ctx: RunContext) -> None:
    """Create the run's schema with pgwx's marker; a same-named schema is someone else's."""
    conn = await ctx.target.connect("admin")
    try:
        await create_marked_schema(conn, ctx.run_id)
    except asyncpg.DuplicateSchemaError:
        raise WorkloadError(foreign_schema(schema())) from None
    finally:
        await conn.close()
    ctx.made_schema = True


async def fence(ctx: RunContext, plan: list[tuple[Variant, int]], reads: list[str]) -> Fence | None:
    """The roles the profile's SQL runs as; None (said in the progress) with --trust-sql."""
    temporary = any(v.knobs.table_kind is TableKind.TEMPORARY for v, _ in plan)
    try:
        made = await build_fence(ctx.target, ctx.run_id, schema(), temporary=temporary, reads=reads)
    except FenceUnavailable as exc:
        if not ctx.options.trust_sql:
            raise
        ctx.notice(
            f"--trust-sql: the profile's SQL runs unfenced, as pgwx's own user ({exc})",
            "warning",
        )
        return None
    ctx.notice(f"the profile's SQL runs as {made.roles[0]}, fenced to schema {schema()}")
    return made


async def environment(ctx: RunContext, caps: Capabilities) -> Environment | None:
    """Versions, settings and CPU at the start; None (and a warning) if unreadable."""
    try:
        conn = await ctx.target.connect("admin")
        try:
            return await capture_environment(conn, caps, ctx.target)
        finally:
            await conn.close()
    except (asyncpg.PostgresError, ConnectError, OSError) as exc:
        ctx.notice(f"could not record the environment: {one_sentence(exc)}", "warning")
        return None


async def look_at_settings(ctx: RunContext, journal: Journal) -> list[str]:
    """Risky settings off their defaults that this pgwx did not set; where ALTER SYSTEM
    writes (for a failed undo to name)."""
    pending = journal.load()
    conn = await ctx.target.connect("admin")
    try:
        ctx.auto_conf = ctx.undo.where = await auto_conf_path(conn, ctx.target)
        return await off_defaults(conn, lambda name: name not in pending)
    finally:
        await conn.close()
