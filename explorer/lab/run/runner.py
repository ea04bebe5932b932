"""One run of a profile's matrix, as a stream of typed events.

The runner owns the order of things: variants in balanced rounds (A B C, C B A, …), a
warm-up round first, more rounds while the verdicts are undecided (repeats = "auto"), apply each
variant's knobs, CHECKPOINT and settle, time the phases, store each finished trial before the
next starts, and undo everything at the end — finished, failed or cancelled. What a dead pgwx
left is put back once per session (`explorer.lab.run.session`). It never imports textual; the
CLI, the TUI and replay all read the same events.

`Runner` is the conductor of three parts, each a module of its own that takes the run's
context (`explorer.lab.run.context`) and never calls back into the runner: opening the run
(`explorer.lab.run.opening`), its rounds (`explorer.lab.run.rounds_loop`, each trial in
`explorer.lab.run.trial`) and closing it (`explorer.lab.run.closing`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from explorer.analysis.judge import Judgement
from explorer.analysis.rounds import RoundPlan
from explorer.analysis.verdict import balanced_order
from explorer.lab.run.closing import close_run, undo_outcome
from explorer.lab.run.context import RunContext, RunScope
from explorer.lab.run.opening import open_run, prepare
from explorer.lab.run.request import RunOptions
from explorer.lab.run.rounds_loop import run_rounds
from explorer.lab.run.scratch import scratch_dir
from explorer.lab.run.trial import counters_sql
from explorer.lab.run.turns import Turnstile
from explorer.lab.safety.undo import Undo
from explorer.lab.scope import run_scope
from explorer.lab.store.results import ResultStore, new_run_id
from explorer.lab.workloads import build_workload
from explorer.lab.workloads.base import Workload
from explorer.lab.workloads.data_bounds import data_bounds
from explorer.models import (
    Capabilities,
    Event,
    Profile,
    RunRecord,
    RunStatus,
    ServerAxis,
    TrialResult,
    Variant,
)
from explorer.server.connect import Target
from explorer.server.failures import failure_reason, is_user_facing

__all__ = ["RunOptions", "RunScope", "Runner", "counters_sql", "effective_profile", "interleave"]


def interleave(variants: list[Variant], repeats: int) -> list[tuple[Variant, int]]:
    """A B C, C B A, A B C …, repeats 1-based: every variant sees the same drift."""
    return [(v, r + 1) for v, r in balanced_order(variants, repeats)]


def effective_profile(profile: Profile, options: RunOptions) -> Profile:
    """The profile with the run's overrides applied: what the store keeps and reports use."""
    update: dict[str, Any] = {}
    if options.repeats is not None:
        update["repeats"] = options.repeats
    if options.warmup is not None:
        update["warmup"] = options.warmup
    if options.threshold is not None:
        update["threshold"] = options.threshold
    if options.budget is not None:
        update["budget"] = options.budget
    return profile.model_copy(update=update) if update else profile


class Runner:
    """Runs one profile against one server.

    Args:
        target: The server.
        profile: What to run (validated).
        store: Where finished trials and the event stream go.
        options: Scale, repeats, variant subset, opt-ins, and whether (and how often) the
            statistics sampler runs.
        caps: The server's capabilities, already probed by the session; None to probe here.
        turnstile: With several servers in one run, the turns this runner takes with the
            others' runners (`explorer.lab.run.turns`); None when it runs alone.
        axis: This run's place among the servers' runs (stored with the record).
    """

    def __init__(
        self,
        target: Target,
        profile: Profile,
        store: ResultStore,
        options: RunOptions | None = None,
        *,
        caps: Capabilities | None = None,
        turnstile: Turnstile | None = None,
        axis: ServerAxis | None = None,
    ) -> None:
        options = options or RunOptions()
        self.ctx = RunContext(
            target=target,
            store=store,
            profile=effective_profile(profile, options),
            options=options,
            run_id=new_run_id(),
            turnstile=turnstile,
            axis=axis,
            caps=caps,
        )
        """What the run's parts share (`explorer.lab.run.context`)."""

    # ------------------------------------------------------------------ what the run is
    @property
    def target(self) -> Target:
        """The server."""
        return self.ctx.target

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.ctx.run_id

    @run_id.setter
    def run_id(self, run_id: str) -> None:
        self.ctx.run_id = run_id

    @property
    def axis(self) -> ServerAxis | None:
        """This run's place among the servers' runs."""
        return self.ctx.axis

    @axis.setter
    def axis(self, axis: ServerAxis | None) -> None:
        self.ctx.axis = axis

    @property
    def caps(self) -> Capabilities | None:
        """The server's capabilities (None until probed)."""
        return self.ctx.caps

    @property
    def undo(self) -> Undo:
        """What putting the server settings back did (read by the front end's last line)."""
        return self.ctx.undo

    @property
    def ended(self) -> RunStatus | None:
        """How the run ended, as stored (None until it has): a cancel that comes during the
        undo of a run that had finished leaves it `finished`."""
        return self.ctx.ended

    @property
    def disclosed(self) -> str | None:
        """What the profile changed on its own roles (said on the last line), when it did."""
        return self.ctx.disclosed

    @property
    def store_lost(self) -> str | None:
        """What happened when the results store was lost mid-run, and where the run is kept
        now (one sentence, for the front end's last line); None while the store answers."""
        return self.ctx.store_lost

    @property
    def store(self) -> ResultStore | None:
        """Where the run is kept: the store it was given, the local store it went on in
        after that one was lost, or None when it could be kept nowhere."""
        return None if self.ctx.lost_for_good() else self.ctx.store

    @property
    def judged(self) -> Judgement | None:
        """The run's verdicts, judged once as it ended and was stored (None until then)."""
        return self.ctx.judged

    def clock(self) -> float:
        """Seconds since the run started."""
        return self.ctx.clock()

    def variants(self) -> list[Variant]:
        """The profile's variants, or the subset asked for."""
        return self.ctx.variants()

    def rounds(self) -> int:
        """Rounds planned at the start: warm-up plus the fixed repeats or the first look."""
        return self.round_plan().first_rounds()

    def round_plan(self) -> RoundPlan:
        """A fresh plan of the run's rounds (who takes part, when to judge, when to stop)."""
        return self.ctx.round_plan()

    def plan(self) -> list[tuple[Variant, int]]:
        """The trials planned at the start, in order; repeats are 1-based rounds.

        With repeats = "auto" more rounds may follow (`explorer.lab.run.rounds_loop`).
        """
        return interleave(self.variants(), self.rounds())

    def build_workload(self) -> Workload:
        """The profile's workload with its parameters validated and scaled (the one the run
        request built for its size estimate when it came with the options, else built here),
        and its data bounds set from its size, --scale and --allow-large."""
        workload = self.ctx.options.workload
        if workload is None:
            workload = build_workload(self.ctx.profile, self.ctx.options.scale)
        _rows, size = workload.params.estimate()
        workload.bounds = data_bounds(size, self.ctx.options.scale, self.ctx.options.allow_large)
        return workload

    def undo_outcome(self) -> Undo:
        """What the undo did, with what is left read back from the journal now (a second
        Ctrl-C may have cut the undo short: the journal is the truth, not the plan)."""
        return undo_outcome(self.ctx)

    # ------------------------------------------------------------------ the run
    async def run(self, emit: Callable[[Event], None] | None = None) -> RunRecord:
        """Run the whole matrix, calling `emit` for every event; returns the stored record.

        Cancelling the task that awaits this cancels the statement on the server, undoes
        every knob, stores the run as cancelled and then re-raises CancelledError.

        The run works in its own schema and tags its sessions with its id (see
        `explorer.lab.scope.run_scope`), so another pgwx on the same server is left alone.

        Raises:
            ServerBusy: the run would change server settings while another pgwx's are in force.
        """
        # Every way out removes the scratch directory: finished, failed before the run
        # began, cancelled, or cancelled again while the undo was still going; the ones runs
        # killed outright left behind go as this one starts (see `explorer.lab.run.scratch`).
        with scratch_dir() as workdir, run_scope(self.run_id):
            try:
                return await self._run(emit, workdir)
            finally:
                if self.ctx.turnstile is not None and self.axis is not None:
                    # however this run ended, the other servers' runs go on taking turns
                    await asyncio.shield(self.ctx.turnstile.leave(self.axis.position))

    async def _run(self, emit: Callable[[Event], None] | None, workdir: Path) -> RunRecord:
        """`run`, inside the run's scope, with the scratch directory made by the caller: the
        run opened, its rounds, and closing it (the undo) however they end."""
        ctx = self.ctx
        ctx.emit_out = emit or (lambda _e: None)
        ctx.t0 = time.perf_counter()
        plan = self.plan()
        scope = await open_run(ctx, workdir, self.build_workload(), plan)
        sampler_task: asyncio.Task[None] | None = None
        status: RunStatus = "finished"
        reason: str | None = None
        trials: list[TrialResult] = []
        try:
            sampler_task = await prepare(ctx, scope)
            await run_rounds(ctx, scope, trials)
        except asyncio.CancelledError:
            status, reason = "cancelled", "cancelled by the user"
            raise
        except Exception as exc:
            # A programming error keeps its traceback (logged, and raised on to the front end).
            status, reason = "failed", failure_reason(exc)
            if not is_user_facing(exc):
                raise
        finally:
            await close_run(ctx, scope, sampler_task, trials, status, reason)
        if ctx.lost_for_good():
            # Nothing holds the run any more: the record as it ended, from memory.
            return scope.record.model_copy(
                update={"trials": list(ctx.kept), "status": "failed", "reason": ctx.store_lost}
            )
        return ctx.store.load(self.run_id)
