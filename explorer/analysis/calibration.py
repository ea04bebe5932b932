"""Synthetic runs through the real judge and stopping rule: how often is a verdict wrong?

`simulate` plays one run of a made-up profile — variants × phases with a known true ratio,
log-normal trial-to-trial noise, optionally a fifth of the trials 1.5× slower (checkpoints) —
round by round exactly as the runner does: the same `RoundPlan` decides who takes part and
when to stop, the same `judge` decides the words at each look. `calibrate` repeats it and
counts: runs with any false `faster`/`slower`, runs that found a true effect, rounds used.
`benchmarks/verdict_calibration.py` prints the figures; `pgwx selftest` runs it at the noise
this machine showed. No server, no clock: pure arithmetic, seeded.
"""

from __future__ import annotations

import datetime as dt
import math
import random
import statistics
from dataclasses import dataclass
from typing import Literal

from explorer.analysis.judge import judge
from explorer.analysis.rounds import RoundPlan
from explorer.models import (
    Capabilities,
    PhaseResult,
    Profile,
    RunRecord,
    ServerInfo,
    TrialResult,
    Variant,
)

PHASE_SECONDS = (1.0, 2.0, 0.5)
"""True seconds of the made-up phases (above the 50 ms floor: ratios, not differences)."""

SKEW_SHARE, SKEW_FACTOR = 0.2, 1.5
"""With skewed timings, this share of trials runs this much slower (a checkpoint)."""

EPOCH = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Scenario:
    """One made-up profile and machine.

    Args:
        variants: Variants including the baseline.
        phases: Phases per trial (a total is judged too when there is more than one).
        noise: Trial-to-trial noise, the standard deviation of the log duration (0.10 ≈ 10 %).
        skewed: A fifth of the trials run 1.5× slower.
        effect: The true ratio of the first candidate, on every phase (1.0: none).
        repeats: Fixed measured rounds, or "auto".
        threshold: The noise threshold of the words.
        min_repeats: Auto repeats: the first look.
        max_repeats: Auto repeats: the last look.
    """

    variants: int = 2
    phases: int = 1
    noise: float = 0.10
    skewed: bool = False
    effect: float = 1.0
    repeats: int | Literal["auto"] = "auto"
    threshold: float = 0.03
    min_repeats: int = 5
    max_repeats: int = 30

    def profile(self) -> Profile:
        """The scenario as a profile (the judge reads repeats, looks and threshold from it)."""
        return Profile(
            name="calibration",
            title="synthetic",
            workload="synthetic",
            repeats=self.repeats,
            min_repeats=self.min_repeats,
            max_repeats=self.max_repeats,
            warmup=0,
            threshold=self.threshold,
            variants=[Variant(name=f"v{i}") for i in range(self.variants)],
        )


@dataclass
class Outcome:
    """What one simulated run ended with."""

    false_finding: bool
    """A faster/slower where the true ratio is 1."""
    found: bool
    """The first candidate's first phase called faster/slower in the true direction (only
    meaningful with an effect)."""
    found_by: int | None
    """The measured round at which it was found (None: not found)."""
    rounds: int
    """Measured rounds the run used."""


@dataclass
class Calibration:
    """`calibrate`'s counts over many runs."""

    runs: int
    false_share: float
    """Share of runs with any false faster/slower."""
    power: float
    """Share of runs that found the effect (0 without one)."""
    power_by_15: float
    """Share that found it within 15 measured rounds."""
    median_rounds: float
    """Median measured rounds used."""


def synthetic_caps(version_num: int = 180006) -> Capabilities:
    """Capabilities of a PG 18 superuser's bundled server, for runs that need no server."""
    return Capabilities(
        version_num=version_num,
        version=f"{version_num // 10000}.{version_num % 100}",
        lz4=False,
        pg_stat_io="split_bytes",
        pg_stat_checkpointer=True,
        superuser=True,
        pg_monitor=True,
        alter_system=True,
        owned=True,
        system_identifier="1",
    )


def synthetic_record(profile: Profile, trials: list[TrialResult]) -> RunRecord:
    """A stored-run shape around made-up trials, for the judge."""
    server = ServerInfo(dsn_masked="synthetic", bundled=True, capabilities=synthetic_caps())
    return RunRecord(
        id="calibration", profile=profile, server=server, started_at=EPOCH, trials=trials
    )


def _trial(s: Scenario, variant: int, repeat: int, rng: random.Random) -> TrialResult:
    ratio = s.effect if variant == 1 else 1.0
    slow = SKEW_FACTOR if s.skewed and rng.random() < SKEW_SHARE else 1.0
    seconds = {
        f"p{p + 1}": PHASE_SECONDS[p % len(PHASE_SECONDS)]
        * ratio
        * slow
        * math.exp(rng.gauss(0, s.noise))
        for p in range(s.phases)
    }
    return synthetic_trial(f"v{variant}", repeat, seconds)


def synthetic_trial(variant: str, repeat: int, seconds: dict[str, float]) -> TrialResult:
    """A finished trial of `variant` in round `repeat` with these phase durations."""
    return TrialResult(
        run_id="calibration",
        variant=variant,
        repeat=repeat,
        status="ok",
        started_at=EPOCH,
        phases=[PhaseResult(name=name, seconds=secs) for name, secs in seconds.items()],
    )


def play(s: Scenario, rng: random.Random) -> RunRecord:
    """One run of the scenario, round by round, as the runner plays it: its trials."""
    profile = s.profile()
    names = [v.name for v in profile.variants]
    plan = RoundPlan(profile, names, names[0])
    trials: list[TrialResult] = []
    done, more = 0, True
    while more:
        for name in plan.order(done):
            trials.append(_trial(s, names.index(name), done + 1, rng))
        done += 1
        at_look = plan.auto and done in plan.looks
        judged = judge(synthetic_record(profile, trials)) if at_look else None
        more = plan.after_round(done, judged, 0.0)
    return synthetic_record(profile, trials)


def simulate(s: Scenario, rng: random.Random) -> Outcome:
    """One run of the scenario and what its words got right and wrong."""
    return score(s, play(s, rng))


def score(s: Scenario, record: RunRecord) -> Outcome:
    """What a played run's words got right and wrong (the first candidate's first phase
    carries the effect)."""
    final = judge(record)
    done = max(t.repeat for t in record.trials)
    false = any(
        v.decided for (name, _), v in final.verdicts.items() if name != "v1" or s.effect == 1.0
    )
    first = final.verdicts.get(("v1", "p1"))
    want = "faster" if s.effect < 1 else "slower"
    found = s.effect != 1.0 and first is not None and first.word == want
    by = (first.look or first.n_candidate) if found and first is not None else None
    return Outcome(false_finding=false, found=found, found_by=by, rounds=done)


def calibrate(s: Scenario, runs: int, seed: int = 18) -> Calibration:
    """`runs` simulated runs of the scenario from one seed."""
    rng = random.Random(seed)
    outs = [simulate(s, rng) for _ in range(runs)]
    return Calibration(
        runs=runs,
        false_share=sum(o.false_finding for o in outs) / runs,
        power=sum(o.found for o in outs) / runs,
        power_by_15=sum(o.found_by is not None and o.found_by <= 15 for o in outs) / runs,
        median_rounds=statistics.median(o.rounds for o in outs),
    )
