"""Stop what cannot be decided: a non-binding futility rule at the planned looks.

At 10 % trial-to-trial noise "same within ±3 %" needs well over a hundred rounds, so a table
with nothing to find used to run to `max_repeats` only to print `undecided`. At each planned
look before the last, every comparison still open is asked: at the noise it shows, could it
reach *any* word by `max_repeats`? The answer is the conditional chance, under the current
estimate taken as the truth, that the point at `max_repeats` lies beyond its interval's
half-width there (faster/slower) or that the whole interval lies inside ±threshold (same) —
the half-width at the most lenient level Holm could test it at (every other open comparison
rejected first). Below `FUTILITY_CHANCE` the comparison is closed as `undecided`, with the
reason ("at this noise, ±3 % needs about 170 rounds"), and gets no more rounds; a run with
nothing left open ends.

The rule is non-binding: it can only turn a later faster/slower/same into undecided, never the
other way, and α stays split over the planned looks as before, so the false-finding rate can
only fall. It costs power only for an effect too small to show by `max_repeats` anyway, or one
whose estimate sits near 1 at an early look by bad luck.

The noise is the spread of the within-round log ratios (the unpaired comparison's: the two
sides' spreads added), measured by the median absolute deviation so that a few slow trials
do not make a comparison look hopeless (with a fifth of trials 1.5× slower the standard
deviation closed true 0.85× effects the rank interval would have found), times √(π/3) for
the signed-rank / Hodges–Lehmann interval's width against a mean's (its efficiency 3/π under
normal noise).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Hashable, Mapping
from statistics import NormalDist
from typing import Any, TypeVar

from explorer.analysis.paired import CellSamples
from explorer.analysis.verdict import Verdict

K = TypeVar("K", bound=Hashable)

FUTILITY_CHANCE = 0.05
"""Below this conditional chance of any word by max_repeats, a comparison is closed."""

RANK_WIDTH = math.sqrt(math.pi / 3)
"""Width of the Hodges–Lehmann interval against a mean's under normal noise."""

enabled = True
"""False keeps every comparison open to max_repeats, as pgwx did before: only for
`benchmarks/verdict_calibration.py`, which measures one against the other."""

MIN_PAIRS = 10
"""Fewer trials a side than this: the noise is not known well enough to give up (at 5 the
estimate closed a true 0.93× in 1 × 1 tables noticeably more often, measured)."""


def log_noise(cell: CellSamples, in_seconds: bool = False) -> tuple[float, float] | None:
    """(estimate, noise of one round's difference) of a comparison — of the log ratio, or in
    seconds for a phase judged in seconds — paired when its rounds are complete; None with too
    few trials (or a non-positive duration for a ratio)."""
    b, c = cell.baseline, cell.candidate
    if min(len(b), len(c)) < MIN_PAIRS:
        return None
    if not in_seconds and min(b + c) <= 0:
        return None
    pairs = cell.pairs()
    if pairs is not None:
        d = [y - x if in_seconds else math.log(y / x) for x, y in pairs]
        return statistics.median(d), _scale(d)
    lb, lc = (b, c) if in_seconds else ([math.log(x) for x in b], [math.log(x) for x in c])
    spread = math.sqrt(_scale(list(lb)) ** 2 + _scale(list(lc)) ** 2)
    return statistics.median(lc) - statistics.median(lb), spread


def _scale(values: list[float]) -> float:
    """A spread that a few slow trials (checkpoints) do not inflate, as they do not widen the
    rank interval much either: 1.4826 × the median absolute deviation (the standard deviation
    under normal noise)."""
    mid = statistics.median(values)
    return 1.4826 * statistics.median(abs(x - mid) for x in values)


def rounds_needed(noise: float, half_width: float, level: float) -> int:
    """Rounds for an interval at `level` to be as narrow as ± `half_width` (log) at `noise`
    per round."""
    z = NormalDist().inv_cdf(1 - level / 2)
    return math.ceil((z * noise * RANK_WIDTH / half_width) ** 2)


def futile(
    cell: CellSamples,
    *,
    rounds: int,
    max_rounds: int,
    level: float,
    threshold: float,
    seconds_band: float | None = None,
) -> str | None:
    """Why `cell` cannot reach any word by `max_rounds`, or None when it still may.

    Args:
        cell: The comparison's trials up to this look.
        rounds: Measured rounds at this look.
        max_rounds: The last planned look.
        level: The most lenient level the comparison could be tested at by then.
        threshold: The noise threshold of the words.
        seconds_band: For a phase judged in seconds, the ± band of `same` (its margin).
    """
    if rounds >= max_rounds:
        return None
    found = log_noise(cell, in_seconds=seconds_band is not None)
    if found is None:
        return None
    point, noise = found
    if noise <= 0:
        return None
    band = math.log1p(threshold) if seconds_band is None else seconds_band
    if band <= 0:
        return None
    z = NormalDist().inv_cdf(1 - level / 2)
    sd = noise * RANK_WIDTH
    half = z * sd / math.sqrt(max_rounds)
    # Under the current estimate as the truth, the point at max_rounds is normal around it.
    spread = sd * math.sqrt(max_rounds - rounds) / max_rounds
    now = NormalDist(point, max(spread, 1e-12))
    beyond = max(band, half)
    chance = now.cdf(-beyond) + (1 - now.cdf(beyond))
    if half < band:
        chance += now.cdf(band - half) - now.cdf(-(band - half))
    if chance >= FUTILITY_CHANCE:
        return None
    need = rounds_needed(noise, band, level)
    if seconds_band is not None:
        return (
            f"at this noise (±{_ms(noise)} a round), ±{_ms(band)} needs about {_about(need)} "
            f"rounds; this run stops at {max_rounds}"
        )
    return (
        f"at this noise (±{noise:.0%} a round), ±{threshold * 100:g} % needs about "
        f"{_about(need)} rounds; this run stops at {max_rounds}"
    )


def _ms(seconds: float) -> str:
    """0.0042 → '4.2 ms', 1.5 → '1.5 s'."""
    return f"{seconds * 1000:.2g} ms" if seconds < 1 else f"{seconds:.2g} s"


def _about(n: int) -> str:
    """A round count as said: 170, 1200, 'over 10000'."""
    if n > 10000:
        return "over 10000"
    if n >= 100:
        return f"{round(n, -1):.0f}"
    return str(n)


def close_futile(
    open_: list[K],
    samples: Mapping[K, Any],
    verdicts: dict[K, Verdict],
    point: int,
    last: int,
    alpha: float,
    family_size: int,
) -> list[K]:
    """At planned look `point`, close the open comparisons that cannot reach a word by the
    last look `last` (their verdict gets the reason); returns those still open.

    The level is the one Holm would give a comparison at a later look with the comparisons
    decided so far rejected before it (α of one look over the rest of the family).
    """
    if not enabled:
        return open_
    # Holm's level at a later look, if the comparisons decided so far are all it rejects
    # before this one: α of a look over the cells not counted out.
    decided = sum(v.decided for v in verdicts.values())
    level = alpha / max(family_size - decided, 1)
    still = []
    for key in open_:
        cell = samples[key]
        v = verdicts[key]
        why = None
        if isinstance(cell, CellSamples) and not v.too_few:
            # A phase judged in seconds is judged against its band there.
            band = v.margin_seconds if v.below_floor is not None else None
            if v.below_floor is None or band is not None:
                why = futile(
                    cell,
                    rounds=point,
                    max_rounds=last,
                    level=level,
                    threshold=v.threshold,
                    seconds_band=band,
                )
        if why is None:
            still.append(key)
        else:
            verdicts[key] = v.model_copy(update={"futile": why})
    return still
