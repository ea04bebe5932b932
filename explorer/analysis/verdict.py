"""Verdicts you can defend: is a variant faster than the baseline, and how sure are we?

`compare(baseline, candidate)` turns two samples of phase durations (seconds, one per trial)
into a `Verdict`: the Hodges–Lehmann ratio with its confidence interval, a Mann–Whitney
p-value and one of four words. Standard library only; no numpy or scipy. A run's table makes
many such comparisons, and auto repeats look at them many times: `explorer.analysis.family`
and `explorer.analysis.sequential` choose the confidence each comparison is made at so the
error rate holds for the whole table and the whole run.

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
  normal approximation, whenever the p-value uses it). Chosen over a bootstrap because it is
  exact (coverage at least the stated level for any continuous distribution, where a
  percentile bootstrap under-covers at n = 5–10), deterministic, and can never contradict the
  p-value: the interval excludes 1 exactly when p < 1 − confidence.
- **Point estimate**: the Hodges–Lehmann ratio, exp of the median of the m·n pairwise log
  differences — the estimator the interval is built around, so the point always lies inside
  its interval. Medians, min and max stay in the tables as description.
- **Tiny phases**: a phase is judged as a ratio whenever both medians are above its timing
  resolution (`floor_seconds`): 1 ms for phases pgwx times itself with a monotonic clock
  (`CLOCK_FLOOR_SECONDS`), so 46 ms against 123 ms reads 0.37×; 50 ms for ends pgwx has to
  poll for, such as pg_restore's COMMIT watched through pg_stat_activity
  (`POLLED_FLOOR_SECONDS`; the judge picks it per phase). Below it a ratio is the error of
  the small number (an immediate COMMIT of 0.012 s polled makes a deferred one "420×"): the
  Hodges–Lehmann difference in seconds with the Moses interval on raw seconds, judged
  against ± that resolution when both medians are below it (named in the word: ``same
  within ±50 ms (polling resolution)``), else against ± the threshold of the median above
  it. "same" is never said of a difference whose interval lies wholly beyond ± the threshold
  of the baseline's median (14 ms against 5 ms): that is undecided — these trials cannot
  tell at this resolution.

Four words (`WORDS`), each meaning one thing:

- ``0.54× [0.50–0.58] faster`` / ``slower`` — the interval excludes 1 **and** the point
  differs from 1 by more than the noise threshold (3 % unless the profile says otherwise).
- ``1.01× [0.98–1.02] same within ±3 %`` — the whole interval lies inside 1 ± threshold:
  equivalence shown, at the same confidence.
- ``1.04× [0.93–1.16] undecided`` — neither: these trials cannot tell (with too few trials
  for any interval, ``undecided, too few runs (n=3)``).
- ``no baseline phase`` — the baseline never ran this phase: nothing to compare with.

Trial order and warm-up: `balanced_order` gives A B C, C B A, A B C, … so slow drift of the
machine (page cache, checkpoints, thermal) falls evenly on all variants. A warm-up trial is
handled by the caller, not by `compare`: pass only the measured trials. Drift over the run is
`explorer.analysis.drift`'s.
"""

from __future__ import annotations

import bisect
import functools
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

CLOCK_FLOOR_SECONDS = 0.001
"""Resolution of a phase pgwx times itself (a monotonic clock, microseconds, plus the
round trip's jitter): below 1 ms on both sides a ratio is the error of the small number."""

POLLED_FLOOR_SECONDS = 0.05
"""Resolution of a phase whose end pgwx has to poll for (pg_restore's COMMIT watched through
pg_stat_activity): ±50 ms, the band such phases are judged against in seconds."""

DEFAULT_FLOOR_SECONDS = CLOCK_FLOOR_SECONDS
"""Medians below this many seconds on both sides get an absolute difference, not a ratio."""

DEFAULT_MIN_N = 5
"""Fewer trials than this on either side: `too few runs`."""

T = TypeVar("T")


FASTER, SLOWER, SAME, UNDECIDED, NO_BASELINE = (
    "faster",
    "slower",
    "same",
    "undecided",
    "no baseline phase",
)
WORDS = (FASTER, SLOWER, SAME, UNDECIDED)
"""The four words a comparison can end with (plus NO_BASELINE where there is nothing to
compare)."""


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
    """The Hodges–Lehmann ratio candidate / baseline (exp of the median pairwise log
    difference; for complete rounds judged by the blocked t test, exp of the mean within-round
    log ratio), the point the interval is built around; None when a side has no trials or is
    below the floor (then see `difference_seconds`)."""
    ci_low: float | None = None
    """Lower end of the confidence interval of the ratio (Moses/Hodges–Lehmann on log
    durations); None with too few runs or below the floor."""
    ci_high: float | None = None
    """Upper end of the confidence interval of the ratio; None like `ci_low`."""
    difference_seconds: float | None = None
    """Hodges–Lehmann shift candidate − baseline in seconds (negative: the candidate is
    faster)."""
    diff_ci_low: float | None = None
    """Lower end of the interval of the difference in seconds; only for phases below the floor."""
    diff_ci_high: float | None = None
    """Upper end of the interval of the difference in seconds; only below the floor."""
    p_value: float | None = None
    """Two-sided Mann–Whitney U p-value of this comparison alone; None without trials."""
    p_adjusted: float | None = None
    """The p-value after the table's multiplicity correction (Holm) and, with auto repeats,
    the look's share of α; faster/slower needs it below 1 − the run's confidence. None where
    no correction was applied (a lone comparison)."""
    p_method: Literal["exact", "normal", "t"] | None = None
    """"exact" (null distribution of U counted, no ties) or "normal" (tie- and
    continuity-corrected normal approximation); "t" for the blocked t test of complete rounds
    (`explorer.analysis.blocked`)."""
    below_floor: Literal["baseline", "candidate", "both"] | None = None
    """Which median fell below `floor_seconds`; when set, the verdict is in seconds, not a
    ratio."""
    floor_seconds: float = DEFAULT_FLOOR_SECONDS
    """Medians below this many seconds get a difference in seconds instead of a ratio."""
    margin_seconds: float | None = None
    """Below the floor: the ± band the difference was judged against — the floor when both
    medians are below it, else the threshold times the median above it. None before pgwx
    kept it (the floor was the band then)."""
    confidence: float = 0.95
    """Confidence level of this interval (above 0.95 after a correction)."""
    threshold: float = DEFAULT_THRESHOLD
    """Relative change below which a difference counts as noise."""
    too_few: bool = False
    """Fewer trials than a verdict needs on one side: undecided, without an interval."""
    look: int | None = None
    """The measured round at which the word was settled (auto repeats); None otherwise."""
    pairing: Literal["paired", "unpaired"] | None = None
    """"paired": judged on the within-round pairs (blocked t, or signed rank in seconds:
    `explorer.analysis.paired`);
    "unpaired": on the pooled trials (Mann–Whitney) because rounds were incomplete or too
    few for the paired test; None for a lone `compare`."""
    futile: str | None = None
    """Why an undecided comparison was closed early (`explorer.analysis.futility`): it cannot
    reach any word by max_repeats at the noise seen."""
    word: str
    """One of `WORDS`, or `NO_BASELINE`."""
    baseline_pending: bool = False
    """With `NO_BASELINE` during a run: the baseline has no measured trial yet (it will), so
    the label says ``no baseline trial yet`` rather than that it lacks the phase."""

    @property
    def decided(self) -> bool:
        """True when the verdict is "faster" or "slower"."""
        return self.word in (FASTER, SLOWER)

    @property
    def no_baseline(self) -> bool:
        """True when the baseline has no trial of this phase to compare with."""
        return self.word == NO_BASELINE

    @property
    def settled(self) -> bool:
        """True when the word is faster, slower or same: more trials are not needed."""
        return self.word in (FASTER, SLOWER, SAME)

    def same_text(self) -> str:
        """``same within ±3 %`` (or ``±50 ms`` below the floor)."""
        if self.below_floor is not None:
            f = self.floor_seconds if self.margin_seconds is None else self.margin_seconds
            band = f"±{f * 1000:.3g} ms" if f < 1 else f"±{f:.3g} s"
            if self.below_floor == "both":
                why = "polling" if self.floor_seconds >= POLLED_FLOOR_SECONDS else "clock"
                return f"same within {band} ({why} resolution)"
            return f"same within {band}"
        return f"same within ±{self.threshold * 100:g} %"

    def word_text(self) -> str:
        """The word as printed: `same` spelled out with its band."""
        return self.same_text() if self.word == SAME else self.word

    def label(self) -> str:
        """The short text for a table cell, e.g. ``0.54× [0.50–0.58] faster``."""
        if self.word == NO_BASELINE:
            return "no baseline trial yet" if self.baseline_pending else self.word
        if self.too_few:
            return f"undecided, too few runs (n={min(self.n_baseline, self.n_candidate)})"
        if self.below_floor is not None:
            if self.difference_seconds is None:
                return self.word_text()
            if self.word == SAME and self.below_floor == "both":
                # The band names its resolution already.
                return f"{_seconds(self.difference_seconds)} {self.word_text()}"
            tail = {"baseline": "tiny baseline", "candidate": "tiny candidate"}.get(
                self.below_floor,
                "polled end" if self.floor_seconds >= POLLED_FLOOR_SECONDS else "below 1 ms",
            )
            return f"{_seconds(self.difference_seconds)} {self.word_text()} ({tail})"
        if self.ratio is None:
            return self.word_text()
        text = f"{ratio_text(self.ratio)}×"
        if self.ci_low is not None and self.ci_high is not None:
            text += f" [{bound_text(self.ci_low)}–{bound_text(self.ci_high)}]"
        return f"{text} {self.word_text()}"

    def point_text(self) -> str:
        """The point alone: ``0.54×``, or ``+3.59 s`` below the floor; '' without one."""
        if self.below_floor is not None:
            d = self.difference_seconds
            return "" if d is None else _seconds(d)
        return "" if self.ratio is None else f"{ratio_text(self.ratio)}×"

    def short_label(self) -> str:
        """The point and the word without the interval or the band, for a narrow column or
        the end card: ``0.54× faster``, ``+3.59 s slower``, ``−4.7 ms same``; `label` has
        the rest (a narrow table shows it under the selected row)."""
        if self.word == NO_BASELINE or self.too_few:
            return self.label()
        point = self.point_text()
        # "same" always with its band, even where the interval is left out.
        word = self.word_text()
        return f"{point} {word}" if point else word

    def __str__(self) -> str:
        return self.label()


def ratio_text(x: float) -> str:
    """A ratio as every table writes it: 0.54, 12.3, 420."""
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def bound_text(x: float) -> str:
    """An interval's bound: as `ratio_text`, but never `1.00` for a bound that is not 1 — a
    `faster` whose interval ends at 0.996 printed `[0.62–1.00] faster`, which reads as a
    contradiction; it prints `[0.62–0.996]`."""
    text = ratio_text(x)
    digits = 2
    while text == "1." + "0" * digits and x != 1 and digits < 6:
        digits += 1
        text = f"{x:.{digits}f}"
    return text


def _seconds(d: float) -> str:
    """A difference with one sign `−` and one unit below a second (ms), seconds above."""
    sign = "+" if d >= 0 else "−"
    a = abs(d)
    if a >= 10:
        return f"{sign}{a:.1f} s"
    if a >= 1:
        return f"{sign}{a:.2f} s"
    if a >= 0.01:
        return f"{sign}{a * 1000:.0f} ms"
    return f"{sign}{a * 1000:.1f} ms"


# --------------------------------------------------------------------------- Mann–Whitney U


@functools.lru_cache(maxsize=512)
def _u_counts(m: int, n: int) -> tuple[int, ...]:
    top = m * n
    c = [1] + [0] * top
    for i in range(1, m + 1):
        step = n + i
        for u in range(top, step - 1, -1):
            c[u] -= c[u - step]
        for u in range(i, top + 1):
            c[u] += c[u - i]
    return tuple(c)


def u_distribution(m: int, n: int) -> list[int]:
    """Counts of each value of U (0…m·n) over all C(m+n, m) orderings of two samples.

    The generating function of U is the Gaussian binomial coefficient
    ∏_{i=1..m} (1 − q^(n+i)) / (1 − q^i); multiplying and dividing by those factors one at a
    time stays in exact integers and costs O(m · m·n). Cached: a run asks for the same sizes
    again and again.
    """
    return list(_u_counts(m, n))


@functools.lru_cache(maxsize=512)
def _u_cdf(m: int, n: int) -> tuple[float, ...]:
    """P(U ≤ u) for u = 0…m·n under the null hypothesis."""
    counts = _u_counts(m, n)
    total_ = sum(counts)
    out, below = [], 0
    for c in counts:
        below += c
        out.append(below / total_)
    return tuple(out)


def _cdf(m: int, n: int, u: int) -> float:
    """P(U ≤ u) under the null hypothesis."""
    return 0.0 if u < 0 else _u_cdf(m, n)[u]


def _u_statistic(baseline: Sequence[float], candidate: Sequence[float]) -> float:
    """Pairs where the candidate is slower (ties count one half)."""
    ordered = sorted(baseline)
    u = 0.0
    for c in candidate:
        below = bisect.bisect_left(ordered, c)
        u += below + (bisect.bisect_right(ordered, c) - below) / 2
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
        # P(U ≥ big_u) = P(U ≤ m·n − big_u) by symmetry.
        p = 2 * _cdf(m, n, int(m * n - big_u))
        return min(1.0, p), "exact"
    sd = _normal_sd(baseline, candidate)
    if sd == 0:
        return 1.0, "normal"
    z = (big_u - m * n / 2 - 0.5) / sd
    return min(1.0, 2 * (1 - NormalDist().cdf(z))), "normal"


def _interval_rank(baseline: Sequence[float], candidate: Sequence[float], confidence: float) -> int:
    """k of the Moses interval: the largest k with P(U ≤ k − 1) ≤ (1 − confidence)/2."""
    m, n = len(baseline), len(candidate)
    half_alpha = (1 - confidence) / 2
    if _use_exact(baseline, candidate):
        cdf = _u_cdf(m, n)
        return bisect.bisect_right(cdf, half_alpha)
    z = NormalDist().inv_cdf(1 - half_alpha)
    return math.floor(m * n / 2 + 0.5 - z * _normal_sd(baseline, candidate))


def shift_estimate(
    baseline: Sequence[float], candidate: Sequence[float], confidence: float = 0.95
) -> tuple[float, tuple[float, float] | None]:
    """Hodges–Lehmann shift candidate − baseline and its Moses interval.

    The point is the median of the m·n differences candidate_j − baseline_i; the interval is
    their k-th smallest and k-th largest, with k the largest integer whose exact (or
    normal-approximated) P(U ≤ k − 1) ≤ (1 − confidence)/2 — so k ≤ m·n/2 and the point lies
    inside. The interval is None when no k ≥ 1 qualifies (too few trials for this confidence).
    Both sides must be non-empty.
    """
    diffs = sorted(c - b for c in candidate for b in baseline)
    half = len(diffs) // 2
    point = diffs[half] if len(diffs) % 2 else (diffs[half - 1] + diffs[half]) / 2
    k = _interval_rank(baseline, candidate, confidence)
    if k < 1:
        return point, None
    return point, (diffs[k - 1], diffs[len(diffs) - k])


def shift_interval(
    baseline: Sequence[float], candidate: Sequence[float], confidence: float = 0.95
) -> tuple[float, float] | None:
    """Moses / Hodges–Lehmann interval for the shift candidate − baseline (see
    `shift_estimate`); None without trials or with too few for this confidence."""
    if not baseline or not candidate:
        return None
    return shift_estimate(baseline, candidate, confidence)[1]


# --------------------------------------------------------------------------- the verdict


def word_for(point: float, interval: tuple[float, float] | None, null: float, margin: float) -> str:
    """The word for a point and its interval against `null` ± `margin` (1 ± threshold for a
    ratio, 0 ± floor for seconds): faster, slower, same or undecided."""
    if interval is None:
        return UNDECIDED
    lo, hi = interval
    if null - margin <= lo and hi <= null + margin:
        return SAME
    if hi < null and point < null - margin:
        return FASTER
    if lo > null and point > null + margin:
        return SLOWER
    return UNDECIDED


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
        threshold: Relative change that counts as noise; faster/slower needs more than this,
            same needs the whole interval within it.
        floor_seconds: Medians below this get an absolute difference instead of a ratio.
        min_n: Fewer trials than this on either side: undecided, too few runs.
        confidence: Confidence level of the interval (a table's correction raises it).

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
        "floor_seconds": floor_seconds,
    }
    if med_b is None or med_c is None:
        return Verdict(**common, too_few=True, word=UNDECIDED)  # type: ignore[arg-type]
    p, method = mann_whitney(b, c)
    few = min(m, n) < min_n
    common.update(p_value=p, p_method=method, too_few=few)
    # A non-positive duration has no logarithm; treat it like a tiny one.
    tiny_b = med_b < floor_seconds or min(b) <= 0
    tiny_c = med_c < floor_seconds or min(c) <= 0
    if tiny_b or tiny_c:
        side: Literal["baseline", "candidate", "both"] = (
            "both" if tiny_b and tiny_c else "baseline" if tiny_b else "candidate"
        )
        shift, interval = shift_estimate(b, c, confidence)
        interval = None if few else interval
        # Both below the floor: a difference under it is timer and polling resolution. One
        # side above it: that side is measured well, so the difference is judged against the
        # threshold of it — 34 ms against 72 ms, disjoint, is faster, not "same within ±50 ms".
        margin = floor_seconds if side == "both" else threshold * max(med_b, med_c)
        common.update(difference_seconds=shift, below_floor=side, margin_seconds=margin)
        if interval is not None:
            common.update(diff_ci_low=interval[0], diff_ci_high=interval[1])
        word = word_for(shift, interval, 0.0, margin)
        if word == SAME and interval is not None and _beyond_in_ratio(interval, med_b, threshold):
            # Inside the resolution band, yet 14 ms against 5 ms: not "same" — these trials
            # cannot tell at this resolution.
            word = UNDECIDED
        return Verdict(**common, word=word)  # type: ignore[arg-type]
    log_shift, log_ci = shift_estimate(
        [math.log(x) for x in b], [math.log(x) for x in c], confidence
    )
    ratio = math.exp(log_shift)
    ci = None if few or log_ci is None else (math.exp(log_ci[0]), math.exp(log_ci[1]))
    common.update(ratio=ratio, difference_seconds=med_c - med_b)
    if ci is not None:
        common.update(ci_low=ci[0], ci_high=ci[1])
    return Verdict(**common, word=word_for(ratio, ci, 1.0, threshold))  # type: ignore[arg-type]


def _beyond_in_ratio(interval: tuple[float, float], baseline: float, threshold: float) -> bool:
    """The difference interval lies wholly beyond ± threshold of the baseline's median."""
    if baseline <= 0:
        return False
    lo, hi = interval
    return lo > threshold * baseline or hi < -threshold * baseline


# --------------------------------------------------------------------------- helpers


def total(values: Iterable[float | None]) -> float | None:
    """Sum of the values, or None if any of them is unknown: a total with a `?` is `?`."""
    out = 0.0
    for v in values:
        if v is None:
            return None
        out += v
    return out


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
