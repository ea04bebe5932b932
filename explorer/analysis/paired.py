"""Paired verdicts: the variant's trial against the baseline's trial of the same round.

Every round runs each variant once, in balanced order, so whatever the machine does during a
round (a busy neighbour, a checkpoint, the page cache) falls on the baseline's trial and the
variant's alike. The unpaired comparison (`explorer.analysis.verdict.compare`, Mann–Whitney on
the pooled trials) counts that shared part as noise; the paired one removes it.

Above the floor (ratios) a comparison of complete rounds is the blocked t test on log durations
(`explorer.analysis.blocked`, rules 2): the mean within-round log ratio, its interval from
each side's own spread around the round means of every variant the round ran. The exact
signed-rank test below judged them under rules 1; at the levels a table of 24 comparisons over
five looks needs, its n − 1 degrees of freedom' worth of granularity (15 pairs: W⁻ ≤ 4 of 120)
lost most of the power the pairing bought. It still judges phases below the floor, on the
within-round differences in seconds:

- **p-value**: Wilcoxon signed-rank, two-sided, *exact*: the null distribution of W⁺ (the
  rank sum of the positive d) over all 2ⁿ sign flips, counted. Zero differences are dropped
  (Wilcoxon's rule); tied |d| get mid-ranks and the distribution is then counted for those
  very ranks (the exact conditional test), not approximated. Above `EXACT_MAX_PAIRS` pairs the
  normal approximation with tie and continuity correction.
- **Point**: the Hodges–Lehmann estimate, the median of the n(n+1)/2 Walsh averages
  (d_i + d_j)/2, i ≤ j, exponentiated to a ratio.
- **Interval**: the Walsh averages' k-th smallest and k-th largest, k the largest with
  P(W⁺ ≤ k − 1) ≤ (1 − confidence)/2 — exactly the shifts the signed-rank test does not
  reject, so it excludes the null exactly when p < 1 − confidence and always holds the point.
  When some d repeat exactly (timer resolution), that correspondence needs the tied
  distribution: the interval is then found by inverting the exact tied test at every gap
  between Walsh averages (`_inverted_interval`).

Which one a comparison uses is a matter of design, never of the data's values:
`choose_paired` pairs when every round up to the look has both trials (the same rounds on both
sides) and, for the signed rank, n pairs can reach the level the comparison is first tested at
(2/2ⁿ ≤ level; the t test has no smallest p, it needs 3 rounds);
otherwise — a failed trial, a variant added later, too few rounds for this table — the
unpaired comparison is kept, and the verdict says so (`Verdict.pairing`).
"""

from __future__ import annotations

import bisect
import functools
import math
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

from explorer.analysis.blocked import MIN_PAIRS, Block, blocked_t
from explorer.analysis.verdict import (
    DEFAULT_FLOOR_SECONDS,
    DEFAULT_MIN_N,
    DEFAULT_THRESHOLD,
    Verdict,
    compare,
    mann_whitney,
    word_for,
)
from explorer.errors import UsageError

EXACT_MAX_PAIRS = 60
"""Most pairs for which the signed-rank distribution is counted; above it the normal
approximation is accurate to the digits shown."""

PAIRED, UNPAIRED = "paired", "unpaired"

use_pairs = True
"""False judges every comparison unpaired, as pgwx did before: only for
`benchmarks/verdict_calibration.py`, which measures one against the other."""

use_blocks = True
"""False judges complete rounds above the floor by the signed-rank test as rules 1 did,
instead of the blocked t test (`explorer.analysis.blocked`): only for the calibration
benchmark, which measures one against the other."""


@dataclass(frozen=True)
class CellSamples:
    """One comparison's trials up to a look, with their rounds (for pairing).

    Args:
        baseline: Seconds of the reference's trials.
        candidate: Seconds of the compared trials.
        baseline_rounds: The measured round of each baseline trial.
        candidate_rounds: The measured round of each candidate trial.
    """

    baseline: list[float]
    candidate: list[float]
    baseline_rounds: list[int]
    candidate_rounds: list[int]
    block: Block | None = None
    """The phase's round means over every variant complete to this look (`blocked`); None:
    only these two sides are known."""

    def pairs(self) -> list[tuple[float, float]] | None:
        """(baseline, candidate) of each round, in round order, when both sides have exactly
        one trial in every round; None when rounds are incomplete (then: unpaired)."""
        if not self.baseline:
            return None
        rb, rc = self.baseline_rounds, self.candidate_rounds
        if len(set(rb)) != len(rb) or sorted(rb) != sorted(rc):
            return None
        by_round = dict(zip(rc, self.candidate, strict=True))
        return [(b, by_round[r]) for r, b in sorted(zip(rb, self.baseline, strict=True))]


def upto(
    seconds: Sequence[float], rounds: Sequence[int], last_round: int
) -> tuple[list[float], list[int]]:
    """The durations (and their rounds) of measured rounds 1…last_round."""
    kept = [(x, r) for x, r in zip(seconds, rounds, strict=True) if r <= last_round]
    return [x for x, _ in kept], [r for _, r in kept]


def cell_upto(
    ref: tuple[Sequence[float], Sequence[int]],
    mine: tuple[Sequence[float], Sequence[int]],
    last_round: int,
    block: Block | None = None,
) -> CellSamples:
    """A comparison's samples up to `last_round`, from (seconds, rounds) of each side, with
    the phase's block (`phase_block`) when the caller knows the other variants."""
    b, rb = upto(*ref, last_round)
    c, rc = upto(*mine, last_round)
    return CellSamples(b, c, rb, rc, block)


def phase_block(
    columns: Sequence[tuple[Sequence[float], Sequence[int]]], last_round: int
) -> Block | None:
    """The round means of one phase up to `last_round` over the variants (each: seconds and
    rounds) with exactly one positive trial in every round 1…last_round; None with fewer than
    three such variants (two are the pair itself)."""
    logs = []
    for seconds, rounds in columns:
        x, r = upto(seconds, rounds, last_round)
        if sorted(r) != list(range(1, last_round + 1)) or min(x, default=0) <= 0:
            continue
        logs.append([math.log(v) for _, v in sorted(zip(r, x, strict=True))])
    if len(logs) < 3:
        return None
    return Block(tuple(statistics.fmean(row) for row in zip(*logs, strict=True)), len(logs))


# --------------------------------------------------------------------------- signed rank


def smallest_paired_p(n: int) -> float:
    """The smallest two-sided signed-rank p-value n pairs can give: 2 / 2ⁿ (all one sign)."""
    return min(1.0, 2 / 2**n) if n > 0 else 1.0


@functools.lru_cache(maxsize=256)
def _w_cdf(n: int) -> tuple[float, ...]:
    """P(W⁺ ≤ w), w = 0…n(n+1)/2, ranks 1…n without ties."""
    top = n * (n + 1) // 2
    counts = [1] + [0] * top
    for r in range(1, n + 1):
        for w in range(top, r - 1, -1):
            counts[w] += counts[w - r]
    total, below, out = 2**n, 0, []
    for c in counts:
        below += c
        out.append(below / total)
    return tuple(out)


def _midranks(values: Sequence[float]) -> list[float]:
    """Ranks 1…n of `values`, tied values sharing the mean of their ranks."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def _tied_p(doubled: list[int], w2: int) -> float:
    """Two-sided exact p of a doubled rank sum `w2` over all sign flips of `doubled` ranks."""
    top = sum(doubled)
    counts = [0] * (top + 1)
    counts[0] = 1
    for r in doubled:
        for w in range(top, r - 1, -1):
            counts[w] += counts[w - r]
    total = 2 ** len(doubled)
    low = sum(counts[: min(w2, top - w2) + 1])
    return min(1.0, 2 * low / total)


def signed_rank(diffs: Sequence[float]) -> tuple[float, Literal["exact", "normal"]]:
    """Two-sided Wilcoxon signed-rank p-value of `diffs` against 0, and the method.

    Zeros are dropped; ties in |d| get mid-ranks and the exact distribution of those ranks.
    """
    d = [x for x in diffs if x != 0]
    n = len(d)
    if n == 0:
        return 1.0, "exact"
    ranks = _midranks([abs(x) for x in d])
    w_plus = sum(r for r, x in zip(ranks, d, strict=True) if x > 0)
    top = n * (n + 1) / 2
    if n <= EXACT_MAX_PAIRS:
        if len(set(abs(x) for x in d)) == n:
            w = round(min(w_plus, top - w_plus))
            return min(1.0, 2 * _w_cdf(n)[w]), "exact"
        doubled = [round(2 * r) for r in ranks]
        return _tied_p(doubled, round(2 * w_plus)), "exact"
    ties = sum(t**3 - t for t in Counter(ranks).values())
    sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24 - ties / 48)
    if sd == 0:
        return 1.0, "normal"
    z = (abs(w_plus - top / 2) - 0.5) / sd
    return min(1.0, 2 * (1 - NormalDist().cdf(max(z, 0.0)))), "normal"


def walsh_averages(diffs: Sequence[float]) -> list[float]:
    """(d_i + d_j)/2 for all i ≤ j, sorted."""
    n = len(diffs)
    return sorted((diffs[i] + diffs[j]) / 2 for i in range(n) for j in range(i, n))


def _median(sorted_values: list[float]) -> float:
    half = len(sorted_values) // 2
    if len(sorted_values) % 2:
        return sorted_values[half]
    return (sorted_values[half - 1] + sorted_values[half]) / 2


def _inverted_interval(
    diffs: Sequence[float], walsh: list[float], alpha: float
) -> tuple[float, float] | None:
    """The shifts δ the exact tied signed-rank test of d − δ keeps at level α.

    Between two neighbouring Walsh averages neither the signs nor the tie pattern of d − δ
    change, so the test is checked once per gap; W⁺ falls as δ rises, so the kept gaps are one
    run, and the interval is closed at the Walsh averages bounding it.
    """
    cuts = sorted(set(walsh))
    # Points to test in order: below all, each Walsh average and the gap after it.
    spots = [cuts[0] - 1.0]
    for a, b in zip(cuts, [*cuts[1:], None], strict=True):
        spots += [a, (a + b) / 2 if b is not None else a + 1.0]
    kept = [i for i, s in enumerate(spots) if signed_rank([x - s for x in diffs])[0] >= alpha]
    if not kept or kept[0] == 0 or kept[-1] == len(spots) - 1:
        return None
    # An odd index is a Walsh average itself, an even one the gap after the average before.
    lo = spots[kept[0]] if kept[0] % 2 else spots[kept[0] - 1]
    hi = spots[kept[-1]] if kept[-1] % 2 else spots[kept[-1] + 1]
    return lo, hi


def hodges_lehmann(
    diffs: Sequence[float], confidence: float = 0.95
) -> tuple[float, tuple[float, float] | None]:
    """The Walsh-average median of `diffs` and its signed-rank interval (None when n pairs
    cannot reach this confidence). `diffs` must be non-empty."""
    walsh = walsh_averages(diffs)
    point = _median(walsh)
    alpha = 1 - confidence
    n = len(diffs)
    if n > EXACT_MAX_PAIRS:
        z = NormalDist().inv_cdf(1 - alpha / 2)
        k = math.floor(n * (n + 1) / 4 + 0.5 - z * math.sqrt(n * (n + 1) * (2 * n + 1) / 24))
    elif len(set(diffs)) == n:
        k = bisect.bisect_right(_w_cdf(n), alpha / 2)
    else:
        inverted = _inverted_interval(diffs, walsh, alpha)
        if inverted is None:
            return point, None
        lo, hi = inverted
        return point, (min(lo, point), max(hi, point))
    if k < 1:
        return point, None
    return point, (walsh[k - 1], walsh[len(walsh) - k])


# --------------------------------------------------------------------------- the verdict


def compare_paired(
    pairs: Sequence[tuple[float, float]],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    floor_seconds: float = DEFAULT_FLOOR_SECONDS,
    min_n: int = DEFAULT_MIN_N,
    confidence: float = 0.95,
    block: Block | None = None,
) -> Verdict:
    """`compare` on the within-round pairs: above the floor the blocked t test on log
    durations (`explorer.analysis.blocked`: the mean log ratio, its t interval), below it the
    signed-rank p with the Walsh-average point and interval.

    Args:
        pairs: (baseline seconds, candidate seconds) of each round.
        threshold: Relative change that counts as noise.
        floor_seconds: Medians below this get a difference in seconds instead of a ratio.
        min_n: Fewer pairs than this: undecided, too few runs.
        confidence: Confidence level of the interval.
        block: The phase's round means over all complete variants (None: the pairs alone,
            the paired t test).

    Raises:
        UsageError: A parameter out of range, or no pairs.
    """
    if not pairs:
        raise UsageError("A paired comparison needs at least one round with both trials.")
    if not 0 < confidence < 1:
        raise UsageError(f"The confidence must be between 0 and 1 (got {confidence}).")
    b = [x for x, _ in pairs]
    c = [y for _, y in pairs]
    n = len(pairs)
    med_b, med_c = statistics.median(b), statistics.median(c)
    few = n < min_n
    common: dict[str, object] = {
        "n_baseline": n,
        "n_candidate": n,
        "median_baseline": med_b,
        "median_candidate": med_c,
        "confidence": confidence,
        "threshold": threshold,
        "floor_seconds": floor_seconds,
        "too_few": few,
        "pairing": PAIRED,
    }
    tiny_b = med_b < floor_seconds or min(b) <= 0
    tiny_c = med_c < floor_seconds or min(c) <= 0
    if tiny_b or tiny_c:
        side: Literal["baseline", "candidate", "both"] = (
            "both" if tiny_b and tiny_c else "baseline" if tiny_b else "candidate"
        )
        diffs = [y - x for x, y in pairs]
        p, method = signed_rank(diffs)
        shift, interval = hodges_lehmann(diffs, confidence)
        interval = None if few else interval
        # The same bands as the unpaired comparison (`verdict.compare`).
        margin = floor_seconds if side == "both" else threshold * max(med_b, med_c)
        common.update(
            p_value=p,
            p_method=method,
            difference_seconds=shift,
            below_floor=side,
            margin_seconds=margin,
        )
        if interval is not None:
            common.update(diff_ci_low=interval[0], diff_ci_high=interval[1])
        return Verdict(**common, word=word_for(shift, interval, 0.0, margin))  # type: ignore[arg-type]
    if use_blocks and n >= MIN_PAIRS:
        t = blocked_t([math.log(x) for x in b], [math.log(y) for y in c], block)
        lo, hi = t.interval(confidence)
        ratio = math.exp(t.estimate)
        ci = None if few else (math.exp(lo), math.exp(hi))
        common.update(
            p_value=t.p_value, p_method="t", ratio=ratio, difference_seconds=med_c - med_b
        )
        if ci is not None:
            common.update(ci_low=ci[0], ci_high=ci[1])
        return Verdict(**common, word=word_for(ratio, ci, 1.0, threshold))  # type: ignore[arg-type]
    logs = [math.log(y / x) for x, y in pairs]
    p, method = signed_rank(logs)
    log_shift, log_ci = hodges_lehmann(logs, confidence)
    ratio = math.exp(log_shift)
    ci = None if few or log_ci is None else (math.exp(log_ci[0]), math.exp(log_ci[1]))
    common.update(p_value=p, p_method=method, ratio=ratio, difference_seconds=med_c - med_b)
    if ci is not None:
        common.update(ci_low=ci[0], ci_high=ci[1])
    return Verdict(**common, word=word_for(ratio, ci, 1.0, threshold))  # type: ignore[arg-type]


def choose_paired(cell: CellSamples, level: float) -> list[tuple[float, float]] | None:
    """The pairs to judge `cell` on, or None to judge it unpaired.

    Paired when every round has both trials and that many pairs can reach `level` (the level
    the comparison is first tested at: the look's share of α over the table's size); a choice
    made from the design and the trials that ran, never from their values.
    """
    pairs = cell.pairs() if use_pairs else None
    if pairs is None:
        return None
    if use_blocks and not _in_seconds(pairs) and len(pairs) >= MIN_PAIRS:
        return pairs  # the t test has no smallest p
    if smallest_paired_p(len(pairs)) > level:
        return None
    return pairs


def cell_p(cell: CellSamples, level: float) -> float:
    """The comparison's raw two-sided p-value, paired or not as `choose_paired` says."""
    pairs = choose_paired(cell, level)
    if pairs is not None:
        if use_blocks and not _in_seconds(pairs):
            b = [math.log(x) for x, _ in pairs]
            c = [math.log(y) for _, y in pairs]
            return blocked_t(b, c, cell.block).p_value
        return signed_rank(_paired_diffs(pairs))[0]
    return mann_whitney(cell.baseline, cell.candidate)[0]


def _in_seconds(pairs: Sequence[tuple[float, float]]) -> bool:
    """True when the comparison is judged in seconds (a median below the floor)."""
    b = [x for x, _ in pairs]
    c = [y for _, y in pairs]
    floor = DEFAULT_FLOOR_SECONDS
    return statistics.median(b) < floor or statistics.median(c) < floor or min(b + c) <= 0


def _paired_diffs(pairs: Sequence[tuple[float, float]]) -> list[float]:
    """The differences the paired verdict tests: log ratios, or seconds below the floor."""
    if _in_seconds(pairs):
        return [y - x for x, y in pairs]
    return [math.log(y / x) for x, y in pairs]


def cell_verdict(
    cell: CellSamples,
    level: float,
    *,
    threshold: float,
    min_n: int,
    confidence: float,
    floor_seconds: float = DEFAULT_FLOOR_SECONDS,
) -> Verdict:
    """The comparison's verdict, paired or not as `choose_paired` says (and marked so)."""
    pairs = choose_paired(cell, level)
    if pairs is not None:
        return compare_paired(
            pairs,
            threshold=threshold,
            min_n=min_n,
            confidence=confidence,
            floor_seconds=floor_seconds,
            block=cell.block,
        )
    v = compare(
        cell.baseline,
        cell.candidate,
        threshold=threshold,
        min_n=min_n,
        confidence=confidence,
        floor_seconds=floor_seconds,
    )
    return v.model_copy(update={"pairing": UNPAIRED})


def pairing_note(verdicts: Mapping[tuple[str, str], Verdict]) -> str | None:
    """The legend line saying how the comparisons were made: paired, and which were not
    (with why); None when no comparison was tested."""
    tested = {k: v for k, v in verdicts.items() if v.pairing is not None}
    if not tested:
        return None
    apart = [f"{name} {phase}" for (name, phase), v in tested.items() if v.pairing == UNPAIRED]
    if not apart:
        return (
            "Paired: every comparison uses the baseline's and the variant's trial of the same "
            "round (a t test on their log ratios, the round's other variants gauging the "
            "noise; signed rank for phases judged in seconds)."
        )
    head = (
        "Unpaired (Mann–Whitney on all trials) for "
        + ", ".join(apart[:8])
        + (f" and {len(apart) - 8} more" if len(apart) > 8 else "")
        + ": a round lacked one of its trials, or the rounds were too few for the paired test"
    )
    if len(apart) == len(tested):
        return head + "."
    return head + "; the others are paired (the same round's trials, blocked t test)."
