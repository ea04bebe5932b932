"""Paired against unpaired, with and without futility, auto against fixed — on the same data.

`explorer.analysis.calibration` plays runs whose trials are drawn as they are needed. To
compare two designs fairly this module draws a whole run's trials first — every variant, every
round up to `max_repeats`, with an optional per-round factor shared by every trial of the round
(the machine being busy for a while, which interleaving is for) — and then plays the auto
run on them through the real `RoundPlan` and `judge` (taking only the trials of the variants
still active), and judges the fixed design of `max_repeats` rounds on all of them. The switches
`explorer.analysis.paired.use_pairs` and `explorer.analysis.futility.enabled` select the
analysis. `benchmarks/verdict_calibration.py` prints the figures with their intervals.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from explorer.analysis import futility, paired
from explorer.analysis.calibration import (
    PHASE_SECONDS,
    SKEW_FACTOR,
    SKEW_SHARE,
    Scenario,
    score,
    synthetic_record,
    synthetic_trial,
)
from explorer.analysis.judge import judge
from explorer.analysis.rounds import RoundPlan
from explorer.models import RunRecord, TrialResult

Table = dict[tuple[int, int], dict[str, float]]
"""(variant index, measured round) → phase seconds."""


@contextmanager
def analysis(pairs: bool, stop_futile: bool, blocks: bool = True) -> Iterator[None]:
    """Judge with or without the within-round pairs, the futility rule and the blocked t test
    (without it: complete rounds by the signed rank, as rules 1 did), then restore."""
    before = paired.use_pairs, futility.enabled, paired.use_blocks
    paired.use_pairs, futility.enabled, paired.use_blocks = pairs, stop_futile, blocks
    try:
        yield
    finally:
        paired.use_pairs, futility.enabled, paired.use_blocks = before


def draw(
    s: Scenario, rng: random.Random, round_factor: float = 0.0, noisy_last: float = 1.0
) -> Table:
    """Every trial a run of `s` could take, drawn up front (the last variant's noise
    `noisy_last` times the others')."""
    out: Table = {}
    for r in range(1, s.max_repeats + 1):
        shared = math.exp(rng.gauss(0, round_factor)) if round_factor else 1.0
        for v in range(s.variants):
            ratio = s.effect if v == 1 else 1.0
            sd = s.noise * (noisy_last if v == s.variants - 1 else 1.0)
            slow = SKEW_FACTOR if s.skewed and rng.random() < SKEW_SHARE else 1.0
            out[(v, r)] = {
                f"p{p + 1}": PHASE_SECONDS[p % len(PHASE_SECONDS)]
                * ratio
                * slow
                * shared
                * math.exp(rng.gauss(0, sd))
                for p in range(s.phases)
            }
    return out


def play_auto(s: Scenario, table: Table) -> RunRecord:
    """The auto run on the drawn trials, round by round as the runner plays it."""
    profile = s.profile()
    names = [v.name for v in profile.variants]
    plan = RoundPlan(profile, names, names[0])
    trials: list[TrialResult] = []
    done, more = 0, True
    while more:
        for name in plan.order(done):
            trials.append(synthetic_trial(name, done + 1, table[(names.index(name), done + 1)]))
        done += 1
        at_look = plan.auto and done in plan.looks
        judged = judge(synthetic_record(profile, trials)) if at_look else None
        more = plan.after_round(done, judged, 0.0)
    return synthetic_record(profile, trials)


def fixed_record(s: Scenario, table: Table, rounds: int | None = None) -> RunRecord:
    """The fixed design of `rounds` (default max_repeats) rounds on the same trials."""
    n = s.max_repeats if rounds is None else rounds
    fixed = replace(s, repeats=n, max_repeats=n)
    trials = [
        synthetic_trial(f"v{v}", r, table[(v, r)])
        for r in range(1, n + 1)
        for v in range(s.variants)
    ]
    return synthetic_record(fixed.profile(), trials)


@dataclass
class Result:
    """One run's outcome."""

    false_finding: bool
    found: bool
    found_by: int | None
    rounds: int


def outcome(s: Scenario, record: RunRecord) -> Result:
    """What the run's words got right and wrong (the first candidate's first phase carries
    the effect)."""
    scored = score(s, record)
    return Result(scored.false_finding, scored.found, scored.found_by, scored.rounds)


@dataclass
class Cell:
    """Counts over many runs of one condition."""

    runs: int
    false: int
    found: int
    found_by_15: int
    rounds: list[int]
    fixed_found: int = 0
    """The fixed design's finds on the same data (when asked for)."""

    @property
    def median_rounds(self) -> float:
        return statistics.median(self.rounds)

    @property
    def mean_rounds(self) -> float:
        return statistics.fmean(self.rounds)


def measure(
    s: Scenario,
    runs: int,
    seed: int,
    round_factor: float = 0.0,
    with_fixed: bool = False,
    noisy_last: float = 1.0,
) -> Cell:
    """`runs` runs of `s` (auto), and the fixed design on the same data when asked."""
    rng = random.Random(seed)
    cell = Cell(runs, 0, 0, 0, [])
    for _ in range(runs):
        table = draw(s, rng, round_factor, noisy_last)
        got = outcome(s, play_auto(s, table))
        cell.false += got.false_finding
        cell.found += got.found
        cell.found_by_15 += got.found_by is not None and got.found_by <= 15
        cell.rounds.append(got.rounds)
        if with_fixed:
            cell.fixed_found += outcome(s, fixed_record(s, table)).found
    return cell


def measure_fixed(
    s: Scenario, rounds: int, runs: int, seed: int, round_factor: float = 0.0
) -> Cell:
    """`runs` runs of the fixed design of `rounds` rounds, on the trials `measure` with the same
    arguments draws (so an auto and a fixed design can be set side by side)."""
    rng = random.Random(seed)
    cell = Cell(runs, 0, 0, 0, [])
    for _ in range(runs):
        got = outcome(s, fixed_record(s, draw(s, rng, round_factor), rounds))
        cell.false += got.false_finding
        cell.found += got.found
        cell.found_by_15 += got.found and rounds <= 15
        cell.rounds.append(rounds)
    return cell


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95 % Wilson interval of a share k/n."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    mid = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, mid - half), min(1.0, mid + half)


def median_interval(values: list[int]) -> tuple[float, float]:
    """Distribution-free ~95 % interval of the median: order statistics n/2 ∓ 0.98·√n."""
    v = sorted(values)
    n = len(v)
    half = 0.98 * math.sqrt(n)
    lo = max(0, math.floor(n / 2 - half))
    hi = min(n - 1, math.ceil(n / 2 + half) - 1)
    return float(v[lo]), float(v[hi])


def share_text(k: int, n: int) -> str:
    """'4.0 % [2.1–7.5]'."""
    lo, hi = wilson(k, n)
    return f"{k / n:.0%} [{lo:.0%}–{hi:.0%}]" if n else "—"
