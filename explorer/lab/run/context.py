"""What the parts of one run share: the run's context and, once it is open, its scope.

`Runner` (`explorer.lab.run.runner`) conducts a run in three parts, each a module that reads
on its own and never calls back into the runner: opening it (`explorer.lab.run.opening`),
the rounds of trials (`explorer.lab.run.rounds_loop`, each trial in
`explorer.lab.run.trial`) and closing it (`explorer.lab.run.closing`). What they share is
passed to each explicitly: the `RunContext` (the server, the store, the run's id and clock,
the event sink, and the few facts one part leaves for another) and the `RunScope` that
opening the run returns.
"""

from __future__ import annotations

import contextlib
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from explorer.analysis.judge import Judgement
from explorer.analysis.rounds import RoundPlan
from explorer.lab.measure.environment import MachineLoad
from explorer.lab.measure.sampler import SamplerNotice, TrialSampler
from explorer.lab.run.request import RunOptions, select_variants
from explorer.lab.run.turns import Turnstile
from explorer.lab.safety.fence import Fence
from explorer.lab.safety.owner import RunOwner
from explorer.lab.safety.settings import Journal, ServerSettings
from explorer.lab.safety.undo import Undo
from explorer.lab.store.results import ResultStore, StoreError, StoreLost
from explorer.lab.workloads.base import Workload
from explorer.models import (
    Capabilities,
    Event,
    Notice,
    Profile,
    RunEnded,
    RunRecord,
    RunStarted,
    RunStatus,
    SampleTaken,
    ServerAxis,
    TrialEnded,
    TrialResult,
    Variant,
)
from explorer.paths import local_results_path
from explorer.server.connect import Target

RESTART_GRACE = 15.0
"""Seconds after a planned restart during which sampler reconnects are not warnings."""


@dataclass
class RunContext:
    """One run's server, store, identity, clock and event sink, and what its parts learn
    on the way that a later part needs (the journal, whether the schema was made, …)."""

    target: Target
    """The server."""
    store: ResultStore
    """Where finished trials and the event stream go: after the store was lost for good,
    the local store the run went on in (`keep_locally`), or the lost one, given up
    (`lost_for_good`)."""
    profile: Profile
    """The profile with the run's overrides applied (`effective_profile`)."""
    options: RunOptions
    """Scale, overrides, variant subset, opt-ins, sampling."""
    run_id: str
    """The run's id (its schema, its sessions' names, its stored rows)."""
    turnstile: Turnstile | None = None
    """With several servers, the turns this run takes with the others'; None alone."""
    axis: ServerAxis | None = None
    """This run's place among the servers' runs (stored with the record)."""
    caps: Capabilities | None = None
    """The server's capabilities: probed by the session, or when the run opens."""
    emit_out: Callable[[Event], None] = field(default=lambda _e: None)
    """The front end's event sink."""
    t0: float = field(default_factory=time.perf_counter)
    """When the run started (`clock`)."""
    undo: Undo = field(default_factory=Undo)
    """What putting the server settings back did (read by the front end's last line)."""
    load: MachineLoad = field(default_factory=MachineLoad)
    """The machine's load over the run."""
    journal: Journal | None = None
    """The undo journal of this server, once the run is open."""
    auto_conf: str | None = None
    """Where ALTER SYSTEM writes on this server (for a failed undo to name)."""
    log_from: int = 0
    """The bundled server's log size when the run began (a PANIC after it ends waiting)."""
    restarted_at: float = float("-inf")
    """When pgwx last restarted the server (sampler reconnects after it are expected)."""
    lost: bool = False
    """The last trial lost the server: wait for it before the next."""
    said_no_checkpoint: bool = False
    """The missing CHECKPOINT privilege was said (once a run)."""
    undid_settings: bool = False
    """Closing the run tried to put the settings back."""
    made_schema: bool = False
    """This run made its schema (only then is it, or a fence's roles, pgwx's to drop)."""
    between_open: set[str] | None = None
    """With several servers: variants whose comparison between servers was open at the
    last look of that table (None before its first look)."""
    judged: Judgement | None = None
    """The run's verdicts, judged once as it was stored as ended (None before)."""
    ended: RunStatus | None = None
    """How the run ended, as stored (None until it has)."""
    most_trials: int = 0
    """Trials the run may take at most, said when it starts (`opening.open_run`)."""
    record: RunRecord | None = None
    """The run as stored when it began (`opening.begin`)."""
    kept: list[TrialResult] = field(default_factory=list)
    """Every trial that ended, in order (kept locally if the store is lost)."""
    disclosed: str | None = None
    """What the profile changed on its own roles (said on the last line), when it did
    (`closing.say_role_changes`)."""
    store_lost: str | None = None
    """What happened when the results store was lost mid-run, and where the run is kept
    now (one sentence, for the front end's last line); None while the store answers."""
    kept_nowhere: bool = False
    """The store was lost and the run could not be kept in the local store either."""

    def clock(self) -> float:
        """Seconds since the run started."""
        return time.perf_counter() - self.t0

    def emit(self, event: Event) -> None:
        """Store the event and pass it to the front end."""
        # Events ride along with the trial's commit (an fsync on the event loop per phase
        # event stalls the app); a killed pgwx loses only the trial in flight, as it must.
        if not self.lost_for_good():
            self.store.add_event(
                self.run_id, event, commit=isinstance(event, RunStarted | RunEnded)
            )
        self.emit_out(event)

    def notice(self, message: str, level: str = "info") -> None:
        """A notice in the event stream."""
        self.emit(Notice(at=self.clock(), level=level, message=message))  # type: ignore[arg-type]

    def turn(self) -> contextlib.AbstractAsyncContextManager[None]:
        """This server's turn among the run's servers (at once when it runs alone)."""
        if self.turnstile is None or self.axis is None:
            return contextlib.nullcontext()
        return self.turnstile.turn(self.axis.position)

    def finish(self, result: TrialResult) -> TrialResult:
        """Store a finished trial and say so; a store lost for good (retried already,
        `explorer.lab.store.backends`) ends the run here with StoreLost, its trials kept
        locally (`keep_locally`), its settings put back as after any failure."""
        self.load.tick()
        self.kept.append(result)
        try:
            if not self.lost_for_good():
                self.store.add_trial(self.run_id, result)
        except StoreLost as exc:
            self.keep_locally(exc)
            self.emit(TrialEnded(at=self.clock(), result=result))
            raise StoreLost(self.store_lost or str(exc)) from None
        self.emit(TrialEnded(at=self.clock(), result=result))
        return result

    def lost_for_good(self) -> bool:
        """The store was lost and the run could not be kept anywhere else either."""
        return self.store_lost is not None and self.kept_nowhere

    def keep_locally(self, lost: StoreError) -> None:
        """The results store is lost for good: keep the run and every trial that ended in the
        local store, and go on writing there (`store_lost` says where)."""
        gone, where = self.store, local_results_path()
        assert self.record is not None
        trials = f"{len(self.kept)} finished trial{'s' if len(self.kept) != 1 else ''}"
        cause = str(lost).rstrip(".")
        try:
            if str(gone.path) == str(where):
                raise StoreError("it is the store that was lost")
            local = ResultStore(where)
            local.begin_run(self.record.model_copy(update={"trials": []}))
            for trial in self.kept:
                local.add_trial(self.run_id, trial)
            local.hold_events(self.run_id, gone.held_events(self.run_id))
        except (StoreError, OSError) as exc:
            self.store_lost = (
                f"{cause}; the run's {trials} could not be kept anywhere else either "
                f"({str(exc).rstrip('.')}): they are lost"
            )
            gone.abandon()  # a later use of it says so at once
            self.kept_nowhere = True
            return
        gone.abandon()
        self.store = local
        self.store_lost = (
            f"{cause}; run {self.run_id} and its {trials} are kept in the local store {where} "
            f"(`pgwx --results {shlex.quote(str(where))} report {self.run_id}`)"
        )

    def mark_restart(self) -> None:
        """pgwx restarted the server now."""
        self.restarted_at = self.clock()

    def on_sample(self, sample: dict[str, Any] | SamplerNotice) -> None:
        """A sample (or the sampler's notice) into the event stream."""
        if isinstance(sample, SamplerNotice):
            # Losing the sampler connection to a restart pgwx itself made is expected.
            planned = self.clock() - self.restarted_at < RESTART_GRACE
            self.notice(sample.message, "info" if planned else "warning")
            return
        self.emit(SampleTaken(at=self.clock(), sample=sample))

    def variants(self) -> list[Variant]:
        """The profile's variants, or the subset asked for."""
        return select_variants(self.profile, self.options.variants)

    def round_plan(self) -> RoundPlan:
        """A fresh plan of the run's rounds (who takes part, when to judge, when to stop)."""
        names = [v.name for v in self.variants()]
        return RoundPlan(self.profile, names, self.profile.baseline_name())


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
