"""One trial of a run: a variant's settings applied, CHECKPOINT and settle, the workload's
phases timed, its statistics window closed (`run_trial`); and, after a trial lost the
server, the wait for it (`server_back`). Used by the rounds loop
(`explorer.lab.run.rounds_loop`); nothing here calls back into the runner.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt

import asyncpg

from explorer.lab.measure.probe import PhaseProbe
from explorer.lab.measure.wal_level import wal_level
from explorer.lab.profiles.anysetting import split, toast_pin
from explorer.lab.run.context import RunContext, RunScope
from explorer.lab.safety.guard import (
    SERVER_RETURN_WAIT,
    PostmasterGone,
    lost_connection,
    lost_reason,
    postmaster_gone,
    postmaster_start,
    run_watched,
    server_log_panic,
    start_again,
    wait_for_server,
)
from explorer.lab.safety.settings import ServerCannotStart, settings_in_force
from explorer.lab.safety.undo import data_dir_option
from explorer.lab.scope import work_prefix
from explorer.lab.workloads.base import TrialContext, session_settings
from explorer.models import Capabilities, TrialResult, Variant
from explorer.server.capabilities import WATCHED_GUCS
from explorer.server.failures import failure_reason, is_user_facing

FLUSH_WAIT = 0.3
"""Pause after a trial's sessions close: their statistics are flushed when they exit."""


def counters_sql(caps: Capabilities) -> str:
    """WAL inserted so far, and pages added to relations by extension (PG 16+)."""
    pages = "NULL::bigint"
    if caps.pg_stat_io != "none":
        added = "extend_bytes" if caps.pg_stat_io == "split_bytes" else "extends * op_bytes"
        pages = (
            f"(SELECT coalesce(sum({added}), 0)::bigint / current_setting('block_size')::int"
            " FROM pg_stat_io WHERE object IN ('relation', 'temp relation'))"
        )
    return (
        f"SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint AS wal_bytes, "
        f"{pages} AS extended_pages"
    )


async def read_counters(conn: asyncpg.Connection, sql: str) -> dict[str, int]:
    """The counters that are available; none where the server cannot say (a standby)."""
    try:
        row = await conn.fetchrow(sql)
    except asyncpg.PostgresError:
        return {}
    return {k: int(v) for k, v in dict(row).items() if v is not None} if row else {}


async def settle(ctx: RunContext) -> None:
    """CHECKPOINT (said once a run when not allowed), then the profile's pause."""
    try:
        conn = await ctx.target.connect("admin")
        try:
            await conn.execute("CHECKPOINT")
        finally:
            await conn.close()
    except asyncpg.InsufficientPrivilegeError:
        if not ctx.said_no_checkpoint:  # once a run, not once a trial
            ctx.said_no_checkpoint = True
            ctx.notice(
                "CHECKPOINT needs superuser or pg_checkpoint; runs start without it",
                "warning",
            )
    pause = ctx.options.settle_seconds
    await asyncio.sleep(ctx.profile.settle_seconds if pause is None else pause)


def trial_context(
    ctx: RunContext, scope: RunScope, variant: Variant, repeat: int
) -> tuple[TrialContext, dict[str, str], list[bool]]:
    """The workload's context for one trial, the server settings the variant wants, and a
    flag set once the statistics window opened (after the first CHECKPOINT)."""
    workload, caps, sampler = scope.workload, scope.caps, scope.sampler
    window_open = [False]

    async def settled() -> None:
        # The statistics window opens after the first CHECKPOINT, so setup and the
        # checkpoint's own writes are not charged to the variant.
        await settle(ctx)
        if sampler is not None and not window_open[0]:
            sampler.begin_trial(workload.relations(variant.knobs))
            window_open[0] = True

    trial = TrialContext(
        target=scope.fence.work if scope.fence is not None else ctx.target,
        fenced=scope.fence is not None,
        caps=caps,
        knobs=variant.knobs,
        variant=variant.name,
        repeat=repeat,
        workdir=scope.workdir,
        emit=ctx.emit,
        settle=settled,
        clock=ctx.clock,
        session_settings=session_settings(caps, workload.params),
    )
    server_wanted, session_wanted = split(variant.knobs, caps, fenced=trial.fenced)
    pinned = toast_pin(variant.knobs, caps)
    if pinned and "default_toast_compression" not in server_wanted:
        # A toastable column a profile does not list takes the session's default: pinned
        # to the TOAST knob, so PostgreSQL 19's lz4 default cannot change it unseen.
        session_wanted = {**pinned, **session_wanted}
    # The variant's session-level settings reach its workload sessions only.
    trial.session_settings = {**session_wanted, **trial.session_settings}
    return trial, server_wanted, window_open


async def run_trial(ctx: RunContext, scope: RunScope, variant: Variant, repeat: int) -> TrialResult:
    """One trial of `variant`: its result, or the trial stored as cancelled or failed and
    the error raised on (a cancel, a programming error, a server that cannot start)."""
    trial, server_wanted, window_open = trial_context(ctx, scope, variant, repeat)
    result = TrialResult(
        run_id=ctx.run_id,
        variant=variant.name,
        repeat=repeat,
        status="ok",
        started_at=dt.datetime.now(dt.UTC),
    )
    try:
        await measure(ctx, scope, trial, variant, server_wanted, result)
    except asyncio.CancelledError:
        result.status, result.reason = "cancelled", "cancelled by the user"
        await asyncio.shield(stop_workload(ctx, trial))
        result.phases = trial.phases
        ctx.finish(result)
        raise
    except Exception as exc:
        # The user's trouble fails this trial and the run goes on; a programming error
        # fails it too (its traceback logged), then ends the run and reaches the front end.
        result.status, result.reason = "failed", failure_reason(exc)
        ctx.lost = lost_connection(exc)
        ctx.notice(f"{variant.name} rep {repeat} failed: {result.reason}", "error")
        await stop_workload(ctx, trial)
        # pgwx's own server could not start with a variant's value: nothing more can run
        if not is_user_facing(exc) or isinstance(exc, ServerCannotStart):
            result.phases = trial.phases
            ctx.finish(result)
            raise
    else:
        await trial.close()
    result.phases = trial.phases
    sampler = scope.sampler
    if sampler is not None and window_open[0]:
        # Closed sessions publish their pg_stat_io/pg_stat_wal counters as they exit;
        # give them a moment, then take one last reading inside the window.
        await asyncio.sleep(FLUSH_WAIT)
        await sampler.sample_now()
        result.stats = sampler.end_trial()
    return result


async def measure(
    ctx: RunContext,
    scope: RunScope,
    trial: TrialContext,
    variant: Variant,
    server_wanted: dict[str, str],
    result: TrialResult,
) -> None:
    """Apply the variant's server settings, open the trial's sessions, read the settings in
    force into `result`, then run the workload's phases, watched for a lost server."""
    owner = scope.owner
    if (owner is None or owner.settings) and await scope.settings.apply(
        server_wanted, scope.contexts
    ):
        ctx.notice("server restarted; reconnecting")
        if owner is not None:
            await owner.ensure()
    trial.conn = await trial.open("main")
    side = await ctx.target.connect("probe")
    trial.extra_conns.append(side)
    sql = counters_sql(scope.caps)
    trial.counters = lambda: read_counters(side, sql)
    if scope.sampler is not None:
        trial.probe = PhaseProbe(scope.sampler, side, work_prefix())
    result.settings = await settings_in_force(
        trial.conn,
        [
            *WATCHED_GUCS,
            "default_toast_compression",
            *(n for v in ctx.variants() for n in v.knobs.settings),
        ],
    )
    level = await wal_level(trial.conn)  # 19+: the level in force, where reported
    if level.effective is not None:
        result.settings["effective_wal_level"] = level.effective
    if (mismatch := level.mismatch(variant.knobs.wal_level)) is not None:
        ctx.notice(f"{variant.name}: {mismatch}", "warning")
    booted = await postmaster_start(side)
    await run_watched(
        scope.workload.trial(trial),
        lambda: [s for s in [trial.conn, *trial.extra_conns] if s is not None],
        lambda pids: lost_reason(ctx.target, booted, pids),
    )


async def stop_workload(ctx: RunContext, trial: TrialContext) -> None:
    """End this run's workload sessions on the server (no other pgwx's), then close."""
    with contextlib.suppress(Exception):
        conn = await ctx.target.connect("admin")
        try:
            await conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE starts_with(application_name, $1) AND pid <> pg_backend_pid()",
                work_prefix(),
            )
        finally:
            await conn.close()
    await trial.close()


async def server_back(ctx: RunContext) -> None:
    """After a trial lost the server: wait until it answers, then go on with the next.

    pgwx's own server, seen down after a PANIC, is not waited for: nobody will start it,
    so the run ends with the server log's line (ServerCannotStart). Nor is one whose
    postmaster is gone (killed): it is started again at once, and the run goes on.
    """
    ctx.lost = False
    try:
        await hopeless_soon(ctx)
    except PostmasterGone:
        assert ctx.target.bundled is not None
        await start_again(ctx.target.bundled, ctx.notice)
    else:
        ctx.notice(
            f"waiting up to {SERVER_RETURN_WAIT:g} s for the server to answer again before "
            "the next trial (Ctrl-C cancels the run)",
            "warning",
        )
    while True:
        try:
            await wait_for_server(
                ctx.target,
                tick=lambda left: ctx.notice(
                    f"still waiting for the server ({left:.0f} s left; Ctrl-C cancels the run)"
                ),
                hopeless=lambda: raise_if_hopeless(ctx),
            )
            break
        except PostmasterGone:
            assert ctx.target.bundled is not None
            await start_again(ctx.target.bundled, ctx.notice)
    ctx.notice("the server answers again; going on with the next trial")


GONE_GRACE = 2.0
"""Seconds to look again for a killed postmaster before saying "waiting": a SIGKILLed process
closes its socket before the kernel marks it dead, and on a loaded machine that takes a while."""


async def hopeless_soon(ctx: RunContext) -> None:
    """raise_if_hopeless, looked at again for up to GONE_GRACE seconds while the server's own
    postmaster is not listening but not yet seen dead: a killed one is then started at once,
    not after a "waiting" line. A postmaster that listens (crash recovery) is not waited for."""
    server = ctx.target.bundled
    loop = asyncio.get_running_loop()
    deadline = loop.time() + GONE_GRACE
    while True:
        raise_if_hopeless(ctx)
        if server is None or server.holder is not None or loop.time() >= deadline:
            return
        if await asyncio.to_thread(server.listening):
            return
        await asyncio.sleep(0.1)


def raise_if_hopeless(ctx: RunContext) -> None:
    """ServerCannotStart when pgwx's own server has stopped after a PANIC: nobody will
    start it again, so waiting for it would only waste the user's time; PostmasterGone
    when the postmaster of the server this pgwx holds was killed (started again)."""
    server = ctx.target.bundled
    if server is None:
        return
    if (server.data_dir / "postmaster.pid").exists():
        if server.holder is None and postmaster_gone(server):
            raise PostmasterGone
        return  # still up (crash recovery may bring it back)
    panic = server_log_panic(server, ctx.log_from)
    if panic is not None:
        raise ServerCannotStart(
            f"PostgreSQL in {server.data_dir} stopped after a PANIC ({panic}); start it "
            f"again with `pgwx server start{data_dir_option(server)}` once the cause is fixed"
        )
