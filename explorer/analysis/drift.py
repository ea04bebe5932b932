"""Did the machine drift during the run? A trend test with a known false-alarm rate.

The old warning compared the medians of the baseline's first and last thirds against the noise
threshold with no allowance for noise: on drift-free data it fired in most runs (68–100 % at
n = 10). This one is a test, flagged only when it rejects at the run's α *and* the drift's
estimated size is beyond the noise threshold — the same two conditions as `faster`/`slower`.

Method, and why:

- **What is tested**: each measured trial's value — the mean of its phases' log durations
  (the total and phases below the floor left out) — against its position in the run. Trials
  are compared only with trials of their own variant, so the variants' true differences do
  not count as a trend; averaging a trial's phases cancels part of their noise while a drift of
  the machine, shared by every phase, stays, and the phases of one trial being correlated does
  not fool the test.
- **The test**: the stratified Mann–Kendall S — within each variant, pairs of trials rising
  minus pairs falling, summed over the variants — two-sided at the run's α = 0.05. Without
  ties and up to `EXACT_MAX_PAIRS` pairs its null distribution is counted exactly (each
  variant's inversions of a random permutation, the Mahonian numbers, convolved over the
  variants); otherwise the normal approximation with tie and continuity correction. A rank
  test: one checkpoint-slowed trial moves it by one rank, not by its size.
- **The size**: Sen's slope (median of the within-variant pairwise slopes against run
  position) times the run's span, as a relative change from the first trial to the last,
  with the interval that is the set of slopes the same test does not reject — so the interval
  excludes no change exactly when the test rejects, and the point lies inside it.

Why the baseline alone is not tested: its 20 trials at 10 % noise tell a 10 % drift from noise
about a quarter of the time; every variant's trials together do it in about four runs of five
(`benchmarks/verdict_calibration.py` prints the measured false-alarm rate and power).
"""

from __future__ import annotations

import functools
import math
import statistics
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

EXACT_MAX_PAIRS = 400
"""Largest number of within-variant pairs for which the exact null distribution of S is
counted (convolved over the variants); above it the normal approximation, accurate by then
(and counting costs tens of ms per new table shape in the app)."""

MIN_TRIALS = 6
"""Fewer measured trials than this: no drift is judged (the exact test cannot reject below 5,
and a slope over so few trials says little)."""


@dataclass(frozen=True)
class Drift:
    """The run's trend test: what it found and whether it is flagged."""

    trials: int
    """Measured trials that went into the test."""
    cells: int
    """Variant × phase cells the trials' values were averaged over."""
    p_value: float
    """Two-sided Mann–Kendall p of the trials' values against run order."""
    change: float
    """Relative change from the first trial to the last (Sen's slope): 0.12 = 12 % slower."""
    low: float | None
    """Lower end of the change's interval at 1 − α; None with too few trials for one."""
    high: float | None
    """Upper end of the change's interval."""
    alpha: float
    """The level the test was made at."""
    threshold: float
    """The noise threshold the change must pass."""

    @property
    def flagged(self) -> bool:
        """The test rejects at α and the estimated change is beyond the threshold."""
        return self.p_value < self.alpha and abs(self.change) > self.threshold

    def size_text(self) -> str:
        """``slowed 12 % [5–19]`` or ``sped up 8 % [3–13]``."""
        word = "slowed" if self.change > 0 else "sped up"
        sign = 1 if self.change > 0 else -1
        text = f"{word} {_pct(sign * self.change)} %"
        if self.low is not None and self.high is not None:
            a, b = sorted((sign * self.low, sign * self.high))
            text += f" [{_pct(a)}–{_pct(b)}]"
        return text

    def sentence(self, baseline: str) -> str:
        """The warning under the table, in words: what moved, how sure, what it means."""
        return (
            f"⚠ the machine drifted: the trials {self.size_text()} from the first to the last "
            f"(Mann–Kendall trend test of {self.trials} trials in run order, each variant "
            f"against itself, p = {self.p_value:.2g}). The baseline {baseline} and the other "
            "variants took turns, so a steady drift fell on each alike: it widens the "
            "intervals but leaves the ratios fair; a sudden change partway can still favour "
            "the variants that ran after it — look at the trials in run order before trusting "
            "a small ratio."
        )


def _pct(x: float) -> str:
    v = x * 100
    return f"{v:.0f}" if abs(v) >= 10 else f"{v:.1f}".replace("-", "−")


# --------------------------------------------------------------------------- Mann–Kendall


@functools.lru_cache(maxsize=128)
def _mahonian(n: int) -> tuple[float, ...]:
    """P(inversions = k) for a uniformly random permutation of n (the Mahonian numbers / n!)."""
    counts = [1]
    for i in range(2, n + 1):
        new = [0] * (len(counts) + i - 1)
        running = 0
        for k in range(len(new)):
            running += counts[k] if k < len(counts) else 0
            if k - i >= 0:
                running -= counts[k - i]
            new[k] = running
        counts = new
    whole = math.factorial(n)
    return tuple(c / whole for c in counts)


@functools.lru_cache(maxsize=128)
def _inversion_cdf(sizes: tuple[int, ...]) -> tuple[float, ...]:
    """P(total inversions ≤ k) over independent random permutations of these sizes."""
    dist = [1.0]
    for n in sizes:
        part = _mahonian(n)
        new = [0.0] * (len(dist) + len(part) - 1)
        for a, pa in enumerate(dist):
            if pa:
                for b, pb in enumerate(part):
                    new[a + b] += pa * pb
        dist = new
    out, below = [], 0.0
    for x in dist:
        below += x
        out.append(below)
    return tuple(out)


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def _s(values: Sequence[float]) -> int:
    n = len(values)
    return sum(_sign(values[j] - values[i]) for i in range(n) for j in range(i + 1, n))


def _pairs(strata: Sequence[Sequence[float]]) -> int:
    return sum(len(v) * (len(v) - 1) // 2 for v in strata)


def _exact(strata: Sequence[Sequence[float]]) -> bool:
    return _pairs(strata) <= EXACT_MAX_PAIRS and all(len(set(v)) == len(v) for v in strata)


def _variance(strata: Sequence[Sequence[float]]) -> float:
    out = 0.0
    for values in strata:
        n = len(values)
        ties = sum(t * (t - 1) * (2 * t + 5) for t in Counter(values).values())
        out += (n * (n - 1) * (2 * n + 5) - ties) / 18
    return out


def _sizes(strata: Sequence[Sequence[float]]) -> tuple[int, ...]:
    return tuple(sorted(len(v) for v in strata if len(v) > 1))


def _p_value(strata: Sequence[Sequence[float]], s: int) -> float:
    pairs = _pairs(strata)
    if pairs == 0:
        return 1.0
    if _exact(strata):
        # S = pairs − 2·inversions and symmetric: P(|S| ≥ |s|) = 2·P(inv ≤ (pairs − |s|)/2).
        k = (pairs - abs(s)) // 2
        return min(1.0, 2 * _inversion_cdf(_sizes(strata))[k])
    var = _variance(strata)
    if var <= 0:
        return 1.0
    z = (abs(s) - 1) / math.sqrt(var)
    return min(1.0, 2 * (1 - NormalDist().cdf(z)))


def kendall_strata(strata: Sequence[Sequence[float]]) -> tuple[float, int]:
    """Two-sided stratified Mann–Kendall test: (p, S), S the pairs rising minus the pairs
    falling within each stratum (values in run order), summed over the strata."""
    s = sum(_s(v) for v in strata)
    return _p_value(strata, s), s


def mann_kendall(values: Sequence[float]) -> tuple[float, int]:
    """Two-sided Mann–Kendall test of `values` (in order) for a monotone trend: (p, S)."""
    return kendall_strata([values])


def critical_s(strata: Sequence[Sequence[float]], alpha: float) -> float:
    """The smallest |S| the two-sided test rejects at `alpha` (inf when none can)."""
    pairs = _pairs(strata)
    if _exact(strata):
        cdf = _inversion_cdf(_sizes(strata))
        best = None
        for k in range(pairs // 2 + 1):
            if 2 * cdf[k] < alpha:
                best = k
            else:
                break
        return math.inf if best is None else pairs - 2 * best
    z = NormalDist().inv_cdf(1 - alpha / 2)
    return z * math.sqrt(_variance(strata)) + 1


def sen_slope(
    strata: Sequence[tuple[Sequence[float], Sequence[float]]], alpha: float
) -> tuple[float, tuple[float, float] | None]:
    """Sen's slope of y against x pooled over strata (each (xs, ys)), and its interval: the
    slopes b for which the stratified test of y − b·x does not reject at `alpha` (None when
    every slope is accepted)."""
    slopes = sorted(
        (ys[j] - ys[i]) / (xs[j] - xs[i])
        for xs, ys in strata
        for i in range(len(xs))
        for j in range(i + 1, len(xs))
        if xs[j] != xs[i]
    )
    if not slopes:
        return 0.0, None
    point = statistics.median(slopes)
    c = critical_s([ys for _, ys in strata], alpha)
    big_n = len(slopes)
    # Between the k-th and (k+1)-th slope, S(b) = N − 2k: accepted while |N − 2k| < c.
    k_min = math.floor((big_n - c) / 2) + 1 if math.isfinite(c) else 0
    if k_min < 1 or big_n - k_min < k_min - 1:
        return point, None
    return point, (slopes[k_min - 1], slopes[big_n - k_min])


# --------------------------------------------------------------------------- the run's drift


def run_drift(
    trials: Sequence[tuple[Hashable, Mapping[str, float]]],
    *,
    threshold: float,
    alpha: float = 0.05,
) -> Drift | None:
    """The run's trend test over its trials in run order (see the module docstring); None
    with fewer than `MIN_TRIALS` trials to test.

    Args:
        trials: In run order, each measured trial's variant and phase → seconds; phases to
            leave out (the total, phases below the floor) already left out.
        threshold: The noise threshold the change must pass to be flagged.
        alpha: The test's level.
    """
    by_variant: dict[Hashable, tuple[list[float], list[float]]] = {}
    cells: set[tuple[Hashable, str]] = set()
    # A variant's value per trial is over the phases all its trials have, so a trial that
    # lacks one does not shift the variant's level.
    common: dict[Hashable, set[str]] = {}
    for variant, phases in trials:
        mine = {k for k, v in phases.items() if v > 0}
        common[variant] = common[variant] & mine if variant in common else mine
    for position, (variant, phases) in enumerate(trials):
        names = common[variant]
        if not names:
            continue
        xs, ys = by_variant.setdefault(variant, ([], []))
        xs.append(position)
        ys.append(statistics.fmean(math.log(phases[n]) for n in names))
        cells.update((variant, n) for n in names)
    strata = [xy for xy in by_variant.values() if len(xy[0]) > 1]
    tested = sum(len(xs) for xs, _ in strata)
    if tested < MIN_TRIALS:
        return None
    p, _ = kendall_strata([ys for _, ys in strata])
    slope, interval = sen_slope(strata, alpha)
    span = len(trials) - 1
    low = high = None
    if interval is not None:
        low, high = math.expm1(interval[0] * span), math.expm1(interval[1] * span)
    return Drift(
        trials=tested,
        cells=len(cells),
        p_value=p,
        change=math.expm1(slope * span),
        low=low,
        high=high,
        alpha=alpha,
        threshold=threshold,
    )
