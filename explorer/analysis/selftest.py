"""`pgwx selftest`: this machine's noise, and how often pgwx's verdicts would be wrong here.

The self-test runs a profile's baseline against an identical copy of itself (A/A), so every
difference it sees is the machine's trial-to-trial noise. From that run this module reports,
per phase, the noise (the spread of log durations around each variant's own mean, as a
percentage), the words the run itself ended with (a `faster`/`slower` here is a false finding
by construction), the share of runs of a table shaped like the profile's that would end with
any false finding at that noise (`explorer.analysis.calibration`, through the real judge), and
the smallest noise threshold the profile's trial budget can decide at.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from statistics import NormalDist

from explorer.analysis import markdown
from explorer.analysis.calibration import Scenario, calibrate
from explorer.analysis.judge import TOTAL, judge, samples
from explorer.analysis.plan import rounds_for
from explorer.analysis.sequential import ALPHA, planned_looks, useful_looks
from explorer.analysis.verdict import POLLED_FLOOR_SECONDS
from explorer.models import Profile, RunRecord, Variant

AGAIN = "-again"
"""Suffix of the baseline's copy in a self-test."""

CALIBRATION_RUNS = 200
"""Simulated runs behind the estimated false-finding rate (its 95 % margin is about ±3 %)."""


def self_test_profile(profile: Profile) -> Profile:
    """The profile's baseline and an identical copy of it, under a self-test title."""
    base = next(v for v in profile.variants if v.name == profile.baseline_name())
    twin = Variant(name=(base.name[: 40 - len(AGAIN)] + AGAIN), knobs=base.knobs)
    return profile.model_copy(
        update={
            "title": f"self-test: {profile.title}"[:200],
            "variants": [base, twin],
            "baseline": base.name,
        }
    )


@dataclass
class PhaseNoise:
    """One phase's trial-to-trial noise in the self-test."""

    phase: str
    n: int
    """Trials it rests on (both variants)."""
    noise: float | None
    """Standard deviation of log seconds around each variant's mean (0.10 ≈ 10 %); None with
    fewer than two trials of a variant."""
    median: float | None = None
    """Median seconds over both variants."""

    @property
    def tiny(self) -> bool:
        """Below 50 ms: its relative noise is mostly timer and round-trip jitter, so it says
        nothing about the threshold the run needs."""
        return self.median is not None and self.median < POLLED_FLOOR_SECONDS


def phase_noise(record: RunRecord) -> list[PhaseNoise]:
    """Per phase (total included), the pooled spread of log durations of the measured trials."""
    s = samples(record.trials)
    out = []
    for phase in s.phases:
        squares, dof, n = 0.0, 0, 0
        pooled: list[float] = []
        for (_variant, name), values in s.seconds.items():
            logs = [math.log(x) for x in values if x > 0]
            if name != phase or len(logs) < 2:
                continue
            pooled += values
            mean = statistics.fmean(logs)
            squares += sum((x - mean) ** 2 for x in logs)
            dof += len(logs) - 1
            n += len(logs)
        spread = math.sqrt(squares / dof) if dof else None
        middle = statistics.median(pooled) if pooled else None
        out.append(PhaseNoise(phase, n, spread, middle))
    return out


def smallest_threshold(noise: float, trials: int, comparisons: int, looks: int) -> float:
    """The threshold at which `trials` per side can show `same` for two equal variants.

    The half-width of the Hodges–Lehmann interval of a log shift is about
    z · σ · √(2/n) · √(π/3) (the rank estimator's efficiency against a normal mean is 3/π),
    with z at the level each comparison gets: α split over the table's comparisons (Holm's
    first step) and the planned looks.
    """
    level = ALPHA / max(comparisons, 1) / max(looks, 1)
    z = NormalDist().inv_cdf(1 - level / 2)
    half = z * noise * math.sqrt(2 / max(trials, 1)) * math.sqrt(math.pi / 3)
    return math.expm1(half)


@dataclass
class SelfTest:
    """What the self-test found."""

    noise: list[PhaseNoise]
    false_in_run: list[str]
    """'phase (label)' of every faster/slower this A/A run ended with."""
    comparisons: int
    """Comparisons in the original profile's table (candidates × phases)."""
    false_rate: float | None
    """Estimated share of runs of the profile with any false finding at the worst noise."""
    suggested: float | None
    """Smallest threshold the profile's trials can decide at, rounded up to a whole percent."""

    def worst_noise(self) -> float | None:
        """The largest trial-to-trial noise of a phase judged as a ratio (None: unknown)."""
        return max(
            (p.noise for p in self.noise if p.noise is not None and not p.tiny), default=None
        )


def self_test(record: RunRecord, original: Profile, *, runs: int = CALIBRATION_RUNS) -> SelfTest:
    """Judge a self-test run and estimate what the noise means for `original`."""
    judged = judge(record)
    false = [f"{k[1]} ({v.label()})" for k, v in judged.verdicts.items() if v.decided]
    noise = phase_noise(record)
    worst = max((p.noise for p in noise if p.noise is not None and not p.tiny), default=None)
    phases = len([p for p in noise if p.phase != TOTAL]) or 1
    cells = (len(original.variants) - 1) * (phases + (1 if phases > 1 else 0))
    p = original
    looks = planned_looks(p.repeats, p.min_repeats, p.max_repeats)
    if p.repeats == "auto":
        looks = useful_looks(looks, max(cells, 1))
    if worst is None:
        return SelfTest(noise, false, cells, None, None)
    scenario = Scenario(
        variants=len(original.variants),
        phases=phases,
        noise=worst,
        repeats=p.repeats,
        threshold=p.threshold,
        min_repeats=p.min_repeats,
        max_repeats=p.max_repeats,
    )
    rate = calibrate(scenario, runs).false_share if len(original.variants) > 1 else None
    suggested = smallest_threshold(worst, looks[-1], max(cells, 1), len(looks))
    return SelfTest(noise, false, cells, rate, math.ceil(suggested * 100) / 100)


def to_text(result: SelfTest, original: Profile) -> str:
    """The self-test as a few lines for the terminal."""
    lines = [f"## self-test of {original.name}: the baseline against itself", ""]
    rows = []
    for p in result.noise:
        shown = "unknown (too few trials)" if p.noise is None else f"±{p.noise * 100:.1f} %"
        if p.tiny and p.noise is not None:
            shown += " (below 50 ms: judged in seconds, not counted)"
        rows.append([p.phase, p.n, shown])
    lines += markdown.table(["phase", "trials", "noise (trial to trial)"], rows)
    lines.append("")
    if result.false_in_run:
        lines.append(
            "This run found a difference between identical variants (a false finding): "
            + ", ".join(result.false_in_run)
            + "."
        )
    else:
        lines.append("This run found no difference between the identical variants, as it should.")
    if result.false_rate is not None:
        lines.append(
            f"At this noise, {result.false_rate:.0%} of runs of {original.name} "
            f"({result.comparisons} comparisons) would end with any false faster/slower "
            f"(simulated through pgwx's own judge; the promise is at most 5 %)."
        )
    if result.suggested is not None:
        now = original.threshold
        advice = (
            "the profile's threshold is fine"
            if result.suggested <= now
            else f'raise the threshold (threshold = "{result.suggested:.0%}" or --threshold)'
        )
        lines.append(
            f"Smallest threshold these trials can decide at: {result.suggested:.0%} "
            f"(the profile says {now:.0%}): {advice}, or run more repeats."
        )
    worst = result.worst_noise()
    if worst is not None and result.comparisons > 0:
        prof = original
        looks = planned_looks(prof.repeats, prof.min_repeats, prof.max_repeats)
        if prof.repeats == "auto":
            looks = useful_looks(looks, result.comparisons)
        # One round's log ratio varies √2 times one trial's.
        five, fifteen = (
            rounds_for(e, worst * math.sqrt(2), result.comparisons, len(looks))
            for e in (0.95, 0.85)
        )
        lines.append(
            f"At ±{worst:.0%} noise a 5 % effect needs about {five} rounds and a 15 % one about "
            f"{fifteen} in this profile's table (it stops at {looks[-1]}); kept for the plan of "
            "the next runs of this profile on this machine."
        )
    return "\n".join(lines) + "\n"
