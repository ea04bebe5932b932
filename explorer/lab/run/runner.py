"""One run of a profile's matrix, as a stream of typed events.

The runner owns the order of things: variants in balanced rounds (A B C, C B A, …), a
warm-up round first, more rounds while the verdicts are undecided (repeats = "auto"), apply each
variant's knobs, CHECKPOINT and settle, time the phases, store each finished trial before the
next starts, and undo everything at the end — finished, failed or cancelled. What a dead pgwx
left is put back once per session (`explorer.lab.run.session`). It never imports textual; the
CLI, the TUI and replay all read the same events.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import shlex
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg

from explorer.analysis.conditions import warnings as machine_warnings
from explorer.analysis.judge import Judgement, judge, undecided_text
from explorer.analysis.rounds import RoundPlan
from explorer.analysis.servers import RoundVote, next_round
from explorer.analysis.verdict import balanced_order
from explorer.lab.measure.environment import MachineLoad
from explorer.lab.measure.environment import capture as capture_environment
from explorer.lab.measure.probe import PhaseProbe
from explorer.lab.measure.sampler import Sampler, SamplerNotice, TrialSampler
from explorer.lab.measure.wal_level import wal_level
from explorer.lab.profiles.anysetting import learn_settings, split, toast_pin
from explorer.lab.profiles.availability import unavailable_reason
from explorer.lab.run.request import RunOptions, select_variants
from explorer.lab.run.scratch import scratch_dir
from explorer.lab.run.turns import Turnstile
from explorer.lab.safety.fence import (
    Fence,
    FenceUnavailable,
    build_fence,
    fence_refusal,
    leftovers,
    release,
    role_changes,
    tear_down,
)
from explorer.lab.safety.guard import (
    SERVER_RETURN_WAIT,
    PostmasterGone,
    drop_schema,
    log_size,
    lost_connection,
    lost_reason,
    postmaster_gone,
    postmaster_start,
    run_watched,
    server_log_panic,
    start_again,
    wait_for_server,
)
from explorer.lab.safety.leftovers import (
    auto_conf_path,
    foreign_notice,
    off_defaults,
    still_in_force,
)
from explorer.lab.safety.owner import RunOwner
from explorer.lab.safety.settings import (
    Journal,
    JournalUnreadable,
    ServerCannotStart,
    ServerSettings,
    settings_in_force,
)
from explorer.lab.safety.undo import Undo, data_dir_option
from explorer.lab.scope import (
    create_marked_schema,
    foreign_schema,
    run_scope,
    schema,
    work_prefix,
)
from explorer.lab.store.results import ResultStore, StoreError, StoreLost, new_run_id
from explorer.lab.workloads import build_workload
from explorer.lab.workloads.base import TrialContext, Workload, WorkloadError, session_settings
from explorer.lab.workloads.data_bounds import data_bounds
from explorer.models import (
    Capabilities,
    Environment,
    Event,
    Notice,
    Profile,
    RunEnded,
    RunRecord,
    RunStarted,
    RunStatus,
    SampleTaken,
    ServerAxis,
    ServerInfo,
    TableKind,
    TrialEnded,
    TrialResult,
    TrialStarted,
    Variant,
)
from explorer.paths import local_results_path
from explorer.server.capabilities import WATCHED_GUCS, probe
from explorer.server.connect import ConnectError, Target
from explorer.server.failures import failure_reason, is_user_facing, one_sentence

FLUSH_WAIT = 0.3
"""Pause after a trial's sessions close: their statistics are flushed when they exit."""

RESTART_GRACE = 15.0
"""Seconds after a planned restart during which sampler reconnects are not warnings."""


@dataclass
class RunScope:
    """What every trial of one run shares, built once after the probe."""

    workload: Workload
    """The profile's workload, scaled."""
    caps: Capabilities
    """What the server can do."""
    workdir: Path
    """The run's private scratch directory."""
    settings: ServerSettings
    """Applies each variant's server settings and undoes them."""
    contexts: dict[str, str]
    """Setting name → pg_settings.context, to know which changes need a restart."""
    record: RunRecord
    """The run as stored when it began (its trials are added as they end)."""
    sampler: TrialSampler | None = None
    """The statistics sampler, None when sampling is off."""
    owner: RunOwner | None = None
    """The session holding the run's advisory locks (settings lock only if it changes any)."""
    fence: Fence | None = None
    """The roles the profile's own SQL runs as (sql workload); None for pgwx's own loads."""
    plan: list[tuple[Variant, int]] = field(default_factory=list)
    """The trials planned at the start, in order."""
    reasons: dict[str, str | None] = field(default_factory=dict)
    """Variant → why this server cannot run it (None: it can)."""


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


async def _read_counters(conn: asyncpg.Connection, sql: str) -> dict[str, int]:
    """The counters that are available; none where the server cannot say (a standby)."""
    try:
        row = await conn.fetchrow(sql)
    except asyncpg.PostgresError:
        return {}
    return {k: int(v) for k, v in dict(row).items() if v is not None} if row else {}


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
        self.target = target
        self.turnstile = turnstile
        self.axis = axis
        self.options = options or RunOptions()
        self.profile = effective_profile(profile, self.options)
        self.store = store
        self.run_id = new_run_id()
        self._t0 = time.perf_counter()
        self._emit_out: Callable[[Event], None] = lambda _e: None
        self.caps: Capabilities | None = caps
        self._restarted_at = float("-inf")
        self._load = MachineLoad()
        self._lost = False
        self._auto_conf: str | None = None
        self._journal: Journal | None = None
        self.undo = Undo()
        self.ended: RunStatus | None = None
        """How the run ended, as stored (None until it has): a cancel that comes during the
        undo of a run that had finished leaves it `finished`."""
        """What putting the server settings back did (read by the front end's last line)."""
        self._log_from = 0
        self._said_no_checkpoint = False
        self._undid_settings = False
        self._made_schema = False
        self._record: RunRecord | None = None
        """The run as stored when it began."""
        self._kept: list[TrialResult] = []
        """Every trial that ended, in order (kept locally if the store is lost)."""
        self.disclosed: str | None = None
        """What the profile changed on its own roles (said on the last line), when it did."""
        self.store_lost: str | None = None
        """What happened when the results store was lost mid-run, and where the run is kept
        now (one sentence, for the front end's last line); None while the store answers."""
        self._between_open: set[str] | None = None
        """With several servers: variants whose comparison between servers was open at the
        last look of that table (None before its first look)."""
        self._most_trials = 0
        """Trials the run may take at most, said when it starts (see `_open_run`)."""

    # ------------------------------------------------------------------ plumbing
    def _turn(self) -> contextlib.AbstractAsyncContextManager[None]:
        """This server's turn among the run's servers (at once when it runs alone)."""
        if self.turnstile is None or self.axis is None:
            return contextlib.nullcontext()
        return self.turnstile.turn(self.axis.position)

    def clock(self) -> float:
        """Seconds since the run started."""
        return time.perf_counter() - self._t0

    def _emit(self, event: Event) -> None:
        # Events ride along with the trial's commit (an fsync on the event loop per phase
        # event stalls the app); a killed pgwx loses only the trial in flight, as it must.
        if not self._lost_for_good():
            self.store.add_event(
                self.run_id, event, commit=isinstance(event, RunStarted | RunEnded)
            )
        self._emit_out(event)

    def _notice(self, message: str, level: str = "info") -> None:
        self._emit(Notice(at=self.clock(), level=level, message=message))  # type: ignore[arg-type]

    def variants(self) -> list[Variant]:
        """The profile's variants, or the subset asked for."""
        return select_variants(self.profile, self.options.variants)

    def rounds(self) -> int:
        """Rounds planned at the start: warm-up plus the fixed repeats or the first look."""
        return self.round_plan().first_rounds()

    def round_plan(self) -> RoundPlan:
        """A fresh plan of the run's rounds (who takes part, when to judge, when to stop)."""
        names = [v.name for v in self.variants()]
        return RoundPlan(self.profile, names, self.profile.baseline_name())

    def plan(self) -> list[tuple[Variant, int]]:
        """The trials planned at the start, in order; repeats are 1-based rounds.

        With repeats = "auto" more rounds may follow (`explorer.lab.run.rounds`).
        """
        return interleave(self.variants(), self.rounds())

    def _judge_look(
        self, record: RunRecord, trials: list[TrialResult], rounds: RoundPlan, done: int
    ) -> Judgement | None:
        """At a look of an auto run, the judgement of the trials so far; None otherwise."""
        measured = done - self.profile.warmup
        if not rounds.auto or measured not in rounds.looks:
            return None
        skipped = {t.variant for t in trials if t.status == "skipped"}
        names = [n for n in rounds.variants if n not in skipped]
        if rounds.baseline not in names:
            return Judgement(baseline=rounds.baseline, threshold=self.profile.threshold)
        return judge(record.model_copy(update={"trials": trials}), variants=names)

    def _say_after_look(
        self, judged: Judgement, rounds: RoundPlan, before: list[str], done: int
    ) -> None:
        """Notices at a look: who stops getting rounds, and why the run ends if it does."""
        measured = done - self.profile.warmup
        dropped = [v for v in before if v not in rounds.active]
        if judged.verdicts and not judged.undecided:
            self._notice(f"every verdict settled after {measured} rounds")
        elif rounds.stopped_why is not None:
            self._notice(
                f"stopped after {measured} rounds: {rounds.stopped_why}. {undecided_text(judged)}",
                "warning",
            )
        elif dropped:
            self._notice(
                f"settled after {measured} rounds: {', '.join(dropped)} — no more rounds for "
                f"{'it' if len(dropped) == 1 else 'them'}"
            )

    def build_workload(self) -> Workload:
        """The profile's workload with its parameters validated and scaled (the one the run
        request built for its size estimate when it came with the options, else built here),
        and its data bounds set from its size, --scale and --allow-large."""
        workload = self.options.workload
        if workload is None:
            workload = build_workload(self.profile, self.options.scale)
        _rows, size = workload.params.estimate()
        workload.bounds = data_bounds(size, self.options.scale, self.options.allow_large)
        return workload

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
                if self.turnstile is not None and self.axis is not None:
                    # however this run ended, the other servers' runs go on taking turns
                    await asyncio.shield(self.turnstile.leave(self.axis.position))

    async def _run(self, emit: Callable[[Event], None] | None, workdir: Path) -> RunRecord:
        """`run`, inside the run's scope, with the scratch directory made by the caller: the
        run opened, its rounds, and closing it (the undo) however they end."""
        self._emit_out = emit or (lambda _e: None)
        self._t0 = time.perf_counter()
        scope = await self._open_run(workdir)
        sampler_task: asyncio.Task[None] | None = None
        status: RunStatus = "finished"
        reason: str | None = None
        trials: list[TrialResult] = []
        try:
            sampler_task = await self._prepare(scope)
            await self._rounds(scope, trials)
        except asyncio.CancelledError:
            status, reason = "cancelled", "cancelled by the user"
            raise
        except Exception as exc:
            # A programming error keeps its traceback (logged, and raised on to the front end).
            status, reason = "failed", failure_reason(exc)
            if not is_user_facing(exc):
                raise
        finally:
            await self._close_run(scope, sampler_task, trials, status, reason)
        if self._lost_for_good():
            # Nothing holds the run any more: the record as it ended, from memory.
            return scope.record.model_copy(
                update={"trials": list(self._kept), "status": "failed", "reason": self.store_lost}
            )
        return self.store.load(self.run_id)

    # ------------------------------------------------------------------ opening the run
    async def _open_run(self, workdir: Path) -> RunScope:
        """Probe (unless the session did), look at the settings in force, take the run's
        locks, store the run as begun and say it started: what every trial then shares."""
        plan = self.plan()
        workload = self.build_workload()  # once per run: every trial and the undo use it
        caps = self.caps
        if caps is None:
            conn = await self.target.connect("admin")
            try:
                caps = self.caps = await probe(conn, owned=self.target.owned)
            finally:
                await conn.close()
        conn = await self.target.connect("admin")
        try:
            # A typo or a value out of range is said before anything runs (one sentence).
            await learn_settings(conn, caps, [v for v, _ in plan])
        finally:
            await conn.close()
        journal = self._journal = Journal(caps.system_identifier)
        if self.target.bundled is not None:
            self._log_from = log_size(self.target.bundled)
        foreign = await self._look_at_settings(journal)
        reasons = {
            v.name: unavailable_reason(
                v.knobs, caps, allow_risky=self.options.allow_risky, workload=workload
            )
            for v, _ in plan
        }
        if workload.runs_user_sql and not self.options.trust_sql:
            # A refusal, before anything is stored: not a failed run.
            why = await fence_refusal(self.target)
            if why:
                raise FenceUnavailable(why)
        owner = RunOwner(self.target, self.run_id)
        # Only a run that changes server settings takes the server-wide lock, and only such
        # a run may touch settings at all (another pgwx's may be in force).
        await owner.open(
            settings=any(
                split(v.knobs, caps, fenced=workload.runs_user_sql)[0] and not reasons[v.name]
                for v, _ in plan
            )
        )
        server = ServerInfo(
            dsn_masked=self.target.label(),
            bundled=self.target.owned,
            capabilities=caps,
            off_defaults=foreign,
        )
        record = RunRecord(
            id=self.run_id,
            profile=self.profile,
            scale=self.options.scale,
            server=server,
            started_at=dt.datetime.now(dt.UTC),
            environment=await self._environment(caps),
            axis=self.axis,
            label=self.options.label,
            ref=self.options.ref,
        )
        self._load = MachineLoad()
        try:
            self.store.begin_run(record)
        except BaseException:
            await owner.close()
            raise
        self._record = record
        rounds = self.round_plan()
        # The most trials the run may take, said once and kept: an auto run's count never
        # grows under the reader (`18 trials`, then `[27/27]`), it may only end sooner.
        self._most_trials = sum(1 for v in self.variants() if not reasons[v.name]) * (
            self.profile.warmup + rounds.most_rounds
        )
        self._emit(
            RunStarted(
                at=self.clock(),
                run_id=self.run_id,
                profile=self.profile.name,
                server=server,
                total_trials=self._most_trials,
                upto=rounds.auto,
            )
        )
        if foreign:
            self._notice(foreign_notice(foreign), "warning")
        for name, why in reasons.items():
            if why:
                self._notice(f"{name}: not available here: {why}", "warning")
        return RunScope(
            workload=workload,
            caps=caps,
            workdir=workdir,
            settings=ServerSettings(
                self.target,
                journal,
                self._notice,
                on_restart=self._mark_restart,
            ),
            contexts={n: g.context for n, g in caps.gucs.items()},
            record=record,
            sampler=(
                Sampler(
                    self.target,
                    caps,
                    interval=self.options.sample_interval,
                    workload_app_prefix=work_prefix(),
                )
                if self.options.sample
                else None
            ),
            owner=owner,
            plan=plan,
            reasons=reasons,
        )

    async def _prepare(self, scope: RunScope) -> asyncio.Task[None] | None:
        """The run's schema, the fence for the profile's own SQL, the workload's data (in
        this server's turn); then the sampler starts (its task, None when sampling is off)."""
        await self._make_schema()
        if scope.workload.runs_user_sql:
            scope.fence = await self._fence(scope.plan, scope.workload.source_tables())
        self._notice(f"preparing {scope.workload.kind} data")
        reader = scope.fence.read if scope.fence is not None else self.target
        async with self._turn():  # never while another server is measured
            await scope.workload.prepare(reader, scope.caps, scope.workdir)
        if scope.sampler is None:
            return None
        return asyncio.create_task(scope.sampler.run(self._on_sample))

    # ------------------------------------------------------------------ the rounds
    async def _rounds(self, scope: RunScope, trials: list[TrialResult]) -> None:
        """Round after round of the variants in balanced order, until the round plan (fixed
        repeats, or auto: the verdicts, max_repeats, the budget) says the run is done.

        Args:
            trials: Filled with each trial as it ends (the caller stores the run with them
                however the rounds end).
        """
        reasons = scope.reasons
        by_name = {v.name: v for v in self.variants()}
        rounds = self.round_plan()
        done, index, more = 0, 0, True
        while more:
            for name in rounds.order(done):
                if reasons[name]:
                    self._skip_once(name, done + 1, reasons[name] or "", trials)
                    continue
                index += 1
                async with self._turn():  # servers of one run alternate, trial by trial
                    self._emit(
                        TrialStarted(
                            at=self.clock(),
                            variant=name,
                            repeat=done + 1,
                            index=index,
                            total=max(index, self._most_trials),
                            upto=rounds.auto,
                            plan=rounds.progress(done, self.clock()),
                        )
                    )
                    began = self.clock()
                    result = await self._trial(scope, by_name[name], done + 1)
                result.warmup = done < self.profile.warmup
                rounds.record(name, self.clock() - began)
                trials.append(self._finish(result))
                if self._lost:
                    # The server went away mid-trial: wait for it before the next one.
                    await self._server_back()
            done += 1
            more = await self._after_round(scope.record, trials, rounds, done)

    def _skip_once(self, name: str, repeat: int, why: str, trials: list[TrialResult]) -> None:
        """A variant this server cannot run: stored as skipped, once a run."""
        if any(t.variant == name and t.status == "skipped" for t in trials):
            return
        skipped = TrialResult(
            run_id=self.run_id,
            variant=name,
            repeat=repeat,
            status="skipped",
            reason=f"not available here: {why}",
            started_at=dt.datetime.now(dt.UTC),
        )
        trials.append(self._finish(skipped))

    async def _after_round(
        self, record: RunRecord, trials: list[TrialResult], rounds: RoundPlan, done: int
    ) -> bool:
        """At the end of a round: judge at a look, say who stops, agree with the other
        servers; whether another round follows."""
        before = list(rounds.active)
        judged = self._judge_look(record, trials, rounds, done)
        more = rounds.after_round(done, judged, self.clock())
        if judged is not None:
            self._say_after_look(judged, rounds, before, done)
        if self.turnstile is not None and rounds.auto:
            more = await self._agree(rounds, record, trials, done, more)
        return more

    # ------------------------------------------------------------------ closing the run
    async def _close_run(
        self,
        scope: RunScope,
        sampler_task: asyncio.Task[None] | None,
        trials: list[TrialResult],
        status: RunStatus,
        reason: str | None,
    ) -> None:
        """Undo everything (to its end, however often cancelled meanwhile), store how the
        run ended and say so; a cancel that came during the undo is raised on."""
        cancelled_late = await self._undo_whatever_comes(
            self._wind_down_in_turn(scope, sampler_task, cancelled=status == "cancelled")
        )
        if status == "finished" and trials and all(t.status != "ok" for t in trials):
            status, reason = "failed", "no trial finished"
        environment = self._finish_environment(scope.record)
        if not self._lost_for_good():
            try:
                self.store.end_run(self.run_id, status, reason, environment=environment)
            except StoreLost as exc:
                self._keep_locally(exc)
                status, reason = "failed", self.store_lost
                if not self._lost_for_good():
                    self.store.end_run(self.run_id, status, reason, environment=environment)
        self.ended = status
        ended = RunEnded(at=self.clock(), run_id=self.run_id, status=status, reason=reason)
        if self._lost_for_good():
            self._emit_out(ended)
        else:
            self._emit(ended)
        if cancelled_late and status != "cancelled":
            raise asyncio.CancelledError  # the caller asked to stop: it is told so

    async def _undo_whatever_comes(self, wind_down: Coroutine[Any, Any, None]) -> bool:
        """Run the undo to its end, however many times the run is cancelled meanwhile (a
        second Ctrl-C, another SIGTERM); True when a cancel came during it."""
        task = asyncio.ensure_future(wind_down)
        cancelled = False
        while not task.done():
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError:
                if task.done():
                    break
                cancelled = True
                self._notice("still putting the server back; one moment", "warning")
        task.result()
        return cancelled

    async def _agree(
        self,
        rounds: RoundPlan,
        record: RunRecord,
        trials: list[TrialResult],
        done: int,
        more: bool,
    ) -> bool:
        """Auto repeats on several servers: after each round the servers agree on the next.

        They go on while any server's own comparisons, or any comparison between the servers
        (judged only at the planned looks of that table), has more to do, and run the same
        variants, so the trials keep alternating; a server that reached max_repeats or the
        budget ends the rounds for all.
        """
        assert self.turnstile is not None and self.axis is not None
        mine = RoundVote(
            more=more,
            active=list(rounds.active),
            stopped_why=rounds.stopped_why,
            run=record.model_copy(update={"trials": list(trials)}),
            clock=self.clock(),
            round_seconds=rounds.round_seconds() or 0.0,
        )
        posts = await self.turnstile.gather(self.axis.position, ("round", done), mine)
        active, self._between_open = next_round(
            [posts[i] for i in sorted(posts)],
            measured=done - self.profile.warmup,
            profile=self.profile,
            variants=rounds.variants,
            between=self._between_open,
        )
        if active is None:
            return False
        rounds.active = active
        if not more:
            self._notice(
                "going on with the other servers: comparisons on another server or between "
                "the servers are still open"
            )
        return True

    async def _make_schema(self) -> None:
        """Create the run's schema with pgwx's marker; a same-named schema is someone else's."""
        conn = await self.target.connect("admin")
        try:
            await create_marked_schema(conn, self.run_id)
        except asyncpg.DuplicateSchemaError:
            raise WorkloadError(foreign_schema(schema())) from None
        finally:
            await conn.close()
        self._made_schema = True

    async def _fence(self, plan: list[tuple[Variant, int]], reads: list[str]) -> Fence | None:
        """The roles the profile's SQL runs as; None (said in the progress) with --trust-sql."""
        temporary = any(v.knobs.table_kind is TableKind.TEMPORARY for v, _ in plan)
        try:
            fence = await build_fence(
                self.target, self.run_id, schema(), temporary=temporary, reads=reads
            )
        except FenceUnavailable as exc:
            if not self.options.trust_sql:
                raise
            self._notice(
                f"--trust-sql: the profile's SQL runs unfenced, as pgwx's own user ({exc})",
                "warning",
            )
            return None
        self._notice(f"the profile's SQL runs as {fence.roles[0]}, fenced to schema {schema()}")
        return fence

    async def _environment(self, caps: Capabilities) -> Environment | None:
        """Versions, settings and CPU at the start; None (and a warning) if unreadable."""
        try:
            conn = await self.target.connect("admin")
            try:
                return await capture_environment(conn, caps, self.target)
            finally:
                await conn.close()
        except (asyncpg.PostgresError, ConnectError, OSError) as exc:
            self._notice(f"could not record the environment: {one_sentence(exc)}", "warning")
            return None

    def _finish_environment(self, record: RunRecord) -> Environment | None:
        """The start's environment with the machine's load over the run, and its warnings."""
        env = record.environment
        if env is None:
            return None
        if env.same_machine:
            env.cpu = self._load.finish()
        env.warnings = machine_warnings(env)
        for line in env.warnings:
            self._notice(line, "warning")
        return env

    async def _look_at_settings(self, journal: Journal) -> list[str]:
        """Risky settings off their defaults that this pgwx did not set; where ALTER SYSTEM
        writes (for a failed undo to name)."""
        pending = journal.load()
        conn = await self.target.connect("admin")
        try:
            self._auto_conf = self.undo.where = await auto_conf_path(conn, self.target)
            return await off_defaults(conn, lambda name: name not in pending)
        finally:
            await conn.close()

    async def _put_back(self, scope: RunScope) -> None:
        """Undo the server settings; when that fails, say what is still in force and where."""
        settings, undo = scope.settings, self.undo
        self._undid_settings = True
        try:
            undo.put_back = await settings.restore(scope.contexts)
        except Exception as exc:
            left = settings.journal.load()
            why = undo.why = failure_reason(exc)
            undo.put_back = [n for n in settings.started_with if n not in left]
            if not left:
                self._notice(f"could not finish restoring server settings: {why}", "error")
            else:
                self._notice(still_in_force(left, self._auto_conf, why), "error")
        undo.set_aside = dict(settings.set_aside)
        undo.put_back = list(dict.fromkeys([*settings.repaired, *undo.put_back]))

    def undo_outcome(self) -> Undo:
        """What the undo did, with what is left read back from the journal now (a second
        Ctrl-C may have cut the undo short: the journal is the truth, not the plan)."""
        # Only a run that held the settings lock undoes: the journal is shared with the other
        # pgwx of this user on this server, whose settings are its own to put back.
        if self._journal is not None and self._undid_settings:
            try:
                self.undo.left = self._journal.load()
            except JournalUnreadable as exc:
                self.undo.unknown = str(exc)
        return self.undo

    def _finish(self, result: TrialResult) -> TrialResult:
        self._load.tick()
        self._kept.append(result)
        try:
            if not self._lost_for_good():
                self.store.add_trial(self.run_id, result)
        except StoreLost as exc:
            # Retried already (explorer.lab.store.backends): the run ends here, its trials
            # kept locally, its settings put back as after any failure.
            self._keep_locally(exc)
            self._emit(TrialEnded(at=self.clock(), result=result))
            raise StoreLost(self.store_lost or str(exc)) from None
        self._emit(TrialEnded(at=self.clock(), result=result))
        return result

    def _lost_for_good(self) -> bool:
        """The store was lost and the run could not be kept anywhere else either."""
        return self.store_lost is not None and self.store is None

    def _keep_locally(self, lost: StoreError) -> None:
        """The results store is lost for good: keep the run and every trial that ended in the
        local store, and go on writing there (`store_lost` says where)."""
        gone, where = self.store, local_results_path()
        assert gone is not None and self._record is not None
        trials = f"{len(self._kept)} finished trial{'s' if len(self._kept) != 1 else ''}"
        cause = str(lost).rstrip(".")
        try:
            if str(gone.path) == str(where):
                raise StoreError("it is the store that was lost")
            local = ResultStore(where)
            local.begin_run(self._record.model_copy(update={"trials": []}))
            for trial in self._kept:
                local.add_trial(self.run_id, trial)
            local.hold_events(self.run_id, gone.held_events(self.run_id))
        except (StoreError, OSError) as exc:
            self.store_lost = (
                f"{cause}; the run's {trials} could not be kept anywhere else either "
                f"({str(exc).rstrip('.')}): they are lost"
            )
            gone.abandon()
            self.store = None  # type: ignore[assignment]
            return
        gone.abandon()
        self.store = local
        self.store_lost = (
            f"{cause}; run {self.run_id} and its {trials} are kept in the local store {where} "
            f"(`pgwx --results {shlex.quote(str(where))} report {self.run_id}`)"
        )

    def _mark_restart(self) -> None:
        self._restarted_at = self.clock()

    def _on_sample(self, sample: dict[str, Any] | SamplerNotice) -> None:
        if isinstance(sample, SamplerNotice):
            # Losing the sampler connection to a restart pgwx itself made is expected.
            planned = self.clock() - self._restarted_at < RESTART_GRACE
            self._notice(sample.message, "info" if planned else "warning")
            return
        self._emit(SampleTaken(at=self.clock(), sample=sample))

    async def _admin(self, sql: str) -> None:
        conn = await self.target.connect("admin")
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    async def _settle(self) -> None:
        try:
            await self._admin("CHECKPOINT")
        except asyncpg.InsufficientPrivilegeError:
            if not self._said_no_checkpoint:  # once a run, not once a trial
                self._said_no_checkpoint = True
                self._notice(
                    "CHECKPOINT needs superuser or pg_checkpoint; runs start without it",
                    "warning",
                )
        pause = self.options.settle_seconds
        await asyncio.sleep(self.profile.settle_seconds if pause is None else pause)

    async def _trial(self, scope: RunScope, variant: Variant, repeat: int) -> TrialResult:
        workload, caps, sampler = scope.workload, scope.caps, scope.sampler
        started = dt.datetime.now(dt.UTC)
        window_open = False

        async def settle() -> None:
            # The statistics window opens after the first CHECKPOINT, so setup and the
            # checkpoint's own writes are not charged to the variant.
            nonlocal window_open
            await self._settle()
            if sampler is not None and not window_open:
                sampler.begin_trial(workload.relations(variant.knobs))
                window_open = True

        ctx = TrialContext(
            target=scope.fence.work if scope.fence is not None else self.target,
            fenced=scope.fence is not None,
            caps=caps,
            knobs=variant.knobs,
            variant=variant.name,
            repeat=repeat,
            workdir=scope.workdir,
            emit=self._emit,
            settle=settle,
            clock=self.clock,
            session_settings=session_settings(caps, workload.params),
        )
        server_wanted, session_wanted = split(variant.knobs, caps, fenced=ctx.fenced)
        pinned = toast_pin(variant.knobs, caps)
        if pinned and "default_toast_compression" not in server_wanted:
            # A toastable column a profile does not list takes the session's default: pinned
            # to the TOAST knob, so PostgreSQL 19's lz4 default cannot change it unseen.
            session_wanted = {**pinned, **session_wanted}
        # The variant's session-level settings reach its workload sessions only.
        ctx.session_settings = {**session_wanted, **ctx.session_settings}
        result = TrialResult(
            run_id=self.run_id, variant=variant.name, repeat=repeat, status="ok", started_at=started
        )
        try:
            owner = scope.owner
            if (owner is None or owner.settings) and await scope.settings.apply(
                server_wanted, scope.contexts
            ):
                self._notice("server restarted; reconnecting")
                if owner is not None:
                    await owner.ensure()
            ctx.conn = await ctx.open("main")
            side = await self.target.connect("probe")
            ctx.extra_conns.append(side)
            sql = counters_sql(caps)
            ctx.counters = lambda: _read_counters(side, sql)
            if sampler is not None:
                ctx.probe = PhaseProbe(sampler, side, work_prefix())
            result.settings = await settings_in_force(
                ctx.conn,
                [
                    *WATCHED_GUCS,
                    "default_toast_compression",
                    *(n for v in self.variants() for n in v.knobs.settings),
                ],
            )
            level = await wal_level(ctx.conn)  # 19+: the level in force, where reported
            if level.effective is not None:
                result.settings["effective_wal_level"] = level.effective
            if (mismatch := level.mismatch(variant.knobs.wal_level)) is not None:
                self._notice(f"{variant.name}: {mismatch}", "warning")
            booted = await postmaster_start(side)
            await run_watched(
                workload.trial(ctx),
                lambda: [s for s in [ctx.conn, *ctx.extra_conns] if s is not None],
                lambda pids: lost_reason(self.target, booted, pids),
            )
        except asyncio.CancelledError:
            result.status, result.reason = "cancelled", "cancelled by the user"
            await asyncio.shield(self._stop_workload(ctx))
            result.phases = ctx.phases
            self._finish(result)
            raise
        except Exception as exc:
            # The user's trouble fails this trial and the run goes on; a programming error
            # fails it too (its traceback logged), then ends the run and reaches the front end.
            result.status, result.reason = "failed", failure_reason(exc)
            self._lost = lost_connection(exc)
            self._notice(f"{variant.name} rep {repeat} failed: {result.reason}", "error")
            await self._stop_workload(ctx)
            # pgwx's own server could not start with a variant's value: nothing more can run
            if not is_user_facing(exc) or isinstance(exc, ServerCannotStart):
                result.phases = ctx.phases
                self._finish(result)
                raise
        else:
            await ctx.close()
        result.phases = ctx.phases
        if sampler is not None and window_open:
            # Closed sessions publish their pg_stat_io/pg_stat_wal counters as they exit;
            # give them a moment, then take one last reading inside the window.
            await asyncio.sleep(FLUSH_WAIT)
            await sampler.sample_now()
            result.stats = sampler.end_trial()
        return result

    async def _drop_schema(self) -> None:
        """Drop this run's schema without waiting forever on someone else's lock (say whose)."""
        if not self._made_schema:
            return  # a schema of this name that pgwx did not make is not pgwx's to drop
        conn = await self.target.connect("admin")
        try:
            blocked = await drop_schema(conn, schema())
        finally:
            await conn.close()
        if blocked:
            self._notice(blocked, "error")

    def _had_fence(self, scope: RunScope) -> bool:
        # Also when building the fence was cut short: only roles marked as this run's go.
        return scope.fence is not None or (scope.workload.runs_user_sql and self._made_schema)

    async def _release_fence(self, scope: RunScope) -> None:
        """End the roles' sessions and prepared transactions: they hold locks in the schema."""
        if self._had_fence(scope):
            problem = await release(self.target, self.run_id)
            if problem:
                self._notice(problem, "error")

    async def _say_role_changes(self, scope: RunScope) -> None:
        """Say what the profile changed on its own roles (password, settings): they are
        dropped next, and what was changed goes with them."""
        if scope.fence is None:
            return
        changed = await role_changes(self.target, scope.fence, self.run_id, schema())
        if changed:
            self.disclosed = (
                "the profile changed its own role during the run ("
                + "; ".join(changed)
                + "); pgwx drops the role at the end, and that goes with it"
            )
            self._notice(self.disclosed, "warning")

    async def _say_leftovers(self, scope: RunScope) -> None:
        """Name what of the run is still on the server after the wind-down (none, normally)."""
        if not self._made_schema:
            return
        conn = await self.target.connect("admin")
        try:
            left = await leftovers(conn, self.run_id, schema())
        finally:
            await conn.close()
        if left:
            self._notice(
                "left on the server after the run: " + ", ".join(left) + " (the sentences "
                "above say why); pgwx drops them at its next start once nothing holds them",
                "error",
            )

    async def _drop_fence(self, scope: RunScope) -> None:
        """Drop the run's roles (after its schema), saying what could not go."""
        # Also when building the fence was cut short: only roles marked as this run's go.
        if scope.fence is not None or (scope.workload.runs_user_sql and self._made_schema):
            problem = await tear_down(self.target, self.run_id)
            if problem:
                self._notice(problem, "error")

    async def _server_back(self) -> None:
        """After a trial lost the server: wait until it answers, then go on with the next.

        pgwx's own server, seen down after a PANIC, is not waited for: nobody will start it,
        so the run ends with the server log's line (ServerCannotStart). Nor is one whose
        postmaster is gone (killed): it is started again at once, and the run goes on.
        """
        self._lost = False
        try:
            self._hopeless()
        except PostmasterGone:
            assert self.target.bundled is not None
            await start_again(self.target.bundled, self._notice)
        else:
            self._notice(
                f"waiting up to {SERVER_RETURN_WAIT:g} s for the server to answer again before "
                "the next trial (Ctrl-C cancels the run)",
                "warning",
            )
        while True:
            try:
                await wait_for_server(
                    self.target,
                    tick=lambda left: self._notice(
                        f"still waiting for the server ({left:.0f} s left; Ctrl-C cancels the run)"
                    ),
                    hopeless=self._hopeless,
                )
                break
            except PostmasterGone:
                assert self.target.bundled is not None
                await start_again(self.target.bundled, self._notice)
        self._notice("the server answers again; going on with the next trial")

    def _hopeless(self) -> None:
        """ServerCannotStart when pgwx's own server has stopped after a PANIC: nobody will
        start it again, so waiting for it would only waste the user's time; PostmasterGone
        when the postmaster of the server this pgwx holds was killed (started again)."""
        server = self.target.bundled
        if server is None:
            return
        if (server.data_dir / "postmaster.pid").exists():
            if server.holder is None and postmaster_gone(server):
                raise PostmasterGone
            return  # still up (crash recovery may bring it back)
        panic = server_log_panic(server, self._log_from)
        if panic is not None:
            raise ServerCannotStart(
                f"PostgreSQL in {server.data_dir} stopped after a PANIC ({panic}); start it "
                f"again with `pgwx server start{data_dir_option(server)}` once the cause is fixed"
            )

    async def _stop_workload(self, ctx: TrialContext) -> None:
        """End this run's workload sessions on the server (no other pgwx's), then close."""
        with contextlib.suppress(Exception):
            conn = await self.target.connect("admin")
            try:
                await conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE starts_with(application_name, $1) AND pid <> pg_backend_pid()",
                    work_prefix(),
                )
            finally:
                await conn.close()
        await ctx.close()

    async def _stop_sampler(self, task: asyncio.Task[None]) -> None:
        """Cancel the sampler; if it had died of an error, say so (a bug's traceback logged)."""
        task.cancel()
        await asyncio.wait({task})
        error = None if task.cancelled() else task.exception()
        if error is not None:
            self._notice(f"the statistics sampler failed: {failure_reason(error)}", "error")

    async def _wind_down_in_turn(
        self, scope: RunScope, sampler_task: asyncio.Task[None] | None, *, cancelled: bool
    ) -> None:
        """`_wind_down`, in this server's turn when the run ended by itself: putting settings
        back (a restart, perhaps) must not run while another server is measured. A cancelled
        run winds down at once: nothing more is measured."""
        if cancelled or self.turnstile is None:
            await self._wind_down(scope, sampler_task)
            return
        async with self._turn():
            await self._wind_down(scope, sampler_task)

    async def _wind_down(self, scope: RunScope, sampler_task: asyncio.Task[None] | None) -> None:
        """Undo everything, whatever happened. Each step is tried even if another fails."""
        if sampler_task is not None:
            await self._stop_sampler(sampler_task)
        owner = scope.owner
        steps: list[tuple[str, Coroutine[Any, Any, object]]] = [
            ("clean up the workload", scope.workload.cleanup(self.target)),
            ("look at what the profile did to its roles", self._say_role_changes(scope)),
            ("end the fenced roles' sessions", self._release_fence(scope)),
            (f"drop schema {schema()}", self._drop_schema()),
            ("drop the fenced roles", self._drop_fence(scope)),
            ("look for what the run left", self._say_leftovers(scope)),
        ]
        if owner is None or owner.settings:
            steps.insert(0, ("restore server settings", self._put_back(scope)))
        for what, step in steps:
            try:
                await step
            except Exception as exc:
                self._notice(f"could not {what}: {failure_reason(exc)}", "error")
        if owner is not None:
            await owner.close()
