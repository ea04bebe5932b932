"""Plan before running: what a run of this shape can decide, said before the first trial.

From the table's size (comparisons), the planned looks and α, pgwx knows before it starts
whether a fixed number of rounds can decide anything at all: with n trials a side the smallest
p-value any comparison can reach is 2 / C(2n, n) (every trial of one side beyond every trial of
the other), and Holm's first level in a table of N comparisons at one look is α / N. When the
first exceeds the second, every verdict would be `undecided` whatever the trials say; such a
run is refused in one sentence naming the smallest repeats that can decide, unless the user
says `--allow-undecidable`. With a noise figure (a self-test's, or a look's) the plan also says
roughly when a given effect would be found (`rounds_for`).
"""

from __future__ import annotations

import math

from explorer.analysis.futility import rounds_needed
from explorer.analysis.sequential import ALPHA, look_alpha, planned_looks, smallest_p, useful_looks
from explorer.models import Profile

MAX_PLANNED = 1000
"""Largest repeats searched for the smallest that can decide."""


def smallest_deciding(comparisons: int, looks: int = 1, alpha: float = ALPHA) -> int:
    """The fewest trials a side whose smallest p reaches Holm's first level α/(looks·N)."""
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
    """One sentence refusing fixed repeats that cannot decide anything in a table of (at
    least) `comparisons` comparisons; None when they can, or with auto repeats."""
    if profile.repeats == "auto" or comparisons < 1:
        return None
    n = profile.repeats
    level = ALPHA / comparisons
    if smallest_p(n) <= level:
        return None
    need = smallest_deciding(comparisons)
    return (
        f"{what} {n} cannot decide anything in a table of {comparisons} comparison"
        f"{'s' if comparisons != 1 else ''}: with {n} trials a side the smallest possible p "
        f"({smallest_p(n):.2g}) is above Holm's first level ({level:.2g}); use {what} {need} "
        "or more (or auto), or --allow-undecidable to run it anyway."
    )


def rounds_for(effect: float, noise: float, comparisons: int, looks: int) -> int:
    """Rounds for a true ratio `effect` (0.95 = 5 % faster) to be found at `noise` per round
    (the spread of one round's log ratio), at the first Holm level of a look."""
    level = look_alpha(looks) / max(comparisons, 1)
    return rounds_needed(noise, abs(math.log(effect)), level)


def plan_sentence(profile: Profile, comparisons: int, noise: float | None = None) -> str:
    """What the run can decide and roughly when, before the first trial.

    Args:
        profile: The effective profile (repeats, looks, threshold).
        comparisons: Comparisons in the table (at least: one per candidate and phase).
        noise: This machine's trial-to-trial noise (0.18 = ±18 %), when a self-test kept it.
    """
    planned = planned_looks(profile.repeats, profile.min_repeats, profile.max_repeats)
    if profile.repeats == "auto":
        planned = useful_looks(planned, comparisons)
    last = planned[-1]
    where = (
        f"looks at rounds {', '.join(map(str, planned))}"
        if len(planned) > 1
        else f"one look after {last} rounds"
    )
    if comparisons < 1:
        return f"Plan: {where}; one variant, nothing to compare it with."
    head = (
        f"Plan: at least {comparisons} comparison{'s' if comparisons != 1 else ''} at ±"
        f"{profile.threshold * 100:g} %, {where}"
    )
    if noise is None or noise <= 0:
        return head + "; the first look measures the noise and says what the rest can decide."
    # One round's log ratio varies √2 times one trial's.
    five, fifteen = (
        rounds_for(e, noise * math.sqrt(2), comparisons, len(planned)) for e in (0.95, 0.85)
    )
    return (
        f"{head}; at ±{noise:.0%} noise a 5 % effect needs about {five} rounds and a 15 % one "
        f"about {fifteen}; this run stops at {last}."
    )
