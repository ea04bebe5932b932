"""A run on two servers built without a server: the shipped fk-timing-restore recording as
PG 15's share, and the same trials with every `deferred` phase twice as fast as PG 18's."""

from __future__ import annotations

import datetime as dt

from explorer.lab.store.replay import ReplaySource
from explorer.models import RunRecord, RunStarted, ServerAxis, TrialEnded, TrialResult
from tests.support.paths import ROOT

FK_TIMING = ROOT / "profiles" / "recordings" / "fk-timing-restore.pgwx"
RUNS = ["20261126-120000-bbbbb0", "20261126-120001-bbbbb1"]
LABELS = ["15", "18"]


def _faster(trial: TrialResult, variant: str, factor: float) -> TrialResult:
    if trial.variant != variant:
        return trial
    phases = [p.model_copy(update={"seconds": p.seconds * factor}) for p in trial.phases]
    return trial.model_copy(update={"phases": phases})


def two_server_group() -> list[RunRecord]:
    """The reference (15) and the other server (18): 18's deferred takes half the time."""
    tape = ReplaySource.from_file(FK_TIMING, speed=0)
    started = next(e for e in tape.events if isinstance(e, RunStarted))
    trials = [e.result for e in tape.events if isinstance(e, TrialEnded)]
    out = []
    for pos, label in enumerate(LABELS):
        mine = trials if pos == 0 else [_faster(t, "deferred", 0.5) for t in trials]
        out.append(
            RunRecord(
                id=RUNS[pos],
                profile=tape.profile,
                scale=tape.scale,
                server=started.server,
                started_at=dt.datetime(2026, 11, 26, 12, tzinfo=dt.UTC),
                status="finished",
                trials=mine,
                axis=ServerAxis(group=RUNS[0], label=label, position=pos, runs=RUNS, labels=LABELS),
            )
        )
    return out
