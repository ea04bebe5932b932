"""Closing a run: the last of the runner's three parts (`explorer.lab.run.context`).

However the rounds ended — finished, failed, cancelled — the undo runs to its end (however
often cancelled meanwhile): the sampler stopped, the server settings put back, the
workload's leftovers, the fence's roles and the run's schema removed (what the profile
changed on its own roles said first), and what could not go named (`wind_down`). Then the
run is stored as ended and said so (`close_run`); a results store lost for good there keeps
the run in the local store (`RunContext.keep_locally`). Nothing here calls back into the
runner: each function takes the run's context and scope.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from explorer.analysis.conditions import warnings as machine_warnings
from explorer.lab.run.context import RunContext, RunScope
from explorer.lab.safety.fence import leftovers, release, role_changes, tear_down
from explorer.lab.safety.guard import drop_schema
from explorer.lab.safety.leftovers import still_in_force
from explorer.lab.safety.settings import JournalUnreadable
from explorer.lab.safety.undo import Undo
from explorer.lab.scope import schema
from explorer.lab.store.results import StoreLost
from explorer.models import Environment, RunEnded, RunRecord, RunStatus, TrialResult
from explorer.server.failures import failure_reason


async def close_run(
    ctx: RunContext,
    scope: RunScope,
    sampler_task: asyncio.Task[None] | None,
    trials: list[TrialResult],
    status: RunStatus,
    reason: str | None,
) -> RunStatus:
    """Undo everything (to its end, however often cancelled meanwhile), store how the
    run ended and say so; the status stored. A cancel that came during the undo is
    raised on."""
    cancelled_late = await undo_whatever_comes(
        ctx, wind_down_in_turn(ctx, scope, sampler_task, cancelled=status == "cancelled")
    )
    if status == "finished" and trials and all(t.status != "ok" for t in trials):
        status, reason = "failed", "no trial finished"
    environment = finish_environment(ctx, scope.record)
    if not ctx.lost_for_good():
        # judged once, as the store keeps its verdicts: the front end shows that judgement
        try:
            ctx.judged = ctx.store.end_run(ctx.run_id, status, reason, environment=environment)
        except StoreLost as exc:
            ctx.keep_locally(exc)
            status, reason = "failed", ctx.store_lost
            if not ctx.lost_for_good():
                ctx.judged = ctx.store.end_run(ctx.run_id, status, reason, environment=environment)
    ctx.ended = status
    # (a store lost for good gets no more events: `RunContext.emit`)
    ctx.emit(RunEnded(at=ctx.clock(), run_id=ctx.run_id, status=status, reason=reason))
    if cancelled_late and status != "cancelled":
        raise asyncio.CancelledError  # the caller asked to stop: it is told so
    return status


async def undo_whatever_comes(ctx: RunContext, undo: Coroutine[Any, Any, None]) -> bool:
    """Run the undo to its end, however many times the run is cancelled meanwhile (a
    second Ctrl-C, another SIGTERM); True when a cancel came during it."""
    task = asyncio.ensure_future(undo)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done():
                break
            cancelled = True
            ctx.notice("still putting the server back; one moment", "warning")
    task.result()
    return cancelled


async def wind_down_in_turn(
    ctx: RunContext,
    scope: RunScope,
    sampler_task: asyncio.Task[None] | None,
    *,
    cancelled: bool,
) -> None:
    """`wind_down`, in this server's turn when the run ended by itself: putting settings
    back (a restart, perhaps) must not run while another server is measured. A cancelled
    run winds down at once: nothing more is measured."""
    if cancelled or ctx.turnstile is None:
        await wind_down(ctx, scope, sampler_task)
        return
    async with ctx.turn():
        await wind_down(ctx, scope, sampler_task)


async def wind_down(
    ctx: RunContext, scope: RunScope, sampler_task: asyncio.Task[None] | None
) -> None:
    """Undo everything, whatever happened. Each step is tried even if another fails."""
    if sampler_task is not None:
        await stop_sampler(ctx, sampler_task)
    owner = scope.owner
    steps: list[tuple[str, Coroutine[Any, Any, object]]] = [
        ("clean up the workload", scope.workload.cleanup(ctx.target)),
        ("look at what the profile did to its roles", say_role_changes(ctx, scope)),
        ("end the fenced roles' sessions", release_fence(ctx, scope)),
        (f"drop schema {schema()}", drop_run_schema(ctx)),
        ("drop the fenced roles", drop_fence(ctx, scope)),
        ("look for what the run left", say_leftovers(ctx)),
    ]
    if owner is None or owner.settings:
        steps.insert(0, ("restore server settings", put_back(ctx, scope)))
    for what, step in steps:
        try:
            await step
        except Exception as exc:
            ctx.notice(f"could not {what}: {failure_reason(exc)}", "error")
    if owner is not None:
        await owner.close()


async def stop_sampler(ctx: RunContext, task: asyncio.Task[None]) -> None:
    """Cancel the sampler; if it had died of an error, say so (a bug's traceback logged)."""
    task.cancel()
    await asyncio.wait({task})
    error = None if task.cancelled() else task.exception()
    if error is not None:
        ctx.notice(f"the statistics sampler failed: {failure_reason(error)}", "error")


async def put_back(ctx: RunContext, scope: RunScope) -> None:
    """Undo the server settings; when that fails, say what is still in force and where."""
    settings, undo = scope.settings, ctx.undo
    ctx.undid_settings = True
    try:
        undo.put_back = await settings.restore(scope.contexts)
    except Exception as exc:
        left = settings.journal.load()
        why = undo.why = failure_reason(exc)
        undo.put_back = [n for n in settings.started_with if n not in left]
        if not left:
            ctx.notice(f"could not finish restoring server settings: {why}", "error")
        else:
            ctx.notice(still_in_force(left, ctx.auto_conf, why), "error")
    undo.set_aside = dict(settings.set_aside)
    undo.put_back = list(dict.fromkeys([*settings.repaired, *undo.put_back]))


def undo_outcome(ctx: RunContext) -> Undo:
    """What the undo did, with what is left read back from the journal now (a second
    Ctrl-C may have cut the undo short: the journal is the truth, not the plan)."""
    # Only a run that held the settings lock undoes: the journal is shared with the other
    # pgwx of this user on this server, whose settings are its own to put back.
    if ctx.journal is not None and ctx.undid_settings:
        try:
            ctx.undo.left = ctx.journal.load()
        except JournalUnreadable as exc:
            ctx.undo.unknown = str(exc)
    return ctx.undo


async def drop_run_schema(ctx: RunContext) -> None:
    """Drop this run's schema without waiting forever on someone else's lock (say whose)."""
    if not ctx.made_schema:
        return  # a schema of this name that pgwx did not make is not pgwx's to drop
    conn = await ctx.target.connect("admin")
    try:
        blocked = await drop_schema(conn, schema())
    finally:
        await conn.close()
    if blocked:
        ctx.notice(blocked, "error")


def had_fence(ctx: RunContext, scope: RunScope) -> bool:
    """Whether the run may have roles of its own on the server."""
    # Also when building the fence was cut short: only roles marked as this run's go.
    return scope.fence is not None or (scope.workload.runs_user_sql and ctx.made_schema)


async def release_fence(ctx: RunContext, scope: RunScope) -> None:
    """End the roles' sessions and prepared transactions: they hold locks in the schema."""
    if had_fence(ctx, scope):
        problem = await release(ctx.target, ctx.run_id)
        if problem:
            ctx.notice(problem, "error")


async def drop_fence(ctx: RunContext, scope: RunScope) -> None:
    """Drop the run's roles (after its schema), saying what could not go."""
    if had_fence(ctx, scope):
        problem = await tear_down(ctx.target, ctx.run_id)
        if problem:
            ctx.notice(problem, "error")


async def say_role_changes(ctx: RunContext, scope: RunScope) -> None:
    """Say what the profile changed on its own roles (password, settings): they are
    dropped next, and what was changed goes with them (`ctx.disclosed`, for the last line)."""
    if scope.fence is None:
        return
    changed = await role_changes(ctx.target, scope.fence, ctx.run_id, schema())
    if changed:
        ctx.disclosed = (
            "the profile changed its own role during the run ("
            + "; ".join(changed)
            + "); pgwx drops the role at the end, and that goes with it"
        )
        ctx.notice(ctx.disclosed, "warning")


async def say_leftovers(ctx: RunContext) -> None:
    """Name what of the run is still on the server after the wind-down (none, normally)."""
    if not ctx.made_schema:
        return
    conn = await ctx.target.connect("admin")
    try:
        left = await leftovers(conn, ctx.run_id, schema())
    finally:
        await conn.close()
    if left:
        ctx.notice(
            "left on the server after the run: " + ", ".join(left) + " (the sentences "
            "above say why); pgwx drops them at its next start once nothing holds them",
            "error",
        )


def finish_environment(ctx: RunContext, record: RunRecord) -> Environment | None:
    """The start's environment with the machine's load over the run, and its warnings."""
    env = record.environment
    if env is None:
        return None
    if env.same_machine:
        env.cpu = ctx.load.finish()
    env.warnings = machine_warnings(env)
    for line in env.warnings:
        ctx.notice(line, "warning")
    return env
