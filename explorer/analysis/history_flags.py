"""When has a variant's ratio changed between two runs? The test behind `pgwx history`'s ⚑.

Each run's verdict carries its Hodges–Lehmann ratio and an interval at a stated confidence
(0.95, or more after the table's correction). The interval is read back as a standard error on
the log scale — half its width over the normal quantile of its confidence — and the two runs'
log ratios are compared with a two-sided test:

    t = (ln r₂ − ln r₁) / √(se₁² + se₂²),   flagged when p < α = 0.05

where p is Student's t with Welch–Satterthwaite degrees of freedom (each run's standard error
is estimated from n_baseline + n_candidate − 2 degrees of freedom): with ten trials a side the
normal quantile alone flagged 5.1 % of unchanged pairs, the t distribution about 4 %.

So with no change at all a comparison is flagged about 5 % of the time (less: the rank-based
intervals cover at least their stated level, which makes the standard errors a little wide),
where "the ratio left the previous run's interval" flagged 17 % — two intervals of the same
width, 2·(1 − Φ(1.96/√2)). `benchmarks/history_flags.py` measures both the false-flag rate and
the power for a real 15 % shift through `explorer.analysis.history`. Phases below the timer
floor carry a difference in seconds instead of a ratio; they are compared the same way on the
linear scale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from explorer.analysis.blocked import t_two_sided_p
from explorer.analysis.verdict import Verdict

ALPHA = 0.05
"""The false-flag rate per comparison of two runs with no change."""


@dataclass(frozen=True)
class Estimate:
    """A run's point and standard error, on the scale the test is made on."""

    point: float
    se: float
    log: bool
    """True: log ratio; False: difference in seconds."""
    df: int = 1_000_000
    """Degrees of freedom of the standard error (both sides' trials, less two)."""


def _se(low: float, high: float, confidence: float) -> float:
    """The standard error a symmetric normal interval [low, high] at `confidence` implies."""
    return (high - low) / (2 * NormalDist().inv_cdf((1 + confidence) / 2))


def estimate(v: Verdict) -> Estimate | None:
    """The verdict's point and its standard error, or None when it has no interval."""
    if v.ratio is not None and v.ci_low is not None and v.ci_high is not None:
        if min(v.ratio, v.ci_low, v.ci_high) <= 0:
            return None
        se = _se(math.log(v.ci_low), math.log(v.ci_high), v.confidence)
        return Estimate(math.log(v.ratio), se, True, _df(v))
    if v.difference_seconds is not None and v.diff_ci_low is not None:
        if v.diff_ci_high is None:
            return None
        se = _se(v.diff_ci_low, v.diff_ci_high, v.confidence)
        return Estimate(v.difference_seconds, se, False, _df(v))
    return None


def _df(v: Verdict) -> int:
    return max(1, v.n_baseline + v.n_candidate - 2)


@dataclass(frozen=True)
class Change:
    """Two runs' estimates compared."""

    z: float
    p: float

    @property
    def flagged(self) -> bool:
        """Whether the change is significant at `ALPHA`."""
        return self.p < ALPHA


def change(before: Verdict, now: Verdict) -> Change | None:
    """The z test of `now` against `before`; None when either lacks an interval or the two
    are on different scales (one a ratio, the other a difference below the floor)."""
    a, b = estimate(before), estimate(now)
    if a is None or b is None or a.log != b.log:
        return None
    spread = math.hypot(a.se, b.se)
    if spread == 0:
        # Two degenerate intervals (every pairwise ratio equal): any move is a change.
        return Change(math.inf, 0.0) if a.point != b.point else Change(0.0, 1.0)
    z = (b.point - a.point) / spread
    # Welch–Satterthwaite: the two standard errors' degrees of freedom combined
    df = spread**4 / (a.se**4 / a.df + b.se**4 / b.df) if a.se and b.se else min(a.df, b.df)
    return Change(z, t_two_sided_p(z, df))
