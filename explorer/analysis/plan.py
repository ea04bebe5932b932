"""Plan before running: what a run of this shape can decide, said before the first trial.

Under rules 2 a comparison of complete rounds is judged by the blocked t test on log durations
(`explorer.analysis.blocked`), which has no smallest p-value: with enough rounds to estimate
the noise at all, a large enough effect is decided at any level. What a fixed number of rounds
truly cannot do is decide with fewer than `MIN_DECIDING` trials a side: below that every
comparison is `too few runs` (`explorer.analysis.verdict.DEFAULT_MIN_N`; the t test itself
needs `blocked.MIN_PAIRS`). Such a run is refused in one sentence naming the smallest repeats
that can decide, unless the user says `--allow-undecidable`.

The rank tests' floor (2 / C(2n, n), every trial of one side beyond every trial of the other)
still binds where a rank test judges: a phase under the 50 ms floor (judged in seconds), or a
comparison whose rounds lack a trial (the Mann–Whitney fallback). Neither is known before the
run, and the t test covers the complete rounds, so that floor is said in the plan, not refused.

The plan sentence says what the rounds can call: with the machine's trial-to-trial noise σ
(the sd of a trial's log duration; the last self-test's, else unknown until the first look),
the blocked t's half-width at round n is t(level, df) · σ · √(2/n) on the log scale, level the
look's share of α over the table's size (Holm's first step), df its Welch–Satterthwaite value
with every column equally noisy, 2(n − 1)(V − 1)/V for V variants. A true ratio just beyond
exp(±half-width) (and beyond the threshold) is called in about half of all runs; `same` can be
shown only once the half-width is inside ±threshold.
"""

from __future__ import annotations

import math

from explorer.analysis.blocked import MIN_PAIRS, t_quantile
from explorer.analysis.sequential import ALPHA, look_alpha, planned_looks, smallest_p, useful_looks
from explorer.analysis.verdict import DEFAULT_MIN_N
from explorer.models import Profile

MAX_PLANNED = 1000
"""Largest repeats searched for the smallest that can decide."""

MIN_DECIDING = max(DEFAULT_MIN_N, MIN_PAIRS)
"""Fewer trials a side than this: every comparison is `too few runs`, whatever the trials."""

MAX_ROUNDS_SAID = 100_000
"""Most rounds `rounds_for` says (an effect that needs more is, in practice, not findable)."""

EXAMPLE_NOISE = (0.10, 0.25)
"""Noise figures the plan shows what the rounds could call at when this machine's is unknown."""


def smallest_deciding(comparisons: int, looks: int = 1, alpha: float = ALPHA) -> int:
    """The fewest trials a side whose smallest rank p (Mann–Whitney, 2/C(2n, n)) reaches Holm's
    first level α/(looks·N): what a comparison judged by a rank test needs."""
    level = alpha / max(looks, 1) / max(comparisons, 1)
    return next(n for n in range(1, MAX_PLANNED) if smallest_p(n) <= level)


def least_comparisons(variants: int, servers: int = 1) -> int:
    """The size of the smallest table a run of `variants` variants on `servers` servers makes,
    counting one phase (the phases are known only once a trial ran): each candidate against
    the baseline within a server; with several servers also every variant against the
    reference server's, a family of its own. 0: nothing to compare."""
    families = [variants - 1] + ([variants * (servers - 1)] if servers > 1 else [])
    sizes = [n for n in families if n > 0]
    return min(sizes) if sizes else 0


def refusal(profile: Profile, comparisons: int, *, what: str = "--repeats") -> str | None:
    """One sentence refusing fixed repeats that cannot decide anything (fewer than
    `MIN_DECIDING` trials a side); None when they can, with auto repeats, or with nothing to
    compare."""
    if profile.repeats == "auto" or comparisons < 1:
        return None
    n = profile.repeats
    if n >= MIN_DECIDING:
        return None
    return (
        f"{what} {n} cannot decide anything: with fewer than {MIN_DECIDING} trials a side every "
        f"comparison is 'too few runs'; use {what} {MIN_DECIDING} or more (or auto), or "
        "--allow-undecidable to run it anyway."
    )


def blocked_df(rounds: int, columns: int) -> float:
    """The blocked t's degrees of freedom at `rounds` complete rounds of `columns` variants
    (the baseline included), every column equally noisy: 2(n − 1)(V − 1)/V (n − 1 for two)."""
    v = max(columns, 2)
    return 2 * (rounds - 1) * (v - 1) / v


def half_width(noise: float, rounds: int, level: float, columns: int) -> float:
    """The blocked t interval's half-width (log scale) at `rounds` rounds and `level`, for a
    trial-to-trial noise `noise` (sd of a log duration); inf below `MIN_PAIRS` rounds."""
    if rounds < MIN_PAIRS:
        return math.inf
    t = t_quantile(level, blocked_df(rounds, columns))
    return t * noise * math.sqrt(2 / rounds)


def callable_ratios(
    noise: float, rounds: int, level: float, columns: int, threshold: float
) -> tuple[float, float]:
    """The ratios beyond which `rounds` rounds call a comparison faster / slower at `level`
    in about half of all runs: the interval's half-width, or the threshold when wider."""
    half = half_width(noise, rounds, level, columns)
    return min(math.exp(-half), 1 - threshold), max(math.exp(half), 1 + threshold)


def rounds_for_same(
    noise: float, level: float, columns: int, threshold: float, most: int = MAX_PLANNED
) -> int | None:
    """The fewest rounds whose interval can lie inside ±threshold at all (a point of exactly
    1); None beyond `most`."""
    band = math.log1p(threshold)
    lo, hi = MIN_PAIRS, most
    if half_width(noise, hi, level, columns) > band:
        return None
    while lo < hi:  # the half-width falls with the rounds
        mid = (lo + hi) // 2
        if half_width(noise, mid, level, columns) <= band:
            hi = mid
        else:
            lo = mid + 1
    return lo


def rounds_for(effect: float, noise: float, comparisons: int, looks: int) -> int:
    """Rounds for a true ratio `effect` (0.95 = 5 % faster) to be found in about half of all
    runs at `noise` per round (the spread of one round's log ratio), at the first Holm level of
    a look: the paired t's interval (n − 1 degrees of freedom, the fewest a comparison of
    complete rounds gets) as wide as the effect; never fewer than `MIN_DECIDING`."""
    level = look_alpha(looks) / max(comparisons, 1)
    target, trial = abs(math.log(effect)), noise / math.sqrt(2)
    if target <= 0:
        return MAX_ROUNDS_SAID
    lo, hi = MIN_DECIDING, MAX_ROUNDS_SAID
    if half_width(trial, hi, level, 2) > target:
        return hi
    while lo < hi:  # the half-width falls with the rounds
        mid = (lo + hi) // 2
        if half_width(trial, mid, level, 2) <= target:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _ratios(faster: float, slower: float) -> str:
    return f"{faster:.2f}× / {slower:.2f}×"


def _pct(noise: float) -> str:
    return f"±{noise * 100:.0f} %"


def plan_sentence(
    profile: Profile, comparisons: int, noise: float | None = None, columns: int | None = None
) -> str:
    """What the run can decide and roughly when, before the first trial.

    Args:
        profile: The effective profile (repeats, looks, threshold).
        comparisons: Comparisons in the table (at least: one per candidate and phase).
        noise: This machine's trial-to-trial noise (0.18 = ±18 %), when a self-test kept it.
        columns: Variants in a round's block (the baseline included); default one more than
            the comparisons (one phase, one server). 2 judges as the paired t test.
    """
    planned = planned_looks(profile.repeats, profile.min_repeats, profile.max_repeats)
    if profile.repeats == "auto":
        planned = useful_looks(planned, comparisons)
    first, last = planned[0], planned[-1]
    where = (
        f"looks at rounds {', '.join(map(str, planned))}"
        if len(planned) > 1
        else f"one look after {last} round{'s' if last != 1 else ''}"
    )
    if comparisons < 1:
        return f"Plan: {where}; one variant, nothing to compare it with."
    v = columns if columns is not None else comparisons + 1
    thr = profile.threshold
    head = (
        f"Plan: at least {comparisons} comparison{'s' if comparisons != 1 else ''} at ±"
        f"{thr * 100:g} %, {where}"
    )
    level = look_alpha(len(planned)) / comparisons
    if last < MIN_DECIDING:
        return (
            f"{head}; with fewer than {MIN_DECIDING} trials a side every comparison is 'too few "
            "runs': this run cannot decide anything."
        )

    def calls(sigma: float) -> str:
        at_last = _ratios(*callable_ratios(sigma, last, level, v, thr))
        if first == last:
            return f"{last} rounds can call a ratio beyond {at_last}"
        at_first = _ratios(*callable_ratios(sigma, first, level, v, thr))
        return f"round {first} can call a ratio beyond {at_first}, round {last} beyond {at_last}"

    rank = smallest_deciding(comparisons, len(planned))
    floor = (
        f"; below {rank} rounds a comparison missing a trial or a phase under 50 ms (rank "
        "tests) cannot be decided"
        if last < rank
        else ""
    )
    if noise is None or noise <= 0:
        low, high = EXAMPLE_NOISE
        beyond = _ratios(*callable_ratios(high, last, level, v, thr))
        return (
            f"{head}; this machine's noise is not known yet (`pgwx selftest` measures it; until "
            f"then the intervals after round {first} show it): at {_pct(low)} noise "
            f"{calls(low)}, at {_pct(high)} {last} rounds beyond {beyond}{floor}."
        )
    same = rounds_for_same(noise, level, v, thr)
    band = f"'same within ±{thr * 100:g} %'"
    if same is not None and same <= last:
        said = f"and {band} from round {same} at the earliest"
    else:
        need = f"at least {same}" if same is not None else f"more than {MAX_PLANNED}"
        said = f"not {band} (that needs {need} rounds)"
    tail = f"; this run stops at {last}" if first != last else ""
    return f"{head}; at {_pct(noise)} noise {calls(noise)}, {said}{floor}{tail}."
