"""The rounds as blocks: a t test on log durations with every variant's trials of the round.

A round runs every variant once, so a table is a randomized complete block design: rounds are
the blocks, variants the treatments. On log durations y_ij (round i, variant j) the classic
analysis removes each round's mean m_i = mean_j y_ij (whatever the machine did during round i)
and judges the variant against the baseline on the mean within-round log ratio
d̄ = mean_i (y_ij − y_i0), exactly the paired comparison's difference. What the blocks add is
the noise estimate: instead of the n − 1 degrees of freedom of one comparison's n pairs —
which at the levels a large table needs (α over 5 looks over 24 cells: 4·10⁻⁴) cost most of
the power (measured: a true 0.85× in a 7 × 3 table at 10 % noise found at 15 rounds by the
exact signed-rank test in 36 % of runs, by a z-test with the noise known in about 80 %) — every
variant's residuals from the round means say how noisy a trial is.

Pooling one variance over all variants (the textbook two-way ANOVA) would call a variant twice
as noisy as the rest different from the baseline 20 times more often than its level promises
(measured, 7 × 3, 0.9 % a look against 0.04 %). So each side keeps its own variance: column j's
deviations from the round means u_ij = y_ij − m_i have Σ_i (u_ij − ū_j)² with expectation
(n − 1)(V − 1)/V · σ² when all V columns are equally noisy; v_j = that sum / k, k = (n − 1)(V −
1)/V, estimates the variance of variant j's trial, and the comparison's standard error is
√((v_j + v_0)/n) with Welch–Satterthwaite degrees of freedom (v_j + v_0)² / ((v_j² + v_0²)/k).
With two variants (V = 2) this is exactly the paired t test on the n log ratios (df n − 1);
with eight it has about 2(n − 1)·7/8 (24 at 15 rounds). A variant three times as noisy as the
rest keeps its level within a factor of two (simulated, 0.08 % against 0.04 %).

The point is exp(d̄), the ratio of the geometric means, and the interval d̄ ± t·se at the
level the comparison is tested at, so the point is always inside and the interval excludes 1
exactly when the p-value is below the level. The t distribution is evaluated here (regularized
incomplete beta, Lentz's continued fraction), with no dependency.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

MIN_PAIRS = 3
"""Fewer rounds than this: no degrees of freedom to speak of (the caller says too few)."""


@dataclass(frozen=True)
class Block:
    """One phase's round means up to a look, over every variant with a trial in each round.

    Args:
        round_means: m_i, the mean log duration of round i over the complete columns, for the
            rounds 1…n in order.
        columns: V, the variants (the baseline included) those means are over.
    """

    round_means: tuple[float, ...]
    columns: int


def block_of(columns: Sequence[Sequence[float]]) -> Block | None:
    """The block of complete columns (each: one variant's log durations, rounds 1…n in
    order); None with fewer than two columns or columns of different lengths."""
    if len(columns) < 2 or len({len(c) for c in columns}) != 1 or not columns[0]:
        return None
    means = tuple(statistics.fmean(row) for row in zip(*columns, strict=True))
    return Block(means, len(columns))


@dataclass(frozen=True)
class BlockedT:
    """The blocked comparison of one variant with the baseline, on log durations."""

    estimate: float
    """The mean within-round log ratio (variant over baseline), d-bar."""
    se: float
    """Its standard error."""
    df: float
    """Welch–Satterthwaite degrees of freedom."""
    p_value: float
    """Two-sided p of d-bar = 0."""

    def interval(self, confidence: float) -> tuple[float, float]:
        """d-bar ± t·se at `confidence` (two-sided), on the log scale."""
        half = t_quantile(1 - confidence, self.df) * self.se
        return self.estimate - half, self.estimate + half


def blocked_t(base: Sequence[float], cand: Sequence[float], block: Block | None) -> BlockedT:
    """The blocked t comparison of `cand` with `base` (log durations of the same rounds, in
    round order); without a block (only these two columns known) the paired t test.

    Raises:
        ValueError: Columns of different lengths, or fewer than `MIN_PAIRS` rounds.
    """
    n = len(base)
    if n != len(cand) or n < MIN_PAIRS:
        raise ValueError("blocked_t needs the same rounds on both sides, at least three")
    if block is None or block.columns < 3 or len(block.round_means) != n:
        block = block_of([base, cand])
    assert block is not None
    v = block.columns
    k = (n - 1) * (v - 1) / v
    spread = []
    for col in (cand, base):
        u = [y - m for y, m in zip(col, block.round_means, strict=True)]
        mid = statistics.fmean(u)
        spread.append(sum((x - mid) ** 2 for x in u) / k)
    vc, vb = spread
    d = statistics.fmean(cand) - statistics.fmean(base)
    total = vc + vb
    if total <= 0:
        return BlockedT(d, 0.0, float(n - 1), 1.0 if d == 0 else 0.0)
    se = math.sqrt(total / n)
    df = total**2 / ((vc**2 + vb**2) / k)
    return BlockedT(d, se, df, t_two_sided_p(d / se, df))


# --------------------------------------------------------------------------- Student's t


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1 + aa * d
        d = 1 / (d if abs(d) > tiny else tiny)
        c = 1 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1 + aa * d
        d = 1 / (d if abs(d) > tiny else tiny)
        c = 1 + aa / c
        c = c if abs(c) > tiny else tiny
        step = d * c
        h *= step
        if abs(step - 1) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1 - front * _betacf(b, a, 1 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| ≥ |t|) for Student's t with `df` (real, > 0) degrees of freedom."""
    if not math.isfinite(t):
        return 0.0
    return min(1.0, betainc(df / 2, 0.5, df / (df + t * t)))


def t_quantile(alpha: float, df: float) -> float:
    """The t with P(|T| ≥ t) = `alpha` (two-sided), by bisection."""
    if alpha >= 1:
        return 0.0
    lo, hi = 0.0, 1.0
    while t_two_sided_p(hi, df) > alpha:
        lo, hi = hi, hi * 2
        if hi > 1e12:
            return math.inf
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_two_sided_p(mid, df) > alpha:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * hi:
            break
    return hi
