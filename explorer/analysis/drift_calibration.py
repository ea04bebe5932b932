"""How often does the drift warning fire, and does it catch a real drift? Synthetic runs
through the real `judge`.

`simulate_drift` plays a fixed-repeats run of a made-up profile in the runner's balanced order
(`RoundPlan`), every trial's phases log-normally noisy around their true seconds and, with a
drift, multiplied by a factor growing linearly in run order from 1 at the first trial to
1 + drift at the last. `judge` then says whether it flags the run. `drift_rate` repeats it and
returns the share flagged with a 95 % Wilson interval. No server, no clock: seeded arithmetic.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from explorer.analysis.calibration import PHASE_SECONDS, synthetic_record, synthetic_trial
from explorer.analysis.judge import judge
from explorer.analysis.rounds import RoundPlan
from explorer.models import Profile, TrialResult, Variant


@dataclass(frozen=True)
class DriftScenario:
    """A fixed-repeats run with (or without) a linear drift of the machine.

    Args:
        rounds: Measured rounds (fixed repeats).
        noise: Standard deviation of a trial's log duration (0.10 ≈ 10 %).
        drift: Relative change from the run's first trial to its last (0.10: 10 % slower).
        variants: Variants including the baseline.
        phases: Phases per trial (a total is judged too when there is more than one).
        effect: The true ratio of the first candidate on every phase.
    """

    rounds: int = 10
    noise: float = 0.10
    drift: float = 0.0
    variants: int = 2
    phases: int = 3
    effect: float = 1.0

    def profile(self) -> Profile:
        """The scenario as the profile the judge reads."""
        return Profile(
            name="drift-calibration",
            title="synthetic",
            workload="synthetic",
            repeats=self.rounds,
            warmup=0,
            variants=[Variant(name=f"v{i}") for i in range(self.variants)],
        )


def simulate_drift(s: DriftScenario, rng: random.Random) -> bool:
    """One run of the scenario: True when the judge flags drift."""
    profile = s.profile()
    names = [v.name for v in profile.variants]
    plan = RoundPlan(profile, names, names[0])
    order = [(name, r) for r in range(s.rounds) for name in plan.order(r)]
    last = max(len(order) - 1, 1)
    trials: list[TrialResult] = []
    for position, (name, r) in enumerate(order):
        factor = 1 + s.drift * position / last
        ratio = s.effect if name == "v1" else 1.0
        seconds = {
            f"p{p + 1}": PHASE_SECONDS[p % len(PHASE_SECONDS)]
            * ratio
            * factor
            * math.exp(rng.gauss(0, s.noise))
            for p in range(s.phases)
        }
        trials.append(synthetic_trial(name, r + 1, seconds))
    judged = judge(synthetic_record(profile, trials))
    return judged.drift is not None and judged.drift.flagged


def wilson(hits: int, runs: int, z: float = 1.959964) -> tuple[float, float]:
    """95 % Wilson score interval of a share hits / runs."""
    if runs == 0:
        return 0.0, 1.0
    p = hits / runs
    centre = (p + z * z / (2 * runs)) / (1 + z * z / runs)
    half = z * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs)) / (1 + z * z / runs)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class DriftRate:
    """Share of runs flagged, with its 95 % interval."""

    runs: int
    flagged: int

    @property
    def share(self) -> float:
        """Flagged runs / runs."""
        return self.flagged / self.runs if self.runs else 0.0

    def text(self) -> str:
        """``3.1 % [2.2–4.3]``."""
        lo, hi = wilson(self.flagged, self.runs)
        return f"{self.share:.1%} [{lo * 100:.1f}–{hi * 100:.1f}]"


def drift_rate(s: DriftScenario, runs: int, seed: int = 18) -> DriftRate:
    """`runs` simulated runs of the scenario from one seed: how many were flagged."""
    rng = random.Random(seed)
    return DriftRate(runs=runs, flagged=sum(simulate_drift(s, rng) for _ in range(runs)))
