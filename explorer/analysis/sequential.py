"""When auto repeats may look at the verdicts, and how much error each look may spend.

Looking after every round and stopping once the interval lands beyond the threshold is
optional stopping: with no true difference a single comparison ended `faster`/`slower` in
6.7 % of runs at 10 % noise (9.7 % at 20 %), and a 21-cell table in 54 %. pgwx instead plans
its looks before the run — every `min_repeats` measured rounds, and at `max_repeats` — and
splits α equally over them (α/K per look, K planned looks). By the union bound the chance of
any false word over all looks is at most K · α/K = α whatever the data do between looks, so a
comparison may be settled at any look, for any word: `faster`/`slower` when its interval at
that look's level excludes 1 and its point is beyond the threshold, `same` when that interval
lies inside 1 ± threshold. A settled comparison keeps the word it was settled with. Chosen
over an O'Brien–Fleming boundary (more power late, needs the looks' joint distribution,
which rank statistics with varying sample sizes only approximate) and over always-valid
confidence sequences (much wider at the 5–30 trials pgwx runs).
"""

from __future__ import annotations

import math
from typing import Literal

ALPHA = 0.05
"""The error rate a run promises for its whole table and all its looks (95 % confidence)."""


def looks(min_repeats: int, max_repeats: int) -> list[int]:
    """Measured rounds after which auto repeats judge: every `min_repeats`, and the last.

    Example: 5 and 30 give [5, 10, 15, 20, 25, 30].
    """
    step = max(min_repeats, 1)
    out = list(range(step, max_repeats + 1, step))
    if not out or out[-1] != max_repeats:
        out.append(max_repeats)
    return out


def planned_looks(repeats: int | Literal["auto"], min_repeats: int, max_repeats: int) -> list[int]:
    """The looks of a profile: `looks` for auto repeats, the one at the end otherwise."""
    return looks(min_repeats, max_repeats) if repeats == "auto" else [repeats]


def smallest_p(n: int) -> float:
    """The smallest two-sided Mann–Whitney p-value n trials against n can give: 2 / C(2n, n)
    (every candidate trial beyond every baseline trial)."""
    return 2 / math.comb(2 * n, n)


def useful_looks(planned: list[int], comparisons: int, alpha: float = ALPHA) -> list[int]:
    """The planned looks at which a comparison can be decided at all.

    With α split over K looks and Holm's first step at α/(K·N), five trials a side cannot
    reach the level in a table of 24 comparisons (their smallest p is 2/252). Such a look can
    never reject, so it need not be paid for: α is split over the looks that can, found by
    dropping the hopeless ones until the split stops changing. This depends only on the
    design (looks, table size), never on the data, so the guarantee stands.
    """
    kept = list(planned)
    while kept:
        level = alpha / len(kept) / max(comparisons, 1)
        able = [n for n in kept if smallest_p(n) <= level]
        if able == kept:
            return kept
        kept = able
    return planned[-1:]


def look_alpha(n_looks: int, alpha: float = ALPHA) -> float:
    """The α each of `n_looks` planned looks may spend: an equal share."""
    return alpha / max(n_looks, 1)


def next_look(rounds_done: int, planned: list[int]) -> int | None:
    """The first planned look after `rounds_done` measured rounds; None after the last."""
    return next((n for n in planned if n > rounds_done), None)
