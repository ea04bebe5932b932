"""A run on two identical servers, simulated: how often does anything it prints claim a
difference? Synthetic runs through the real round planning, judge and server agreement.

`simulate_servers` plays one auto-repeats run of a made-up profile on S servers that are the
same (an A/A): every server's trials log-normally noisy around the same true seconds, every
variant alike. Round by round as the runners do it: each server's `RoundPlan` votes, and
`explorer.analysis.servers.next_round` decides the common next round (the variants, or the
end). At the end every table the run prints is judged — each server's own (`judge`) and the
one between the servers (`judge_servers`) — and the run counts as a false finding when any of
them says faster or slower. No server, no clock: seeded arithmetic.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from explorer.analysis.calibration import Scenario, synthetic_record
from explorer.analysis.calibration import _trial as scenario_trial
from explorer.analysis.drift_calibration import DriftRate
from explorer.analysis.judge import judge
from explorer.analysis.rounds import RoundPlan
from explorer.analysis.servers import RoundVote, judge_servers, next_round
from explorer.models import RunRecord, ServerAxis


@dataclass(frozen=True)
class ServersOutcome:
    """What one simulated multi-server run printed."""

    false_within: bool
    """A server's own table said faster/slower."""
    false_between: bool
    """The table between the servers said faster/slower."""

    @property
    def false_any(self) -> bool:
        """Anything printed claimed a difference."""
        return self.false_within or self.false_between


def _records(s: Scenario, servers: int) -> list[RunRecord]:
    labels = ["18", *(f"18 #{i + 1}" for i in range(1, servers))]
    ids = [f"s{i}" for i in range(servers)]
    out = []
    for i in range(servers):
        record = synthetic_record(s.profile(), [])
        record.id = ids[i]
        record.axis = ServerAxis(group=ids[0], label=labels[i], position=i, runs=ids, labels=labels)
        out.append(record)
    return out


def simulate_servers(s: Scenario, rng: random.Random, servers: int = 2) -> ServersOutcome:
    """One auto run of scenario `s` (no true effect) on `servers` identical servers."""
    records = _records(s, servers)
    profile = records[0].profile
    names = [v.name for v in profile.variants]
    plans = [RoundPlan(profile, names, names[0]) for _ in records]
    variants: list[str] | None = list(names)
    between: set[str] | None = None
    done = 0
    while variants is not None:
        for record, plan in zip(records, plans, strict=True):
            for name in plan.order(done):
                if name in variants:
                    trial = scenario_trial(s, names.index(name), done + 1, rng)
                    record.trials.append(trial)
        done += 1
        votes = []
        for record, plan in zip(records, plans, strict=True):
            at_look = plan.auto and done in plan.looks
            more = plan.after_round(done, judge(record) if at_look else None, 0.0)
            votes.append(RoundVote(more, list(plan.active), plan.stopped_why, record, 0.0, 0.0))
        variants, between = next_round(
            votes, measured=done, profile=profile, variants=names, between=between
        )
        if variants is not None:
            for plan in plans:
                plan.active = list(variants)
    within = any(v.decided for r in records for v in judge(r).verdicts.values())
    between_false = any(row.verdict.decided for row in judge_servers(records).rows)
    return ServersOutcome(false_within=within, false_between=between_false)


def servers_false_rate(
    s: Scenario, runs: int, seed: int = 18, servers: int = 2
) -> tuple[DriftRate, DriftRate, DriftRate]:
    """(any table, a server's own table, the between-servers table): runs with a false
    faster/slower, each with its count, over `runs` simulated A/A runs."""
    rng = random.Random(seed)
    outs = [simulate_servers(s, rng, servers) for _ in range(runs)]
    return (
        DriftRate(runs, sum(o.false_any for o in outs)),
        DriftRate(runs, sum(o.false_within for o in outs)),
        DriftRate(runs, sum(o.false_between for o in outs)),
    )
