"""Verdicts you can defend: is a variant faster than the baseline, and how sure are we?

`compare(baseline, candidate)` turns two samples of phase durations (seconds, one per trial)
into a `Verdict`: the ratio of medians, a confidence interval, a Mann–Whitney p-value and one
word. Standard library only; no numpy or scipy.

Methods, and why these:

- **p-value**: Mann–Whitney U, two-sided. It needs no normality (timings are skewed and
  small-sampled) and compares whole samples, not just one statistic. Without ties and with at
  most `EXACT_MAX_N` trials per side it uses the *exact* null distribution of U (counted from
  the Gaussian binomial coefficient); otherwise the normal approximation with tie correction
  and continuity correction (the same formulas as `scipy.stats.mannwhitneyu(...,
  method='asymptotic')`).
- **Confidence interval**: the Hodges–Lehmann / Moses distribution-free interval for a shift,
  computed on *log* durations and exponentiated, so it is an interval for the ratio
  candidate / baseline under the model "the variant scales the duration". It is the set of
  ratios the Mann–Whitney test above does not reject: the k-th smallest and k-th largest of the
  m·n pairwise ratios candidate_j / baseline_i, with k from the exact U distribution (or its
  normal approximation, whenever the p-value uses it). Chosen over a bootstrap because (1) it
  is exact — its coverage is at least the stated 95 % for any continuous distribution, where a
  percentile bootstrap of a median is known to under-cover at n = 5–10, the sample sizes pgwx
  runs at; (2) it is deterministic, no seed; (3) it can never contradict the p-value: the
  interval excludes 1 exactly when p < 1 − confidence. The point estimate shown is the ratio of
  medians, as the table always showed; under the scaling model both estimate the same number
  (with very uneven samples the ratio of medians can fall just outside the interval).
  An interval needs enough trials to exist at all: with 3 against 3 no ordering of the trials is
  rare enough for 95 % (the smallest possible p is 0.10), so `compare` says so instead.
- **Tiny phases**: when a median is below `floor_seconds` (default 50 ms: timer and polling
  resolution), a ratio is dominated by the error of the small number (an immediate COMMIT of
  0.012 s makes a deferred one "420×"). Such phases get the difference of medians in seconds
  and the same Moses interval on raw seconds instead of a ratio.

How to read a verdict
---------------------

Each variant's phase is compared with the baseline variant's same phase, trial by trial:

- ``0.54× [0.50–0.58] faster`` — the candidate's median is 0.54 of the baseline's; with 95 %
  confidence the true ratio lies between 0.50 and 0.58. *faster* / *slower* is printed only
  when that interval excludes 1 **and** the ratio differs from 1 by more than the noise
  threshold (3 % unless the profile or ``--threshold`` says otherwise).
- ``≈ 1.02× [0.97–1.08]`` — no detectable difference: either the interval contains 1 (these
  trials cannot tell the two apart; more repeats may), or the difference is real but smaller
  than the threshold. It does not prove the two are equal.
- ``too few runs (n=3)`` — fewer than 5 trials on one side. Three interleaved pairs all
  pointing the same way happen by chance one time in eight; no ratio is shown as a finding.
- ``+4.85 s slower (tiny baseline)`` — a median below 50 ms: the difference in seconds is shown
  instead of a ratio, and is called faster/slower only if it exceeds those 50 ms and its
  interval excludes 0.

The p-value (JSON export) is the chance of samples at least this different if the variant
made no difference at all. Why three runs are rarely enough: on these machines the same run
varies by ±15–20 %, so a few percent of difference needs about ten trials per variant before
the interval is narrower than the difference.

Trial order and warm-up: `balanced_order` gives A B C, C B A, A B C, … so slow drift of the
machine (page cache, checkpoints, thermal) falls evenly on all variants. A warm-up trial is
handled by the caller, not by `compare`: run the first round as usual, keep its trials in the
store, and pass only the trials with ``round >= warmup`` to `compare` (with ``warmup=1`` the
first trial of every variant is dropped, and the rounds kept are still balanced when an even
number of them remains). `drift` checks the baseline's trials in run order for a trend.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from statistics import NormalDist
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from explorer.errors import UsageError

EXACT_MAX_N = 50
"""Largest sample (per side) for which the exact U distribution is used; above it the normal
approximation is already accurate to the digits shown."""

DEFAULT_THRESHOLD = 0.03
"""Relative change below which a difference is called noise (3 %)."""

DEFAULT_FLOOR_SECONDS = 0.05
"""Medians below this many seconds get an absolute difference instead of a ratio."""

DEFAULT_MIN_N = 5
"""Fewer trials than this on either side: `too few runs`."""

T = TypeVar("T")


class Verdict(BaseModel):
    """One candidate variant's phase compared with the baseline's same phase."""

    model_config = ConfigDict(frozen=True)

    n_baseline: int
    """Trials of the baseline that went into the comparison."""
    n_candidate: int
    """Trials of the candidate that went into the comparison."""
    median_baseline: float | None
    """Median seconds of the baseline; None without trials."""
    median_candidate: float | None
    """Median seconds of the candidate; None without trials."""
    ratio: float | None = None
    """median_candidate / median_baseline; None when a side has no trials or is below the floor
    (then see `difference_seconds`). Present but not a finding when there are too few runs."""
    ci_low: float | None = None
    """Lower end of the confidence interval of the ratio (Moses/Hodges–Lehmann on log
    durations); None with too few runs or below the floor."""
    ci_high: float | None = None
    """Upper end of the confidence interval of the ratio; None like `ci_low`."""
    difference_seconds: float | None = None
    """median_candidate − median_baseline, in seconds (negative: the candidate is faster)."""
    diff_ci_low: float | None = None
    """Lower end of the interval of the difference in seconds; only for phases below the floor."""
    diff_ci_high: float | None = None
    """Upper end of the interval of the difference in seconds; only below the floor."""
    p_value: float | None = None
    """Two-sided Mann–Whitney U p-value; None when a side has no trials."""
    p_method: Literal["exact", "normal"] | None = None
    """"exact" (null distribution of U counted, no ties) or "normal" (tie- and
    continuity-corrected normal approximation)."""
    below_floor: Literal["baseline", "candidate", "both"] | None = None
    """Which median fell below `floor_seconds`; when set, the verdict is in seconds, not a
    ratio."""
    confidence: float = 0.95
    """Confidence level of the interval."""
    threshold: float = DEFAULT_THRESHOLD
    """Relative change below which a difference counts as noise."""
    word: str
    """"faster", "slower", "no detectable difference" or "too few runs (n=N)"."""

    @property
    def decided(self) -> bool:
        """True when the verdict is "faster" or "slower"."""
        return self.word in ("faster", "slower")

    @property
    def too_few(self) -> bool:
        """True when there were too few trials for any verdict."""
        return self.word.startswith("too few runs")

    def label(self) -> str:
        """The short text for a table cell, e.g. ``0.54× [0.50–0.58] faster``."""
        if self.too_few:
            return self.word
        if self.below_floor is not None:
            if self.difference_seconds is None:
                return self.word
            tail = {"baseline": "tiny baseline", "candidate": "tiny candidate"}.get(
                self.below_floor, "tiny phase"
            )
            text = f"{_seconds(self.difference_seconds)} ({tail})"
            return _with_word(text, self.word)
        if self.ratio is None:
            return self.word
        text = f"{_ratio(self.ratio)}×"
        if self.ci_low is not None and self.ci_high is not None:
            text += f" [{_ratio(self.ci_low)}–{_ratio(self.ci_high)}]"
        return _with_word(text, self.word)

    def __str__(self) -> str:
        return self.label()


def _with_word(text: str, word: str) -> str:
    if word in ("faster", "slower"):
        head, sep, tail = text.partition(" (")
        return f"{head} {word}{sep}{tail}"
    return f"≈ {text}"


def _ratio(x: float) -> str:
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def _seconds(d: float) -> str:
    sign = "+" if d >= 0 else "−"
    a = abs(d)
    if a >= 10:
        return f"{sign}{a:.1f} s"
    if a >= 0.1:
        return f"{sign}{a:.2f} s"
    if a >= 0.01:
        return f"{sign}{a:.3f} s"
    return f"{sign}{a * 1000:.1f} ms"


# --------------------------------------------------------------------------- Mann–Whitney U


def u_distribution(m: int, n: int) -> list[int]:
    """Counts of each value of U (0…m·n) over all C(m+n, m) orderings of two samples.

    The generating function of U is the Gaussian binomial coefficient
    ∏_{i=1..m} (1 − q^(n+i)) / (1 − q^i); multiplying and dividing by those factors one at a
    time stays in exact integers and costs O(m · m·n).
    """
    top = m * n
    c = [1] + [0] * top
    for i in range(1, m + 1):
        step = n + i
        for u in range(top, step - 1, -1):
            c[u] -= c[u - step]
        for u in range(i, top + 1):
            c[u] += c[u - i]
    return c


def _cdf(counts: list[int], u: int) -> float:
    """P(U ≤ u) under the null hypothesis."""
    if u < 0:
        return 0.0
    return sum(counts[: u + 1]) / sum(counts)


def _u_statistic(baseline: Sequence[float], candidate: Sequence[float]) -> float:
    """Pairs where the candidate is slower (ties count one half)."""
    u = 0.0
    for c in candidate:
        for b in baseline:
            u += 1.0 if c > b else 0.5 if c == b else 0.0
    return u


def _normal_sd(baseline: Sequence[float], candidate: Sequence[float]) -> float:
    m, n = len(baseline), len(candidate)
    big_n = m + n
    ties = sum(t**3 - t for t in Counter([*baseline, *candidate]).values())
    return math.sqrt(m * n / 12 * ((big_n + 1) - ties / (big_n * (big_n - 1))))


def _use_exact(baseline: Sequence[float], candidate: Sequence[float]) -> bool:
    pooled = [*baseline, *candidate]
    return len(set(pooled)) == len(pooled) and max(len(baseline), len(candidate)) <= EXACT_MAX_N


def mann_whitney(
    baseline: Sequence[float], candidate: Sequence[float]
) -> tuple[float, Literal["exact", "normal"]]:
    """Two-sided Mann–Whitney U p-value and the method used.

    Exact without ties and up to `EXACT_MAX_N` per side; otherwise normal with tie and
    continuity correction. Both sides must be non-empty.
    """
    m, n = len(baseline), len(candidate)
    u = _u_statistic(baseline, candidate)
    big_u = max(u, m * n - u)
    if _use_exact(baseline, candidate):
        counts = u_distribution(m, n)
        # P(U ≥ big_u) = P(U ≤ m·n − big_u) by symmetry.
        p = 2 * _cdf(counts, int(m * n - big_u))
        return min(1.0, p), "exact"
    sd = _normal_sd(baseline, candidate)
    if sd == 0:
        return 1.0, "normal"
    z = (big_u - m * n / 2 - 0.5) / sd
    return min(1.0, 2 * (1 - NormalDist().cdf(z))), "normal"


def shift_interval(
    baseline: Sequence[float], candidate: Sequence[float], confidence: float = 0.95
) -> tuple[float, float] | None:
    """Moses / Hodges–Lehmann interval for the shift candidate − baseline.

    The k-th smallest and k-th largest of the m·n differences candidate_j − baseline_i, with k
    the largest integer whose exact (or normal-approximated) P(U ≤ k − 1) ≤ (1 − confidence)/2.
    None when no k ≥ 1 qualifies (too few trials for this confidence).
    """
    m, n = len(baseline), len(candidate)
    if m == 0 or n == 0:
        return None
    half_alpha = (1 - confidence) / 2
    if _use_exact(baseline, candidate):
        counts = u_distribution(m, n)
        total = sum(counts)
        k, below = 0, 0
        while k < m * n and (below + counts[k]) / total <= half_alpha:
            below += counts[k]
            k += 1
    else:
        z = NormalDist().inv_cdf(1 - half_alpha)
        k = math.floor(m * n / 2 + 0.5 - z * _normal_sd(baseline, candidate))
    if k < 1:
        return None
    diffs = sorted(c - b for c in candidate for b in baseline)
    return diffs[k - 1], diffs[m * n - k]


# --------------------------------------------------------------------------- the verdict


def compare(
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    floor_seconds: float = DEFAULT_FLOOR_SECONDS,
    min_n: int = DEFAULT_MIN_N,
    confidence: float = 0.95,
) -> Verdict:
    """Compare a candidate's phase durations with the baseline's.

    Args:
        baseline: Seconds per trial of the baseline variant (warm-up trials already removed).
        candidate: Seconds per trial of the variant being judged.
        threshold: Relative change that counts as noise; faster/slower needs more than this.
        floor_seconds: Medians below this get an absolute difference instead of a ratio.
        min_n: Fewer trials than this on either side gives `too few runs (n=…)`.
        confidence: Confidence level of the interval.

    Returns:
        The verdict; see the module docstring for how to read it.

    Raises:
        UsageError: A parameter out of range.
    """
    if not 0 <= threshold < 1:
        raise UsageError(f"The noise threshold must be between 0 and 1 (got {threshold}).")
    if not 0 < confidence < 1:
        raise UsageError(f"The confidence must be between 0 and 1 (got {confidence}).")
    if min_n < 2:
        raise UsageError(f"At least 2 runs per side are needed for a verdict (got {min_n}).")
    if floor_seconds < 0:
        raise UsageError(f"The floor must not be negative (got {floor_seconds} s).")
    b, c = list(baseline), list(candidate)
    m, n = len(b), len(c)
    med_b = statistics.median(b) if b else None
    med_c = statistics.median(c) if c else None
    common: dict[str, object] = {
        "n_baseline": m,
        "n_candidate": n,
        "median_baseline": med_b,
        "median_candidate": med_c,
        "confidence": confidence,
        "threshold": threshold,
    }
    if med_b is None or med_c is None:
        return Verdict(**common, word=f"too few runs (n={min(m, n)})")  # type: ignore[arg-type]
    p, method = mann_whitney(b, c)
    difference = med_c - med_b
    few = min(m, n) < min_n
    # A non-positive duration has no logarithm; treat it like a tiny one.
    tiny_b = med_b < floor_seconds or min(b) <= 0
    tiny_c = med_c < floor_seconds or min(c) <= 0
    if tiny_b or tiny_c:
        side: Literal["baseline", "candidate", "both"] = (
            "both" if tiny_b and tiny_c else "baseline" if tiny_b else "candidate"
        )
        interval = None if few else shift_interval(b, c, confidence)
        word = "no detectable difference"
        if few:
            word = f"too few runs (n={min(m, n)})"
        elif interval is not None and abs(difference) > floor_seconds:
            if interval[1] < 0 and difference < 0:
                word = "faster"
            elif interval[0] > 0 and difference > 0:
                word = "slower"
        common.update(difference_seconds=difference, p_value=p, p_method=method)
        if interval is not None:
            common.update(diff_ci_low=interval[0], diff_ci_high=interval[1])
        return Verdict(**common, below_floor=side, word=word)  # type: ignore[arg-type]
    ratio = med_c / med_b
    ci: tuple[float, float] | None = None
    if not few:
        log_shift = shift_interval([math.log(x) for x in b], [math.log(x) for x in c], confidence)
        if log_shift is not None:
            ci = (math.exp(log_shift[0]), math.exp(log_shift[1]))
    word = f"too few runs (n={min(m, n)})" if few else "no detectable difference"
    if ci is not None:
        if ci[1] < 1 and ratio < 1 - threshold:
            word = "faster"
        elif ci[0] > 1 and ratio > 1 + threshold:
            word = "slower"
    common.update(ratio=ratio, difference_seconds=difference, p_value=p, p_method=method)
    if ci is not None:
        common.update(ci_low=ci[0], ci_high=ci[1])
    return Verdict(**common, word=word)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- helpers


def total(values: Iterable[float | None]) -> float | None:
    """Sum of the values, or None if any of them is unknown: a total with a `?` is `?`."""
    out = 0.0
    for v in values:
        if v is None:
            return None
        out += v
    return out


def drift(baseline_in_run_order: Sequence[float], threshold: float = DEFAULT_THRESHOLD) -> bool:
    """True when the baseline's first and last thirds have medians further apart than threshold.

    The relative change is last / first − 1. Fewer than 3 trials, or a first third with a
    non-positive median, cannot show drift and give False.
    """
    n = len(baseline_in_run_order)
    third = n // 3
    if third == 0:
        return False
    first = statistics.median(baseline_in_run_order[:third])
    last = statistics.median(baseline_in_run_order[n - third :])
    if first <= 0:
        return False
    return abs(last / first - 1) > threshold


def balanced_order(variants: list[T], rounds: int) -> list[tuple[T, int]]:
    """Trial order A B C, C B A, A B C, …: each item is (variant, round index).

    Every round runs each variant once; reversing every other round gives each variant the
    same mean position over each pair of rounds, so a linear drift of the machine is shared
    equally. A warm-up is the caller's: drop trials whose round < warmup from the statistics.
    """
    order: list[tuple[T, int]] = []
    for r in range(rounds):
        seq = variants if r % 2 == 0 else list(reversed(variants))
        order.extend((v, r) for v in seq)
    return order
